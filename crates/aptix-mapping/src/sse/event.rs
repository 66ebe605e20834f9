//! SSE fields and events: interpreting one line at a time, dispatching on a blank line.
//!
//! This is the "process the field" and "dispatch the event" part of the WHATWG
//! algorithm. Text is decoded from UTF-8 here, once a line is complete, so a character
//! split across network chunks is never seen in halves; invalid UTF-8 becomes U+FFFD as
//! the spec says. Decoding a field value on its own gives the same text as decoding the
//! whole stream would, because every byte the parser cuts at (`:`, space, CR, LF) is
//! ASCII and never part of a multi-byte sequence.

use memchr::memchr;

use super::lines::{LineReader, Span};

/// One dispatched server-sent event.
///
/// For the Responses API, `event` is the event type (`response.output_text.delta`, ...)
/// and `data` is one JSON object whose `type` repeats it; turning that JSON into wire
/// types is the caller's business.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `None` when the event had none (or an empty one), which
    /// the spec reads as the type `message`; see [`SseEvent::event_type`].
    pub event: Option<String>,
    /// The `data:` lines of the event joined with `\n`.
    pub data: String,
    /// The last event ID in force when the event was dispatched: as the spec defines
    /// it, an `id:` field sets it and it carries over to later events until another
    /// `id:` field changes it. `None` while it is empty.
    pub id: Option<String>,
    /// A valid `retry:` field (reconnection time in milliseconds) sent within this
    /// event, if any.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// The event type, with the spec's default `message` when no `event:` field was sent.
    pub fn event_type(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// An event as [`SseDecoder::next_event_view`](crate::SseDecoder::next_event_view)
/// hands it out: the same fields as [`SseEvent`], borrowed from the decoder, so that
/// nothing is copied or allocated for it. A single-line `data` (every Responses API
/// event) is read in place from the decoder's input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEventView<'a> {
    /// As [`SseEvent::event`].
    pub event: Option<&'a str>,
    /// As [`SseEvent::data`].
    pub data: &'a str,
    /// As [`SseEvent::id`].
    pub id: Option<&'a str>,
    /// As [`SseEvent::retry`].
    pub retry: Option<u64>,
}

impl<'a> SseEventView<'a> {
    /// The event type, with the spec's default `message` when no `event:` field was sent.
    pub fn event_type(&self) -> &'a str {
        self.event.unwrap_or("message")
    }

    /// The event, owned.
    pub fn to_event(self) -> SseEvent {
        let mut event = SseEvent::default();
        self.copy_into(&mut event);
        event
    }

    /// Overwrites `event` with this one, reusing its buffers.
    pub fn copy_into(self, event: &mut SseEvent) {
        event.data.clear();
        event.data.push_str(self.data);
        set_optional(&mut event.event, self.event.unwrap_or_default());
        set_optional(&mut event.id, self.id.unwrap_or_default());
        event.retry = self.retry;
    }
}

/// The buffers of the event being received, and the state that outlives events.
#[derive(Debug, Default)]
pub(crate) struct EventBuilder {
    /// The event type buffer. It keeps the last type across events, so that a stream
    /// repeating one type (deltas) neither copies nor re-validates it: see `has_type`.
    event_type: String,
    /// Whether the current event set its type (to `event_type`).
    has_type: bool,
    /// Where the event's `data` is so far.
    data_state: Data,
    /// The data buffer once an event has a second `data:` line: each value followed by
    /// an LF, as the spec builds it.
    data: String,
    /// A valid `retry:` value seen in the current event.
    retry: Option<u64>,
    /// The last event ID buffer; it is not reset between events.
    last_event_id: String,
    /// The latest valid `retry:` value of the stream, whether or not its event was
    /// dispatched.
    reconnection_time: Option<u64>,
}

/// Where the current event's `data` is.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Data {
    /// No `data:` line yet: the event will not be dispatched.
    #[default]
    None,
    /// One `data:` line, whose value is still in the line buffer (pinned there).
    InPlace(Span),
    /// Two or more: joined in [`EventBuilder::data`].
    Copied,
}

/// The field a line names.
enum Field {
    Comment,
    Data,
    Event,
    Id,
    Retry,
    Unknown,
}

impl EventBuilder {
    /// Interprets one complete, non-empty line, at `span` in `lines`.
    pub(crate) fn field_line(&mut self, lines: &mut LineReader, span: Span) {
        let line = lines.line(span);
        // The two fields of every Responses API event first, before a general search.
        let (field, value_at) = if line.starts_with(b"data: ") {
            (Field::Data, 6)
        } else if line.starts_with(b"event: ") {
            (Field::Event, 7)
        } else {
            match memchr(b':', line) {
                // A line starting with a colon is a comment (servers send them as keep-alives).
                Some(0) => (Field::Comment, 0),
                Some(colon) => {
                    let value_at = if line.get(colon + 1) == Some(&b' ') {
                        colon + 2
                    } else {
                        colon + 1
                    };
                    (field_named(line.get(..colon).unwrap_or_default()), value_at)
                }
                None => (field_named(line), line.len()),
            }
        };
        let value_span = span.after(value_at);
        let value = line.get(value_at..).unwrap_or_default();
        match field {
            Field::Data => match self.data_state {
                Data::None => {
                    // Left where it is: most events have one data line, and it is read
                    // in place when the event is dispatched.
                    self.data_state = Data::InPlace(value_span);
                    lines.pin(value_span.start);
                }
                Data::InPlace(first) => {
                    self.data.clear();
                    push_utf8_lossy(&mut self.data, lines.line(first));
                    self.data.push('\n');
                    push_utf8_lossy(&mut self.data, value);
                    self.data.push('\n');
                    self.data_state = Data::Copied;
                    lines.unpin();
                }
                Data::Copied => {
                    push_utf8_lossy(&mut self.data, value);
                    self.data.push('\n');
                }
            },
            Field::Event => {
                if value != self.event_type.as_bytes() {
                    self.event_type.clear();
                    push_utf8_lossy(&mut self.event_type, value);
                }
                self.has_type = true;
            }
            // An id containing NUL is ignored, as the spec says.
            Field::Id if memchr(0, value).is_none() => {
                self.last_event_id.clear();
                push_utf8_lossy(&mut self.last_event_id, value);
            }
            Field::Retry => {
                if let Some(milliseconds) = parse_digits(value) {
                    self.retry = Some(milliseconds);
                    self.reconnection_time = Some(milliseconds);
                }
            }
            // Comments, unknown fields, and ids containing NUL are ignored as the spec
            // says.
            Field::Comment | Field::Id | Field::Unknown => {}
        }
    }

    /// Whether the event has a `data` line, and so is dispatched by a blank line.
    pub(crate) fn has_data(&self) -> bool {
        self.data_state != Data::None
    }

    /// The event, at a blank line (or the end of input) after [`has_data`](Self::has_data)
    /// said it has data. It borrows the buffers: the decoder calls
    /// [`discard`](Self::discard) before it reads further.
    pub(crate) fn dispatch<'a>(&'a mut self, lines: &'a LineReader) -> SseEventView<'a> {
        let retry = self.retry.take();
        let in_place = match self.data_state {
            Data::InPlace(span) => {
                let bytes = lines.line(span);
                match std::str::from_utf8(bytes) {
                    Ok(text) => Some(text),
                    Err(_) => {
                        self.data.clear();
                        self.data.push_str(&String::from_utf8_lossy(bytes));
                        None
                    }
                }
            }
            Data::Copied | Data::None => {
                // Every data line was appended with an LF; the last one is not part of
                // the data.
                self.data.pop();
                None
            }
        };
        self.data_state = Data::None;
        let this: &'a Self = self;
        SseEventView {
            event: Some(this.event_type.as_str()).filter(|text| this.has_type && !text.is_empty()),
            data: in_place.unwrap_or(this.data.as_str()),
            id: this.last_event_id(),
            retry,
        }
    }

    /// Forgets the current (or just dispatched) event's fields; the buffers' memory is
    /// kept for the next one.
    pub(crate) fn discard(&mut self) {
        self.has_type = false;
        self.data.clear();
        self.data_state = Data::None;
        self.retry = None;
    }

    /// The last event ID in force, if not empty.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        Some(self.last_event_id.as_str()).filter(|id| !id.is_empty())
    }

    /// The latest valid `retry:` value of the stream.
    pub(crate) fn reconnection_time(&self) -> Option<u64> {
        self.reconnection_time
    }
}

fn field_named(name: &[u8]) -> Field {
    match name {
        b"data" => Field::Data,
        b"event" => Field::Event,
        b"id" => Field::Id,
        b"retry" => Field::Retry,
        _ => Field::Unknown,
    }
}

fn push_utf8_lossy(target: &mut String, bytes: &[u8]) {
    // `from_utf8` is the fast path: valid input borrows without a copy or a scan for
    // replacement work.
    match std::str::from_utf8(bytes) {
        Ok(text) => target.push_str(text),
        Err(_) => target.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// A `retry:` value: ASCII digits only, as the spec requires, and small enough for a
/// `u64`. Anything else is ignored rather than guessed at.
fn parse_digits(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() {
        return None;
    }
    bytes.iter().try_fold(0u64, |value, &byte| {
        let digit = byte.checked_sub(b'0').filter(|digit| *digit <= 9)?;
        value.checked_mul(10)?.checked_add(u64::from(digit))
    })
}

/// Sets `slot` to `value`, or to `None` when `value` is empty, reusing the string the
/// slot already holds.
fn set_optional(slot: &mut Option<String>, value: &str) {
    if value.is_empty() {
        *slot = None;
        return;
    }
    match slot {
        Some(text) => {
            text.clear();
            text.push_str(value);
        }
        None => *slot = Some(value.to_owned()),
    }
}

//! SSE fields and events: interpreting one line at a time, dispatching on a blank line.
//!
//! This is the "process the field" and "dispatch the event" part of the WHATWG
//! algorithm. Text is decoded from UTF-8 here, once a line is complete, so a character
//! split across network chunks is never seen in halves; invalid UTF-8 becomes U+FFFD as
//! the spec says. Decoding a field value on its own gives the same text as decoding the
//! whole stream would, because every byte the parser cuts at (`:`, space, CR, LF) is
//! ASCII and never part of a multi-byte sequence.

use memchr::memchr;

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

/// The buffers of the event being received, and the state that outlives events.
#[derive(Debug, Default)]
pub(crate) struct EventBuilder {
    /// The event type buffer.
    event_type: String,
    /// The data buffer: each `data:` value followed by an LF, as the spec builds it, so
    /// that an event with a single empty `data:` line is still told apart from one with
    /// no data at all.
    data: String,
    /// A valid `retry:` value seen in the current event.
    retry: Option<u64>,
    /// The last event ID buffer; it is not reset between events.
    last_event_id: String,
    /// The latest valid `retry:` value of the stream, whether or not its event was
    /// dispatched.
    reconnection_time: Option<u64>,
}

impl EventBuilder {
    /// Interprets one complete, non-empty line.
    pub(crate) fn field_line(&mut self, line: &[u8]) {
        let (name, value) = match memchr(b':', line) {
            // A line starting with a colon is a comment (servers send them as keep-alives).
            Some(0) => return,
            Some(colon) => {
                let value = line.get(colon + 1..).unwrap_or_default();
                (
                    line.get(..colon).unwrap_or_default(),
                    value.strip_prefix(b" ").unwrap_or(value),
                )
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                self.data.reserve(value.len() + 1);
                push_utf8_lossy(&mut self.data, value);
                self.data.push('\n');
            }
            b"event" => {
                self.event_type.clear();
                push_utf8_lossy(&mut self.event_type, value);
            }
            // An id containing NUL is ignored, as the spec says.
            b"id" if memchr(0, value).is_none() => {
                self.last_event_id.clear();
                push_utf8_lossy(&mut self.last_event_id, value);
            }
            b"retry" => {
                if let Some(milliseconds) = parse_digits(value) {
                    self.retry = Some(milliseconds);
                    self.reconnection_time = Some(milliseconds);
                }
            }
            // Unknown fields, and ids containing NUL, are ignored as the spec says.
            _ => {}
        }
    }

    /// Writes the pending event into `out`, reusing `out`'s buffers, and returns whether
    /// there was one (an event with no data is not dispatched; `out` is then left as
    /// it was). Copying into buffers the caller keeps, instead of handing over fresh
    /// strings, saves two allocations per event on a long stream.
    pub(crate) fn dispatch_into(&mut self, out: &mut SseEvent) -> bool {
        let retry = self.retry.take();
        if self.data.is_empty() {
            // Cleared rather than replaced, so the buffer's memory is kept for reuse.
            self.event_type.clear();
            return false;
        }
        // Every data line was appended with an LF; the last one is not part of the data.
        let data = self.data.strip_suffix('\n').unwrap_or(&self.data);
        out.data.clear();
        out.data.push_str(data);
        self.data.clear();
        set_optional(&mut out.event, &self.event_type);
        self.event_type.clear();
        set_optional(&mut out.id, &self.last_event_id);
        out.retry = retry;
        true
    }

    /// Forgets the current event without dispatching it (it was too large).
    pub(crate) fn discard(&mut self) {
        self.event_type.clear();
        self.data.clear();
        self.retry = None;
    }

    /// The last event ID of the stream, `None` while it is empty.
    pub(crate) fn last_event_id(&self) -> Option<&str> {
        Some(self.last_event_id.as_str()).filter(|id| !id.is_empty())
    }

    /// The latest valid `retry:` value of the stream.
    pub(crate) fn reconnection_time(&self) -> Option<u64> {
        self.reconnection_time
    }
}

/// Appends `bytes` as UTF-8, replacing invalid sequences with U+FFFD.
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

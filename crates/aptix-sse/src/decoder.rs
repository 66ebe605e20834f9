//! The incremental decoder: lines from [`LineReader`], events from [`EventBuilder`], and
//! the per-event size limit that keeps a misbehaving server from filling memory.

use std::fmt;

use super::event::{EventBuilder, SseEvent};
use super::lines::{LineReader, NextLine};
use crate::SseError;

/// The default limit on one event's size: 16 MiB, far above the largest Responses API
/// event (a `response.completed` carrying the whole final response), far below what
/// would hurt a server.
pub const DEFAULT_MAX_EVENT_SIZE: usize = 16 * 1024 * 1024;

/// Decodes a `text/event-stream` body fed in chunks of any size into [`SseEvent`]s.
///
/// Pure and synchronous: whoever owns the connection calls [`feed`](Self::feed) with
/// each chunk, takes events with [`next_event`](Self::next_event) until it returns
/// `None`, and calls [`finish`](Self::finish) when the body ends.
///
/// # Rules
///
/// It follows the WHATWG "event stream interpretation" rules:
/// - lines end in CRLF, LF or CR, and a CR ending one chunk followed by an LF starting
///   the next is one line end;
/// - a UTF-8 byte order mark at the very start of the stream is skipped;
/// - `field: value` lines lose one optional space after the colon; a line without a
///   colon is a field with an empty value; lines starting with `:` are comments;
/// - `data` values are joined with `\n`; `event` sets the type; `id` sets the last
///   event ID unless it contains NUL, and the ID carries over to later events; `retry`
///   is taken only when it is all ASCII digits; unknown fields are ignored;
/// - a blank line dispatches the event, but an event without any `data` line is not
///   dispatched (as the spec says; it carries nothing to decode). A single empty
///   `data:` line does make an event, with empty data;
/// - text is decoded from UTF-8 per complete line, so a character split between chunks
///   is never mangled; invalid UTF-8 becomes U+FFFD.
///
/// Chunk boundaries never change the result: any split of the same bytes, down to one
/// byte at a time, gives the same events.
///
/// # Deviations, on purpose
///
/// - **End of input dispatches.** The spec discards an event whose blank line never
///   came. [`finish`](Self::finish) dispatches it (and treats an unfinished last line as
///   complete), because a proxy that trims the final blank line must not make us lose
///   `response.completed`. A body cut mid-line then yields truncated data, which fails
///   JSON decoding loudly instead of vanishing.
/// - **Size limit.** An event larger than the limit (its lines before the blank line,
///   each line end counted as one byte whatever its spelling, so that the outcome does
///   not depend on where the network split a `\r\n`) is reported once as
///   [`SseError::EventTooLarge`] as soon as the buffered bytes pass the limit,
///   even before its line ends. The rest of that event is dropped unbuffered and
///   decoding resumes after its blank line.
///
/// # Cost
///
/// Each byte is searched once and copied into the buffer once; complete lines are read
/// in place. Besides the event's own `data` and `event` strings (and `id` when the server
/// sends ids) nothing is allocated per event or per line. Memory held is at most one
/// chunk plus one event up to the limit, provided events are taken after each `feed`.
///
/// # Example
///
/// ```
/// use aptix_sse::SseDecoder;
///
/// let mut decoder = SseDecoder::new();
/// let mut events = Vec::new();
/// // A chunk boundary inside a line and a missing final blank line change nothing.
/// for chunk in [&b"event: ping\nda"[..], b"ta: {\"type\":\"ping\"}\n\ndata: last"] {
///     decoder.feed(chunk);
///     while let Some(event) = decoder.next_event() {
///         events.push(event?);
///     }
/// }
/// events.extend(decoder.finish()?);
///
/// assert_eq!(events.len(), 2);
/// assert_eq!(events[0].event_type(), "ping");
/// assert_eq!(events[0].data, r#"{"type":"ping"}"#);
/// assert_eq!(events[1].event_type(), "message");
/// assert_eq!(events[1].data, "last");
/// # Ok::<(), aptix_sse::SseError>(())
/// ```
pub struct SseDecoder {
    lines: LineReader,
    builder: EventBuilder,
    max_event_size: usize,
    /// Bytes of the current event's complete lines so far, one byte per line end.
    event_size: usize,
    /// Stream offset of the current event's first line, for the size error.
    event_start: u64,
    /// The current event went over the limit and was reported: its remaining lines are
    /// dropped up to the blank line that ends it.
    discarding: bool,
}

impl SseDecoder {
    /// A decoder with the [`DEFAULT_MAX_EVENT_SIZE`] limit.
    pub fn new() -> Self {
        Self::with_max_event_size(DEFAULT_MAX_EVENT_SIZE)
    }

    /// A decoder that rejects any event larger than `max_event_size` bytes (its lines,
    /// each line end counted as one byte).
    pub fn with_max_event_size(max_event_size: usize) -> Self {
        Self {
            lines: LineReader::default(),
            builder: EventBuilder::default(),
            max_event_size,
            event_size: 0,
            event_start: 0,
            discarding: false,
        }
    }

    /// Adds the next chunk of the body. Call [`next_event`](Self::next_event) until it
    /// returns `None` before feeding more, or the chunks pile up in the buffer.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.lines.push(bytes);
    }

    /// The next complete event, `None` when more input is needed, or an error for an
    /// event over the size limit (decoding can go on after it).
    pub fn next_event(&mut self) -> Option<Result<SseEvent, SseError>> {
        let mut event = SseEvent::default();
        self.decode_into(false, &mut event)
            .map(|result| result.map(|()| event))
    }

    /// Like [`next_event`](Self::next_event), but writes the event into `event`, reusing
    /// its buffers: a loop that keeps one `SseEvent` allocates nothing per event once
    /// the buffers have grown. `Some(Ok(()))` means `event` holds a new event; on `None`
    /// or an error, `event` is unchanged.
    pub fn next_event_into(&mut self, event: &mut SseEvent) -> Option<Result<(), SseError>> {
        self.decode_into(false, event)
    }

    /// Ends the input and returns what was pending: an event that had data but no blank
    /// line yet is dispatched (see the type's docs for why).
    ///
    /// If [`next_event`](Self::next_event) was drained after the last feed, this returns
    /// at most one event. Otherwise call it until `Ok(None)` to take the remaining events
    /// in order. Once the pending event is returned the decoder is ready for a new
    /// stream; [`last_event_id`](Self::last_event_id) and
    /// [`reconnection_time`](Self::reconnection_time) are kept for the reconnection.
    pub fn finish(&mut self) -> Result<Option<SseEvent>, SseError> {
        let mut event = SseEvent::default();
        self.decode_into(true, &mut event)
            .map(|result| result.map(|()| event))
            .transpose()
    }

    /// The last event ID the stream set, `None` while it is empty; what a reconnection
    /// would send as `Last-Event-ID`.
    pub fn last_event_id(&self) -> Option<&str> {
        self.builder.last_event_id()
    }

    /// The latest valid `retry:` value in milliseconds, including one sent in an event
    /// that was not dispatched.
    pub fn reconnection_time(&self) -> Option<u64> {
        self.builder.reconnection_time()
    }

    /// Bytes fed and not yet decoded (at most one unfinished line once events are
    /// drained); useful to watch memory.
    pub fn buffered_len(&self) -> usize {
        self.lines.unread_len()
    }

    fn decode_into(&mut self, at_eof: bool, out: &mut SseEvent) -> Option<Result<(), SseError>> {
        loop {
            match self.lines.next_line(at_eof) {
                NextLine::Line {
                    content,
                    raw_len,
                    offset,
                } => {
                    if content.is_empty() {
                        self.event_size = 0;
                        if std::mem::take(&mut self.discarding) {
                            continue;
                        }
                        if self.builder.dispatch_into(out) {
                            return Some(Ok(()));
                        }
                        continue;
                    }
                    if self.discarding {
                        continue;
                    }
                    if self.event_size == 0 {
                        self.event_start = offset;
                    }
                    self.event_size = self.event_size.saturating_add(raw_len);
                    if self.event_size > self.max_event_size {
                        return Some(Err(self.reject_event()));
                    }
                    self.builder.field_line(content);
                }
                NextLine::NeedMore {
                    partial_len,
                    offset,
                } => {
                    if partial_len == 0 {
                        return None;
                    }
                    if self.discarding {
                        self.lines.skip_rest_of_line();
                        return None;
                    }
                    if self.event_size == 0 {
                        self.event_start = offset;
                    }
                    // Checked before the line ends, so a line that never ends cannot
                    // grow the buffer without bound.
                    if self.event_size.saturating_add(partial_len) > self.max_event_size {
                        self.lines.skip_rest_of_line();
                        return Some(Err(self.reject_event()));
                    }
                    return None;
                }
                NextLine::End => {
                    let dispatched = self.builder.dispatch_into(out);
                    self.lines.reset();
                    self.event_size = 0;
                    self.discarding = false;
                    return dispatched.then_some(Ok(()));
                }
            }
        }
    }

    /// Reports the current event as too large and starts dropping the rest of it.
    fn reject_event(&mut self) -> SseError {
        self.builder.discard();
        self.discarding = true;
        SseError::EventTooLarge {
            limit: self.max_event_size,
            offset: self.event_start,
        }
    }
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SseDecoder {
    // Sizes only: the buffer can hold megabytes of a stream nobody wants in a log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseDecoder")
            .field("buffered_len", &self.buffered_len())
            .field("max_event_size", &self.max_event_size)
            .field("event_size", &self.event_size)
            .field("discarding", &self.discarding)
            .finish_non_exhaustive()
    }
}

//! Incremental Server-Sent Events decoding: `text/event-stream` bytes in, in chunks of
//! any size, [`SseEvent`]s out.
//!
//! This is the framing layer only: it knows nothing of the Responses API. Both the HTTP
//! client (`aptix-client`, fed by the connection) and the stream fold (`aptix-mapping`,
//! fed a saved body by `aptix inspect`) decode with it, so the same bytes frame the same
//! way on every path.
//!
//! The code is split by concept: `lines` cuts the byte stream into lines whatever the
//! chunking, `event` interprets the fields of those lines and builds events, and
//! `decoder` puts the two together and enforces the per-event size limit. The rules and
//! the deliberate deviations from the WHATWG algorithm are documented on [`SseDecoder`].
//!
//! Hand-rolled on `memchr` rather than built on `eventsource-stream`: that crate
//! re-allocates its whole buffer after every line (quadratic on a big chunk), has no
//! limit on an event's size (a hostile server can make it buffer without end), and
//! drops a final event whose blank line is missing, which would lose
//! `response.completed` behind a proxy that trims the end of the body. Its output is the
//! oracle of this crate's differential tests.
//!
//! **Architecture invariant:** pure and synchronous; no I/O, no runtime, no allocation
//! per line beyond the event's own fields.
//!
//! # Example
//!
//! ```
//! use aptix_sse::SseDecoder;
//!
//! let mut decoder = SseDecoder::new();
//! decoder.feed(b"event: response.created\ndata: {\"type\":\"response.created\"}\n\n");
//! let event = decoder.next_event().expect("one event")?;
//! assert_eq!(event.event_type(), "response.created");
//! assert_eq!(event.data, r#"{"type":"response.created"}"#);
//! # Ok::<(), aptix_sse::SseError>(())
//! ```
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Library code must never panic on input; slicing goes through `get`.
#![deny(clippy::indexing_slicing)]

mod decoder;
mod event;
mod lines;

pub use decoder::{DEFAULT_MAX_EVENT_SIZE, SseDecoder};
pub use event::SseEvent;

/// Why the decoder could not deliver an event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// One event grew past the decoder's size limit
    /// ([`SseDecoder::with_max_event_size`]).
    ///
    /// The decoder stops buffering that event at once, drops the rest of it up to the
    /// blank line that ends it, and then carries on with the next event.
    #[error("sse event starting at byte {offset} is larger than the limit of {limit} bytes")]
    EventTooLarge {
        /// The limit in force, in bytes.
        limit: usize,
        /// Where the event starts, counted in bytes from the start of the stream.
        offset: u64,
    },
}

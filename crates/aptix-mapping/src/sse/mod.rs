//! Incremental Server-Sent Events decoding: bytes in, [`SseEvent`]s out.
//!
//! The code is split by concept: [`lines`] cuts the byte stream into lines whatever
//! the chunking, [`event`] interprets the fields of those lines and builds events, and
//! [`decoder`] puts the two together and enforces the per-event size limit. The rules
//! and the deliberate deviations from the WHATWG algorithm are documented on
//! [`SseDecoder`], the type users see.
//!
//! Hand-rolled on `memchr` rather than built on `eventsource-stream`: that crate
//! re-allocates its whole buffer after every line (quadratic on a big chunk) and drops
//! a final event whose blank line is missing, which would lose `response.completed`
//! behind a proxy that trims the end of the body.

// Library code must never panic on input; slicing goes through `get`.
#![deny(clippy::indexing_slicing)]

mod decoder;
mod event;
mod lines;

pub use decoder::{DEFAULT_MAX_EVENT_SIZE, SseDecoder};
pub use event::{SseEvent, SseEventView};

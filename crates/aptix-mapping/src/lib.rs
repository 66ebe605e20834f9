//! Aptix result mapping: a `/v1/responses` result, error body or SSE stream in, the
//! AGN-004 `AgentExecuteResponse` envelope out.
//!
//! **Architecture invariant:** pure functions over bytes and data. No I/O, no async
//! runtime; the incremental SSE decoder is fed bytes by whoever owns the connection.
//!
//! [`SseDecoder`] turns a `text/event-stream` body, in chunks of any size, into
//! [`SseEvent`]s (framing only: `event`, `data`, `id`, `retry`; the JSON in `data` is
//! decoded elsewhere). Errors are [`MappingError`], the crate's one error enum.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod error;
mod sse;

pub use error::MappingError;
pub use sse::{DEFAULT_MAX_EVENT_SIZE, SseDecoder, SseEvent};

//! Aptix result mapping: a `/v1/responses` result, error body or SSE stream in, the
//! AGN-004 `AgentExecuteResponse` envelope out.
//!
//! **Architecture invariant:** pure functions over bytes and data. No I/O, no async
//! runtime; the incremental SSE decoder is fed bytes by whoever owns the connection.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

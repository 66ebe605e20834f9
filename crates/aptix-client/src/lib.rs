//! Aptix providers: the `ResponsesProvider` seam and its implementations over HTTP.
//!
//! **Architecture invariant:** the only crate that touches the network. It knows the
//! wire, not the Aptix envelope's meaning, sessions or retrieval.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

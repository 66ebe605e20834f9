//! The Aptix workspace index: code-aware chunks of a workspace in an embedded lexical
//! index under `.aptix/`, served through the `aptix_rag::Retriever` trait.
//!
//! **Architecture invariant:** reads the workspace and writes only inside its `.aptix/`
//! folder; never touches the network.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

//! Aptix request construction: server-owned turn state in, the exact `/v1/responses`
//! body out (AGN-003, with the wire corrections of `docs/wire.md`).
//!
//! **Architecture invariant:** pure functions over data. No I/O, no async runtime, no
//! environment access; everything the builder needs arrives as arguments.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

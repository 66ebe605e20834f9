//! Cross-crate integration tests and workspace-wide property tests live in `tests/`;
//! this library is empty on purpose.

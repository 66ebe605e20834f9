//! Retries: the pure decision ([`RetryPolicy`]) and the reply headers it reads
//! ([`headers`]).
//!
//! The HTTP providers run every attempt through [`RetryPolicy`]; other transports can
//! use the same policy, which is why it compiles without the `http` feature.

pub mod headers;
mod observe;
mod policy;

#[cfg(feature = "http")]
pub(crate) use observe::notify;
pub use observe::{RetryNotice, observe_retries};
pub use policy::{Failure, GiveUpReason, RetryDecision, RetryPolicy, status_is_retryable};

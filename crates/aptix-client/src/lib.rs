//! Aptix providers: the `ResponsesProvider` seam and its implementations over HTTP.
//!
//! **Architecture invariant:** the only crate that touches the network. It knows the
//! wire, not the Aptix envelope's meaning, sessions or retrieval.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod chat;
mod config;
mod error;
mod fake;
mod provider;
pub mod retry;
mod stream;

#[cfg(feature = "http")]
mod openai;
#[cfg(feature = "http")]
mod sse_body;
#[cfg(feature = "http")]
mod transport;

#[cfg(feature = "http")]
pub use chat::ChatCompletionsProvider;
pub use config::{
    AuthScheme, DEFAULT_BASE_URL, DEFAULT_CONNECT_TIMEOUT, DEFAULT_POOL_IDLE_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT, DEFAULT_STREAM_IDLE_TIMEOUT, OpenAiConfig, OpenAiConfigBuilder,
    Timeouts,
};
pub use error::{ClientError, MAX_EXCERPT, MAX_RAW_BODY, TimeoutKind, TransportPhase};
pub use fake::{CallKind, FakeProvider, FakeReply, RecordedCall};
#[cfg(feature = "http")]
pub use openai::OpenAiProvider;
pub use provider::{Capabilities, ProviderResponse, RateLimits, ReplyMeta, ResponsesProvider};
pub use retry::RetryPolicy;
pub use stream::EventStream;

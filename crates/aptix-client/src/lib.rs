//! Aptix providers: the [`ResponsesProvider`] seam and its implementations.
//!
//! The layers above (the orchestrator, the CLI) hold an `Arc<dyn ResponsesProvider>`
//! and never name an implementation:
//!
//! - [`OpenAiProvider`]: `POST /v1/responses` over HTTP, for OpenAI and any server
//!   that speaks it by base URL (llama.cpp's `llama-server`, vLLM, Ollama, Azure).
//! - [`ChatCompletionsProvider`]: a bridge for servers that speak only
//!   `/v1/chat/completions`; requests, replies and streams are translated to and from
//!   the Responses shapes in [`chat`], so nothing above it changes.
//! - [`FakeProvider`]: scripted replies, every request recorded, for tests.
//!
//! A call returns a [`ProviderResponse`] (the wire `Response` plus [`ReplyMeta`]:
//! status, `x-request-id`, parsed [`RateLimits`], attempts) or an [`EventStream`] of
//! wire `StreamEvent`s. Every failure is one [`ClientError`] with structured fields.
//! [`Capabilities`] tells the caller what a provider can carry (native JSON schema,
//! tools, `previous_response_id`, ...). Configuration is [`OpenAiConfig`], built
//! explicitly or read from `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `OPENAI_ORG_ID` and
//! `OPENAI_PROJECT_ID` by [`OpenAiConfig::from_env`].
//!
//! # Design decisions
//!
//! - **The trait costs nothing.** The HTTP providers sit behind the default `http`
//!   feature; without it this crate is the trait, its types, the pure retry policy, the
//!   pure bridge translation and the fake, and pulls in no `reqwest`, `hyper` or
//!   `tokio` (`cargo xtask layering` checks it).
//! - **Retry decisions are data.** As in tower's `retry::Policy`, [`RetryPolicy`]
//!   decides from a status, headers and error body alone (408, 409, 429 but never
//!   `insufficient_quota`, 5xx, connection failures before the reply; `retry-after-ms`,
//!   `retry-after`, `x-should-retry`; bounded attempts, capped waits) and is
//!   unit-tested without sockets; `backon` supplies the jittered backoff and sleeping.
//! - **Streams are framed here, judged above.** A provider's `stream` returns an
//!   [`EventStream`] of framed server-sent events; what they mean (an `error` event, a
//!   body that ends before its terminal event) is decided once, by `aptix-mapping`'s
//!   stream fold, whatever produced the bytes. An `Err` item is a connection problem
//!   and the last item. Streams are never retried once they started.
//! - **Bytes flow through.** Streamed bodies are fed chunk by chunk to the incremental
//!   SSE decoder of `aptix-sse`; a silence longer than the idle timeout is a typed
//!   [`ClientError::Timeout`], never a hang. Dropping the stream cancels it.
//! - **The key is a secret.** It is held in a `secrecy` type, sent in a header marked
//!   sensitive, scrubbed from anything a server echoes back, and absent from every
//!   `Debug` output, error and trace.
//! - **A failure says what to do.** [`remedy`] reads a failure's code and message (a
//!   [`ClientError::code`], or a provider's own code such as `insufficient_quota`) into
//!   the fix a person can make; every front end words its advice from it.
//!
//! **Architecture invariant:** the only crate that touches the network. It knows the
//! wire, not the Aptix envelope's meaning, sessions or retrieval.
//!
//! # Example
//!
//! Code written against the trait runs on any provider; here the fake, offline:
//!
//! ```
//! use aptix_client::{FakeProvider, ResponsesProvider};
//! use aptix_model::wire::{CreateResponseRequest, Input, Response};
//!
//! async fn answer_id(provider: &dyn ResponsesProvider) -> String {
//!     let request = CreateResponseRequest {
//!         model: "gpt-4o-mini".into(),
//!         input: Input::Text("Say hello".into()),
//!         ..CreateResponseRequest::default()
//!     };
//!     let reply = provider.create(&request).await.expect("scripted");
//!     reply.response.id
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let fake = FakeProvider::new();
//! fake.push_response(Response::with_id("resp_1"));
//! assert_eq!(answer_id(&fake).await, "resp_1");
//! assert_eq!(fake.requests()[0].model, "gpt-4o-mini");
//! # }
//! ```
//!
//! Against the real API (needs the network and `OPENAI_API_KEY`):
//!
//! ```no_run
//! use aptix_client::{OpenAiProvider, ResponsesProvider};
//! use aptix_model::wire::{CreateResponseRequest, Input, StreamEvent};
//! use futures_util::StreamExt;
//!
//! # async fn run() -> Result<(), aptix_client::ClientError> {
//! let provider = OpenAiProvider::from_env()?;
//! let request = CreateResponseRequest {
//!     model: "gpt-4o-mini".into(),
//!     input: Input::Text("Say hello".into()),
//!     ..CreateResponseRequest::default()
//! };
//! let mut events = provider.stream(&request).await?;
//! while let Some(event) = events.next().await {
//!     if let Ok(StreamEvent::OutputTextDelta(delta)) = StreamEvent::from_json(&event?.data) {
//!         print!("{}", delta.delta);
//!     }
//! }
//! # Ok(())
//! # }
//! ```
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod chat;
mod config;
mod error;
mod fake;
mod provider;
mod redact;
mod remedy;
pub use redact::Redactor;
pub use remedy::{Remedy, remedy};
pub mod retry;
mod stream;

#[cfg(feature = "http")]
mod openai;
#[cfg(feature = "http")]
mod split_secret;
#[cfg(feature = "http")]
mod sse_body;
#[cfg(feature = "http")]
mod transport;

/// `text` with the API `key` in it replaced by `[redacted]`, and the masked forms a
/// server echoes (`sk-...abcd`, `***abcd`) too: the rule the HTTP providers apply to
/// everything they read, for a caller's own output. A key under 12 characters is a
/// placeholder (`ollama`, `EMPTY`), left alone, so that it cannot rewrite ordinary
/// words.
///
/// ```
/// let key = "sk-test-0123456789abcdef";
/// assert_eq!(
///     aptix_client::scrub_key("sent sk-test-0123456789abcdef", Some(key)),
///     "sent [redacted]"
/// );
/// assert_eq!(aptix_client::scrub_key("ollama runs", Some("ollama")), "ollama runs");
/// ```
#[cfg(feature = "http")]
pub fn scrub_key(text: &str, key: Option<&str>) -> String {
    redact::scrub(text, key.filter(|key| redact::is_scrubbed_key(key)))
}

#[cfg(feature = "http")]
pub use chat::ChatCompletionsProvider;
pub use config::{AuthScheme, DEFAULT_BASE_URL, OpenAiConfig, OpenAiConfigBuilder, Timeouts};
pub use error::{
    ClientError, MAX_RAW_BODY, TimeoutKind, TransportPhase, human_duration, requested_wait,
};
pub use fake::{CallKind, FakeProvider, FakeReply, RecordedCall};
#[cfg(feature = "http")]
pub use openai::OpenAiProvider;
pub use provider::{Capabilities, ProviderResponse, RateLimits, ReplyMeta, ResponsesProvider};
pub use retry::{RetryNotice, RetryPolicy, observe_retries};
pub use stream::EventStream;

//! Aptix for Rust users: one import for turning a developer instruction into a
//! `/v1/responses` call, with workspace context, tools and sessions.
//!
//! This crate re-exports what a library user needs from the layered crates
//! (`aptix-model`, `aptix-client`, `aptix-sse`, `aptix-rag`, `aptix-request`,
//! `aptix-mapping`, `aptix-orchestrator`, and with their features `aptix-index` and
//! `aptix-tools`, `aptix-schema` and `aptix-runtime`), the way `tokio` and `axum` gather
//! theirs. The layered crates stay importable one by one for code that needs only a
//! part (a provider without the orchestrator, the mapping without a network).
//!
//! - [`Orchestrator`] runs turns: an AGN-034 [`AgentExecuteRequest`] in, an AGN-004
//!   [`AgentExecuteResponse`] envelope out; [`OrchestratorConfig`] tunes it. A model or
//!   provider that failed is an envelope of [`Kind::Error`] (its `error_code` and
//!   `error_message` say why), the turn's answer; an `Err` ([`OrchestratorError`]) is
//!   a turn that could not run (an invalid request, a busy session, the store).
//! - The seams, held as `Arc<dyn Trait>`: [`ResponsesProvider`] (answers
//!   `/v1/responses`), [`Retriever`] (finds [`Chunk`]s for the `[CONTEXT]` block),
//!   [`SessionStore`] ([`InMemorySessionStore`], `SqliteSessionStore`,
//!   `PgSessionStore`), and
//!   [`ServerTool`] (a tool the orchestrator runs), most easily written as a
//!   [`TypedTool`] with `serde` + `schemars` types and registered as [`Typed`].
//! - [`macro@async_trait`] is re-exported, so implementing a seam needs no direct dependency
//!   on it.
//! - [`contract`] and [`wire`] hold the data types: the AGN-034/AGN-004 contracts and
//!   the Responses API's own.
//!
//! # Cargo features
//!
//! | feature | default | what it adds |
//! |---|---|---|
//! | `http` | yes | [`OpenAiProvider`], [`ChatCompletionsProvider`], [`OpenAiConfig`] (reqwest, rustls) |
//! | `sqlite` | no | `SqliteSessionStore`: sessions in one file (bundled SQLite, a C compile) |
//! | `postgres` | no | `PgSessionStore`: sessions in PostgreSQL, shared by several processes (and, with `runtime`, a `store = "postgres://…"` setting) |
//! | `index` | no | `aptix::index`: the tantivy workspace index and its retriever (tree-sitter grammars, C compiles); `aptix::tools`: the built-in `search_code`, `read_file` and `list_files` over it |
//! | `schema` | no | `aptix::schema`: seed 003, JSON of a given shape on any provider |
//! | `runtime` | no | `aptix::runtime`: a workspace wired as the `aptix` command wires it, from its `aptix.toml`, the user's file and `APTIX_*` (brings `http`, `sqlite`, `index`) |
//!
//! The default is lean on purpose: reaching a model needs `http` (whose TLS, rustls
//! over aws-lc-rs, is the default's one C compile); SQLite and tree-sitter are asked for
//! by name. Without `http` the crate is still whole: bring a provider of your own.
//!
//! The HTTP providers need a Tokio runtime with its timers on (`#[tokio::main]`, or a
//! `Builder` with `enable_all()`): every request is bounded by timeouts.
//!
//! # A turn against a server
//!
//! Any server that speaks `/v1/responses`: OpenAI (the default base URL), or a local
//! one by its base URL. The key is given to the builder (or read with
//! [`OpenAiConfigBuilder::from_env`] from `OPENAI_API_KEY` and `OPENAI_BASE_URL`); the
//! model is the orchestrator's setting ([`OrchestratorConfig::model`]).
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use aptix::{
//!     InMemorySessionStore, Kind, OpenAiConfig, OpenAiProvider, Orchestrator,
//!     OrchestratorConfig, StreamDelta, ValidatedRequest,
//! };
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let client = OpenAiConfig::builder()
//!     .base_url("http://127.0.0.1:8080/v1")
//!     .api_key(std::env::var("OPENAI_API_KEY")?)
//!     .build()?;
//! let mut config = OrchestratorConfig::default();
//! config.model.model = "gpt-5-mini".into();
//! let orchestrator = Orchestrator::builder(
//!     Arc::new(OpenAiProvider::new(client)?),
//!     Arc::new(InMemorySessionStore::new()),
//! )
//! .config(config)
//! .build()?;
//! let request = ValidatedRequest::from_json_slice(
//!     br#"{"sessionId": "s1", "turnId": "t1", "instruction": "What does this crate do?"}"#,
//! )?;
//! // The answer's text as it streams, then the whole envelope.
//! let mut sink = |delta: &StreamDelta| {
//!     if let Some(text) = delta.text() {
//!         print!("{text}");
//!     }
//! };
//! let envelope = orchestrator.execute_streaming(request, &mut sink).await?;
//! if envelope.kind == Kind::Error {
//!     eprintln!("{:?}: {:?}", envelope.error_code, envelope.error_message);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # A provider of your own
//!
//! Implement [`ResponsesProvider::create`]; streaming comes from the trait's default,
//! which streams the whole reply as its events.
//!
//! ```
//! use std::sync::Arc;
//!
//! use aptix::wire::{CreateResponseRequest, Response};
//! use aptix::{
//!     Capabilities, ClientError, InMemorySessionStore, Orchestrator, ProviderResponse,
//!     ReplyMeta, ResponsesProvider, StreamDelta, ValidatedRequest, async_trait,
//! };
//!
//! /// Answers every request with the same sentence.
//! struct Canned;
//!
//! #[async_trait]
//! impl ResponsesProvider for Canned {
//!     async fn create(
//!         &self,
//!         _request: &CreateResponseRequest,
//!     ) -> Result<ProviderResponse, ClientError> {
//!         let body = r#"{"id": "resp_1", "status": "completed", "model": "canned",
//!             "output": [{"type": "message", "role": "assistant",
//!                         "content": [{"type": "output_text", "text": "Always this."}]}]}"#;
//!         // A reply that does not decode is a decode error (the envelope's code:
//!         // `decode_error`).
//!         let response: Response = serde_json::from_str(body).map_err(|error| {
//!             ClientError::decode("canned reply", body.as_bytes(), 0, error.to_string())
//!         })?;
//!         Ok(ProviderResponse::new(response, ReplyMeta::synthetic()))
//!     }
//!
//!     fn capabilities(&self) -> Capabilities {
//!         Capabilities::default()
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let orchestrator =
//!     Orchestrator::builder(Arc::new(Canned), Arc::new(InMemorySessionStore::new())).build()?;
//! let request = ValidatedRequest::from_json_slice(
//!     br#"{"sessionId": "s1", "turnId": "t1", "instruction": "Anything"}"#,
//! )?;
//! // `create` only, yet the turn streams: the default `stream` plays the whole reply.
//! let mut finished = false;
//! let mut sink = |delta: &StreamDelta| finished |= matches!(delta, StreamDelta::Done { .. });
//! let envelope = orchestrator.execute_streaming(request, &mut sink).await?;
//! assert!(finished);
//! assert_eq!(envelope.text.as_deref(), Some("Always this."));
//! # Ok(())
//! # }
//! ```
//!
//! # A typed server tool
//!
//! Arguments and output are Rust types; the arguments' JSON schema is derived, and
//! arguments that do not decode go back to the model as the call's error (naming the
//! field at fault) without running the tool. [`schemars`] is re-exported so that its
//! version matches this crate's: without a `schemars` dependency of your own, derive
//! through it with `#[schemars(crate = "aptix::schemars")]`, as below (with one, of the
//! same major version, a plain `#[derive(JsonSchema)]` does).
//!
//! ```
//! use std::sync::Arc;
//!
//! use aptix::schemars::JsonSchema;
//! use aptix::wire::Response;
//! use aptix::{
//!     FakeProvider, InMemorySessionStore, Orchestrator, ServerTool, Typed, TypedTool,
//!     ValidatedRequest, async_trait,
//! };
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[schemars(crate = "aptix::schemars")]
//! struct AddArgs {
//!     /// The numbers to add.
//!     numbers: Vec<i64>,
//! }
//!
//! #[derive(Serialize)]
//! struct Sum {
//!     sum: i64,
//! }
//!
//! struct Add;
//!
//! #[async_trait]
//! impl TypedTool for Add {
//!     const NAME: &'static str = "add";
//!     type Args = AddArgs;
//!     type Output = Sum;
//!     type Error = String;
//!
//!     fn description(&self) -> &str {
//!         "Adds numbers exactly"
//!     }
//!
//!     async fn call(&self, args: AddArgs) -> Result<Sum, String> {
//!         args.numbers
//!             .iter()
//!             .try_fold(0i64, |sum, n| sum.checked_add(*n))
//!             .map(|sum| Sum { sum })
//!             .ok_or_else(|| "the sum overflows i64".to_owned())
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let add = Arc::new(Typed::new(Add));
//! assert_eq!(add.parameters()["required"], serde_json::json!(["numbers"]));
//!
//! // The model calls the tool once, then answers.
//! let provider = Arc::new(FakeProvider::new());
//! provider
//!     .push_response(serde_json::from_str::<Response>(
//!         r#"{"id": "resp_1", "status": "completed", "output": [{"type": "function_call",
//!             "call_id": "call_1", "name": "add", "arguments": "{\"numbers\": [2, 40]}"}]}"#,
//!     )?)
//!     .push_response(serde_json::from_str::<Response>(
//!         r#"{"id": "resp_2", "status": "completed", "output": [{"type": "message",
//!             "role": "assistant", "content": [{"type": "output_text", "text": "42"}]}]}"#,
//!     )?);
//! let orchestrator =
//!     Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
//!         .server_tool(add)
//!         .build()?;
//! let request = ValidatedRequest::from_json_slice(
//!     br#"{"sessionId": "s1", "turnId": "t1", "instruction": "What is 2 + 40?"}"#,
//! )?;
//! let envelope = orchestrator.execute(request).await?;
//! assert_eq!(envelope.text.as_deref(), Some("42"));
//! let second = serde_json::to_string(&provider.requests()[1])?;
//! assert!(second.contains(r#""output":"{\"sum\":42}""#), "{second}");
//! # Ok(())
//! # }
//! ```
//!
//! # A streamed turn
//!
//! Text deltas reach the sink as they arrive; the envelope at the end is the one a
//! non-streaming call gives. [`FakeProvider`] plays a scripted stream, offline.
//!
//! ```
//! use std::sync::Arc;
//!
//! use aptix::wire::StreamEvent;
//! use aptix::{
//!     FakeProvider, InMemorySessionStore, Kind, Orchestrator, StreamDelta, ValidatedRequest,
//! };
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let provider = Arc::new(FakeProvider::new());
//! provider.push_events([
//!     r#"{"type": "response.created", "sequence_number": 0,
//!         "response": {"id": "resp_1", "status": "in_progress", "output": []}}"#,
//!     r#"{"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
//!         "item": {"type": "message", "id": "msg_1", "role": "assistant",
//!                  "status": "in_progress", "content": []}}"#,
//!     r#"{"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1",
//!         "output_index": 0, "content_index": 0, "delta": "Hel"}"#,
//!     r#"{"type": "response.output_text.delta", "sequence_number": 3, "item_id": "msg_1",
//!         "output_index": 0, "content_index": 0, "delta": "lo."}"#,
//!     r#"{"type": "response.output_item.done", "sequence_number": 4, "output_index": 0,
//!         "item": {"type": "message", "id": "msg_1", "role": "assistant",
//!                  "status": "completed",
//!                  "content": [{"type": "output_text", "text": "Hello."}]}}"#,
//!     r#"{"type": "response.completed", "sequence_number": 5,
//!         "response": {"id": "resp_1", "status": "completed", "model": "gpt-test",
//!                      "output": [{"type": "message", "id": "msg_1", "role": "assistant",
//!                                  "status": "completed",
//!                                  "content": [{"type": "output_text", "text": "Hello."}]}]}}"#,
//! ]
//! .into_iter()
//! .map(StreamEvent::from_json)
//! .collect::<Result<Vec<_>, _>>()?);
//!
//! let orchestrator =
//!     Orchestrator::builder(provider, Arc::new(InMemorySessionStore::new())).build()?;
//! let request = ValidatedRequest::from_json_slice(
//!     br#"{"sessionId": "s1", "turnId": "t1", "instruction": "Say hello"}"#,
//! )?;
//! let mut text = String::new();
//! let mut sink = |delta: &StreamDelta| {
//!     if let StreamDelta::TextDelta { text: piece, .. } = delta {
//!         text.push_str(piece);
//!     }
//! };
//! let envelope = orchestrator.execute_streaming(request, &mut sink).await?;
//! assert_eq!(text, "Hello.");
//! assert_eq!(envelope.kind, Kind::Ok);
//! assert_eq!(envelope.text.as_deref(), Some("Hello."));
//! // The stream, as a server sends it, agrees with its final response.
//! assert!(envelope.warnings.is_empty(), "{:?}", envelope.warnings);
//! # Ok(())
//! # }
//! ```
//!
//! **Architecture invariant:** re-exports only; no code of its own beyond this page, so
//! a name here is the layered crate's name and behaves the same.

pub use async_trait::async_trait;

pub use aptix_model::contract;
pub use aptix_model::contract::{
    AgentExecuteRequest, AgentExecuteResponse, AgentToolCall, Kind, RequestRejection,
    ValidatedRequest,
};
pub use aptix_model::wire;
/// The error of decoding the wire's types ([`wire::StreamEvent::from_json`]) and of
/// parsing a scope condition; [`error_chain`] is the one-line message of any error
/// with its causes.
pub use aptix_model::{ModelError, error_chain};

/// Mapping replies into the AGN-004 envelope (`aptix-mapping`), with no network: a
/// response body, a recorded stream or capture ([`map_capture`](aptix_mapping::map_capture)),
/// an error body.
pub use aptix_mapping as mapping;
pub use aptix_mapping::{AnswerText, ShownAnswer, StreamDelta};
/// Building a `/v1/responses` body (`aptix-request`): the `[CONTEXT]` block, tools,
/// continuations, as the orchestrator builds them.
pub use aptix_request as request;

pub use aptix_client::{
    AuthScheme, CallKind, Capabilities, ClientError, EventStream, FakeProvider, FakeReply,
    OpenAiConfig, OpenAiConfigBuilder, ProviderResponse, RateLimits, RecordedCall, Redactor,
    Remedy, ReplyMeta, ResponsesProvider, RetryNotice, RetryPolicy, TimeoutKind, Timeouts,
    TransportPhase, observe_retries, remedy,
};
#[cfg(feature = "http")]
pub use aptix_client::{ChatCompletionsProvider, OpenAiProvider, chat};
/// The events of a server-sent-event stream, for a provider that reads its own
/// transport ([`EventStream::new`]).
pub use aptix_sse::SseEvent;

pub use aptix_request::{RequestError, ToolProblem};

/// Retrieval's parts (`aptix-rag`) for a retriever of one's own: the o200k token
/// counter, packing chunks to a budget, the language of a path.
pub use aptix_rag as rag;
pub use aptix_rag::{
    Chunk, ChunkId, LineSpan, RagError, Retrieval, RetrievalQuery, Retriever, ScoredChunk,
};

#[cfg(feature = "postgres")]
pub use aptix_orchestrator::PgSessionStore;
#[cfg(feature = "sqlite")]
pub use aptix_orchestrator::SqliteSessionStore;
pub use aptix_orchestrator::{
    ClientTool, CompactionMethod, CompactionReason, CompactionRecord, CompletedCall, ContextUsage,
    DeltaSink, InMemorySessionStore, LeaseInfo, MemoryStoreLimits, Mode, ModelSettings,
    Orchestrator, OrchestratorBuilder, OrchestratorConfig, OrchestratorError, PendingCall,
    PendingToolCalls, ReferenceReader, ReferencedFile, Scenario, ServerTool, SessionPage,
    SessionState, SessionStore, SessionSummary, SessionTotals, StoredTurn, StreamRecovery, TurnKey,
    Typed, TypedTool, Versioned, delete_session, is_made_session_id, new_session_id, new_turn_id,
    retry_delta,
};
/// The defaults a configuration starts from, and whether an envelope is a turn cut
/// short at its bound of model calls.
pub use aptix_orchestrator::{
    DEFAULT_SYSTEM_PROMPT, context_window_for, stopped_at_model_call_bound,
};

/// `schemars`, the version [`TypedTool::Args`] must derive `JsonSchema` from.
pub use schemars;

/// The embedded workspace index (`aptix-index`): a tantivy index of the workspace's
/// code and its [`Retriever`] implementation.
#[cfg(feature = "index")]
pub use aptix_index as index;

/// The built-in server tools over the workspace index (`aptix-tools`): `search_code`,
/// `read_file` and `list_files`, as the `aptix` command offers them
/// ([`builtin_tools`](aptix_tools::builtin_tools)), and the [`FileReader`](aptix_tools::FileReader)
/// seam through which an editor serves its unsaved buffers to `read_file`.
#[cfg(feature = "index")]
pub use aptix_tools as tools;

/// Seed 003 (`aptix-schema`): JSON of a given shape on any provider.
#[cfg(feature = "schema")]
pub use aptix_schema as schema;

/// The wiring of the `aptix` command (`aptix-runtime`): a workspace's layered settings
/// to its session store, provider, refreshed index and orchestrator, so a program runs
/// turns exactly as `aptix ask` in that workspace would:
///
/// ```no_run
/// use aptix::runtime::{Reporter, SettingsLayer, Workspace, process_env, resolve_workspace};
///
/// struct Quiet;
/// impl Reporter for Quiet {}
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // The project around the current folder; never the whole home folder.
/// let root = resolve_workspace(None, &std::env::current_dir()?, &process_env)?;
/// let workspace = Workspace::load(&root, &SettingsLayer::default(), &process_env)?;
/// let provider = workspace.provider(&process_env)?; // the key from OPENAI_API_KEY
/// let orchestrator = workspace.orchestrator(provider, None, &Quiet).await?;
/// let request = aptix::AgentExecuteRequest::user_turn(
///     aptix::new_session_id(),
///     aptix::new_turn_id(),
///     "Where is a turn stored?",
/// )?;
/// let envelope = orchestrator.execute(request).await?;
/// // A model or provider that failed (a wrong key, a 5xx after the retries) is an
/// // envelope too, of kind `error`: the answer to the turn, not an `Err`.
/// if envelope.kind == aptix::Kind::Error {
///     let code = envelope.error_code.unwrap_or_default();
///     let message = envelope.error_message.unwrap_or_default();
///     return Err(format!("the turn failed ({code}): {message}").into());
/// }
/// println!("{}", envelope.text.unwrap_or_default());
/// # Ok(())
/// # }
/// ```
///
/// A runnable dry run (no key, no network) is `crates/aptix-runtime/examples/dry_run.rs`.
#[cfg(feature = "runtime")]
pub use aptix_runtime as runtime;

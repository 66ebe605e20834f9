//! The Aptix orchestrator: sessions, turns and the tool loop, wired through the
//! provider, retriever, session-store and server-tool traits.
//!
//! An [`Orchestrator`] takes AGN-034 requests and returns AGN-004 envelopes. It holds
//! the seams as trait objects, so a caller picks the parts:
//!
//! - a provider ([`aptix_client::ResponsesProvider`]): the OpenAI Responses API, the
//!   Chat Completions bridge, or a scripted fake;
//! - a [`SessionStore`]: `SqliteSessionStore` (one file; the default `sqlite` feature),
//!   `PgSessionStore` (PostgreSQL, shared by many processes; the `postgres` feature) or
//!   [`InMemorySessionStore`];
//! - optionally a retriever ([`aptix_rag::Retriever`], e.g. the workspace index);
//! - [`ServerTool`]s it runs itself and [`ClientTool`]s whose calls go back to the client.
//!
//! # Design decisions
//!
//! - **Sessions are server-owned.** Mode, model settings, the last response id, pending
//!   client calls and the replayable history live in [`SessionState`], never in the
//!   request (AGN-034).
//! - **One commit per turn.** State and envelope are written in one versioned
//!   transaction at the end, so a dropped or failed turn leaves the last committed
//!   state, and a retried identical request (same session, turn and scenario) is
//!   answered from the store without calling the model again.
//! - **Failures of the model are envelopes, misuse is an error.** A provider or mapping
//!   failure comes back as `kind: "error"` and stores nothing; an invalid request, an
//!   unknown session, tool results that do not answer the pending calls, or a busy
//!   session are [`OrchestratorError`]s.
//! - **State strategy by capability.** Providers that keep state are chained with
//!   `previous_response_id`; for the others (or with `stateless` configured) the history
//!   is replayed, keeping every `function_call` paired with its output.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//!
//! use aptix_client::FakeProvider;
//! use aptix_model::contract::{AgentExecuteRequest, Kind};
//! use aptix_model::wire::Response;
//! use aptix_orchestrator::{InMemorySessionStore, Orchestrator};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let provider = Arc::new(FakeProvider::new());
//! provider.push_response(serde_json::from_str::<Response>(r#"{
//!     "id": "resp_1", "status": "completed", "model": "gpt-test",
//!     "output": [{"type": "message", "role": "assistant",
//!                 "content": [{"type": "output_text", "text": "Hello."}]}]
//! }"#)?);
//! let orchestrator =
//!     Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new())).build()?;
//!
//! let request = AgentExecuteRequest::from_json_slice(
//!     br#"{"sessionId": "s1", "turnId": "t1", "instruction": "Say hello"}"#,
//! )?;
//! let envelope = orchestrator.execute(request).await?;
//! assert_eq!(envelope.kind, Kind::Ok);
//! assert_eq!(envelope.text.as_deref(), Some("Hello."));
//! assert_eq!(provider.requests().len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! **Architecture invariant:** depends on traits, never on a concrete provider,
//! retriever or database chosen by a caller (the SQLite store is one implementation
//! among others); it never reads argv or writes to stdout.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod commit;
mod compaction;
mod config;
mod error;
mod ids;
mod inputs;
mod json_len;
mod lease;
mod matching;
mod orchestrator;
mod recovery;
mod session;
mod store;
mod tools;
mod turn;

pub use config::{
    DEFAULT_COMPACT_THRESHOLD, DEFAULT_CONTEXT_WINDOW, DEFAULT_SYSTEM_PROMPT, Mode,
    OrchestratorConfig, StreamRecovery, context_window_for,
};
pub use error::OrchestratorError;
pub use ids::{is_made_session_id, new_session_id, new_turn_id};
pub use inputs::{ReferenceReader, ReferencedFile};
pub use lease::{LeaseInfo, delete_session};
pub use orchestrator::{DeltaSink, Orchestrator, OrchestratorBuilder};
pub use recovery::retry_delta;
pub use session::{
    CompactionMethod, CompactionReason, CompactionRecord, CompletedCall, ContextUsage,
    ModelSettings, PendingCall, PendingToolCalls, Scenario, SessionState, SessionTotals,
    StoredTurn, TurnKey, Versioned,
};
#[cfg(feature = "sqlite")]
pub use store::SqliteSessionStore;
#[cfg(feature = "postgres")]
pub use store::{DEFAULT_POOL_SIZE, PgSessionStore};
pub use store::{
    InMemorySessionStore, MemoryStoreLimits, SessionPage, SessionStore, SessionSummary, redact_url,
};
pub use tools::{ClientTool, ServerTool, Typed, TypedTool};
pub use turn::stopped_at_model_call_bound;

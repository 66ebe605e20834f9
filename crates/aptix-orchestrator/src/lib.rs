//! The Aptix orchestrator: sessions, turns and the tool loop, wired through the
//! provider, retriever, session-store and server-tool traits.
//!
//! **Architecture invariant:** depends on traits, never on a concrete provider,
//! retriever or database chosen by a caller; it never reads argv or writes to stdout.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod config;
mod error;
mod inputs;
mod matching;
mod orchestrator;
pub mod session;
pub mod solve;
pub mod store;
mod tools;
mod turn;

pub use config::{DEFAULT_SYSTEM_PROMPT, Mode, OrchestratorConfig};
pub use error::OrchestratorError;
pub use orchestrator::{DeltaSink, Orchestrator, OrchestratorBuilder};
pub use session::{
    CompletedCall, ModelSettings, PendingCall, PendingToolCalls, Scenario, SessionState,
    StoredTurn, TurnKey, Versioned,
};
pub use store::{InMemorySessionStore, SessionStore, SqliteSessionStore};
pub use tools::{ClientTool, ServerTool};

//! The one error type of `aptix-orchestrator`.
//!
//! Only misuse of the API is an error: an invalid request, an unknown session on a tool
//! continuation, tool results that do not answer the pending calls, a busy session, or
//! a store that cannot be read or written. A provider or mapping failure is not an
//! error here: it comes back as an envelope with `kind: "error"`.

use aptix_model::contract::RequestRejection;

/// Errors of the orchestrator and its session stores.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OrchestratorError {
    /// The request broke AGN-034; every violation is listed.
    #[error("invalid request: {0}")]
    InvalidRequest(RequestRejection),
    /// A tool continuation named a session that does not exist.
    #[error("unknown session {session_id}: a tool continuation needs an existing session")]
    UnknownSession {
        /// The session asked for.
        session_id: String,
    },
    /// A tool continuation arrived while no tool calls were pending.
    #[error("session {session_id} has no pending tool calls to answer")]
    NothingPending {
        /// The session.
        session_id: String,
    },
    /// The tool results do not answer the pending calls exactly. Nothing was changed, so
    /// the client can retry with the right results.
    #[error("tool results do not match the pending calls of turn {turn_id}: {mismatch}")]
    ToolResultsMismatch {
        /// The turn whose calls are pending.
        turn_id: String,
        /// What differs, in a sentence naming ids and positions.
        mismatch: String,
        /// The pending call ids, in order.
        expected: Vec<String>,
        /// The ids the request answered, in order.
        received: Vec<String>,
    },
    /// The user turn ran already, for a different request. A `turnId` names one request:
    /// a retry sends it again unchanged (and gets the stored answer), a new request needs
    /// a new `turnId`. Nothing was changed. (Tool continuations are not refused this
    /// way: other results under a turn's id are its next round of client tool calls,
    /// checked against the pending calls.)
    #[error(
        "turn {turn_id} of session {session_id} already ran with a different request; send a retry unchanged, or give a new request a new turnId"
    )]
    TurnReused {
        /// The session.
        session_id: String,
        /// The turn.
        turn_id: String,
    },
    /// Another request is running on this session.
    #[error("session {session_id} is busy with another request{}", busy_detail(.holder.as_deref(), *.expires_in))]
    SessionBusy {
        /// The session.
        session_id: String,
        /// Who holds it, when known ("pid 1234 on build-box").
        holder: Option<String>,
        /// When the holder's lease expires, when known: the session is free then even if
        /// the holder never gives it back.
        expires_in: Option<std::time::Duration>,
    },
    /// The session changed between load and save (another writer won).
    #[error(
        "session {session_id} was changed by another turn while this one ran ({}); send the turn again",
        version_change(*expected, *found)
    )]
    Conflict {
        /// The session.
        session_id: String,
        /// The version this writer loaded.
        expected: Option<u64>,
        /// The version in the store.
        found: Option<u64>,
    },
    /// The session store failed.
    #[error("session store failed to {operation}")]
    Store {
        /// What the store was doing (`open`, `load session`, `commit turn`, ...).
        operation: &'static str,
        /// The underlying failure.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The request body could not be built from the session and configuration (a tool
    /// with an invalid name, a stored history that breaks the pairing rules, ...).
    #[error("the provider request could not be built")]
    Request(#[from] aptix_request::RequestError),
    /// The `[CONTEXT]` block could not be prepared (the o200k token tables, which ship
    /// inside the binary, failed to load).
    #[error("the context block could not be prepared")]
    Context(#[source] aptix_rag::RagError),
    /// A session list cursor that no page of this store gave
    /// ([`SessionStore::list_sessions`](crate::SessionStore::list_sessions)).
    #[error(
        "{cursor:?} is not a session list cursor: pass the next cursor of the previous page as it came"
    )]
    InvalidCursor {
        /// The cursor as given.
        cursor: String,
    },
    /// The configuration is inconsistent (an unknown default mode, duplicate tools).
    #[error("invalid orchestrator configuration: {0}")]
    Config(String),
    /// Stored state could not be decoded (written by an incompatible version, or corrupt).
    #[error("stored state of session {session_id} could not be read")]
    CorruptState {
        /// The session.
        session_id: String,
        /// The decoding failure.
        #[source]
        source: serde_json::Error,
    },
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl OrchestratorError {
    pub(crate) fn store(
        operation: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> OrchestratorError {
        OrchestratorError::Store {
            operation,
            source: Box::new(source),
        }
    }
}

/// " (pid 1234 on box; its lease expires in 4m 10s)" for a busy session.
fn busy_detail(holder: Option<&str>, expires_in: Option<std::time::Duration>) -> String {
    let expiry = expires_in.map(|wait| {
        format!(
            "its lease expires in {}",
            aptix_client::human_duration(wait)
        )
    });
    match (holder, expiry) {
        (Some(holder), Some(expiry)) => format!(" ({holder}; {expiry})"),
        (Some(holder), None) => format!(" ({holder})"),
        (None, Some(expiry)) => format!(" ({expiry})"),
        (None, None) => String::new(),
    }
}

/// A lost commit race in words: "it was at version 3, now at version 4", "it was new, now
/// at version 1" (what the store found, where it knows).
fn version_change(expected: Option<u64>, found: Option<u64>) -> String {
    let version = |version: Option<u64>| {
        version.map_or_else(
            || "new".to_owned(),
            |version| format!("at version {version}"),
        )
    };
    match found {
        Some(_) if found != expected => {
            format!("it was {}, now {}", version(expected), version(found))
        }
        _ => format!("it was {}", version(expected)),
    }
}

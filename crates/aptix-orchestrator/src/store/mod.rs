//! Where sessions live between turns: the [`SessionStore`] seam, an in-memory store for
//! tests and embedding, the embedded default (one SQLite file), and PostgreSQL for
//! sessions shared by several processes.
//!
//! A turn reads the session once and writes it once: [`SessionStore::commit`] stores the
//! new state *and* the turn's envelope in one transaction, guarded by the version read
//! at the start. The items a compaction replaced (and those it put in their place) are
//! written in the same transaction but kept apart, so what a turn reads and writes
//! stays the size of its context however long the session runs;
//! [`SessionStore::load_full`] reads them back. A crash or a dropped future before the
//! commit leaves the last committed state; a concurrent writer makes the commit fail with
//! [`OrchestratorError::Conflict`] instead of interleaving. Leases keep a second request
//! on the same session from starting at all, so that it gets a clear "busy" answer
//! before any model call.

use std::time::Duration;

use async_trait::async_trait;

use crate::OrchestratorError;
use crate::lease::LeaseInfo;
use crate::session::{SessionState, StoredTurn, TurnKey, Versioned};

mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use aptix_model::redact_url;
pub use memory::{InMemorySessionStore, MemoryStoreLimits};
#[cfg(feature = "postgres")]
pub use postgres::{DEFAULT_POOL_SIZE, PgSessionStore};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSessionStore;

/// A listing cursor of the SQL stores, `<change time>:<session id>` (the first session
/// of the next page), parsed; anything else is a clear error.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn parse_cursor(text: &str) -> Result<(i64, String), OrchestratorError> {
    text.split_once(':')
        .and_then(|(time, id)| Some((time.parse::<i64>().ok()?, id.to_owned())))
        // No session id holds a NUL (and PostgreSQL refuses one in text).
        .filter(|(_, id)| !id.contains('\0'))
        .ok_or_else(|| OrchestratorError::InvalidCursor {
            cursor: text.to_owned(),
        })
}

/// A stored turn from a SQL store's row: its scenario as stored
/// ([`Scenario::as_str`](crate::Scenario::as_str)), its envelope's JSON and its request's
/// digest.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
fn turn_from_row(
    turn_id: String,
    scenario: &str,
    envelope: &str,
    request_digest: Option<String>,
) -> Result<StoredTurn, serde_json::Error> {
    Ok(StoredTurn {
        turn_id,
        scenario: serde_json::from_value(serde_json::Value::String(scenario.to_owned()))?,
        envelope: serde_json::from_str(envelope)?,
        request_digest,
    })
}

/// A store written by a newer build than this one: refused rather than misread.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[derive(Debug, thiserror::Error)]
#[error("the store has schema version {found}; this build understands up to {supported}")]
struct SchemaTooNew {
    found: i64,
    supported: i64,
}

/// Atomic load and save of session and turn state.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// The session and its version, or `None` for an unknown session.
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError>;

    /// The session as [`load`](Self::load) reads it, with the items every compaction
    /// replaced and put in their place
    /// ([`CompactionRecord::replaced`](crate::CompactionRecord::replaced),
    /// [`replacement`](crate::CompactionRecord::replacement)), which `load` leaves out: for showing the whole conversation
    /// ([`SessionState::conversation`]), not for running a turn. The default is `load`,
    /// right for a store that keeps those items in the session; a store that wraps
    /// another must pass this call on.
    async fn load_full(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        self.load(session_id).await
    }

    /// The stored result of a finished turn, if this exact turn was answered before.
    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError>;

    /// Writes `state` and records `turn` in one atomic step, provided the stored version
    /// still equals `expected_version` (`None`: the session must not exist yet), and no
    /// holder other than `holder` (the lease holder the turn ran under, as given to
    /// [`acquire_lease`](Self::acquire_lease)) has an unexpired lease on the session.
    /// Returns the new version.
    ///
    /// The lease check fences off a turn whose process stalled past its lease (a pause,
    /// a frozen VM) while another holder took the session over: without it, the stalled
    /// turn, committing first, would win and the new holder's turn fail as a conflict.
    /// A commit that finds the lease taken fails with
    /// [`OrchestratorError::SessionBusy`] and writes nothing; one that finds another
    /// version fails with [`OrchestratorError::Conflict`].
    ///
    /// Both are given by value: the turn is over and the caller keeps nothing of them,
    /// so a store that holds them in memory takes them without copying the history and
    /// the envelope, and one that encodes them is free to drop them.
    async fn commit(
        &self,
        state: SessionState,
        expected_version: Option<u64>,
        turn: StoredTurn,
        holder: &str,
    ) -> Result<u64, OrchestratorError>;

    /// Takes the session's lease for `holder` unless another holder has one that has not
    /// expired. Returns whether `holder` now holds it.
    async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError>;

    /// Gives the lease back if `holder` holds it.
    async fn release_lease(&self, session_id: &str, holder: &str) -> Result<(), OrchestratorError>;

    /// The session's current lease, if one is held (expired or not), for a "busy"
    /// message that says who holds it and until when. The default knows nothing.
    async fn lease(&self, session_id: &str) -> Result<Option<LeaseInfo>, OrchestratorError> {
        let _ = session_id;
        Ok(None)
    }

    /// The session's stored turns, most recent first, at most `limit`: for showing a
    /// session. An unknown session has none. The default says the store cannot list
    /// them.
    async fn list_turns(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<StoredTurn>, OrchestratorError> {
        let _ = (session_id, limit);
        Err(unsupported("list turns", "list turns"))
    }

    /// One page of the stored sessions, most recent first (by last change; the
    /// in-memory store, whose order is its eviction order, by last use): at most `limit`,
    /// after `cursor` (the [`SessionPage::next_cursor`] of the previous page). The
    /// default says the store cannot list.
    async fn list_sessions(
        &self,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SessionPage, OrchestratorError> {
        let _ = (limit, cursor);
        Err(unsupported("list sessions", "list sessions"))
    }

    /// Deletes a session with its stored turns and lease; returns whether it existed. A
    /// session with a turn running (a live lease) is [`OrchestratorError::SessionBusy`].
    /// The default says the store cannot delete.
    async fn delete_session(&self, session_id: &str) -> Result<bool, OrchestratorError> {
        let _ = session_id;
        Err(unsupported("delete session", "delete sessions"))
    }

    /// Gives the lease to `holder` if `stale_holder` still holds it: for a holder known
    /// to be gone (its process died), whose lease has not expired yet. Returns whether
    /// `holder` now holds it. The default never takes over (the TTL then applies).
    async fn take_over_lease(
        &self,
        session_id: &str,
        stale_holder: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        let _ = (session_id, stale_holder, holder, ttl);
        Ok(false)
    }
}

/// One page of [`SessionStore::list_sessions`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionPage {
    /// The sessions, most recently changed first.
    pub sessions: Vec<SessionSummary>,
    /// The cursor of the next page, when there is one.
    pub next_cursor: Option<String>,
}

/// A stored session in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session id.
    pub session_id: String,
    /// Its version (one more per committed turn).
    pub version: u64,
    /// The agent mode.
    pub mode: String,
    /// When its last turn was committed, in milliseconds since the Unix epoch (by the
    /// store's clock: the database's for PostgreSQL); `None` from a store that does not
    /// say.
    pub updated_at_unix_ms: Option<u64>,
}

/// What a store that cannot do `operation` answers: the session store's error, its source
/// an `Unsupported` I/O error saying what the store cannot do.
fn unsupported(operation: &'static str, what: &str) -> OrchestratorError {
    OrchestratorError::Store {
        operation,
        source: Box::new(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            format!("this session store cannot {what}"),
        )),
    }
}

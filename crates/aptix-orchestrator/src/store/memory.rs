//! An in-memory [`SessionStore`]: for tests, and for embedding where sessions need not
//! outlive the process.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::SessionStore;
use crate::OrchestratorError;
use crate::lease::LeaseInfo;
use crate::session::{Scenario, SessionState, StoredTurn, TurnKey, Versioned};

/// Sessions, turns and leases in process memory.
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<String, (SessionState, u64)>,
    turns: HashMap<(String, String, Scenario), StoredTurn>,
    leases: HashMap<String, (String, Instant)>,
}

impl InMemorySessionStore {
    /// An empty store.
    pub fn new() -> InMemorySessionStore {
        InMemorySessionStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-written session: every
        // critical section below writes with single insertions after all checks.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl SessionStore for InMemorySessionStore {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        Ok(self
            .lock()
            .sessions
            .get(session_id)
            .map(|(state, version)| Versioned {
                value: state.clone(),
                version: *version,
            }))
    }

    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        Ok(self
            .lock()
            .turns
            .get(&(key.session_id.clone(), key.turn_id.clone(), key.scenario))
            .cloned())
    }

    async fn commit(
        &self,
        state: &SessionState,
        expected_version: Option<u64>,
        turn: &StoredTurn,
    ) -> Result<u64, OrchestratorError> {
        let mut inner = self.lock();
        let found = inner
            .sessions
            .get(&state.session_id)
            .map(|(_, version)| *version);
        if found != expected_version {
            return Err(OrchestratorError::Conflict {
                session_id: state.session_id.clone(),
                expected: expected_version,
                found,
            });
        }
        let version = found.map_or(1, |version| version + 1);
        inner
            .sessions
            .insert(state.session_id.clone(), (state.clone(), version));
        inner.turns.insert(
            (
                state.session_id.clone(),
                turn.turn_id.clone(),
                turn.scenario,
            ),
            turn.clone(),
        );
        Ok(version)
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        let mut inner = self.lock();
        let now = Instant::now();
        if let Some((current, expires)) = inner.leases.get(session_id)
            && current != holder
            && *expires > now
        {
            return Ok(false);
        }
        inner
            .leases
            .insert(session_id.to_owned(), (holder.to_owned(), now + ttl));
        Ok(true)
    }

    async fn release_lease(&self, session_id: &str, holder: &str) -> Result<(), OrchestratorError> {
        let mut inner = self.lock();
        if inner
            .leases
            .get(session_id)
            .is_some_and(|(current, _)| current == holder)
        {
            inner.leases.remove(session_id);
        }
        Ok(())
    }

    async fn lease(&self, session_id: &str) -> Result<Option<LeaseInfo>, OrchestratorError> {
        let inner = self.lock();
        let now = Instant::now();
        Ok(inner
            .leases
            .get(session_id)
            .map(|(holder, expires)| LeaseInfo {
                holder: holder.clone(),
                expires_in: expires.saturating_duration_since(now),
            }))
    }

    async fn take_over_lease(
        &self,
        session_id: &str,
        stale_holder: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        let mut inner = self.lock();
        match inner.leases.get_mut(session_id) {
            Some(lease) if lease.0 == stale_holder => {
                *lease = (holder.to_owned(), Instant::now() + ttl);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

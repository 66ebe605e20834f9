//! An in-memory [`SessionStore`]: for tests, and for embedding where sessions need not
//! outlive the process.
//!
//! Bounded, so that a long-running process does not grow without end: at most
//! [`MemoryStoreLimits::max_sessions`] sessions (the least recently used one is
//! evicted, unless a turn holds its lease), sessions idle longer than
//! [`MemoryStoreLimits::idle_ttl`] are forgotten, and each session keeps the envelopes
//! of its last [`MemoryStoreLimits::max_turns_per_session`] turns for idempotent
//! retries. A forgotten session behaves as an unknown one: a user turn starts it again
//! without history, a tool continuation is `UnknownSession`.
//!
//! A session deleted or forgotten and then made again under the same id goes on from
//! its last version (the store remembers the versions of as many gone sessions as it
//! keeps sessions), as the SQLite and PostgreSQL stores do: a turn prepared against the
//! old session cannot commit over the new one by finding its version there again.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::{SessionPage, SessionStore, SessionSummary};
use crate::OrchestratorError;
use crate::lease::LeaseInfo;
use crate::session::{KeptApart, SessionState, StoredTurn, TurnKey, Versioned};

/// How much an [`InMemorySessionStore`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryStoreLimits {
    /// Sessions kept at most; beyond it the least recently used session is evicted.
    /// Default 10,000.
    pub max_sessions: usize,
    /// A session not loaded or committed for this long is forgotten; `None` keeps
    /// sessions until evicted by count. Default one hour.
    pub idle_ttl: Option<Duration>,
    /// Stored turn envelopes kept per session (the most recent ones), which answer a
    /// repeated request without calling the model. Default 16.
    pub max_turns_per_session: usize,
}

impl Default for MemoryStoreLimits {
    fn default() -> MemoryStoreLimits {
        MemoryStoreLimits {
            max_sessions: 10_000,
            idle_ttl: Some(Duration::from_secs(60 * 60)),
            max_turns_per_session: 16,
        }
    }
}

/// Sessions, turns and leases in process memory, bounded by [`MemoryStoreLimits`].
#[derive(Debug, Default)]
pub struct InMemorySessionStore {
    limits: MemoryStoreLimits,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Boxed, so that growing the map moves pointers, not whole sessions: a move of
    /// every session at once held the lock for milliseconds while the store filled up.
    sessions: HashMap<String, Box<Entry>>,
    /// Session ids by last use, least recent first (keys are `Entry::tick`).
    recency: BTreeMap<u64, String>,
    tick: u64,
    leases: HashMap<String, (String, Instant)>,
    /// The last version of sessions deleted or forgotten, and their ids oldest first
    /// (at most `max_sessions` of them).
    gone: HashMap<String, u64>,
    gone_order: VecDeque<String>,
}

#[derive(Debug)]
struct Entry {
    /// Without the items its compactions replaced: those are in `replaced`, so that a
    /// load copies no more than a turn needs.
    state: SessionState,
    /// By the record's index (a session committed as `load_full` read it gives them
    /// again).
    replaced: BTreeMap<usize, KeptApart>,
    version: u64,
    /// The most recent turns, oldest first.
    turns: VecDeque<StoredTurn>,
    tick: u64,
    touched: Instant,
    /// When its last turn was committed, for listings.
    committed: std::time::SystemTime,
}

impl InMemorySessionStore {
    /// An empty store with the default [`MemoryStoreLimits`].
    pub fn new() -> InMemorySessionStore {
        InMemorySessionStore::default()
    }

    /// An empty store with these limits (a `max_sessions` or `max_turns_per_session`
    /// of 0 is read as 1).
    pub fn with_limits(limits: MemoryStoreLimits) -> InMemorySessionStore {
        InMemorySessionStore {
            limits: MemoryStoreLimits {
                max_sessions: limits.max_sessions.max(1),
                max_turns_per_session: limits.max_turns_per_session.max(1),
                ..limits
            },
            inner: Mutex::default(),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> MemoryStoreLimits {
        self.limits
    }

    /// How many sessions are held now.
    pub fn session_count(&self) -> usize {
        self.lock().sessions.len()
    }

    /// A copy of the session, marked as just used; `full` with its compactions' items.
    fn read(&self, session_id: &str, full: bool) -> Option<Versioned<SessionState>> {
        let now = Instant::now();
        self.lock()
            .touch(session_id, &self.limits, now)
            .map(|entry| {
                let mut value = entry.state.clone();
                if full {
                    value.restore_kept_apart(
                        entry
                            .replaced
                            .iter()
                            .map(|(index, items)| (*index, items.clone()))
                            .collect(),
                    );
                }
                Versioned {
                    value,
                    version: entry.version,
                }
            })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-written session: every
        // critical section below writes with single insertions after all checks.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Inner {
    /// The live entry of `session_id`, marked as just used; an expired one is removed.
    fn touch(
        &mut self,
        session_id: &str,
        limits: &MemoryStoreLimits,
        now: Instant,
    ) -> Option<&mut Entry> {
        let expired = {
            let entry = self.sessions.get(session_id)?;
            limits
                .idle_ttl
                .is_some_and(|ttl| now.saturating_duration_since(entry.touched) > ttl)
        };
        if expired {
            self.remove(session_id, limits);
            return None;
        }
        self.tick += 1;
        let tick = self.tick;
        let entry = &mut **self.sessions.get_mut(session_id)?;
        // The id moves to its new place in the order: a turn touches its session several
        // times (load, lease, stored turn, commit), each once a copy of the id.
        let id = self
            .recency
            .remove(&entry.tick)
            .unwrap_or_else(|| session_id.to_owned());
        self.recency.insert(tick, id);
        entry.tick = tick;
        entry.touched = now;
        Some(entry)
    }

    /// Takes the entry out; the caller drops it, after releasing the lock when it can
    /// (freeing a session's history and envelopes is the slow part of eviction).
    fn remove(&mut self, session_id: &str, limits: &MemoryStoreLimits) -> Option<Box<Entry>> {
        let entry = self.sessions.remove(session_id)?;
        self.recency.remove(&entry.tick);
        if self
            .gone
            .insert(session_id.to_owned(), entry.version)
            .is_none()
        {
            self.gone_order.push_back(session_id.to_owned());
        }
        while self.gone_order.len() > limits.max_sessions.max(1) {
            if let Some(oldest) = self.gone_order.pop_front() {
                self.gone.remove(&oldest);
            }
        }
        Some(entry)
    }

    fn leased(&self, session_id: &str, now: Instant) -> bool {
        self.leases
            .get(session_id)
            .is_some_and(|(_, expires)| *expires > now)
    }

    /// Forgets idle sessions, then the least recently used ones beyond the bound, and
    /// returns them to be dropped outside the lock. Sessions with a live lease are
    /// kept: a turn is running on them.
    #[allow(
        clippy::vec_box,
        reason = "the entries are dropped as they were kept, boxed"
    )]
    fn evict(&mut self, limits: &MemoryStoreLimits, now: Instant) -> Vec<Box<Entry>> {
        let mut evicted = Vec::new();
        if let Some(ttl) = limits.idle_ttl {
            let expired: Vec<String> = self
                .recency
                .values()
                .map_while(|id| {
                    let entry = self.sessions.get(id)?;
                    (now.saturating_duration_since(entry.touched) > ttl).then(|| id.clone())
                })
                .filter(|id| !self.leased(id, now))
                .collect();
            evicted.extend(expired.iter().filter_map(|id| self.remove(id, limits)));
        }
        if self.sessions.len() <= limits.max_sessions {
            return evicted;
        }
        let excess = self.sessions.len() - limits.max_sessions;
        let victims: Vec<String> = self
            .recency
            .values()
            .filter(|id| !self.leased(id, now))
            .take(excess)
            .cloned()
            .collect();
        evicted.extend(victims.iter().filter_map(|id| self.remove(id, limits)));
        evicted
    }
}

#[async_trait]
impl SessionStore for InMemorySessionStore {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        Ok(self.read(session_id, false))
    }

    async fn load_full(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        Ok(self.read(session_id, true))
    }

    async fn list_turns(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<StoredTurn>, OrchestratorError> {
        let now = Instant::now();
        Ok(self
            .lock()
            .touch(session_id, &self.limits, now)
            .map(|entry| entry.turns.iter().rev().take(limit).cloned().collect())
            .unwrap_or_default())
    }

    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        let now = Instant::now();
        Ok(self
            .lock()
            .touch(&key.session_id, &self.limits, now)
            .and_then(|entry| {
                entry
                    .turns
                    .iter()
                    .rev()
                    .find(|turn| turn.turn_id == key.turn_id && turn.scenario == key.scenario)
                    .cloned()
            }))
    }

    async fn commit(
        &self,
        state: SessionState,
        expected_version: Option<u64>,
        turn: StoredTurn,
        holder: &str,
    ) -> Result<u64, OrchestratorError> {
        let mut state = state;
        let replaced = state.take_kept_apart();
        let now = Instant::now();
        let mut inner = self.lock();
        if let Some((current, expires)) = inner.leases.get(&state.session_id)
            && current != holder
            && *expires > now
        {
            return Err(OrchestratorError::SessionBusy {
                session_id: state.session_id.clone(),
                holder: Some(current.clone()),
                expires_in: Some(expires.saturating_duration_since(now)),
            });
        }
        let found = inner
            .touch(&state.session_id, &self.limits, now)
            .map(|entry| entry.version);
        if found != expected_version {
            return Err(OrchestratorError::Conflict {
                session_id: state.session_id.clone(),
                expected: expected_version,
                found,
            });
        }
        // A session made again goes on from the version it had when it went.
        let version = match found {
            Some(version) => version + 1,
            None => inner.gone.get(&state.session_id).copied().unwrap_or(0) + 1,
        };
        if let Some(entry) = inner.sessions.get_mut(&state.session_id) {
            // What is replaced is freed after the lock is released.
            let old_state = std::mem::replace(&mut entry.state, state);
            entry.replaced.extend(replaced);
            entry.version = version;
            entry.committed = std::time::SystemTime::now();
            let mut dropped: Vec<StoredTurn> = Vec::new();
            if let Some(at) = entry
                .turns
                .iter()
                .position(|kept| kept.turn_id == turn.turn_id && kept.scenario == turn.scenario)
            {
                dropped.extend(entry.turns.remove(at));
            }
            entry.turns.push_back(turn);
            while entry.turns.len() > self.limits.max_turns_per_session {
                dropped.extend(entry.turns.pop_front());
            }
            drop(inner);
            drop((old_state, dropped));
        } else {
            inner.tick += 1;
            let tick = inner.tick;
            inner.recency.insert(tick, state.session_id.clone());
            inner.sessions.insert(
                state.session_id.clone(),
                Box::new(Entry {
                    state,
                    replaced: replaced.into_iter().collect(),
                    version,
                    turns: VecDeque::from([turn]),
                    tick,
                    touched: now,
                    committed: std::time::SystemTime::now(),
                }),
            );
            let evicted = inner.evict(&self.limits, now);
            drop(inner);
            drop(evicted);
        }
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
            .insert(session_id.to_owned(), (holder.to_owned(), expiry(now, ttl)));
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
                *lease = (holder.to_owned(), expiry(Instant::now(), ttl));
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn list_sessions(
        &self,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SessionPage, OrchestratorError> {
        let inner = self.lock();
        // The cursor is the use tick of the last session listed: the next page holds
        // the sessions used before it.
        let before = match cursor {
            None => u64::MAX,
            Some(text) => text
                .parse::<u64>()
                .map_err(|_| OrchestratorError::InvalidCursor {
                    cursor: text.to_owned(),
                })?,
        };
        let limit = limit.max(1);
        let mut sessions = Vec::new();
        let mut next_cursor = None;
        for (tick, session_id) in inner.recency.range(..before).rev() {
            if sessions.len() == limit {
                next_cursor = sessions
                    .last()
                    .map(|_: &SessionSummary| (tick + 1).to_string());
                break;
            }
            if let Some(entry) = inner.sessions.get(session_id) {
                sessions.push(SessionSummary {
                    session_id: session_id.clone(),
                    version: entry.version,
                    mode: entry.state.mode.clone(),
                    updated_at_unix_ms: entry
                        .committed
                        .duration_since(std::time::UNIX_EPOCH)
                        .ok()
                        .and_then(|since| u64::try_from(since.as_millis()).ok()),
                });
            }
        }
        Ok(SessionPage {
            sessions,
            next_cursor,
        })
    }

    async fn delete_session(&self, session_id: &str) -> Result<bool, OrchestratorError> {
        let mut inner = self.lock();
        if inner.leased(session_id, Instant::now()) {
            return Err(OrchestratorError::SessionBusy {
                session_id: session_id.to_owned(),
                holder: None,
                expires_in: None,
            });
        }
        let removed = inner.remove(session_id, &self.limits);
        inner.leases.remove(session_id);
        drop(inner);
        Ok(removed.is_some())
    }
}

/// When a lease taken at `now` for `ttl` expires: at most
/// [`LONGEST_LEASE`](crate::lease::LONGEST_LEASE) later.
fn expiry(now: Instant, ttl: Duration) -> Instant {
    now.checked_add(ttl.min(crate::lease::LONGEST_LEASE))
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{ModelSettings, Scenario};

    fn state(id: &str) -> SessionState {
        SessionState::new(id, "QA", ModelSettings::default())
    }

    fn turn(turn_id: &str) -> StoredTurn {
        StoredTurn {
            turn_id: turn_id.into(),
            scenario: Scenario::UserTurn,
            envelope: serde_json::from_value(serde_json::json!({
                "sessionId": "s", "turnId": turn_id, "kind": "empty",
                "usage": {"inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
            }))
            .unwrap(),
            request_digest: None,
        }
    }

    fn key(session: &str, turn_id: &str) -> TurnKey {
        TurnKey {
            session_id: session.into(),
            turn_id: turn_id.into(),
            scenario: Scenario::UserTurn,
        }
    }

    #[tokio::test]
    async fn the_least_recently_used_session_is_evicted_beyond_the_bound() {
        let store = InMemorySessionStore::with_limits(MemoryStoreLimits {
            max_sessions: 2,
            ..MemoryStoreLimits::default()
        });
        store
            .commit(state("a"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        store
            .commit(state("b"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        // Using `a` makes `b` the least recently used.
        assert!(store.load("a").await.unwrap().is_some());
        store
            .commit(state("c"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        assert_eq!(store.session_count(), 2);
        assert!(store.load("b").await.unwrap().is_none());
        assert!(store.stored_turn(&key("b", "t1")).await.unwrap().is_none());
        assert!(store.load("a").await.unwrap().is_some());
        assert!(store.load("c").await.unwrap().is_some());
        // Made again, `b` goes on from the version it had.
        assert_eq!(
            store
                .commit(state("b"), None, turn("t2"), "test-holder")
                .await
                .unwrap(),
            2
        );
    }

    #[tokio::test]
    async fn a_lease_for_ever_holds_without_overflowing_the_clock() {
        let store = InMemorySessionStore::new();
        assert!(store.acquire_lease("s", "a", Duration::MAX).await.unwrap());
        assert!(!store.acquire_lease("s", "b", Duration::ZERO).await.unwrap());
        assert!(
            store
                .take_over_lease("s", "a", "b", Duration::MAX)
                .await
                .unwrap()
        );
        let lease = store.lease("s").await.unwrap().unwrap();
        assert_eq!(lease.holder, "b");
        assert!(lease.expires_in > Duration::from_secs(9 * 365 * 24 * 60 * 60));
    }

    #[tokio::test]
    async fn a_leased_session_is_not_evicted() {
        let store = InMemorySessionStore::with_limits(MemoryStoreLimits {
            max_sessions: 1,
            ..MemoryStoreLimits::default()
        });
        store
            .commit(state("a"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        assert!(
            store
                .acquire_lease("a", "me", Duration::from_secs(60))
                .await
                .unwrap()
        );
        store
            .commit(state("b"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        assert!(store.load("a").await.unwrap().is_some(), "a turn runs on a");
        // `b` went over the bound and was the only one that could go.
        assert!(store.load("b").await.unwrap().is_none());
        store.release_lease("a", "me").await.unwrap();
        store
            .commit(state("c"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        assert!(store.load("a").await.unwrap().is_none());
        assert_eq!(store.session_count(), 1);
    }

    #[tokio::test]
    async fn idle_sessions_expire() {
        let store = InMemorySessionStore::with_limits(MemoryStoreLimits {
            idle_ttl: Some(Duration::ZERO),
            ..MemoryStoreLimits::default()
        });
        store
            .commit(state("a"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
        assert!(store.load("a").await.unwrap().is_none());
        assert_eq!(store.session_count(), 0);
        // Committing another session sweeps expired ones too.
        store
            .commit(state("b"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
        store
            .commit(state("c"), None, turn("t1"), "test-holder")
            .await
            .unwrap();
        assert_eq!(store.session_count(), 1);
    }

    #[tokio::test]
    async fn only_the_last_turns_of_a_session_are_kept() {
        let store = InMemorySessionStore::with_limits(MemoryStoreLimits {
            max_turns_per_session: 2,
            ..MemoryStoreLimits::default()
        });
        let mut version = None;
        for t in ["t1", "t2", "t3"] {
            version = Some(
                store
                    .commit(state("a"), version, turn(t), "test-holder")
                    .await
                    .unwrap(),
            );
        }
        assert!(store.stored_turn(&key("a", "t1")).await.unwrap().is_none());
        assert!(store.stored_turn(&key("a", "t2")).await.unwrap().is_some());
        assert!(store.stored_turn(&key("a", "t3")).await.unwrap().is_some());
        assert_eq!(version, Some(3));
    }

    #[test]
    fn defaults_are_bounded() {
        let limits = InMemorySessionStore::new().limits();
        assert_eq!(limits.max_sessions, 10_000);
        assert_eq!(limits.idle_ttl, Some(Duration::from_secs(3600)));
        assert_eq!(limits.max_turns_per_session, 16);
    }
}

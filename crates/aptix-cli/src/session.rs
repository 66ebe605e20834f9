//! Sessions as the command line sees them: where they are kept, the ids it makes, and
//! the configured settings applied to a continued session.
//!
//! Sessions live in `<workspace>/.aptix/sessions.db` (the orchestrator's SQLite store).
//! Every `aptix ask` without `--session` starts a new session with a fresh id and prints
//! it on stderr; `--session ID` continues it (or starts a session of that name). Every
//! invocation is a new turn with a unique id, so a turn is never answered from the
//! store by mistake.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use aptix_orchestrator::{
    InMemorySessionStore, OrchestratorError, SessionState, SessionStore, SqliteSessionStore,
    StoredTurn, TurnKey, Versioned,
};
use async_trait::async_trait;

use crate::config::Settings;

/// The folder under the workspace that Aptix owns.
pub(crate) const APTIX_DIR: &str = ".aptix";

/// The session store's file name inside [`APTIX_DIR`].
pub(crate) const SESSIONS_FILE: &str = "sessions.db";

/// Where the sessions of `workspace` are kept.
pub(crate) fn sessions_path(workspace: &Path) -> PathBuf {
    workspace.join(APTIX_DIR).join(SESSIONS_FILE)
}

/// Opens the workspace's session store, creating `.aptix/` (with a `.gitignore` that
/// keeps its contents out of version control) when missing.
pub(crate) fn open_store(workspace: &Path) -> Result<SqliteSessionStore, anyhow::Error> {
    ensure_aptix_dir(workspace)?;
    let path = sessions_path(workspace);
    SqliteSessionStore::open(&path)
        .with_context(|| format!("could not open the session store {}", path.display()))
}

/// The store for a dry run: the workspace's store when it exists (so that `--session`
/// shows a continuation), else an empty one in memory, so a dry run creates no file.
pub(crate) fn open_store_for_dry_run(
    workspace: &Path,
) -> Result<Arc<dyn SessionStore>, anyhow::Error> {
    let path = sessions_path(workspace);
    if path.is_file() {
        let store = SqliteSessionStore::open(&path)
            .with_context(|| format!("could not open the session store {}", path.display()))?;
        Ok(Arc::new(store))
    } else {
        Ok(Arc::new(InMemorySessionStore::new()))
    }
}

/// Creates `<workspace>/.aptix/` and its `.gitignore` when missing.
pub(crate) fn ensure_aptix_dir(workspace: &Path) -> Result<PathBuf, anyhow::Error> {
    let dir = workspace.join(APTIX_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("could not create {}", dir.display()))?;
    let ignore = dir.join(".gitignore");
    if !ignore.exists() {
        std::fs::write(
            &ignore,
            "# Aptix state (sessions, index): local to this machine.\n*\n",
        )
        .with_context(|| format!("could not write {}", ignore.display()))?;
    }
    Ok(dir)
}

/// Random hex digits: the standard library's per-process random hash keys over the time
/// and the process id, so two invocations in the same nanosecond still differ.
fn random_hex() -> String {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(now().as_nanos());
    hasher.write_u32(std::process::id());
    format!("{:016x}", hasher.finish())
}

fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// A new session id: `s-` and twelve hex digits.
pub(crate) fn new_session_id() -> String {
    format!("s-{}", random_hex().get(..12).unwrap_or_default())
}

/// A new turn id, unique per invocation: `t-`, the time in milliseconds, and eight hex
/// digits.
pub(crate) fn new_turn_id() -> String {
    format!(
        "t-{}-{}",
        now().as_millis(),
        random_hex().get(..8).unwrap_or_default()
    )
}

/// A store that applies the configured mode and model settings to a session as it is
/// loaded, so that `--model` (or a config change) applies to a continued session too;
/// what is not configured keeps the session's stored value. Everything else passes
/// through to the wrapped store.
pub(crate) struct ConfiguredStore {
    inner: Arc<dyn SessionStore>,
    settings: Settings,
}

impl ConfiguredStore {
    /// Wraps `inner`.
    pub(crate) fn new(inner: Arc<dyn SessionStore>, settings: Settings) -> ConfiguredStore {
        ConfiguredStore { inner, settings }
    }
}

#[async_trait]
impl SessionStore for ConfiguredStore {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        let mut loaded = self.inner.load(session_id).await?;
        if let Some(versioned) = &mut loaded {
            if let Some(mode) = &self.settings.configured.mode {
                versioned.value.mode = mode.clone();
            }
            self.settings
                .apply_model_settings(&mut versioned.value.model);
        }
        Ok(loaded)
    }

    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        self.inner.stored_turn(key).await
    }

    async fn commit(
        &self,
        state: &SessionState,
        expected_version: Option<u64>,
        turn: &StoredTurn,
    ) -> Result<u64, OrchestratorError> {
        self.inner.commit(state, expected_version, turn).await
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        self.inner.acquire_lease(session_id, holder, ttl).await
    }

    async fn release_lease(&self, session_id: &str, holder: &str) -> Result<(), OrchestratorError> {
        self.inner.release_lease(session_id, holder).await
    }

    async fn lease(
        &self,
        session_id: &str,
    ) -> Result<Option<aptix_orchestrator::LeaseInfo>, OrchestratorError> {
        self.inner.lease(session_id).await
    }

    async fn take_over_lease(
        &self,
        session_id: &str,
        stale_holder: &str,
        holder: &str,
        ttl: std::time::Duration,
    ) -> Result<bool, OrchestratorError> {
        self.inner
            .take_over_lease(session_id, stale_holder, holder, ttl)
            .await
    }

    async fn list_sessions(
        &self,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<aptix_orchestrator::SessionPage, OrchestratorError> {
        self.inner.list_sessions(limit, cursor).await
    }

    async fn delete_session(&self, session_id: &str) -> Result<bool, OrchestratorError> {
        self.inner.delete_session(session_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_valid_agn034_ids() {
        let sessions: std::collections::HashSet<String> =
            (0..100).map(|_| new_session_id()).collect();
        assert_eq!(sessions.len(), 100);
        let turns: std::collections::HashSet<String> = (0..100).map(|_| new_turn_id()).collect();
        assert_eq!(turns.len(), 100);
        for id in sessions.iter().chain(&turns) {
            assert!(
                aptix_model::contract::SessionId::new(id.clone()).is_ok(),
                "{id}"
            );
        }
    }
}

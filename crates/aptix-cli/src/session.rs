//! Sessions as the command line sees them: where they are kept, the ids it makes, and
//! the configured settings applied to a continued session.
//!
//! Sessions live in `<workspace>/.aptix/sessions.db` (the orchestrator's SQLite store)
//! unless the `store` setting names another SQLite file or a PostgreSQL database
//! (`postgres://…`), which several processes (replicas of `aptix serve`, and `aptix
//! ask`) can share.
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
    StoredTurn, TurnKey, Versioned, redact_url,
};
use async_trait::async_trait;

use crate::config::{Settings, StoreUrl};
use crate::exit::usage;

/// The folder under the workspace that Aptix owns.
pub(crate) const APTIX_DIR: &str = ".aptix";

/// The session store's file name inside [`APTIX_DIR`].
pub(crate) const SESSIONS_FILE: &str = "sessions.db";

/// Where the sessions of `workspace` are kept.
pub(crate) fn sessions_path(workspace: &Path) -> PathBuf {
    workspace.join(APTIX_DIR).join(SESSIONS_FILE)
}

/// Where the configured sessions live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StoreLocation {
    /// A PostgreSQL database (the URL as configured; shown only through
    /// [`redact_url`]).
    Postgres(String),
    /// A SQLite file.
    Sqlite(PathBuf),
}

impl StoreLocation {
    /// The `store` setting read for `workspace`: a `postgres://` or `postgresql://` URL,
    /// a `sqlite:` path, or a plain path (relative to the workspace); unset, the
    /// workspace's `.aptix/sessions.db`.
    pub(crate) fn of(
        workspace: &Path,
        settings: &Settings,
    ) -> Result<StoreLocation, anyhow::Error> {
        let Some(StoreUrl(text)) = &settings.configured.store else {
            return Ok(StoreLocation::Sqlite(sessions_path(workspace)));
        };
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
            return Ok(StoreLocation::Postgres(text.clone()));
        }
        let path = match lower.find("://") {
            _ if lower.starts_with("sqlite://") => &text["sqlite://".len()..],
            _ if lower.starts_with("sqlite:") => &text["sqlite:".len()..],
            Some(end) => {
                return Err(usage(format!(
                    "the session store `{}` has the unsupported scheme `{}`: expected \
                     postgres://user:password@host/db (PostgreSQL) or a SQLite file path",
                    redact_url(text),
                    &text[..end]
                )));
            }
            None => text.as_str(),
        };
        Ok(StoreLocation::Sqlite(workspace.join(path)))
    }

    /// The location as it may be shown: a URL's password hidden.
    pub(crate) fn shown(&self) -> String {
        match self {
            StoreLocation::Postgres(url) => redact_url(url),
            StoreLocation::Sqlite(path) => path.display().to_string(),
        }
    }
}

/// Opens the configured session store: the workspace's SQLite file (creating `.aptix/`,
/// with a `.gitignore` that keeps its contents out of version control, when missing),
/// another SQLite file, or a PostgreSQL database (its schema brought up to date).
pub(crate) async fn open_store(
    workspace: &Path,
    settings: &Settings,
) -> Result<Arc<dyn SessionStore>, anyhow::Error> {
    let location = StoreLocation::of(workspace, settings)?;
    match &location {
        StoreLocation::Postgres(url) => open_postgres(url, &location).await,
        StoreLocation::Sqlite(path) => {
            if *path == sessions_path(workspace) {
                ensure_aptix_dir(workspace)?;
            }
            let store = SqliteSessionStore::open(path).with_context(|| {
                format!("could not open the session store {}", location.shown())
            })?;
            Ok(Arc::new(store))
        }
    }
}

#[cfg(feature = "postgres")]
async fn open_postgres(
    url: &str,
    _location: &StoreLocation,
) -> Result<Arc<dyn SessionStore>, anyhow::Error> {
    // The store's own error names the database (password hidden) and the reason.
    let store =
        aptix_orchestrator::PgSessionStore::connect(url, aptix_orchestrator::DEFAULT_POOL_SIZE)
            .await?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(
    _url: &str,
    location: &StoreLocation,
) -> Result<Arc<dyn SessionStore>, anyhow::Error> {
    Err(usage(format!(
        "the session store {} is a PostgreSQL database, and this aptix was built without \
         PostgreSQL support (the `postgres` cargo feature, on by default)",
        location.shown()
    )))
}

/// The store for a dry run: the configured store when it exists (so that `--session`
/// shows a continuation), else an empty one in memory, so a dry run creates no file.
pub(crate) async fn open_store_for_dry_run(
    workspace: &Path,
    settings: &Settings,
) -> Result<Arc<dyn SessionStore>, anyhow::Error> {
    match StoreLocation::of(workspace, settings)? {
        StoreLocation::Sqlite(path) if !path.is_file() => Ok(Arc::new(InMemorySessionStore::new())),
        _ => open_store(workspace, settings).await,
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

    fn settings_with_store(store: Option<&str>) -> Settings {
        Settings {
            configured: crate::config::Layer {
                store: store.map(|text| StoreUrl(text.to_owned())),
                ..crate::config::Layer::default()
            },
            files: Vec::new(),
        }
    }

    #[test]
    fn the_store_setting_names_postgres_or_a_sqlite_file_and_hides_passwords() {
        let workspace = Path::new("/repo");
        let at = |store| StoreLocation::of(workspace, &settings_with_store(store));
        assert_eq!(
            at(None).unwrap(),
            StoreLocation::Sqlite(PathBuf::from("/repo/.aptix/sessions.db"))
        );
        for url in ["postgres://u:pw@db:5432/aptix", "POSTGRESQL://db/aptix"] {
            assert_eq!(
                at(Some(url)).unwrap(),
                StoreLocation::Postgres(url.to_owned())
            );
        }
        assert_eq!(
            at(Some("postgres://u:hunter2@db/aptix")).unwrap().shown(),
            "postgres://u:***@db/aptix"
        );
        assert_eq!(
            at(Some("sqlite:state/s.db")).unwrap(),
            StoreLocation::Sqlite(PathBuf::from("/repo/state/s.db"))
        );
        assert_eq!(
            at(Some("sqlite:///var/lib/aptix.db")).unwrap(),
            StoreLocation::Sqlite(PathBuf::from("/var/lib/aptix.db"))
        );
        assert_eq!(
            at(Some("/abs/s.db")).unwrap(),
            StoreLocation::Sqlite(PathBuf::from("/abs/s.db"))
        );
        let error = at(Some("mysql://u:hunter2@db/aptix"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("unsupported scheme `mysql`") && !error.contains("hunter2"),
            "{error}"
        );
    }

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

//! The session store the settings name, and the configured settings applied to a
//! continued session.
//!
//! Sessions live in `<workspace>/.aptix/sessions.db` (the orchestrator's SQLite store)
//! unless the `store` setting names another SQLite file or a PostgreSQL database
//! (`postgres://…`), which several processes (replicas of `aptix serve`, and `aptix
//! ask`) can share.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use aptix_orchestrator::{
    LeaseInfo, OrchestratorError, SessionPage, SessionState, SessionStore, StoredTurn, TurnKey,
    Versioned, redact_url,
};
use async_trait::async_trait;

use crate::settings::{Settings, StoreUrl};
use crate::{APTIX_DIR, Error};

/// The session store's file name inside [`APTIX_DIR`].
const SESSIONS_FILE: &str = "sessions.db";

/// Where the sessions of `workspace` are kept by default.
fn sessions_path(workspace: &Path) -> PathBuf {
    workspace.join(APTIX_DIR).join(SESSIONS_FILE)
}

/// Where the configured sessions live.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// A PostgreSQL database (the URL as configured; shown only through
    /// [`StoreLocation::shown`], which hides the password).
    Postgres(String),
    /// A SQLite file.
    Sqlite(PathBuf),
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Postgres(_) => f.debug_tuple("Postgres").field(&self.shown()).finish(),
            StoreLocation::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
        }
    }
}

impl StoreLocation {
    /// The `store` setting read for `workspace`: a `postgres://` or `postgresql://` URL
    /// or a libpq `key=value` connection string, a `sqlite:` path, or a plain path
    /// (relative to the workspace); unset, the workspace's `.aptix/sessions.db`.
    pub(crate) fn of(workspace: &Path, settings: &Settings) -> Result<StoreLocation, Error> {
        let Some(StoreUrl(text)) = &settings.configured().store else {
            return Ok(StoreLocation::Sqlite(sessions_path(workspace)));
        };
        let lower = text.to_ascii_lowercase();
        // Quotes kept as part of the value (`docker --env-file`, systemd's
        // `Environment=`, a shell's nested quoting): read as a path, the URL would
        // become a SQLite file in folders named after it, password and all.
        let unquoted = text.trim_matches(['"', '\'']);
        if unquoted.len() != text.len() {
            return Err(Error::config(format!(
                "the session store `{}` is quoted: the quotes are part of the value (an env \
                 file or a unit file keeps them); remove them",
                redact_url(unquoted)
            )));
        }
        for scheme in ["postgres://", "postgresql://"] {
            if lower.starts_with(scheme) {
                // A scheme is case-insensitive; the PostgreSQL driver reads only the
                // lower-case one.
                return Ok(StoreLocation::Postgres(format!(
                    "{scheme}{}",
                    &text[scheme.len()..]
                )));
            }
        }
        if is_connection_string(&lower) {
            return Ok(StoreLocation::Postgres(text.clone()));
        }
        if lower.starts_with("sqlite://") {
            return sqlite_file(workspace.join(&text["sqlite://".len()..]));
        }
        if lower.starts_with("sqlite:") {
            return sqlite_file(workspace.join(&text["sqlite:".len()..]));
        }
        // Any other `scheme:` is a mistake, not a file name: `postgres:user:pw@db/x`
        // (the `//` forgotten) made a SQLite file in a folder named after the URL,
        // password and all. Only the scheme is shown: the rest may hold a password.
        if let Some(scheme) = url_scheme(&lower) {
            let hint = if matches!(scheme, "postgres" | "postgresql") {
                format!("`{scheme}:` must be followed by `//`: ")
            } else {
                String::new()
            };
            return Err(Error::config(format!(
                "the session store `{}` has the unsupported scheme `{scheme}`: {hint}expected \
                 postgres://user:password@host/db (PostgreSQL) or a SQLite file path (write \
                 ./{scheme}:... for a file whose name has a colon)",
                if lower.contains("://") {
                    redact_url(text)
                } else {
                    format!("{scheme}:...")
                },
            )));
        }
        // A URL whose scheme is misspelt (`postgres//...`, `postgresql:/...`,
        // `http+postgres...`) is not a file name either.
        if lower.contains("://") || lower.starts_with("postgres") {
            return Err(Error::config(format!(
                "the session store `{}` is neither a PostgreSQL URL nor a file path: expected \
                 postgres://user:password@host/db (PostgreSQL) or a SQLite file path",
                redact_url(text)
            )));
        }
        sqlite_file(workspace.join(text))
    }

    /// The location as it may be shown: a URL's password hidden.
    pub fn shown(&self) -> String {
        match self {
            StoreLocation::Postgres(url) => redact_url(url),
            StoreLocation::Sqlite(path) => path.display().to_string(),
        }
    }
}

/// A SQLite store at `path`, unless `path` is a folder (`--store src`, an empty
/// `sqlite:`): a listing would otherwise say "no sessions" and a turn fail to open it.
fn sqlite_file(path: PathBuf) -> Result<StoreLocation, Error> {
    if path.is_dir() {
        return Err(Error::config(format!(
            "the session store {} is a folder: name a SQLite file in it (e.g. {})",
            path.display(),
            path.join("sessions.db").display()
        )));
    }
    Ok(StoreLocation::Sqlite(path))
}

/// The scheme `text` (lower-cased) opens with, as a URL's (`name:`, the name two
/// characters or more, so that a Windows drive letter is a path).
fn url_scheme(text: &str) -> Option<&str> {
    let (scheme, _) = text.split_once(':')?;
    let mut chars = scheme.chars();
    (scheme.len() >= 2
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// Whether `text` (lower-cased) is a libpq `key=value` connection string
/// (`host=db user=aptix dbname=aptix`), which PostgreSQL takes as well as a URL: its
/// first word sets one of libpq's connection keywords. Read as a file path it would
/// make a SQLite file named after it, password and all.
fn is_connection_string(text: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "host",
        "hostaddr",
        "port",
        "dbname",
        "user",
        "password",
        "passfile",
        "connect_timeout",
        "options",
        "application_name",
        "sslmode",
        "target_session_attrs",
        "keepalives",
        "keepalives_idle",
        "channel_binding",
        "load_balance_hosts",
        "keepalives_interval",
        "keepalives_retries",
        "tcp_user_timeout",
        "sslnegotiation",
        "sslcert",
        "sslkey",
        "sslrootcert",
        "sslpassword",
        "sslcrl",
        "requiressl",
        "gssencmode",
        "krbsrvname",
        "service",
        "client_encoding",
        "replication",
        "fallback_application_name",
    ];
    text.trim_start()
        .split_once(|c: char| c == '=' || c.is_whitespace())
        .is_some_and(|(key, _)| KEYWORDS.contains(&key))
        && text
            .trim_start()
            .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
            .trim_start()
            .starts_with('=')
}

/// Whether a store setting names a database on this machine: a SQLite file, or a
/// PostgreSQL server reached over a local socket (no host, or a socket folder) or at
/// `localhost` or a loopback address. What cannot be told is taken as another machine.
pub(crate) fn is_local_database(store: &str) -> bool {
    let store = store.trim();
    let lower = store.to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        // `postgres:///aptix` (no host): libpq's local socket.
        return aptix_model::url_host(store).is_some_and(str::is_empty)
            || aptix_model::is_loopback_url(store);
    }
    if is_connection_string(store) {
        let host = store.split_whitespace().find_map(|pair| {
            let (key, value) = pair.split_once('=')?;
            matches!(key.trim(), "host" | "hostaddr").then(|| value.trim_matches('\''))
        });
        return match host {
            None => true,
            Some(host) => {
                // An IPv6 address is written bare here, bracketed in a URL.
                let url = if host.contains(':') {
                    format!("postgres://[{host}]")
                } else {
                    format!("postgres://{host}")
                };
                host.starts_with('/') || aptix_model::is_loopback_url(&url)
            }
        };
    }
    // A SQLite file.
    true
}

/// Opens the configured session store: the workspace's SQLite file (creating `.aptix/`,
/// with a `.gitignore` that keeps its contents out of version control, when missing),
/// another SQLite file, or a PostgreSQL database (its schema brought up to date).
pub(crate) async fn open(
    workspace: &Path,
    settings: &Settings,
    password: Option<&str>,
) -> Result<Arc<dyn SessionStore>, Error> {
    let location = StoreLocation::of(workspace, settings)?;
    match &location {
        StoreLocation::Postgres(url) => open_postgres(url, &location, password).await,
        StoreLocation::Sqlite(path) => {
            if *path == sessions_path(workspace) {
                ensure_aptix_dir(workspace)?;
            }
            open_sqlite(path, &location)
        }
    }
}

#[cfg(feature = "sqlite")]
fn open_sqlite(path: &Path, location: &StoreLocation) -> Result<Arc<dyn SessionStore>, Error> {
    let store =
        aptix_orchestrator::SqliteSessionStore::open(path).map_err(|source| Error::OpenStore {
            location: location.shown(),
            source: Box::new(source),
        })?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite(_path: &Path, location: &StoreLocation) -> Result<Arc<dyn SessionStore>, Error> {
    Err(Error::config(format!(
        "the session store {} is a SQLite file, and this build has no SQLite support: \
         turn on aptix-runtime's `sqlite` feature (the `aptix` command has it)",
        location.shown()
    )))
}

#[cfg(feature = "postgres")]
async fn open_postgres(
    url: &str,
    _location: &StoreLocation,
    password: Option<&str>,
) -> Result<Arc<dyn SessionStore>, Error> {
    use aptix_orchestrator::{DEFAULT_POOL_SIZE, PgSessionStore};
    // The store's own error names the database (password hidden) and the reason.
    let store = match password {
        Some(password) => {
            PgSessionStore::connect_with_password(url, DEFAULT_POOL_SIZE, password).await
        }
        None => PgSessionStore::connect(url, DEFAULT_POOL_SIZE).await,
    }
    .map_err(|error| Error::Store(Box::new(error)))?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
async fn open_postgres(
    _url: &str,
    location: &StoreLocation,
    _password: Option<&str>,
) -> Result<Arc<dyn SessionStore>, Error> {
    Err(Error::config(format!(
        "the session store {} is a PostgreSQL database, and this build has no PostgreSQL \
         support: turn on aptix-runtime's `postgres` feature (the `aptix` facade's \
         `postgres`; the `aptix` command has it)",
        location.shown()
    )))
}

/// Creates `<workspace>/.aptix/` and its `.gitignore` when missing
/// ([`aptix_index::ensure_aptix_dir`]).
pub(crate) fn ensure_aptix_dir(workspace: &Path) -> Result<PathBuf, Error> {
    aptix_index::ensure_aptix_dir(workspace).map_err(|source| Error::Index {
        action: "create the index and sessions folder (.aptix/) of",
        path: workspace.to_path_buf(),
        source: Box::new(source),
    })
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

    /// A loaded session with the configured mode and model settings applied.
    fn configured(
        &self,
        mut loaded: Option<Versioned<SessionState>>,
    ) -> Option<Versioned<SessionState>> {
        if let Some(versioned) = &mut loaded {
            if let Some(mode) = &self.settings.configured().mode {
                versioned.value.mode = mode.clone();
            }
            self.settings
                .apply_model_settings(&mut versioned.value.model);
        }
        loaded
    }
}

#[async_trait]
impl SessionStore for ConfiguredStore {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        let loaded = self.inner.load(session_id).await?;
        Ok(self.configured(loaded))
    }

    async fn load_full(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        let loaded = self.inner.load_full(session_id).await?;
        Ok(self.configured(loaded))
    }

    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        self.inner.stored_turn(key).await
    }

    async fn list_turns(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<StoredTurn>, OrchestratorError> {
        self.inner.list_turns(session_id, limit).await
    }

    async fn commit(
        &self,
        state: SessionState,
        expected_version: Option<u64>,
        turn: StoredTurn,
        holder: &str,
    ) -> Result<u64, OrchestratorError> {
        self.inner
            .commit(state, expected_version, turn, holder)
            .await
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

    async fn lease(&self, session_id: &str) -> Result<Option<LeaseInfo>, OrchestratorError> {
        self.inner.lease(session_id).await
    }

    async fn take_over_lease(
        &self,
        session_id: &str,
        stale_holder: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        self.inner
            .take_over_lease(session_id, stale_holder, holder, ttl)
            .await
    }

    async fn list_sessions(
        &self,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SessionPage, OrchestratorError> {
        self.inner.list_sessions(limit, cursor).await
    }

    async fn delete_session(&self, session_id: &str) -> Result<bool, OrchestratorError> {
        self.inner.delete_session(session_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::SettingsLayer;
    use aptix_orchestrator::InMemorySessionStore;

    fn settings_with_store(store: Option<&str>) -> Settings {
        Settings::of(SettingsLayer {
            store: store.map(|text| StoreUrl(text.to_owned())),
            ..SettingsLayer::default()
        })
    }

    #[test]
    fn a_database_on_this_machine_is_told_from_one_on_another() {
        for local in [
            "postgres:///aptix",
            "postgres://aptix@localhost/aptix",
            "postgresql://aptix:pw@127.0.0.1:5432/aptix",
            "postgres://[::1]/aptix",
            "host=/var/run/postgresql dbname=aptix",
            "dbname=aptix user=me",
            "host=localhost dbname=aptix",
            "hostaddr=::1 dbname=aptix",
            ".aptix/sessions.db",
        ] {
            assert!(is_local_database(local), "{local}");
        }
        for remote in [
            "postgres://aptix@db.internal/aptix",
            "postgres://aptix@localhost.attacker.example/aptix",
            "POSTGRESQL://u@10.0.0.1/aptix",
            "host=db.example.com dbname=aptix",
            "hostaddr=10.1.2.3 dbname=aptix",
        ] {
            assert!(!is_local_database(remote), "{remote}");
        }
    }

    #[test]
    fn a_folder_is_no_sqlite_store() {
        // `--store src` listed "no sessions" and made a turn fail to open it; an empty
        // `sqlite:` names the workspace itself.
        let workspace =
            std::env::temp_dir().join(format!("aptix-store-dir-{}", std::process::id()));
        std::fs::create_dir_all(workspace.join("src")).unwrap();
        for store in ["src", "sqlite:", "sqlite:src", "./"] {
            let error =
                StoreLocation::of(&workspace, &settings_with_store(Some(store))).unwrap_err();
            assert!(error.is_config(), "{store}");
            assert!(
                error.to_string().contains("is a folder"),
                "{store}: {error}"
            );
        }
        assert!(StoreLocation::of(&workspace, &settings_with_store(Some("src/s.db"))).is_ok());
        std::fs::remove_dir_all(&workspace).unwrap();
    }

    #[test]
    fn the_store_setting_names_postgres_or_a_sqlite_file_and_hides_passwords() {
        let workspace = Path::new("/repo");
        let at = |store| StoreLocation::of(workspace, &settings_with_store(store));
        assert_eq!(
            at(None).unwrap(),
            StoreLocation::Sqlite(PathBuf::from("/repo/.aptix/sessions.db"))
        );
        assert_eq!(
            at(Some("postgres://u:pw@db:5432/aptix")).unwrap(),
            StoreLocation::Postgres("postgres://u:pw@db:5432/aptix".to_owned())
        );
        // The scheme as the driver reads it.
        assert_eq!(
            at(Some("POSTGRESQL://db/aptix")).unwrap(),
            StoreLocation::Postgres("postgresql://db/aptix".to_owned())
        );
        // A URL that lost its `//` is refused, not a SQLite file named after it, and
        // its password is not shown.
        for text in [
            "postgres:aptix:Hunter2@127.0.0.1:5432/aptix",
            "PostgreSQL:aptix:Hunter2@db/aptix",
            "mysql:u:Hunter2@db",
        ] {
            let error = at(Some(text)).unwrap_err();
            assert!(error.is_config(), "{text}");
            let error = error.to_string();
            assert!(
                error.contains("unsupported scheme") && !error.contains("Hunter2"),
                "{error}"
            );
        }
        assert!(
            at(Some("postgres:u:pw@db/x"))
                .unwrap_err()
                .to_string()
                .contains("`postgres:` must be followed by `//`")
        );
        let location = at(Some("postgres://u:hunter2@db/aptix")).unwrap();
        assert_eq!(location.shown(), "postgres://u:***@db/aptix");
        // libpq's key=value form is PostgreSQL too, not a file named after it.
        for text in [
            "host=127.0.0.1 port=5432 user=aptix password=secret dbname=aptix",
            "  dbname = aptix host=db",
            "tcp_user_timeout=10 host=db password=secret",
        ] {
            let location = at(Some(text)).unwrap();
            assert_eq!(location, StoreLocation::Postgres(text.to_owned()));
            assert!(!location.shown().contains("secret"), "{}", location.shown());
        }
        for path in [
            "hostfile.db",
            "host",
            "data/user=me.db",
            "./backup:1.db",
            "C:/state/s.db",
        ] {
            assert!(
                matches!(at(Some(path)).unwrap(), StoreLocation::Sqlite(_)),
                "{path}"
            );
        }
        assert!(!format!("{location:?}").contains("hunter2"));
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
        let error = at(Some("mysql://u:hunter2@db/aptix")).unwrap_err();
        assert!(error.is_config());
        let error = error.to_string();
        assert!(
            error.contains("unsupported scheme `mysql`") && !error.contains("hunter2"),
            "{error}"
        );
        // A URL quoted (an env file keeps the quotes) or with its scheme misspelt is
        // refused, not made a SQLite file in folders named after it, password and all.
        for (text, why) in [
            ("\"postgres://u:hunter2@db/aptix\"", "is quoted"),
            ("'postgres://u:hunter2@db/aptix'", "is quoted"),
            (
                "postgres//u:hunter2@db/aptix",
                "neither a PostgreSQL URL nor a file path",
            ),
            (
                "postgresql//u:hunter2@db/aptix",
                "neither a PostgreSQL URL nor a file path",
            ),
            (
                "db+postgres ://u:hunter2@db/aptix",
                "neither a PostgreSQL URL nor a file path",
            ),
        ] {
            let error = at(Some(text)).unwrap_err();
            assert!(error.is_config(), "{text}");
            let error = error.to_string();
            assert!(
                error.contains(why) && !error.contains("hunter2") && error.contains("u:***@db"),
                "{text}: {error}"
            );
        }
    }

    #[tokio::test]
    async fn a_continued_session_takes_the_configured_mode_and_model_and_keeps_the_rest() {
        let inner: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
        let mut state = SessionState::new(
            "s-1",
            "QA",
            aptix_orchestrator::ModelSettings {
                model: "stored-model".into(),
                temperature: Some(0.7),
                ..aptix_orchestrator::ModelSettings::default()
            },
        );
        state.last_response_id = Some("resp_1".into());
        let turn = StoredTurn {
            turn_id: "t-1".into(),
            scenario: aptix_orchestrator::Scenario::UserTurn,
            envelope: aptix_model::contract::AgentExecuteResponse::new(
                aptix_model::contract::Kind::Ok,
            ),
            request_digest: None,
        };
        inner
            .commit(state.clone(), None, turn.clone(), "test-holder")
            .await
            .unwrap();

        let settings = Settings::of(SettingsLayer {
            mode: Some("CODE_EDIT".into()),
            model: Some("configured-model".into()),
            ..SettingsLayer::default()
        });
        let store = ConfiguredStore::new(inner, settings);
        let loaded = store.load("s-1").await.unwrap().unwrap().value;
        assert_eq!(loaded.mode, "CODE_EDIT");
        assert_eq!(loaded.model.model, "configured-model");
        assert_eq!(loaded.model.temperature, Some(0.7), "not configured: kept");
        assert_eq!(loaded.last_response_id.as_deref(), Some("resp_1"));
    }

    #[tokio::test]
    async fn the_whole_session_is_read_through_the_wrapper_with_the_configured_mode() {
        use aptix_model::wire::{ContentPart, InputItem, InputMessage, Role};
        let inner: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
        let mut state = SessionState::new("s-1", "QA", Default::default());
        let question = InputItem::Message(InputMessage::new(
            Role::User,
            vec![ContentPart::input_text("the first question")],
        ));
        state
            .compactions
            .push(aptix_orchestrator::CompactionRecord {
                turn_id: "t-1".into(),
                at_unix_ms: 1,
                reason: aptix_orchestrator::CompactionReason::Threshold,
                method: aptix_orchestrator::CompactionMethod::Summary,
                tokens_before: 10,
                tokens_after: 1,
                replaced: vec![question.clone()],
                replacement: Vec::new(),
                kept_items: 0,
            });
        let turn = StoredTurn {
            turn_id: "t-1".into(),
            scenario: aptix_orchestrator::Scenario::UserTurn,
            envelope: aptix_model::contract::AgentExecuteResponse::new(
                aptix_model::contract::Kind::Ok,
            ),
            request_digest: None,
        };
        inner
            .commit(state, None, turn, "test-holder")
            .await
            .unwrap();
        let settings = Settings::of(SettingsLayer {
            mode: Some("CODE_EDIT".into()),
            ..SettingsLayer::default()
        });
        let store = ConfiguredStore::new(inner, settings);
        let light = store.load("s-1").await.unwrap().unwrap().value;
        assert!(light.compactions[0].replaced.is_empty());
        let whole = store.load_full("s-1").await.unwrap().unwrap().value;
        assert_eq!(whole.mode, "CODE_EDIT");
        assert_eq!(whole.compactions[0].replaced, vec![question]);
    }
}

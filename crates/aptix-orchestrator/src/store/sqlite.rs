//! The embedded default [`SessionStore`]: one SQLite file (bundled SQLite, WAL).
//!
//! One connection, used from a blocking thread: SQLite serialises writers anyway, and a
//! single connection keeps the transaction logic obvious. Every turn's state change is
//! one `BEGIN IMMEDIATE` transaction that checks the session's version, writes the new
//! state and records the turn's envelope, so a crash mid-turn leaves the last committed
//! state and the file always opens.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::{SchemaTooNew, SessionPage, SessionStore, SessionSummary, parse_cursor, turn_from_row};
use crate::OrchestratorError;
use crate::lease::LeaseInfo;
use crate::session::{KeptApartItems, SessionState, StoredTurn, TurnKey, Versioned};

/// The schema version this code writes; a file with a newer one is refused rather than
/// misread. 2 added `compactions`; a session stored by version 1 keeps its compactions'
/// items in its state until its next commit moves them there. 3 added
/// `deleted_sessions`: the last version of each deleted session, which a session made
/// again under its id goes on from, so that a process stalled past its lease cannot
/// commit over the new session by finding the version it expects there again. 4 added
/// `turns.request_digest` ([`StoredTurn::request_digest`]); a turn stored before has
/// none.
const SCHEMA_VERSION: i64 = 4;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS sessions (
    session_id    TEXT PRIMARY KEY,
    version       INTEGER NOT NULL,
    state         TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS turns (
    session_id    TEXT NOT NULL,
    turn_id       TEXT NOT NULL,
    scenario      TEXT NOT NULL,
    envelope      TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    PRIMARY KEY (session_id, turn_id, scenario)
);
CREATE TABLE IF NOT EXISTS leases (
    session_id    TEXT PRIMARY KEY,
    holder        TEXT NOT NULL,
    expires_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS compactions (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    items      TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS deleted_sessions (
    session_id TEXT PRIMARY KEY,
    version    INTEGER NOT NULL
);
";

/// Sessions in one SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteSessionStore {
    connection: Arc<Mutex<Connection>>,
    path: PathBuf,
}

impl SqliteSessionStore {
    /// Opens (creating when missing) the store at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteSessionStore, OrchestratorError> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .map_err(|error| OrchestratorError::store("create the store folder", error))?;
        }
        let mut connection =
            Connection::open(&path).map_err(|error| OrchestratorError::store("open", error))?;
        // WAL lets readers proceed during a commit; NORMAL sync is durable at checkpoint
        // and never corrupts; the busy timeout covers a second process briefly writing.
        connection
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;",
            )
            .map_err(|error| OrchestratorError::store("configure", error))?;
        // One transaction, taken for writing before the version is read: two processes
        // opening an older file at once upgrade it once.
        Self::upgrade(&mut connection)?;
        Ok(SqliteSessionStore {
            connection: Arc::new(Mutex::new(connection)),
            path,
        })
    }

    /// Brings the file's schema to [`SCHEMA_VERSION`], or refuses a newer one.
    fn upgrade(connection: &mut Connection) -> Result<(), OrchestratorError> {
        let version = |connection: &Connection| -> Result<i64, OrchestratorError> {
            let found: i64 = connection
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .map_err(|error| OrchestratorError::store("read the schema version", error))?;
            if found > SCHEMA_VERSION {
                return Err(OrchestratorError::store(
                    "open",
                    SchemaTooNew {
                        found,
                        supported: SCHEMA_VERSION,
                    },
                ));
            }
            Ok(found)
        };
        // A file at this version is opened without taking the write lock.
        if version(connection)? == SCHEMA_VERSION {
            return Ok(());
        }
        // Read again under the write lock: of processes opening an older file at once,
        // one upgrades it and the others find it done.
        let fail = |error| OrchestratorError::store("upgrade the schema", error);
        let transaction = connection
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        let found = version(&transaction)?;
        if found == SCHEMA_VERSION {
            return Ok(());
        }
        // Tables of every version (each `IF NOT EXISTS`), then each step past `found`.
        transaction.execute_batch(SCHEMA).map_err(fail)?;
        if found < 4 {
            transaction
                .execute_batch("ALTER TABLE turns ADD COLUMN request_digest TEXT")
                .map_err(fail)?;
        }
        transaction
            .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .and_then(|()| transaction.commit())
            .map_err(fail)
    }

    /// The file this store writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` with the connection on a blocking thread.
    async fn with_connection<T, F>(
        &self,
        operation: &'static str,
        work: F,
    ) -> Result<T, OrchestratorError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, OrchestratorError> + Send + 'static,
    {
        let connection = Arc::clone(&self.connection);
        tokio::task::spawn_blocking(move || {
            let mut guard = connection
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            work(&mut guard)
        })
        .await
        .map_err(|error| OrchestratorError::store(operation, error))?
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

fn to_version(raw: i64) -> u64 {
    u64::try_from(raw).unwrap_or(0)
}

/// The session's state as a turn reads it.
fn load_state(
    connection: &Connection,
    session_id: &str,
) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
    let row: Option<(String, i64)> = connection
        .query_row(
            "SELECT state, version FROM sessions WHERE session_id = ?1",
            params![session_id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()
        .map_err(|error| OrchestratorError::store("load session", error))?;
    row.map(|(state, version)| {
        serde_json::from_str(&state)
            .map(|value| Versioned {
                value,
                version: to_version(version),
            })
            .map_err(|source| OrchestratorError::CorruptState {
                session_id: session_id.to_owned(),
                source,
            })
    })
    .transpose()
}

#[async_trait]
impl SessionStore for SqliteSessionStore {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        let session_id = session_id.to_owned();
        self.with_connection("load session", move |connection| {
            load_state(connection, &session_id)
        })
        .await
    }

    async fn load_full(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        let session_id = session_id.to_owned();
        self.with_connection("load session", move |connection| {
            let fail = |error| OrchestratorError::store("load session", error);
            // One transaction, so that the state and its replaced items are of one commit.
            let transaction = connection.transaction().map_err(fail)?;
            let Some(mut loaded) = load_state(&transaction, &session_id)? else {
                return Ok(None);
            };
            let mut statement = transaction
                .prepare("SELECT seq, items FROM compactions WHERE session_id = ?1")
                .map_err(fail)?;
            let rows = statement
                .query_map(params![session_id], |row| {
                    Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
                })
                .map_err(fail)?;
            let mut kept = KeptApartItems::new();
            for row in rows {
                let (seq, text) = row.map_err(fail)?;
                let items = serde_json::from_str(&text).map_err(|source| {
                    OrchestratorError::CorruptState {
                        session_id: session_id.clone(),
                        source,
                    }
                })?;
                kept.extend(usize::try_from(seq).ok().map(|index| (index, items)));
            }
            loaded.value.restore_kept_apart(kept);
            Ok(Some(loaded))
        })
        .await
    }

    async fn list_turns(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<StoredTurn>, OrchestratorError> {
        let session_id = session_id.to_owned();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_connection("list turns", move |connection| {
            let fail = |error| OrchestratorError::store("list turns", error);
            let mut statement = connection
                .prepare(
                    "SELECT turn_id, scenario, envelope, request_digest FROM turns WHERE session_id = ?1
                     ORDER BY created_at_ms DESC, rowid DESC LIMIT ?2",
                )
                .map_err(fail)?;
            let rows = statement
                .query_map(params![session_id, limit], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, Option<String>>(3)?,
                    ))
                })
                .map_err(fail)?;
            let mut turns = Vec::new();
            for row in rows {
                let (turn_id, scenario, envelope, digest) = row.map_err(fail)?;
                turns.push(
                    turn_from_row(turn_id, &scenario, &envelope, digest).map_err(|source| {
                        OrchestratorError::CorruptState {
                            session_id: session_id.clone(),
                            source,
                        }
                    })?,
                );
            }
            Ok(turns)
        })
        .await
    }

    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        let key = key.clone();
        self.with_connection("load turn", move |connection| {
            let row: Option<(String, Option<String>)> = connection
                .query_row(
                    "SELECT envelope, request_digest FROM turns
                     WHERE session_id = ?1 AND turn_id = ?2 AND scenario = ?3",
                    params![key.session_id, key.turn_id, key.scenario.as_str()],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(|error| OrchestratorError::store("load turn", error))?;
            row.map(|(text, request_digest)| {
                serde_json::from_str(&text)
                    .map(|envelope| StoredTurn {
                        turn_id: key.turn_id.clone(),
                        scenario: key.scenario,
                        envelope,
                        request_digest,
                    })
                    .map_err(|source| OrchestratorError::CorruptState {
                        session_id: key.session_id.clone(),
                        source,
                    })
            })
            .transpose()
        })
        .await
    }

    async fn commit(
        &self,
        state: SessionState,
        expected_version: Option<u64>,
        turn: StoredTurn,
        holder: &str,
    ) -> Result<u64, OrchestratorError> {
        // Serialise before touching the database, so an encoding failure changes nothing.
        let mut state = state;
        let session_id = state.session_id.clone();
        let holder = holder.to_owned();
        let encoding_failed = |source| OrchestratorError::CorruptState {
            session_id: session_id.clone(),
            source,
        };
        let replaced = state
            .take_kept_apart()
            .into_iter()
            .map(|(index, items)| {
                let seq = i64::try_from(index).unwrap_or(i64::MAX);
                serde_json::to_string(&items).map(|json| (seq, json))
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(encoding_failed)?;
        let state_json = serde_json::to_string(&state).map_err(encoding_failed)?;
        let envelope_json = serde_json::to_string(&turn.envelope).map_err(encoding_failed)?;
        let turn_id = turn.turn_id.clone();
        let request_digest = turn.request_digest;
        let scenario = turn.scenario.as_str();
        self.with_connection("commit turn", move |connection| {
            let fail = |error| OrchestratorError::store("commit turn", error);
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(fail)?;
            // Another holder's lease, unexpired: this turn's process stalled past its own
            // and the session was taken over.
            let now = now_ms();
            let taken: Option<(String, i64)> = transaction
                .query_row(
                    "SELECT holder, expires_at_ms FROM leases
                     WHERE session_id = ?1 AND holder <> ?2 AND expires_at_ms > ?3",
                    params![session_id, holder, now],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )
                .optional()
                .map_err(fail)?;
            if let Some((current, expires_at_ms)) = taken {
                return Err(OrchestratorError::SessionBusy {
                    session_id,
                    holder: Some(current),
                    expires_in: Some(Duration::from_millis(
                        u64::try_from(expires_at_ms.saturating_sub(now)).unwrap_or(0),
                    )),
                });
            }
            let found: Option<i64> = transaction
                .query_row(
                    "SELECT version FROM sessions WHERE session_id = ?1",
                    params![session_id],
                    |row| row.get(0),
                )
                .optional()
                .map_err(fail)?;
            let found = found.map(to_version);
            if found != expected_version {
                // Dropping the transaction rolls it back.
                return Err(OrchestratorError::Conflict {
                    session_id,
                    expected: expected_version,
                    found,
                });
            }
            let version = match found {
                Some(version) => version + 1,
                // A session made again under a deleted one's id goes on from its version.
                None => {
                    let deleted: Option<i64> = transaction
                        .query_row(
                            "SELECT version FROM deleted_sessions WHERE session_id = ?1",
                            params![session_id],
                            |row| row.get(0),
                        )
                        .optional()
                        .map_err(fail)?;
                    deleted.map_or(0, to_version) + 1
                }
            };
            transaction
                .execute(
                    "INSERT INTO sessions (session_id, version, state, updated_at_ms) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (session_id) DO UPDATE SET version = excluded.version,
                         state = excluded.state, updated_at_ms = excluded.updated_at_ms",
                    params![session_id, i64::try_from(version).unwrap_or(i64::MAX), state_json, now],
                )
                .map_err(fail)?;
            transaction
                .execute(
                    "INSERT INTO turns (session_id, turn_id, scenario, envelope, created_at_ms, request_digest)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                     ON CONFLICT (session_id, turn_id, scenario) DO UPDATE SET envelope = excluded.envelope,
                         request_digest = excluded.request_digest",
                    params![session_id, turn_id, scenario, envelope_json, now, request_digest],
                )
                .map_err(fail)?;
            for (seq, json) in replaced {
                transaction
                    .execute(
                        "INSERT INTO compactions (session_id, seq, items) VALUES (?1, ?2, ?3)
                         ON CONFLICT (session_id, seq) DO UPDATE SET items = excluded.items",
                        params![session_id, seq, json],
                    )
                    .map_err(fail)?;
            }
            transaction.commit().map_err(fail)?;
            Ok(version)
        })
        .await
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        let session_id = session_id.to_owned();
        let holder = holder.to_owned();
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self.with_connection("take lease", move |connection| {
            let now = now_ms();
            // Insert, or take over a lease that expired or that this holder already has.
            let changed = connection
                .execute(
                    "INSERT INTO leases (session_id, holder, expires_at_ms) VALUES (?1, ?2, ?3)
                     ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder,
                         expires_at_ms = excluded.expires_at_ms
                     WHERE leases.expires_at_ms <= ?4 OR leases.holder = excluded.holder",
                    params![session_id, holder, now.saturating_add(ttl_ms), now],
                )
                .map_err(|error| OrchestratorError::store("take lease", error))?;
            Ok(changed == 1)
        })
        .await
    }

    async fn release_lease(&self, session_id: &str, holder: &str) -> Result<(), OrchestratorError> {
        let session_id = session_id.to_owned();
        let holder = holder.to_owned();
        self.with_connection("release lease", move |connection| {
            connection
                .execute(
                    "DELETE FROM leases WHERE session_id = ?1 AND holder = ?2",
                    params![session_id, holder],
                )
                .map_err(|error| OrchestratorError::store("release lease", error))?;
            Ok(())
        })
        .await
    }

    async fn lease(&self, session_id: &str) -> Result<Option<LeaseInfo>, OrchestratorError> {
        let session_id = session_id.to_owned();
        self.with_connection("read lease", move |connection| {
            let row = connection
                .query_row(
                    "SELECT holder, expires_at_ms FROM leases WHERE session_id = ?1",
                    params![session_id],
                    |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
                )
                .optional()
                .map_err(|error| OrchestratorError::store("read lease", error))?;
            Ok(row.map(|(holder, expires_at_ms)| LeaseInfo {
                holder,
                expires_in: Duration::from_millis(
                    u64::try_from(expires_at_ms.saturating_sub(now_ms())).unwrap_or(0),
                ),
            }))
        })
        .await
    }

    async fn take_over_lease(
        &self,
        session_id: &str,
        stale_holder: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        let session_id = session_id.to_owned();
        let stale_holder = stale_holder.to_owned();
        let holder = holder.to_owned();
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self.with_connection("take over lease", move |connection| {
            let changed = connection
                .execute(
                    "UPDATE leases SET holder = ?3, expires_at_ms = ?4
                     WHERE session_id = ?1 AND holder = ?2",
                    params![
                        session_id,
                        stale_holder,
                        holder,
                        now_ms().saturating_add(ttl_ms)
                    ],
                )
                .map_err(|error| OrchestratorError::store("take over lease", error))?;
            Ok(changed == 1)
        })
        .await
    }

    async fn list_sessions(
        &self,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SessionPage, OrchestratorError> {
        // The cursor is `<updated_at_ms>:<session_id>` of the first session of the next
        // page; the order is the same pair, newest first.
        let after = cursor.map(parse_cursor).transpose()?;
        let limit = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
        self.with_connection("list sessions", move |connection| {
            let (ms, id) = after.unwrap_or((i64::MAX, String::new()));
            let unbounded = cursor_is_none(&id, ms);
            let mut statement = connection
                .prepare(
                    "SELECT session_id, version, state, updated_at_ms FROM sessions
                     WHERE ?1 OR updated_at_ms < ?2 OR (updated_at_ms = ?2 AND session_id <= ?3)
                     ORDER BY updated_at_ms DESC, session_id DESC LIMIT ?4",
                )
                .map_err(|error| OrchestratorError::store("list sessions", error))?;
            let rows = statement
                .query_map(params![unbounded, ms, id, limit.saturating_add(1)], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, i64>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, i64>(3)?,
                    ))
                })
                .map_err(|error| OrchestratorError::store("list sessions", error))?;
            let mut page = SessionPage::default();
            for row in rows {
                let (session_id, version, state, updated) =
                    row.map_err(|error| OrchestratorError::store("list sessions", error))?;
                if i64::try_from(page.sessions.len()).unwrap_or(i64::MAX) == limit {
                    page.next_cursor = Some(format!("{updated}:{session_id}"));
                    break;
                }
                let mode = serde_json::from_str::<SessionState>(&state)
                    .map(|state| state.mode)
                    .unwrap_or_default();
                page.sessions.push(SessionSummary {
                    session_id,
                    version: to_version(version),
                    mode,
                    updated_at_unix_ms: u64::try_from(updated).ok(),
                });
            }
            Ok(page)
        })
        .await
    }

    async fn delete_session(&self, session_id: &str) -> Result<bool, OrchestratorError> {
        let session_id = session_id.to_owned();
        self.with_connection("delete session", move |connection| {
            let transaction = connection
                .transaction()
                .map_err(|error| OrchestratorError::store("delete session", error))?;
            let leased: bool = transaction
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM leases WHERE session_id = ?1 AND expires_at_ms > ?2)",
                    params![session_id, now_ms()],
                    |row| row.get(0),
                )
                .map_err(|error| OrchestratorError::store("delete session", error))?;
            if leased {
                return Err(OrchestratorError::SessionBusy {
                    session_id,
                    holder: None,
                    expires_in: None,
                });
            }
            // Its version is kept, for a session made again under this id to go on from.
            transaction
                .execute(
                    "INSERT INTO deleted_sessions (session_id, version)
                     SELECT session_id, version FROM sessions WHERE session_id = ?1
                     ON CONFLICT (session_id) DO UPDATE SET version = excluded.version",
                    params![session_id],
                )
                .map_err(|error| OrchestratorError::store("delete session", error))?;
            let deleted = transaction
                .execute("DELETE FROM sessions WHERE session_id = ?1", params![session_id])
                .map_err(|error| OrchestratorError::store("delete session", error))?;
            for table in [
                "DELETE FROM turns WHERE session_id = ?1",
                "DELETE FROM leases WHERE session_id = ?1",
                "DELETE FROM compactions WHERE session_id = ?1",
            ] {
                transaction
                    .execute(table, params![session_id])
                    .map_err(|error| OrchestratorError::store("delete session", error))?;
            }
            transaction
                .commit()
                .map_err(|error| OrchestratorError::store("delete session", error))?;
            Ok(deleted == 1)
        })
        .await
    }
}

/// Whether a listing starts at the newest session (no cursor).
fn cursor_is_none(id: &str, ms: i64) -> bool {
    id.is_empty() && ms == i64::MAX
}

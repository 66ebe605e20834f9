//! Sessions in PostgreSQL, shared by every process that connects to the same database:
//! several replicas of `aptix serve` behind a load balancer, or a service and the
//! `aptix` command on one machine.
//!
//! The rules are the SQLite store's, but the database enforces them, not process
//! memory:
//!
//! - **Leases** are rows whose expiry is computed with the database's clock, taken with
//!   one `INSERT … ON CONFLICT … DO UPDATE … WHERE expired or mine`: two replicas asking
//!   at once get one winner, and a crashed holder's lease expires on its own.
//! - **Commits** are one transaction: the session row is updated only if its version is
//!   still the one the turn read (`UPDATE … WHERE version = $expected`, or an `INSERT …
//!   ON CONFLICT DO NOTHING` for a new session), and the turn's envelope is recorded
//!   under its primary key (session, turn, scenario), so a retried turn finds it.
//! - **Schema** changes are numbered migrations, embedded here and applied at connect
//!   under an advisory lock (replicas starting together apply them once); a database
//!   whose schema is newer than this build is refused instead of misread.
//!
//! State and envelopes are stored as `json` (the text as written, queryable with `->>`);
//! tables are prefixed `aptix_` so they can share a database with other applications.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;
use tokio_postgres::error::SqlState;

use super::{
    SchemaTooNew, SessionPage, SessionStore, SessionSummary, parse_cursor, redact_url,
    turn_from_row,
};
use crate::OrchestratorError;
use crate::lease::LeaseInfo;
use crate::session::{KeptApartItems, SessionState, StoredTurn, TurnKey, Versioned};

/// The migrations, in order: migration `n` (1-based) brings the schema to version `n`.
/// Append only; never edit one that has shipped.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE aptix_sessions (
    session_id TEXT PRIMARY KEY,
    version    BIGINT NOT NULL,
    state      JSON NOT NULL,
    updated_us BIGINT NOT NULL
);
CREATE INDEX aptix_sessions_recent ON aptix_sessions (updated_us DESC, session_id DESC);
CREATE TABLE aptix_turns (
    session_id TEXT NOT NULL,
    turn_id    TEXT NOT NULL,
    scenario   TEXT NOT NULL CHECK (scenario IN ('user_turn', 'tool_continuation')),
    envelope   JSON NOT NULL,
    created_us BIGINT NOT NULL,
    PRIMARY KEY (session_id, turn_id, scenario)
);
CREATE TABLE aptix_leases (
    session_id TEXT PRIMARY KEY,
    holder     TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
",
    "
CREATE TABLE aptix_compactions (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    items      JSON NOT NULL,
    PRIMARY KEY (session_id, seq)
);
",
    // The last version of each deleted session: a session made again under the same id
    // goes on from it, so a turn prepared against the deleted one (on a replica that
    // stalled past its lease) cannot commit over the new one by finding the version it
    // expects there again.
    //
    // A session's mode in a column of its own, for listing: `state->>'mode'` parses the
    // whole state, and fails on a state holding a NUL anywhere (`\u0000` in an
    // instruction or an answer cannot be made text), which took every page of the list
    // down with it. A row whose state holds one gets its mode at its next commit.
    "
CREATE TABLE aptix_deleted_sessions (
    session_id TEXT PRIMARY KEY,
    version    BIGINT NOT NULL
);
ALTER TABLE aptix_sessions ADD COLUMN mode TEXT;
UPDATE aptix_sessions SET mode = state->>'mode' WHERE strpos(state::TEXT, '\\u0000') = 0;
",
    // What the request that ran a turn asked, as a digest (`StoredTurn::request_digest`),
    // to tell a retry from a new request that reused the turn id. Turns stored before
    // have none.
    "
ALTER TABLE aptix_turns ADD COLUMN request_digest TEXT;
",
];

/// The key of the advisory lock that serialises migrations ("aptix" in ASCII).
const MIGRATION_LOCK: i64 = 0x61_70_74_69_78;

/// How long a process waits for another one migrating the schema (its migration may
/// rewrite a large table) before it gives up, saying who to look for.
const MIGRATION_LOCK_WAIT: Duration = Duration::from_secs(120);

/// How long a migration's statement waits for a lock on the tables (a long transaction
/// of another client holding one): while it waits, every query of the other replicas
/// on that table queues behind it.
const MIGRATION_TABLE_LOCK_TIMEOUT: &str = "10s";

/// Another process held the migration lock for all of the wait.
#[derive(Debug, thiserror::Error)]
#[error(
    "another process has held the migration lock for {}: a replica migrating a large \
     table, or one stuck mid-migration (a session holding PostgreSQL advisory lock \
     {MIGRATION_LOCK}: see pg_locks where locktype = 'advisory'); start again once it \
     is done",
    aptix_client::human_duration(*waited)
)]
struct MigrationLockHeld {
    waited: Duration,
}

/// The database clock in microseconds since the epoch: every replica orders and expires
/// by the same clock.
macro_rules! now_us {
    () => {
        "(extract(epoch FROM clock_timestamp()) * 1000000)::BIGINT"
    };
}

/// The turn record of a commit, written only if the session row was (`written`).
macro_rules! record_turn {
    () => {
        concat!(
            "INSERT INTO aptix_turns (session_id, turn_id, scenario, envelope, request_digest, created_us)
             SELECT $1, $4::TEXT, $5::TEXT, $6::TEXT::JSON, $9::TEXT, ",
            now_us!(),
            " FROM written
             ON CONFLICT (session_id, turn_id, scenario) DO UPDATE SET envelope = excluded.envelope,
                 request_digest = excluded.request_digest"
        )
    };
}

/// No holder but the committing one (`$10`) has an unexpired lease on the session: a
/// turn whose replica stalled past its lease, and was taken over, writes nothing.
macro_rules! not_taken {
    () => {
        "NOT EXISTS (SELECT 1 FROM aptix_leases WHERE session_id = $1 AND holder <> $10::TEXT
             AND expires_at > clock_timestamp())"
    };
}

/// Keeps the items of the commit's compactions apart, only if the session row was
/// written: `$7` is a JSON array of `{"seq", "items"}` (empty for most turns).
macro_rules! log_compactions {
    () => {
        "INSERT INTO aptix_compactions (session_id, seq, items)
         SELECT $1, entry.seq, entry.items
         FROM written, json_to_recordset($7::TEXT::JSON) AS entry(seq INTEGER, items JSON)
         ON CONFLICT (session_id, seq) DO UPDATE SET items = excluded.items"
    };
}

/// Records the turn of a session's first commit: `$1` session, `$2` state, `$3` unused
/// (the expected version of [`COMMIT_NEXT`]), `$4` turn, `$5` scenario, `$6` envelope,
/// `$7` replaced items, `$8` the state's mode, `$9` the request's digest, `$10` the
/// lease holder the turn ran under. Returns the new version, or no row when the session
/// exists already or another holder has its lease.
const COMMIT_NEW: &str = concat!(
    "WITH written AS (
         INSERT INTO aptix_sessions (session_id, version, state, mode, updated_us)
         SELECT $1,
             COALESCE((SELECT version FROM aptix_deleted_sessions WHERE session_id = $1), 0) + 1,
             $2::TEXT::JSON, $8, ",
    now_us!(),
    " WHERE $3::BIGINT = 0 AND ",
    not_taken!(),
    "
         ON CONFLICT (session_id) DO NOTHING
         RETURNING version
     ), recorded AS (",
    record_turn!(),
    "), logged AS (",
    log_compactions!(),
    ") SELECT version FROM written"
);

/// Commits from version `$3`; the parameters are [`COMMIT_NEW`]'s. Returns the new
/// version, or no row when the session is not at version `$3` or another holder has its
/// lease.
const COMMIT_NEXT: &str = concat!(
    "WITH written AS (
         UPDATE aptix_sessions SET version = version + 1, state = $2::TEXT::JSON, mode = $8,
             updated_us = ",
    now_us!(),
    " WHERE session_id = $1 AND version = $3::BIGINT AND ",
    not_taken!(),
    "
         RETURNING version
     ), recorded AS (",
    record_turn!(),
    "), logged AS (",
    log_compactions!(),
    ") SELECT version FROM written"
);

const SELECT_VERSION: &str = "SELECT version FROM aptix_sessions WHERE session_id = $1";

/// Connections a store opens at most, unless told otherwise.
pub const DEFAULT_POOL_SIZE: usize = 16;

/// How long one store operation may take before it fails as the store not answering: a
/// healthy one takes milliseconds, and a database that stopped answering (frozen, or cut
/// off by the network while its kernel still answers TCP) would otherwise hold the turn,
/// its session and `/readyz` until it came back.
const OPERATION_DEADLINE: Duration = Duration::from_secs(10);

/// Sessions in a PostgreSQL database.
///
/// Every operation has a deadline of 10 s: past it, it fails as the store not
/// answering, as a connection refused does (a healthy one takes milliseconds; a
/// database that stopped answering would otherwise hold the turn, its session and
/// `/readyz` until it came back). `Debug` shows where it connects
/// without the password.
#[derive(Clone)]
pub struct PgSessionStore {
    inner: PgStore,
}

/// The store's operations, without their deadline.
#[derive(Clone)]
struct PgStore {
    pool: Pool,
    target: String,
}

impl fmt::Debug for PgSessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgSessionStore")
            .field("target", &self.inner.target)
            .finish_non_exhaustive()
    }
}

impl PgSessionStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`, or
    /// libpq's `host=… dbname=…` form) with a pool of at most `pool_size` connections,
    /// and brings its schema up to date. Fails if the database cannot be reached or its
    /// schema is newer than this build understands.
    ///
    /// TLS is not built in: connect over a Unix socket, a private network, or a
    /// TLS-terminating proxy; a URL that requires TLS (`sslmode=require`) is refused
    /// with an error that says so.
    pub async fn connect(url: &str, pool_size: usize) -> Result<PgSessionStore, OrchestratorError> {
        Ok(PgSessionStore {
            inner: PgStore::connect(url, pool_size, None, MIGRATION_LOCK_WAIT).await?,
        })
    }

    /// [`connect`](Self::connect), with the password given apart from the URL (which
    /// then names none): kept out of a command line, where `ps` shows it, and out of
    /// config files. A password in the URL wins.
    pub async fn connect_with_password(
        url: &str,
        pool_size: usize,
        password: &str,
    ) -> Result<PgSessionStore, OrchestratorError> {
        Ok(PgSessionStore {
            inner: PgStore::connect(url, pool_size, Some(password), MIGRATION_LOCK_WAIT).await?,
        })
    }

    /// Where this store connects, with the password replaced by `***`.
    pub fn target(&self) -> &str {
        &self.inner.target
    }

    /// `work`, or the store not answering once [`OPERATION_DEADLINE`] has passed.
    async fn within<T>(
        &self,
        operation: &'static str,
        work: impl std::future::Future<Output = Result<T, OrchestratorError>>,
    ) -> Result<T, OrchestratorError> {
        match tokio::time::timeout(OPERATION_DEADLINE, work).await {
            Ok(done) => done,
            Err(_) => Err(OrchestratorError::store(
                operation,
                AtTarget {
                    what: "no answer in time from",
                    target: self.inner.target.clone(),
                    source: format!(
                        "the database did not answer within {} s",
                        OPERATION_DEADLINE.as_secs()
                    )
                    .into(),
                },
            )),
        }
    }
}

#[async_trait]
impl SessionStore for PgSessionStore {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        self.within("load session", self.inner.load(session_id))
            .await
    }

    async fn load_full(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        self.within("load session", self.inner.load_full(session_id))
            .await
    }

    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        self.within("load turn", self.inner.stored_turn(key)).await
    }

    async fn commit(
        &self,
        state: SessionState,
        expected_version: Option<u64>,
        turn: StoredTurn,
        holder: &str,
    ) -> Result<u64, OrchestratorError> {
        self.within(
            "commit turn",
            self.inner.commit(state, expected_version, turn, holder),
        )
        .await
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        self.within(
            "take lease",
            self.inner.acquire_lease(session_id, holder, ttl),
        )
        .await
    }

    async fn release_lease(&self, session_id: &str, holder: &str) -> Result<(), OrchestratorError> {
        self.within(
            "release lease",
            self.inner.release_lease(session_id, holder),
        )
        .await
    }

    async fn lease(&self, session_id: &str) -> Result<Option<LeaseInfo>, OrchestratorError> {
        self.within("read lease", self.inner.lease(session_id))
            .await
    }

    async fn list_turns(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<StoredTurn>, OrchestratorError> {
        self.within("list turns", self.inner.list_turns(session_id, limit))
            .await
    }

    async fn list_sessions(
        &self,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SessionPage, OrchestratorError> {
        self.within("list sessions", self.inner.list_sessions(limit, cursor))
            .await
    }

    async fn delete_session(&self, session_id: &str) -> Result<bool, OrchestratorError> {
        self.within("delete session", self.inner.delete_session(session_id))
            .await
    }

    async fn take_over_lease(
        &self,
        session_id: &str,
        stale_holder: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        self.within(
            "take over lease",
            self.inner
                .take_over_lease(session_id, stale_holder, holder, ttl),
        )
        .await
    }
}

/// The refusal of a URL that requires TLS, which this build does not include.
fn no_tls(target: String) -> OrchestratorError {
    OrchestratorError::store(
        "open",
        AtTarget {
            what: "cannot connect to",
            target,
            source: "the URL requires TLS (sslmode=require, verify-ca or verify-full), which \
                     this build does not include; connect through a Unix socket, a private \
                     network or a TLS-terminating proxy with sslmode=disable"
                .into(),
        },
    )
}

/// A failure that names the database by its URL without the password.
#[derive(Debug, thiserror::Error)]
#[error("{what} {target}")]
struct AtTarget {
    what: &'static str,
    target: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
}

impl PgStore {
    /// See [`PgSessionStore::connect`]; another process migrating the schema is waited
    /// for `lock_wait` at most.
    async fn connect(
        url: &str,
        pool_size: usize,
        password: Option<&str>,
        lock_wait: Duration,
    ) -> Result<PgStore, OrchestratorError> {
        let target = redact_url(url);
        // `verify-ca` and `verify-full` do not even parse without TLS built in: say why.
        let lower = url.to_ascii_lowercase();
        if lower.contains("sslmode=verify-ca") || lower.contains("sslmode=verify-full") {
            return Err(no_tls(target));
        }
        // The usual cause of a URL that does not parse, or parses wrong: a password
        // written with a character a URL gives a meaning to, left unescaped. An `@` in
        // it even parses, as a host name the driver then cannot look up.
        let unescaped = |marks: &[char]| {
            url.split_once("://").is_some_and(|(_, rest)| {
                rest.rsplit_once('@')
                    .is_some_and(|(userinfo, _)| userinfo.contains(marks))
            })
        };
        // An `@` in the query of a URL whose start is clean (`?application_name=me@x`
        // after at most one `@` and no `#`) is the query's, not the password's.
        let query_at = url.split_once("://").is_some_and(|(_, rest)| {
            rest.split_once('?').is_some_and(|(before, query)| {
                query.contains('@') && !before.contains('#') && before.matches('@').count() <= 1
            })
        });
        const ESCAPING: &str = "invalid PostgreSQL URL (a password holding @, /, ? or # is written percent-encoded: %40, %2F, %3F, %23)";
        if !query_at && unescaped(&['@']) {
            return Err(OrchestratorError::store(
                "open",
                AtTarget {
                    what: ESCAPING,
                    target,
                    source: "an unescaped @ before the host".into(),
                },
            ));
        }
        let mut config = tokio_postgres::Config::from_str(url).map_err(|error| {
            OrchestratorError::store(
                "open",
                AtTarget {
                    what: if unescaped(&['/', '?', '#']) {
                        ESCAPING
                    } else {
                        "invalid PostgreSQL URL"
                    },
                    target: target.clone(),
                    source: Box::new(error),
                },
            )
        })?;
        if config.get_ssl_mode() == tokio_postgres::config::SslMode::Require {
            return Err(no_tls(target));
        }
        if let Some(password) = password
            && config.get_password().is_none()
        {
            config.password(password);
        }
        // Named in `pg_stat_activity`, so a DBA can tell Aptix's connections apart.
        if config.get_application_name().is_none() {
            config.application_name("aptix");
        }
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(Duration::from_secs(30)))
            .create_timeout(Some(Duration::from_secs(10)))
            .build()
            .map_err(|error| {
                OrchestratorError::store(
                    "open",
                    AtTarget {
                        what: "cannot set up a connection pool for",
                        target: target.clone(),
                        source: Box::new(error),
                    },
                )
            })?;
        let store = PgStore { pool, target };
        store.migrate(lock_wait).await?;
        Ok(store)
    }

    /// Applies the migrations this database lacks, under an advisory lock. A database
    /// whose schema is up to date is only read: a role with no right to create tables
    /// (an operator's least-privilege runtime role) can use it. Another process holding
    /// the lock is said (a warning) and waited for, `lock_wait` at most.
    async fn migrate(&self, lock_wait: Duration) -> Result<(), OrchestratorError> {
        let mut client = self.client("open").await?;
        let fail = |error: tokio_postgres::Error| {
            // The two causes an operator meets, said with what to do.
            let what = match error.code() {
                Some(&SqlState::INSUFFICIENT_PRIVILEGE) => {
                    "cannot migrate the schema (this role may not create or alter tables: \
                     start Aptix once with the database owner's role, then run it with this \
                     one) of"
                }
                Some(&SqlState::DUPLICATE_TABLE) => {
                    "cannot migrate the schema (tables of Aptix's names exist, but not its \
                     aptix_schema_migrations record of them: a database set up by hand or by \
                     another tool; give Aptix an empty database) of"
                }
                _ => "cannot migrate the schema of",
            };
            OrchestratorError::store(
                "open",
                AtTarget {
                    what,
                    target: self.target.clone(),
                    source: Box::new(error),
                },
            )
        };
        let supported = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
        let recorded: bool = client
            .query_one(
                "SELECT to_regclass('aptix_schema_migrations') IS NOT NULL",
                &[],
            )
            .await
            .map_err(fail)?
            .get(0);
        if recorded {
            let current: i32 = client
                .query_one(
                    "SELECT COALESCE(MAX(version), 0) FROM aptix_schema_migrations",
                    &[],
                )
                .await
                .map_err(|error| {
                    // The schema is there: what this role lacks is the right to use it,
                    // not to create it.
                    if error.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) {
                        OrchestratorError::store(
                            "open",
                            AtTarget {
                                what: "cannot read the schema's version (this role may not \
                                       read Aptix's tables: grant it USAGE on their schema and \
                                       SELECT, INSERT, UPDATE, DELETE on the aptix_* tables) of",
                                target: self.target.clone(),
                                source: Box::new(error),
                            },
                        )
                    } else {
                        fail(error)
                    }
                })?
                .get(0);
            if current == supported {
                return Ok(());
            }
        }
        let transaction = client.transaction().await.map_err(fail)?;
        let waiting = std::time::Instant::now();
        let mut said = false;
        loop {
            let locked: bool = transaction
                .query_one("SELECT pg_try_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
                .await
                .map_err(fail)?
                .get(0);
            if locked {
                break;
            }
            if waiting.elapsed() >= lock_wait {
                return Err(OrchestratorError::store(
                    "open",
                    AtTarget {
                        what: "cannot migrate the schema of",
                        target: self.target.clone(),
                        source: Box::new(MigrationLockHeld { waited: lock_wait }),
                    },
                ));
            }
            if !said {
                said = true;
                tracing::warn!(
                    store = %self.target,
                    "another process is migrating the schema (it holds advisory lock {MIGRATION_LOCK}); waiting for it, {} at most",
                    aptix_client::human_duration(lock_wait)
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        // A table another client holds a lock on fails the migration soon, instead of
        // queueing every replica's queries behind it.
        transaction
            .batch_execute(&format!(
                "SET LOCAL lock_timeout = '{MIGRATION_TABLE_LOCK_TIMEOUT}'"
            ))
            .await
            .map_err(fail)?;
        transaction
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS aptix_schema_migrations (
                     version    INTEGER PRIMARY KEY,
                     applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
                 )",
            )
            .await
            .map_err(fail)?;
        let found: i32 = transaction
            .query_one(
                "SELECT COALESCE(MAX(version), 0) FROM aptix_schema_migrations",
                &[],
            )
            .await
            .map_err(fail)?
            .get(0);
        if found > supported {
            return Err(OrchestratorError::store(
                "open",
                AtTarget {
                    what: "cannot use",
                    target: self.target.clone(),
                    source: Box::new(SchemaTooNew {
                        found: i64::from(found),
                        supported: i64::from(supported),
                    }),
                },
            ));
        }
        for (version, migration) in (1..)
            .zip(MIGRATIONS)
            .skip(usize::try_from(found).unwrap_or(0))
        {
            transaction.batch_execute(migration).await.map_err(fail)?;
            transaction
                .execute(
                    "INSERT INTO aptix_schema_migrations (version) VALUES ($1)",
                    &[&version],
                )
                .await
                .map_err(fail)?;
        }
        transaction.commit().await.map_err(fail)
    }

    /// A pooled connection.
    async fn client(
        &self,
        operation: &'static str,
    ) -> Result<deadpool_postgres::Object, OrchestratorError> {
        self.pool.get().await.map_err(|error| {
            let reason = match &error {
                deadpool_postgres::PoolError::Timeout(_) => {
                    "timed out waiting for a connection".into()
                }
                other => {
                    let cause = root_cause(other);
                    if cause.to_string() == "password missing" {
                        "password missing (write it in the URL, percent-encoded, or set PGPASSWORD)"
                            .into()
                    } else {
                        cause
                    }
                }
            };
            OrchestratorError::store(
                operation,
                AtTarget {
                    what: "cannot connect to",
                    target: self.target.clone(),
                    source: reason,
                },
            )
        })
    }
}

/// The innermost cause ("Connection refused (os error 111)", "FATAL: password
/// authentication failed for user …"): the pool and the client each wrap it and repeat
/// it in their own messages. An I/O failure stays one, so that whoever reports it can
/// tell a plain network failure from the database's own words.
fn root_cause(
    error: &(dyn std::error::Error + 'static),
) -> Box<dyn std::error::Error + Send + Sync> {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    match current.downcast_ref::<std::io::Error>() {
        Some(io) => Box::new(std::io::Error::new(io.kind(), io.to_string())),
        None => current.to_string().into(),
    }
}

/// `sql` prepared on `client`, once per connection (deadpool keeps a statement cache), so
/// a hot statement costs one round trip instead of two.
async fn prepared(
    client: &deadpool_postgres::Object,
    operation: &'static str,
    sql: &str,
) -> Result<tokio_postgres::Statement, OrchestratorError> {
    client.prepare_cached(sql).await.map_err(failed(operation))
}

fn to_version(raw: i64) -> u64 {
    u64::try_from(raw).unwrap_or(0)
}

fn to_db_version(version: u64) -> i64 {
    i64::try_from(version).unwrap_or(i64::MAX)
}

/// A lease TTL in seconds, at most [`LONGEST_LEASE`](crate::lease::LONGEST_LEASE):
/// PostgreSQL's intervals do not reach `Duration::MAX`.
fn seconds(duration: Duration) -> f64 {
    duration.min(crate::lease::LONGEST_LEASE).as_secs_f64()
}

fn corrupt(session_id: &str) -> impl FnOnce(serde_json::Error) -> OrchestratorError + '_ {
    move |source| OrchestratorError::CorruptState {
        session_id: session_id.to_owned(),
        source,
    }
}

/// One row of `aptix_compactions`, as the commit hands it over.
#[derive(serde::Serialize)]
struct LoggedCompaction {
    seq: i32,
    items: crate::session::KeptApart,
}

fn failed(operation: &'static str) -> impl Fn(tokio_postgres::Error) -> OrchestratorError {
    move |error| OrchestratorError::store(operation, error)
}

#[async_trait]
impl SessionStore for PgStore {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        let client = self.client("load session").await?;
        let row = client
            .query_opt(
                &prepared(
                    &client,
                    "load session",
                    "SELECT state::TEXT, version FROM aptix_sessions WHERE session_id = $1",
                )
                .await?,
                &[&session_id],
            )
            .await
            .map_err(failed("load session"))?;
        row.map(|row| {
            let state: &str = row.get(0);
            serde_json::from_str(state)
                .map(|value| Versioned {
                    value,
                    version: to_version(row.get(1)),
                })
                .map_err(corrupt(session_id))
        })
        .transpose()
    }

    async fn load_full(
        &self,
        session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        // The state first: its compactions' items are committed with it and never
        // removed but with the session, so every record read has its items by then.
        let Some(mut loaded) = self.load(session_id).await? else {
            return Ok(None);
        };
        let client = self.client("load session").await?;
        let rows = client
            .query(
                &prepared(
                    &client,
                    "load session",
                    "SELECT seq, items::TEXT FROM aptix_compactions WHERE session_id = $1",
                )
                .await?,
                &[&session_id],
            )
            .await
            .map_err(failed("load session"))?;
        let mut kept = KeptApartItems::new();
        for row in rows {
            let items = serde_json::from_str(row.get(1)).map_err(corrupt(session_id))?;
            kept.extend(
                usize::try_from(row.get::<_, i32>(0))
                    .ok()
                    .map(|index| (index, items)),
            );
        }
        loaded.value.restore_kept_apart(kept);
        Ok(Some(loaded))
    }

    async fn list_turns(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<StoredTurn>, OrchestratorError> {
        let client = self.client("list turns").await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = client
            .query(
                &prepared(
                    &client,
                    "list turns",
                    "SELECT turn_id, scenario, envelope::TEXT, request_digest FROM aptix_turns WHERE session_id = $1
                     ORDER BY created_us DESC, turn_id DESC, scenario DESC LIMIT $2",
                )
                .await?,
                &[&session_id, &limit],
            )
            .await
            .map_err(failed("list turns"))?;
        rows.iter()
            .map(|row| {
                turn_from_row(row.get(0), row.get(1), row.get(2), row.get(3))
                    .map_err(corrupt(session_id))
            })
            .collect()
    }

    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        let client = self.client("load turn").await?;
        let row = client
            .query_opt(
                &prepared(
                    &client,
                    "load turn",
                    "SELECT envelope::TEXT, request_digest FROM aptix_turns
                 WHERE session_id = $1 AND turn_id = $2 AND scenario = $3",
                )
                .await?,
                &[&key.session_id, &key.turn_id, &key.scenario.as_str()],
            )
            .await
            .map_err(failed("load turn"))?;
        row.map(|row| {
            serde_json::from_str(row.get(0))
                .map(|envelope| StoredTurn {
                    turn_id: key.turn_id.clone(),
                    scenario: key.scenario,
                    envelope,
                    request_digest: row.get(1),
                })
                .map_err(corrupt(&key.session_id))
        })
        .transpose()
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
        let replaced: Vec<LoggedCompaction> = state
            .take_kept_apart()
            .into_iter()
            .map(|(index, items)| LoggedCompaction {
                seq: i32::try_from(index).unwrap_or(i32::MAX),
                items,
            })
            .collect();
        let replaced_json = serde_json::to_string(&replaced).map_err(corrupt(&state.session_id))?;
        let state_json = serde_json::to_string(&state).map_err(corrupt(&state.session_id))?;
        let envelope_json =
            serde_json::to_string(&turn.envelope).map_err(corrupt(&state.session_id))?;
        let session_id = state.session_id.as_str();
        let fail = failed("commit turn");
        let client = self.client("commit turn").await?;
        // One statement, so one round trip and one atomic step: the session row is
        // written only from the expected version (or created only if absent), and the
        // turn is recorded only if it was.
        let sql = match expected_version {
            None => COMMIT_NEW,
            Some(_) => COMMIT_NEXT,
        };
        let statement = client.prepare_cached(sql).await.map_err(&fail)?;
        let expected = expected_version.map_or(0, to_db_version);
        let committed = client
            .query_opt(
                &statement,
                &[
                    &session_id,
                    &state_json,
                    &expected,
                    &turn.turn_id,
                    &turn.scenario.as_str(),
                    &envelope_json,
                    &replaced_json,
                    &state.mode,
                    &turn.request_digest,
                    &holder,
                ],
            )
            .await
            .map_err(|error| {
                // Stricter isolation levels report a lost race as a failure to serialise.
                if error.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) {
                    OrchestratorError::Conflict {
                        session_id: session_id.to_owned(),
                        expected: expected_version,
                        found: None,
                    }
                } else {
                    fail(error)
                }
            })?;
        if let Some(row) = committed {
            return Ok(to_version(row.get(0)));
        }
        drop(client);
        // Another holder took the session over while this turn ran: it is the one to land.
        if let Some(lease) = self.lease(session_id).await?
            && lease.holder != holder
            && !lease.expires_in.is_zero()
        {
            return Err(OrchestratorError::SessionBusy {
                session_id: session_id.to_owned(),
                holder: Some(lease.holder),
                expires_in: Some(lease.expires_in),
            });
        }
        let client = self.client("commit turn").await?;
        // Another writer won: say what it left.
        let found = client
            .query_opt(
                &client.prepare_cached(SELECT_VERSION).await.map_err(&fail)?,
                &[&session_id],
            )
            .await
            .map_err(&fail)?
            .map(|row| to_version(row.get(0)));
        Err(OrchestratorError::Conflict {
            session_id: session_id.to_owned(),
            expected: expected_version,
            found,
        })
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        let client = self.client("take lease").await?;
        // Insert, or take over a lease that expired or that this holder already has; the
        // row lock of ON CONFLICT DO UPDATE makes two takers meet one at a time.
        let changed = client
            .execute(
                &prepared(
                    &client,
                    "take lease",
                    "INSERT INTO aptix_leases (session_id, holder, expires_at)
                 VALUES ($1, $2, clock_timestamp() + make_interval(secs => $3))
                 ON CONFLICT (session_id) DO UPDATE
                     SET holder = excluded.holder, expires_at = excluded.expires_at
                     WHERE aptix_leases.expires_at <= clock_timestamp()
                        OR aptix_leases.holder = excluded.holder",
                )
                .await?,
                &[&session_id, &holder, &seconds(ttl)],
            )
            .await
            .map_err(failed("take lease"))?;
        Ok(changed == 1)
    }

    async fn release_lease(&self, session_id: &str, holder: &str) -> Result<(), OrchestratorError> {
        let client = self.client("release lease").await?;
        client
            .execute(
                &prepared(
                    &client,
                    "release lease",
                    "DELETE FROM aptix_leases WHERE session_id = $1 AND holder = $2",
                )
                .await?,
                &[&session_id, &holder],
            )
            .await
            .map_err(failed("release lease"))?;
        Ok(())
    }

    async fn lease(&self, session_id: &str) -> Result<Option<LeaseInfo>, OrchestratorError> {
        let client = self.client("read lease").await?;
        let row = client
            .query_opt(
                "SELECT holder,
                     GREATEST(0, extract(epoch FROM expires_at - clock_timestamp()))::FLOAT8
                 FROM aptix_leases WHERE session_id = $1",
                &[&session_id],
            )
            .await
            .map_err(failed("read lease"))?;
        Ok(row.map(|row| LeaseInfo {
            holder: row.get(0),
            expires_in: Duration::try_from_secs_f64(row.get(1)).unwrap_or_default(),
        }))
    }

    async fn take_over_lease(
        &self,
        session_id: &str,
        stale_holder: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        let client = self.client("take over lease").await?;
        let changed = client
            .execute(
                "UPDATE aptix_leases
                 SET holder = $3, expires_at = clock_timestamp() + make_interval(secs => $4)
                 WHERE session_id = $1 AND holder = $2",
                &[&session_id, &stale_holder, &holder, &seconds(ttl)],
            )
            .await
            .map_err(failed("take over lease"))?;
        Ok(changed == 1)
    }

    async fn list_sessions(
        &self,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SessionPage, OrchestratorError> {
        // The cursor is `<updated_us>:<session_id>` of the first session of the next
        // page; the order is the same pair, newest first.
        let after = cursor.map(parse_cursor).transpose()?;
        let limit = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
        let client = self.client("list sessions").await?;
        let rows = match &after {
            None => {
                client
                    .query(
                        "SELECT session_id, version, mode, updated_us FROM aptix_sessions
                         ORDER BY updated_us DESC, session_id DESC LIMIT $1",
                        &[&limit.saturating_add(1)],
                    )
                    .await
            }
            Some((us, id)) => {
                client
                    .query(
                        "SELECT session_id, version, mode, updated_us FROM aptix_sessions
                         WHERE (updated_us, session_id) <= ($1, $2)
                         ORDER BY updated_us DESC, session_id DESC LIMIT $3",
                        &[us, id, &limit.saturating_add(1)],
                    )
                    .await
            }
        }
        .map_err(failed("list sessions"))?;
        let mut page = SessionPage::default();
        for row in rows {
            let session_id: String = row.get(0);
            if i64::try_from(page.sessions.len()).unwrap_or(i64::MAX) == limit {
                let updated: i64 = row.get(3);
                page.next_cursor = Some(format!("{updated}:{session_id}"));
                break;
            }
            page.sessions.push(SessionSummary {
                session_id,
                version: to_version(row.get(1)),
                mode: row.get::<_, Option<String>>(2).unwrap_or_default(),
                updated_at_unix_ms: u64::try_from(row.get::<_, i64>(3) / 1000).ok(),
            });
        }
        Ok(page)
    }

    async fn delete_session(&self, session_id: &str) -> Result<bool, OrchestratorError> {
        let fail = failed("delete session");
        let mut client = self.client("delete session").await?;
        let transaction = client.transaction().await.map_err(&fail)?;
        // Take the session's lease for the delete, as a turn takes it: a live holder
        // keeps it (the session is busy), and the row stays locked until the delete
        // commits, so no turn can take it in between (a `SELECT … FOR UPDATE` locks
        // nothing where there is no lease row yet, and a turn could take one between
        // that check and the delete, which then removed the running turn's lease).
        let taken = transaction
            .execute(
                "INSERT INTO aptix_leases (session_id, holder, expires_at)
                 VALUES ($1, 'aptix:delete', clock_timestamp() + interval '1 minute')
                 ON CONFLICT (session_id) DO UPDATE
                     SET holder = excluded.holder, expires_at = excluded.expires_at
                     WHERE aptix_leases.expires_at <= clock_timestamp()",
                &[&session_id],
            )
            .await
            .map_err(&fail)?;
        if taken == 0 {
            return Err(OrchestratorError::SessionBusy {
                session_id: session_id.to_owned(),
                holder: None,
                expires_in: None,
            });
        }
        // Its version is kept, for a session made again under this id to go on from.
        transaction
            .execute(
                "INSERT INTO aptix_deleted_sessions (session_id, version)
                 SELECT session_id, version FROM aptix_sessions WHERE session_id = $1
                 ON CONFLICT (session_id) DO UPDATE SET version = excluded.version",
                &[&session_id],
            )
            .await
            .map_err(&fail)?;
        let deleted = transaction
            .execute(
                "DELETE FROM aptix_sessions WHERE session_id = $1",
                &[&session_id],
            )
            .await
            .map_err(&fail)?;
        for statement in [
            "DELETE FROM aptix_turns WHERE session_id = $1",
            "DELETE FROM aptix_leases WHERE session_id = $1",
            "DELETE FROM aptix_compactions WHERE session_id = $1",
        ] {
            transaction
                .execute(statement, &[&session_id])
                .await
                .map_err(&fail)?;
        }
        transaction.commit().await.map_err(&fail)?;
        Ok(deleted == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aptix_testkit::postgres::TestDatabase;

    #[tokio::test]
    async fn a_migration_held_by_another_process_is_waited_for_then_given_up_on() {
        let database = TestDatabase::create();
        let (other, connection) = tokio_postgres::connect(database.url(), NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        other
            .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
            .await
            .unwrap();
        // Held for all of the wait: a clear error naming the lock, not a hang.
        let error = aptix_model::error_chain(
            &PgStore::connect(database.url(), 1, None, Duration::from_millis(600))
                .await
                .err()
                .unwrap(),
        );
        assert!(
            error.contains("another process has held the migration lock")
                && error.contains("pg_locks"),
            "{error}"
        );
        // Released while another waits: that one migrates and opens.
        let waiting = tokio::spawn({
            let url = database.url().to_owned();
            async move { PgStore::connect(&url, 1, None, Duration::from_secs(30)).await }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!waiting.is_finished());
        other
            .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
            .await
            .unwrap();
        assert!(waiting.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_role_that_may_not_migrate_and_a_database_of_another_tool_are_told_what_to_do() {
        let database = TestDatabase::create();
        let (owner, connection) = tokio_postgres::connect(database.url(), NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        // Roles are the server's, not the database's: one of this database's name.
        let role = format!(
            "limited_{}",
            database.url().rsplit('/').next().unwrap_or_default()
        );
        owner
            .batch_execute(&format!(
                "CREATE ROLE {role} LOGIN; REVOKE CREATE ON SCHEMA public FROM PUBLIC;"
            ))
            .await
            .unwrap();
        let limited = database.url_as(&role);
        let error = aptix_model::error_chain(
            &PgStore::connect(&limited, 1, None, MIGRATION_LOCK_WAIT)
                .await
                .err()
                .unwrap(),
        );
        assert!(
            error.contains("start Aptix once with the database owner's role"),
            "{error}"
        );
        // Tables of Aptix's names, made without its record of them.
        owner
            .batch_execute("CREATE TABLE aptix_sessions (id TEXT)")
            .await
            .unwrap();
        let error = aptix_model::error_chain(
            &PgStore::connect(database.url(), 1, None, MIGRATION_LOCK_WAIT)
                .await
                .err()
                .unwrap(),
        );
        assert!(error.contains("give Aptix an empty database"), "{error}");
        owner
            .batch_execute(&format!("DROP TABLE aptix_sessions; DROP ROLE {role};"))
            .await
            .unwrap();
    }
}

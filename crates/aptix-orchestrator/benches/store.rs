//! What a session store costs a turn: memory, SQLite and PostgreSQL, at concurrency 1 and
//! 16, in one run.
//!
//! `cargo bench -p aptix-orchestrator --bench store --features postgres`
//!
//! Every turn is a full `Orchestrator::execute` against a provider that answers at once
//! (a prepared reply), so the turn's time is the orchestrator's own work plus the
//! store's: take the lease, load the session, look for a stored turn, commit state and
//! envelope in one transaction, give the lease back. A wrapper times every store call and
//! sums them per turn. Workers each continue their own sessions (4 per worker), so turns
//! never wait on each other's leases: what is measured is the store, not contention for
//! one session. The in-memory store is the baseline.
//!
//! SQLite is a file in a temporary folder (WAL, `synchronous = NORMAL`, as shipped);
//! PostgreSQL is a local server started by `scripts/test-postgres.sh start --durable`
//! (fsync and synchronous commit on, as a deployment runs it) on loopback, or the
//! database at `APTIX_BENCH_POSTGRES_URL` when set.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aptix_client::{
    Capabilities, ClientError, EventStream, ProviderResponse, ReplyMeta, ResponsesProvider,
};
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::{CreateResponseRequest, Response};
use aptix_orchestrator::{
    InMemorySessionStore, LeaseInfo, Orchestrator, OrchestratorError, PgSessionStore, SessionPage,
    SessionState, SessionStore, SqliteSessionStore, StoredTurn, TurnKey, Versioned,
};
use async_trait::async_trait;

/// Answers every request at once with the same reply.
struct Instant0(Response);

#[async_trait]
impl ResponsesProvider for Instant0 {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        Ok(ProviderResponse::new(
            self.0.clone(),
            ReplyMeta::synthetic(),
        ))
    }

    async fn stream(&self, _: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        Err(ClientError::Unsupported {
            provider: "the store benchmark's provider",
            feature: "streaming".into(),
        })
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

/// Times every call, summed per session (each session runs one turn at a time here).
struct Timed {
    inner: Arc<dyn SessionStore>,
    spent: Mutex<HashMap<String, Duration>>,
}

impl Timed {
    fn add(&self, session_id: &str, started: Instant) {
        let elapsed = started.elapsed();
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        *spent.entry(session_id.to_owned()).or_default() += elapsed;
    }

    fn take(&self, session_id: &str) -> Duration {
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        spent.remove(session_id).unwrap_or_default()
    }
}

#[async_trait]
impl SessionStore for Timed {
    async fn load(&self, id: &str) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        let started = Instant::now();
        let result = self.inner.load(id).await;
        self.add(id, started);
        result
    }

    async fn stored_turn(&self, key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        let started = Instant::now();
        let result = self.inner.stored_turn(key).await;
        self.add(&key.session_id, started);
        result
    }

    async fn commit(
        &self,
        state: SessionState,
        expected: Option<u64>,
        turn: StoredTurn,
        holder: &str,
    ) -> Result<u64, OrchestratorError> {
        let started = Instant::now();
        let session_id = state.session_id.clone();
        let result = self.inner.commit(state, expected, turn, holder).await;
        self.add(&session_id, started);
        result
    }

    async fn acquire_lease(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        let started = Instant::now();
        let result = self.inner.acquire_lease(id, holder, ttl).await;
        self.add(id, started);
        result
    }

    async fn release_lease(&self, id: &str, holder: &str) -> Result<(), OrchestratorError> {
        let started = Instant::now();
        let result = self.inner.release_lease(id, holder).await;
        self.add(id, started);
        result
    }

    async fn lease(&self, id: &str) -> Result<Option<LeaseInfo>, OrchestratorError> {
        let started = Instant::now();
        let result = self.inner.lease(id).await;
        self.add(id, started);
        result
    }

    async fn list_sessions(
        &self,
        limit: usize,
        cursor: Option<&str>,
    ) -> Result<SessionPage, OrchestratorError> {
        self.inner.list_sessions(limit, cursor).await
    }

    async fn delete_session(&self, id: &str) -> Result<bool, OrchestratorError> {
        self.inner.delete_session(id).await
    }

    async fn take_over_lease(
        &self,
        id: &str,
        stale: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        self.inner.take_over_lease(id, stale, holder, ttl).await
    }
}

fn reply() -> Response {
    serde_json::from_value(serde_json::json!({
        "id": "resp_bench", "object": "response", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "A short answer of about the size \
                     a chat turn has, a sentence or two, so the envelope is realistic.",
                     "annotations": []}]}],
        "usage": {"input_tokens": 900, "output_tokens": 40, "total_tokens": 940}
    }))
    .expect("a valid reply")
}

struct Figures {
    turns_per_second: f64,
    store_p50: Duration,
    store_p99: Duration,
    turn_p50: Duration,
}

async fn run(
    label: &str,
    store: Arc<dyn SessionStore>,
    concurrency: usize,
    turns: usize,
) -> Figures {
    let timed = Arc::new(Timed {
        inner: store,
        spent: Mutex::new(HashMap::new()),
    });
    let orchestrator = Arc::new(
        Orchestrator::builder(Arc::new(Instant0(reply())), timed.clone())
            .build()
            .expect("a valid orchestrator"),
    );
    let per_worker = turns / concurrency;
    let started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..concurrency {
        let orchestrator = orchestrator.clone();
        let timed = timed.clone();
        let label = label.to_owned();
        workers.push(tokio::spawn(async move {
            let mut samples = Vec::with_capacity(per_worker);
            for n in 0..per_worker {
                let session = format!("{label}-c{concurrency}-w{worker}-s{}", n % 4);
                let request = AgentExecuteRequest::from_json_value(&serde_json::json!({
                    "sessionId": session, "turnId": format!("t{n}"),
                    "instruction": "Explain the retry loop in crates/aptix-client."
                }))
                .expect("a valid request");
                let turn_started = Instant::now();
                orchestrator.execute(request).await.expect("the turn runs");
                samples.push((timed.take(&session), turn_started.elapsed()));
            }
            samples
        }));
    }
    let mut samples = Vec::new();
    for worker in workers {
        samples.extend(worker.await.expect("the worker finishes"));
    }
    let elapsed = started.elapsed();
    let mut store: Vec<Duration> = samples.iter().map(|(store, _)| *store).collect();
    let mut turn: Vec<Duration> = samples.iter().map(|(_, turn)| *turn).collect();
    store.sort();
    turn.sort();
    let at = |sorted: &[Duration], q: f64| sorted[((sorted.len() - 1) as f64 * q) as usize];
    Figures {
        turns_per_second: samples.len() as f64 / elapsed.as_secs_f64(),
        store_p50: at(&store, 0.5),
        store_p99: at(&store, 0.99),
        turn_p50: at(&turn, 0.5),
    }
}

fn script(args: &[&str]) -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-postgres.sh");
    let output = std::process::Command::new("bash")
        .arg(&path)
        .args(args)
        .output()
        .expect("bash runs");
    assert!(
        output.status.success(),
        "scripts/test-postgres.sh {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let server_dir = dir.path().join("pg");
    let (url, started_server) = match std::env::var("APTIX_BENCH_POSTGRES_URL") {
        Ok(url) => (url, false),
        Err(_) => {
            let server = script(&["start", &server_dir.to_string_lossy(), "--durable"]);
            (script(&["database", &server]), true)
        }
    };
    let turns = |concurrency: usize| if concurrency == 1 { 600 } else { 3200 };
    println!("| store | concurrency | turns/s | store p50 | store p99 | turn p50 |");
    println!("|---|---|---|---|---|---|");
    runtime.block_on(async {
        let postgres: Arc<dyn SessionStore> = Arc::new(
            PgSessionStore::connect(&url, 16)
                .await
                .expect("the benchmark database"),
        );
        for concurrency in [1, 16] {
            // Warm every store (connections, pages, token tables) before measuring.
            let memory: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
            let sqlite: Arc<dyn SessionStore> = Arc::new(
                SqliteSessionStore::open(dir.path().join(format!("c{concurrency}.db")))
                    .expect("a SQLite file"),
            );
            for (label, store) in [
                ("memory", &memory),
                ("sqlite", &sqlite),
                ("postgres", &postgres),
            ] {
                run(
                    &format!("warm-{label}"),
                    store.clone(),
                    concurrency,
                    16 * concurrency,
                )
                .await;
            }
            for (label, store) in [
                ("memory", memory),
                ("sqlite", sqlite),
                ("postgres", postgres.clone()),
            ] {
                let figures = run(label, store, concurrency, turns(concurrency)).await;
                println!(
                    "| {label} | {concurrency} | {:.0} | {:.3} ms | {:.3} ms | {:.3} ms |",
                    figures.turns_per_second,
                    figures.store_p50.as_secs_f64() * 1e3,
                    figures.store_p99.as_secs_f64() * 1e3,
                    figures.turn_p50.as_secs_f64() * 1e3,
                );
            }
        }
    });
    if started_server {
        script(&["stop", &server_dir.to_string_lossy()]);
    }
}

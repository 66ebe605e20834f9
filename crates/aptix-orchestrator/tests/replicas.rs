//! Two replicas on one PostgreSQL database: two orchestrators, each with its own
//! provider and its own pool, sharing nothing but the database (as two `aptix serve`
//! processes behind a load balancer do). The CLI's tests run the same scenarios with two
//! real `aptix serve` processes and `kill -9`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aptix_client::{
    Capabilities, ClientError, EventStream, FakeProvider, ProviderResponse, ReplyMeta,
    ResponsesProvider,
};
use aptix_model::contract::{AgentExecuteRequest, Kind};
use aptix_model::wire::{CreateResponseRequest, Response};
use aptix_orchestrator::{
    Orchestrator, OrchestratorConfig, OrchestratorError, PgSessionStore, SessionStore,
};
use aptix_testkit::postgres::TestDatabase;
use async_trait::async_trait;
use serde_json::json;
use tokio::sync::Notify;

fn turn(session: &str, turn_id: &str) -> AgentExecuteRequest {
    AgentExecuteRequest::from_json_value(
        &json!({"sessionId": session, "turnId": turn_id, "instruction": "hi"}),
    )
    .unwrap()
}

fn reply(text: &str) -> Response {
    serde_json::from_value(json!({
        "id": format!("resp_{}", text.replace(' ', "_")), "object": "response", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    }))
    .unwrap()
}

fn answering(replies: usize, text: &str) -> Arc<FakeProvider> {
    let provider = FakeProvider::new();
    for _ in 0..replies {
        provider.push_response(reply(text));
    }
    Arc::new(provider)
}

/// A provider that answers once `gate` is opened, counting its calls.
struct Gated {
    gate: Arc<Notify>,
    calls: AtomicUsize,
}

#[async_trait]
impl ResponsesProvider for Gated {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.gate.notified().await;
        Ok(ProviderResponse::new(
            reply("from A"),
            ReplyMeta::synthetic(),
        ))
    }

    async fn stream(&self, _: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        std::future::pending().await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

fn config(ttl: Duration) -> OrchestratorConfig {
    OrchestratorConfig {
        lease_ttl: ttl,
        ..OrchestratorConfig::default()
    }
}

/// A replica: its own pool on the shared database.
async fn replica(
    database: &TestDatabase,
    provider: Arc<dyn ResponsesProvider>,
    ttl: Duration,
) -> (Orchestrator, Arc<PgSessionStore>) {
    let store = Arc::new(PgSessionStore::connect(database.url(), 8).await.unwrap());
    let orchestrator = Orchestrator::builder(provider, store.clone())
        .config(config(ttl))
        .build()
        .unwrap();
    (orchestrator, store)
}

async fn raw(database: &TestDatabase) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(database.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
}

async fn count(client: &tokio_postgres::Client, sql: &str) -> i64 {
    client.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_running_on_one_replica_makes_the_other_answer_busy() {
    let database = TestDatabase::create();
    let gate = Arc::new(Notify::new());
    let gated = Arc::new(Gated {
        gate: gate.clone(),
        calls: AtomicUsize::new(0),
    });
    let (a, store) = replica(&database, gated.clone(), Duration::from_secs(60)).await;
    let b_provider = answering(1, "from B");
    let (b, _) = replica(&database, b_provider.clone(), Duration::from_secs(60)).await;

    let running = tokio::spawn(async move { a.execute(turn("s", "t1")).await });
    // Wait until A is inside the model call (it holds the lease then).
    while gated.calls.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(store.lease("s").await.unwrap().is_some());
    let error = b.execute(turn("s", "t2")).await.unwrap_err();
    assert!(
        matches!(error, OrchestratorError::SessionBusy { .. }),
        "{error:?}"
    );
    assert!(b_provider.calls().is_empty(), "B never called its model");

    gate.notify_one();
    let envelope = running.await.unwrap().unwrap();
    assert_eq!(envelope.text.as_deref(), Some("from A"));
    // Now free: B's turn runs and continues A's session.
    let envelope = b.execute(turn("s", "t2")).await.unwrap();
    assert_eq!(envelope.text.as_deref(), Some("from B"));
    assert_eq!(
        b_provider.requests()[0].previous_response_id.as_deref(),
        Some("resp_from_A")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_retried_on_the_other_replica_returns_the_stored_envelope() {
    let database = TestDatabase::create();
    let a_provider = answering(1, "from A");
    let (a, _) = replica(&database, a_provider.clone(), Duration::from_secs(60)).await;
    let b_provider = answering(1, "from B");
    let (b, _) = replica(&database, b_provider.clone(), Duration::from_secs(60)).await;

    let first = a.execute(turn("s", "t1")).await.unwrap();
    let retried = b.execute(turn("s", "t1")).await.unwrap();
    assert_eq!(retried, first);
    assert_eq!(
        (a_provider.calls().len(), b_provider.calls().len()),
        (1, 0),
        "the retry was answered from the database"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_lost_mid_turn_leaves_nothing_recorded_and_its_lease_expires() {
    let database = TestDatabase::create();
    let ttl = Duration::from_secs(4);
    let gated = Arc::new(Gated {
        gate: Arc::new(Notify::new()),
        calls: AtomicUsize::new(0),
    });
    let (a, store) = replica(&database, gated.clone(), ttl).await;
    let b_provider = answering(1, "from B");
    let (b, _) = replica(&database, b_provider.clone(), ttl).await;
    // A dies inside the model call: its future is gone and nothing gives the lease back.
    let lost = tokio::spawn(async move { a.execute(turn("s", "t1")).await });
    while gated.calls.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    lost.abort();
    let _ = lost.await;

    assert!(matches!(
        b.execute(turn("s", "t1")).await,
        Err(OrchestratorError::SessionBusy { .. })
    ));
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    // The same turn again: not answered from the store (A never completed it).
    let envelope = b.execute(turn("s", "t1")).await.unwrap();
    assert_eq!(envelope.text.as_deref(), Some("from B"));
    assert_eq!(b_provider.calls().len(), 1);
    assert_eq!(store.load("s").await.unwrap().unwrap().version, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_turns_over_twenty_sessions_are_each_recorded_once() {
    let database = TestDatabase::create();
    let a_provider = answering(200, "a");
    let b_provider = answering(200, "b");
    let (a, _) = replica(&database, a_provider.clone(), Duration::from_secs(30)).await;
    let (b, _) = replica(&database, b_provider.clone(), Duration::from_secs(30)).await;
    let replicas = Arc::new([a, b]);
    let busy = Arc::new(AtomicUsize::new(0));

    let mut tasks = Vec::new();
    for n in 0..200usize {
        let replicas = replicas.clone();
        let busy = busy.clone();
        tasks.push(tokio::spawn(async move {
            let request = turn(&format!("s{}", n % 20), &format!("t{n}"));
            // A client behind a load balancer: a busy answer is retried, on whichever
            // replica the balancer picks next.
            for attempt in 0usize.. {
                let replica = &replicas[(n + attempt) % 2];
                match replica.execute(request.clone()).await {
                    Ok(envelope) => return envelope,
                    Err(OrchestratorError::SessionBusy { .. }) => {
                        busy.fetch_add(1, Ordering::SeqCst);
                        let pause = 2 + (n * 7 + attempt * 13) % 15;
                        tokio::time::sleep(Duration::from_millis(pause as u64)).await;
                    }
                    Err(other) => panic!("turn {n}: {other:?}"),
                }
            }
            unreachable!()
        }));
    }
    let finished = tokio::time::timeout(Duration::from_secs(120), async {
        let mut envelopes = Vec::new();
        for task in tasks {
            envelopes.push(task.await.unwrap());
        }
        envelopes
    })
    .await
    .expect("no deadlock: every turn finished");
    assert!(finished.iter().all(|envelope| envelope.kind == Kind::Ok));

    let client = raw(&database).await;
    let model_calls = a_provider.calls().len() + b_provider.calls().len();
    assert_eq!(model_calls, 200, "each turn called a model exactly once");
    assert_eq!(
        count(&client, "SELECT count(*) FROM aptix_turns").await,
        200
    );
    assert_eq!(
        count(
            &client,
            "SELECT count(DISTINCT (session_id, turn_id)) FROM aptix_turns"
        )
        .await,
        200
    );
    assert_eq!(
        count(&client, "SELECT sum(version)::BIGINT FROM aptix_sessions").await,
        200,
        "every turn committed one version"
    );
    assert_eq!(
        count(&client, "SELECT count(*) FROM aptix_sessions").await,
        20
    );
    assert_eq!(
        count(&client, "SELECT count(*) FROM aptix_leases").await,
        0,
        "no session left busy"
    );
    assert!(
        a_provider.calls().len() > 20 && b_provider.calls().len() > 20,
        "both replicas served turns"
    );
    eprintln!(
        "200 turns: {} on A, {} on B, {} busy answers retried",
        a_provider.calls().len(),
        b_provider.calls().len(),
        busy.load(Ordering::SeqCst)
    );
}

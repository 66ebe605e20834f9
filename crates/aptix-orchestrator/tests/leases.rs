//! Session leases across processes: a lease left by a process that is gone (`kill -9`)
//! is taken over at once; a live holder makes the session busy, and the error says who
//! and when the lease expires; a turn dropped mid-flight (Ctrl-C) gives its lease back
//! through `release_session`.

use std::sync::Arc;
use std::time::Duration;

use aptix_client::{
    Capabilities, ClientError, EventStream, FakeProvider, ProviderResponse, ResponsesProvider,
};
use aptix_model::contract::{AgentExecuteRequest, Kind};
use aptix_model::wire::{CreateResponseRequest, Response};
use aptix_orchestrator::{
    Orchestrator, OrchestratorConfig, OrchestratorError, SessionStore, SqliteSessionStore,
};
use async_trait::async_trait;
use serde_json::json;

fn turn(turn_id: &str) -> AgentExecuteRequest {
    AgentExecuteRequest::from_json_value(
        &json!({"sessionId": "s-1", "turnId": turn_id, "instruction": "hi"}),
    )
    .unwrap()
}

fn answering() -> Arc<FakeProvider> {
    let response: Response = serde_json::from_value(json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": "hello", "annotations": []}]}]
    }))
    .unwrap();
    let provider = FakeProvider::new();
    provider.push_response(response);
    Arc::new(provider)
}

/// A provider whose calls never finish, as a model still thinking when Ctrl-C comes.
struct Forever;

#[async_trait]
impl ResponsesProvider for Forever {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        std::future::pending().await
    }

    async fn stream(&self, _: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        std::future::pending().await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

fn store() -> (tempfile::TempDir, Arc<SqliteSessionStore>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteSessionStore::open(dir.path().join("sessions.db")).unwrap());
    (dir, store)
}

#[tokio::test]
async fn a_lease_left_by_a_dead_process_is_taken_over_at_once() {
    if !std::path::Path::new("/proc/self/stat").exists() {
        return; // Only Linux can tell that a pid is gone; elsewhere the TTL applies.
    }
    let (_dir, store) = store();
    // As `kill -9` leaves it: a lease of a pid that does not exist, 5 minutes to go.
    let dead = aptix_testkit::dead_holder_id().expect("a /proc to tell a gone process by");
    assert!(
        store
            .acquire_lease("s-1", &dead, Duration::from_secs(300))
            .await
            .unwrap()
    );
    let orchestrator = Orchestrator::builder(answering(), store.clone())
        .build()
        .unwrap();
    let envelope = orchestrator.execute(turn("t-1")).await.unwrap();
    assert_eq!(envelope.kind, Kind::Ok);
    assert!(
        store.lease("s-1").await.unwrap().is_none(),
        "released after the turn"
    );
}

#[tokio::test]
async fn a_live_holder_makes_the_session_busy_and_the_error_says_until_when() {
    let (_dir, store) = store();
    let config = OrchestratorConfig {
        lease_ttl: Duration::from_secs(120),
        ..OrchestratorConfig::default()
    };
    let first = Orchestrator::builder(Arc::new(Forever), store.clone())
        .config(config.clone())
        .build()
        .unwrap();
    // Ctrl-C: the turn's future is dropped while the model call is running.
    let dropped = tokio::time::timeout(Duration::from_millis(50), first.execute(turn("t-1"))).await;
    assert!(dropped.is_err());
    let held = store
        .lease("s-1")
        .await
        .unwrap()
        .expect("the dropped turn's lease");

    let second = Orchestrator::builder(answering(), store.clone())
        .config(config)
        .build()
        .unwrap();
    let error = second.execute(turn("t-2")).await.unwrap_err();
    let OrchestratorError::SessionBusy {
        holder, expires_in, ..
    } = &error
    else {
        panic!("{error:?}")
    };
    // This very process holds it, so it is alive and not taken over.
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().replace(':', "_"))
        .unwrap_or_default();
    if !name.is_empty() {
        // The message names the host, not its process space.
        let expected = format!("pid {} on {name}", std::process::id());
        assert_eq!(holder.as_deref(), Some(expected.as_str()));
    }
    let expires_in = expires_in.unwrap();
    assert!(expires_in <= Duration::from_secs(120) && expires_in > Duration::from_secs(60));
    assert!(
        error.to_string().contains("its lease expires in"),
        "{error}"
    );
    assert!(held.expires_in <= Duration::from_secs(120));

    // What `aptix ask` does on SIGINT/SIGTERM after dropping the turn.
    first.release_session("s-1").await.unwrap();
    let envelope = second.execute(turn("t-2")).await.unwrap();
    assert_eq!(envelope.kind, Kind::Ok);
}

/// A provider that answers after a pause, as a slow model does.
struct Slow(Duration);

#[async_trait]
impl ResponsesProvider for Slow {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        tokio::time::sleep(self.0).await;
        let response: Response = serde_json::from_value(json!({
            "id": "resp_slow", "object": "response", "status": "completed", "model": "m",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "late", "annotations": []}]}]
        }))
        .unwrap();
        Ok(ProviderResponse::new(
            response,
            aptix_client::ReplyMeta::synthetic(),
        ))
    }

    async fn stream(&self, _: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        std::future::pending().await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

/// A store that counts lease acquisitions, over the in-memory store, and fails the first
/// `refused_releases` releases (a store away for a moment).
struct CountingLeases {
    inner: aptix_orchestrator::InMemorySessionStore,
    acquired: std::sync::atomic::AtomicUsize,
    refused_releases: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl SessionStore for CountingLeases {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<
        Option<aptix_orchestrator::Versioned<aptix_orchestrator::SessionState>>,
        OrchestratorError,
    > {
        self.inner.load(session_id).await
    }

    async fn stored_turn(
        &self,
        key: &aptix_orchestrator::TurnKey,
    ) -> Result<Option<aptix_orchestrator::StoredTurn>, OrchestratorError> {
        self.inner.stored_turn(key).await
    }

    async fn commit(
        &self,
        state: aptix_orchestrator::SessionState,
        expected: Option<u64>,
        turn: aptix_orchestrator::StoredTurn,
        holder: &str,
    ) -> Result<u64, OrchestratorError> {
        self.inner.commit(state, expected, turn, holder).await
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        self.acquired
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.acquire_lease(session_id, holder, ttl).await
    }

    async fn release_lease(&self, session_id: &str, holder: &str) -> Result<(), OrchestratorError> {
        let refused = self.refused_releases.fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |left| left.checked_sub(1),
        );
        if refused.is_ok() {
            return Err(OrchestratorError::Store {
                operation: "release lease",
                source: "connection refused".into(),
            });
        }
        self.inner.release_lease(session_id, holder).await
    }

    async fn lease(
        &self,
        session_id: &str,
    ) -> Result<Option<aptix_orchestrator::LeaseInfo>, OrchestratorError> {
        self.inner.lease(session_id).await
    }
}

/// The TTL bounds how long a dead holder blocks a session, not how long a live turn may
/// run: while the model thinks, the lease is renewed every third of its TTL. (Found
/// with two `aptix serve` replicas under load: a turn longer than the TTL lost its
/// session to the other replica.) The clock is tokio's paused clock, so the model's ten
/// seconds pass at once and the count is exact.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_turn_longer_than_the_lease_ttl_renews_its_lease() {
    let store = Arc::new(CountingLeases {
        inner: aptix_orchestrator::InMemorySessionStore::new(),
        acquired: std::sync::atomic::AtomicUsize::new(0),
        refused_releases: std::sync::atomic::AtomicUsize::new(0),
    });
    let config = OrchestratorConfig {
        lease_ttl: Duration::from_secs(3),
        ..OrchestratorConfig::default()
    };
    let slow = Orchestrator::builder(Arc::new(Slow(Duration::from_secs(10))), store.clone())
        .config(config)
        .build()
        .unwrap();
    let envelope = slow.execute(turn("t-1")).await.unwrap();
    assert_eq!(envelope.text.as_deref(), Some("late"));
    let acquired = store.acquired.load(std::sync::atomic::Ordering::SeqCst);
    // One to take it, then one a second (a third of the TTL) while the model thinks.
    assert!(
        (9..=12).contains(&acquired),
        "the lease was taken {acquired} times in a 10 s turn with a 3 s TTL"
    );
    // The renewal stops with the turn.
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        store.acquired.load(std::sync::atomic::Ordering::SeqCst),
        acquired
    );
}

/// A release that fails (the store away for a moment as the turn ends) is tried again in
/// the background: the session was busy on every replica for the rest of the lease's TTL
/// (5 minutes by default) after an outage of seconds.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_release_that_fails_is_tried_again_until_the_lease_is_given_back() {
    let store = Arc::new(CountingLeases {
        inner: aptix_orchestrator::InMemorySessionStore::new(),
        acquired: std::sync::atomic::AtomicUsize::new(0),
        refused_releases: std::sync::atomic::AtomicUsize::new(2),
    });
    let orchestrator = Orchestrator::builder(answering(), store.clone())
        .build()
        .unwrap();
    let envelope = orchestrator.execute(turn("t-1")).await.unwrap();
    assert_eq!(envelope.kind, Kind::Ok);
    // The release failed: the lease is still there...
    assert!(store.lease("s-1").await.unwrap().is_some());
    // ...and is given back by the second retry (after 1 s, then 2 s more).
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    assert_eq!(store.lease("s-1").await.unwrap(), None);
    assert_eq!(
        store
            .refused_releases
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
}

/// The background release never takes the lease of a turn started since: every turn of
/// one orchestrator holds the lease under the same name, and a retry that came after a
/// new turn began used to delete that turn's lease.
#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn the_background_release_leaves_a_later_turn_its_lease() {
    let store = Arc::new(CountingLeases {
        inner: aptix_orchestrator::InMemorySessionStore::new(),
        acquired: std::sync::atomic::AtomicUsize::new(0),
        refused_releases: std::sync::atomic::AtomicUsize::new(1),
    });
    // Each model call takes 3 s: the retry (after 1 s) comes while the second turn runs.
    let orchestrator = Orchestrator::builder(Arc::new(Slow(Duration::from_secs(3))), store.clone())
        .build()
        .unwrap();
    orchestrator.execute(turn("t-1")).await.unwrap();
    let second = orchestrator.execute(turn("t-2"));
    let check = async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        store.lease("s-1").await.unwrap()
    };
    let (second, held) = tokio::join!(second, check);
    second.unwrap();
    assert!(
        held.is_some(),
        "the second turn's lease was taken away mid-turn"
    );
    // Once the second turn is over, its own release gave the lease back.
    assert_eq!(store.lease("s-1").await.unwrap(), None);
}

#[tokio::test]
async fn deleting_a_session_clears_a_dead_processs_lease_and_refuses_a_live_ones() {
    let (_dir, store) = store();
    let orchestrator = Orchestrator::builder(answering(), store.clone())
        .build()
        .unwrap();
    orchestrator.execute(turn("t-1")).await.unwrap();

    // A holder on another host (alive as far as this host can tell), two minutes to go: refused, and
    // the error says who and until when; the session is untouched.
    let live = "aptix:elsewhere@x:1:1:0-0";
    assert!(
        store
            .acquire_lease("s-1", live, Duration::from_secs(120))
            .await
            .unwrap()
    );
    let error = aptix_orchestrator::delete_session(store.as_ref(), "s-1")
        .await
        .unwrap_err();
    let OrchestratorError::SessionBusy {
        holder, expires_in, ..
    } = &error
    else {
        panic!("{error:?}")
    };
    assert!(
        holder.as_deref().is_some_and(|h| h.contains("elsewhere")),
        "{error:?}"
    );
    assert!(
        expires_in.is_some_and(|left| left > Duration::from_secs(60)),
        "{error:?}"
    );
    assert!(store.load("s-1").await.unwrap().is_some());
    store.release_lease("s-1", live).await.unwrap();

    if !std::path::Path::new("/proc/self/stat").exists() {
        return; // Only Linux can tell that a pid is gone; elsewhere the TTL applies.
    }
    // As `kill -9` leaves it: the lease of a pid that does not exist, 5 minutes to go.
    let dead = aptix_testkit::dead_holder_id().expect("a /proc to tell a gone process by");
    assert!(
        store
            .acquire_lease("s-1", &dead, Duration::from_secs(300))
            .await
            .unwrap()
    );
    // The store alone refuses (it cannot tell a dead holder); the rule clears it.
    assert!(matches!(
        store.delete_session("s-1").await,
        Err(OrchestratorError::SessionBusy { .. })
    ));
    assert!(
        aptix_orchestrator::delete_session(store.as_ref(), "s-1")
            .await
            .unwrap()
    );
    assert!(store.load("s-1").await.unwrap().is_none());
    assert!(store.lease("s-1").await.unwrap().is_none());
    assert!(
        !aptix_orchestrator::delete_session(store.as_ref(), "s-1")
            .await
            .unwrap(),
        "a second delete finds nothing"
    );
}

#[tokio::test]
async fn a_dropped_turn_is_settled_with_its_own_stored_answer_never_an_earlier_rounds() {
    // A turn, then two rounds of client tool calls under the same turnId: the store
    // keeps the latest round under the key. Settling a round that was stopped before
    // its commit must not answer with the round before it.
    let call = |id: &str, call: &str| -> Response {
        serde_json::from_value(json!({"id": id, "status": "completed", "model": "m",
            "output": [{"type": "function_call", "call_id": call, "name": "read_file",
                        "arguments": "{\"path\": \"src/lib.rs\"}"}]}))
        .unwrap()
    };
    let provider = Arc::new(aptix_client::FakeProvider::new());
    provider.push_response(call("resp_1", "call_1"));
    provider.push_response(call("resp_2", "call_2"));
    let read_file = aptix_orchestrator::ClientTool {
        definition: serde_json::from_value(json!({
            "name": "read_file", "description": "Reads a file on the client",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"], "additionalProperties": false},
            "strict": true
        }))
        .unwrap(),
        usage: None,
    };
    let (_dir, store) = store();
    let orchestrator = Orchestrator::builder(provider, store)
        .client_tool(read_file)
        .build()
        .unwrap();
    let first = turn("t-1");
    orchestrator.execute(first.clone()).await.unwrap();
    let results = |call: &str, text: &str| {
        AgentExecuteRequest::from_json_slice(
            format!(
                r#"{{"sessionId": "s-1", "turnId": "t-1", "toolResults": [
                    {{"toolCallId": "{call}", "executionMs": 1, "resultJson": "{{\"text\": \"{text}\"}}"}}]}}"#
            )
            .as_bytes(),
        )
        .unwrap()
    };
    let round_1 = results("call_1", "mod a;");
    let answered = orchestrator.execute(round_1.clone()).await.unwrap();

    // The user turn and round 1 were stored: each settles with its own envelope.
    let settled = orchestrator.settle_dropped_turn(&round_1).await.unwrap();
    assert_eq!(settled.as_ref(), Some(&answered));
    assert!(
        orchestrator
            .settle_dropped_turn(&first)
            .await
            .unwrap()
            .is_some()
    );
    // Round 2 never ran: nothing of it was stored, whatever round 1 left under the key.
    let round_2 = results("call_2", "mod b;");
    assert_eq!(
        orchestrator.settle_dropped_turn(&round_2).await.unwrap(),
        None
    );
    // Another request under a user turn's key is not that turn.
    let other = AgentExecuteRequest::from_json_value(
        &json!({"sessionId": "s-1", "turnId": "t-1", "instruction": "Something else"}),
    )
    .unwrap();
    assert_eq!(
        orchestrator.settle_dropped_turn(&other).await.unwrap(),
        None
    );
}

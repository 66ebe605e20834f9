//! Cut streams through the real HTTP client and the orchestrator, against the fault
//! server: a connection reset mid-body, a body without a terminal event, a stall past
//! the idle timeout, attempts running out, a hosted tool that makes sending again
//! unsafe, an in-stream error (a transient one sent again, any other not retried), and
//! a background response resumed where it stopped. Waits are checked as the orchestrator announces them (jitter off), not
//! by timing the test.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use aptix_client::{OpenAiConfig, OpenAiProvider, RetryPolicy};
use aptix_mapping::{RetryCause, StreamDelta};
use aptix_model::contract::{AgentExecuteRequest, AgentExecuteResponse, FinishReason, Kind};
use aptix_orchestrator::{
    InMemorySessionStore, Orchestrator, OrchestratorConfig, SessionStore, StreamRecovery,
};
use aptix_testkit::fault_server::{FaultServer, Reply, Step, sse_text, text_answer_events};
use serde_json::{Value, json};

const PIECES: &[&str] = &["The turn ", "reaches the ", "store ", "once."];
const TEXT: &str = "The turn reaches the store once.";

fn events(id: &str) -> Vec<Value> {
    text_answer_events(id, PIECES)
}

/// The first `n` events, then the connection is reset.
fn cut_after(n: usize, id: &str) -> Reply {
    Reply::sse_steps(vec![
        Step::Send(sse_text(&events(id)[..n]).into_bytes()),
        Step::Reset,
    ])
}

/// The answer to `POST /responses/{id}/cancel`.
fn cancelled(id: &str) -> Reply {
    Reply::json(
        200,
        &json!({"id": id, "object": "response", "status": "cancelled", "output": []}),
    )
}

fn whole(id: &str) -> Reply {
    Reply::sse(sse_text(&events(id)))
}

struct Rig {
    server: FaultServer,
    store: Arc<InMemorySessionStore>,
    orchestrator: Orchestrator,
}

fn recovery() -> StreamRecovery {
    StreamRecovery {
        max_attempts: 5,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
        jitter: false,
    }
}

async fn rig(script: Vec<Reply>, config: OrchestratorConfig) -> Rig {
    rig_with_retries(script, config, RetryPolicy::never()).await
}

/// A rig whose HTTP client retries as `retry` says (fast waits, no jitter).
async fn rig_with_retries(
    script: Vec<Reply>,
    config: OrchestratorConfig,
    retry: RetryPolicy,
) -> Rig {
    let server = FaultServer::start(script).await;
    let client = OpenAiConfig::builder()
        .base_url(server.base_url())
        .api_key("sk-test-recovery-0000")
        .stream_idle_timeout(Some(Duration::from_millis(400)))
        .retry(retry)
        .build()
        .unwrap();
    let provider = Arc::new(OpenAiProvider::new(client).unwrap());
    let store = Arc::new(InMemorySessionStore::new());
    let orchestrator = Orchestrator::builder(provider, Arc::clone(&store) as Arc<dyn SessionStore>)
        .config(config)
        .build()
        .unwrap();
    Rig {
        server,
        store,
        orchestrator,
    }
}

fn config() -> OrchestratorConfig {
    OrchestratorConfig {
        stream_recovery: recovery(),
        ..OrchestratorConfig::default()
    }
}

fn turn(session: &str, turn: &str) -> AgentExecuteRequest {
    AgentExecuteRequest::from_json_value(&json!({
        "sessionId": session, "turnId": turn, "instruction": "How is a turn stored?"
    }))
    .unwrap()
}

/// Runs a streamed turn; returns the envelope and every delta.
async fn run(rig: &Rig, request: AgentExecuteRequest) -> (AgentExecuteResponse, Vec<StreamDelta>) {
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let collected = Arc::clone(&deltas);
    let mut sink = move |delta: &StreamDelta| collected.lock().unwrap().push(delta.clone());
    let envelope = rig
        .orchestrator
        .execute_streaming(request, &mut sink)
        .await
        .unwrap();
    let deltas = deltas.lock().unwrap().clone();
    (envelope, deltas)
}

fn retries(deltas: &[StreamDelta]) -> Vec<(u32, u64, u64, bool)> {
    deltas
        .iter()
        .filter_map(|delta| match delta {
            StreamDelta::Retrying {
                cause,
                attempt,
                wait_ms,
                events,
                resumed,
                ..
            } => {
                // Every notice of these tests is a cut stream's.
                assert_eq!(*cause, RetryCause::StreamCut, "{delta:?}");
                Some((*attempt, *wait_ms, *events, *resumed))
            }
            _ => None,
        })
        .collect()
}

/// The text after the last retry notice: what a consumer that starts over would show.
fn text_after_last_retry(deltas: &[StreamDelta]) -> String {
    let start = deltas
        .iter()
        .rposition(|d| matches!(d, StreamDelta::Retrying { .. }))
        .map_or(0, |at| at + 1);
    deltas[start..]
        .iter()
        .filter_map(StreamDelta::text)
        .collect()
}

#[tokio::test]
async fn a_reset_mid_body_is_sent_again_and_the_envelope_holds_the_text_once() {
    let rig = rig(vec![cut_after(5, "resp_a"), whole("resp_b")], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Ok, "{envelope:?}");
    assert_eq!(envelope.text.as_deref(), Some(TEXT));
    assert_eq!(envelope.response_continuation_id.as_deref(), Some("resp_b"));
    assert_eq!(retries(&deltas), [(2, 10, 5, false)]);
    assert_eq!(text_after_last_retry(&deltas), TEXT);
    let requests = rig.server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
    let stored = rig.store.load("s-1").await.unwrap().unwrap();
    assert_eq!(stored.value.last_response_id.as_deref(), Some("resp_b"));
}

#[tokio::test]
async fn a_body_without_a_terminal_event_is_recovered() {
    let early = Reply::sse(sse_text(&events("resp_a")[..6]));
    let rig = rig(vec![early, whole("resp_b")], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.text.as_deref(), Some(TEXT));
    assert_eq!(retries(&deltas), [(2, 10, 6, false)]);
    assert_eq!(rig.server.requests().len(), 2);
}

#[tokio::test]
async fn a_stall_past_the_idle_timeout_is_recovered() {
    let stalled = Reply::sse_steps(vec![
        Step::Send(sse_text(&events("resp_a")[..4]).into_bytes()),
        Step::Stall,
    ]);
    let rig = rig(vec![stalled, whole("resp_b")], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.text.as_deref(), Some(TEXT));
    let reason = deltas
        .iter()
        .find_map(|d| match d {
            StreamDelta::Retrying { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .unwrap();
    assert!(reason.contains("stream idle timeout"), "{reason}");
}

#[tokio::test]
async fn when_the_attempts_run_out_the_turn_is_an_error_and_the_session_is_unchanged() {
    // One good turn first, so there is a session to leave alone.
    let mut script = vec![whole("resp_0")];
    script.extend((0..5).map(|n| cut_after(5, &format!("resp_{}", n + 1))));
    let rig = rig(script, config()).await;
    let (first, _) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(first.kind, Kind::Ok);
    let before = rig.store.load("s-1").await.unwrap();

    let (envelope, deltas) = run(&rig, turn("s-1", "t-2")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert_eq!(envelope.error_code.as_deref(), Some("transport_error"));
    let message = envelope.error_message.clone().unwrap();
    assert!(
        message.contains("the connection was lost after 5 event(s)")
            && message.contains("gave up after 5 attempts"),
        "{message}"
    );
    // What the last attempt streamed stays in the envelope, for a reader of the
    // envelope alone; its kind says it is incomplete.
    assert_eq!(envelope.text.as_deref(), Some("The turn reaches the "));
    let waits: Vec<u64> = retries(&deltas).iter().map(|r| r.1).collect();
    assert_eq!(waits, [10, 20, 40, 40]);
    assert_eq!(rig.server.requests().len(), 6);
    assert_eq!(rig.store.load("s-1").await.unwrap(), before);
    assert!(
        rig.store
            .stored_turn(&aptix_orchestrator::TurnKey {
                session_id: "s-1".into(),
                turn_id: "t-2".into(),
                scenario: aptix_orchestrator::Scenario::UserTurn,
            })
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn no_recovery_when_turned_off() {
    let config = OrchestratorConfig {
        stream_recovery: StreamRecovery::never(),
        ..OrchestratorConfig::default()
    };
    let rig = rig(vec![cut_after(5, "resp_a")], config).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert!(retries(&deltas).is_empty());
    assert_eq!(rig.server.requests().len(), 1);
}

#[tokio::test]
async fn a_hosted_tool_that_ran_makes_sending_again_unsafe() {
    let mut cut = events("resp_a")[..2].to_vec();
    cut.push(
        json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 1,
        "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}}),
    );
    cut.push(
        json!({"type": "response.web_search_call.in_progress", "sequence_number": 3,
        "output_index": 1, "item_id": "ws_1"}),
    );
    let reply = Reply::sse_steps(vec![Step::Send(sse_text(&cut).into_bytes()), Step::Reset]);
    let rig = rig(vec![reply, whole("resp_b")], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert!(retries(&deltas).is_empty());
    assert_eq!(rig.server.requests().len(), 1);
    let message = envelope.error_message.unwrap();
    assert!(
        message.contains("a hosted tool had already run"),
        "{message}"
    );
}

#[tokio::test]
async fn an_in_stream_error_is_the_servers_verdict_and_not_retried() {
    let mut failed = events("resp_a")[..2].to_vec();
    failed.push(
        json!({"type": "error", "sequence_number": 2, "code": "insufficient_quota", "message": "no credit"}),
    );
    let rig = rig(
        vec![Reply::sse(sse_text(&failed)), whole("resp_b")],
        config(),
    )
    .await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert_eq!(envelope.error_code.as_deref(), Some("insufficient_quota"));
    assert!(retries(&deltas).is_empty());
    assert_eq!(rig.server.requests().len(), 1);
}

#[tokio::test]
async fn a_transient_in_stream_error_is_sent_again_from_the_start() {
    // As OpenAI sends a failure mid-answer: an `error` event, then `response.failed`.
    for code in ["server_error", "rate_limit_exceeded"] {
        let mut failed = events("resp_a")[..5].to_vec();
        failed.push(json!({"type": "error", "sequence_number": 5, "code": code,
                           "message": "The server had an error while processing your request."}));
        failed.push(json!({"type": "response.failed", "sequence_number": 6, "response": {
            "id": "resp_a", "status": "failed", "output": [],
            "error": {"code": code, "message": "The server had an error while processing your request."}}}));
        let rig = rig(
            vec![Reply::sse(sse_text(&failed)), whole("resp_b")],
            config(),
        )
        .await;
        let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
        assert_eq!(envelope.kind, Kind::Ok, "{code}: {envelope:?}");
        assert_eq!(envelope.text.as_deref(), Some(TEXT), "{code}");
        assert_eq!(retries(&deltas), [(2, 10, 7, false)], "{code}");
        assert_eq!(text_after_last_retry(&deltas), TEXT, "{code}");
        let requests = rig.server.requests();
        assert_eq!(requests.len(), 2, "{code}");
        assert_eq!(requests[0].body, requests[1].body, "the same request again");
        let stored = rig.store.load("s-1").await.unwrap().unwrap();
        assert_eq!(stored.value.last_response_id.as_deref(), Some("resp_b"));
    }
}

#[tokio::test]
async fn a_background_stream_cut_after_n_events_resumes_from_n_plus_one() {
    let all = events("resp_bg");
    let uncut: String = PIECES.concat();
    for n in [3, 5, 7] {
        let config = OrchestratorConfig {
            background: true,
            ..config()
        };
        let rest = sse_text(&all[n..]);
        let rig = rig(vec![cut_after(n, "resp_bg"), Reply::sse(rest)], config).await;
        let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
        assert_eq!(envelope.kind, Kind::Ok, "cut after {n}: {envelope:?}");
        assert_eq!(envelope.text.as_deref(), Some(uncut.as_str()));
        assert_eq!(envelope.finish_reason, Some(FinishReason::Stop));
        assert_eq!(retries(&deltas), [(2, 10, n as u64, true)]);
        // Every delta once: the text shown equals the uncut text.
        let shown: String = deltas.iter().filter_map(StreamDelta::text).collect();
        assert_eq!(shown, uncut, "cut after {n}");
        let requests = rig.server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].method, "POST");
        let sent = requests[0].json().unwrap();
        assert_eq!(
            (sent["background"].clone(), sent["store"].clone()),
            (json!(true), json!(true))
        );
        assert_eq!(requests[1].method, "GET");
        assert_eq!(
            requests[1].target,
            format!("/v1/responses/resp_bg?stream=true&starting_after={}", n - 1)
        );
    }
}

#[tokio::test]
async fn a_server_that_cannot_resume_gets_the_request_again_from_the_start() {
    let config = OrchestratorConfig {
        background: true,
        ..config()
    };
    // Cut; the resume finds no route; the response left generating is cancelled; the
    // request sent again answers whole.
    let script = vec![
        cut_after(5, "resp_bg"),
        Reply::status(404, "text/plain", "Not Found"),
        cancelled("resp_bg"),
        whole("resp_again"),
    ];
    let rig = rig(script, config).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Ok, "{envelope:?}");
    assert_eq!(envelope.text.as_deref(), Some(TEXT));
    let requests = rig.server.requests();
    let calls: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.target.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("POST", "/v1/responses"),
            ("GET", "/v1/responses/resp_bg?stream=true&starting_after=4"),
            ("POST", "/v1/responses/resp_bg/cancel"),
            ("POST", "/v1/responses"),
        ]
    );
    let notices: Vec<(bool, String)> = deltas
        .iter()
        .filter_map(|delta| match delta {
            StreamDelta::Retrying {
                resumed, reason, ..
            } => Some((*resumed, reason.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 2, "{notices:?}");
    assert!(notices[0].0, "the first cut resumes: {notices:?}");
    assert!(
        !notices[1].0
            && notices[1]
                .1
                .starts_with("the server cannot resume the response"),
        "{notices:?}"
    );
}

#[tokio::test]
async fn a_hosted_tool_that_ran_is_not_sent_again_when_the_server_cannot_resume() {
    let config = OrchestratorConfig {
        background: true,
        ..config()
    };
    let mut cut = events("resp_bg")[..2].to_vec();
    cut.push(
        json!({"type": "response.output_item.added", "sequence_number": 2, "output_index": 1,
        "item": {"type": "web_search_call", "id": "ws_1", "status": "in_progress"}}),
    );
    let script = vec![
        Reply::sse_steps(vec![Step::Send(sse_text(&cut).into_bytes()), Step::Reset]),
        Reply::status(404, "text/plain", "Not Found"),
        cancelled("resp_bg"),
        whole("resp_again"),
    ];
    let rig = rig(script, config).await;
    let (envelope, _) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error, "{envelope:?}");
    let requests = rig.server.requests();
    let calls: Vec<(&str, &str)> = requests
        .iter()
        .map(|r| (r.method.as_str(), r.target.as_str()))
        .collect();
    assert_eq!(
        calls[..2],
        [
            ("POST", "/v1/responses"),
            ("GET", "/v1/responses/resp_bg?stream=true&starting_after=2")
        ],
        "not sent again"
    );
    // The response that ran the hosted tool, which no one will read, is cancelled.
    assert_eq!(calls[2..], [("POST", "/v1/responses/resp_bg/cancel")]);
    let message = envelope.error_message.unwrap();
    assert!(
        message.starts_with("the server cannot resume the response")
            && message.contains("a hosted tool had already run"),
        "{message}"
    );
    // The 404 was the resume route's: base_url is not in question.
    assert!(
        !envelope.warnings.iter().any(|w| w.contains("base_url")),
        "{:?}",
        envelope.warnings
    );
}

fn client_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(2),
        jitter: false,
        ..RetryPolicy::default()
    }
}

#[tokio::test]
async fn the_request_sent_again_gets_the_clients_own_retries() {
    // Cut; the request sent again meets a 503 (retried by the client) and then a reset
    // before the first byte (retried too), then the answer.
    let script = vec![
        cut_after(5, "resp_a"),
        Reply::status(503, "text/plain", "overloaded"),
        Reply::reset_before_head(),
        whole("resp_b"),
    ];
    let rig = rig_with_retries(script, config(), client_retries()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Ok, "{envelope:?}");
    assert_eq!(envelope.text.as_deref(), Some(TEXT));
    assert_eq!(
        retries(&deltas).len(),
        1,
        "one stream retry, two HTTP retries"
    );
    assert_eq!(rig.server.requests().len(), 4);
}

#[tokio::test]
async fn giving_up_counts_every_request_sent_the_clients_retries_included() {
    let busy = || Reply::status(503, "text/plain", "overloaded");
    // Cut; the request sent again meets three 503s, the client's three sends of it: four
    // requests, as the notes counted them ("attempt 3 of 3"), not two streams.
    let script = vec![cut_after(5, "resp_a"), busy(), busy(), busy()];
    let rig = rig_with_retries(script, config(), client_retries()).await;
    let (envelope, _) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error, "{envelope:?}");
    let message = envelope.error_message.unwrap();
    assert!(message.contains("gave up after 4 attempts"), "{message}");
    assert_eq!(rig.server.requests().len(), 4);
    // No cut at all: the client's three sends are three attempts, and the error says so.
    let rig = rig_with_retries(vec![busy(), busy(), busy()], config(), client_retries()).await;
    let (envelope, _) = run(&rig, turn("s-1", "t-1")).await;
    let message = envelope.error_message.unwrap();
    assert!(message.contains("gave up after 3 attempts"), "{message}");
    assert_eq!(rig.server.requests().len(), 3);
}

#[tokio::test]
async fn the_request_sent_again_honours_x_should_retry_false() {
    let script = vec![
        cut_after(5, "resp_a"),
        Reply::json(
            503,
            &json!({"error": {"message": "not now", "type": "server_error", "code": "overloaded"}}),
        )
        .header("x-should-retry", "false"),
        whole("resp_b"),
    ];
    let rig = rig_with_retries(script, config(), client_retries()).await;
    let (envelope, _) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert_eq!(envelope.error_code.as_deref(), Some("overloaded"));
    let message = envelope.error_message.unwrap();
    assert!(message.contains("gave up after 2 attempts"), "{message}");
    assert_eq!(rig.server.requests().len(), 2);
}

#[tokio::test]
async fn response_failed_is_the_servers_verdict_and_not_retried() {
    let mut failed = events("resp_a")[..4].to_vec();
    failed.push(
        json!({"type": "response.failed", "sequence_number": 4, "response": {
        "id": "resp_a", "status": "failed", "output": [],
        "error": {"code": "invalid_prompt", "message": "the prompt was flagged"}}}),
    );
    let rig = rig(
        vec![Reply::sse(sse_text(&failed)), whole("resp_b")],
        config(),
    )
    .await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert_eq!(envelope.error_code.as_deref(), Some("invalid_prompt"));
    assert!(retries(&deltas).is_empty());
    assert_eq!(rig.server.requests().len(), 1);
}

#[tokio::test]
async fn a_transient_failure_that_comes_every_time_ends_the_turn_after_the_attempts() {
    // `response.failed` alone (no `error` event before it), five times.
    let mut failed = events("resp_a")[..4].to_vec();
    failed.push(
        json!({"type": "response.failed", "sequence_number": 4, "response": {
        "id": "resp_a", "status": "failed", "output": [],
        "error": {"code": "server_error", "message": "the model crashed"}}}),
    );
    let rig = rig(
        (0..5).map(|_| Reply::sse(sse_text(&failed))).collect(),
        config(),
    )
    .await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert_eq!(envelope.error_code.as_deref(), Some("server_error"));
    assert_eq!(retries(&deltas).len(), 4);
    assert_eq!(rig.server.requests().len(), 5);
    let message = envelope.error_message.unwrap();
    assert!(
        message.contains("the model crashed") && message.ends_with("(gave up after 5 attempts)"),
        "{message}"
    );
    assert!(
        rig.store.load("s-1").await.unwrap().is_none(),
        "nothing stored"
    );
}

#[tokio::test]
async fn a_malformed_event_is_a_warning_and_the_answer_stands() {
    let all = events("resp_a");
    let mut body = sse_text(&all[..4]);
    body.push_str("event: response.output_text.delta\ndata: {not json\n\n");
    body.push_str(&sse_text(&all[4..]));
    let rig = rig(vec![Reply::sse(body)], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Ok);
    assert_eq!(envelope.text.as_deref(), Some(TEXT));
    assert!(retries(&deltas).is_empty());
    assert!(
        envelope
            .warnings
            .iter()
            .any(|w| w.starts_with("1 stream event could not be decoded and was skipped")),
        "{:?}",
        envelope.warnings
    );
}

#[tokio::test]
async fn a_final_event_that_does_not_decode_is_said_and_not_retried() {
    // A server's bug: the same request would get the same bytes, so it is not a cut.
    let mut all = events("resp_a");
    let last = all.len() - 1;
    all[last]["response"]["status"] = json!(7);
    let rig = rig(vec![Reply::sse(sse_text(&all)), whole("resp_b")], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert_eq!(envelope.error_code.as_deref(), Some("invalid_final_event"));
    let message = envelope.error_message.as_deref().unwrap_or_default();
    assert!(
        message.contains("`response.completed` event could not be decoded"),
        "{message}"
    );
    assert_eq!(
        envelope.text.as_deref(),
        Some(TEXT),
        "what streamed is kept"
    );
    assert!(retries(&deltas).is_empty());
    assert_eq!(rig.server.requests().len(), 1);
}

#[tokio::test]
async fn an_error_body_answering_a_stream_with_200_is_the_servers_message() {
    // A proxy that answers a streamed request with its own error, status 200.
    let body = json!({"error": {"message": "upstream quota exhausted", "type": "proxy_error"}});
    let rig = rig(vec![Reply::json(200, &body), whole("resp_b")], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    let message = envelope.error_message.as_deref().unwrap_or_default();
    assert!(message.contains("upstream quota exhausted"), "{message}");
    assert!(retries(&deltas).is_empty());
    assert_eq!(rig.server.requests().len(), 1);
}

#[tokio::test]
async fn an_event_over_the_size_limit_is_a_decode_error_and_not_retried() {
    let all = events("resp_a");
    let huge = format!(
        "event: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"delta\":\"{}\"}}\n\n",
        "x".repeat(17 * 1024 * 1024)
    );
    let reply = Reply::sse_steps(vec![
        Step::Send(sse_text(&all[..4]).into_bytes()),
        Step::Send(huge.into_bytes()),
        Step::Send(sse_text(&all[4..]).into_bytes()),
    ]);
    let rig = rig(vec![reply, whole("resp_b")], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Error);
    assert_eq!(envelope.error_code.as_deref(), Some("decode_error"));
    assert!(retries(&deltas).is_empty());
    assert_eq!(rig.server.requests().len(), 1);
}

#[tokio::test]
async fn a_server_silent_before_the_head_is_recovered() {
    let rig = rig(vec![Reply::stall_before_head(), whole("resp_b")], config()).await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.kind, Kind::Ok, "{envelope:?}");
    assert_eq!(envelope.text.as_deref(), Some(TEXT));
    assert_eq!(retries(&deltas), [(2, 10, 0, false)]);
    assert_eq!(rig.server.requests().len(), 2);
}

#[tokio::test]
async fn without_sequence_numbers_a_background_stream_is_sent_again_not_resumed() {
    let unnumbered = |id: &str| -> Vec<Value> {
        events(id)
            .into_iter()
            .map(|mut event| {
                event.as_object_mut().unwrap().remove("sequence_number");
                event
            })
            .collect()
    };
    let cut = Reply::sse_steps(vec![
        Step::Send(sse_text(&unnumbered("resp_a")[..5]).into_bytes()),
        Step::Reset,
    ]);
    let config = OrchestratorConfig {
        background: true,
        ..config()
    };
    let rig = rig(
        vec![cut, Reply::sse(sse_text(&unnumbered("resp_b")))],
        config,
    )
    .await;
    let (envelope, deltas) = run(&rig, turn("s-1", "t-1")).await;
    assert_eq!(envelope.text.as_deref(), Some(TEXT));
    assert_eq!(retries(&deltas), [(2, 10, 5, false)]);
    let requests = rig.server.requests();
    assert_eq!(
        (requests[0].method.as_str(), requests[1].method.as_str()),
        ("POST", "POST")
    );
}

/// The JSON reply of a plain text answer, as `whole` streams it.
fn whole_json(id: &str) -> Reply {
    let completed = events(id).pop().unwrap();
    Reply::json(200, &completed["response"])
}

#[tokio::test]
async fn a_chain_the_provider_no_longer_holds_is_replayed_from_the_sessions_history() {
    // OpenAI keeps a response 30 days (none with `store: false`, none for another key's
    // project), and some servers keep none at all: a session continued after that was
    // refused on every turn from then on. The turn now replays the history it keeps.
    let expired = json!({"error": {
        "message": "Previous response with id 'resp_1' not found.",
        "type": "invalid_request_error", "param": "previous_response_id",
        "code": "previous_response_not_found"
    }});
    let unsupported = json!({"error": {
        "message": "'previous_response_id' is not supported by this server", "type": "invalid_request_error"
    }});
    for (streamed, refusal) in [(true, expired), (false, unsupported)] {
        let answer = if streamed { whole } else { whole_json };
        let rig = rig(
            vec![
                answer("resp_1"),
                Reply::json(400, &refusal),
                answer("resp_2"),
                answer("resp_3"),
            ],
            config(),
        )
        .await;
        let rig = &rig;
        let ask = |n: &'static str| async move {
            if streamed {
                run(rig, turn("s", n)).await.0
            } else {
                rig.orchestrator.execute(turn("s", n)).await.unwrap()
            }
        };
        assert_eq!(ask("t1").await.kind, Kind::Ok);
        let second = ask("t2").await;
        assert_eq!(second.kind, Kind::Ok, "streamed {streamed}: {second:?}");
        assert_eq!(second.text.as_deref(), Some(TEXT));
        assert!(
            second
                .warnings
                .iter()
                .any(|w| w.contains("no longer holds response resp_1")),
            "{:?}",
            second.warnings
        );
        let third = ask("t3").await;
        assert_eq!(third.kind, Kind::Ok, "streamed {streamed}: {third:?}");

        let sent: Vec<Value> = rig
            .server
            .requests()
            .iter()
            .map(|request| request.json().unwrap())
            .collect();
        assert_eq!(sent.len(), 4, "streamed {streamed}");
        assert_eq!(sent[1]["previous_response_id"], "resp_1");
        // The replay: the first turn's system message, question and answer, then this
        // turn's question; no item carries an id the provider gave it.
        assert_eq!(sent[2].get("previous_response_id"), None);
        let input = sent[2]["input"].as_array().unwrap();
        let roles: Vec<&str> = input
            .iter()
            .map(|item| item["role"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"], "{input:#?}");
        assert!(
            input.iter().all(|item| item.get("id").is_none()),
            "{input:#?}"
        );
        assert!(input[2].to_string().contains(TEXT), "{input:#?}");
        // The reply started a new chain, which the next turn continues.
        assert_eq!(sent[3]["previous_response_id"], "resp_2");
        let stored = rig.store.load("s").await.unwrap().unwrap().value;
        assert_eq!(stored.last_response_id.as_deref(), Some("resp_3"));
    }
}

#[tokio::test]
async fn a_session_answered_without_server_state_is_not_chained_from_later() {
    // A turn through the Chat Completions bridge, then one through /v1/responses (the
    // user switched `api`): the bridge's reply id (`chatcmpl-...`) names nothing the
    // second server holds, and was sent as its previous_response_id.
    use aptix_client::{Capabilities, FakeProvider};
    let store = Arc::new(InMemorySessionStore::new());
    let answer = |id: &str| {
        serde_json::from_value::<aptix_model::wire::Response>(json!({
            "id": id, "status": "completed", "model": "m",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": TEXT}]}]
        }))
        .unwrap()
    };
    let chat = Arc::new(FakeProvider::new().with_capabilities(Capabilities::chat_completions()));
    chat.push_response(answer("chatcmpl-1"));
    let responses = Arc::new(FakeProvider::new());
    responses.push_response(answer("resp_2"));
    let through = |provider: Arc<FakeProvider>| {
        Orchestrator::builder(provider, Arc::clone(&store) as Arc<dyn SessionStore>)
            .build()
            .unwrap()
    };
    let first = through(Arc::clone(&chat))
        .execute(turn("s", "t1"))
        .await
        .unwrap();
    assert_eq!(first.kind, Kind::Ok, "{first:?}");
    let second = through(Arc::clone(&responses))
        .execute(turn("s", "t2"))
        .await
        .unwrap();
    assert_eq!(second.kind, Kind::Ok, "{second:?}");
    assert!(second.warnings.is_empty(), "{:?}", second.warnings);
    let sent = responses.requests();
    assert_eq!(sent[0].previous_response_id, None);
    // The history is replayed instead: the first question and answer, then this one.
    assert_eq!(sent[0].input.items().len(), 4, "{:#?}", sent[0].input);
    let stored = store.load("s").await.unwrap().unwrap().value;
    assert_eq!(stored.last_response_id.as_deref(), Some("resp_2"));
}

#[tokio::test]
async fn a_dropped_turns_background_response_is_cancelled_when_its_session_is_released() {
    // Ctrl-C mid-answer: the future is dropped, and the response would go on generating
    // (and billing) on the server to its end.
    let config = OrchestratorConfig {
        background: true,
        ..config()
    };
    let script = vec![
        Reply::sse_steps(vec![
            Step::Send(sse_text(&events("resp_bg")[..6]).into_bytes()),
            Step::Stall,
        ]),
        cancelled("resp_bg"),
    ];
    let rig = rig(script, config).await;
    let request = turn("s-1", "t-1");
    let (seen, text_came) = tokio::sync::oneshot::channel();
    let mut seen = Some(seen);
    let mut sink = move |delta: &StreamDelta| {
        if matches!(delta, StreamDelta::TextDelta { .. })
            && let Some(seen) = seen.take()
        {
            let _ = seen.send(());
        }
    };
    {
        let running = rig
            .orchestrator
            .execute_streaming(request.clone(), &mut sink);
        tokio::select! {
            ended = running => panic!("the stalled turn ended: {ended:?}"),
            _ = text_came => {}
        }
    }
    assert_eq!(
        rig.server.requests().len(),
        1,
        "nothing cancelled while it ran"
    );
    let settled = rig
        .orchestrator
        .settle_dropped_turn(&request)
        .await
        .unwrap();
    assert!(settled.is_none());
    let requests = rig.server.requests();
    let last = requests.last().unwrap();
    assert_eq!(
        (last.method.as_str(), last.target.as_str()),
        ("POST", "/v1/responses/resp_bg/cancel")
    );
    // Released once: nothing is left to cancel.
    rig.orchestrator.release_session("s-1").await.unwrap();
    assert_eq!(rig.server.requests().len(), 2);
}

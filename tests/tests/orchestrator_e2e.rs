//! End to end through the orchestrator's public API against scripted fake providers:
//! a plain answer, a server tool loop, client tool calls and their continuation,
//! mismatched continuations, idempotent retries, concurrent turns, stateless replay,
//! provider failures, streaming, and a turn dropped mid-flight on the SQLite store.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aptix_client::{Capabilities, ClientError, FakeProvider, ProviderResponse, ResponsesProvider};
use aptix_mapping::StreamDelta;
use aptix_model::contract::{AgentExecuteRequest, AgentExecuteResponse, FinishReason, Kind};
use aptix_model::wire::{CreateResponseRequest, InputItem, Response, StreamEvent};
use aptix_orchestrator::{
    ClientTool, InMemorySessionStore, Orchestrator, OrchestratorConfig, OrchestratorError,
    ServerTool, SessionStore, SqliteSessionStore,
};
use async_trait::async_trait;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------
// Helpers

fn response(id: &str, output: Value, usage: (u64, u64)) -> Response {
    serde_json::from_value(json!({
        "id": id, "object": "response", "status": "completed", "model": "gpt-test",
        "output": output,
        "usage": {"input_tokens": usage.0, "output_tokens": usage.1,
                  "total_tokens": usage.0 + usage.1}
    }))
    .unwrap()
}

fn text_response(id: &str, text: &str) -> Response {
    response(
        id,
        json!([{"type": "message", "id": format!("msg_{id}"), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}]),
        (10, 5),
    )
}

fn call_response(id: &str, calls: &[(&str, &str)]) -> Response {
    let output: Vec<Value> = calls
        .iter()
        .map(|(call_id, name)| {
            json!({"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
                   "name": name, "arguments": "{\"path\":\"src/lib.rs\"}", "status": "completed"})
        })
        .collect();
    response(id, Value::Array(output), (20, 3))
}

fn user_turn(session: &str, turn: &str, instruction: &str) -> AgentExecuteRequest {
    AgentExecuteRequest::from_json_value(
        &json!({"sessionId": session, "turnId": turn, "instruction": instruction}),
    )
    .unwrap()
}

fn continuation(session: &str, turn: &str, results: Value) -> Result<AgentExecuteRequest, String> {
    AgentExecuteRequest::from_json_value(
        &json!({"sessionId": session, "turnId": turn, "toolResults": results}),
    )
    .map_err(|rejection| format!("{rejection:?}"))
}

fn result(call_id: &str) -> Value {
    json!({"toolCallId": call_id, "executionMs": 4, "resultJson": "{\"ok\":true}"})
}

/// A server tool that counts its calls.
struct Lookup {
    calls: AtomicUsize,
}

#[async_trait]
impl ServerTool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Looks a symbol up in the workspace"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}})
    }
    fn usage(&self) -> Option<&str> {
        Some("Use lookup before answering questions about symbols.")
    }
    async fn execute(&self, arguments_json: &str) -> Result<String, String> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        Ok(json!({"call": n, "arguments": arguments_json}).to_string())
    }
}

fn client_tool(name: &str) -> ClientTool {
    ClientTool {
        definition: serde_json::from_value(json!({
            "name": name, "description": "Runs on the client",
            "parameters": {"type": "object", "properties": {}}, "strict": false
        }))
        .unwrap(),
        usage: None,
    }
}

fn orchestrator(
    provider: Arc<dyn ResponsesProvider>,
    store: Arc<dyn SessionStore>,
) -> aptix_orchestrator::OrchestratorBuilder {
    Orchestrator::builder(provider, store)
}

fn items(request: &CreateResponseRequest) -> &[InputItem] {
    request.input.items()
}

fn json_of(request: &CreateResponseRequest) -> Value {
    serde_json::to_value(request).unwrap()
}

fn call_output_ids(request: &CreateResponseRequest) -> Vec<String> {
    items(request)
        .iter()
        .filter_map(|item| match item {
            InputItem::FunctionCallOutput(output) => Some(output.call_id.clone()),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Scenarios

#[tokio::test]
async fn a_plain_answer_maps_to_an_ok_envelope_and_starts_the_session() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(text_response("resp_1", "The parser rejects empty input."));
    let store = Arc::new(InMemorySessionStore::new());
    let orch = orchestrator(fake.clone(), store.clone()).build().unwrap();

    let envelope = orch
        .execute(user_turn("s1", "t1", "Why does parse fail?"))
        .await
        .unwrap();
    assert_eq!(envelope.kind, Kind::Ok);
    assert_eq!(
        envelope.text.as_deref(),
        Some("The parser rejects empty input.")
    );
    assert_eq!(envelope.finish_reason, Some(FinishReason::Stop));
    assert_eq!(envelope.conversation_id.as_deref(), Some("s1"));
    assert_eq!(envelope.turn_id.as_deref(), Some("t1"));
    assert_eq!(envelope.response_continuation_id.as_deref(), Some("resp_1"));
    assert_eq!(envelope.mode.as_deref(), Some("QA"));
    assert_eq!(envelope.usage.total_tokens, 15);

    let sent = json_of(&fake.requests()[0]);
    assert_eq!(sent["input"][0]["role"], "system");
    assert_eq!(sent["input"][1]["role"], "user");
    assert_eq!(
        sent["input"][1]["content"][0]["text"],
        "[MODE: QA]\n\n[INSTRUCTION]\nWhy does parse fail?"
    );
    assert!(sent.get("previous_response_id").is_none());
    let state = store.load("s1").await.unwrap().unwrap();
    assert_eq!(state.value.last_response_id.as_deref(), Some("resp_1"));
    assert!(state.value.pending.is_none());
}

#[tokio::test]
async fn a_server_tool_loop_of_three_iterations_sends_each_output_and_sums_usage() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(call_response("resp_1", &[("call_1", "lookup")]))
        .push_response(call_response("resp_2", &[("call_2", "lookup")]))
        .push_response(call_response("resp_3", &[("call_3", "lookup")]))
        .push_response(text_response("resp_4", "Found it."));
    let lookup = Arc::new(Lookup {
        calls: AtomicUsize::new(0),
    });
    let orch = orchestrator(fake.clone(), Arc::new(InMemorySessionStore::new()))
        .server_tool(lookup.clone())
        .build()
        .unwrap();

    let envelope = orch
        .execute(user_turn("s1", "t1", "Find parse"))
        .await
        .unwrap();
    assert_eq!(envelope.kind, Kind::Ok);
    assert_eq!(envelope.text.as_deref(), Some("Found it."));
    assert!(
        envelope.tool_calls.is_empty(),
        "server calls are not the client's to run"
    );
    assert_eq!(lookup.calls.load(Ordering::SeqCst), 3);
    assert_eq!(envelope.usage.prompt_tokens, 3 * 20 + 10);
    assert_eq!(envelope.usage.completion_tokens, 3 * 3 + 5);

    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    let system = json_of(&requests[0])["input"][0]["content"].clone();
    assert!(
        system
            .to_string()
            .contains("APTIX_TOOL_USAGE_BEGIN name='lookup'"),
        "the usage block is in the system message: {system}"
    );
    for (index, request) in requests.iter().enumerate().skip(1) {
        assert_eq!(
            request.previous_response_id.as_deref(),
            Some(format!("resp_{index}").as_str())
        );
        assert_eq!(call_output_ids(request), [format!("call_{index}")]);
        assert!(
            json_of(request).to_string().contains("[TOOL_RESULTS]"),
            "the seed's block accompanies the outputs"
        );
    }
}

#[tokio::test]
async fn a_client_tool_call_ends_the_turn_and_its_continuation_finishes_it() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(call_response("resp_1", &[("call_1", "apply_patch")]))
        .push_response(text_response("resp_2", "Patched."));
    let store = Arc::new(InMemorySessionStore::new());
    let orch = orchestrator(fake.clone(), store.clone())
        .client_tool(client_tool("apply_patch"))
        .build()
        .unwrap();

    let first = orch.execute(user_turn("s1", "t1", "Fix it")).await.unwrap();
    assert_eq!(first.kind, Kind::ToolOnly);
    assert_eq!(first.finish_reason, Some(FinishReason::ToolUse));
    assert_eq!(first.tool_calls.len(), 1);
    assert_eq!(first.tool_calls[0].call_id, "call_1");
    assert_eq!(
        first.tool_calls[0].arguments_json,
        "{\"path\":\"src/lib.rs\"}"
    );
    let pending = store
        .load("s1")
        .await
        .unwrap()
        .unwrap()
        .value
        .pending
        .unwrap();
    assert_eq!(pending.call_ids(), ["call_1"]);

    let second = orch
        .execute(continuation("s1", "t1", json!([result("call_1")])).unwrap())
        .await
        .unwrap();
    assert_eq!(second.kind, Kind::Ok);
    assert_eq!(second.text.as_deref(), Some("Patched."));
    let sent = &fake.requests()[1];
    assert_eq!(sent.previous_response_id.as_deref(), Some("resp_1"));
    assert_eq!(call_output_ids(sent), ["call_1"]);
    assert!(
        !items(sent)
            .iter()
            .any(|item| matches!(item, InputItem::FunctionCall(_))),
        "never resend the function_call itself to a stateful provider"
    );
    assert!(
        store
            .load("s1")
            .await
            .unwrap()
            .unwrap()
            .value
            .pending
            .is_none()
    );
}

#[tokio::test]
async fn a_turn_with_two_rounds_of_client_tool_calls_is_continued_twice_under_its_id() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(call_response("resp_1", &[("call_1", "apply_patch")]))
        .push_response(call_response("resp_2", &[("call_2", "apply_patch")]))
        .push_response(text_response("resp_3", "Patched twice."));
    let store = Arc::new(InMemorySessionStore::new());
    let orch = orchestrator(fake.clone(), store.clone())
        .client_tool(client_tool("apply_patch"))
        .build()
        .unwrap();
    orch.execute(user_turn("s1", "t1", "Fix it")).await.unwrap();
    let round_one = continuation("s1", "t1", json!([result("call_1")])).unwrap();
    let second = orch.execute(round_one.clone()).await.unwrap();
    assert_eq!(second.tool_calls[0].call_id, "call_2");
    // The first round's results sent again: its stored answer, no model call.
    assert_eq!(orch.execute(round_one.clone()).await.unwrap(), second);
    assert_eq!(fake.calls().len(), 2);

    // The second round under the same turn id is run, not refused nor answered with
    // the first round's envelope.
    let round_two = continuation("s1", "t1", json!([result("call_2")])).unwrap();
    let third = orch.execute(round_two.clone()).await.unwrap();
    assert_eq!(third.text.as_deref(), Some("Patched twice."));
    assert_eq!(call_output_ids(&fake.requests()[2]), ["call_2"]);
    assert_eq!(orch.execute(round_two).await.unwrap(), third);
    assert_eq!(fake.calls().len(), 3);
    // A stale round after the turn ended: no calls are pending, and nothing changes.
    let stale = orch.execute(round_one).await.unwrap_err();
    assert!(
        matches!(stale, OrchestratorError::NothingPending { .. }),
        "{stale:?}"
    );
    assert_eq!(fake.calls().len(), 3);
}

#[tokio::test]
async fn mismatched_continuations_are_rejected_and_change_nothing() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(call_response(
        "resp_1",
        &[("call_a", "edit"), ("call_b", "edit")],
    ))
    .push_response(text_response("resp_2", "Done."));
    let store = Arc::new(InMemorySessionStore::new());
    let orch = orchestrator(fake.clone(), store.clone())
        .client_tool(client_tool("edit"))
        .build()
        .unwrap();
    orch.execute(user_turn("s1", "t1", "Edit two files"))
        .await
        .unwrap();
    let before = store.load("s1").await.unwrap().unwrap();

    let wrong = [
        ("wrong order", json!([result("call_b"), result("call_a")])),
        ("missing id", json!([result("call_a")])),
        (
            "extra id",
            json!([result("call_a"), result("call_b"), result("call_c")]),
        ),
    ];
    for (what, results) in wrong {
        let error = orch
            .execute(continuation("s1", "t1", results).unwrap())
            .await
            .unwrap_err();
        assert!(
            matches!(error, OrchestratorError::ToolResultsMismatch { .. }),
            "{what}: {error:?}"
        );
    }
    // Both a result and an error is rejected by the contract before the orchestrator.
    let both = continuation(
        "s1",
        "t1",
        json!([{"toolCallId": "call_a", "executionMs": 1, "resultJson": "{}", "errorMessage": "x"},
               result("call_b")]),
    )
    .unwrap_err();
    assert!(
        both.contains("conflicting_outcome") || both.contains("ConflictingOutcome"),
        "{both}"
    );
    let error = orch
        .execute_json(
            br#"{"sessionId":"s1","turnId":"t1","toolResults":[
                {"toolCallId":"call_a","executionMs":1,"resultJson":"{}","errorMessage":"x"},
                {"toolCallId":"call_b","executionMs":1,"resultJson":"{}"}]}"#,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, OrchestratorError::InvalidRequest(_)),
        "{error:?}"
    );
    // A continuation for another turn is a mismatch too.
    let error = orch
        .execute(continuation("s1", "t9", json!([result("call_a"), result("call_b")])).unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(error, OrchestratorError::ToolResultsMismatch { .. }),
        "{error:?}"
    );

    let after = store.load("s1").await.unwrap().unwrap();
    assert_eq!(
        after, before,
        "no rejected continuation changed the session"
    );
    assert_eq!(
        fake.calls().len(),
        1,
        "no rejected continuation called the model"
    );

    let done = orch
        .execute(continuation("s1", "t1", json!([result("call_a"), result("call_b")])).unwrap())
        .await
        .unwrap();
    assert_eq!(done.text.as_deref(), Some("Done."));
    assert_eq!(call_output_ids(&fake.requests()[1]), ["call_a", "call_b"]);
}

#[tokio::test]
async fn a_repeated_turn_is_answered_from_the_store_without_a_second_model_call() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(text_response("resp_1", "Once."));
    let orch = orchestrator(fake.clone(), Arc::new(InMemorySessionStore::new()))
        .build()
        .unwrap();
    let first = orch
        .execute(user_turn("s1", "t1", "Say once"))
        .await
        .unwrap();
    let again = orch
        .execute(user_turn("s1", "t1", "Say once"))
        .await
        .unwrap();
    assert_eq!(first, again);
    assert_eq!(fake.calls().len(), 1);

    // A retry may ask for the answer streamed this time: still the stored one.
    let streamed = AgentExecuteRequest::from_json_value(
        &json!({"sessionId": "s1", "turnId": "t1", "instruction": "Say once", "stream": true}),
    )
    .unwrap();
    assert_eq!(orch.execute(streamed).await.unwrap(), first);
    assert_eq!(
        orch.stored_answer(&user_turn("s1", "t1", "Say once"))
            .await
            .unwrap(),
        Some(first)
    );
    assert_eq!(fake.calls().len(), 1);
}

#[tokio::test]
async fn a_turn_id_reused_for_another_request_is_refused_and_changes_nothing() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(text_response("resp_1", "Once."));
    let store = Arc::new(InMemorySessionStore::new());
    let orch = orchestrator(fake.clone(), store.clone()).build().unwrap();
    let first = orch
        .execute(user_turn("s1", "t1", "Say once"))
        .await
        .unwrap();
    let before = store.load("s1").await.unwrap().unwrap();

    let error = orch
        .execute(user_turn("s1", "t1", "Say something else"))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, OrchestratorError::TurnReused { session_id, turn_id }
            if session_id == "s1" && turn_id == "t1"),
        "{error:?}"
    );
    assert!(error.to_string().contains("new turnId"), "{error}");
    let asked = orch
        .stored_answer(&user_turn("s1", "t1", "Say something else"))
        .await
        .unwrap_err();
    assert!(
        matches!(asked, OrchestratorError::TurnReused { .. }),
        "{asked:?}"
    );
    assert_eq!(fake.calls().len(), 1, "no model call for a refused request");
    assert_eq!(store.load("s1").await.unwrap().unwrap(), before);
    // The same request still gets its answer, and the same turn id in another session
    // is another turn.
    assert_eq!(
        orch.execute(user_turn("s1", "t1", "Say once"))
            .await
            .unwrap(),
        first
    );
    assert_eq!(
        orch.stored_answer(&user_turn("s2", "t1", "Say something else"))
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn an_unknown_session_on_a_continuation_is_an_error() {
    let orch = orchestrator(
        Arc::new(FakeProvider::new()),
        Arc::new(InMemorySessionStore::new()),
    )
    .build()
    .unwrap();
    let error = orch
        .execute(continuation("nope", "t1", json!([result("call_1")])).unwrap())
        .await
        .unwrap_err();
    assert!(
        matches!(error, OrchestratorError::UnknownSession { .. }),
        "{error:?}"
    );
}

/// A provider that answers only when told to, so a turn can be held mid-flight.
struct Gate {
    open: tokio::sync::Semaphore,
    entered: tokio::sync::Notify,
    calls: AtomicUsize,
}

#[async_trait]
impl ResponsesProvider for Gate {
    async fn create(
        &self,
        _request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.entered.notify_one();
        // Each permit lets exactly one call through.
        self.open
            .acquire()
            .await
            .map_err(|_| ClientError::config("gate", "closed"))?
            .forget();
        Ok(ProviderResponse::new(
            text_response(&format!("resp_{n}"), "gated"),
            Default::default(),
        ))
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

fn gate() -> Arc<Gate> {
    Arc::new(Gate {
        open: tokio::sync::Semaphore::new(0),
        entered: tokio::sync::Notify::new(),
        calls: AtomicUsize::new(0),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_concurrent_turns_on_one_session_one_proceeds_the_other_is_busy() {
    let provider = gate();
    let store = Arc::new(InMemorySessionStore::new());
    let orch = Arc::new(
        orchestrator(provider.clone(), store.clone())
            .build()
            .unwrap(),
    );

    let first = {
        let orch = Arc::clone(&orch);
        tokio::spawn(async move { orch.execute(user_turn("s1", "t1", "first")).await })
    };
    provider.entered.notified().await;
    let error = orch
        .execute(user_turn("s1", "t2", "second"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, OrchestratorError::SessionBusy { .. }),
        "{error:?}"
    );
    // Another session is not affected.
    provider.open.add_permits(2);
    let other = orch
        .execute(user_turn("s2", "t1", "elsewhere"))
        .await
        .unwrap();
    assert_eq!(other.kind, Kind::Ok);
    let first = tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.kind, Kind::Ok);
    assert_eq!(
        provider.calls.load(Ordering::SeqCst),
        2,
        "the busy turn never called the model"
    );
    let state = store.load("s1").await.unwrap().unwrap();
    assert_eq!(state.version, 1);
}

/// The pairing rules a stateless history must keep: every function_call is answered by
/// exactly one later function_call_output, no output is orphaned, and no reasoning item
/// is last.
fn check_pairing(items: &[InputItem]) {
    let mut open: Vec<String> = Vec::new();
    for item in items {
        match item {
            InputItem::FunctionCall(call) => open.push(call.call_id.clone()),
            InputItem::FunctionCallOutput(output) => {
                let position = open
                    .iter()
                    .position(|id| *id == output.call_id)
                    .unwrap_or_else(|| panic!("orphan output {}", output.call_id));
                open.remove(position);
            }
            _ => {}
        }
    }
    assert!(open.is_empty(), "calls without outputs: {open:?}");
    assert!(!matches!(items.last(), Some(InputItem::Reasoning(_))));
}

#[tokio::test]
async fn stateless_replay_sends_a_valid_history_and_no_previous_response_id() {
    let fake = Arc::new(FakeProvider::new().with_capabilities(Capabilities::stateless_responses()));
    let mut reasoning_then_call = call_response("resp_1", &[("call_1", "lookup")]);
    let reasoning: aptix_model::wire::OutputItem =
        serde_json::from_value(json!({"type": "reasoning", "id": "rs_1", "summary": []})).unwrap();
    reasoning_then_call.output.insert(0, reasoning);
    fake.push_response(reasoning_then_call)
        .push_response(text_response("resp_2", "First answer."))
        .push_response(text_response("resp_3", "Second answer."));
    let orch = orchestrator(fake.clone(), Arc::new(InMemorySessionStore::new()))
        .server_tool(Arc::new(Lookup {
            calls: AtomicUsize::new(0),
        }))
        .build()
        .unwrap();

    orch.execute(user_turn("s1", "t1", "First question"))
        .await
        .unwrap();
    let second = orch
        .execute(user_turn("s1", "t2", "Second question"))
        .await
        .unwrap();
    assert_eq!(second.text.as_deref(), Some("Second answer."));

    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    for request in &requests {
        assert!(request.previous_response_id.is_none());
        check_pairing(items(request));
        let first = json_of(request)["input"][0].clone();
        assert_eq!(
            first["role"], "system",
            "the history starts with the system message"
        );
    }
    let last = json_of(&requests[2]);
    let texts = last["input"].to_string();
    for expected in [
        "First question",
        "First answer.",
        "Second question",
        "call_1",
    ] {
        assert!(
            texts.contains(expected),
            "history lacks {expected}: {texts}"
        );
    }
    assert!(
        !texts.contains("rs_1"),
        "a reasoning item without encrypted content is not replayed"
    );
}

#[tokio::test]
async fn a_provider_failure_is_an_error_envelope_that_stores_nothing() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_error(ClientError::Status {
        status: 429,
        api_error: Some(Box::new(aptix_model::wire::ApiError {
            message: "Rate limit reached".into(),
            kind: Some("tokens".into()),
            param: None,
            code: Some("rate_limit_exceeded".into()),
        })),
        raw_body: None,
        request_id: Some("req_1".into()),
        retry_after: None,
    })
    .push_response(text_response("resp_1", "Second try."));
    let store = Arc::new(InMemorySessionStore::new());
    let orch = orchestrator(fake.clone(), store.clone()).build().unwrap();

    let failed = orch.execute(user_turn("s1", "t1", "Hello")).await.unwrap();
    assert_eq!(failed.kind, Kind::Error);
    assert_eq!(failed.error_code.as_deref(), Some("rate_limit_exceeded"));
    assert_eq!(failed.error_message.as_deref(), Some("Rate limit reached"));
    assert_eq!(failed.request_id.as_deref(), Some("req_1"));
    assert!(store.load("s1").await.unwrap().is_none());

    let retried = orch.execute(user_turn("s1", "t1", "Hello")).await.unwrap();
    assert_eq!(retried.text.as_deref(), Some("Second try."));
}

#[tokio::test]
async fn streaming_passes_deltas_and_ends_in_the_same_envelope() {
    let fixture = aptix_testkit::read_fixture_text("sse_text_deltas.sse");
    let events: Vec<StreamEvent> = fixture
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| StreamEvent::from_json(data).unwrap())
        .collect();
    let final_response = events.last().unwrap().terminal_response().unwrap().clone();

    let streamed = Arc::new(FakeProvider::new());
    streamed.push_events(events);
    let orch = orchestrator(streamed.clone(), Arc::new(InMemorySessionStore::new()))
        .build()
        .unwrap();
    let mut text = String::new();
    let mut sink = |delta: &StreamDelta| {
        if let StreamDelta::TextDelta { text: piece, .. } = delta {
            text.push_str(piece);
        }
    };
    let envelope = orch
        .execute_streaming(user_turn("s1", "t1", "Say hello"), &mut sink)
        .await
        .unwrap();
    assert_eq!(text, "Hello! How can I assist you today?");

    let plain = Arc::new(FakeProvider::new());
    plain.push_response(final_response);
    let orch = orchestrator(plain, Arc::new(InMemorySessionStore::new()))
        .build()
        .unwrap();
    let expected = orch
        .execute(user_turn("s1", "t1", "Say hello"))
        .await
        .unwrap();
    assert_eq!(without_raw(envelope), without_raw(expected));
}

fn without_raw(mut envelope: AgentExecuteResponse) -> AgentExecuteResponse {
    envelope.raw_response_json = None;
    envelope
}

#[tokio::test]
async fn a_turn_dropped_mid_flight_leaves_the_sqlite_store_with_its_last_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let provider = gate();
    {
        let store = Arc::new(SqliteSessionStore::open(&path).unwrap());
        let config = OrchestratorConfig {
            lease_ttl: Duration::from_millis(200),
            ..OrchestratorConfig::default()
        };
        let orch = orchestrator(provider.clone(), store)
            .config(config)
            .build()
            .unwrap();
        provider.open.add_permits(1);
        orch.execute(user_turn("s1", "t1", "committed"))
            .await
            .unwrap();
        // The second turn reaches the model and is dropped there.
        let dropped = tokio::time::timeout(
            Duration::from_millis(100),
            orch.execute(user_turn("s1", "t2", "dropped")),
        )
        .await;
        assert!(dropped.is_err(), "the gated turn was still in flight");
        // The same instance may run the session again at once.
        provider.open.add_permits(1);
        let again = orch
            .execute(user_turn("s1", "t3", "after the drop"))
            .await
            .unwrap();
        assert_eq!(again.kind, Kind::Ok);
    }
    let reopened = SqliteSessionStore::open(&path).unwrap();
    let state = reopened.load("s1").await.unwrap().unwrap();
    assert_eq!(
        state.version, 2,
        "t1 and t3 committed; the dropped t2 did not"
    );
    assert_eq!(state.value.last_response_id.as_deref(), Some("resp_3"));
}

#[test]
fn the_builder_refuses_what_every_turn_would_fail_on_and_says_what() {
    let refused = |configure: &dyn Fn(
        aptix_orchestrator::OrchestratorBuilder,
    ) -> aptix_orchestrator::OrchestratorBuilder|
     -> String {
        let builder = orchestrator(
            Arc::new(FakeProvider::new()),
            Arc::new(InMemorySessionStore::new()),
        );
        match configure(builder).build() {
            Err(OrchestratorError::Config(message)) => message,
            Err(other) => panic!("not a configuration error: {other:?}"),
            Ok(_) => panic!("built"),
        }
    };
    let with = |config: OrchestratorConfig| {
        move |builder: aptix_orchestrator::OrchestratorBuilder| builder.config(config.clone())
    };

    let message = refused(&|builder| builder.client_tool(client_tool("apply patch")));
    assert!(message.contains("\"apply patch\""), "{message}");
    let message = refused(&|builder| {
        builder
            .client_tool(client_tool("apply_patch"))
            .client_tool(client_tool("apply_patch"))
    });
    assert!(message.contains("configured twice"), "{message}");

    let mut config = OrchestratorConfig::default();
    config.model.temperature = Some(3.0);
    let message = refused(&with(config));
    assert!(message.contains("temperature"), "{message}");
    let mut config = OrchestratorConfig::default();
    config.model.model = "  ".into();
    assert!(refused(&with(config)).contains("model"));
    let mut config = OrchestratorConfig::default();
    config.model.max_output_tokens = Some(4);
    assert!(refused(&with(config)).contains("max_output_tokens"));
    let config = OrchestratorConfig {
        max_model_calls_per_turn: 0,
        ..OrchestratorConfig::default()
    };
    assert!(refused(&with(config)).contains("max_model_calls_per_turn"));
    let config = OrchestratorConfig {
        compact_threshold: f64::NAN,
        ..OrchestratorConfig::default()
    };
    assert!(refused(&with(config)).contains("compact_threshold"));
    let config = OrchestratorConfig {
        lease_ttl: Duration::ZERO,
        ..OrchestratorConfig::default()
    };
    assert!(refused(&with(config)).contains("lease_ttl"));

    // The defaults and a sound configuration build.
    let ok = orchestrator(
        Arc::new(FakeProvider::new()),
        Arc::new(InMemorySessionStore::new()),
    )
    .client_tool(client_tool("apply_patch"))
    .build();
    assert!(ok.is_ok());
}

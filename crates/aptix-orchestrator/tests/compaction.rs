//! Long sessions: a session driven past the compaction threshold compacts once (a
//! summary call on a server without `/responses/compact`, the endpoint on one with it),
//! the next request fits the window, and no call is separated from its output; a
//! `context_length_exceeded` answer compacts once and retries once, and a second one
//! fails with a message that says so.
//!
//! The provider here simulates a model with a small window: it counts each request's
//! input with the o200k counter, rejects one over the window as OpenAI does, and calls a
//! server tool on every other turn, so the history holds call/output pairs.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use aptix_client::{Capabilities, ClientError, ProviderResponse, ReplyMeta, ResponsesProvider};
use aptix_model::contract::{AgentExecuteRequest, AgentExecuteResponse, Kind};
use aptix_model::wire::{
    ApiError, CompactRequest, CompactResponse, ContentPart, CreateResponseRequest, Input,
    InputItem, MessageContent, Response, Role,
};
use aptix_orchestrator::{
    CompactionMethod, CompactionReason, InMemorySessionStore, Orchestrator, OrchestratorConfig,
    ServerTool, SessionState, SessionStore,
};
use aptix_rag::TokenCounter;
use aptix_request::normalize_history;
use async_trait::async_trait;
use serde_json::{Value, json};

const WINDOW: u64 = 6_000;

/// What the simulated provider received.
#[derive(Debug, Clone, PartialEq)]
enum Call {
    Turn(CreateResponseRequest),
    Summary(CreateResponseRequest),
    Compact(CompactRequest),
}

struct Sim {
    capabilities: Capabilities,
    calls: Mutex<Vec<Call>>,
    /// Replies forced before the simulation's own: `true` answers
    /// `context_length_exceeded` whatever the size.
    forced_overflows: Mutex<VecDeque<bool>>,
    /// What each response's conversation holds, for chained requests: the server keeps
    /// the context of a stored response.
    contexts: Mutex<std::collections::HashMap<String, u64>>,
    counter: TokenCounter,
    /// Whether `/responses/compact` exists (a server may speak `/v1/responses` without
    /// it, and answer 404).
    compact_route: bool,
    /// Whether an overflow is told in a `failed` response (a 200; streamed, an `error`
    /// event and `response.failed`) rather than by a 400.
    overflow_in_reply: bool,
}

impl Sim {
    fn new(capabilities: Capabilities) -> Sim {
        Sim {
            capabilities,
            calls: Mutex::new(Vec::new()),
            forced_overflows: Mutex::new(VecDeque::new()),
            contexts: Mutex::new(std::collections::HashMap::new()),
            counter: TokenCounter::o200k().unwrap(),
            compact_route: true,
            overflow_in_reply: false,
        }
    }

    /// The overflow of a request of `tokens`, as this provider tells it.
    fn overflow(&self, tokens: u64, model: &str) -> Result<ProviderResponse, ClientError> {
        if !self.overflow_in_reply {
            return Err(overflow(tokens));
        }
        let response: Response = serde_json::from_value(json!({
            "id": "resp_overflow", "status": "failed", "model": model, "output": [],
            "error": {
                "code": "context_length_exceeded",
                "message": format!("Your input exceeds the context window of this model ({tokens} tokens).")
            }
        }))
        .unwrap();
        Ok(ProviderResponse::new(response, ReplyMeta::synthetic()))
    }

    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }

    /// The request's input as the model sees it: its own items and tools, plus the
    /// stored conversation it continues.
    fn tokens(&self, request: &CreateResponseRequest) -> u64 {
        let json = serde_json::to_string(&request.input).unwrap()
            + &serde_json::to_string(&request.tools).unwrap();
        let chained = request
            .previous_response_id
            .as_ref()
            .map_or(0, |id| self.contexts.lock().unwrap()[id]);
        chained + self.counter.count(&json) as u64
    }
}

fn overflow(tokens: u64) -> ClientError {
    let error: ApiError = serde_json::from_value(json!({
        "message": format!("Your input exceeds the context window of this model ({tokens} tokens)."),
        "type": "invalid_request_error",
        "param": "input",
        "code": "context_length_exceeded"
    }))
    .unwrap();
    ClientError::Status {
        status: 400,
        api_error: Some(Box::new(error)),
        raw_body: None,
        request_id: None,
        retry_after: None,
    }
}

fn text_of(item: &InputItem) -> String {
    match item {
        InputItem::Message(message) | InputItem::EasyMessage(message) => match &message.content {
            MessageContent::Text(text) => text.clone(),
            MessageContent::Parts(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    ContentPart::InputText { text } => Some(text.clone()),
                    ContentPart::OutputText(text) => Some(text.text.clone()),
                    _ => None,
                })
                .collect(),
        },
        _ => String::new(),
    }
}

fn is_summary_call(request: &CreateResponseRequest) -> bool {
    request
        .input
        .items()
        .first()
        .is_some_and(|item| text_of(item).contains("handover note"))
}

/// About 250 tokens of answer.
fn long_answer(n: usize) -> String {
    format!("Answer {n}: ") + &"the session keeps going and the context grows. ".repeat(25)
}

#[async_trait]
impl ResponsesProvider for Sim {
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        let summary = is_summary_call(request);
        let n = {
            let mut calls = self.calls.lock().unwrap();
            calls.push(if summary {
                Call::Summary(request.clone())
            } else {
                Call::Turn(request.clone())
            });
            calls.len()
        };
        let tokens = self.tokens(request);
        if !summary && self.forced_overflows.lock().unwrap().pop_front() == Some(true) {
            return self.overflow(tokens, &request.model);
        }
        if tokens > WINDOW {
            return self.overflow(tokens, &request.model);
        }
        let last_is_user = matches!(
            request.input.items().last(),
            Some(InputItem::Message(m)) if m.role == Role::User
        );
        let output = if summary {
            json!([{"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "The user asked many questions; all were answered."}]}])
        } else if last_is_user && n % 2 == 0 {
            json!([{"type": "function_call", "id": format!("fc_{n}"), "call_id": format!("call_{n}"),
                    "name": "lookup", "arguments": "{}"}])
        } else {
            json!([{"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": long_answer(n)}]}])
        };
        self.contexts
            .lock()
            .unwrap()
            .insert(format!("resp_{n}"), tokens + 250);
        let response: Response = serde_json::from_value(json!({
            "id": format!("resp_{n}"), "status": "completed", "model": request.model,
            "output": output,
            "usage": {"input_tokens": tokens, "output_tokens": 250, "total_tokens": tokens + 250}
        }))
        .unwrap();
        Ok(ProviderResponse::new(response, ReplyMeta::synthetic()))
    }

    async fn compact(&self, request: &CompactRequest) -> Result<CompactResponse, ClientError> {
        self.calls
            .lock()
            .unwrap()
            .push(Call::Compact(request.clone()));
        if !self.compact_route {
            return Err(ClientError::Status {
                status: 404,
                api_error: None,
                raw_body: Some("Not Found".into()),
                request_id: None,
                retry_after: None,
            });
        }
        Ok(serde_json::from_value(json!({
            "id": "cmp_resp", "object": "response.compaction", "created_at": 1,
            "output": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "earlier questions"}]},
                {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque-summary"}
            ],
            "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
        }))
        .unwrap())
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }
}

/// A server tool whose output is a few hundred tokens.
struct Lookup;

#[async_trait]
impl ServerTool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Looks something up."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    async fn execute(&self, _arguments_json: &str) -> Result<String, String> {
        Ok(json!({"found": "a line of the workspace that matters. ".repeat(20)}).to_string())
    }
}

struct Rig {
    sim: Arc<Sim>,
    store: Arc<InMemorySessionStore>,
    orchestrator: Orchestrator,
}

fn rig(capabilities: Capabilities) -> Rig {
    rig_with(Sim::new(capabilities), WINDOW)
}

/// A rig on `sim`, whose context window is configured as `window` (the model's real
/// one is [`WINDOW`]).
fn rig_with(sim: Sim, window: u64) -> Rig {
    let sim = Arc::new(sim);
    let store = Arc::new(InMemorySessionStore::new());
    let orchestrator = Orchestrator::builder(
        Arc::clone(&sim) as Arc<dyn ResponsesProvider>,
        Arc::clone(&store) as Arc<dyn SessionStore>,
    )
    .server_tool(Arc::new(Lookup))
    .config(OrchestratorConfig {
        context_window: Some(window),
        ..OrchestratorConfig::default()
    })
    .build()
    .unwrap();
    Rig {
        sim,
        store,
        orchestrator,
    }
}

fn turn(n: usize) -> AgentExecuteRequest {
    AgentExecuteRequest::from_json_value(&json!({
        "sessionId": "long", "turnId": format!("t{n}"),
        "instruction": format!("Question {n}: what happens next in this long session?")
    }))
    .unwrap()
}

async fn session(rig: &Rig) -> SessionState {
    rig.store.load("long").await.unwrap().unwrap().value
}

/// The session with the items its compactions replaced.
async fn whole_session(rig: &Rig) -> SessionState {
    rig.store.load_full("long").await.unwrap().unwrap().value
}

/// Every call in `items` has exactly one output after it, and nothing needs repair.
fn assert_paired(items: &[InputItem]) {
    let (_, repairs) = normalize_history(items.to_vec(), &[]);
    assert_eq!(repairs, [], "the request needed repairs: {items:#?}");
}

/// Runs turns until the first compaction; returns the envelopes.
async fn until_compacted(rig: &Rig) -> Vec<AgentExecuteResponse> {
    let mut envelopes = Vec::new();
    for n in 1..=40 {
        let envelope = rig.orchestrator.execute(turn(n)).await.unwrap();
        assert_eq!(envelope.kind, Kind::Ok, "turn {n}: {envelope:?}");
        envelopes.push(envelope);
        if !session(rig).await.compactions.is_empty() {
            return envelopes;
        }
    }
    panic!("40 turns never reached the compaction threshold");
}

fn turn_requests(calls: &[Call]) -> Vec<CreateResponseRequest> {
    calls
        .iter()
        .filter_map(|call| match call {
            Call::Turn(request) => Some(request.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_stateless_session_past_the_threshold_is_summarised_once_and_fits_again() {
    let rig = rig(Capabilities::stateless_responses());
    let envelopes = until_compacted(&rig).await;
    let calls = rig.sim.calls();
    let summaries = calls
        .iter()
        .filter(|call| matches!(call, Call::Summary(_)))
        .count();
    assert_eq!(summaries, 1, "one summary call");
    assert!(
        !calls.iter().any(|call| matches!(call, Call::Compact(_))),
        "no compact endpoint on this server"
    );
    // The turn that compacted says so.
    let last = envelopes.last().unwrap();
    assert!(
        last.warnings
            .iter()
            .any(|w| w.starts_with("the session was compacted")),
        "{:?}",
        last.warnings
    );
    // Every request was accepted (none overflowed), and every one pairs its calls.
    for request in turn_requests(&calls) {
        assert!(rig.sim.tokens(&request) <= WINDOW);
        assert_paired(request.input.items());
    }
    // The request after the summary: system message, the note, recent items, the turn.
    let summary_at = calls
        .iter()
        .position(|call| matches!(call, Call::Summary(_)))
        .unwrap();
    let Call::Turn(next) = &calls[summary_at + 1] else {
        panic!("the turn's request follows the summary");
    };
    let items = next.input.items();
    assert!(matches!(&items[0], InputItem::Message(m) if m.role == Role::System));
    assert!(text_of(&items[1]).starts_with("[HANDOVER NOTE]"));
    assert!(text_of(&items[1]).contains("all were answered"));
    let Call::Turn(before) = &calls[summary_at - 1] else {
        panic!("a turn came before");
    };
    assert!(rig.sim.tokens(next) < rig.sim.tokens(before));
    assert!(rig.sim.tokens(next) < WINDOW * 85 / 100);
    // What a turn loads leaves the replaced items out; the record keeps them, and the
    // session goes on.
    let loaded = session(&rig).await;
    assert!(
        loaded
            .compactions
            .iter()
            .all(|record| record.replaced.is_empty() && record.replacement.is_empty())
    );
    let state = whole_session(&rig).await;
    assert_eq!(state.history, loaded.history);
    let record = &state.compactions[0];
    assert_eq!(record.reason, CompactionReason::Threshold);
    assert_eq!(record.method, CompactionMethod::Summary);
    assert!(record.tokens_after < record.tokens_before);
    assert!(
        record
            .replaced
            .iter()
            .any(|item| text_of(item).contains("Question 1:"))
    );
    assert_paired(&state.history);
    assert!(
        state
            .history
            .iter()
            .any(|item| matches!(item, InputItem::FunctionCall(_))),
        "recent tool calls are kept verbatim"
    );
    // What a person is shown (an editor's session/load) is the conversation as it
    // happened: every question, no handover note.
    let conversation = state.conversation();
    for n in 1..=envelopes.len() {
        let question = format!("Question {n}:");
        assert!(
            conversation
                .iter()
                .any(|item| text_of(item).contains(&question)),
            "{question} is in the conversation"
        );
    }
    assert!(
        !conversation
            .iter()
            .any(|item| text_of(item).starts_with("[HANDOVER NOTE]"))
    );
    let n = envelopes.len() + 1;
    let after = rig.orchestrator.execute(turn(n)).await.unwrap();
    assert_eq!(after.kind, Kind::Ok);
    assert_eq!(
        session(&rig).await.compactions.len(),
        1,
        "once, not every turn"
    );
}

#[tokio::test]
async fn a_stateful_session_uses_the_compact_endpoint_and_starts_a_new_chain() {
    let rig = rig(Capabilities::openai_responses());
    until_compacted(&rig).await;
    let calls = rig.sim.calls();
    let compacts: Vec<_> = calls
        .iter()
        .filter_map(|call| match call {
            Call::Compact(request) => Some(request),
            _ => None,
        })
        .collect();
    assert_eq!(compacts.len(), 1);
    assert!(!calls.iter().any(|call| matches!(call, Call::Summary(_))));
    let compact_at = calls
        .iter()
        .position(|call| matches!(call, Call::Compact(_)))
        .unwrap();
    // Before: chained. After: the compacted items replayed, no previous_response_id.
    let Call::Turn(before) = &calls[compact_at - 1] else {
        panic!("a turn came before");
    };
    assert!(before.previous_response_id.is_some());
    let Call::Turn(next) = &calls[compact_at + 1] else {
        panic!("the turn follows the compaction");
    };
    assert_eq!(next.previous_response_id, None);
    let items = next.input.items();
    assert!(matches!(&items[0], InputItem::Message(m) if m.role == Role::System));
    assert!(
        items
            .iter()
            .any(|item| matches!(item, InputItem::Other(raw) if raw["type"] == "compaction"))
    );
    assert_paired(items);
    // The compact request was the history up to the cut, system message first.
    let Some(Input::Items(sent)) = &compacts[0].input else {
        panic!("the history goes as items");
    };
    assert!(matches!(&sent[0], InputItem::Message(m) if m.role == Role::System));
    assert_paired(sent);
    // The next turn chains from the new reply again.
    let envelopes = rig.orchestrator.execute(turn(99)).await.unwrap();
    assert_eq!(envelopes.kind, Kind::Ok);
    let Some(Call::Turn(chained)) = rig.sim.calls().last().cloned() else {
        panic!("a turn");
    };
    assert!(chained.previous_response_id.is_some());
}

#[tokio::test]
async fn a_server_without_a_compaction_route_gets_a_summary_and_is_not_asked_again() {
    let mut sim = Sim::new(Capabilities::openai_responses());
    sim.compact_route = false;
    let rig = rig_with(sim, WINDOW);
    until_compacted(&rig).await;
    let state = session(&rig).await;
    assert_eq!(state.compactions[0].method, CompactionMethod::Summary);
    // Long after: every turn still answers, and the missing route was asked once.
    for n in 100..130 {
        let envelope = rig.orchestrator.execute(turn(n)).await.unwrap();
        assert_eq!(envelope.kind, Kind::Ok, "turn {n}: {envelope:?}");
    }
    let calls = rig.sim.calls();
    assert!(session(&rig).await.compactions.len() >= 2);
    assert_eq!(
        calls
            .iter()
            .filter(|call| matches!(call, Call::Compact(_)))
            .count(),
        1
    );
}

#[tokio::test]
async fn a_window_configured_above_the_model_s_is_learnt_from_its_overflow() {
    // Configured at 23,600 tokens, the model takes 6,000: the threshold is never met,
    // and a quarter of the configured window (what a compaction keeps verbatim) is
    // nearly all of the real one. The overflow compacts to what the overflowing
    // request shows of the window instead, and what its message says of the window is
    // kept: later compactions come at the threshold, before the provider refuses a
    // request (each cycle used to cost a failed call).
    let rig = rig_with(Sim::new(Capabilities::stateless_responses()), 23_600);
    for n in 1..=30 {
        let envelope = rig.orchestrator.execute(turn(n)).await.unwrap();
        assert_eq!(envelope.kind, Kind::Ok, "turn {n}: {envelope:?}");
    }
    let state = session(&rig).await;
    let reasons: Vec<CompactionReason> = state
        .compactions
        .iter()
        .map(|record| record.reason)
        .collect();
    assert_eq!(
        reasons.first(),
        Some(&CompactionReason::Overflow),
        "{reasons:?}"
    );
    assert!(
        reasons.len() > 1
            && reasons[1..]
                .iter()
                .all(|reason| *reason == CompactionReason::Threshold),
        "{reasons:?}"
    );
    assert!(
        state
            .compactions
            .iter()
            .all(|record| record.tokens_after < record.tokens_before),
        "{:?}",
        state
            .compactions
            .iter()
            .map(|record| (record.tokens_before, record.tokens_after))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn an_overflow_compacts_once_and_retries_once_then_fails_clearly() {
    let rig = rig(Capabilities::stateless_responses());
    for n in 1..=3 {
        let envelope = rig.orchestrator.execute(turn(n)).await.unwrap();
        assert_eq!(envelope.kind, Kind::Ok);
    }
    let before = rig.sim.calls().len();
    // Under the threshold, but the provider says the context is too long once.
    rig.sim.forced_overflows.lock().unwrap().push_back(true);
    let envelope = rig.orchestrator.execute(turn(4)).await.unwrap();
    assert_eq!(envelope.kind, Kind::Ok, "{envelope:?}");
    let calls = &rig.sim.calls()[before..];
    // The rejected call, one summary, the retry (and a tool round if the model asked).
    assert!(matches!(calls[0], Call::Turn(_)));
    assert!(matches!(calls[1], Call::Summary(_)));
    assert!(matches!(calls[2], Call::Turn(_)));
    assert_eq!(
        calls
            .iter()
            .filter(|call| matches!(call, Call::Summary(_)))
            .count(),
        1
    );
    let state = session(&rig).await;
    assert_eq!(state.compactions.len(), 1);
    assert_eq!(state.compactions[0].reason, CompactionReason::Overflow);

    // Twice in a row: one compaction, one retry, then a clear failure; nothing stored.
    let version = rig.store.load("long").await.unwrap().unwrap().version;
    let before = rig.sim.calls().len();
    rig.sim
        .forced_overflows
        .lock()
        .unwrap()
        .extend([true, true, true]);
    let failed = rig.orchestrator.execute(turn(5)).await.unwrap();
    assert_eq!(failed.kind, Kind::Error);
    // The compaction went with the turn, and the warnings say so, not that it was made.
    assert!(
        !failed
            .warnings
            .iter()
            .any(|w| w.starts_with("the session was compacted:")),
        "{:?}",
        failed.warnings
    );
    assert!(
        failed
            .warnings
            .iter()
            .any(|w| w.contains("the compaction was not kept")),
        "{:?}",
        failed.warnings
    );
    assert_eq!(
        failed.error_code.as_deref(),
        Some("context_length_exceeded")
    );
    let message = failed.error_message.unwrap();
    assert!(
        message.contains("the context is too long for the model even after compacting"),
        "{message}"
    );
    let calls = &rig.sim.calls()[before..];
    assert_eq!(
        calls.len(),
        3,
        "the call, one summary, one retry: {calls:?}"
    );
    assert!(matches!(calls[1], Call::Summary(_)));
    assert_eq!(
        rig.store.load("long").await.unwrap().unwrap().version,
        version,
        "a failed turn stores nothing"
    );
}

#[tokio::test]
async fn an_overflow_told_in_the_reply_compacts_as_one_told_by_the_status() {
    // Some servers answer an overflow with 200: a `failed` response, or in the stream
    // an `error` event and `response.failed`. Left as the turn's answer, the session
    // failed on every turn after, never compacted.
    for streamed in [false, true] {
        let mut sim = Sim::new(Capabilities::stateless_responses());
        sim.overflow_in_reply = true;
        let rig = rig_with(sim, WINDOW);
        let run = |n| {
            let orchestrator = &rig.orchestrator;
            async move {
                if streamed {
                    let mut sink = |_: &aptix_mapping::StreamDelta| {};
                    orchestrator.execute_streaming(turn(n), &mut sink).await
                } else {
                    orchestrator.execute(turn(n)).await
                }
            }
        };
        for n in 1..=3 {
            assert_eq!(run(n).await.unwrap().kind, Kind::Ok);
        }
        let before = rig.sim.calls().len();
        rig.sim.forced_overflows.lock().unwrap().push_back(true);
        let envelope = run(4).await.unwrap();
        assert_eq!(envelope.kind, Kind::Ok, "streamed {streamed}: {envelope:?}");
        let calls = &rig.sim.calls()[before..];
        assert!(matches!(calls[0], Call::Turn(_)), "{calls:?}");
        assert!(matches!(calls[1], Call::Summary(_)), "{calls:?}");
        assert!(matches!(calls[2], Call::Turn(_)), "{calls:?}");
        let state = session(&rig).await;
        assert_eq!(state.compactions.len(), 1, "streamed {streamed}");
        assert_eq!(state.compactions[0].reason, CompactionReason::Overflow);

        // A session grown past the model's window with every overflow told this way
        // goes on turn after turn.
        for n in 5..=30 {
            let envelope = run(n).await.unwrap();
            assert_eq!(
                envelope.kind,
                Kind::Ok,
                "streamed {streamed}, turn {n}: {envelope:?}"
            );
        }
    }
}

#[tokio::test]
async fn a_short_conversation_under_a_long_turn_keeps_its_latest_exchange() {
    // Two short turns fit a quarter of the window; a third whose own instruction is
    // long passes the threshold. The older exchange is compacted, the latest kept
    // verbatim (compacting it all kept no recent item).
    let rig = rig(Capabilities::stateless_responses());
    for n in 1..=2 {
        assert_eq!(
            rig.orchestrator.execute(turn(n)).await.unwrap().kind,
            Kind::Ok
        );
    }
    let long = AgentExecuteRequest::from_json_value(&json!({
        "sessionId": "long", "turnId": "t3",
        "instruction": format!("Question 3: {}", "summarise this long note please. ".repeat(700))
    }))
    .unwrap();
    let envelope = rig.orchestrator.execute(long).await.unwrap();
    assert_eq!(envelope.kind, Kind::Ok, "{envelope:?}");
    let state = whole_session(&rig).await;
    assert_eq!(state.compactions.len(), 1, "{:?}", envelope.warnings);
    let record = &state.compactions[0];
    assert!(record.kept_items > 0, "{record:?}");
    // The second question is still in the history as it was asked.
    assert!(
        state
            .history
            .iter()
            .any(|item| text_of(item).contains("Question 2:")),
        "{:#?}",
        state.history
    );
    assert!(
        !record
            .replaced
            .iter()
            .any(|item| text_of(item).contains("Question 2:")),
        "{record:?}"
    );
}

#[tokio::test]
async fn sessions_stored_before_compaction_existed_still_load() {
    let mut state =
        serde_json::to_value(SessionState::new("old", "QA", Default::default())).unwrap();
    let object = state.as_object_mut().unwrap();
    object.remove("compactions");
    object.remove("context");
    let loaded: SessionState = serde_json::from_value(state).unwrap();
    assert!(loaded.compactions.is_empty());
    assert_eq!(loaded.context, None);
}

#[test]
fn a_threshold_outside_zero_to_one_is_refused() {
    for threshold in [0.0, -0.5, 1.5, f64::NAN] {
        let built = Orchestrator::builder(
            Arc::new(Sim::new(Capabilities::default())),
            Arc::new(InMemorySessionStore::new()),
        )
        .config(OrchestratorConfig {
            compact_threshold: threshold,
            ..OrchestratorConfig::default()
        })
        .build();
        assert!(built.is_err(), "{threshold} was accepted");
    }
}

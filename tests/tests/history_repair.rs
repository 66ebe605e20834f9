//! The one normalisation at the send boundary, through the orchestrator: a stateless
//! session whose stored history is broken (a turn cut short left a call unanswered, an
//! older version stored a stray output, a reasoning item lost its follower) still sends
//! a history the API accepts, and the envelope says what was repaired; and a reasoning
//! model's items are replayed encrypted, without their server ids.

use std::sync::Arc;

use aptix_client::{Capabilities, FakeProvider};
use aptix_model::contract::{AgentExecuteRequest, AgentExecuteResponse};
use aptix_model::wire::{
    ContentPart, FunctionCall, FunctionCallOutput, FunctionOutput, Input, InputItem, InputMessage,
    ReasoningItem, Response, ResponseStatus, Role,
};
use aptix_orchestrator::{
    InMemorySessionStore, ModelSettings, Orchestrator, OrchestratorConfig, Scenario, SessionState,
    SessionStore, StoredTurn,
};
use aptix_request::ABORTED_OUTPUT;
use serde_json::json;

fn call(id: &str) -> InputItem {
    InputItem::FunctionCall(FunctionCall {
        id: None,
        call_id: id.into(),
        name: "read_file".into(),
        arguments: "{}".into(),
        status: None,
    })
}

fn user(text: &str) -> InputItem {
    InputItem::Message(InputMessage::new(
        Role::User,
        vec![ContentPart::input_text(text)],
    ))
}

#[tokio::test]
async fn a_broken_stored_history_is_sent_repaired_with_warnings() {
    let store = Arc::new(InMemorySessionStore::new());
    let mut state = SessionState::new(
        "s1",
        "QA",
        ModelSettings {
            model: "m".into(),
            ..ModelSettings::default()
        },
    );
    state.last_response_id = Some("resp_0".into());
    state.history = vec![
        user("first"),
        call("call_cut"),
        InputItem::FunctionCallOutput(FunctionCallOutput::text("call_ghost", "{}")),
        user("second"),
        InputItem::Reasoning(ReasoningItem {
            id: None,
            summary: Vec::new(),
            content: None,
            encrypted_content: Some("opaque".into()),
            status: None,
        }),
    ];
    let earlier = StoredTurn {
        turn_id: "t0".into(),
        scenario: Scenario::UserTurn,
        envelope: AgentExecuteResponse::default(),
        request_digest: None,
    };
    store
        .commit(state.clone(), None, earlier.clone(), "test-holder")
        .await
        .unwrap();

    let provider =
        Arc::new(FakeProvider::new().with_capabilities(Capabilities::stateless_responses()));
    let mut reply = Response::with_id("resp_1");
    reply.status = Some(ResponseStatus::Completed);
    provider.push_response(reply);
    let orchestrator = Orchestrator::builder(provider.clone(), store)
        .config(OrchestratorConfig::default())
        .build()
        .unwrap();
    let envelope = orchestrator
        .execute(
            AgentExecuteRequest::from_json_value(
                &json!({"sessionId": "s1", "turnId": "t1", "instruction": "go on"}),
            )
            .unwrap(),
        )
        .await
        .unwrap();

    let sent = provider.requests().pop().unwrap();
    let Input::Items(items) = &sent.input else {
        panic!("{:?}", sent.input)
    };
    // The cut call is answered as aborted right after it; the stray output and the
    // dangling reasoning item are gone; the new user message follows.
    let position = items
        .iter()
        .position(|item| *item == call("call_cut"))
        .unwrap();
    assert!(matches!(
        &items[position + 1],
        InputItem::FunctionCallOutput(output)
            if output.call_id == "call_cut" && output.output == FunctionOutput::Text(ABORTED_OUTPUT.into())
    ));
    assert!(!items.iter().any(|item| matches!(
        item,
        InputItem::FunctionCallOutput(output) if output.call_id == "call_ghost"
    )));
    assert!(
        !items
            .iter()
            .any(|item| matches!(item, InputItem::Reasoning(_)))
    );
    for expected in [
        "call_cut was never answered",
        "unknown call call_ghost",
        "reasoning item",
    ] {
        assert!(
            envelope
                .warnings
                .iter()
                .any(|warning| warning.contains(expected)),
            "no warning about {expected}: {:?}",
            envelope.warnings
        );
    }
}

/// Stateless replay with a reasoning model: every request asks for the encrypted
/// reasoning (`store: false`, `include: ["reasoning.encrypted_content"]`), and the next
/// request replays the reasoning item with its encrypted content and without the server
/// item id (which names nothing a `store: false` provider kept).
#[tokio::test]
async fn reasoning_is_replayed_encrypted_and_without_its_server_id() {
    let provider =
        Arc::new(FakeProvider::new().with_capabilities(Capabilities::stateless_responses()));
    let first: Response = serde_json::from_value(json!({
        "id": "resp_1", "status": "completed", "model": "o4-mini",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA-opaque"},
            {"type": "message", "id": "msg_1", "role": "assistant",
             "content": [{"type": "output_text", "text": "Done."}]}
        ]
    }))
    .unwrap();
    let mut second = Response::with_id("resp_2");
    second.status = Some(ResponseStatus::Completed);
    provider.push_response(first).push_response(second);
    let mut config = OrchestratorConfig::default();
    config.model.reasoning_effort = Some("low".into());
    let orchestrator =
        Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
            .config(config)
            .build()
            .unwrap();
    for turn in ["t1", "t2"] {
        orchestrator
            .execute(
                AgentExecuteRequest::from_json_value(
                    &json!({"sessionId": "s1", "turnId": turn, "instruction": "think"}),
                )
                .unwrap(),
            )
            .await
            .unwrap();
    }
    let requests = provider.requests();
    for request in &requests {
        assert_eq!(request.store, Some(false));
        assert_eq!(
            request.include.as_deref(),
            Some(&["reasoning.encrypted_content".to_owned()][..])
        );
    }
    let Input::Items(items) = &requests[1].input else {
        panic!("{:?}", requests[1].input)
    };
    let reasoning = items
        .iter()
        .find_map(|item| match item {
            InputItem::Reasoning(reasoning) => Some(reasoning),
            _ => None,
        })
        .expect("the reasoning item is replayed");
    assert_eq!(reasoning.id, None);
    assert_eq!(reasoning.encrypted_content.as_deref(), Some("gAAAA-opaque"));
}

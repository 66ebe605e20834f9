//! Every entry validates: a request built in code goes through the same AGN-034
//! validator as a JSON body, and an invalid one reaches neither the model nor the store.

use std::sync::Arc;

use aptix_client::FakeProvider;
use aptix_model::contract::{
    AgentExecuteRequest, Instruction, ResultJson, SessionId, ToolCallId, ToolContinuationRequest,
    ToolOutcome, ToolResult, TurnId, UserTurnRequest, ViolationCode,
};
use aptix_model::wire::Response;
use aptix_orchestrator::{InMemorySessionStore, Orchestrator, OrchestratorError, SessionStore};

fn user_turn(instruction: Option<&str>) -> AgentExecuteRequest {
    AgentExecuteRequest::UserTurn(UserTurnRequest {
        session_id: SessionId::new("s1").unwrap(),
        turn_id: TurnId::new("t1").unwrap(),
        instruction: instruction.map(|text| Instruction::new(text).unwrap()),
        files: Vec::new(),
        images: Vec::new(),
        rag_scope: None,
        hints: None,
        stream: false,
    })
}

fn setup() -> (Arc<FakeProvider>, Arc<InMemorySessionStore>, Orchestrator) {
    let provider = Arc::new(FakeProvider::new());
    let store = Arc::new(InMemorySessionStore::new());
    let orchestrator = Orchestrator::builder(provider.clone(), store.clone())
        .build()
        .unwrap();
    (provider, store, orchestrator)
}

fn rejection(
    result: Result<impl std::fmt::Debug, OrchestratorError>,
) -> Vec<(String, ViolationCode)> {
    match result {
        Err(OrchestratorError::InvalidRequest(rejection)) => rejection
            .violations()
            .iter()
            .map(|v| (v.path.clone(), v.code))
            .collect(),
        other => panic!("expected InvalidRequest, got {other:?}"),
    }
}

#[tokio::test]
async fn a_hand_built_user_turn_without_input_is_rejected_by_every_entry() {
    let (provider, store, orchestrator) = setup();
    let expected = vec![("instruction".to_owned(), ViolationCode::MissingInput)];

    assert_eq!(
        rejection(orchestrator.execute(user_turn(None)).await),
        expected
    );
    let mut sink = |_: &aptix_mapping::StreamDelta| {};
    assert_eq!(
        rejection(
            orchestrator
                .execute_streaming(user_turn(None), &mut sink)
                .await
        ),
        expected
    );
    assert_eq!(
        rejection(orchestrator.dry_run(&user_turn(None)).await),
        expected
    );

    assert!(provider.requests().is_empty(), "nothing reached the model");
    assert!(
        store.load("s1").await.unwrap().is_none(),
        "nothing was stored"
    );
}

#[tokio::test]
async fn every_violation_of_a_hand_built_continuation_is_reported() {
    let (provider, _store, orchestrator) = setup();
    let result = |id: &str| ToolResult {
        tool_call_id: ToolCallId::new(id).unwrap(),
        execution_ms: 1,
        outcome: ToolOutcome::Result(ResultJson::new("{}").unwrap()),
    };
    let request = AgentExecuteRequest::ToolContinuation(ToolContinuationRequest {
        session_id: SessionId::new("s1").unwrap(),
        turn_id: TurnId::new("t1").unwrap(),
        tool_results: vec![result("call_1"), result("call_1"), result("call_1")],
    });
    let violations = rejection(orchestrator.execute(request).await);
    assert_eq!(
        violations,
        vec![
            (
                "toolResults[1].toolCallId".to_owned(),
                ViolationCode::DuplicateToolCallId
            ),
            (
                "toolResults[2].toolCallId".to_owned(),
                ViolationCode::DuplicateToolCallId
            ),
        ]
    );
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn a_valid_hand_built_request_runs() {
    let (provider, _store, orchestrator) = setup();
    provider.push_response(
        serde_json::from_str::<Response>(
            r#"{"id": "resp_1", "status": "completed", "output": [{"type": "message",
                "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]}]}"#,
        )
        .unwrap(),
    );
    let envelope = orchestrator
        .execute(user_turn(Some("Say hi")))
        .await
        .unwrap();
    assert_eq!(envelope.text.as_deref(), Some("Hi."));
    assert_eq!(provider.requests().len(), 1);
}

//! Stateless replay: for a provider that stores nothing, the builder appends this turn's
//! items to the session's history, which comes from real recorded traffic here (the
//! first request's input, then the recorded responses' output items converted with
//! `OutputItem::to_input_item`). The pairing rules are checked through `build()`.

mod common;

use aptix_model::wire::{
    ContentPart, CreateResponseRequest, FunctionCall, InputItem, InputMessage, ReasoningItem,
    Response, Role,
};
use aptix_request::{Continuation, RequestBuilder, RequestError, ToolOutput};
use common::{BASE_PROMPT, MODEL, body, build_error, items, messages, tools};

const CALL_ID: &str = "call_S2X9KuEJpYvFcF4hgv1XwM0j";

fn recorded_response(name: &str) -> Response {
    serde_json::from_slice(&aptix_testkit::read_fixture(name))
        .unwrap_or_else(|error| panic!("{name}: {error}"))
}

/// The session so far: our first request's input, then the model's function call.
fn history_after_function_call() -> Vec<InputItem> {
    let first: CreateResponseRequest = RequestBuilder::new(MODEL)
        .base_system_prompt(BASE_PROMPT)
        .mode("QA")
        .instruction("What should I wear for the weather in San Francisco, CA?")
        .tools(tools())
        .build()
        .expect("first request");
    let mut history = first.input.items().to_vec();
    history.extend(
        recorded_response("response_function_call_single.json")
            .output
            .iter()
            .map(|item| item.to_input_item()),
    );
    history
}

fn weather_result() -> ToolOutput {
    ToolOutput::result(CALL_ID, r#"{"weather":"22 celcius and windy"}"#)
        .with_tool_name("get_weather_at_location")
}

#[test]
fn stateless_replay_after_a_function_call() {
    let body = body(
        RequestBuilder::new(MODEL)
            .mode("QA")
            .stateless_history(history_after_function_call())
            .tool_outputs([weather_result()]),
    );
    // Sorted: serde_json keeps insertion order when another crate of the build turns on
    // its `preserve_order` feature (the ACP SDK does), and key order is not the point.
    insta::with_settings!({sort_maps => true}, {
        insta::assert_json_snapshot!("stateless_replay_after_a_function_call", body);
    });
    assert!(body.get("previous_response_id").is_none());
    assert_eq!(
        messages(&body, "system").len(),
        1,
        "the system message comes from history"
    );
    let kinds: Vec<&str> = items(&body)
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "function_call",
            "function_call_output",
            "message"
        ]
    );
}

#[test]
fn stateless_replay_of_a_recorded_history_with_assistant_text() {
    let recorded: CreateResponseRequest = serde_json::from_slice(&aptix_testkit::read_fixture(
        "request_stateless_history_with_assistant_output_text.json",
    ))
    .expect("fixture decodes");
    let mut history = recorded.input.items().to_vec();
    history.extend(
        recorded_response("response_after_function_call_output.json")
            .output
            .iter()
            .map(|item| item.to_input_item()),
    );
    let count = history.len();
    let body = body(
        RequestBuilder::new(MODEL)
            .base_system_prompt("ignored: the history holds the first system message")
            .system_prompt("ignored too")
            .mode("QA")
            .instruction("And tomorrow?")
            .stateless_history(history),
    );
    assert_eq!(items(&body).len(), count + 1);
    assert_eq!(items(&body)[0]["role"], "developer");
    assert!(!body.to_string().contains("ignored"));
}

#[test]
fn stateless_replay_sends_tools_only_when_resent() {
    let build = |resend| {
        body(
            RequestBuilder::new(MODEL)
                .mode("QA")
                .stateless_history(history_after_function_call())
                .tool_outputs([weather_result()])
                .tools(tools())
                .resend_tools_on_continuation(resend),
        )
    };
    assert!(build(false).get("tools").is_none());
    assert_eq!(build(true)["tools"].as_array().map(Vec::len), Some(2));
}

fn call(call_id: &str) -> InputItem {
    InputItem::FunctionCall(FunctionCall {
        id: Some(format!("fc_{call_id}")),
        call_id: call_id.into(),
        name: "read_file".into(),
        arguments: r#"{"path":"a.rs"}"#.into(),
        status: None,
    })
}

fn user(text: &str) -> InputItem {
    InputItem::Message(InputMessage::new(
        Role::User,
        vec![ContentPart::input_text(text)],
    ))
}

#[test]
fn pairing_errors_name_the_call() {
    let reasoning = InputItem::Reasoning(ReasoningItem {
        id: Some("rs_1".into()),
        summary: Vec::new(),
        content: None,
        encrypted_content: Some("opaque".into()),
        status: None,
    });
    let cases: Vec<(Vec<InputItem>, Vec<ToolOutput>, RequestError)> = vec![
        (
            vec![user("hi"), call("call_a"), call("call_b")],
            vec![ToolOutput::result("call_a", "{}")],
            RequestError::MissingFunctionCallOutput {
                call_id: "call_b".into(),
            },
        ),
        (
            vec![user("hi")],
            vec![ToolOutput::result("call_z", "{}")],
            RequestError::OrphanFunctionCallOutput {
                call_id: "call_z".into(),
                index: 1,
            },
        ),
        (
            vec![
                user("hi"),
                call("call_a"),
                ToolOutput::result("call_a", "1").to_input_item(),
            ],
            vec![ToolOutput::result("call_a", "2")],
            RequestError::DuplicateFunctionCallOutput {
                call_id: "call_a".into(),
            },
        ),
        (
            vec![user("hi"), call("call_a"), call("call_a")],
            vec![ToolOutput::result("call_a", "{}")],
            RequestError::DuplicateFunctionCall {
                call_id: "call_a".into(),
            },
        ),
        (
            vec![user("hi"), reasoning],
            Vec::new(),
            RequestError::TrailingReasoningItem { index: 1 },
        ),
        (Vec::new(), Vec::new(), RequestError::EmptyStatelessHistory),
    ];
    for (history, outputs, expected) in cases {
        let error = build_error(
            RequestBuilder::new(MODEL)
                .mode("QA")
                .instruction("go on")
                .continuation(Continuation::Stateless(history))
                .tool_outputs(outputs),
        );
        assert_eq!(error, expected);
    }
}

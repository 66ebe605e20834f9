//! Lenient decoding: unknown item, part, tool and event types are kept raw; unset
//! fields are omitted on encoding; numbers and nulls that real servers send are read.

use aptix_model::wire::{
    ApiError, ContentPart, CreateResponseRequest, FunctionTool, InputItem, OutputItem, Response,
    StreamEvent, Tool, ToolChoice, ToolChoiceMode, Usage,
};
use serde_json::{Value, json};

#[test]
fn unknown_output_items_are_kept_raw_with_their_type() {
    let response: Response = serde_json::from_value(json!({
        "id": "resp_1",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "function_call", "name": "no_call_id", "arguments": "{}"},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "hi"},
                {"type": "brand_new_part", "x": 1},
                {"type": "refusal", "refusal": "no"}
            ]}
        ],
        "brand_new_field": {"a": 1}
    }))
    .unwrap();
    let types: Vec<Option<&str>> = response.output.iter().map(OutputItem::type_name).collect();
    assert_eq!(
        types,
        [
            Some("reasoning"),
            Some("web_search_call"),
            Some("function_call"),
            Some("message")
        ]
    );
    assert!(matches!(response.output[1], OutputItem::Other(_)));
    assert!(
        matches!(response.output[2], OutputItem::Other(_)),
        "a function_call without call_id is kept raw, not guessed at"
    );
    let OutputItem::Message(message) = &response.output[3] else {
        panic!()
    };
    assert!(matches!(message.content[1], ContentPart::Other(_)));
    assert!(matches!(&message.content[2], ContentPart::Refusal(r) if r.refusal == "no"));
    assert_eq!(response.extra["brand_new_field"], json!({"a": 1}));
}

#[test]
fn null_usage_counts_and_seed_names_read_as_numbers() {
    let usage: Usage = serde_json::from_value(json!({
        "prompt_tokens": 210, "completion_tokens": 310, "total_tokens": null,
        "input_tokens_details": null
    }))
    .unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (210, 310, 0)
    );
    assert_eq!(usage.cached_tokens(), 0);
    assert!(serde_json::from_value::<Usage>(json!({"input_tokens": "many"})).is_err());
}

#[test]
fn numeric_error_codes_from_compatible_servers_are_kept_as_text() {
    let error: ApiError = serde_json::from_value(
        json!({"code": 400, "message": "bad", "type": "invalid_request_error"}),
    )
    .unwrap();
    assert_eq!(error.code.as_deref(), Some("400"));
}

#[test]
fn unset_request_fields_are_omitted_and_strict_is_always_written() {
    let request = CreateResponseRequest {
        model: "gpt-5".into(),
        tools: Some(vec![Tool::Function(FunctionTool {
            name: "f".into(),
            description: None,
            parameters: None,
            strict: true,
        })]),
        tool_choice: Some(ToolChoice::Mode(ToolChoiceMode::Auto)),
        ..CreateResponseRequest::default()
    };
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({
            "model": "gpt-5",
            "input": [],
            "tools": [{"type": "function", "name": "f", "strict": true}],
            "tool_choice": "auto"
        })
    );
    let omitted: FunctionTool = serde_json::from_value(json!({"name": "g"})).unwrap();
    assert!(
        omitted.strict,
        "an omitted strict means strict on the Responses API"
    );
}

#[test]
fn easy_messages_and_unknown_input_items_round_trip() {
    let original = json!({
        "model": "m",
        "input": [
            {"role": "user", "content": "plain"},
            {"type": "item_reference", "id": "msg_1"},
            {"type": "computer_call_output", "call_id": "c", "output": {}}
        ]
    });
    let request: CreateResponseRequest = serde_json::from_value(original.clone()).unwrap();
    let items = request.input.items();
    assert!(matches!(items[0], InputItem::EasyMessage(_)));
    assert!(matches!(items[1], InputItem::ItemReference { .. }));
    assert!(matches!(items[2], InputItem::Other(_)));
    assert_eq!(serde_json::to_value(&request).unwrap(), original);
}

#[test]
fn unknown_events_are_kept_and_non_objects_are_errors() {
    let event = StreamEvent::from_json(
        r#"{"type":"response.output_text.annotation.added","sequence_number":7,"annotation":{}}"#,
    )
    .unwrap();
    assert_eq!(
        event.type_name(),
        Some("response.output_text.annotation.added")
    );
    assert_eq!(event.sequence_number(), Some(7));
    let error = StreamEvent::from_json("[1,2]").unwrap_err().to_string();
    assert!(
        error.contains("expected a JSON object, found an array"),
        "{error}"
    );
    assert!(StreamEvent::from_json("not json").is_err());
}

#[test]
fn output_items_replay_as_input_items() {
    let response: Response = serde_json::from_value(json!({
        "id": "resp_1",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "abc"},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "hi", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}
        ]
    }))
    .unwrap();
    let replayed: Vec<Value> = response
        .output
        .iter()
        .map(|item| serde_json::to_value(item.to_input_item()).unwrap())
        .collect();
    assert_eq!(replayed[0]["type"], "reasoning");
    assert_eq!(replayed[0]["encrypted_content"], "abc");
    assert_eq!(replayed[1]["type"], "message");
    assert_eq!(replayed[1]["content"][0]["type"], "output_text");
    assert_eq!(replayed[2]["call_id"], "call_1");
}

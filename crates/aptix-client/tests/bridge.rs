//! Golden tests of the Chat Completions bridge's pure translation: Responses requests
//! into chat requests, chat replies into `Response`s, and chat chunk streams into
//! Responses events whose terminal `Response` equals the whole-reply translation.

use aptix_client::ClientError;
use aptix_client::chat::{
    ChatOptions, ChatStreamTranslator, MaxTokensField, from_chat_completion, to_chat_request,
};
use aptix_model::wire::{CreateResponseRequest, Input, InputItem, Response, StreamEvent};
use serde_json::{Value, json};

fn fixture_request(name: &str) -> CreateResponseRequest {
    serde_json::from_slice(&aptix_testkit::read_fixture(name)).unwrap()
}

/// The one helper the request goldens go through.
fn check_request(request: &CreateResponseRequest, stream: bool, expected: Value) {
    let actual = to_chat_request(request, &ChatOptions::default(), stream).unwrap();
    assert_eq!(actual, expected, "\nactual: {actual:#}");
}

fn weather_tool() -> Value {
    json!({
        "type": "function",
        "function": {
            "name": "get_weather_at_location",
            "description": "Gets the weather at a specified location, optionally specifying units for temperature",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": { "type": "string" },
                    "unit": { "type": "string", "enum": ["C", "F", "K"] }
                },
                "required": ["location"]
            },
            "strict": false
        }
    })
}

#[test]
fn text_history_with_developer_and_assistant_turns() {
    check_request(
        &fixture_request("request_stateless_history_with_assistant_output_text.json"),
        false,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                { "role": "system", "content": "You are a helpful assistant." },
                { "role": "user", "content": "Hello, Assistant, my name is Bob!" },
                { "role": "assistant", "content": "Hello, Bob. It's a nice, sunny day!" },
                { "role": "user", "content": "What's my name and what did you tell me the weather was like?" }
            ]
        }),
    );
}

#[test]
fn instructions_text_input_and_sampling_settings() {
    let request: CreateResponseRequest = serde_json::from_value(json!({
        "model": "gpt-4o-mini",
        "instructions": "Be brief.",
        "input": "Hi",
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 256,
        "store": true,
        "metadata": { "k": "v" },
        "truncation": "disabled",
        "user": "u-1",
        "reasoning": { "effort": "low", "summary": "auto" },
        "text": { "verbosity": "low" }
    }))
    .unwrap();
    check_request(
        &request,
        true,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                { "role": "system", "content": "Be brief." },
                { "role": "user", "content": "Hi" }
            ],
            "temperature": 0.2,
            "top_p": 0.9,
            "max_completion_tokens": 256,
            "reasoning_effort": "low",
            "verbosity": "low",
            "user": "u-1",
            "stream": true,
            "stream_options": { "include_usage": true }
        }),
    );
    let legacy = ChatOptions {
        max_tokens_field: MaxTokensField::MaxTokens,
    };
    let body = to_chat_request(&request, &legacy, false).unwrap();
    assert_eq!(body["max_tokens"], 256);
    assert!(body.get("max_completion_tokens").is_none());
    assert!(body.get("stream").is_none());
}

#[test]
fn tools_and_a_forced_tool_choice() {
    check_request(
        &fixture_request("request_tool_choice_function.json"),
        false,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                { "role": "user", "content": "What should I wear for the weather in San Francisco, CA?" }
            ],
            "tools": [weather_tool()],
            "tool_choice": { "type": "function", "function": { "name": "get_weather_at_location" } }
        }),
    );
    let mut request = fixture_request("request_function_tool_first_turn.json");
    request.tool_choice = Some(serde_json::from_value(json!("required")).unwrap());
    request.parallel_tool_calls = Some(false);
    let body = to_chat_request(&request, &ChatOptions::default(), false).unwrap();
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["parallel_tool_calls"], false);
}

#[test]
fn a_continuation_by_previous_response_id_is_refused() {
    let request = fixture_request("request_function_call_output_continuation.json");
    let error = to_chat_request(&request, &ChatOptions::default(), false).unwrap_err();
    match &error {
        ClientError::Unsupported { feature, .. } => {
            assert!(feature.contains("previous_response_id"))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(!error.to_string().ends_with('.'));
}

#[test]
fn replayed_tool_calls_and_outputs_become_assistant_tool_calls_and_tool_messages() {
    // The stateless form of the recorded continuation: first turn, the model's call
    // (replayed from the recorded response), then the call's output.
    let first = fixture_request("request_function_tool_first_turn.json");
    let answer: Response = serde_json::from_slice(&aptix_testkit::read_fixture(
        "response_function_call_single.json",
    ))
    .unwrap();
    let continuation = fixture_request("request_function_call_output_continuation.json");
    let mut items: Vec<InputItem> = first.input.items().to_vec();
    items.extend(answer.output.iter().map(|item| item.to_input_item()));
    items.extend(continuation.input.items().iter().cloned());
    let request = CreateResponseRequest {
        input: Input::Items(items),
        previous_response_id: None,
        ..continuation
    };
    check_request(
        &request,
        false,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                { "role": "user", "content": "What should I wear for the weather in San Francisco, CA?" },
                {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [{
                        "id": "call_S2X9KuEJpYvFcF4hgv1XwM0j",
                        "type": "function",
                        "function": {
                            "name": "get_weather_at_location",
                            "arguments": "{\"location\":\"San Francisco, CA\"}"
                        }
                    }]
                },
                { "role": "tool", "tool_call_id": "call_S2X9KuEJpYvFcF4hgv1XwM0j", "content": "22 celcius and windy" }
            ],
            "tools": [weather_tool()]
        }),
    );
}

#[test]
fn assistant_text_and_its_calls_are_one_turn() {
    let request: CreateResponseRequest = serde_json::from_value(json!({
        "model": "m",
        "input": [
            { "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "Checking." }] },
            { "type": "function_call", "call_id": "call_1", "name": "a", "arguments": "{}" },
            { "type": "function_call", "call_id": "call_2", "name": "b", "arguments": "{}" },
            { "type": "reasoning", "id": "rs_1", "summary": [] },
            { "type": "function_call_output", "call_id": "call_1", "output": "A" },
            { "type": "function_call_output", "call_id": "call_2", "output": [{ "type": "input_text", "text": "B" }] }
        ]
    }))
    .unwrap();
    let body = to_chat_request(&request, &ChatOptions::default(), false).unwrap();
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["content"], "Checking.");
    assert_eq!(messages[0]["tool_calls"].as_array().unwrap().len(), 2);
    assert_eq!(
        messages[2],
        json!({ "role": "tool", "tool_call_id": "call_2", "content": "B" })
    );
}

#[test]
fn json_schema_and_json_object_formats_become_response_format() {
    check_request(
        &fixture_request("request_structured_output_json_schema.json"),
        false,
        json!({
            "model": "gpt-4o-mini",
            "messages": [{ "role": "user", "content": "Write a JSON document with a list of five animals" }],
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "data_list",
                    "schema": {
                        "type": "object",
                        "properties": { "animal_data_list": { "type": "array", "items": { "type": "string" } } },
                        "required": ["animal_data_list"],
                        "additionalProperties": false
                    }
                }
            }
        }),
    );
    let request: CreateResponseRequest = serde_json::from_value(json!({
        "model": "m", "input": "json please", "text": { "format": { "type": "json_object" } }
    }))
    .unwrap();
    let body = to_chat_request(&request, &ChatOptions::default(), false).unwrap();
    assert_eq!(body["response_format"], json!({ "type": "json_object" }));
}

#[test]
fn what_the_bridge_cannot_carry_is_a_typed_error() {
    let cases = [
        json!({ "model": "m", "input": "x", "tools": [{ "type": "web_search" }] }),
        json!({ "model": "m", "input": [{ "type": "item_reference", "id": "msg_1" }] }),
        json!({ "model": "m", "input": [{ "type": "computer_call_output", "call_id": "c" }] }),
        json!({ "model": "m", "input": "x", "tool_choice": { "type": "allowed_tools", "tools": [] } }),
        json!({ "model": "m", "input": "x", "text": { "format": { "type": "grammar" } } }),
    ];
    for case in cases {
        let request: CreateResponseRequest = serde_json::from_value(case.clone()).unwrap();
        let error = to_chat_request(&request, &ChatOptions::default(), false).unwrap_err();
        assert!(
            matches!(error, ClientError::Unsupported { .. }),
            "{case}: {error:?}"
        );
    }
}

fn completion(message: Value, finish_reason: &str, usage: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1758064451,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{ "index": 0, "message": message, "finish_reason": finish_reason }],
        "usage": usage
    }))
    .unwrap()
}

fn usage() -> Value {
    json!({
        "prompt_tokens": 74, "completion_tokens": 20, "total_tokens": 94,
        "prompt_tokens_details": { "cached_tokens": 64 },
        "completion_tokens_details": { "reasoning_tokens": 8 }
    })
}

#[test]
fn a_text_reply_becomes_a_completed_message_with_usage() {
    let body = completion(
        json!({ "role": "assistant", "content": "Hello!" }),
        "stop",
        usage(),
    );
    let response = from_chat_completion(&body).unwrap();
    let expected: Response = serde_json::from_value(json!({
        "id": "chatcmpl-1",
        "object": "response",
        "created_at": 1758064451,
        "status": "completed",
        "error": null,
        "incomplete_details": null,
        "model": "gpt-4o-mini-2024-07-18",
        "output": [{
            "id": "msg_chatcmpl-1", "type": "message", "role": "assistant", "status": "completed",
            "content": [{ "type": "output_text", "text": "Hello!", "annotations": [] }]
        }],
        "usage": {
            "input_tokens": 74, "output_tokens": 20, "total_tokens": 94,
            "input_tokens_details": { "cached_tokens": 64 },
            "output_tokens_details": { "reasoning_tokens": 8 }
        },
        "previous_response_id": null
    }))
    .unwrap();
    assert_eq!(response, expected);
}

#[test]
fn a_tool_call_reply_becomes_function_call_items() {
    let message = json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{
            "id": "call_S2X9", "type": "function",
            "function": { "name": "get_weather_at_location", "arguments": "{\"location\":\"SF\"}" }
        }]
    });
    let response = from_chat_completion(&completion(message, "tool_calls", Value::Null)).unwrap();
    assert_eq!(response.status.as_ref().unwrap().as_str(), "completed");
    assert_eq!(response.usage, None);
    assert_eq!(
        serde_json::to_value(&response.output).unwrap(),
        json!([{
            "id": "fc_call_S2X9", "type": "function_call", "status": "completed",
            "call_id": "call_S2X9", "name": "get_weather_at_location",
            "arguments": "{\"location\":\"SF\"}"
        }])
    );
}

#[test]
fn finish_reasons_become_status_and_incomplete_details() {
    let cases = [
        ("stop", "completed", None),
        ("tool_calls", "completed", None),
        ("length", "incomplete", Some("max_output_tokens")),
        ("content_filter", "incomplete", Some("content_filter")),
    ];
    for (finish, status, reason) in cases {
        let body = completion(json!({ "content": "x" }), finish, Value::Null);
        let response = from_chat_completion(&body).unwrap();
        assert_eq!(response.status.unwrap().as_str(), status, "{finish}");
        let got = response
            .incomplete_details
            .and_then(|details| details.reason)
            .map(|reason| reason.as_str().to_owned());
        assert_eq!(got.as_deref(), reason, "{finish}");
    }
}

#[test]
fn a_refusal_is_a_refusal_part_not_text() {
    let body = completion(
        json!({ "content": null, "refusal": "I can't help with that." }),
        "stop",
        Value::Null,
    );
    let response = from_chat_completion(&body).unwrap();
    assert_eq!(
        serde_json::to_value(&response.output[0]).unwrap()["content"],
        json!([{ "type": "refusal", "refusal": "I can't help with that." }])
    );
}

#[test]
fn unusable_replies_are_decode_errors() {
    assert!(matches!(
        from_chat_completion(b"{\"choices\": []}"),
        Err(ClientError::Decode { .. })
    ));
    assert!(matches!(
        from_chat_completion(b"not json"),
        Err(ClientError::Decode { .. })
    ));
}

/// Feeds chunk payloads (and `[DONE]`) through a translator.
fn translate(payloads: &[Value]) -> Vec<StreamEvent> {
    let mut translator = ChatStreamTranslator::new();
    let mut events = Vec::new();
    for payload in payloads {
        let data = match payload {
            Value::String(done) => done.clone(),
            chunk => chunk.to_string(),
        };
        events.extend(translator.push_data(&data).unwrap());
    }
    events.extend(translator.finish());
    assert!(translator.is_done());
    events
}

fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1758064451,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason }]
    })
}

fn usage_chunk() -> Value {
    json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage() })
}

#[test]
fn a_streamed_tool_call_becomes_responses_events_and_the_same_final_response() {
    let payloads = [
        chunk(json!({ "role": "assistant", "content": null }), Value::Null),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "id": "call_S2X9", "type": "function",
                    "function": { "name": "get_weather_at_location", "arguments": "" } }] }),
            Value::Null,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"loc" } }] }),
            Value::Null,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "ation\":\"SF\"}" } }] }),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        usage_chunk(),
        json!("[DONE]"),
    ];
    let events = translate(&payloads);
    let names: Vec<&str> = events.iter().map(|e| e.type_name().unwrap()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let sequence: Vec<u64> = events
        .iter()
        .map(|e| e.sequence_number().unwrap())
        .collect();
    assert_eq!(sequence, (0..events.len() as u64).collect::<Vec<_>>());
    let StreamEvent::OutputItemAdded(added) = &events[2] else {
        panic!()
    };
    assert_eq!(
        serde_json::to_value(&added.item).unwrap(),
        json!({ "id": "fc_call_S2X9", "type": "function_call", "status": "in_progress",
                "call_id": "call_S2X9", "name": "get_weather_at_location", "arguments": "" })
    );
    let StreamEvent::FunctionCallArgumentsDelta(delta) = &events[3] else {
        panic!()
    };
    assert_eq!(delta.item_id.as_deref(), Some("fc_call_S2X9"));
    assert_eq!(delta.output_index, 0);
    let StreamEvent::FunctionCallArgumentsDone(done) = &events[5] else {
        panic!()
    };
    assert_eq!(done.arguments.as_deref(), Some("{\"location\":\"SF\"}"));

    // The terminal response equals translating the same reply sent whole.
    let whole = completion(
        json!({ "role": "assistant", "content": null, "tool_calls": [{
            "id": "call_S2X9", "type": "function",
            "function": { "name": "get_weather_at_location", "arguments": "{\"location\":\"SF\"}" } }] }),
        "tool_calls",
        usage(),
    );
    assert_eq!(
        events.last().unwrap().terminal_response().unwrap(),
        &from_chat_completion(&whole).unwrap()
    );
}

#[test]
fn streamed_text_then_a_call_keeps_output_order_and_folds_like_a_whole_reply() {
    let payloads = [
        chunk(
            json!({ "role": "assistant", "content": "Let me " }),
            Value::Null,
        ),
        chunk(json!({ "content": "check." }), Value::Null),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "id": "call_1", "function": { "name": "f", "arguments": "{}" } }] }),
            Value::Null,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 1, "id": "call_2", "function": { "name": "g", "arguments": "{\"a\":1}" } }] }),
            Value::Null,
        ),
        chunk(json!({}), json!("length")),
        json!("[DONE]"),
    ];
    let events = translate(&payloads);
    let names: Vec<&str> = events.iter().map(|e| e.type_name().unwrap()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.incomplete",
        ]
    );
    let whole = completion(
        json!({ "content": "Let me check.", "tool_calls": [
            { "id": "call_1", "type": "function", "function": { "name": "f", "arguments": "{}" } },
            { "id": "call_2", "type": "function", "function": { "name": "g", "arguments": "{\"a\":1}" } } ] }),
        "length",
        Value::Null,
    );
    let terminal = events.last().unwrap().terminal_response().unwrap();
    assert_eq!(terminal, &from_chat_completion(&whole).unwrap());
    assert_eq!(
        terminal
            .incomplete_details
            .as_ref()
            .unwrap()
            .reason
            .as_ref()
            .unwrap()
            .as_str(),
        "max_output_tokens"
    );
}

#[test]
fn a_stream_without_done_or_finish_reason_gets_no_terminal_event() {
    let mut translator = ChatStreamTranslator::new();
    let events = translator
        .push_data(&chunk(json!({ "content": "partial" }), Value::Null).to_string())
        .unwrap();
    assert!(!events.is_empty());
    assert!(translator.finish().is_empty());
    assert!(!translator.is_done());
}

#[test]
fn a_finish_reason_without_done_still_finishes_at_the_end_of_the_body() {
    let mut translator = ChatStreamTranslator::new();
    translator
        .push_data(&chunk(json!({ "content": "hi" }), json!("stop")).to_string())
        .unwrap();
    let events = translator.finish();
    assert_eq!(
        events.last().unwrap().type_name(),
        Some("response.completed")
    );
}

#[test]
fn an_error_chunk_is_an_error_event_and_the_last_one() {
    let mut translator = ChatStreamTranslator::new();
    let events = translator
        .push_data(r#"{"error":{"message":"overloaded","type":"server_error","code":"503"}}"#)
        .unwrap();
    let [StreamEvent::Error(event)] = events.as_slice() else {
        panic!("{events:?}")
    };
    let error = event.api_error();
    assert_eq!(error.code.as_deref(), Some("503"));
    assert_eq!(error.message, "overloaded");
    assert!(translator.push_data("[DONE]").unwrap().is_empty());
}

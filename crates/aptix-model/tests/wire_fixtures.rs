//! Every recorded `/v1/responses` fixture decodes into the wire types, with the shapes a
//! reader of the recording expects, and re-encoding a decoded request gives back an
//! equivalent JSON value.

use aptix_model::wire::{
    ContentPart, CreateResponseRequest, ErrorBody, FunctionOutput, Input, InputItem,
    MessageContent, OutputItem, Response, ResponseStatus, Role, StreamEvent, TextFormat, Tool,
    ToolChoice,
};
use aptix_testkit::{fixture_names, read_fixture, read_fixture_text};
use serde_json::Value;

fn json(name: &str) -> Value {
    serde_json::from_slice(&read_fixture(name))
        .unwrap_or_else(|error| panic!("{name} is not JSON: {error}"))
}

fn request(name: &str) -> CreateResponseRequest {
    serde_json::from_value(json(name)).unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn response(name: &str) -> Response {
    serde_json::from_value(json(name)).unwrap_or_else(|error| panic!("{name}: {error}"))
}

fn items(request: &CreateResponseRequest) -> &[InputItem] {
    match &request.input {
        Input::Items(items) => items,
        Input::Text(text) => panic!("expected input items, found text {text:?}"),
    }
}

/// The data lines of an SSE fixture. The recordings are plain (`event:`, one `data:`,
/// blank line), so a line filter is enough here; the real decoder is tested in
/// `aptix-mapping`.
fn sse_data(name: &str) -> Vec<String> {
    read_fixture_text(name)
        .lines()
        .filter_map(|line| line.strip_prefix("data: ").or(line.strip_prefix("data:")))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_request_fixture_round_trips_to_an_equivalent_value() {
    let names = fixture_names(".json");
    let requests: Vec<&String> = names.iter().filter(|n| n.starts_with("request_")).collect();
    assert_eq!(requests.len(), 5, "request fixtures: {requests:?}");
    for name in requests {
        let original = json(name);
        let decoded: CreateResponseRequest = serde_json::from_value(original.clone())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        let encoded = serde_json::to_value(&decoded).unwrap();
        assert_eq!(
            encoded, original,
            "{name} does not re-encode to the same JSON"
        );
        assert!(
            decoded.extra.is_empty(),
            "{name}: unmodelled fields {:?}",
            decoded.extra.keys()
        );
        for (index, item) in items(&decoded).iter().enumerate() {
            assert!(
                !matches!(item, InputItem::Other(_) | InputItem::EasyMessage(_)),
                "{name}: input[{index}] was not recognised: {item:?}"
            );
        }
    }
}

#[test]
fn first_turn_request_has_a_flat_function_tool_with_explicit_strict() {
    let request = request("request_function_tool_first_turn.json");
    let tools = request.tools.as_deref().unwrap();
    let [Tool::Function(tool)] = tools else {
        panic!("expected one function tool, found {tools:?}")
    };
    assert_eq!(tool.name, "get_weather_at_location");
    assert!(!tool.strict);
    let [InputItem::Message(message)] = items(&request) else {
        panic!("expected one message")
    };
    assert_eq!(message.role, Role::User);
    let MessageContent::Parts(parts) = &message.content else {
        panic!("expected parts")
    };
    assert_eq!(
        parts,
        &[ContentPart::input_text(
            "What should I wear for the weather in San Francisco, CA?"
        )]
    );
}

#[test]
fn continuation_request_carries_a_function_call_output_by_call_id() {
    let request = request("request_function_call_output_continuation.json");
    assert_eq!(
        request.previous_response_id.as_deref(),
        Some("resp_0df7c3d8927b3a940068c9ef43dce481949ab7ac4c9f676d61")
    );
    let [InputItem::FunctionCallOutput(output)] = items(&request) else {
        panic!("expected one function_call_output")
    };
    assert_eq!(output.call_id, "call_S2X9KuEJpYvFcF4hgv1XwM0j");
    assert_eq!(
        output.output,
        FunctionOutput::Text("22 celcius and windy".into())
    );
}

#[test]
fn tool_choice_and_text_format_fixtures_decode_to_their_typed_forms() {
    let forced = request("request_tool_choice_function.json");
    assert_eq!(
        forced.tool_choice,
        Some(ToolChoice::function("get_weather_at_location"))
    );

    let structured = request("request_structured_output_json_schema.json");
    let Some(TextFormat::JsonSchema(format)) = structured.text.and_then(|text| text.format) else {
        panic!("expected a json_schema text format")
    };
    assert_eq!(format.name, "data_list");
    assert_eq!(
        format.strict, None,
        "the recorded request left strict unset"
    );
    assert_eq!(format.schema["required"][0], "animal_data_list");

    let history = request("request_stateless_history_with_assistant_output_text.json");
    let roles: Vec<&Role> = items(&history)
        .iter()
        .map(|item| match item {
            InputItem::Message(message) => &message.role,
            other => panic!("unexpected item {other:?}"),
        })
        .collect();
    assert_eq!(
        roles,
        [&Role::Developer, &Role::User, &Role::Assistant, &Role::User]
    );
    let InputItem::Message(assistant) = &items(&history)[2] else {
        unreachable!()
    };
    let MessageContent::Parts(parts) = &assistant.content else {
        panic!("parts")
    };
    assert!(
        matches!(&parts[0], ContentPart::OutputText(text) if text.text.starts_with("Hello, Bob"))
    );
}

#[test]
fn every_response_fixture_decodes_and_re_encodes_to_an_equivalent_value() {
    let names = fixture_names(".json");
    let responses: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("response_"))
        .collect();
    assert_eq!(responses.len(), 6, "response fixtures: {responses:?}");
    for name in responses {
        let original = json(name);
        let decoded: Response = serde_json::from_value(original.clone())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        for (index, item) in decoded.output.iter().enumerate() {
            assert!(
                !matches!(item, OutputItem::Other(_)),
                "{name}: output[{index}] unrecognised"
            );
        }
        assert_eq!(serde_json::to_value(&decoded).unwrap(), original, "{name}");
    }
}

#[test]
fn response_fixtures_carry_the_fields_mapping_reads() {
    let text = response("response_plain_text.json");
    assert_eq!(text.status, Some(ResponseStatus::Completed));
    assert_eq!(text.model.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    let usage = text.usage.as_ref().unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.total_tokens),
        (14, 50, 64)
    );
    assert_eq!((usage.cached_tokens(), usage.reasoning_tokens()), (0, 0));

    let call = response("response_function_call_single.json");
    let [OutputItem::FunctionCall(call)] = call.output.as_slice() else {
        panic!("one call")
    };
    assert_eq!(call.call_id, "call_S2X9KuEJpYvFcF4hgv1XwM0j");
    assert_eq!(
        call.id.as_deref(),
        Some("fc_0df7c3d8927b3a940068c9ef446a748194b8266e13adcc9781")
    );
    assert_eq!(call.arguments, r#"{"location":"San Francisco, CA"}"#);

    let incomplete = response("response_incomplete_max_output_tokens.json");
    assert_eq!(incomplete.status, Some(ResponseStatus::Incomplete));
    assert_eq!(
        incomplete
            .incomplete_details
            .and_then(|d| d.reason)
            .map(|r| r.as_str().to_owned()),
        Some("max_output_tokens".to_owned())
    );

    let failed = response("response_failed_error.json");
    assert_eq!(failed.status, Some(ResponseStatus::Failed));
    assert_eq!(failed.usage, None);
    let error = failed.error.unwrap();
    assert_eq!(error.code.as_deref(), Some("insufficient_quota"));
    assert!(error.message.starts_with("You exceeded your current quota"));
}

#[test]
fn every_error_fixture_decodes_into_an_error_body() {
    let names = fixture_names(".json");
    let errors: Vec<&String> = names.iter().filter(|n| n.starts_with("error_")).collect();
    assert_eq!(errors.len(), 5, "error fixtures: {errors:?}");
    for name in errors {
        let body: ErrorBody =
            serde_json::from_value(json(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(!body.error.message.is_empty(), "{name}");
        assert!(body.error.kind.is_some(), "{name}");
    }
    let quota: ErrorBody =
        serde_json::from_value(json("error_429_insufficient_quota.json")).unwrap();
    assert_eq!(quota.error.code.as_deref(), Some("insufficient_quota"));
    let missing: ErrorBody =
        serde_json::from_value(json("error_400_no_tool_output_found.json")).unwrap();
    assert_eq!(
        (missing.error.param.as_deref(), missing.error.code),
        (Some("input"), None)
    );
}

#[test]
fn every_event_of_every_sse_fixture_decodes_to_a_known_event() {
    let names = fixture_names(".sse");
    assert_eq!(names.len(), 3);
    for name in &names {
        let events = sse_data(name);
        assert!(events.len() >= 4, "{name}: only {} events", events.len());
        for (index, data) in events.iter().enumerate() {
            let event = StreamEvent::from_json(data)
                .unwrap_or_else(|error| panic!("{name} event {index}: {error}"));
            assert!(
                !matches!(event, StreamEvent::Other(_)),
                "{name} event {index}: {data}"
            );
            let raw: Value = serde_json::from_str(data).unwrap();
            assert_eq!(
                event.type_name(),
                raw["type"].as_str(),
                "{name} event {index}"
            );
            assert_eq!(
                event.sequence_number(),
                Some(index as u64),
                "{name} event {index}"
            );
        }
        let last = StreamEvent::from_json(events.last().unwrap()).unwrap();
        assert!(
            last.terminal_response().is_some(),
            "{name} must end in a terminal event"
        );
    }
}

#[test]
fn the_recorded_error_event_is_nested_and_the_spec_shape_is_flat() {
    let data = sse_data("sse_error_event_then_response_failed.sse");
    let error = data
        .iter()
        .map(|d| StreamEvent::from_json(d).unwrap())
        .find_map(|event| match event {
            StreamEvent::Error(error) => Some(error),
            _ => None,
        })
        .expect("the fixture has an error event");
    assert_eq!(
        error.api_error().code.as_deref(),
        Some("insufficient_quota")
    );

    let flat = StreamEvent::from_json(
        r#"{"type":"error","sequence_number":3,"code":"server_error","message":"boom","param":null}"#,
    )
    .unwrap();
    let StreamEvent::Error(flat) = flat else {
        panic!("flat error event")
    };
    let api = flat.api_error();
    assert_eq!(
        (api.code.as_deref(), api.message.as_str()),
        (Some("server_error"), "boom")
    );
}

#[test]
fn function_call_arguments_done_has_no_name_on_the_wire() {
    let done = sse_data("sse_function_call_arguments.sse")
        .iter()
        .map(|d| StreamEvent::from_json(d).unwrap())
        .find_map(|event| match event {
            StreamEvent::FunctionCallArgumentsDone(done) => Some(done),
            _ => None,
        })
        .expect("a function_call_arguments.done event");
    assert_eq!(done.name, None);
    assert_eq!(done.value(), Some(r#"{"location":"San Francisco, CA"}"#));
}

/// `from_json` reads the `type` first and decodes the payload straight from the text;
/// it must give exactly what the enum's own (tag-buffering) decoding gives, for every
/// recorded event and for the awkward ones: unknown types, known types of the wrong
/// shape, no `type`, a `type` that is not a string, a repeated `type`, escapes.
#[test]
fn decoding_by_type_first_equals_the_enums_own_decoding() {
    let mut cases: Vec<String> = fixture_names(".sse")
        .iter()
        .flat_map(|name| sse_data(name))
        .collect();
    assert!(cases.len() >= 12, "{}", cases.len());
    cases.extend(
        [
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"hi","extra":[1,{"a":null}]}"#,
            r#"{"type":"response.output_text.delta","delta":"no output_index"}"#,
            r#"{"type":"response.output_text.delta","output_index":"zero","delta":"x"}"#,
            r#"{"type":"response.output_text.delta","output_index":0,"delta":null}"#,
            r#"{"type":"response.output_text.\u0064elta","output_index":1,"delta":"escaped tag"}"#,
            r#"{"type":"response.output_text.delta","type":"response.refusal.delta","output_index":0,"delta":"twice"}"#,
            r#"{"type":"response.annotation.added","annotation":{"url":"u"}}"#,
            r#"{"type":7,"delta":"x"}"#,
            r#"{"delta":"no type"}"#,
            r#"{"type":"error","code":"server_error","message":"flat"}"#,
            r#"{"type":"error","error":{"type":"server_error","message":"nested"}}"#,
            r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[]}}"#,
            r#"{"type":"response.completed","response":"not an object"}"#,
        ]
        .map(str::to_owned),
    );
    for data in &cases {
        let direct = StreamEvent::from_json(data).map_err(|error| error.to_string());
        let by_enum: Result<StreamEvent, String> =
            serde_json::from_str(data).map_err(|error| error.to_string());
        match (&direct, &by_enum) {
            (Ok(direct), Ok(by_enum)) => assert_eq!(direct, by_enum, "{data}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{data}: from_json {direct:?}, the enum {by_enum:?}"),
        }
    }
}

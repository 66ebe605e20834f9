//! AGN-003 section 8: one test per acceptance criterion, named after it, then one per
//! area the section says unit tests must cover. The wire shapes are those of
//! `docs/wire.md` (`input_text` parts, `{"type":"function","name":...}`).

mod common;

use aptix_request::{RequestBuilder, RequestError, ToolOutput, parse_tools_json};
use common::{
    BASE_PROMPT, INSTRUCTION, PER_REQUEST_PROMPT, RESPONSE_ID, body, build_error, context_block,
    continuation, initial, items, messages, texts, tool_outputs, tools, usage_block,
};
use serde_json::{Value, json};

/// Every way the optional system parts can be combined, on an initial request, with the
/// parts the system message must hold.
fn system_cases() -> Vec<(RequestBuilder, Vec<String>)> {
    let usage = usage_block();
    vec![
        (initial(), vec![String::new()]),
        (
            initial().base_system_prompt(BASE_PROMPT),
            vec![BASE_PROMPT.into()],
        ),
        (
            initial().system_prompt(PER_REQUEST_PROMPT),
            vec![String::new(), PER_REQUEST_PROMPT.into()],
        ),
        (
            initial().tool_usage_block(usage.clone()),
            vec![String::new(), usage.clone()],
        ),
        (
            initial()
                .base_system_prompt(BASE_PROMPT)
                .system_prompt("  \n")
                .tool_usage_block(usage.clone()),
            vec![BASE_PROMPT.into(), usage.clone()],
        ),
        (
            initial()
                .base_system_prompt(BASE_PROMPT)
                .system_prompt(PER_REQUEST_PROMPT)
                .tool_usage_block(usage.clone()),
            vec![BASE_PROMPT.into(), PER_REQUEST_PROMPT.into(), usage],
        ),
    ]
}

#[test]
fn sets_model_temperature_and_stream_consistently_from_context_and_input() {
    for (temperature, stream) in [
        (Some(0.7), Some(true)),
        (None, Some(false)),
        (Some(0.0), None),
    ] {
        let body = body(
            RequestBuilder::new("o4-mini")
                .mode("QA")
                .instruction(INSTRUCTION)
                .temperature(temperature)
                .stream(stream),
        );
        assert_eq!(body["model"], "o4-mini");
        assert_eq!(body.get("temperature").and_then(Value::as_f64), temperature);
        assert_eq!(body.get("stream").and_then(Value::as_bool), stream);
    }
}

#[test]
fn distinguishes_initial_and_continuation_requests_by_response_continuation_id() {
    for (id, is_continuation) in [("", false), ("  ", false), (RESPONSE_ID, true)] {
        let body = body(initial().previous_response_id(id));
        assert_eq!(
            messages(&body, "system").len(),
            usize::from(!is_continuation),
            "id {id:?}"
        );
        assert_eq!(
            body.get("previous_response_id").is_some(),
            is_continuation,
            "id {id:?}"
        );
    }
}

#[test]
fn includes_exactly_one_system_message_on_initial_requests() {
    for (builder, expected) in system_cases() {
        let body = body(builder);
        let system = messages(&body, "system");
        assert_eq!(system.len(), 1);
        assert!(
            std::ptr::eq(system[0], &items(&body)[0]),
            "system message comes first"
        );
        assert_eq!(texts(system[0]), expected);
    }
}

#[test]
fn base_system_prompt_is_the_first_content_item() {
    for (builder, _) in system_cases() {
        let body = body(builder.base_system_prompt("BASE"));
        assert_eq!(texts(messages(&body, "system")[0])[0], "BASE");
    }
}

#[test]
fn system_prompt_is_the_second_content_item_when_provided() {
    let body = body(
        initial()
            .system_prompt(PER_REQUEST_PROMPT)
            .tool_usage_block(usage_block()),
    );
    assert_eq!(texts(messages(&body, "system")[0])[1], PER_REQUEST_PROMPT);
}

#[test]
fn tool_usage_block_is_the_third_content_item_when_provided() {
    let usage = usage_block();
    let body = body(
        initial()
            .system_prompt(PER_REQUEST_PROMPT)
            .tool_usage_block(usage.clone()),
    );
    assert_eq!(
        texts(messages(&body, "system")[0]),
        ["", PER_REQUEST_PROMPT, &usage]
    );
}

#[test]
fn omits_the_system_message_on_continuation_requests_and_sets_previous_response_id() {
    let body = body(
        continuation()
            .base_system_prompt(BASE_PROMPT)
            .system_prompt(PER_REQUEST_PROMPT)
            .tool_usage_block(usage_block()),
    );
    assert!(messages(&body, "system").is_empty());
    assert!(messages(&body, "developer").is_empty());
    assert_eq!(body["previous_response_id"], RESPONSE_ID);
    assert!(!body.to_string().contains(PER_REQUEST_PROMPT));
}

#[test]
fn always_sends_a_single_user_message_with_mode_instruction_and_optional_blocks() {
    let cases = [
        (initial(), 1),
        (initial().context_block(context_block()), 2),
        (continuation().instruction(INSTRUCTION), 2),
        (continuation().context_block(context_block()), 3),
        (continuation().include_tool_results_block(false), 1),
    ];
    for (builder, parts) in cases {
        let body = body(builder);
        let users = messages(&body, "user");
        assert_eq!(users.len(), 1);
        assert!(
            std::ptr::eq(users[0], items(&body).last().expect("items")),
            "user comes last"
        );
        let texts = texts(users[0]);
        assert_eq!(texts.len(), parts, "{texts:?}");
        assert!(
            texts[0].starts_with("[MODE: QA]\n\n[INSTRUCTION]\n"),
            "{}",
            texts[0]
        );
        if let Some(context) = texts.iter().position(|text| text.starts_with("[CONTEXT]")) {
            assert_eq!(context, 1, "context comes right after the instruction");
        }
        if let Some(results) = texts
            .iter()
            .position(|text| text.starts_with("[TOOL_RESULTS]"))
        {
            assert_eq!(results, texts.len() - 1, "tool results come last");
        }
    }
}

#[test]
fn populates_tools_only_on_initial_requests_and_only_from_a_valid_tools_json_array() {
    let tools_json = serde_json::to_string(&json!([
        {"type": "function", "name": "read_file", "parameters": {"type": "object"}, "strict": false}
    ]))
    .expect("json");
    let parsed = parse_tools_json(&tools_json).expect("a valid array parses");
    let first = body(initial().tools(parsed.clone()));
    assert_eq!(first["tools"][0]["name"], "read_file");
    assert_eq!(first["tools"][0]["strict"], false);
    let next = body(continuation().tools(parsed));
    assert!(next.get("tools").is_none());
    // Not an array, or an invalid element: an error for the caller, never silently no tools.
    assert!(matches!(
        parse_tools_json(r#"{"type":"function","name":"x"}"#),
        Err(RequestError::ToolsJsonNotArray { .. })
    ));
    assert!(matches!(
        parse_tools_json("[1]"),
        Err(RequestError::InvalidTool { index: 0, .. })
    ));
    assert!(
        body(initial()).get("tools").is_none(),
        "no tools given, none sent"
    );
}

#[test]
fn sets_tool_choice_only_when_tool_choice_name_is_supplied() {
    let forced = body(initial().tools(tools()).force_tool("read_file"));
    assert_eq!(
        forced["tool_choice"],
        json!({"type": "function", "name": "read_file"})
    );
    for name in ["", " "] {
        let body = body(initial().tools(tools()).force_tool(name));
        assert!(body.get("tool_choice").is_none());
    }
}

// The areas AGN-003 section 8 says the unit tests must cover.

#[test]
fn covers_initial_versus_continuation_behaviour() {
    let first = body(initial().base_system_prompt(BASE_PROMPT).tools(tools()));
    let next = body(
        continuation()
            .base_system_prompt(BASE_PROMPT)
            .tools(tools()),
    );
    let kinds = |body: &Value| -> Vec<String> {
        items(body)
            .iter()
            .map(|item| format!("{}:{}", item["type"], item["role"]))
            .collect()
    };
    assert_eq!(
        kinds(&first),
        [r#""message":"system""#, r#""message":"user""#]
    );
    assert_eq!(
        kinds(&next),
        [
            r#""function_call_output":null"#,
            r#""function_call_output":null"#,
            r#""message":"user""#
        ]
    );
    assert!(first.get("tools").is_some() && next.get("tools").is_none());
}

#[test]
fn covers_rag_context_inclusion() {
    let context = context_block();
    let body = body(initial().context_block(context.clone()));
    assert_eq!(texts(messages(&body, "user")[0])[1], context);
    assert!(
        texts(&items(&body)[0])
            .iter()
            .all(|text| !text.contains("[CONTEXT]"))
    );
}

#[test]
fn covers_tool_schemas_and_tool_choice() {
    let body = body(
        initial()
            .tools(tools())
            .force_tool("get_weather_at_location"),
    );
    let sent = body["tools"].as_array().expect("tools");
    assert_eq!(sent.len(), 2);
    for tool in sent {
        assert_eq!(tool["type"], "function");
        assert!(
            tool.get("function").is_none(),
            "flat, not Chat Completions nesting"
        );
        assert!(tool["strict"].is_boolean(), "strict always explicit");
    }
    assert_eq!(body["tool_choice"]["type"], "function");
    assert!(matches!(
        build_error(initial().tools(tools()).force_tool("delete_everything")),
        RequestError::UnknownForcedTool { name } if name == "delete_everything"
    ));
}

#[test]
fn covers_tool_results_block_behaviour() {
    let with_block = body(continuation());
    let user = texts(messages(&with_block, "user")[0]);
    assert!(user[1].starts_with("[TOOL_RESULTS]\n\n=== TOOL RESULT 1 ==="));
    let outputs: Vec<&str> = items(&with_block)
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["call_id"].as_str().expect("call_id"))
        .collect();
    let expected: Vec<String> = tool_outputs()
        .into_iter()
        .map(|output| output.call_id)
        .collect();
    assert_eq!(outputs, expected);
    let without = body(continuation().include_tool_results_block(false));
    assert_eq!(texts(messages(&without, "user")[0]).len(), 1);
    assert_eq!(
        items(&without).len(),
        items(&with_block).len(),
        "function_call_output items are sent either way"
    );
    assert!(matches!(
        build_error(initial().tool_outputs([ToolOutput::result("call_1", "{}")])),
        RequestError::ToolResultsOnInitialRequest { count: 1 }
    ));
}

#[test]
fn covers_the_interaction_of_system_system_prompt_and_tool_usage_block() {
    for (builder, expected) in system_cases() {
        let first = body(builder.clone());
        assert_eq!(texts(messages(&first, "system")[0]), expected);
        let next = body(builder.previous_response_id(RESPONSE_ID));
        assert!(messages(&next, "system").is_empty());
    }
}

//! Golden request bodies: the full JSON of each shape a caller can build, as insta
//! snapshots in `tests/snapshots/` (each one read and checked by hand against AGN-003
//! and `docs/wire.md` before it was accepted). Every body is also validated against the
//! OpenAPI spec by `common::body`.

mod common;

use aptix_model::wire::{JsonSchemaFormat, TextFormat};
use aptix_request::{RequestBuilder, ToolOutput};
use common::{
    BASE_PROMPT, INSTRUCTION, MODEL, PER_REQUEST_PROMPT, RESPONSE_ID, body, context_block,
    continuation, initial, tool_outputs, tools, usage_block,
};
use serde_json::json;

/// Builds `builder`, validates it and compares it with the snapshot `name`.
fn check(name: &str, builder: RequestBuilder) {
    let body = body(builder);
    // Sorted: serde_json keeps insertion order when another crate of the build turns on
    // its `preserve_order` feature (the ACP SDK does), and key order is not the point.
    insta::with_settings!({sort_maps => true}, {
        insta::assert_json_snapshot!(name, body);
    });
}

#[test]
fn initial_with_all_three_system_parts() {
    check(
        "initial_with_all_three_system_parts",
        initial()
            .base_system_prompt(BASE_PROMPT)
            .system_prompt(PER_REQUEST_PROMPT)
            .tool_usage_block(usage_block())
            .temperature(0.2)
            .tools(tools()),
    );
}

#[test]
fn initial_with_none_of_the_optional_parts() {
    // Base prompt unset (empty): it is still the system message's only part.
    check("initial_with_none_of_the_optional_parts", initial());
}

#[test]
fn continuation_with_tool_results() {
    check("continuation_with_tool_results", continuation());
}

#[test]
fn continuation_without_the_tool_results_block() {
    check(
        "continuation_without_the_tool_results_block",
        continuation().include_tool_results_block(false),
    );
}

#[test]
fn continuation_ignores_system_prompt_usage_block_and_tools() {
    check(
        "continuation_ignores_system_prompt_usage_block_and_tools",
        RequestBuilder::new(MODEL)
            .base_system_prompt(BASE_PROMPT)
            .system_prompt(PER_REQUEST_PROMPT)
            .tool_usage_block(usage_block())
            .tools(tools())
            .mode("CODE_EDIT")
            .instruction("Now apply the change.")
            .previous_response_id(RESPONSE_ID),
    );
}

#[test]
fn continuation_resending_tools() {
    check(
        "continuation_resending_tools",
        continuation()
            .tools(tools())
            .resend_tools_on_continuation(true),
    );
}

#[test]
fn context_block_present() {
    check(
        "context_block_present",
        initial()
            .base_system_prompt(BASE_PROMPT)
            .context_block(context_block()),
    );
}

#[test]
fn context_block_absent() {
    // A blank block counts as absent, as AGN-003 says for every optional part.
    check(
        "context_block_absent",
        initial()
            .base_system_prompt(BASE_PROMPT)
            .context_block(" \n"),
    );
}

#[test]
fn forced_tool_choice() {
    check(
        "forced_tool_choice",
        initial()
            .tools(tools())
            .force_tool("get_weather_at_location"),
    );
}

#[test]
fn stream_true_false_and_unset() {
    for (name, stream) in [
        ("stream_true", Some(true)),
        ("stream_false", Some(false)),
        ("stream_unset", None),
    ] {
        check(name, initial().stream(stream));
    }
}

#[test]
fn every_real_request_field() {
    check(
        "every_real_request_field",
        initial()
            .base_system_prompt(BASE_PROMPT)
            .context_block(context_block())
            .tools(tools())
            .parallel_tool_calls(false)
            .max_output_tokens(2048)
            .store(true)
            .metadata("session_id", "sess_42")
            .metadata("turn_id", "turn_7")
            .reasoning_effort("low")
            .text_format(TextFormat::JsonSchema(JsonSchemaFormat {
                name: "answer".into(),
                schema: json!({
                    "type": "object",
                    "properties": {"summary": {"type": "string"}},
                    "required": ["summary"],
                    "additionalProperties": false
                }),
                description: None,
                strict: Some(true),
            })),
    );
}

#[test]
fn pure_tool_continuation_with_blank_instruction() {
    // AGN-034's tool continuation carries no instruction: the header stays, empty.
    check(
        "pure_tool_continuation_with_blank_instruction",
        RequestBuilder::new(MODEL)
            .mode("QA")
            .previous_response_id(RESPONSE_ID)
            .tool_outputs([ToolOutput::result("call_1", "[1,2,3]")]),
    );
}

#[test]
fn snapshots_hold_the_inputs_they_claim() {
    // Guards the snapshots against being accepted blindly: the distinctive inputs must
    // be in them.
    let all = body(
        initial()
            .base_system_prompt(BASE_PROMPT)
            .system_prompt(PER_REQUEST_PROMPT)
            .tool_usage_block(usage_block())
            .tools(tools()),
    )
    .to_string();
    for needle in [BASE_PROMPT, PER_REQUEST_PROMPT, INSTRUCTION, "read_file"] {
        assert!(all.contains(needle), "{needle} missing from {all}");
    }
    let next = body(continuation()).to_string();
    for output in tool_outputs() {
        assert!(next.contains(&output.call_id), "{} missing", output.call_id);
    }
}

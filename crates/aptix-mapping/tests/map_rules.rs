//! The mapping rules on synthetic responses, one shape at a time: text joining,
//! refusals, tool calls of every kind, unknown and unreadable items, every status and
//! incomplete reason, and usage. Each case is a response body and the envelope fields it
//! must give, through one `check`.

use aptix_mapping::{Mapped, TurnContext, map_response, map_response_body};
use aptix_model::wire::Response;
use serde_json::{Value, json};

/// The envelope fields these rules are about, as JSON, so a case reads as data.
fn summary(mapped: &Mapped) -> Value {
    let envelope = serde_json::to_value(&mapped.envelope).unwrap_or_default();
    let mut summary = json!({});
    for key in [
        "kind",
        "finishReason",
        "text",
        "refusal",
        "toolCalls",
        "errorCode",
        "errorMessage",
        "warnings",
    ] {
        summary[key] = envelope[key].clone();
    }
    summary
}

/// Maps `body` both from bytes and from a decoded `Response`, checks the two agree and
/// that the turn's identities and the raw body are kept, then compares the summary.
fn check(case: &str, body: Value, expected: Value) {
    let turn = TurnContext::new("session-1", "turn-1");
    let bytes = serde_json::to_vec(&body).unwrap_or_default();
    let mapped = map_response_body(&bytes, &turn).unwrap_or_else(|error| panic!("{case}: {error}"));
    let response: Response =
        serde_json::from_value(body.clone()).unwrap_or_else(|error| panic!("{case}: {error}"));
    let raw = String::from_utf8(bytes).unwrap_or_default();
    assert_eq!(
        map_response(&response, Some(raw.clone()), &turn),
        mapped,
        "{case}: decoded and raw paths agree"
    );
    assert_eq!(
        mapped.envelope.raw_response_json.as_deref(),
        Some(raw.as_str())
    );
    assert_eq!(mapped.envelope.turn_id.as_deref(), Some("turn-1"), "{case}");
    assert_eq!(
        mapped.envelope.response_continuation_id.as_deref(),
        body["id"].as_str(),
        "{case}"
    );
    // Typed and text warnings stay in step.
    let texts: Vec<String> = mapped.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(mapped.envelope.warnings, texts, "{case}");
    let mut expected_full = json!({
        "kind": "ok", "finishReason": "stop", "text": null, "refusal": null,
        "toolCalls": [], "errorCode": null, "errorMessage": null, "warnings": [],
    });
    for (key, value) in expected.as_object().into_iter().flatten() {
        expected_full[key] = value.clone();
    }
    assert_eq!(summary(&mapped), expected_full, "{case}");
}

fn response(status: Value, output: Value) -> Value {
    json!({"id": "resp_1", "object": "response", "status": status, "model": "m", "output": output})
}

fn message(id: &str, parts: Value) -> Value {
    json!({"type": "message", "id": id, "role": "assistant", "status": "completed", "content": parts})
}

fn text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": []})
}

fn refusal(text: &str) -> Value {
    json!({"type": "refusal", "refusal": text})
}

fn call(id: &str, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"})
}

fn reasoning() -> Value {
    json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]})
}

#[test]
fn text_is_every_output_text_part_in_order_joined_by_a_blank_line() {
    check(
        "reasoning first, two messages, an empty part",
        response(
            json!("completed"),
            json!([
                reasoning(),
                message("msg_1", json!([text("A"), text(""), text("B")])),
                message("msg_2", json!([text("C\n")])),
            ]),
        ),
        json!({"text": "A\n\nB\n\nC\n"}),
    );
    check(
        "only empty parts is no text",
        response(
            json!("completed"),
            json!([message("msg_1", json!([text("")]))]),
        ),
        json!({"kind": "empty"}),
    );
    check(
        "no output at all",
        response(json!("completed"), json!([])),
        json!({"kind": "empty"}),
    );
}

#[test]
fn refusals_are_not_text() {
    let warning = "the model refused in message msg_1; the refusal is in `refusal`, not in `text`";
    check(
        "a refusal alone is an answer in words: ok",
        response(
            json!("completed"),
            json!([message(
                "msg_1",
                json!([refusal("I can't help with that.")])
            )]),
        ),
        json!({"refusal": "I can't help with that.", "warnings": [warning]}),
    );
    check(
        "text and two refusal parts",
        response(
            json!("completed"),
            json!([message(
                "msg_1",
                json!([text("Partly."), refusal("No."), refusal("Still no.")])
            )]),
        ),
        json!({"text": "Partly.", "refusal": "No.\n\nStill no.", "warnings": [warning]}),
    );
}

#[test]
fn function_calls_keep_their_call_id_and_arguments_byte_for_byte() {
    let invalid = "{\"path\": \"a.rs\",, \u{1F600} \\u00e9";
    check(
        "invalid json arguments and text with two parallel calls",
        response(
            json!("completed"),
            json!([
                message("msg_1", json!([text("Reading both.")])),
                call("fc_1", "call_1", "read_file", invalid),
                call("fc_2", "call_2", "list_dir", "{}"),
            ]),
        ),
        json!({
            "finishReason": "tool_use",
            "text": "Reading both.",
            "toolCalls": [
                {"callId": "call_1", "name": "read_file", "argumentsJson": invalid},
                {"callId": "call_2", "name": "list_dir", "argumentsJson": "{}"},
            ],
        }),
    );
    check(
        "a custom tool call is mapped with its free-form input, and said so",
        response(
            json!("completed"),
            json!([{"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_9", "name": "apply_patch", "input": "*** Begin Patch"}]),
        ),
        json!({
            "kind": "tool-only",
            "finishReason": "tool_use",
            "toolCalls": [{"callId": "call_9", "name": "apply_patch", "argumentsJson": "*** Begin Patch"}],
            "warnings": ["custom tool call `apply_patch` (call_9) was mapped with its free-form input as argumentsJson, which need not be json"],
        }),
    );
}

#[test]
fn items_without_a_place_in_the_envelope_are_named_in_warnings() {
    check(
        "built-in tool calls and unknown items",
        response(
            json!("completed"),
            json!([
                {"type": "web_search_call", "id": "ws_1", "status": "completed"},
                {"type": "mcp_call", "id": "mcp_1", "name": "x", "arguments": "{}"},
                {"type": "future_tool_call", "id": "ftc_1"},
                {"type": "compaction", "id": "cmp_1"},
                {"id": "what_1"},
                message("msg_1", json!([text("Found it.")])),
            ]),
        ),
        json!({
            "text": "Found it.",
            "warnings": [
                "output item `web_search_call` (ws_1) is a built-in tool call that aptix does not map",
                "output item `mcp_call` (mcp_1) is a built-in tool call that aptix does not map",
                "output item `future_tool_call` (ftc_1) is a built-in tool call that aptix does not map",
                "unknown output item `compaction` (cmp_1) was not mapped",
                "output item without a type (what_1) was not mapped",
            ],
        }),
    );
    check(
        "a function call that cannot be read still means the model stopped for a tool",
        response(
            json!("completed"),
            json!([{"type": "function_call", "id": "fc_1", "name": "read_file", "arguments": "{}"}]),
        ),
        json!({
            "kind": "empty",
            "finishReason": "tool_use",
            "warnings": ["output item `function_call` (fc_1) could not be read: missing field `call_id`"],
        }),
    );
    check(
        "unreadable message and parts",
        response(
            json!("completed"),
            json!([
                {"type": "message", "id": "msg_0", "content": "not a list"},
                message("msg_1", json!([
                    {"type": "output_text"},
                    {"type": "output_audio", "data": "..."},
                    {"type": "input_text", "text": "echo"},
                    text("Kept."),
                ])),
            ]),
        ),
        json!({
            "text": "Kept.",
            "warnings": [
                "output item `message` (msg_0) could not be read: invalid type: string \"not a list\", expected a sequence",
                "content part `output_text` of message (msg_1) could not be read: missing field `text`",
                "content part `output_audio` of message (msg_1) was not mapped",
                "content part `input_text` of message (msg_1) was not mapped",
            ],
        }),
    );
}

#[test]
fn finish_reason_follows_status_and_incomplete_reason() {
    let hi = || json!([message("msg_1", json!([text("Hi")]))]);
    let with_reason = |reason: Value| {
        let mut body = response(json!("incomplete"), hi());
        body["incomplete_details"] = json!({"reason": reason});
        body
    };
    let cases = [
        (
            "incomplete: max_output_tokens",
            with_reason(json!("max_output_tokens")),
            json!({"finishReason": "length", "text": "Hi"}),
        ),
        (
            "incomplete: content_filter",
            with_reason(json!("content_filter")),
            json!({"finishReason": "content_filter", "text": "Hi"}),
        ),
        (
            "incomplete: an unknown reason is kept",
            with_reason(json!("max_tool_calls")),
            json!({"finishReason": "max_tool_calls", "text": "Hi", "warnings": ["unknown incomplete reason `max_tool_calls` was kept as the finish reason"]}),
        ),
        (
            "incomplete without a reason",
            response(json!("incomplete"), hi()),
            json!({"finishReason": "incomplete", "text": "Hi", "warnings": ["response is incomplete without a reason"]}),
        ),
        (
            "cancelled",
            response(json!("cancelled"), hi()),
            json!({"finishReason": "cancelled", "text": "Hi", "warnings": ["response was cancelled before it finished"]}),
        ),
        (
            "in_progress has no finish reason",
            response(json!("in_progress"), json!([])),
            json!({"kind": "empty", "finishReason": null, "warnings": ["response status is `in_progress`: it is not finished, so there is no finish reason"]}),
        ),
        (
            "queued has no finish reason",
            response(json!("queued"), json!([])),
            json!({"kind": "empty", "finishReason": null, "warnings": ["response status is `queued`: it is not finished, so there is no finish reason"]}),
        ),
        (
            "a missing status reads as completed",
            response(Value::Null, hi()),
            json!({"text": "Hi", "warnings": ["response has no status; it was read as completed"]}),
        ),
        (
            "an unknown status is kept",
            response(json!("paused"), hi()),
            json!({"finishReason": "paused", "text": "Hi", "warnings": ["unknown response status `paused` was kept as the finish reason"]}),
        ),
        (
            "incomplete with only reasoning: length, and empty",
            {
                let mut body = response(json!("incomplete"), json!([reasoning()]));
                body["incomplete_details"] = json!({"reason": "max_output_tokens"});
                body
            },
            json!({"kind": "empty", "finishReason": "length"}),
        ),
    ];
    for (case, body, expected) in cases {
        check(case, body, expected);
    }
}

#[test]
fn a_failed_response_is_an_error_envelope() {
    let failed = |error: Value| {
        let mut body = response(json!("failed"), json!([]));
        body["error"] = error;
        body
    };
    check(
        "failed with code and message",
        failed(json!({"code": "server_error", "message": "The model crashed."})),
        json!({"kind": "error", "finishReason": "error", "errorCode": "server_error", "errorMessage": "The model crashed."}),
    );
    check(
        "failed with a message only",
        failed(json!({"code": null, "message": "Something broke."})),
        json!({"kind": "error", "finishReason": "error", "errorCode": "response_failed", "errorMessage": "Something broke."}),
    );
    check(
        "failed without an error",
        failed(Value::Null),
        json!({
            "kind": "error", "finishReason": "error", "errorCode": "response_failed",
            "errorMessage": "the response failed without an error message",
            "warnings": ["response failed without an error code or message"],
        }),
    );
    check(
        "failed keeps what the output held",
        {
            let mut body = failed(json!({"code": "server_error", "message": "x"}));
            body["output"] = json!([message("msg_1", json!([text("Half an ans")]))]);
            body
        },
        json!({"kind": "error", "finishReason": "error", "text": "Half an ans", "errorCode": "server_error", "errorMessage": "x"}),
    );
    check(
        "an error on a completed response is reported, not obeyed",
        {
            let mut body = response(
                json!("completed"),
                json!([message("msg_1", json!([text("Hi")]))]),
            );
            body["error"] = json!({"code": "odd", "message": "left over"});
            body
        },
        json!({"text": "Hi", "warnings": ["response is `completed` but carries an error (odd: left over)"]}),
    );
}

#[test]
fn usage_reads_the_wire_and_the_seed_names() {
    let turn = TurnContext::default();
    let usage_of = |usage: Value| {
        let mut body = response(json!("completed"), json!([]));
        body["usage"] = usage;
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let mapped = map_response_body(&bytes, &turn).unwrap_or_else(|error| panic!("{error}"));
        serde_json::to_value(mapped.envelope.usage).unwrap_or_default()
    };
    let zero = json!({"promptTokens": 0, "completionTokens": 0, "totalTokens": 0, "cachedTokens": 0, "reasoningTokens": 0});
    assert_eq!(
        usage_of(json!({
            "input_tokens": 120, "output_tokens": 300, "total_tokens": 420,
            "input_tokens_details": {"cached_tokens": 64},
            "output_tokens_details": {"reasoning_tokens": 256},
        })),
        json!({"promptTokens": 120, "completionTokens": 300, "totalTokens": 420, "cachedTokens": 64, "reasoningTokens": 256})
    );
    assert_eq!(
        usage_of(json!({"prompt_tokens": 210, "completion_tokens": 310, "total_tokens": 520})),
        json!({"promptTokens": 210, "completionTokens": 310, "totalTokens": 520, "cachedTokens": 0, "reasoningTokens": 0})
    );
    assert_eq!(usage_of(Value::Null), zero);
    assert_eq!(
        usage_of(json!({"input_tokens": null, "output_tokens_details": null})),
        zero
    );
    // A total the provider did not send is not summed: the envelope reports its counts.
    assert_eq!(
        usage_of(json!({"input_tokens": 5, "output_tokens": 7}))["totalTokens"],
        0
    );
}

#[test]
fn a_body_that_is_not_a_response_is_an_error_not_a_guess() {
    let turn = TurnContext::default();
    for (case, body) in [
        ("no id", &br#"{"status":"completed","output":[]}"#[..]),
        ("not json", b"<html>502 Bad Gateway</html>"),
        ("not utf-8", b"{\"id\":\"\xff\"}"),
        ("output not a list", br#"{"id":"r","output":{}}"#),
    ] {
        let error = map_response_body(body, &turn).expect_err(case);
        assert_eq!(error.code(), "invalid_response_body", "{case}");
    }
}

//! Every recorded `response_*` and `error_*` body maps to the envelope AGN-004 and the
//! wire notes call for, and every `.sse` capture maps through `map_capture` as
//! `aptix inspect` would show it.
//!
//! Each case goes through one `check`: an insta JSON snapshot of the whole envelope (with
//! `rawResponseJson` redacted, because it is asserted byte for byte instead), plus explicit
//! assertions of the key fields from the table below, written from the fixtures by hand,
//! so that a wrong snapshot cannot be accepted without a test failing.

use aptix_mapping::{
    Mapped, TurnContext, is_capture, map_capture, map_error_body, map_response_body,
};
use aptix_model::contract::{
    AgentToolCall, FinishReason, Kind, LlmUsage, RateLimitInfo, SourceRef,
};
use aptix_testkit::{fixture_names, read_fixture};

/// What the text of an envelope must be.
enum TextIs {
    Null,
    Exact(&'static str),
    /// Starts with, ends with, and has this many characters (for long answers).
    Around(&'static str, &'static str, usize),
}

/// The key fields of an expected envelope.
struct Expect {
    kind: Kind,
    finish_reason: Option<FinishReason>,
    text: TextIs,
    /// Call id, name, arguments.
    tool_calls: &'static [(&'static str, &'static str, &'static str)],
    /// Prompt, completion, total, cached, reasoning.
    usage: [u64; 5],
    /// Code, and the start of the message.
    error: Option<(&'static str, &'static str)>,
    /// The response id, when there is a response.
    response_id: Option<&'static str>,
    model: Option<&'static str>,
    warnings: &'static [&'static str],
}

const NO_USAGE: [u64; 5] = [0; 5];

fn turn() -> TurnContext {
    TurnContext {
        conversation_id: Some("session-42".into()),
        turn_id: Some("turn-7".into()),
        mode: Some("codegen".into()),
        agent_context_id: Some("agent-ctx-1".into()),
        conversation_context_id: Some("conv-ctx-1".into()),
        sources: vec![SourceRef {
            chunk_id: "chunk-1".into(),
            path: "src/weather.rs".into(),
            line_start: 10,
            line_end: 42,
            language: "rust".into(),
            score: Some(0.75),
        }],
        request_id: Some("req_123".into()),
        // As the reply's x-ratelimit-* headers give them: echoed on every envelope.
        rate_limits: Some(RateLimitInfo {
            limit_requests: Some(500),
            remaining_requests: Some(499),
            reset_requests_ms: Some(120),
            limit_tokens: Some(30_000),
            remaining_tokens: Some(29_100),
            reset_tokens_ms: Some(1_800),
        }),
    }
}

/// The one check every case goes through.
fn check(name: &str, mapped: &Mapped, raw: Option<&str>, expect: &Expect) {
    let envelope = &mapped.envelope;
    assert_eq!(envelope.kind, expect.kind, "{name}: kind");
    assert_eq!(
        envelope.finish_reason, expect.finish_reason,
        "{name}: finishReason"
    );
    match (&expect.text, envelope.text.as_deref()) {
        (TextIs::Null, text) => assert_eq!(text, None, "{name}: text"),
        (TextIs::Exact(expected), text) => assert_eq!(text, Some(*expected), "{name}: text"),
        (TextIs::Around(start, end, chars), Some(text)) => {
            assert!(text.starts_with(start), "{name}: text starts {text:?}");
            assert!(text.ends_with(end), "{name}: text ends {text:?}");
            assert_eq!(text.chars().count(), *chars, "{name}: text length");
        }
        (TextIs::Around(..), None) => panic!("{name}: text is null"),
    }
    let calls: Vec<AgentToolCall> = expect
        .tool_calls
        .iter()
        .map(|(call_id, name, arguments)| AgentToolCall {
            call_id: (*call_id).into(),
            name: (*name).into(),
            arguments_json: (*arguments).into(),
        })
        .collect();
    assert_eq!(envelope.tool_calls, calls, "{name}: toolCalls");
    let [prompt, completion, total, cached, reasoning] = expect.usage;
    assert_eq!(
        envelope.usage,
        LlmUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: total,
            cached_tokens: cached,
            reasoning_tokens: reasoning,
        },
        "{name}: usage"
    );
    match expect.error {
        Some((code, message_start)) => {
            assert_eq!(
                envelope.error_code.as_deref(),
                Some(code),
                "{name}: errorCode"
            );
            let message = envelope.error_message.as_deref().unwrap_or_default();
            assert!(
                message.starts_with(message_start),
                "{name}: errorMessage {message:?}"
            );
        }
        None => {
            assert_eq!(envelope.error_code, None, "{name}: errorCode");
            assert_eq!(envelope.error_message, None, "{name}: errorMessage");
        }
    }
    assert_eq!(
        envelope.response_continuation_id.as_deref(),
        expect.response_id,
        "{name}: responseContinuationId"
    );
    assert_eq!(
        envelope.model_id.as_deref(),
        expect.model,
        "{name}: modelId"
    );
    // The turn's identities come from the turn, never from the response.
    let turn = turn();
    assert_eq!(envelope.conversation_id, turn.conversation_id, "{name}");
    assert_eq!(envelope.turn_id, turn.turn_id, "{name}: turnId");
    assert_eq!(envelope.mode, turn.mode, "{name}");
    assert_eq!(envelope.sources, turn.sources, "{name}");
    assert_eq!(envelope.request_id, turn.request_id, "{name}");
    assert_eq!(envelope.refusal, None, "{name}: no fixture refuses");
    assert_eq!(envelope.warnings, expect.warnings, "{name}: warnings");
    if let Some(raw) = raw {
        assert_eq!(
            envelope.raw_response_json.as_deref(),
            Some(raw),
            "{name}: rawResponseJson is the body as received"
        );
    }
    let snapshot = name.split_once('.').map_or(name, |(stem, _)| stem);
    insta::assert_json_snapshot!(snapshot, envelope, {
        ".rawResponseJson" => "[asserted in the test]",
    });
}

/// Status from an error fixture's name: `error_429_...` -> 429.
fn status_of(name: &str) -> u16 {
    name.split('_')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or_else(|| panic!("{name}: no status in the name"))
}

fn expected(name: &str) -> Expect {
    let ok = |finish_reason, text, usage, id, model| Expect {
        kind: Kind::Ok,
        finish_reason: Some(finish_reason),
        text,
        tool_calls: &[],
        usage,
        error: None,
        response_id: Some(id),
        model: Some(model),
        warnings: &[],
    };
    let http_error = |code, message| Expect {
        kind: Kind::Error,
        finish_reason: None,
        text: TextIs::Null,
        tool_calls: &[],
        usage: NO_USAGE,
        error: Some((code, message)),
        response_id: None,
        model: None,
        warnings: &[],
    };
    const QUOTA: &str = "You exceeded your current quota, please check your plan";
    match name {
        "response_plain_text.json" => ok(
            FinishReason::Stop,
            TextIs::Around(
                "I can't provide real-time updates, but you can",
                "so it's good to be prepared for variable weather!",
                245,
            ),
            [14, 50, 64, 0, 0],
            "resp_689a0b2545288193953c892439b42e2800b2e36c65a1fd4b",
            "gpt-4o-mini-2024-07-18",
        ),
        "response_after_function_call_output.json" => ok(
            FinishReason::Stop,
            TextIs::Around(
                "The weather in San Francisco is currently about 22°C (72°F) and windy.",
                "\n\nEnjoy your time in San Francisco!",
                686,
            ),
            [109, 156, 265, 0, 0],
            "resp_0df7c3d8927b3a940068c9ef44dee08194b3e80eb579a14f4f",
            "gpt-4o-mini-2024-07-18",
        ),
        "response_incomplete_max_output_tokens.json" => ok(
            FinishReason::Length,
            TextIs::Exact(
                "Mango sun-kissed sweet,  \nGolden nectar drips like rain,  \nSummer's bliss revealed",
            ),
            [14, 20, 34, 0, 0],
            "resp_0d0ddc12d86aa22e0068c9ef4a86fc81908acb06dd825129eb",
            "gpt-4o-mini-2024-07-18",
        ),
        "response_structured_output_json_schema.json" => ok(
            FinishReason::Stop,
            TextIs::Exact(
                r#"{"animal_data_list":["Lion","Elephant","Giraffe","Kangaroo","Penguin"]}"#,
            ),
            [48, 23, 71, 0, 0],
            "resp_061da245a7ef797a0068c9ef386e848196b217d1784fb33d18",
            "gpt-4o-mini-2024-07-18",
        ),
        "response_function_call_single.json" => Expect {
            kind: Kind::ToolOnly,
            finish_reason: Some(FinishReason::ToolUse),
            text: TextIs::Null,
            tool_calls: &[(
                "call_S2X9KuEJpYvFcF4hgv1XwM0j",
                "get_weather_at_location",
                r#"{"location":"San Francisco, CA"}"#,
            )],
            usage: [74, 20, 94, 0, 0],
            error: None,
            response_id: Some("resp_0df7c3d8927b3a940068c9ef43dce481949ab7ac4c9f676d61"),
            model: Some("gpt-4o-mini-2024-07-18"),
            warnings: &[],
        },
        "response_failed_error.json" => Expect {
            kind: Kind::Error,
            finish_reason: Some(FinishReason::Error),
            text: TextIs::Null,
            tool_calls: &[],
            usage: NO_USAGE,
            error: Some(("insufficient_quota", QUOTA)),
            response_id: Some("resp_05500b38c2cd9bfc00691c7c9d222481a3b595421266dab424"),
            model: Some("gpt-5-nano-2025-08-07"),
            warnings: &[],
        },
        // `code` is null: the type names the class.
        "error_400_no_tool_output_found.json" => http_error(
            "invalid_request_error",
            "No tool output found for function call call_XXX.",
        ),
        "error_401_invalid_api_key.json" => {
            http_error("invalid_api_key", "Incorrect API key provided: not-a-re***")
        }
        "error_429_insufficient_quota.json" => http_error("insufficient_quota", QUOTA),
        // `type` is "tokens" here; `code` is the stable identifier.
        "error_429_rate_limit_exceeded.json" => http_error(
            "rate_limit_exceeded",
            "Rate limit reached for gpt-4o in organization",
        ),
        "error_500_server_error.json" => http_error(
            "server_error",
            "The server had an error processing your request.",
        ),
        other => panic!("{other}: a new fixture needs its expected envelope written here"),
    }
}

#[test]
fn response_fixtures_map_to_the_expected_envelopes() {
    let names: Vec<String> = fixture_names(".json")
        .into_iter()
        .filter(|name| name.starts_with("response_"))
        .collect();
    assert_eq!(names.len(), 6, "response fixtures: {names:?}");
    for name in names {
        let body = read_fixture(&name);
        let mapped =
            map_response_body(&body, &turn()).unwrap_or_else(|error| panic!("{name}: {error}"));
        let raw = String::from_utf8(body).unwrap_or_else(|error| panic!("{name}: {error}"));
        check(&name, &mapped, Some(&raw), &expected(&name));
    }
}

#[test]
fn error_fixtures_map_to_error_envelopes() {
    let names: Vec<String> = fixture_names(".json")
        .into_iter()
        .filter(|name| name.starts_with("error_"))
        .collect();
    assert_eq!(names.len(), 5, "error fixtures: {names:?}");
    for name in names {
        let body = read_fixture(&name);
        let mapped = map_error_body(status_of(&name), &body, &turn());
        let raw = String::from_utf8(body).unwrap_or_else(|error| panic!("{name}: {error}"));
        check(&name, &mapped, Some(&raw), &expected(&name));
    }
}

#[test]
fn captures_map_as_inspect_shows_them() {
    // Through `map_capture`, which must tell each kind of file apart by itself.
    for name in fixture_names(".json")
        .into_iter()
        .filter(|name| name.starts_with("response_") || name.starts_with("error_"))
    {
        let body = read_fixture(&name);
        assert!(is_capture(&body), "{name}");
        let captured = map_capture(&body, &turn());
        let direct = if name.starts_with("error_") {
            map_error_body(status_of(&name), &body, &turn())
        } else {
            map_response_body(&body, &turn()).unwrap_or_else(|error| panic!("{name}: {error}"))
        };
        assert_eq!(captured, direct, "{name}");
    }
    let sse = |name, expect: Expect| {
        let mapped = map_capture(&read_fixture(name), &turn());
        // The final event's `response` member as sent; `fold_fixtures` checks it byte
        // for byte against the recording.
        let raw = mapped
            .envelope
            .raw_response_json
            .as_deref()
            .unwrap_or_default();
        let raw: serde_json::Value =
            serde_json::from_str(raw).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_eq!(
            raw["id"].as_str(),
            expect.response_id,
            "{name}: rawResponseJson"
        );
        check(name, &mapped, None, &expect);
    };
    sse(
        "sse_text_deltas.sse",
        Expect {
            kind: Kind::Ok,
            finish_reason: Some(FinishReason::Stop),
            text: TextIs::Exact("Hello! How can I assist you today?"),
            tool_calls: &[],
            usage: [11, 10, 21, 0, 0],
            error: None,
            response_id: Some("resp_0b70e4946283a4df0068c9ef5ef4d88194adeeb6e2283d609a"),
            model: Some("gpt-4o-mini-2024-07-18"),
            warnings: &[],
        },
    );
    sse(
        "sse_function_call_arguments.sse",
        Expect {
            kind: Kind::ToolOnly,
            finish_reason: Some(FinishReason::ToolUse),
            text: TextIs::Null,
            tool_calls: &[(
                "call_0UFGPwrziw5rbinYp7rthrTb",
                "get_weather_at_location",
                r#"{"location":"San Francisco, CA"}"#,
            )],
            usage: [74, 20, 94, 0, 0],
            error: None,
            response_id: Some("resp_0c25e60be926327b0069305eb9ac6c8195833249c070ef4e7e"),
            model: Some("gpt-4o-mini-2024-07-18"),
            warnings: &[],
        },
    );
    sse(
        "sse_error_event_then_response_failed.sse",
        Expect {
            kind: Kind::Error,
            finish_reason: Some(FinishReason::Error),
            text: TextIs::Null,
            tool_calls: &[],
            usage: NO_USAGE,
            error: Some((
                "insufficient_quota",
                "You exceeded your current quota, please check your plan",
            )),
            response_id: Some("resp_05500b38c2cd9bfc00691c7c9d222481a3b595421266dab424"),
            model: Some("gpt-5-nano-2025-08-07"),
            warnings: &[],
        },
    );
}

#[test]
fn a_saved_envelope_maps_again_to_itself_from_the_reply_it_holds() {
    // `aptix ask --json > saved.json; aptix inspect saved.json`: the envelope's reply is
    // mapped again, its turn taken from the envelope.
    for name in fixture_names(".json")
        .into_iter()
        .filter(|name| name.starts_with("response_") || name.starts_with("error_"))
    {
        let body = read_fixture(&name);
        let original = map_capture(&body, &turn());
        let saved = serde_json::to_vec_pretty(&original.envelope).unwrap();
        let again = map_capture(&saved, &TurnContext::default());
        assert_eq!(again.envelope, original.envelope, "{name}");
        // What the caller gives wins over what the envelope says.
        let mine = TurnContext::new("session-mine", "turn-mine");
        let again = map_capture(&saved, &mine);
        assert_eq!(
            again.envelope.conversation_id.as_deref(),
            Some("session-mine")
        );
        assert_eq!(again.envelope.mode.as_deref(), Some("codegen"), "{name}");
    }
    for name in ["sse_text_deltas.sse", "sse_function_call_arguments.sse"] {
        let original = map_capture(&read_fixture(name), &turn());
        let saved = serde_json::to_vec(&original.envelope).unwrap();
        let again = map_capture(&saved, &TurnContext::default());
        assert_eq!(again.envelope.text, original.envelope.text, "{name}");
        assert_eq!(
            again.envelope.tool_calls, original.envelope.tool_calls,
            "{name}"
        );
        assert_eq!(again.envelope.usage, original.envelope.usage, "{name}");
        assert_eq!(again.envelope.turn_id.as_deref(), Some("turn-7"), "{name}");
    }

    // An envelope with no reply in it (a connection that failed) says what it is.
    let failed = serde_json::json!({
        "kind": "error", "conversationId": "s-1", "turnId": "t-1",
        "errorCode": "transport_error", "errorMessage": "connection refused",
        "rawResponseJson": null,
    });
    let mapped = map_capture(failed.to_string().as_bytes(), &TurnContext::default());
    assert_eq!(mapped.envelope.kind, Kind::Error);
    assert_eq!(
        mapped.envelope.error_code.as_deref(),
        Some("invalid_response_body")
    );
    let message = mapped.envelope.error_message.unwrap();
    assert!(
        message.starts_with("this is an Aptix envelope (kind \"error\": connection refused)")
            && message.contains("no rawResponseJson"),
        "{message}"
    );
    assert_eq!(mapped.envelope.conversation_id.as_deref(), Some("s-1"));

    // A response body is never taken for an envelope, whatever members it has.
    let body = serde_json::json!({"id": "resp_1", "object": "response", "status": "completed",
        "kind": "x", "rawResponseJson": null, "output": []});
    let mapped = map_capture(body.to_string().as_bytes(), &TurnContext::default());
    assert_ne!(
        mapped.envelope.error_code.as_deref(),
        Some("invalid_response_body"),
        "{:?}",
        mapped.envelope
    );
}

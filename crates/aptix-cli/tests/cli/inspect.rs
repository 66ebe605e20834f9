//! `aptix inspect` over every recorded reply: each maps to the expected kind, error code
//! and text, and to exactly the envelope the library's `map_capture` gives.

use aptix_mapping::{TurnContext, map_capture};
use aptix_testkit::{fixture_names, read_fixture};
use serde_json::Value;

use crate::support::{Sandbox, code, fixture, stderr, stdout_json};

/// What a reply maps to: kind, error code, and the text (`None`: no text).
struct Expected {
    kind: &'static str,
    error_code: Option<&'static str>,
    text: Option<Text>,
}

/// Where the expected text comes from.
enum Text {
    /// Given here.
    Literal(&'static str),
    /// Every `output_text` of the fixture's message items, joined with a blank line, as
    /// read from the fixture itself.
    FromFixture,
}

fn expected(name: &str) -> Expected {
    let error = |code| Expected {
        kind: "error",
        error_code: Some(code),
        text: None,
    };
    let ok = |text| Expected {
        kind: "ok",
        error_code: None,
        text: Some(text),
    };
    let tool_only = Expected {
        kind: "tool-only",
        error_code: None,
        text: None,
    };
    match name {
        "error_400_no_tool_output_found.json" => error("invalid_request_error"),
        "error_401_invalid_api_key.json" => error("invalid_api_key"),
        "error_429_insufficient_quota.json" => error("insufficient_quota"),
        "error_429_rate_limit_exceeded.json" => error("rate_limit_exceeded"),
        "error_500_server_error.json" => error("server_error"),
        "response_failed_error.json" => error("insufficient_quota"),
        "sse_error_event_then_response_failed.sse" => error("insufficient_quota"),
        "response_function_call_single.json" | "sse_function_call_arguments.sse" => tool_only,
        "response_after_function_call_output.json"
        | "response_incomplete_max_output_tokens.json"
        | "response_plain_text.json"
        | "response_structured_output_json_schema.json" => ok(Text::FromFixture),
        "sse_text_deltas.sse" => ok(Text::Literal("Hello! How can I assist you today?")),
        other => panic!("no expectation for the reply fixture {other}: add one"),
    }
}

/// The answer text of a response body, read straight from its JSON.
fn text_of_fixture(name: &str) -> String {
    let body: Value = serde_json::from_slice(&read_fixture(name)).unwrap();
    let mut texts = Vec::new();
    for item in body["output"].as_array().unwrap() {
        if item["type"] == "message" {
            for part in item["content"].as_array().unwrap() {
                if part["type"] == "output_text" {
                    texts.push(part["text"].as_str().unwrap().to_owned());
                }
            }
        }
    }
    texts.join("\n\n")
}

/// Every recorded reply: responses, error bodies and streams (requests and header
/// captures are not replies).
fn reply_fixtures() -> Vec<String> {
    let mut names: Vec<String> = fixture_names(".json")
        .into_iter()
        .filter(|name| name.starts_with("response_") || name.starts_with("error_"))
        .collect();
    names.extend(fixture_names(".sse"));
    assert!(names.len() >= 14, "{names:?}");
    names
}

#[test]
fn every_recorded_reply_maps_to_its_expected_envelope() {
    let sandbox = Sandbox::new();
    for name in reply_fixtures() {
        let output = sandbox
            .aptix()
            .arg("inspect")
            .arg(fixture(&name))
            .output()
            .unwrap();
        assert_eq!(code(&output), 0, "{name}: {}", stderr(&output));
        let envelope = stdout_json(&output);
        let want = expected(&name);
        assert_eq!(envelope["kind"], want.kind, "{name}");
        assert_eq!(
            envelope["errorCode"].as_str(),
            want.error_code,
            "{name}: {envelope:#}"
        );
        let text = envelope["text"].as_str().map(str::to_owned);
        let want_text = want.text.map(|text| match text {
            Text::Literal(text) => text.to_owned(),
            Text::FromFixture => text_of_fixture(&name),
        });
        assert_eq!(text, want_text, "{name}");
        if want.kind == "tool-only" {
            assert!(
                !envelope["toolCalls"].as_array().unwrap().is_empty(),
                "{name}"
            );
        }

        let library = map_capture(&read_fixture(&name), &TurnContext::default()).envelope;
        assert_eq!(envelope, serde_json::to_value(&library).unwrap(), "{name}");
    }
}

#[test]
fn a_capture_can_come_from_stdin() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args(["inspect", "-"])
        .write_stdin(read_fixture("sse_text_deltas.sse"))
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(
        stdout_json(&output)["text"],
        "Hello! How can I assist you today?"
    );
}

#[test]
fn a_capture_that_holds_the_api_key_is_shown_without_it() {
    let key = crate::support::SECRET_KEY;
    let capture = serde_json::json!({
        "id": "resp_k", "object": "response", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "annotations": [],
                                 "text": format!("You sent me Bearer {key}.")}]}]
    });
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", key)
        .args(["inspect", "-"])
        .write_stdin(capture.to_string())
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(!shown.contains(key), "{shown}");
    assert_eq!(
        stdout_json(&output)["text"],
        "You sent me Bearer [redacted]."
    );
}

#[test]
fn a_missing_capture_is_an_error_naming_the_file() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args(["inspect", "no-such-capture.json"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 1);
    assert!(
        stderr(&output).contains("could not read the capture no-such-capture.json"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_file_that_is_no_capture_is_a_usage_error_not_an_envelope() {
    let sandbox = Sandbox::new();
    for (input, what) in [
        (
            "# My project\n\nSome notes.\n",
            "neither JSON nor an SSE stream",
        ),
        (
            "{\"name\": \"my-package\", \"version\": \"1.0.0\"}",
            "JSON, but not a reply",
        ),
        ("[1, 2, 3]", "JSON, but not a reply"),
        ("  \n", "it is empty"),
    ] {
        let output = sandbox
            .aptix()
            .args(["inspect", "-"])
            .write_stdin(input)
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{input:?}: {}", stderr(&output));
        assert!(output.stdout.is_empty(), "{input:?}");
        let said = stderr(&output);
        assert!(
            said.contains("standard input is not a captured reply") && said.contains(what),
            "{input:?}: {said}"
        );
    }
    // A body that is a reply's object, however broken, is still inspected.
    let output = sandbox
        .aptix()
        .args(["inspect", "-"])
        .write_stdin("{\"id\": \"resp_1\", \"output\": 7}")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout_json(&output)["errorCode"], "invalid_response_body");
}

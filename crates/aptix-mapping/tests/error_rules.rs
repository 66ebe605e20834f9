//! Every kind of failure becomes `kind = "error"` with `errorCode` and `errorMessage`:
//! non-2xx bodies of every shape (OpenAI's, compatible servers', not JSON at all), the
//! in-stream `error` event in both shapes, a transport failure, and this crate's own
//! errors. One `check` compares the error fields, warnings and raw body of each case.

use aptix_mapping::{
    Mapped, MappingError, StreamFold, TurnContext, map_error_body, map_mapping_error,
    map_stream_error, map_transport_failure,
};
use aptix_model::contract::Kind;
use aptix_model::wire::{ApiError, ErrorEvent, StreamEvent};

/// What an error envelope must hold.
struct Expect<'a> {
    code: &'a str,
    message: &'a str,
    warnings: &'a [&'a str],
    raw: Option<&'a str>,
    response_id: Option<&'a str>,
}

fn turn() -> TurnContext {
    let mut turn = TurnContext::new("session-1", "turn-1");
    turn.request_id = Some("req_9".into());
    turn
}

fn check(case: &str, mapped: &Mapped, expect: &Expect<'_>) {
    let envelope = &mapped.envelope;
    assert_eq!(envelope.kind, Kind::Error, "{case}: kind");
    assert_eq!(
        envelope.error_code.as_deref(),
        Some(expect.code),
        "{case}: errorCode"
    );
    assert_eq!(
        envelope.error_message.as_deref(),
        Some(expect.message),
        "{case}: errorMessage"
    );
    assert_eq!(envelope.warnings, expect.warnings, "{case}: warnings");
    assert_eq!(
        envelope.raw_response_json.as_deref(),
        expect.raw,
        "{case}: raw"
    );
    assert_eq!(
        envelope.response_continuation_id.as_deref(),
        expect.response_id,
        "{case}: responseContinuationId"
    );
    // Failures still say which turn they belong to, and nothing else is invented.
    assert_eq!(envelope.turn_id.as_deref(), Some("turn-1"), "{case}");
    assert_eq!(
        envelope.conversation_id.as_deref(),
        Some("session-1"),
        "{case}"
    );
    assert_eq!(envelope.request_id.as_deref(), Some("req_9"), "{case}");
    assert_eq!(
        envelope.finish_reason, None,
        "{case}: no response, no finish reason"
    );
    assert!(
        envelope.text.is_none() && envelope.tool_calls.is_empty(),
        "{case}"
    );
}

fn body_case(case: &str, status: u16, body: &str, code: &str, message: &str, warnings: &[&str]) {
    let mapped = map_error_body(status, body.as_bytes(), &turn());
    let raw = (!body.is_empty()).then_some(body);
    check(
        case,
        &mapped,
        &Expect {
            code,
            message,
            warnings,
            raw,
            response_id: None,
        },
    );
}

/// The warning of a 404 that names nothing it did not find.
const NO_SUCH_ENDPOINT: &str = "the server has no such endpoint (404): check the base URL (base_url, OPENAI_BASE_URL); it is the part before /responses (or /chat/completions for the Chat Completions API), and usually ends in /v1";

#[test]
fn error_bodies_of_every_shape() {
    body_case(
        "openai: code wins over type",
        401,
        r#"{"error":{"message":"Bad key.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#,
        "invalid_api_key",
        "Bad key.",
        &[],
    );
    body_case(
        "openai: type when code is null",
        500,
        r#"{"error":{"message":"Oops.","type":"server_error","param":null,"code":null}}"#,
        "server_error",
        "Oops.",
        &[],
    );
    body_case(
        "openai: the status when neither is set",
        418,
        r#"{"error":{"message":"Teapot.","type":null,"code":""}}"#,
        "418",
        "Teapot.",
        &[],
    );
    body_case(
        "a numeric code (llama.cpp, vLLM) is text",
        400,
        r#"{"error":{"message":"Too long.","type":"invalid_request_error","code":400}}"#,
        "400",
        "Too long.",
        &[],
    );
    body_case(
        "an error without a message shows the body",
        400,
        r#"{"error":{"code":"odd"}}"#,
        "odd",
        r#"{"error":{"code":"odd"}}"#,
        &[],
    );
    body_case(
        "ollama: error is a string",
        404,
        r#"{"error":"model 'llama9' not found"}"#,
        "404",
        "model 'llama9' not found",
        &[],
    );
    body_case(
        "vllm: flat error object",
        400,
        r#"{"object":"error","message":"max_tokens too large","type":"BadRequestError","param":null,"code":400}"#,
        "400",
        "max_tokens too large",
        &[],
    );
    body_case(
        "fastapi: detail",
        404,
        r#"{"detail":"Not Found"}"#,
        "404",
        "Not Found",
        &[NO_SUCH_ENDPOINT],
    );
    body_case(
        "openai: a path it does not have",
        404,
        r#"{"error":{"message":"Invalid URL (POST /api/responses)","type":"invalid_request_error","param":null,"code":null}}"#,
        "invalid_request_error",
        "Invalid URL (POST /api/responses)",
        &[NO_SUCH_ENDPOINT],
    );
    body_case(
        "openai: a model it does not have is no wrong URL",
        404,
        r#"{"error":{"message":"The model `gpt-9` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}"#,
        "model_not_found",
        "The model `gpt-9` does not exist or you do not have access to it.",
        &[],
    );
    body_case(
        "a plain-text 404",
        404,
        "Not Found",
        "404",
        "Not Found",
        // Plain text is a message as it stands: no word about JSON.
        &[NO_SUCH_ENDPOINT],
    );
    body_case(
        "a proxy's html page",
        502,
        "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\n  <center>nginx</center>\n</body>\n</html>\n",
        "502",
        "<html> <head><title>502 Bad Gateway</title></head> <body> <center>nginx</center> </body> </html>",
        &[],
    );
    body_case(
        "json cut short",
        500,
        r#"{"error":{"message":"over"#,
        "500",
        r#"{"error":{"message":"over"#,
        &[
            "error body is not a json error object (not json: EOF while parsing a string at line 1 column 25); the message is an excerpt of it",
        ],
    );
    body_case(
        "json of another shape",
        503,
        r#"["busy"]"#,
        "503",
        r#"["busy"]"#,
        &[
            "error body is not a json error object (json that is not an object); the message is an excerpt of it",
        ],
    );
    body_case(
        "json without an error member",
        503,
        r#"{"status":"down"}"#,
        "503",
        r#"{"status":"down"}"#,
        &[
            "error body is not a json error object (json without an `error` object); the message is an excerpt of it",
        ],
    );
    body_case(
        "an empty body",
        504,
        "",
        "504",
        "empty response body",
        &["error body is not a json error object (empty body); the message is an excerpt of it"],
    );
}

#[test]
fn a_long_body_is_cut_in_the_message_and_kept_whole_as_raw() {
    let body = format!("Service Unavailable {}", "é".repeat(1000));
    let mapped = map_error_body(503, body.as_bytes(), &turn());
    let message = mapped.envelope.error_message.unwrap_or_default();
    assert_eq!(
        message.chars().count(),
        301,
        "300 characters and the ellipsis"
    );
    assert!(message.starts_with("Service Unavailable éé") && message.ends_with("é…"));
    assert_eq!(
        mapped.envelope.raw_response_json.as_deref(),
        Some(body.as_str())
    );
}

#[test]
fn stream_error_events_in_both_shapes() {
    let event = |data: &str| match StreamEvent::from_json(data) {
        Ok(StreamEvent::Error(event)) => event,
        other => panic!("not an error event: {other:?}"),
    };
    let nested = r#"{"type":"error","sequence_number":2,"error":{"type":"insufficient_quota","code":"insufficient_quota","message":"Quota.","param":null}}"#;
    let flat = r#"{"type":"error","sequence_number":2,"code":"rate_limit_exceeded","message":"Slow down.","param":null}"#;
    let type_only = r#"{"type":"error","error":{"type":"server_error","message":"Boom."}}"#;
    let bare = r#"{"type":"error"}"#;
    let cases: [(&str, &str, &str, &str); 4] = [
        ("nested (the wire)", nested, "insufficient_quota", "Quota."),
        ("flat (the spec)", flat, "rate_limit_exceeded", "Slow down."),
        ("type only", type_only, "server_error", "Boom."),
        (
            "nothing at all",
            bare,
            "stream_error",
            "the stream reported an error without a message",
        ),
    ];
    for (case, data, code, message) in cases {
        let mapped = map_stream_error(&event(data), Some(data), &turn());
        let expect = Expect {
            code,
            message,
            warnings: &[],
            raw: Some(data),
            response_id: None,
        };
        check(case, &mapped, &expect);
    }
    // Without the raw text the event is serialised again.
    let event = ErrorEvent {
        sequence_number: None,
        error: None,
        code: Some("c".into()),
        message: Some("m".into()),
        param: None,
    };
    let mapped = map_stream_error(&event, None, &turn());
    assert_eq!(
        mapped.envelope.raw_response_json.as_deref(),
        Some(r#"{"code":"c","message":"m"}"#)
    );
}

#[test]
fn transport_failures_and_own_errors() {
    check(
        "transport",
        &map_transport_failure("connect_timeout", "no answer after 30 s", &turn()),
        &Expect {
            code: "connect_timeout",
            message: "no answer after 30 s",
            warnings: &[],
            raw: None,
            response_id: None,
        },
    );
    let ended = MappingError::StreamEndedEarly {
        last_sequence_number: Some(7),
        events: 8,
        response_id: Some("resp_1".into()),
        partial_text: None,
    };
    // What streamed before the end is the envelope's text; its kind says the rest.
    let ended_mid_answer = MappingError::StreamEndedEarly {
        last_sequence_number: Some(7),
        events: 8,
        response_id: Some("resp_1".into()),
        partial_text: Some("Half an".into()),
    };
    assert_eq!(
        map_mapping_error(&ended_mid_answer, &turn())
            .envelope
            .text
            .as_deref(),
        Some("Half an")
    );
    check(
        "stream ended early",
        &map_mapping_error(&ended, &turn()),
        &Expect {
            code: "stream_ended_early",
            message: "stream ended after 8 events without a final response (last sequence number 7)",
            warnings: &[],
            raw: None,
            response_id: Some("resp_1"),
        },
    );
    let failed = MappingError::StreamFailed {
        error: Box::new(ApiError {
            message: "Quota.".into(),
            kind: Some("insufficient_quota".into()),
            param: None,
            code: None,
        }),
        sequence_number: Some(2),
        response_id: Some("resp_2".into()),
        partial_text: None,
    };
    assert_eq!(
        failed.to_string(),
        "stream failed with insufficient_quota: Quota."
    );
    check(
        "stream failed",
        &map_mapping_error(&failed, &turn()),
        &Expect {
            code: "insufficient_quota",
            message: "Quota.",
            warnings: &[],
            raw: None,
            response_id: Some("resp_2"),
        },
    );
    let invalid = aptix_mapping::map_response_body(b"  <html>oops</html>", &turn())
        .expect_err("html is not a response");
    check(
        "invalid response body",
        &map_mapping_error(&invalid, &turn()),
        &Expect {
            code: "invalid_response_body",
            message: "response body is not a responses api response: expected value at line 1 column 3; body: <html>oops</html>",
            warnings: &[],
            raw: None,
            response_id: None,
        },
    );
    // An empty fold ends early, with no response id to keep.
    let error = StreamFold::new().finish().expect_err("no events");
    assert_eq!(error.code(), "stream_ended_early");
}

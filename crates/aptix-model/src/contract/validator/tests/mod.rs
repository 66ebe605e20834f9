//! One test per AGN-034 rule, each through [`check`]: a request and the exact
//! `(path, code)` pairs it must be rejected with (none for a valid request). The rules of
//! a user turn's inputs and of tool results have their own files. With the `openapi`
//! feature, `check` also asserts that the request's OpenAPI schema agrees with the
//! verdict (`schema.rs`).

#[cfg(feature = "openapi")]
mod schema;
mod tool_results;
mod user_turn;

use serde_json::{Value, json};

use super::validate;
use crate::contract::limits::{MAX_ID_BYTES, MAX_REQUEST_BYTES, MAX_VIOLATIONS};
use crate::contract::violation::ViolationCode::{self, *};
use crate::contract::{AgentExecuteRequest, FileSource, ToolOutcome};

/// Validates `request` and asserts that exactly the `expected` violations are reported
/// (in any order), and that every message is a lowercase sentence without a period.
#[track_caller]
fn check(request: Value, expected: &[(&str, ViolationCode)]) {
    let mut actual: Vec<(String, ViolationCode)> = match validate(&request) {
        Ok(_) => Vec::new(),
        Err(rejection) => {
            for violation in rejection.violations() {
                let message = &violation.message;
                assert!(
                    !message.is_empty()
                        && !message.starts_with(char::is_uppercase)
                        && !message.ends_with('.'),
                    "message style: {message:?}"
                );
            }
            rejection
                .violations()
                .iter()
                .map(|violation| (violation.path.clone(), violation.code))
                .collect()
        }
    };
    let mut expected: Vec<(String, ViolationCode)> = expected
        .iter()
        .map(|(path, code)| ((*path).to_owned(), *code))
        .collect();
    actual.sort();
    expected.sort();
    assert_eq!(actual, expected, "request: {request}");
    #[cfg(feature = "openapi")]
    schema::agrees(
        &request,
        &actual.iter().map(|(_, code)| *code).collect::<Vec<_>>(),
    );
}

/// `base` with `extra`'s fields set over it.
fn merged(mut base: Value, extra: Value) -> Value {
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
    base
}

/// `value` without the top-level fields `keys`.
fn without(mut value: Value, keys: &[&str]) -> Value {
    if let Some(object) = value.as_object_mut() {
        for key in keys {
            object.remove(*key);
        }
    }
    value
}

/// A valid user turn with `extra` fields set over it.
fn user(extra: Value) -> Value {
    merged(
        json!({"sessionId": "s1", "turnId": "t1", "instruction": "explain main"}),
        extra,
    )
}

/// A valid user turn without an instruction, with `extra` fields set over it.
fn inputs(extra: Value) -> Value {
    without(user(extra), &["instruction"])
}

/// A valid tool result with `extra` fields set over it.
fn result(extra: Value) -> Value {
    merged(
        json!({"toolCallId": "call_1", "executionMs": 5, "resultJson": "{}"}),
        extra,
    )
}

/// A tool continuation with `results` and `extra` fields set over it.
fn continuation(results: Value, extra: Value) -> Value {
    merged(
        json!({"sessionId": "s1", "turnId": "t1", "toolResults": results}),
        extra,
    )
}

/// A tool continuation with one result built from `extra`.
fn one_result(extra: Value) -> Value {
    continuation(json!([result(extra)]), json!({}))
}

#[test]
fn valid_requests_pass() {
    check(user(json!({})), &[]);
    check(inputs(json!({"files": [{"path": "src/lib.rs"}]})), &[]);
    check(
        inputs(json!({"images": [{"path": "a.png", "contentBase64": "AAAA"}]})),
        &[],
    );
    check(
        user(json!({
            "files": [
                {"path": "src/lib.rs"},
                {"path": "notes.md", "content": "", "mediaType": "text/markdown"},
                {"path": r"docs\spec.pdf", "contentBase64": "JVBERi0x", "mediaType": "application/pdf"}
            ],
            "images": [{"path": "shot.png", "contentBase64": "iVBORw0KGgo=", "mediaType": "image/png"}],
            "ragScope": {"conditions": [
                {"key": "path", "operator": "==", "values": ["src/lib.rs"]},
                {"key": "path", "operator": "!=", "values": ["", "x"]},
                {"key": "language", "operator": "contains", "values": ["rust"]},
                {"key": "repo", "operator": "does_not_contain", "values": ["vendor"]}
            ]},
            "hints": {"workspaceId": "w1", "repository": "aptix", "language": "rust"},
            "stream": true
        })),
        &[],
    );
    check(
        user(json!({"ragScope": {}, "hints": {}, "files": [], "stream": false})),
        &[],
    );
    check(one_result(json!({})), &[]);
    check(one_result(json!({"resultJson": {"rows": [1, 2]}})), &[]);
    check(
        one_result(json!({"resultJson": 3, "executionMs": 12.0})),
        &[],
    );
    check(
        one_result(json!({"resultJson": null, "errorMessage": "boom"})),
        &[],
    );
}

#[test]
fn pascal_case_is_accepted_and_decodes_the_same() {
    let pascal = json!({
        "SessionId": "s1", "TurnId": "t1", "Instruction": "explain main",
        "Files": [{"Path": "a.rs", "Content": "x", "MediaType": "text/x-rust"}],
        "RagScope": {"Conditions": [{"Key": "path", "Operator": "==", "Values": ["a.rs"]}]},
        "Hints": {"WorkspaceId": "w", "Repository": "r", "Language": "rust"}, "Stream": true
    });
    let camel = json!({
        "sessionId": "s1", "turnId": "t1", "instruction": "explain main",
        "files": [{"path": "a.rs", "content": "x", "mediaType": "text/x-rust"}],
        "ragScope": {"conditions": [{"key": "path", "operator": "==", "values": ["a.rs"]}]},
        "hints": {"workspaceId": "w", "repository": "r", "language": "rust"}, "stream": true
    });
    assert_eq!(validate(&pascal).unwrap(), validate(&camel).unwrap());
    let results = json!([{"ToolCallId": "c", "ExecutionMs": 1, "ErrorMessage": "no"}]);
    check(
        json!({"SessionId": "s", "TurnId": "t", "ToolResults": results}),
        &[],
    );
}

#[test]
fn the_request_must_be_an_object() {
    check(json!([1]), &[("", WrongType)]);
    check(json!("sessionId"), &[("", WrongType)]);
    check(Value::Null, &[("", WrongType)]);
}

#[test]
fn bodies_must_be_json_and_within_the_size_limit() {
    let path_and_code = |bytes: &[u8]| {
        let rejection = AgentExecuteRequest::from_json_slice(bytes).unwrap_err();
        let violation = &rejection.violations()[0];
        (
            rejection.violations().len(),
            violation.path.clone(),
            violation.code,
        )
    };
    assert_eq!(
        path_and_code(b"{\"sessionId\": "),
        (1, String::new(), InvalidJson)
    );
    assert_eq!(path_and_code(b"\xff\xfe"), (1, String::new(), InvalidJson));
    assert_eq!(path_and_code(b""), (1, String::new(), InvalidJson));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        path_and_code(deep.as_bytes()),
        (1, String::new(), InvalidJson)
    );
    let huge = vec![b' '; MAX_REQUEST_BYTES + 1];
    assert_eq!(path_and_code(&huge), (1, String::new(), TooLarge));
    // A number past f64's range is JSON, but not one to read: said so, not "not JSON".
    let vast = br#"{"sessionId": "s", "turnId": "t", "instruction": "hi", "stream": 1e400}"#;
    assert_eq!(path_and_code(vast), (1, String::new(), InvalidJson));
    let message = AgentExecuteRequest::from_json_slice(vast)
        .expect_err("out of range")
        .to_string();
    assert!(
        message.contains("could not be read as JSON: number out of range"),
        "{message}"
    );
    let ok = br#"{"sessionId": "s", "turnId": "t", "instruction": "hi"}"#;
    assert!(AgentExecuteRequest::from_json_slice(ok).is_ok());
    // A leading byte order mark is skipped (RFC 8259 allows it); one anywhere else, or
    // only half of one, is not JSON.
    let with_bom = [&b"\xEF\xBB\xBF"[..], ok].concat();
    assert_eq!(
        AgentExecuteRequest::from_json_slice(&with_bom).ok(),
        AgentExecuteRequest::from_json_slice(ok).ok()
    );
    let twice = [&b"\xEF\xBB\xBF\xEF\xBB\xBF"[..], ok].concat();
    assert_eq!(path_and_code(&twice), (1, String::new(), InvalidJson));
    let half = [&b"\xEF\xBB"[..], ok].concat();
    assert_eq!(path_and_code(&half), (1, String::new(), InvalidJson));
    // A member given twice would run on whichever copy the parser kept: refused, where.
    assert_eq!(
        path_and_code(
            br#"{"sessionId": "a", "turnId": "t", "instruction": "hi", "sessionId": "b"}"#
        ),
        (1, "sessionId".to_owned(), DuplicateField)
    );
    assert_eq!(
        path_and_code(
            br#"{"sessionId": "s", "turnId": "t", "toolResults": [{"toolCallId": "c", "resultJson": {"a": 1, "a": 2}}]}"#
        ),
        (1, "toolResults[0].resultJson.a".to_owned(), DuplicateField)
    );
}

#[test]
fn ids_are_required_non_blank_strings() {
    check(
        without(user(json!({})), &["sessionId"]),
        &[("sessionId", Missing)],
    );
    check(
        without(user(json!({})), &["turnId"]),
        &[("turnId", Missing)],
    );
    check(user(json!({"sessionId": null})), &[("sessionId", Missing)]);
    check(user(json!({"sessionId": 5})), &[("sessionId", WrongType)]);
    check(user(json!({"turnId": ["t"]})), &[("turnId", WrongType)]);
    check(user(json!({"sessionId": ""})), &[("sessionId", Empty)]);
    check(user(json!({"turnId": " \n\t"})), &[("turnId", Empty)]);
    check(
        user(json!({"sessionId": "x".repeat(MAX_ID_BYTES + 1)})),
        &[("sessionId", TooLarge)],
    );
    check(
        continuation(json!([result(json!({}))]), json!({"turnId": ""})),
        &[("turnId", Empty)],
    );
    check(
        json!({"toolResults": [result(json!({}))]}),
        &[("sessionId", Missing), ("turnId", Missing)],
    );
}

#[test]
fn a_field_given_in_both_casings_is_a_violation() {
    check(
        user(json!({"SessionId": "s2"})),
        &[("sessionId", DuplicateField)],
    );
    check(
        one_result(json!({"ToolCallId": "c"})),
        &[("toolResults[0].toolCallId", DuplicateField)],
    );
    check(user(json!({"SessionId": null})), &[]);
}

#[test]
fn server_owned_fields_are_violations() {
    for name in [
        "mode",
        "responseContinuationId",
        "previousResponseId",
        "conversationId",
        "model",
        "toolsJson",
        "toolChoiceName",
        "systemPrompt",
        "temperature",
        "requestId",
        "correlationId",
        "diagnostics",
        "agentContextId",
        "conversationContextId",
    ] {
        check(user(json!({ name: "x" })), &[(name, ServerOwned)]);
        check(
            continuation(json!([result(json!({}))]), json!({ name: 1 })),
            &[(name, ServerOwned)],
        );
    }
    check(user(json!({"Mode": "codegen"})), &[("mode", ServerOwned)]);
    check(
        user(json!({"mode": "a", "Mode": "b"})),
        &[("mode", ServerOwned)],
    );
    check(
        user(json!({"previous_response_id": "resp_1"})),
        &[("previousResponseId", ServerOwned)],
    );
    check(
        user(json!({"instructions": "be brief"})),
        &[("instructions", ServerOwned)],
    );
    check(user(json!({"mode": null})), &[]);
}

#[test]
fn unknown_fields_are_violations() {
    check(user(json!({"bogus": 1})), &[("bogus", UnknownField)]);
    check(user(json!({"context": {}})), &[("context", UnknownField)]);
    check(
        without(user(json!({"session_id": "s"})), &["sessionId"]),
        &[("session_id", UnknownField), ("sessionId", Missing)],
    );
    check(
        user(json!({"files": [{"path": "a", "bogus": 1}]})),
        &[("files[0].bogus", UnknownField)],
    );
    check(
        user(json!({"images": [{"path": "a.png", "content": "x"}]})),
        &[("images[0].content", UnknownField)],
    );
    check(
        user(json!({"ragScope": {"where": 1}})),
        &[("ragScope.where", UnknownField)],
    );
    let condition = json!({"key": "k", "operator": "==", "values": ["v"], "not": true});
    check(
        user(json!({"ragScope": {"conditions": [condition]}})),
        &[("ragScope.conditions[0].not", UnknownField)],
    );
    check(
        user(json!({"hints": {"branch": "main"}})),
        &[("hints.branch", UnknownField)],
    );
    check(
        one_result(json!({"model": "x"})),
        &[("toolResults[0].model", UnknownField)],
    );
    check(user(json!({"bogus": null})), &[]);
}

#[test]
fn unknown_field_messages_suggest_the_field_meant() {
    let rejection = validate(&user(json!({"Tool_Results": 1}))).unwrap_err();
    assert!(
        rejection.violations()[0]
            .message
            .ends_with("did you mean toolResults?")
    );
}

#[test]
fn a_user_turn_needs_an_instruction_or_an_input() {
    check(inputs(json!({})), &[("instruction", MissingInput)]);
    check(
        inputs(json!({"files": [], "images": []})),
        &[("instruction", MissingInput)],
    );
    check(
        inputs(json!({"instruction": null, "stream": true})),
        &[("instruction", MissingInput)],
    );
    check(user(json!({"toolResults": null})), &[]);
}

#[test]
fn every_violation_is_reported_at_once() {
    let request = json!({
        "SessionId": 5, "mode": "codegen", "instruction": "x",
        "toolResults": [
            {"toolCallId": "a", "executionMs": -3, "resultJson": "{}"},
            {"toolCallId": " ", "executionMs": 1},
            {"toolCallId": "a", "executionMs": 1, "errorMessage": "e", "extra": 1}
        ]
    });
    check(
        request,
        &[
            ("sessionId", WrongType),
            ("turnId", Missing),
            ("mode", ServerOwned),
            ("instruction", NotAllowedOnToolContinuation),
            ("toolResults[0].executionMs", InvalidNumber),
            ("toolResults[1].toolCallId", Empty),
            ("toolResults[1]", MissingOutcome),
            ("toolResults[2].extra", UnknownField),
            ("toolResults[2].toolCallId", DuplicateToolCallId),
        ],
    );
}

#[test]
fn reports_are_capped() {
    let mut request = user(json!({}));
    if let Some(object) = request.as_object_mut() {
        for index in 0..MAX_VIOLATIONS + 5 {
            object.insert(format!("x{index}"), json!(1));
        }
    }
    let rejection = validate(&request).unwrap_err();
    assert_eq!(rejection.violations().len(), MAX_VIOLATIONS + 1);
    let last = &rejection.violations()[MAX_VIOLATIONS];
    assert_eq!((last.path.as_str(), last.code), ("", TooManyViolations));
    assert!(
        last.message.starts_with("5 more violations"),
        "{}",
        last.message
    );
}

#[test]
fn validated_values_are_typed_and_normalised() {
    let request = validate(&user(
        json!({"files": [{"path": r".\src\main.rs", "content": "fn main() {}"}]}),
    ))
    .unwrap();
    let AgentExecuteRequest::UserTurn(turn) = &request else {
        panic!("expected a user turn")
    };
    assert_eq!(turn.files[0].path.as_str(), "src/main.rs");
    assert_eq!(
        turn.files[0].source,
        FileSource::Text("fn main() {}".into())
    );
    assert!(!turn.stream && turn.rag_scope.is_none() && turn.scope_conditions().is_empty());
    assert_eq!(
        (request.session_id().as_str(), request.turn_id().as_str()),
        ("s1", "t1")
    );

    let request = validate(&one_result(json!({"resultJson": {"b": [1, 2], "a": null}}))).unwrap();
    let AgentExecuteRequest::ToolContinuation(continuation) = &request else {
        panic!("expected a continuation")
    };
    let ToolOutcome::Result(result) = &continuation.tool_results[0].outcome else {
        panic!("expected a result")
    };
    assert_eq!(result.as_str(), r#"{"a":null,"b":[1,2]}"#);
    assert!(request.is_tool_continuation());
}

#[test]
fn valid_requests_survive_encode_and_decode() {
    for request in [
        user(json!({
            "files": [{"path": "a/b.rs", "content": "x"}, {"path": "c.bin", "contentBase64": "AAAA", "mediaType": "application/octet-stream"}, {"path": "d"}],
            "images": [{"path": "e.png"}],
            "ragScope": {"conditions": [{"key": "k", "operator": "does_not_contain", "values": ["v", ""]}]},
            "hints": {"language": "rust"},
            "stream": true
        })),
        continuation(
            json!([result(json!({})), {"toolCallId": "c2", "executionMs": 0, "errorMessage": "no"}]),
            json!({}),
        ),
    ] {
        let decoded = validate(&request).unwrap();
        let encoded = serde_json::to_value(&decoded).unwrap();
        assert_eq!(encoded, request, "canonical JSON is what was sent");
        assert_eq!(validate(&encoded).unwrap(), decoded);
        let through_serde: AgentExecuteRequest = serde_json::from_value(encoded).unwrap();
        assert_eq!(through_serde, decoded);
    }
}

#[test]
fn serde_decoding_reports_the_rejection() {
    let error = serde_json::from_value::<AgentExecuteRequest>(json!({"turnId": "t"})).unwrap_err();
    let text = error.to_string();
    assert!(text.contains("sessionId: sessionId is required"), "{text}");
}

//! Reading replies and re-asking: which replies are accepted, rejected (with every
//! error) or end the Request, and the exact body of the attempt after a rejection.

use aptix_model::wire::Response;
use aptix_schema::{
    AttemptProblem, HandlerRegistry, Prepared, Reply, SchemaRequest, SchemaSupport, StopReason,
    Strategy, Verdict, Violation, prepare,
};
use aptix_testkit::spec::assert_valid_create_response;
use serde_json::{Value, json};

fn prepared(strategy: Strategy) -> Prepared {
    let request = SchemaRequest::new(
        "m",
        json!({
            "type": "object",
            "properties": {
                "capital": {"type": "string", "minLength": 2},
                "population": {"type": "integer", "minimum": 0}
            },
            "required": ["capital"]
        }),
    )
    .user("Capital of France?");
    prepare(
        request,
        &HandlerRegistry::default(),
        &SchemaSupport::full(),
        Some(strategy),
    )
    .expect("prepares")
}

fn response(output: Value) -> Response {
    serde_json::from_value(json!({"id": "resp_1", "status": "completed", "output": output}))
        .expect("a response")
}

fn message(text: &str) -> Value {
    json!([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}])
}

fn call(name: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name, "arguments": arguments})
}

fn errors_of(verdict: &Verdict) -> Vec<String> {
    match verdict {
        Verdict::Rejected(failure) => failure.errors(),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn a_valid_answer_is_accepted_in_every_strategy() {
    let answer = r#"{"capital": "Paris", "population": 2100000}"#;
    for (strategy, output) in [
        (Strategy::NativeSchema, message(answer)),
        (Strategy::JsonObject, message(answer)),
        (
            Strategy::PromptOnly,
            message(&format!("Sure:\n```json\n{answer}\n```")),
        ),
        (
            Strategy::ToolCall,
            json!([call("generate_response", answer)]),
        ),
    ] {
        let verdict = prepared(strategy).evaluate(&response(output), 1);
        assert_eq!(
            verdict,
            Verdict::Accepted(json!({"capital": "Paris", "population": 2_100_000})),
            "{strategy:?}"
        );
    }
}

#[test]
fn a_null_for_an_optional_property_is_read_as_absent_in_every_strategy() {
    // Strict mode makes the model spell an absent optional property `null`, and JSON-mode
    // models often do; the caller's schema says such a member is left out, and the
    // solution is what the caller's schema accepts.
    let answer = r#"{"capital": "Paris", "population": null}"#;
    for (strategy, output) in [
        (Strategy::NativeSchema, message(answer)),
        (Strategy::JsonObject, message(answer)),
        (Strategy::PromptOnly, message(answer)),
        (
            Strategy::ToolCall,
            json!([call("generate_response", answer)]),
        ),
    ] {
        assert_eq!(
            prepared(strategy).evaluate(&response(output), 1),
            Verdict::Accepted(json!({"capital": "Paris"})),
            "{strategy:?}"
        );
        // Left out, as the caller's schema allows, by a provider that does not enforce
        // strict mode: accepted too.
        let sparse = r#"{"capital": "Paris"}"#;
        let output = match strategy {
            Strategy::ToolCall => json!([call("generate_response", sparse)]),
            _ => message(sparse),
        };
        assert_eq!(
            prepared(strategy).evaluate(&response(output), 1),
            Verdict::Accepted(json!({"capital": "Paris"})),
            "{strategy:?}"
        );
    }
    // A required property's `null` is still wrong.
    let verdict =
        prepared(Strategy::NativeSchema).evaluate(&response(message(r#"{"capital": null}"#)), 1);
    assert_eq!(
        errors_of(&verdict),
        ["at /capital: null is not of type \"string\""]
    );
}

#[test]
fn every_violation_is_reported_with_its_pointer_even_of_removed_keywords() {
    let verdict = prepared(Strategy::NativeSchema).evaluate(
        &response(message(r#"{"capital": "P", "population": -3, "extra": 1}"#)),
        2,
    );
    let Verdict::Rejected(failure) = &verdict else {
        panic!("expected a rejection, got {verdict:?}");
    };
    assert_eq!(failure.attempt, 2);
    let AttemptProblem::Invalid { violations, .. } = &failure.problem else {
        panic!("expected violations, got {:?}", failure.problem);
    };
    let mut pointers: Vec<&str> = violations
        .iter()
        .map(|v| v.instance_path.as_str())
        .collect();
    pointers.sort_unstable();
    // `minLength` is not sent in strict mode but is still checked.
    assert_eq!(pointers, ["", "/capital", "/population"]);
    assert_eq!(
        failure.reply,
        Reply::Text(r#"{"capital": "P", "population": -3, "extra": 1}"#.into())
    );
    let mut lines = errors_of(&verdict);
    lines.sort_unstable();
    assert!(lines[0].starts_with("at /capital: "), "{lines:?}");
    assert!(lines[1].starts_with("at /population: "), "{lines:?}");
    // The extra member is the whole answer's fault: said so, not `/` (the member "").
    assert!(lines[2].starts_with("at the root: "), "{lines:?}");
}

#[test]
fn unusable_replies_are_rejected_with_what_was_expected() {
    let cases = [
        (
            Strategy::NativeSchema,
            message("   "),
            "the reply holds no answer: expected a JSON answer",
        ),
        (
            Strategy::NativeSchema,
            message("```json\n{\"capital\":\n```"),
            "the answer is not valid JSON",
        ),
        (
            Strategy::JsonObject,
            message("Paris"),
            "the answer is not valid JSON",
        ),
        (
            Strategy::ToolCall,
            message("Paris"),
            "expected a call of generate_response",
        ),
        (
            Strategy::ToolCall,
            json!([call("generate_response", "{\"capital\":")]),
            "the answer is not valid JSON",
        ),
        (Strategy::NativeSchema, json!([]), "expected a JSON answer"),
    ];
    for (strategy, output, expected) in cases {
        let errors = errors_of(&prepared(strategy).evaluate(&response(output.clone()), 1));
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].contains(expected),
            "{strategy:?} {output}: {errors:?}"
        );
    }
    // A native answer fenced as a JSON-mode model writes one (a server that ignored the
    // format) is read, not rejected: what is in the fence is judged.
    let fenced = prepared(Strategy::NativeSchema).evaluate(
        &response(message("```json\n{\"capital\":\"Paris\"}\n```")),
        1,
    );
    assert!(
        matches!(&fenced, Verdict::Accepted(value) if value["capital"] == "Paris"),
        "{fenced:?}"
    );
}

#[test]
fn refusals_failures_truncation_and_tool_calls_end_the_request() {
    let refusal = json!([{"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "I cannot help with that."}]}]);
    let verdict = prepared(Strategy::NativeSchema).evaluate(&response(refusal), 1);
    assert_eq!(
        verdict,
        Verdict::Stopped(StopReason::Refused {
            refusal: "I cannot help with that.".into()
        })
    );

    let failed: Response = serde_json::from_value(json!({
        "id": "resp_2", "status": "failed", "output": [],
        "error": {"code": "server_error", "message": "The server had an error."}
    }))
    .expect("a response");
    assert_eq!(
        prepared(Strategy::NativeSchema).evaluate(&failed, 1),
        Verdict::Stopped(StopReason::Failed {
            code: Some("server_error".into()),
            message: "The server had an error.".into()
        })
    );

    let incomplete: Response = serde_json::from_value(json!({
        "id": "resp_3", "status": "incomplete", "output": message("{\"capital\": \"Pa"),
        "incomplete_details": {"reason": "max_output_tokens"}
    }))
    .expect("a response");
    assert_eq!(
        prepared(Strategy::NativeSchema).evaluate(&incomplete, 1),
        Verdict::Stopped(StopReason::Incomplete {
            reason: Some("max_output_tokens".into())
        })
    );

    for strategy in [Strategy::NativeSchema, Strategy::ToolCall] {
        let verdict = prepared(strategy).evaluate(&response(json!([call("get_weather", "{}")])), 1);
        assert!(
            matches!(&verdict, Verdict::Stopped(StopReason::ToolCalls { calls }) if calls[0].name == "get_weather"),
            "{strategy:?}: {verdict:?}"
        );
    }
}

#[test]
fn a_rejected_text_answer_is_replayed_with_the_errors_as_a_user_message() {
    let mut prepared = prepared(Strategy::NativeSchema);
    let Verdict::Rejected(failure) = prepared.evaluate(&response(message(r#"{"capital": 3}"#)), 1)
    else {
        panic!("expected a rejection");
    };
    prepared.reask(&failure);
    let body = serde_json::to_value(prepared.body()).expect("serialises");
    assert_valid_create_response("re-ask", &body);
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Capital of France?"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "{\"capital\": 3}", "annotations": []}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                "Your previous answer was rejected:\n- at /capital: 3 is not of type \"string\"\n\nAnswer again with a JSON value that conforms to the schema and corrects every error listed."}]}
        ])
    );
    assert_eq!(body["text"]["format"]["type"], "json_schema");
    assert!(body.get("previous_response_id").is_none());
}

#[test]
fn a_rejected_call_is_replayed_with_the_errors_as_its_output() {
    let mut prepared = prepared(Strategy::ToolCall);
    let Verdict::Rejected(failure) =
        prepared.evaluate(&response(json!([call("generate_response", "{}")])), 1)
    else {
        panic!("expected a rejection");
    };
    prepared.reask(&failure);
    let body = serde_json::to_value(prepared.body()).expect("serialises");
    assert_valid_create_response("re-ask", &body);
    let input = body["input"].as_array().expect("items");
    assert_eq!(input.len(), 4);
    assert_eq!(
        input[2],
        json!({"type": "function_call", "call_id": "call_1", "name": "generate_response", "arguments": "{}"})
    );
    assert_eq!(
        input[3],
        json!({"type": "function_call_output", "call_id": "call_1", "output":
            "Your previous answer was rejected:\n- at the root: \"capital\" is a required property\n\nCall generate_response again with arguments that correct every error listed."})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "name": "generate_response"})
    );
}

#[test]
fn a_reply_without_an_answer_is_followed_by_the_feedback_alone() {
    let mut prepared = prepared(Strategy::JsonObject);
    let Verdict::Rejected(failure) = prepared.evaluate(&response(json!([])), 1) else {
        panic!("expected a rejection");
    };
    assert_eq!(failure.reply, Reply::Nothing);
    prepared.reask(&failure);
    let input = serde_json::to_value(&prepared.body().input).expect("serialises");
    assert_eq!(input.as_array().map(Vec::len), Some(3));
    assert_eq!(input[2]["role"], "user");
}

#[test]
fn long_error_lists_are_cut_in_the_feedback_but_kept_in_the_failure() {
    let properties: serde_json::Map<String, Value> = (0..30)
        .map(|index| (format!("f{index:02}"), json!({"type": "integer"})))
        .collect();
    let names: Vec<String> = properties.keys().cloned().collect();
    let request = SchemaRequest::new(
        "m",
        json!({"type": "object", "properties": properties, "required": names}),
    )
    .user("Numbers");
    let mut prepared = prepare(
        request,
        &HandlerRegistry::default(),
        &SchemaSupport::full(),
        None,
    )
    .expect("prepares");
    let Verdict::Rejected(failure) = prepared.evaluate(&response(message("{}")), 1) else {
        panic!("expected a rejection");
    };
    assert_eq!(failure.errors().len(), 30);
    prepared.reask(&failure);
    let input = serde_json::to_value(&prepared.body().input).expect("serialises");
    let feedback = input[2]["content"][0]["text"].as_str().expect("text");
    assert_eq!(feedback.matches("\n- at").count(), 20);
    assert!(feedback.contains("- and 10 more errors"));
}

#[test]
fn violations_read_as_sentences() {
    let violation = Violation {
        instance_path: String::new(),
        message: "\"a\" is a required property".into(),
    };
    // The empty pointer is the whole answer (`/` would name the member "").
    assert_eq!(
        violation.to_string(),
        "at the root: \"a\" is a required property"
    );
}

#[test]
fn an_answer_is_held_to_the_formats_of_its_schema_in_every_strategy() {
    // Strict mode does not take `uri`, so it is not sent; the answer is still checked
    // against it, as the docs say (it was read as an annotation and let through).
    for strategy in [Strategy::NativeSchema, Strategy::JsonObject] {
        let request = SchemaRequest::new(
            "m",
            json!({
                "type": "object",
                "properties": {
                    "site": {"type": "string", "format": "uri"},
                    "mail": {"type": "string", "format": "email"}
                },
                "required": ["site", "mail"]
            }),
        )
        .user("Where?");
        let prepared = prepare(
            request,
            &HandlerRegistry::default(),
            &SchemaSupport::full(),
            Some(strategy),
        )
        .expect("prepares");
        let good = r#"{"site": "https://example.com/", "mail": "a@example.com"}"#;
        assert!(
            matches!(
                prepared.evaluate(&response(message(good)), 1),
                Verdict::Accepted(_)
            ),
            "{strategy:?}"
        );
        let bad = r#"{"site": "zz", "mail": "not-an-email"}"#;
        let errors = errors_of(&prepared.evaluate(&response(message(bad)), 1));
        assert_eq!(errors.len(), 2, "{strategy:?}: {errors:?}");
        assert!(errors.iter().any(|e| e.contains("/site")), "{errors:?}");
        assert!(errors.iter().any(|e| e.contains("/mail")), "{errors:?}");
    }
}

#[test]
fn a_schema_the_validator_refuses_is_named_where_it_is_wrong() {
    let request = SchemaRequest::new(
        "m",
        json!({
            "type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "string", "maxLength": -1}}}},
            "required": ["a"]
        }),
    )
    .user("?");
    let error = prepare(
        request,
        &HandlerRegistry::default(),
        &SchemaSupport::full(),
        Some(Strategy::JsonObject),
    )
    .expect_err("refused");
    let text = error.to_string();
    assert!(
        text.contains("/properties/a/properties/b/maxLength"),
        "{text}"
    );
}

#[test]
fn a_server_that_ignores_the_forced_call_and_answers_json_in_text_is_read() {
    // Servers that do not honour a forced `tool_choice` answer as a JSON-mode model
    // does; the answer is judged as the call's arguments would be.
    let verdict = prepared(Strategy::ToolCall).evaluate(
        &response(message("Here it is: {\"capital\": \"Paris\"}")),
        1,
    );
    assert_eq!(verdict, Verdict::Accepted(json!({"capital": "Paris"})));
    // Words without JSON are still no call.
    let errors = errors_of(&prepared(Strategy::ToolCall).evaluate(&response(message("Paris")), 1));
    assert!(
        errors[0].contains("expected a call of generate_response"),
        "{errors:?}"
    );
}

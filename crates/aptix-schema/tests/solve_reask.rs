//! The re-ask loop against scripted providers: a rejected first answer is re-asked with
//! its errors and the second accepted; after the last attempt every attempt's errors
//! are reported; usage is the sum; refusals and provider errors end the loop.

use aptix_client::{Capabilities, ClientError, FakeProvider};
use aptix_model::wire::Response;
use aptix_schema::{AttemptProblem, SchemaRequest, StopReason, Strategy};
use aptix_schema::{SchemaError, SolveOptions, solve_value, solve_value_with};
use serde_json::{Value, json};

fn request() -> SchemaRequest {
    SchemaRequest::new(
        "gpt-4o-mini",
        json!({
            "type": "object",
            "properties": {"capital": {"type": "string", "minLength": 2}, "population": {"type": "integer"}},
            "required": ["capital", "population"]
        }),
    )
    .user("Capital of France?")
}

/// A reply with `text` and usage `n` input tokens, `n` output tokens (`n` cached, 1
/// reasoning).
fn text_reply(id: &str, text: &str, n: u64) -> Response {
    serde_json::from_value(json!({
        "id": id, "status": "completed",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}],
        "usage": {
            "input_tokens": n, "output_tokens": n, "total_tokens": 2 * n,
            "input_tokens_details": {"cached_tokens": n}, "output_tokens_details": {"reasoning_tokens": 1}
        }
    }))
    .expect("a response")
}

fn call_reply(id: &str, arguments: &str) -> Response {
    serde_json::from_value(json!({
        "id": id, "status": "completed",
        "output": [{"type": "function_call", "call_id": format!("call_{id}"), "name": "generate_response", "arguments": arguments}],
        "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10}
    }))
    .expect("a response")
}

/// Every input text of the request at `index` the provider received, joined.
fn sent_texts(provider: &FakeProvider, index: usize) -> Vec<Value> {
    let body = serde_json::to_value(&provider.requests()[index]).expect("serialises");
    body["input"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_rejected_answer_is_re_asked_with_its_errors_and_the_second_accepted() {
    let provider = FakeProvider::new();
    provider
        .push_response(text_reply(
            "resp_1",
            r#"{"capital": "P", "population": "many"}"#,
            10,
        ))
        .push_response(text_reply(
            "resp_2",
            r#"{"capital": "Paris", "population": 2100000}"#,
            20,
        ));
    let solution = solve_value(&provider, request()).await.expect("solves");

    assert_eq!(
        solution.value,
        json!({"capital": "Paris", "population": 2_100_000})
    );
    assert_eq!(solution.attempts, 2);
    assert_eq!(solution.response_id, "resp_2");
    assert_eq!(solution.failures.len(), 1);
    assert!(
        matches!(&solution.failures[0].problem, AttemptProblem::Invalid { violations, .. } if violations.len() == 2)
    );
    assert_eq!(
        (
            solution.usage.prompt_tokens,
            solution.usage.completion_tokens,
            solution.usage.total_tokens,
            solution.usage.cached_tokens,
            solution.usage.reasoning_tokens
        ),
        (30, 30, 60, 30, 2)
    );

    let second = sent_texts(&provider, 1);
    assert_eq!(second.len(), 3, "question, rejected answer, feedback");
    assert_eq!(second[1]["role"], "assistant");
    assert_eq!(
        second[1]["content"][0]["text"],
        r#"{"capital": "P", "population": "many"}"#
    );
    let feedback = second[2]["content"][0]["text"]
        .as_str()
        .expect("feedback text");
    // `minLength` is not sent in strict mode; it is still enforced and fed back.
    assert!(
        feedback.contains("at /capital: \"P\" is shorter than 2 characters"),
        "{feedback}"
    );
    assert!(
        feedback.contains("at /population: \"many\" is not of type \"integer\""),
        "{feedback}"
    );
    let first = serde_json::to_value(&provider.requests()[0]).expect("serialises");
    let second = serde_json::to_value(&provider.requests()[1]).expect("serialises");
    assert_eq!(
        first["text"], second["text"],
        "the same schema every attempt"
    );
    assert!(second.get("previous_response_id").is_none());
}

#[tokio::test]
async fn after_the_last_attempt_every_attempts_errors_are_reported() {
    let provider = FakeProvider::new();
    provider
        .push_response(text_reply("resp_1", "not json", 1))
        .push_response(text_reply(
            "resp_2",
            r#"{"capital": 1, "population": 1}"#,
            2,
        ))
        .push_response(text_reply("resp_3", "", 3));
    let result = solve_value(&provider, request()).await;
    let Err(SchemaError::Exhausted { log }) = result else {
        panic!("expected exhaustion, got {result:?}");
    };
    assert_eq!(log.attempts, 3);
    assert_eq!(provider.requests().len(), 3);
    assert_eq!(log.usage.total_tokens, 2 + 4 + 6);
    let attempts: Vec<u32> = log.failures.iter().map(|failure| failure.attempt).collect();
    assert_eq!(attempts, [1, 2, 3]);
    let lines = log.error_lines();
    assert!(
        lines[0].starts_with("attempt 1: the answer is not valid JSON"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("attempt 2: at /capital")),
        "{lines:?}"
    );
    assert_eq!(
        lines.last().map(String::as_str),
        Some("attempt 3: the reply holds no answer: expected a JSON answer")
    );

    let message = SchemaError::Exhausted { log }.to_string();
    assert!(
        message.starts_with("no valid answer after 3 attempts: attempt 1: "),
        "{message}"
    );
    assert!(message.contains("attempt 2: at /capital"), "{message}");
    assert!(
        message.contains("attempt 3: the reply holds no answer"),
        "{message}"
    );

    // The third request carries both earlier rejections, in order.
    let third = sent_texts(&provider, 2);
    assert_eq!(third.len(), 5);
}

#[tokio::test]
async fn the_number_of_attempts_is_configurable() {
    let provider = FakeProvider::new();
    provider.push_response(text_reply("resp_1", "{}", 1));
    let options = SolveOptions {
        max_attempts: 1,
        ..SolveOptions::default()
    };
    let result = solve_value_with(&provider, request(), &options).await;
    assert!(matches!(result, Err(SchemaError::Exhausted { log }) if log.failures.len() == 1));
    assert_eq!(provider.requests().len(), 1);
    assert_eq!(provider.remaining(), 0);
}

#[tokio::test]
async fn the_tool_strategy_re_asks_through_the_calls_output() {
    let provider = FakeProvider::new().with_capabilities(Capabilities {
        native_json_schema: false,
        ..Capabilities::openai_responses()
    });
    provider
        .push_response(call_reply("a", r#"{"capital": "Paris"}"#))
        .push_response(call_reply("b", r#"{"capital": "Paris", "population": 2}"#));
    let solution = solve_value(&provider, request()).await.expect("solves");
    assert_eq!(solution.strategy, Strategy::ToolCall);
    assert_eq!(solution.attempts, 2);
    assert_eq!(solution.usage.total_tokens, 20);
    let second = sent_texts(&provider, 1);
    assert_eq!(second[2]["type"], "function_call");
    assert_eq!(second[2]["call_id"], "call_a");
    assert_eq!(second[3]["type"], "function_call_output");
    assert_eq!(second[3]["call_id"], "call_a");
    let output = second[3]["output"].as_str().expect("output text");
    assert!(
        output.contains("\"population\" is a required property"),
        "{output}"
    );
}

#[tokio::test]
async fn a_refusal_ends_the_attempts_with_a_typed_error() {
    let provider = FakeProvider::new();
    let refusal: Response = serde_json::from_value(json!({
        "id": "resp_r", "status": "completed",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]}],
        "usage": {"input_tokens": 4, "output_tokens": 1, "total_tokens": 5}
    }))
    .expect("a response");
    provider
        .push_response(text_reply("resp_1", "{}", 1))
        .push_response(refusal);
    let result = solve_value(&provider, request()).await;
    match result {
        Err(SchemaError::Stopped {
            attempt: 2,
            reason: StopReason::Refused { refusal },
            log,
        }) => {
            assert_eq!(refusal, "No.");
            assert_eq!(log.failures.len(), 1);
            assert_eq!(log.usage.total_tokens, 7);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(provider.requests().len(), 2);
}

#[tokio::test]
async fn an_error_envelope_ends_the_attempts() {
    let provider = FakeProvider::new();
    let failed: Response = serde_json::from_value(json!({
        "id": "resp_f", "status": "failed", "output": [],
        "error": {"code": "server_error", "message": "boom"}
    }))
    .expect("a response");
    provider.push_response(failed);
    let result = solve_value(&provider, request()).await;
    assert!(matches!(
        result,
        Err(SchemaError::Stopped { attempt: 1, reason: StopReason::Failed { code: Some(code), .. }, .. }) if code == "server_error"
    ));

    let provider = FakeProvider::new();
    provider
        .push_response(text_reply("resp_1", "{}", 5))
        .push_error(ClientError::Timeout {
            kind: aptix_client::TimeoutKind::Request,
            after: std::time::Duration::from_secs(1),
        });
    match solve_value(&provider, request()).await {
        Err(SchemaError::Provider {
            attempt: 2, log, ..
        }) => {
            assert_eq!(log.failures.len(), 1);
            assert_eq!(log.usage.total_tokens, 10);
        }
        other => panic!("expected a provider error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_re_ask_counts_every_error_it_does_not_list() {
    // 80 wrong items: 50 kept as violations, 20 listed, 60 said to be more.
    let request = SchemaRequest::new(
        "gpt-4o-mini",
        json!({
            "type": "object",
            "properties": {"names": {"type": "array", "items": {"type": "string"}}},
            "required": ["names"]
        }),
    )
    .user("Names?");
    let wrong: Vec<u32> = (0..80).collect();
    let provider = FakeProvider::new();
    provider
        .push_response(text_reply(
            "resp_1",
            &json!({"names": wrong}).to_string(),
            1,
        ))
        .push_response(text_reply("resp_2", r#"{"names": ["a"]}"#, 1));
    let solution = solve_value(&provider, request).await.unwrap();
    let failure = &solution.failures[0];
    assert_eq!(
        failure.problem.to_string(),
        "the answer breaks the schema in 80 places"
    );
    assert!(matches!(
        &failure.problem,
        AttemptProblem::Invalid { violations, unlisted } if violations.len() == 50 && *unlisted == 30
    ));
    let said = Value::Array(sent_texts(&provider, 1)).to_string();
    assert!(said.contains("- and 60 more errors"), "{said}");
    // An error's lines (what `aptix ask --schema` prints when the attempts run out) say
    // how many more there were than were kept, too.
    let log = aptix_schema::AttemptLog {
        attempts: 1,
        failures: vec![failure.clone()],
        ..aptix_schema::AttemptLog::default()
    };
    let lines = log.error_lines();
    assert_eq!(lines.len(), 51);
    assert_eq!(lines[50], "attempt 1: and 30 more errors");
}

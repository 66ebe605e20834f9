//! `aptix ask --schema FILE`: the first body of the strategy the provider's capabilities
//! select (dry run), a solution validated against the schema and printed, and a clear
//! usage error for a schema file that is not JSON.

use aptix_testkit::read_fixture;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{SECRET_KEY, Sandbox, code, stderr, stdout_json};

/// The schema of the recorded structured-output exchange.
fn animal_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"animal_data_list": {"type": "array", "items": {"type": "string"}}},
        "required": ["animal_data_list"],
        "additionalProperties": false
    })
}

#[test]
fn a_dry_run_prints_the_native_json_schema_body_and_needs_no_key() {
    let sandbox = Sandbox::new();
    let schema = sandbox.write_workspace_file("schema.json", &animal_schema().to_string());
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--model", "gpt-4o-mini", "--schema"])
        .arg(&schema)
        .arg("Write a JSON document with a list of five animals")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let body = stdout_json(&output);
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(body["text"]["format"]["type"], "json_schema");
    assert_eq!(body["text"]["format"]["strict"], true);
    assert_eq!(body["text"]["format"]["schema"], animal_schema());
    assert!(
        body.get("tools").is_none(),
        "the native strategy sends no tool"
    );
    assert!(
        body["input"].to_string().contains("five animals"),
        "the instruction is the user message: {body}"
    );
}

#[test]
fn the_chat_bridge_carries_the_schema_as_response_format() {
    let sandbox = Sandbox::new();
    let schema = sandbox.write_workspace_file("schema.json", &animal_schema().to_string());
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--api", "chat", "--schema"])
        .arg(&schema)
        .arg("List animals")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    // The bridge carries native JSON schema output, so the schema travels as the chat
    // API's `response_format`.
    let body = stdout_json(&output);
    assert_eq!(body["response_format"]["type"], "json_schema", "{body}");
    assert_eq!(
        body["response_format"]["json_schema"]["schema"],
        animal_schema()
    );
    assert!(body.get("tools").is_none(), "{body}");
}

#[tokio::test]
async fn the_solution_is_validated_and_printed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(body_partial_json(
            json!({"text": {"format": {"type": "json_schema"}}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            read_fixture("response_structured_output_json_schema.json"),
            "application/json",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    let schema = sandbox.write_workspace_file("schema.json", &animal_schema().to_string());
    let base_url = format!("{}/v1", server.uri());
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--base-url", &base_url, "--schema"])
        .arg(&schema)
        .arg("Write a JSON document with a list of five animals")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let solution = stdout_json(&output);
    let animals = solution["animal_data_list"]
        .as_array()
        .expect("a list of animals");
    assert_eq!(animals.len(), 5, "{solution}");
    assert!(!stderr(&output).contains(SECRET_KEY));
}

#[test]
fn a_schema_file_that_is_not_json_is_a_usage_error_naming_it() {
    let sandbox = Sandbox::new();
    let schema = sandbox.write_workspace_file("broken.json", "{ not json");
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--schema"])
        .arg(&schema)
        .arg("anything")
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("broken.json"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_failed_schema_request_is_an_error_and_flags_it_cannot_use_are_refused() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(401).set_body_raw(
            read_fixture("error_401_invalid_api_key.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    let schema = sandbox.write_workspace_file("schema.json", &animal_schema().to_string());
    let base_url = format!("{}/v1", server.uri());
    // A rejected key: an error (exit 1), not a warning, and the key never shown.
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--base-url", &base_url, "--schema"])
        .arg(&schema)
        .arg("Five animals")
        .output()
        .unwrap();
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("error: no valid solution"), "{text}");
    assert!(!text.contains("warning: no valid solution"), "{text}");
    assert!(!text.contains(SECRET_KEY), "{text}");
    // Flags a schema Request has no use for are refused, not dropped without a word.
    for flag in [
        &["--file", "schema.json"][..],
        &["--scope", "kind == source"],
        &["--system-prompt", "BE TERSE"],
        &["--no-tools"],
    ] {
        let output = sandbox
            .aptix()
            .args(["ask", "--dry-run", "--schema"])
            .arg(&schema)
            .args(flag)
            .arg("Five animals")
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{flag:?}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("cannot be used with"),
            "{}",
            stderr(&output)
        );
    }
}

#[tokio::test]
async fn an_optional_member_left_out_or_null_gives_a_solution_the_schema_accepts() {
    // A server that does not enforce strict mode leaves the optional `nick` out; one
    // that does writes it `null`. Both are answers of the caller's schema, accepted at
    // the first attempt, and the printed solution has the caller's shape.
    let schema = json!({
        "type": "object",
        "properties": {
            "capital": {"type": "string"},
            "population": {"type": "integer"},
            "nick": {"type": "string"}
        },
        "required": ["capital", "population"]
    });
    for answer in [
        r#"{"capital":"Paris","population":2100000}"#,
        r#"{"capital":"Paris","population":2100000,"nick":null}"#,
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/responses"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "resp_1", "status": "completed", "model": "m",
                "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                            "content": [{"type": "output_text", "text": answer}]}]
            })))
            .expect(1)
            .mount(&server)
            .await;
        let sandbox = Sandbox::new();
        let file = sandbox.write_workspace_file("schema.json", &schema.to_string());
        let output = sandbox
            .aptix()
            .env("OPENAI_API_KEY", SECRET_KEY)
            .args(["ask", "--json", "--no-stream", "--schema"])
            .arg(&file)
            .args(["--base-url", &format!("{}/v1", server.uri())])
            .arg("Capital of France?")
            .output()
            .unwrap();
        assert_eq!(code(&output), 0, "{answer}: {}", stderr(&output));
        let printed = stdout_json(&output);
        assert_eq!(
            printed["solution"],
            json!({"capital": "Paris", "population": 2_100_000}),
            "{answer}"
        );
        assert_eq!(printed["attempts"], 1, "{printed}");
        assert_eq!(printed["strategy"], "native_schema", "{printed}");
    }
}

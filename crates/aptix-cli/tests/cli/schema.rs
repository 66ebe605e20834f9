//! `aptix ask --schema FILE`: the first body of the strategy the provider's capabilities
//! select (dry run), a solution validated against the schema and printed, and a clear
//! usage error for a schema file that is not JSON.

use aptix_testkit::read_fixture;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{SECRET_KEY, Sandbox, code, stderr, stdout_json};

/// The command was refused as a usage error (exit 2) saying `saying`.
fn assert_refused(output: &std::process::Output, saying: &str) {
    assert_eq!(code(output), 2, "{}", stderr(output));
    assert!(stderr(output).contains(saying), "{}", stderr(output));
}

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
    // The server gave no answer: the request failed, and what to check is said.
    assert!(text.contains("error: the schema request failed"), "{text}");
    assert!(text.contains("check OPENAI_API_KEY"), "{text}");
    assert!(!text.contains("no valid solution"), "{text}");
    assert!(!text.contains(SECRET_KEY), "{text}");
    // Flags a schema Request has no use for are refused, not dropped without a word.
    for flag in [
        &["--file", "schema.json"][..],
        &["--scope", "kind == source"],
        &["--system-prompt", "BE TERSE"],
        &["--no-tools"],
        &["--background"],
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

#[test]
fn a_schema_file_that_cannot_be_read_is_a_usage_error() {
    let sandbox = Sandbox::new();
    for missing in ["missing.json", "."] {
        let output = sandbox
            .aptix()
            .args(["ask", "--dry-run", "--schema", missing, "anything"])
            .output()
            .unwrap();
        assert_refused(&output, "could not read the schema file");
    }
}

/// `aptix ask --dry-run ARGS --schema FILE "List animals"` in `sandbox`, with `env`,
/// the animal schema in the file.
fn schema_dry_run(sandbox: &Sandbox, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let schema = sandbox.write_workspace_file("schema.json", &animal_schema().to_string());
    sandbox
        .aptix()
        .envs(env.iter().copied())
        .args(["ask", "--dry-run"])
        .args(args)
        .arg("--schema")
        .arg(&schema)
        .arg("List animals")
        .output()
        .unwrap()
}

#[test]
fn the_strategy_can_be_chosen_in_the_settings() {
    let sandbox = Sandbox::new();
    let output = schema_dry_run(&sandbox, &[], &["--schema-strategy", "json_object"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("strategy json_object"),
        "{}",
        stderr(&output)
    );
    let body = stdout_json(&output);
    assert_eq!(body["text"]["format"]["type"], "json_object", "{body}");
    assert!(
        body.to_string().contains("animal_data_list"),
        "the schema is in the prompt"
    );
    // From the environment too; a value it does not know is a usage error.
    let output = schema_dry_run(&sandbox, &[("APTIX_SCHEMA_STRATEGY", "tool_call")], &[]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(
        stdout_json(&output)["tools"][0]["name"],
        "generate_response"
    );
    let output = schema_dry_run(&sandbox, &[("APTIX_SCHEMA_STRATEGY", "telepathy")], &[]);
    assert_refused(&output, "APTIX_SCHEMA_STRATEGY");
}

/// A completed reply whose message text is `text`.
fn text_reply(text: &str) -> Value {
    json!({"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-4o-mini",
           "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text, "annotations": []}]}],
           "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}})
}

/// A server answering `times` requests to `/v1/responses` with `reply`.
async fn answering(reply: Value, times: u64) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(200).set_body_json(reply))
        .expect(times)
        .mount(&server)
        .await;
    server
}

/// `aptix ask ARGS --schema FILE Animals` against `server`, `schema` in the file.
fn ask_schema(server: &MockServer, schema: &Value, args: &[&str]) -> std::process::Output {
    let sandbox = Sandbox::new();
    let file = sandbox.write_workspace_file("schema.json", &schema.to_string());
    let base_url = format!("{}/v1", server.uri());
    sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--base-url", &base_url])
        .args(args)
        .arg("--schema")
        .arg(&file)
        .arg("Animals")
        .output()
        .unwrap()
}

#[tokio::test]
async fn with_json_a_request_with_no_solution_still_prints_why_on_stdout() {
    let server = answering(text_reply(r#"{"animal_data_list": [1, 2]}"#), 3).await;
    let output = ask_schema(&server, &animal_schema(), &["--json", "-v"]);
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    let answer = stdout_json(&output);
    assert_eq!(answer["solution"], Value::Null, "{answer}");
    // -v tells each rejected attempt as it happens.
    assert_eq!(
        stderr(&output).matches("schema answer rejected").count(),
        3,
        "{}",
        stderr(&output)
    );
    assert_eq!(answer["error"]["code"], "no_valid_answer", "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("is not of type \"string\""),
        "{answer}"
    );
    assert_eq!(answer["attempts"], 3);
    assert_eq!(answer["usage"]["totalTokens"], 45, "{answer}");
    assert_eq!(answer["refusedStrategies"], json!([]));
    // One error line; the JSON on stdout only.
    let text = stderr(&output);
    assert_eq!(text.matches("error: ").count(), 1, "{text}");
    assert!(text.contains("error: no valid solution"), "{text}");
    // What to try next.
    assert!(text.contains("another --schema-strategy"), "{text}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains(SECRET_KEY));
}

#[tokio::test]
async fn an_answer_cut_short_exits_3_and_says_to_raise_the_limit() {
    let mut reply = text_reply(r#"{"animal_data_list": ["cat", "d"#);
    reply["status"] = json!("incomplete");
    reply["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let server = answering(reply, 1).await;
    let output = ask_schema(&server, &animal_schema(), &["--max-output-tokens", "16"]);
    assert_eq!(code(&output), 3, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("raise --max-output-tokens"),
        "{}",
        stderr(&output)
    );
    assert!(output.stdout.is_empty(), "no solution is printed");
}

#[tokio::test]
async fn a_server_that_refuses_native_output_gets_the_tool_strategy() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(body_partial_json(json!({"text": {"format": {"type": "json_schema"}}})))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "Invalid parameter: 'text.format' of type 'json_schema' is not supported with this model.",
            "type": "invalid_request_error", "param": "text.format", "code": null}})))
        .expect(1)
        .mount(&server)
        .await;
    let call = json!({"id": "resp_2", "object": "response", "status": "completed", "model": "m",
        "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "generate_response",
                    "arguments": "{\"animal_data_list\": [\"cat\"]}", "status": "completed"}]});
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(body_partial_json(
            json!({"tool_choice": {"type": "function", "name": "generate_response"}}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(call))
        .expect(1)
        .mount(&server)
        .await;
    let output = ask_schema(&server, &animal_schema(), &["--json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let answer = stdout_json(&output);
    assert_eq!(answer["solution"], json!({"animal_data_list": ["cat"]}));
    assert_eq!(answer["strategy"], "tool_call");
    assert_eq!(answer["refusedStrategies"], json!(["native_schema"]));
    let text = stderr(&output);
    assert_eq!(
        text.matches("the server refused the native_schema strategy")
            .count(),
        1,
        "told once: {text}"
    );
}

#[tokio::test]
async fn the_solution_keeps_the_order_the_model_wrote_and_a_schema_may_come_from_stdin() {
    // `nick` is optional: its null is read as absent and dropped, the rest in order.
    let server = answering(
        text_reply(r#"{"zeta": 1, "nick": null, "alpha": 2, "mid": 3}"#),
        1,
    )
    .await;
    let schema = json!({
        "type": "object",
        "properties": {
            "zeta": {"type": "integer"}, "nick": {"type": "string"},
            "alpha": {"type": "integer"}, "mid": {"type": "integer"}
        },
        "required": ["zeta", "alpha", "mid"]
    });
    let sandbox = Sandbox::new();
    let base_url = format!("{}/v1", server.uri());
    // With a byte-order mark, as some editors save JSON.
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--base-url", &base_url, "--schema", "-", "Numbers"])
        .write_stdin(format!("\u{feff}{schema}"))
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = String::from_utf8(output.stdout).unwrap();
    let compact: String = text.split_whitespace().collect();
    assert_eq!(compact, r#"{"zeta":1,"alpha":2,"mid":3}"#);
}

#[tokio::test]
async fn with_json_the_keywords_strict_mode_cannot_send_are_listed() {
    let server = answering(text_reply(r#"{"animal_data_list": ["cat"]}"#), 1).await;
    let mut schema = animal_schema();
    schema["properties"]["animal_data_list"]["items"]["minLength"] = json!(2);
    let output = ask_schema(&server, &schema, &["--json"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let answer = stdout_json(&output);
    assert_eq!(
        answer["removedKeywords"],
        json!([{"pointer": "/properties/animal_data_list/items", "keyword": "minLength"}]),
        "{answer}"
    );
}

#[test]
fn the_schema_and_the_instruction_cannot_both_come_from_stdin() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--schema", "-", "-"])
        .write_stdin("{}")
        .output()
        .unwrap();
    assert_refused(&output, "cannot both be read from stdin");
}

#[test]
fn settings_a_schema_request_does_not_use_are_said_to_be_unused() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("aptix.toml", "system_prompt = \"Be terse.\"\n");
    let output = schema_dry_run(
        &sandbox,
        &[("APTIX_MODE", "CODE_EDIT"), ("APTIX_BACKGROUND", "true")],
        &[],
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("warning: system_prompt (from aptix.toml or the environment) is not used"),
        "{text}"
    );
    assert!(text.contains("warning: mode ("), "{text}");
    // A schema request is one plain call: background mode does not apply to it.
    assert!(text.contains("warning: background ("), "{text}");
    assert!(stdout_json(&output).get("background").is_none());
    assert!(!stdout_json(&output).to_string().contains("Be terse"));
}

#[test]
fn a_schema_request_runs_in_the_home_folder_which_it_does_not_index() {
    let sandbox = Sandbox::new();
    let schema = sandbox.write_workspace_file("schema.json", &animal_schema().to_string());
    let output = sandbox
        .aptix()
        .current_dir(sandbox.home.path())
        .args(["ask", "--dry-run", "--schema"])
        .arg(&schema)
        .arg("List animals")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(
        stdout_json(&output)["text"]["format"]["type"],
        "json_schema"
    );
    assert!(
        !sandbox.home.path().join(".aptix").exists(),
        "nothing is made in the home folder"
    );
    // An ordinary ask there is still refused.
    let output = sandbox
        .aptix()
        .current_dir(sandbox.home.path())
        .args(["ask", "--dry-run", "List animals"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
}

#[tokio::test]
async fn a_404_from_a_server_without_the_route_says_to_check_base_url_as_ask_does() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(404).set_body_string("404 page not found"))
        .mount(&server)
        .await;
    let output = ask_schema(&server, &animal_schema(), &[]);
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    let text = stderr(&output);
    assert!(text.contains("base_url"), "{text}");
}

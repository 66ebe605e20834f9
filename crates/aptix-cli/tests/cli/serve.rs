//! `aptix serve` as a user runs it: refused on a non-loopback address without tokens,
//! and a real process answering a turn over HTTP against a fake upstream, sharing its
//! sessions with `aptix ask`, and stopping cleanly on SIGTERM.

use aptix_testkit::fault_server::{FaultServer, Reply, sse_text, text_answer_events};
use serde_json::{Value, json};

use crate::served::serve;
use crate::support::{SECRET_KEY, Sandbox, code, stderr};

#[test]
fn a_non_loopback_address_without_tokens_is_refused_naming_tokens_file() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--workspace",
            &sandbox.workspace_arg(),
        ])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--tokens-file"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_zero_limit_or_an_unreadable_tokens_file_is_a_usage_error_naming_it() {
    let sandbox = Sandbox::new();
    // A size is read with its unit, and zero is refused as it is read, naming the flag.
    for limit in ["0", "0MiB", "12 parsecs"] {
        let output = sandbox
            .aptix()
            .env("OPENAI_API_KEY", SECRET_KEY)
            .args(["serve", "--body-limit", limit])
            .args(["--workspace", &sandbox.workspace_arg()])
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{}", stderr(&output));
        let text = stderr(&output);
        assert!(text.contains("--body-limit"), "{text}");
        assert!(!text.contains("max_concurrent_turns"), "{text}");
    }
    sandbox.write_workspace_file("aptix.toml", "body_limit = \"0KiB\"\n");
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["serve", "--workspace", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("body_limit") && stderr(&output).contains("larger than zero"),
        "{}",
        stderr(&output)
    );
    sandbox.write_workspace_file("aptix.toml", "");
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["serve", "--max-concurrent-turns", "0"])
        .args(["--workspace", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let text = stderr(&output);
    assert!(
        text.contains("max_concurrent_turns") && text.contains("--max-concurrent-turns"),
        "{text}"
    );
    assert!(!text.contains("body_limit"), "{text}");
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["serve", "--tokens-file", "no-such-tokens-file"])
        .args(["--workspace", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("could not read the tokens file no-such-tokens-file"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_zero_timeout_is_refused_naming_it() {
    let sandbox = Sandbox::new();
    for flag in ["--header-timeout", "--body-timeout", "--turn-timeout"] {
        let output = sandbox
            .aptix()
            .env("OPENAI_API_KEY", SECRET_KEY)
            .args(["serve", flag, "0s", "--workspace", &sandbox.workspace_arg()])
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{}", stderr(&output));
        assert!(stderr(&output).contains(flag), "{}", stderr(&output));
    }
    // The same from the config file, naming the key.
    sandbox.write_workspace_file("aptix.toml", "header_timeout = \"0s\"\n");
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["serve", "--workspace", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("header_timeout"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_a_turn_shares_the_session_with_ask_and_stops_on_sigterm() {
    let pieces = ["Stored ", "once."];
    let answer = json!({
        "id": "resp_serve", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Stored once."}]}],
        "usage": {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    });
    let upstream = FaultServer::start(vec![
        Reply::json(200, &answer),
        Reply::sse(sse_text(&text_answer_events("resp_ask", &pieces))),
    ])
    .await;
    let sandbox = Sandbox::new();
    let (served, base) = serve(&sandbox, &upstream, &[], &["-v".as_ref()]).await;
    let client = reqwest::Client::new();
    // Transparent huge pages are off for the service's process (see `docs/serve.md`).
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string(format!("/proc/{}/status", served.pid())).unwrap();
        let thp = status
            .lines()
            .find(|line| line.starts_with("THP_enabled:"))
            .expect("the kernel reports THP_enabled (Linux 5.0 and later)");
        assert_eq!(thp.split_whitespace().nth(1), Some("0"), "{thp}");
    }

    let answered = client
        .post(format!("{base}/v1/agent/execute"))
        .header("content-type", "application/json")
        .body(json!({"sessionId": "s-shared", "turnId": "t-1", "instruction": "How?"}).to_string())
        .send()
        .await
        .unwrap();
    let request_id = answered.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let envelope: Value = answered.json().await.unwrap();
    assert_eq!(envelope["text"], "Stored once.", "{envelope}");
    assert!(!envelope.to_string().contains(SECRET_KEY));

    // The session started over HTTP is continued by `aptix ask`.
    let mut ask = sandbox.aptix();
    ask.env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--base-url", &upstream.base_url()])
        .args([
            "--workspace",
            &sandbox.workspace_arg(),
            "--session",
            "s-shared",
        ])
        .arg("And then?");
    let output = tokio::task::spawn_blocking(move || ask.output().unwrap())
        .await
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("s-shared (continued)"),
        "{}",
        stderr(&output)
    );
    let requests = upstream.requests();
    let second = requests[1].json().unwrap();
    assert_eq!(second["previous_response_id"], "resp_serve", "{second}");

    let (status, log) = served.stop().await;
    assert_eq!(
        status.expect("aptix serve stops on SIGTERM").code(),
        Some(0)
    );
    assert!(log.contains("stopping"), "{log}");
    assert!(!log.contains(SECRET_KEY), "{log}");
    // With -v each request is logged, with its request id.
    assert!(
        log.lines().any(|line| line.contains("answered")
            && line.contains(&request_id)
            && line.contains("/v1/agent/execute")
            && line.contains("status=200")),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_and_the_key_never_reach_the_trace_log() {
    let answer = json!({
        "id": "resp_t", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Fine."}]}],
        "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}
    });
    let upstream = FaultServer::start(vec![Reply::json(200, &answer)]).await;
    let sandbox = Sandbox::new();
    let token = "serve-token-7c1d5e-DO-NOT-LOG";
    let tokens = sandbox.write_workspace_file("tokens.txt", &format!("# team\n{token}\n"));
    let (served, base) = serve(
        &sandbox,
        &upstream,
        &[("RUST_LOG", "trace")],
        &["--tokens-file".as_ref(), tokens.as_os_str()],
    )
    .await;
    let client = reqwest::Client::new();
    // Asked about the tokens file, which lies in the workspace: retrieval must not
    // hand it to the provider as context.
    let turn = json!({"sessionId": "s-log", "turnId": "t-1",
                      "instruction": "Which team token is configured?"})
    .to_string();
    let refused = client
        .post(format!("{base}/v1/agent/execute"))
        .header("content-type", "application/json")
        .header("authorization", "Bearer wrong-token-but-secret-too")
        .body(turn.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let answered = client
        .post(format!("{base}/v1/agent/execute"))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .body(turn)
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let metrics = client
        .get(format!("{base}/metrics"))
        .header("authorization", format!("Bearer {token}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!metrics.contains(token) && !metrics.contains(SECRET_KEY));
    let sent = upstream.requests();
    assert_eq!(sent.len(), 1);
    let body = String::from_utf8_lossy(&sent[0].body);
    assert!(body.contains("Which team token"), "{body}");
    assert!(!body.contains(token), "the tokens file was context: {body}");

    let (_, log) = served.stop().await;
    assert!(log.contains(" TRACE "), "trace logging was not on:\n{log}");
    let key_tail = &SECRET_KEY[SECRET_KEY.len() - 4..];
    for secret in [token, "wrong-token-but-secret-too", SECRET_KEY, key_tail] {
        assert!(!log.contains(secret), "the trace log holds {secret:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_lines_are_json_objects_with_the_request_id_when_asked() {
    let upstream = FaultServer::start(Vec::new()).await;
    let sandbox = Sandbox::new();
    let (served, base) = serve(
        &sandbox,
        &upstream,
        &[("APTIX_LOG_FORMAT", "json")],
        &["-v".as_ref()],
    )
    .await;
    let client = reqwest::Client::new();
    let ready = client
        .get(format!("{base}/readyz"))
        .header("x-request-id", "req-json-log-1")
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let (status, log) = served.stop().await;
    assert_eq!(
        status.expect("aptix serve stops on SIGTERM").code(),
        Some(0)
    );
    // The service's own notes (serving, stopping) are plain lines; every log line is
    // one JSON object.
    let records = json_log_records(&log);
    let answered = records
        .iter()
        .find(|record| record["span"]["request_id"] == "req-json-log-1")
        .unwrap_or_else(|| panic!("no log line of the request: {log}"));
    assert_eq!(answered["fields"]["message"], "answered", "{answered}");
    assert_eq!(answered["fields"]["status"], 200, "{answered}");
    assert_eq!(answered["span"]["path"], "/readyz", "{answered}");
    assert_eq!(answered["level"], "INFO", "{answered}");

    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_aptix"))
        .env("APTIX_LOG_FORMAT", "yaml")
        .args(["inspect", "nothing.json"])
        .output()
        .unwrap();
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("APTIX_LOG_FORMAT"),
        "{}",
        stderr(&bad)
    );
    // A command line that does not parse is a JSON record too, with clap's exit code.
    for env_format in [None, Some("json")] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aptix"));
        match env_format {
            Some(format) => command.env("APTIX_LOG_FORMAT", format),
            None => command.args(["--log-format", "json"]),
        };
        let unparsed = command.args(["sessions", "--limit", "0"]).output().unwrap();
        assert_eq!(code(&unparsed), 2, "{}", stderr(&unparsed));
        let records = json_log_records(&stderr(&unparsed));
        assert_eq!(records.len(), 1, "{}", stderr(&unparsed));
        assert_eq!(records[0]["level"], "ERROR");
        assert!(
            records[0]["fields"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("--limit")),
            "{}",
            records[0]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_format_is_a_key_of_the_config_files_too() {
    let upstream = FaultServer::start(Vec::new()).await;
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("aptix.toml", "log_format = \"json\"\n");
    let (served, base) = serve(&sandbox, &upstream, &[], &["-v".as_ref()]).await;
    let ready = reqwest::Client::new()
        .get(format!("{base}/readyz"))
        .header("x-request-id", "req-config-json")
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);
    let (_, log) = served.stop().await;
    let records = json_log_records(&log);
    assert!(
        records
            .iter()
            .any(|record| record["span"]["request_id"] == "req-config-json"),
        "{log}"
    );

    // A value that is neither is refused before anything runs, naming the file; the
    // flag wins over the file.
    sandbox.write_workspace_file("aptix.toml", "log_format = \"yaml\"\n");
    let refused = sandbox
        .aptix()
        .args(["index", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("log_format"),
        "{}",
        stderr(&refused)
    );
    assert!(
        stderr(&refused).contains("aptix.toml"),
        "{}",
        stderr(&refused)
    );
    let flagged = sandbox
        .aptix()
        .args(["--log-format", "text", "index", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&flagged), 0, "{}", stderr(&flagged));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warnings_at_the_default_level_carry_the_request_id() {
    // No `-v`: an operator at the default level sees the warnings, and each must say
    // which request it is about (the id the client sent).
    let refused = json!({"error": {"message": "Incorrect API key provided.",
                                   "type": "invalid_request_error", "code": "invalid_api_key"}});
    // The provider names its own request, as OpenAI always does: that id must not
    // take the place of the client's in the service's lines.
    let upstream = FaultServer::start(vec![
        Reply::json(401, &refused).header("x-request-id", "req_upstream_1"),
    ])
    .await;
    let sandbox = Sandbox::new();
    let (served, base) = serve(&sandbox, &upstream, &[("APTIX_LOG_FORMAT", "json")], &[]).await;
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/agent/execute"))
        .header("content-type", "application/json")
        .header("x-request-id", "req-default-level-1")
        .body(json!({"sessionId": "s-warn", "turnId": "t-1", "instruction": "How?"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let envelope: Value = response.json().await.unwrap();
    assert_eq!(envelope["kind"], "error", "{envelope}");
    let (_, log) = served.stop().await;
    let records = json_log_records(&log);
    let warned = records
        .iter()
        .find(|record| {
            record["level"] == "WARN"
                && record["fields"]["message"]
                    .as_str()
                    .is_some_and(|message| message.contains("error envelope"))
        })
        .unwrap_or_else(|| panic!("no warning of the failed turn: {log}"));
    assert_eq!(
        warned["span"]["request_id"], "req-default-level-1",
        "{warned}"
    );
    assert_eq!(warned["fields"]["code"], "invalid_api_key", "{warned}");
    // The service's notes are records too: a collector reads nothing but JSON.
    assert!(
        records.iter().any(|record| record["level"] == "INFO"
            && record["fields"]["message"]
                .as_str()
                .is_some_and(|message| message.starts_with("serving workspace"))),
        "{log}"
    );
    // The notes a person is always shown aside (`target` `aptix`), no INFO event.
    assert!(
        records
            .iter()
            .all(|record| record["level"] != "INFO" || record["target"] == "aptix"),
        "the default level is warnings: {log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_a_streamed_turn_logs_carries_its_request_id_to_its_end() {
    use aptix_testkit::fault_server::Step;
    // The first stream is cut mid-answer, the request sent again gets a 500, the third
    // answers: the turn logs a recovery and a retry after its head went out.
    let events = text_answer_events("resp_cut", &["Half ", "an answer."]);
    let cut = sse_text(&events[..4]);
    let upstream = FaultServer::start(vec![
        Reply::sse_steps(vec![Step::Send(cut.into_bytes()), Step::Reset]),
        Reply::json(
            500,
            &json!({"error": {"message": "try later", "type": "server_error"}}),
        ),
        Reply::sse(sse_text(&text_answer_events("resp_ok", &["Whole."]))),
    ])
    .await;
    let sandbox = Sandbox::new();
    let (served, base) = serve(
        &sandbox,
        &upstream,
        &[("APTIX_LOG_FORMAT", "json")],
        &["-v".as_ref()],
    )
    .await;
    let body = reqwest::Client::new()
        .post(format!("{base}/v1/agent/execute"))
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("x-request-id", "req-streamed-log-1")
        .body(json!({"sessionId": "s-log", "turnId": "t-1", "instruction": "How?"}).to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("event: envelope"), "{body}");
    assert_eq!(upstream.requests().len(), 3);
    let (_, log) = served.stop().await;
    let records = json_log_records(&log);
    let of_turn = |needle: &str| {
        records
            .iter()
            .find(|record| {
                record["fields"]["message"]
                    .as_str()
                    .is_some_and(|message| message.contains(needle))
            })
            .unwrap_or_else(|| panic!("no line with {needle:?}: {log}"))
    };
    for needle in ["stream cut", "answered 500", "streamed turn ended"] {
        let record = of_turn(needle);
        assert_eq!(
            record["span"]["request_id"], "req-streamed-log-1",
            "{record}"
        );
    }
    assert_eq!(of_turn("streamed turn ended")["fields"]["kind"], "ok");
}

/// Sends `signal` to the process `pid`.
fn signal(pid: u32, signal: &str) {
    assert!(
        std::process::Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap()
            .success()
    );
}

/// `aptix serve` with this shutdown grace, over a model that never answers, running a
/// JSON turn and a streamed one: returned once both reached the model (counted, not
/// timed), with the service and its base URL.
async fn two_turns_waiting(
    sandbox: &Sandbox,
    grace: &str,
) -> (
    crate::served::Served,
    String,
    tokio::task::JoinHandle<reqwest::Response>,
    tokio::task::JoinHandle<String>,
) {
    let upstream =
        FaultServer::start(vec![Reply::stall_before_head(), Reply::stall_before_head()]).await;
    let (served, base) = serve(
        sandbox,
        &upstream,
        &[],
        &["--shutdown-grace".as_ref(), grace.as_ref()],
    )
    .await;
    let base = base.as_str();
    let client = reqwest::Client::new();
    let json_turn = {
        let request = client
            .post(format!("{base}/v1/agent/execute"))
            .header("content-type", "application/json")
            .body(
                json!({"sessionId": "s-json", "turnId": "t-1", "instruction": "Slow?"}).to_string(),
            );
        tokio::spawn(async move { request.send().await.unwrap() })
    };
    let streamed_turn = {
        let request = client
            .post(format!("{base}/v1/agent/execute"))
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(
                json!({"sessionId": "s-sse", "turnId": "t-1", "instruction": "Slow?"}).to_string(),
            );
        tokio::spawn(async move {
            let response = request.send().await.unwrap();
            format!("{} {}", response.status(), response.text().await.unwrap())
        })
    };
    for _ in 0..400 {
        if upstream.requests().len() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(upstream.requests().len(), 2, "both turns reach the model");
    (served, base.to_owned(), json_turn, streamed_turn)
}

/// What each client of a stopped turn got: `503 shutting_down`, or a streamed turn's
/// `event: error` with that code.
async fn assert_told_shutting_down(
    json_turn: tokio::task::JoinHandle<reqwest::Response>,
    streamed_turn: tokio::task::JoinHandle<String>,
) {
    let json_turn = json_turn.await.unwrap();
    assert_eq!(json_turn.status(), 503);
    assert_eq!(json_turn.headers()["retry-after"], "1");
    let body: Value = json_turn.json().await.unwrap();
    assert_eq!(body["error"]["code"], "shutting_down", "{body}");
    let streamed = streamed_turn.await.unwrap();
    assert!(
        (streamed.starts_with("503 ") || streamed.contains("event: error\n"))
            && streamed.contains("shutting_down"),
        "{streamed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_still_running_when_the_grace_runs_out_are_told_and_the_exit_says_so() {
    let sandbox = Sandbox::new();
    let (served, _base, json_turn, streamed_turn) = two_turns_waiting(&sandbox, "300ms").await;
    let (status, log) = served.stop().await;
    assert_told_shutting_down(json_turn, streamed_turn).await;
    assert_eq!(status.expect("aptix serve exits").code(), Some(1), "{log}");
    assert!(
        log.contains("the grace period ran out: 2 turns still running were stopped"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_stops_the_turns_at_once() {
    let sandbox = Sandbox::new();
    // A grace far longer than the test: only the second signal can end it in time.
    let (served, base, json_turn, streamed_turn) = two_turns_waiting(&sandbox, "10m").await;
    signal(served.pid(), "-TERM");
    // The first signal is taken once new connections are refused.
    let client = reqwest::Client::new();
    for _ in 0..400 {
        if client.get(format!("{base}/healthz")).send().await.is_err() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    let (status, log) = served.stop().await;
    assert_told_shutting_down(json_turn, streamed_turn).await;
    assert_eq!(status.expect("aptix serve exits").code(), Some(1), "{log}");
    assert!(
        log.contains("Ctrl-C or SIGTERM again stops them now"),
        "{log}"
    );
    assert!(
        log.contains("asked again: 2 turns still running were stopped"),
        "{log}"
    );
}

/// The service's stderr as JSON objects: every log line one, and its own notes
/// (serving, stopping) records of `target` `aptix`.
fn json_log_records(log: &str) -> Vec<Value> {
    log.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("{error}: {line}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_tool_from_the_config_ends_a_turn_and_its_results_continue_it() {
    // AGN-034 requests carry no tool definitions: the service's operator declares the
    // tools its clients run (an editor's edit), and a call of one waits for the client.
    let call = json!({
        "id": "resp_call", "status": "completed", "model": "m",
        "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_edit_1",
                    "name": "apply_edit", "arguments": "{\"path\":\"src/lib.rs\"}"}]
    });
    let done = json!({
        "id": "resp_done", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Edited."}]}]
    });
    let upstream = FaultServer::start(vec![Reply::json(200, &call), Reply::json(200, &done)]).await;
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file(
        "tools/client.json",
        r#"[{"type": "function", "name": "apply_edit", "description": "Edit a file in the editor",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                            "required": ["path"], "additionalProperties": false},
             "usage": "Edit one file at a time."}]"#,
    );
    // Named in aptix.toml, relative to it.
    sandbox.write_workspace_file("aptix.toml", "client_tools = \"tools/client.json\"\n");
    let (served, base) = serve(&sandbox, &upstream, &[], &[]).await;
    let client = reqwest::Client::new();
    let post = |body: Value| {
        client
            .post(format!("{base}/v1/agent/execute"))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };

    let first: Value =
        post(json!({"sessionId": "s-edit", "turnId": "t-1", "instruction": "Fix it"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    assert_eq!(first["kind"], "tool-only", "{first}");
    assert_eq!(first["toolCalls"][0]["callId"], "call_edit_1", "{first}");
    assert_eq!(first["toolCalls"][0]["name"], "apply_edit", "{first}");
    let sent = upstream.requests()[0].json().unwrap();
    let offered = sent["tools"].as_array().unwrap();
    assert!(
        offered
            .iter()
            .any(|tool| tool["name"] == "apply_edit" && tool["strict"] == true),
        "{sent}"
    );
    assert!(
        sent.to_string().contains("Edit one file at a time."),
        "{sent}"
    );

    let session: Value = client
        .get(format!("{base}/v1/sessions/s-edit"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        session["pendingToolCalls"][0]["callId"], "call_edit_1",
        "{session}"
    );

    let answered = post(
        json!({"sessionId": "s-edit", "turnId": "t-1", "toolResults": [
            {"toolCallId": "call_edit_1", "executionMs": 12, "resultJson": "{\"applied\":true}"}
        ]}),
    )
    .await
    .unwrap();
    assert_eq!(answered.status(), 200);
    let answered: Value = answered.json().await.unwrap();
    assert_eq!(answered["text"], "Edited.", "{answered}");
    let second = upstream.requests()[1].json().unwrap();
    assert!(
        second.to_string().contains("call_edit_1") && second.to_string().contains("applied"),
        "{second}"
    );
    let (status, log) = served.stop().await;
    assert_eq!(status.expect("aptix serve stops").code(), Some(0), "{log}");
    assert!(log.contains("1 client tool"), "{log}");
}

#[test]
fn a_client_tools_file_that_does_not_read_or_clashes_with_a_built_in_is_refused() {
    let sandbox = Sandbox::new();
    for (text, says) in [
        (
            "[{\"name\": \"edit\", \"paramaters\": {}}]",
            "unknown field `paramaters`",
        ),
        ("[{\"name\": \"read_file\"}]", "a built-in tool's name"),
        ("[{\"name\": \"has space\"}]", "a name is 1 to 64"),
    ] {
        sandbox.write_workspace_file("client.json", text);
        let output = sandbox
            .aptix()
            .env("OPENAI_API_KEY", SECRET_KEY)
            .args(["serve", "--client-tools", "client.json"])
            .args(["--workspace", &sandbox.workspace_arg()])
            .current_dir(sandbox.workspace_arg())
            .output()
            .unwrap();
        assert_eq!(code(&output), 2, "{text}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(says),
            "{text}: {}",
            stderr(&output)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_and_images_sent_by_reference_are_read_from_the_workspace_under_its_rules() {
    // AGN-034 4.2: inputs "may be references or inline attachments". An editor sends a
    // path (a selection of it, an image in the project); the service reads it from the
    // workspace it serves, as `read_file` would: no secrets, nothing outside.
    let answer = json!({
        "id": "resp_ref", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Seen."}]}],
        "usage": {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}
    });
    let upstream = FaultServer::start(vec![Reply::json(200, &answer)]).await;
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file(
        "src/lib.rs",
        "//! The crate.\npub fn alpha_selected() {}\npub fn beta_selected() {}\npub fn gamma_not_selected() {}\n",
    );
    sandbox.write_workspace_file(".env", "DATABASE_PASSWORD=env-secret-4f1e\n");
    let png = [
        0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d,
    ];
    std::fs::write(sandbox.workspace.path().join("shot.png"), png).unwrap();
    let (served, base) = serve(&sandbox, &upstream, &[], &[]).await;
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/agent/execute"))
        .header("content-type", "application/json")
        .body(
            json!({"sessionId": "s-ref", "turnId": "t-1",
                   "instruction": "Explain the selection and the screenshot.",
                   "files": [{"path": "src/lib.rs#L2-3"}, {"path": ".env"}, {"path": "missing.rs"}],
                   "images": [{"path": "shot.png"}]})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let envelope: Value = response.json().await.unwrap();
    assert_eq!(envelope["kind"], "ok", "{envelope}");
    let warnings = envelope["warnings"].to_string();
    assert!(
        warnings.contains("file reference .env was not read"),
        "{warnings}"
    );
    assert!(
        warnings.contains("may hold secrets") || warnings.contains("secret"),
        "{warnings}"
    );
    assert!(
        warnings.contains("file reference missing.rs was not read"),
        "{warnings}"
    );
    assert!(!warnings.contains("was not resolved"), "{warnings}");
    drop(served.stop().await);

    let sent = upstream.requests();
    assert_eq!(sent.len(), 1);
    let body = String::from_utf8_lossy(&sent[0].body).into_owned();
    assert!(
        body.contains("pub fn alpha_selected() {}\\npub fn beta_selected() {}"),
        "{body}"
    );
    assert!(body.contains("Lines: 2-3"), "{body}");
    assert!(
        !body.contains("gamma_not_selected"),
        "the selection is lines 2-3: {body}"
    );
    assert!(!body.contains("env-secret-4f1e"), "{body}");
    assert!(
        body.contains("data:image/png;base64,iVBORw0KGgoAAAAN"),
        "{body}"
    );
}

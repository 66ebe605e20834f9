//! `aptix ask` against the fault server (`aptix_testkit::fault_server`): what a user
//! sees when the server misbehaves. The key echoed in a stream's error event, a
//! truncated answer, an HTML 502, an out-of-range `retry-after`, a stream cut and
//! recovered (its text printed once), attempts running out, a stall past
//! `--stream-idle-timeout`, a lease left by a killed process, and SIGINT/SIGTERM
//! releasing the session.
//!
//! The server runs on this test's runtime, so the binary runs on a blocking thread.

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use aptix_orchestrator::{SessionStore, SqliteSessionStore};
use aptix_testkit::fault_server::{FaultServer, Reply, Step, sse_text, text_answer_events};
use serde_json::{Value, json};

use crate::support::{SECRET_KEY, Sandbox, code, stderr, stdout, stdout_json};

const PIECES: &[&str] = &["The turn ", "reaches the ", "store ", "once."];
const TEXT: &str = "The turn reaches the store once.";

fn events(id: &str) -> Vec<Value> {
    text_answer_events(id, PIECES)
}

fn whole(id: &str) -> Reply {
    Reply::sse(sse_text(&events(id)))
}

fn cut_after(n: usize, id: &str) -> Reply {
    Reply::sse_steps(vec![
        Step::Send(sse_text(&events(id)[..n]).into_bytes()),
        Step::Reset,
    ])
}

/// Runs `aptix ask` with the key set, against `server`, with `args` before the
/// instruction.
async fn ask(sandbox: &Sandbox, server: &FaultServer, args: &[&str]) -> Output {
    let mut command = sandbox.aptix();
    command
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--base-url", &server.base_url()])
        .args(["--workspace", &sandbox.workspace_arg()])
        .args(args)
        .arg("How is a turn stored?");
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn assert_keyless(output: &Output) {
    let tail = &SECRET_KEY[SECRET_KEY.len() - 4..];
    for (what, text) in [("stdout", stdout(output)), ("stderr", stderr(output))] {
        assert!(!text.contains(SECRET_KEY), "{what} leaks the key:\n{text}");
        assert!(!text.contains(tail), "{what} leaks the masked key:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_echoed_in_a_stream_error_event_is_never_printed() {
    let tail = &SECRET_KEY[SECRET_KEY.len() - 4..];
    let message = format!(
        "Incorrect API key provided: {SECRET_KEY} (sk-...{tail}). Authorization: Bearer {SECRET_KEY}"
    );
    let stream = sse_text(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_k", "status": "in_progress", "output": []}}),
        json!({"type": "error", "sequence_number": 1, "code": "invalid_api_key", "message": message}),
        json!({"type": "response.failed", "sequence_number": 2, "response": {"id": "resp_k", "status": "failed", "output": [],
               "error": {"code": "invalid_api_key", "message": message}}}),
    ]);
    let server = FaultServer::start(vec![Reply::sse(stream.clone()), Reply::sse(stream)]).await;
    let sandbox = Sandbox::new();
    let plain = ask(&sandbox, &server, &["-vvv"]).await;
    assert_eq!(code(&plain), 1, "{}", stderr(&plain));
    assert_keyless(&plain);
    assert!(stderr(&plain).contains("[redacted]"), "{}", stderr(&plain));

    let json = ask(&sandbox, &server, &["--json"]).await;
    assert_eq!(code(&json), 1);
    assert_keyless(&json);
    let envelope = stdout_json(&json);
    assert_eq!(envelope["errorCode"], "invalid_api_key");
    assert!(
        envelope["errorMessage"]
            .as_str()
            .unwrap()
            .contains("[redacted]")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_answer_warns_and_exits_with_3() {
    let message = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "incomplete",
        "content": [{"type": "output_text", "text": "Partial", "annotations": []}]});
    let stream = sse_text(&[
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_t", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": message}),
        json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Partial"}),
        json!({"type": "response.incomplete", "sequence_number": 3, "response": {"id": "resp_t", "status": "incomplete",
               "incomplete_details": {"reason": "max_output_tokens"}, "output": [message],
               "usage": {"input_tokens": 9, "output_tokens": 16, "total_tokens": 25}}}),
    ]);
    let server = FaultServer::start(vec![Reply::sse(stream.clone()), Reply::sse(stream)]).await;
    let sandbox = Sandbox::new();
    let plain = ask(&sandbox, &server, &["--max-output-tokens", "16"]).await;
    assert_eq!(code(&plain), 3, "{}", stderr(&plain));
    assert_eq!(stdout(&plain), "Partial\n");
    assert!(
        stderr(&plain)
            .contains("the answer is incomplete: it reached the output token limit (16 tokens)"),
        "{}",
        stderr(&plain)
    );
    let json = ask(&sandbox, &server, &["--json"]).await;
    assert_eq!(code(&json), 3);
    assert_eq!(stdout_json(&json)["finishReason"], "length");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_502_shows_its_title_not_the_page() {
    let page = format!(
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>{}</body></html>",
        "<div>upstream</div>".repeat(80)
    );
    let server = FaultServer::start(vec![
        Reply::status(502, "text/html", page.clone()),
        Reply::status(502, "text/html", page),
    ])
    .await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &["--max-retries", "1"]).await;
    assert_eq!(code(&output), 1);
    assert_eq!(server.requests().len(), 2, "one retry, as configured");
    let err = stderr(&output);
    assert!(!err.contains("<div") && !err.contains("<html"), "{err}");
    assert!(
        err.contains("502 Bad Gateway (an HTML error page of"),
        "{err}"
    );
    assert!(err.len() < 1500, "stderr is {} bytes:\n{err}", err.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_beyond_the_cap_is_reported_when_giving_up() {
    let busy = || {
        Reply::json(429, &json!({"error": {"message": "slow down", "type": "requests", "code": "rate_limit_exceeded"}}))
            .header("retry-after", "3600")
    };
    let server = FaultServer::start(vec![busy(), busy()]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &["--max-retries", "1"]).await;
    assert_eq!(code(&output), 1);
    assert_eq!(
        server.requests().len(),
        2,
        "retried with the backoff, not given up at once"
    );
    let err = stderr(&output);
    assert!(
        err.contains("the server asked to wait 1h 0m before retrying"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_and_sent_again_prints_its_text_once() {
    let server = FaultServer::start(vec![cut_after(5, "resp_a"), whole("resp_b")]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &[]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{TEXT}\n"));
    let err = stderr(&output);
    assert!(
        err.contains("the stream was cut after 5 event(s): transport error while reading the reply body: the connection was lost after 5 event(s)")
            && err.contains("asking again")
            && err.contains("(attempt 2 of 5)"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_shown_before_a_cut_that_the_answer_sent_again_dropped_is_set_apart() {
    // Cut after "The turn reaches the "; sent again, the model calls a tool instead of
    // writing text; the next call answers. Printed glued, it read "...the The turn".
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("main.rs", "fn main() {}\n");
    let arguments = r#"{"path":"main.rs"}"#;
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
                      "name": "read_file", "arguments": arguments, "status": "completed"});
    let tool = sse_text(&[
        json!({"type": "response.created", "sequence_number": 0,
               "response": {"id": "resp_b", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
               "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                        "name": "read_file", "arguments": "", "status": "in_progress"}}),
        json!({"type": "response.function_call_arguments.done", "sequence_number": 2,
               "item_id": "fc_1", "output_index": 0, "arguments": arguments}),
        json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0,
               "item": call}),
        json!({"type": "response.completed", "sequence_number": 4,
               "response": {"id": "resp_b", "status": "completed", "model": "gpt-fault",
                            "output": [call]}}),
    ]);
    let server = FaultServer::start(vec![
        cut_after(5, "resp_a"),
        Reply::sse(tool),
        whole("resp_c"),
    ])
    .await;
    let output = ask(&sandbox, &server, &[]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        stdout(&output),
        format!("The turn reaches the \n\n{TEXT}\n")
    );
    assert!(
        stderr(&output).contains("the new answer differs from the text shown above"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_attempts_run_out_the_partial_text_is_shown_once_and_called_incomplete() {
    let server = FaultServer::start(vec![cut_after(5, "resp_a"), cut_after(5, "resp_b")]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &["--stream-max-attempts", "2"]).await;
    assert_eq!(code(&output), 1);
    assert_eq!(stdout(&output), "The turn reaches the \n");
    let err = stderr(&output);
    assert!(
        err.contains("gave up after 2 attempts")
            && err.contains("the answer text above is incomplete"),
        "{err}"
    );
    // The server answered every time: no advice to check that it runs.
    assert!(
        !err.contains("check that the server runs")
            && err.contains("the connection broke while its reply arrived"),
        "{err}"
    ); // With --json, the envelope keeps the text that arrived.
    let server = FaultServer::start(vec![cut_after(5, "resp_c"), cut_after(5, "resp_d")]).await;
    let output = ask(&sandbox, &server, &["--stream-max-attempts", "2", "--json"]).await;
    assert_eq!(code(&output), 1);
    let envelope: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(envelope["kind"], "error", "{envelope}");
    assert_eq!(envelope["text"], "The turn reaches the ", "{envelope}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_past_the_configured_idle_timeout_is_recovered() {
    let stalled = Reply::sse_steps(vec![
        Step::Send(sse_text(&events("resp_a")[..4]).into_bytes()),
        Step::Stall,
    ]);
    let server = FaultServer::start(vec![stalled, whole("resp_b")]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &["--stream-idle-timeout", "1s"]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{TEXT}\n"));
    assert!(
        stderr(&output).contains("stream idle timeout after 1s"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_silent_before_its_reply_is_asked_again_without_talk_of_a_cut_stream() {
    let server = FaultServer::start(vec![Reply::stall_before_head(), whole("resp_b")]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &["--stream-idle-timeout", "1s"]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{TEXT}\n"));
    let err = stderr(&output);
    assert!(
        err.contains("aptix: no reply: stream idle timeout after 1s; asking again in")
            && err.contains("(attempt 2 of 5)"),
        "{err}"
    );
    assert!(!err.contains("text already shown"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_left_by_a_killed_process_does_not_lock_the_session() {
    if !std::path::Path::new("/proc/self/stat").exists() {
        return; // Only Linux can tell that a pid is gone; elsewhere the TTL applies.
    }
    let sandbox = Sandbox::new();
    let aptix_dir = sandbox.workspace.path().join(".aptix");
    std::fs::create_dir_all(&aptix_dir).unwrap();
    let store = SqliteSessionStore::open(aptix_dir.join("sessions.db")).unwrap();
    let dead = aptix_testkit::dead_holder_id().expect("a /proc to tell a gone process by");
    assert!(
        store
            .acquire_lease("s-killed", &dead, Duration::from_secs(300))
            .await
            .unwrap()
    );
    let server = FaultServer::start(vec![whole("resp_a")]).await;
    let output = ask(&sandbox, &server, &["--session", "s-killed"]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{TEXT}\n"));
}

/// Starts `aptix ask` on a stalled stream, sends `signal` once the request arrived,
/// and returns what it printed; the lease table is checked by the caller.
async fn interrupted(sandbox: &Sandbox, signal: &str) -> Output {
    interrupted_with(sandbox, signal, &["--session", "s-int"]).await
}

/// [`interrupted`] with other arguments of `aptix ask` before the question.
async fn interrupted_with(sandbox: &Sandbox, signal: &str, args: &[&str]) -> Output {
    let stalled = Reply::sse_steps(vec![
        Step::Send(sse_text(&events("resp_a")[..4]).into_bytes()),
        Step::Stall,
    ]);
    let server = FaultServer::start(vec![stalled]).await;
    let child = Command::new(env!("CARGO_BIN_EXE_aptix"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home.path())
        .env("OPENAI_API_KEY", SECRET_KEY)
        .current_dir(sandbox.workspace.path())
        .args(["ask", "--base-url", &server.base_url()])
        .args(["--workspace", &sandbox.workspace_arg()])
        .args(args)
        .arg("hi")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Counted, not timed: wait (bounded) until the model call is in flight.
    for _ in 0..600 {
        if !server.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        server.requests().len(),
        1,
        "the turn never reached the server"
    );
    // The request is in; give the first events a moment to be read, then signal.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_and_sigterm_release_the_session_at_once() {
    for (signal, name, exit) in [("-INT", "SIGINT", 130), ("-TERM", "SIGTERM", 143)] {
        let sandbox = Sandbox::new();
        let output = interrupted(&sandbox, signal).await;
        assert_eq!(code(&output), exit, "{}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!("interrupted by {name}; the turn was not saved")),
            "{}",
            stderr(&output)
        );
        // A new session's first turn: no session was made, none is said to be free.
        assert!(
            stderr(&output).contains("so session s-int was not started")
                && !stderr(&output).contains("is free"),
            "{}",
            stderr(&output)
        );
        let store =
            SqliteSessionStore::open(sandbox.workspace.path().join(".aptix/sessions.db")).unwrap();
        assert_eq!(
            store.lease("s-int").await.unwrap(),
            None,
            "{name} left the lease"
        );
        assert!(
            store.load("s-int").await.unwrap().is_none(),
            "nothing was stored"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_request_stops_at_a_signal_with_its_exit_code() {
    for (signal, name, exit) in [("-INT", "SIGINT", 130), ("-TERM", "SIGTERM", 143)] {
        let sandbox = Sandbox::new();
        let schema = sandbox.write_workspace_file(
            "person.json",
            r#"{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}"#,
        );
        let output =
            interrupted_with(&sandbox, signal, &["--schema", schema.to_str().unwrap()]).await;
        assert_eq!(code(&output), exit, "{}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!("interrupted by {name}")),
            "{}",
            stderr(&output)
        );
        assert_eq!(stdout(&output), "", "nothing was solved");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_quota_is_said_once_and_a_rate_limit_is_retried_with_its_wait() {
    let quota = Reply::status(
        429,
        "application/json",
        aptix_testkit::read_fixture("error_429_insufficient_quota.json"),
    )
    // A wait the server asks for does not make quota come back: not repeated to the
    // user beside "retrying will not help".
    .header("retry-after", "1");
    let server = FaultServer::start(vec![quota]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &[]).await;
    assert_eq!(code(&output), 1);
    assert_eq!(server.requests().len(), 1, "quota is not retried");
    assert!(
        stderr(&output).contains("out of quota"),
        "{}",
        stderr(&output)
    );
    assert!(
        !stderr(&output).contains("asked to wait"),
        "{}",
        stderr(&output)
    );

    let limited = Reply::status(
        429,
        "application/json",
        aptix_testkit::read_fixture("error_429_rate_limit_exceeded.json"),
    )
    .header("retry-after-ms", "10");
    let server = FaultServer::start(vec![limited, whole("resp_a")]).await;
    let output = ask(&sandbox, &server, &[]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("{TEXT}\n"));
    // A note of the command's, not a log line (no timestamp, no module path, no
    // second copy of the server's message).
    let text = stderr(&output);
    assert!(
        text.contains(
            "aptix: rate limited (429); sending the request again in 10ms (attempt 2 of 3)"
        ),
        "{text}"
    );
    assert!(!text.contains("aptix_client::transport"), "{text}");
}

#[test]
fn background_mode_shows_in_the_dry_run_and_needs_the_responses_api() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--background", "--workspace"])
        .arg(sandbox.workspace_arg())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let body = stdout_json(&output);
    assert_eq!(
        (body["background"].clone(), body["store"].clone()),
        (json!(true), json!(true))
    );
    // Not streamed: background mode is for resuming streams, so it is not added.
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--no-stream",
            "--background",
            "--workspace",
        ])
        .arg(sandbox.workspace_arg())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(stdout_json(&output).get("background"), None);
    let output = sandbox
        .aptix()
        .args([
            "ask",
            "--dry-run",
            "--background",
            "--api",
            "chat",
            "--workspace",
        ])
        .arg(sandbox.workspace_arg())
        .arg("hi")
        .output()
        .unwrap();
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("background mode needs the responses api"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_json_envelope_carries_the_rate_limits_of_the_last_reply() {
    let reply = whole("resp_a")
        .header("x-ratelimit-limit-requests", "60")
        .header("x-ratelimit-remaining-requests", "59")
        .header("x-ratelimit-reset-requests", "1s")
        .header("x-ratelimit-remaining-tokens", "149000")
        .header("x-ratelimit-reset-tokens", "6m0s");
    let server = FaultServer::start(vec![reply]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &["--json"]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let envelope: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        envelope["rateLimits"],
        serde_json::json!({
            "limitRequests": 60, "remainingRequests": 59, "resetRequestsMs": 1000,
            "limitTokens": null, "remainingTokens": 149000, "resetTokensMs": 360000
        }),
        "{envelope}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbose_shows_the_rate_limits_of_the_last_reply() {
    let reply = whole("resp_a")
        .header("x-ratelimit-limit-requests", "60")
        .header("x-ratelimit-remaining-requests", "59")
        .header("x-ratelimit-reset-requests", "1s")
        .header("x-ratelimit-limit-tokens", "150000")
        .header("x-ratelimit-remaining-tokens", "149000")
        .header("x-ratelimit-reset-tokens", "6m0s");
    let server = FaultServer::start(vec![reply]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &["-v"]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "rate limits: requests 59/60 left (reset in 1s), tokens 149000/150000 left (reset in 6m 0s)"
        ),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_session_says_so_once_on_stderr() {
    let summary = json!({
        "id": "resp_note", "status": "completed", "model": "m",
        "output": [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "The user asked how a turn is stored."}]}]
    });
    let server = FaultServer::start(vec![
        whole("resp_1"),
        Reply::json(200, &summary),
        whole("resp_2"),
    ])
    .await;
    let sandbox = Sandbox::new();
    // A server without /responses/compact, and a window that the first turn's reply
    // (15 tokens by its usage) and the next instruction pass.
    let args = [
        "--session",
        "s-long",
        "--stateless",
        "--no-tools",
        "--context-window",
        "40",
    ];
    let first = ask(&sandbox, &server, &args).await;
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert!(!stderr(&first).contains("was compacted"));
    let second = ask(&sandbox, &server, &args).await;
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(stdout(&second), format!("{TEXT}\n"));
    let err = stderr(&second);
    assert_eq!(
        err.matches("the session was compacted").count(),
        1,
        "said once, as it happened:\n{err}"
    );
    assert!(err.contains("aptix: the session was compacted"), "{err}");
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "the first turn, the summary, the second turn"
    );
    let sent = requests[2].json().unwrap();
    let note = sent["input"][1]["content"][0]["text"].as_str().unwrap();
    assert!(note.starts_with("[HANDOVER NOTE]"), "{sent}");
    assert!(note.contains("The user asked how a turn is stored."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deltas_that_do_not_spell_the_final_answer_are_followed_by_the_answer_in_full() {
    // A server repeats one delta under a fresh sequence number: the deltas say "The turn
    // reaches the reaches the store once.", the final response the answer.
    let mut events = events("resp_dup");
    let repeated = events[4].clone();
    events.insert(5, repeated);
    for (number, event) in events.iter_mut().enumerate() {
        event["sequence_number"] = json!(number);
    }
    let server = FaultServer::start(vec![Reply::sse(sse_text(&events))]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &[]).await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    // What streamed stays (a terminal cannot take it back); the answer follows whole,
    // so that `> answer.md` ends with the answer.
    assert_eq!(
        stdout(&output),
        format!("The turn reaches the reaches the store once.\n\n{TEXT}\n")
    );
    assert!(
        stderr(&output).contains(
            "the streamed text differs from the final answer; the final answer follows in full"
        ),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn words_that_could_start_the_key_are_held_without_a_word_of_missing_events() {
    // The key starts with "s": a delta ending in "s" is held until the next shows it was
    // not the key. Let go as one merged event, the held one's sequence number went
    // missing, and every such answer warned of events missing from the stream.
    let pieces = [
        "The", " tests", " pass", " and", " the", " docs", " say", " so.",
    ];
    let events = text_answer_events("resp_words", &pieces);
    let server = FaultServer::start(vec![Reply::sse(sse_text(&events))]).await;
    let sandbox = Sandbox::new();
    let mut command = sandbox.aptix();
    command
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--json", "--base-url", &server.base_url()])
        .args(["--workspace", &sandbox.workspace_arg()])
        .arg("Do the tests pass?");
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let envelope: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        envelope["text"], "The tests pass and the docs say so.",
        "{envelope:#}"
    );
    let warnings = envelope["warnings"].as_array().unwrap();
    assert!(
        !warnings
            .iter()
            .any(|warning| warning.as_str().unwrap().contains("stream events")),
        "{envelope:#}"
    );
    assert!(!stderr(&output).contains("missing"), "{}", stderr(&output));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_model_streams_in_pieces_is_never_printed() {
    // A server (or a model shown the key) that echoes it back in token-sized pieces:
    // no one event holds it whole, so scrubbing each event alone let the terminal
    // spell it out.
    let answer = format!("You sent me Bearer {SECRET_KEY}, which works.");
    let pieces: Vec<String> = answer
        .as_bytes()
        .chunks(5)
        .map(|chunk| String::from_utf8(chunk.to_vec()).unwrap())
        .collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let events = text_answer_events("resp_echo", &pieces);
    let server = FaultServer::start(vec![Reply::sse(sse_text(&events))]).await;
    let sandbox = Sandbox::new();
    let mut command = sandbox.aptix();
    command
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--base-url", &server.base_url()])
        .args(["--workspace", &sandbox.workspace_arg()])
        .arg("What did I send?");
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let shown = stdout(&output);
    assert!(!shown.contains(SECRET_KEY), "{shown}");
    assert!(!stderr(&output).contains(SECRET_KEY), "{}", stderr(&output));
    assert!(
        shown.contains("You sent me Bearer [redacted], which works."),
        "{shown}"
    );
    // Printed once, as streamed: the final answer agrees with what was shown.
    assert_eq!(shown.matches("You sent me").count(), 1, "{shown}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_envelope_keeps_the_error_body_as_the_server_sent_it() {
    // AGN-004: rawResponseJson is the raw error payload. It was the decoded error
    // encoded again, without the members Aptix does not model.
    let body = r#"{"error":{"message":"Invalid 'input'.","type":"invalid_request_error","param":"input","code":null},"x_extra":{"trace":"t-1"}}"#;
    let server = FaultServer::start(vec![Reply::status(400, "application/json", body)]).await;
    let sandbox = Sandbox::new();
    let output = ask(&sandbox, &server, &["--json"]).await;
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    let envelope = stdout_json(&output);
    assert_eq!(envelope["errorMessage"], "Invalid 'input'.", "{envelope:#}");
    assert_eq!(envelope["rawResponseJson"], body, "{envelope:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_key_echoed_in_an_error_is_still_redacted() {
    // A placeholder key is left in content (it would rewrite words), but an error that
    // echoes the key is an error text, scrubbed of any key.
    let body = r#"{"error":{"message":"Incorrect API key provided: hunter2.","type":"invalid_request_error","code":"invalid_api_key"}}"#;
    let server = FaultServer::start(vec![Reply::status(401, "application/json", body)]).await;
    let sandbox = Sandbox::new();
    let mut command = sandbox.aptix();
    command
        .env("OPENAI_API_KEY", "hunter2")
        .args(["ask", "--json", "--base-url", &server.base_url()])
        .args(["--workspace", &sandbox.workspace_arg()])
        .arg("Hello?");
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    for text in [stdout(&output), stderr(&output)] {
        assert!(!text.contains("hunter2"), "{text}");
    }
    assert!(stdout(&output).contains("Incorrect API key provided: [redacted]."));
}

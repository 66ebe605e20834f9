//! `aptix acp` as editors run it: a child process over real pipes, against a scripted
//! fake Responses server.
//!
//! - Through the official Python ACP SDK (`agent-client-protocol`, installed by
//!   `scripts/acp-test-env.sh`), by `crates/aptix-cli/tests/acp/driver.py`: initialize,
//!   new session, a streamed prompt and a second one, server tool runs shown as tool
//!   calls with `read_file` served by the editor, a cancel mid-stream, an unknown
//!   session, and `session/load` replaying the history in a second process.
//! - Raw JSON-RPC lines written by this test: a malformed line, an unknown method,
//!   wrong parameters and an unknown session answered with errors while the agent
//!   keeps serving, and stdout holding nothing but JSON-RPC messages, byte for byte,
//!   at `-vvv`.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use aptix_testkit::fault_server::{FaultServer, Reply, Step, sse_text, text_answer_events};
use serde_json::{Value, json};

use crate::support::{SECRET_KEY, Sandbox};

/// What a slow or stuck agent gets before a test gives up waiting for one message.
const PATIENCE: Duration = Duration::from_secs(60);

/// The repository root.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python with the ACP SDK: `APTIX_ACP_PYTHON`, else the one the project's script
/// installs (it is quick when already installed). Without it the test fails under CI;
/// elsewhere it is skipped by name, with the reason.
fn acp_python(test: &str) -> Option<PathBuf> {
    if let Some(python) = std::env::var_os("APTIX_ACP_PYTHON") {
        return Some(PathBuf::from(python));
    }
    let script = repo_root().join("scripts/acp-test-env.sh");
    let output = Command::new("bash").arg(&script).output();
    let reason = match output {
        Ok(output) if output.status.success() => {
            let python = String::from_utf8_lossy(&output.stdout).trim().to_owned();
            if Path::new(&python).is_file() {
                return Some(PathBuf::from(python));
            }
            format!("{} printed no python: {python:?}", script.display())
        }
        Ok(output) => format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(error) => format!("could not run {}: {error}", script.display()),
    };
    if std::env::var_os("CI").is_some() {
        panic!("{test}: the Python ACP SDK is needed and could not be installed: {reason}");
    }
    eprintln!("skipping {test}: the Python ACP SDK is not available: {reason}");
    None
}

/// SSE text for `events`, numbered in order.
fn numbered(mut events: Vec<Value>) -> Vec<Value> {
    for (number, event) in events.iter_mut().enumerate() {
        event["sequence_number"] = json!(number);
    }
    events
}

/// A streamed reply whose answer text comes in `pieces`, with a pause after the first
/// (the editor sees text before the answer is complete).
fn slow_text(response_id: &str, pieces: &[&str]) -> Reply {
    let events = text_answer_events(response_id, pieces);
    // created, item added, part added, first delta | the rest.
    let (head, tail) = events.split_at(4);
    Reply::sse_steps(vec![
        Step::Send(sse_text(head).into_bytes()),
        Step::Sleep(Duration::from_millis(400)),
        Step::Send(sse_text(tail).into_bytes()),
    ])
}

fn text(response_id: &str, pieces: &[&str]) -> Reply {
    Reply::sse(sse_text(&text_answer_events(response_id, pieces)))
}

/// A streamed reply calling one tool.
fn tool_call(response_id: &str, call_id: &str, name: &str, arguments: &Value) -> Reply {
    let arguments = arguments.to_string();
    let item_id = format!("fc_{call_id}");
    let item = json!({"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
                      "arguments": arguments, "status": "completed"});
    let events = numbered(vec![
        json!({"type": "response.created", "response": {"id": response_id, "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": name,
                        "arguments": "", "status": "in_progress"}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": 0, "delta": arguments}),
        json!({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": 0, "arguments": arguments}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": {"id": response_id, "object": "response",
               "status": "completed", "model": "gpt-fault", "output": [item],
               "usage": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}}}),
    ]);
    Reply::sse(sse_text(&events))
}

/// A stream that sends some text and then nothing, until the client goes away.
fn stalled_text(response_id: &str) -> Reply {
    let events = text_answer_events(response_id, &["Thinking"]);
    Reply::sse_steps(vec![
        Step::Send(sse_text(events.get(..4).unwrap()).into_bytes()),
        Step::Stall,
    ])
}

/// The `output` of the `function_call_output` answering `call_id` in a request body.
fn output_for(request: &Value, call_id: &str) -> String {
    request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .and_then(|item| item["output"].as_str())
        .unwrap_or_else(|| panic!("no output for {call_id} in {request}"))
        .to_owned()
}

fn kinds(updates: &Value) -> Vec<String> {
    updates
        .as_array()
        .unwrap()
        .iter()
        .map(|update| update["sessionUpdate"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_drives_aptix_acp_through_the_python_sdk() {
    let test = "acp::an_editor_drives_aptix_acp_through_the_python_sdk";
    let Some(python) = acp_python(test) else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file(
        "src/lib.rs",
        "pub fn greet() -> &'static str {\n    \"from the disk\"\n}\n",
    );
    let server = FaultServer::start(vec![
        slow_text("resp_1", &["Hel", "lo ", "there."]),
        text("resp_2", &["Second ", "answer."]),
        tool_call(
            "resp_3",
            "call_s",
            "search_code",
            &json!({"query": "greet"}),
        ),
        tool_call(
            "resp_4",
            "call_r",
            "read_file",
            &json!({"path": "src/lib.rs"}),
        ),
        text("resp_5", &["greet is in src/lib.rs."]),
        stalled_text("resp_6"),
        text("resp_7", &["Still here."]),
    ])
    .await;
    let stderr_dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(&python);
    command
        .arg(repo_root().join("crates/aptix-cli/tests/acp/driver.py"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sandbox.home.path())
        .env("APTIX_BIN", env!("CARGO_BIN_EXE_aptix"))
        .env("ACP_WORKSPACE", sandbox.workspace.path())
        .env("ACP_STDERR_DIR", stderr_dir.path())
        .env("OPENAI_API_KEY", SECRET_KEY)
        .env("OPENAI_BASE_URL", server.base_url());
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    let agent_stderr: String = ["agent-1.stderr", "agent-2.stderr"]
        .iter()
        .map(|name| std::fs::read_to_string(stderr_dir.path().join(name)).unwrap_or_default())
        .collect();
    let context = format!(
        "driver stderr:\n{}\nagent stderr (tail):\n{}",
        String::from_utf8_lossy(&output.stderr),
        agent_stderr
            .lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(output.status.success(), "{context}");
    let results: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|error| panic!("driver output is not JSON ({error}): {context}"));
    assert!(
        results.get("driverError").is_none(),
        "{results:#}\n{context}"
    );

    // initialize
    let init = &results["initialize"];
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(init["agentInfo"]["name"], "aptix");
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["embeddedContext"],
        true
    );
    assert_eq!(
        init["agentCapabilities"]["promptCapabilities"]["image"],
        true
    );
    assert_eq!(init["authMethods"], json!([]));
    assert_eq!(
        init["agentCapabilities"]["sessionCapabilities"]["list"],
        json!({}),
        "{init}"
    );

    // A streamed answer: text arrives while the provider still streams, before the answer.
    let first = &results["first"];
    assert_eq!(first["stopReason"], "end_turn", "{first:#}");
    assert_eq!(first["text"], "Hello there.");
    let lead = first["firstChunkBeforeAnswer"].as_f64().expect("no chunk");
    assert!(
        lead > 0.2,
        "the first chunk came only {lead} s before the answer"
    );
    assert!(
        first["meta"]["aptix"]["usage"]["totalTokens"]
            .as_u64()
            .unwrap()
            > 0,
        "{first}"
    );

    let second = &results["second"];
    assert_eq!(second["stopReason"], "end_turn", "{second:#}");
    assert_eq!(second["text"], "Second answer.");

    // Two tool runs: tool_call, then updates to in_progress and completed, with kinds
    // and the workspace files they touched.
    let tools = &results["tools"];
    assert_eq!(tools["stopReason"], "end_turn", "{tools:#}");
    assert_eq!(tools["text"], "greet is in src/lib.rs.");
    let updates = tools["updates"].as_array().unwrap();
    let lib = sandbox.workspace.path().join("src/lib.rs");
    let lib = lib.to_str().unwrap();
    for (call_id, kind) in [("call_s", "search"), ("call_r", "read")] {
        let of_call: Vec<&Value> = updates
            .iter()
            .filter(|update| update["toolCallId"] == call_id)
            .collect();
        assert_eq!(of_call[0]["sessionUpdate"], "tool_call", "{of_call:#?}");
        assert_eq!(of_call[0]["kind"], kind, "{of_call:#?}");
        // `pending` is the protocol's default status, left out of a `tool_call`.
        let statuses: Vec<&str> = of_call
            .iter()
            .filter_map(|update| match update["status"].as_str() {
                None if update["sessionUpdate"] == "tool_call" => Some("pending"),
                status => status,
            })
            .collect();
        assert_eq!(
            statuses,
            ["pending", "in_progress", "completed"],
            "{of_call:#?}"
        );
        let touched = of_call
            .iter()
            .flat_map(|update| update["locations"].as_array().cloned().unwrap_or_default())
            .any(|location| location["path"] == lib);
        assert!(touched, "{call_id} does not show {lib}: {of_call:#?}");
    }
    // read_file read the editor's buffer, not the disk.
    assert_eq!(results["reads"], json!([lib]), "{results:#}");
    let requests: Vec<Value> = server
        .requests()
        .iter()
        .map(|request| request.json().unwrap())
        .collect();
    assert_eq!(requests.len(), 7, "{requests:#?}");
    let read = output_for(&requests[4], "call_r");
    assert!(read.contains("from the editor buffer"), "{read}");
    assert!(!read.contains("from the disk"), "{read}");
    assert!(output_for(&requests[3], "call_s").contains("src/lib.rs"));

    // Cancel: answered `cancelled` promptly, nothing stored, the session usable.
    let cancel = &results["cancel"];
    assert_eq!(cancel["stopReason"], "cancelled", "{cancel:#}");
    let seconds = cancel["seconds"].as_f64().unwrap();
    assert!(seconds < 2.0, "the cancel took {seconds} s");
    let after = &results["afterCancel"];
    assert_eq!(after["stopReason"], "end_turn", "{after:#}");
    assert_eq!(after["text"], "Still here.");
    // The cancelled turn left no trace: the next call continues from the last stored one.
    assert_eq!(requests[1]["previous_response_id"], "resp_1");
    assert_eq!(
        requests[6]["previous_response_id"], "resp_5",
        "{:#}",
        requests[6]
    );

    // Bad input is an error and the agent goes on.
    let unknown = &results["unknownSession"]["error"];
    assert_eq!(unknown["code"], -32002, "{unknown}");
    assert_eq!(results["servingAfterError"], true);

    // A second process lists the folder's stored sessions (the one with turns; the one
    // opened and never prompted stored nothing), titled by what each first asked.
    let listed = &results["list"]["sessions"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed:#}");
    assert_eq!(listed[0]["sessionId"], results["sessionId"], "{listed:#}");
    assert_eq!(listed[0]["title"], "Hello", "{listed:#}");
    // RFC 3339, as ACP asks: `2026-11-27T18:40:12Z`.
    let updated = listed[0]["updatedAt"].as_str().unwrap_or_default();
    assert!(
        updated.len() == 20 && updated.ends_with('Z') && updated.as_bytes()[10] == b'T',
        "{listed:#}"
    );
    assert!(
        listed[0]["cwd"].as_str().is_some_and(|cwd| !cwd.is_empty()),
        "{listed:#}"
    );
    let open_ones = &results["listOpen"];
    assert_eq!(
        open_ones["sessions"][0]["sessionId"], results["sessionId"],
        "{open_ones:#}"
    );
    assert!(open_ones.get("nextCursor").is_none(), "{open_ones:#}");
    let bad_cursor = &results["listBadCursor"]["error"];
    assert_eq!(bad_cursor["code"], -32602, "{bad_cursor}");

    // And loads the session from the store and replays it.
    let load = &results["load"];
    assert_eq!(
        load["user"],
        json!([
            "Hello",
            "And again",
            "[image image/png, the bytes sent]",
            "Where is greet?",
            "After the cancel"
        ]),
        "{load:#}"
    );
    assert_eq!(
        load["agent"],
        json!([
            "Hello there.",
            "Second answer.",
            "greet is in src/lib.rs.",
            "Still here."
        ]),
        "{load:#}"
    );
    let replayed = kinds(&load["updates"]);
    assert_eq!(
        replayed.iter().filter(|kind| *kind == "tool_call").count(),
        2,
        "{replayed:?}"
    );
    assert_eq!(
        replayed
            .iter()
            .filter(|kind| *kind == "tool_call_update")
            .count(),
        2,
        "{replayed:?}"
    );
    assert_eq!(
        results["loadUnknown"]["error"]["code"], -32002,
        "{results:#}"
    );

    // The key never reaches a log, even at -vvv.
    assert!(!agent_stderr.contains(SECRET_KEY));
    assert!(!String::from_utf8_lossy(&output.stdout).contains(SECRET_KEY));
}

/// An `aptix acp` child with piped stdio, its stdout read line by line (raw bytes kept).
struct Agent {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: mpsc::Receiver<Vec<u8>>,
    stdout: Vec<u8>,
    /// Read all along: at -vvv a full stderr pipe would stop the agent.
    stderr: std::thread::JoinHandle<String>,
    /// The options this editor chooses, in turn, when the agent asks
    /// `session/request_permission`; asked with none left, the test fails.
    permission_answers: std::collections::VecDeque<&'static str>,
    /// The permission requests the agent sent.
    permission_requests: Vec<Value>,
    /// Where each permission request came among its prompt's messages (how many came
    /// before it).
    permission_positions: Vec<usize>,
}

impl Agent {
    fn start(sandbox: &Sandbox, server: &FaultServer) -> Agent {
        Agent::start_with(sandbox, server, &[])
    }

    /// [`Agent::start`] with more arguments of `aptix acp`.
    fn start_with(sandbox: &Sandbox, server: &FaultServer, args: &[&str]) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_aptix"))
            .args(["acp", "-vvv"])
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", sandbox.home.path())
            .env("OPENAI_API_KEY", SECRET_KEY)
            .env("OPENAI_BASE_URL", server.base_url())
            .current_dir(sandbox.workspace.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        let stdin = child.stdin.take();
        Agent {
            child,
            stdin,
            lines,
            stdout: Vec::new(),
            stderr,
            permission_answers: std::collections::VecDeque::new(),
            permission_requests: Vec::new(),
            permission_positions: Vec::new(),
        }
    }

    fn send(&mut self, line: &str) {
        self.send_bytes(line.as_bytes());
    }

    /// One line of bytes, UTF-8 or not.
    fn send_bytes(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(PATIENCE)
            .expect("the agent answered nothing");
        self.stdout.extend_from_slice(&line);
        serde_json::from_slice(&line).unwrap_or_else(|error| {
            panic!(
                "a stdout line is not JSON ({error}): {:?}",
                String::from_utf8_lossy(&line)
            )
        })
    }

    /// Messages up to and including the response with `id`.
    fn until_response(&mut self, id: Value) -> Vec<Value> {
        let mut messages = Vec::new();
        loop {
            let message = self.next();
            if message["method"] == "session/request_permission" {
                let choice = self
                    .permission_answers
                    .pop_front()
                    .unwrap_or_else(|| panic!("an unexpected permission request: {message}"));
                self.send(
                    &json!({"jsonrpc": "2.0", "id": message["id"],
                            "result": {"outcome": {"outcome": "selected", "optionId": choice}}})
                    .to_string(),
                );
                self.permission_requests.push(message);
                self.permission_positions.push(messages.len());
                continue;
            }
            let done = message.get("id") == Some(&id) && message.get("method").is_none();
            messages.push(message);
            if done {
                return messages;
            }
        }
    }

    /// The agent, initialized (request id 1), with a session on `sandbox`'s workspace.
    fn with_session(sandbox: &Sandbox, server: &FaultServer) -> (Agent, String) {
        let mut agent = Agent::start(sandbox, server);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        let session_id = agent.new_session(&sandbox.workspace_arg());
        (agent, session_id)
    }

    /// `session/new` for `workspace` (request id 2, after `initialize`); its id.
    fn new_session(&mut self, workspace: &str) -> String {
        self.new_session_with(workspace, json!([]))
    }

    /// `session/new` (id 2) in `workspace` with the editor's MCP `servers`; its id.
    fn new_session_with(&mut self, workspace: &str, servers: Value) -> String {
        let created = self.request(
            2,
            "session/new",
            json!({"cwd": workspace, "mcpServers": servers}),
        );
        created[0]["result"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id: {created:?}"))
            .to_owned()
    }

    /// Sends `session/prompt` of one text block as request `id`, and reads until the
    /// model's first words are out: the prompt is running, its answer still to come.
    fn start_prompt(&mut self, id: u64, session_id: &str, text: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
                    "params": {"sessionId": session_id,
                               "prompt": [{"type": "text", "text": text}]}})
            .to_string(),
        );
        loop {
            let message = self.next();
            if message["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
                break;
            }
        }
    }

    /// `session/prompt` of one text block on `session_id`.
    fn prompt(&mut self, id: u64, session_id: &str, text: &str) -> Vec<Value> {
        self.request(
            id,
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Vec<Value> {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        self.until_response(json!(id))
    }

    /// Closes stdin, waits for the exit, and returns the exit status, every byte the
    /// agent wrote on stdout, and its stderr.
    fn finish(mut self) -> (std::process::ExitStatus, Vec<u8>, String) {
        drop(self.stdin.take());
        while let Ok(line) = self.lines.recv_timeout(PATIENCE) {
            self.stdout.extend_from_slice(&line);
        }
        let status = self.child.wait().unwrap();
        let stderr = self.stderr.join().unwrap();
        (status, self.stdout, stderr)
    }
}

/// The JSON bodies the fake provider received, in order.
fn received_json(server: &FaultServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .filter_map(aptix_testkit::fault_server::Received::json)
        .collect()
}

fn error_code(message: &Value) -> i64 {
    message["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {message}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_carries_only_json_rpc_and_bad_input_gets_errors() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![slow_text("resp_1", &["One ", "two."])]).await;
    let workspace = sandbox.workspace_arg();
    let outcome = tokio::task::spawn_blocking(move || {
        let mut agent = Agent::start(&sandbox, &server);
        let init = agent.request(1, "initialize", json!({"protocolVersion": 1}));
        assert_eq!(init[0]["result"]["protocolVersion"], 1, "{init:?}");
        let session_id = agent.new_session(&workspace);

        // A blank line is no message, and gets no answer; a malformed line: a parse
        // error with a null id.
        agent.send("");
        agent.send("  \r");
        agent.send("{this is not json");
        let parse = agent.next();
        assert_eq!(error_code(&parse), -32700, "{parse}");
        assert_eq!(parse["id"], Value::Null);
        // An unknown method, wrong parameters, a relative cwd, an unknown session.
        assert_eq!(
            error_code(&agent.request(3, "session/fly", json!({}))[0]),
            -32601
        );
        assert_eq!(
            error_code(&agent.request(4, "session/prompt", json!({"sessionId": 42}))[0]),
            -32602
        );
        assert_eq!(
            error_code(
                &agent.request(
                    5,
                    "session/new",
                    json!({"cwd": "relative", "mcpServers": []})
                )[0]
            ),
            -32602
        );
        let unknown = agent.request(
            6,
            "session/prompt",
            json!({"sessionId": "s-nope", "prompt": [{"type": "text", "text": "hi"}]}),
        );
        assert_eq!(error_code(&unknown[0]), -32002, "{unknown:?}");
        assert_eq!(unknown[0]["error"]["data"]["sessionId"], "s-nope");

        // Still serving: a streamed prompt, notifications first, then the answer.
        let prompt = agent.request(
            7,
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": "Count"}]}),
        );
        let (answer, updates) = prompt.split_last().unwrap();
        assert_eq!(answer["result"]["stopReason"], "end_turn", "{prompt:?}");
        let text: String = updates
            .iter()
            .filter(|message| message["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .map(|message| {
                message["params"]["update"]["content"]["text"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(text, "One two.");

        // A session open in one workspace is not loaded from another: its history is in
        // its own workspace's store, and the other's would go on without it.
        let subfolder = format!("{workspace}/src");
        let load = |id: &str| json!({"sessionId": id, "cwd": subfolder, "mcpServers": []});
        let elsewhere = agent.request(8, "session/load", load(&session_id));
        let refused = elsewhere.last().unwrap();
        assert_eq!(error_code(refused), -32602, "{elsewhere:?}");
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("belongs to the workspace"),
            "{refused}"
        );
        // A session the folder does not have is refused, and the folder is left as it
        // was: nothing indexed, no store made.
        let unknown = agent.request(9, "session/load", load("s-nope"));
        assert_eq!(error_code(unknown.last().unwrap()), -32002, "{unknown:?}");
        assert!(
            !std::path::Path::new(&subfolder).join(".aptix").exists(),
            "a failed load made {subfolder}/.aptix"
        );
        agent.finish()
    })
    .await;
    let (status, stdout, stderr) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert!(status.success(), "{status:?}\n{stderr}");
    assert!(
        stderr.contains("TRACE"),
        "-vvv logged nothing to stderr:\n{stderr}"
    );
    assert_only_json_rpc(&stdout);
    assert!(!stderr.contains(SECRET_KEY), "the key is in the log");
}

/// Every byte of `stdout` belongs to a JSON-RPC 2.0 message, one per line.
fn assert_only_json_rpc(stdout: &[u8]) {
    assert!(!stdout.is_empty());
    assert!(
        stdout.ends_with(b"\n"),
        "stdout does not end with a newline"
    );
    for line in stdout
        .strip_suffix(b"\n")
        .unwrap()
        .split(|byte| *byte == b'\n')
    {
        let message: Value = serde_json::from_slice(line).unwrap_or_else(|error| {
            panic!(
                "not JSON on stdout ({error}): {:?}",
                String::from_utf8_lossy(line)
            )
        });
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        assert!(message.is_object(), "{message}");
    }
    assert!(!String::from_utf8_lossy(stdout).contains(SECRET_KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_failure_ends_the_prompt_with_an_error_a_person_can_act_on() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![Reply::json(
        401,
        &json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}),
    )])
    .await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        let failed = agent.prompt(3, &session_id, "hi");
        let error = failed.last().unwrap()["error"].clone();
        // The session is left usable: the next prompt is accepted (and fails the same way
        // here, the script having no more replies).
        let again = agent.prompt(4, &session_id, "hi");
        (error, again.last().unwrap().clone(), agent.finish())
    })
    .await;
    let (error, again, (status, stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("Incorrect API key provided"), "{error}");
    assert!(message.contains("OPENAI_API_KEY"), "{error}");
    assert_eq!(error["data"]["errorCode"], "invalid_api_key", "{error}");
    assert!(again.get("error").is_some(), "{again}");
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
    assert!(!stderr.contains(SECRET_KEY));
    // The agent's log says why, as a warning (an editor's log shows the protocol
    // library's "Internal error" line otherwise).
    assert!(
        stderr.lines().any(|line| line.contains("WARN")
            && line
                .contains("the prompt failed: the model call failed: Incorrect API key provided")),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_first_prompt_failed_loads_after_a_restart() {
    // A common first run: the first prompt fails (a wrong key), the user fixes it and
    // restarts the editor, which loads the thread it saved. Nothing of the session was
    // stored, and the load said "unknown session": the thread was lost.
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![
        Reply::json(
            401,
            &json!({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
        ),
        text("resp_1", &["Working now."]),
    ])
    .await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        let failed = agent.prompt(3, &session_id, "hi");
        let failed = failed.last().unwrap().clone();
        let (first_status, _, _) = agent.finish();
        let mut agent = Agent::start(&sandbox, &server);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        let loaded = agent.request(
            2,
            "session/load",
            json!({"sessionId": session_id, "cwd": sandbox.workspace_arg(), "mcpServers": []}),
        );
        let again = agent.prompt(3, &session_id, "hi again");
        // An id this agent never made is still unknown.
        let unknown = agent.request(
            4,
            "session/load",
            json!({"sessionId": "s-nope", "cwd": sandbox.workspace_arg(), "mcpServers": []}),
        );
        (failed, first_status, loaded, again, unknown, agent.finish())
    })
    .await;
    let (failed, first_status, loaded, again, unknown, (status, stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert!(failed.get("error").is_some(), "{failed}");
    assert!(first_status.success());
    // Nothing to replay: the answer alone.
    assert_eq!(loaded.len(), 1, "{loaded:?}");
    assert!(loaded[0].get("result").is_some(), "{loaded:?}");
    let (answer, updates) = again.split_last().unwrap();
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{again:?}");
    assert!(
        updates
            .iter()
            .any(|update| update.to_string().contains("Working now.")),
        "{updates:?}"
    );
    assert_eq!(error_code(unknown.last().unwrap()), -32002, "{unknown:?}");
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limited_request_is_told_to_the_editor_before_its_wait() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![
        Reply::rate_limited(300),
        text("resp_1", &["After ", "the wait."]),
    ])
    .await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        let messages = agent.prompt(3, &session_id, "hi");
        (messages, server.requests().len(), agent.finish())
    })
    .await;
    let (messages, requests, (status, stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert_eq!(requests, 2, "the request was sent again once");
    let updates: Vec<&Value> = messages
        .iter()
        .filter(|message| message["method"] == "session/update")
        .map(|message| &message["params"]["update"])
        .collect();
    let thought = updates
        .iter()
        .position(|update| update["sessionUpdate"] == "agent_thought_chunk")
        .unwrap_or_else(|| panic!("no retry notice among {updates:#?}"));
    let notice = updates[thought]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(notice.contains("rate limited (429)"), "{notice}");
    assert!(notice.contains("attempt 2 of"), "{notice}");
    assert!(notice.contains("0.3 s"), "{notice}");
    let first_text = updates
        .iter()
        .position(|update| update["sessionUpdate"] == "agent_message_chunk")
        .unwrap_or_else(|| panic!("no answer text among {updates:#?}"));
    assert!(
        thought < first_text,
        "the notice comes before the answer: {updates:#?}"
    );
    let answer: String = updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    assert_eq!(answer, "After the wait.");
    assert_eq!(
        messages.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{messages:#?}"
    );
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_the_session_opens_and_each_prompt_says_how_to_set_one() {
    let sandbox = Sandbox::new();
    let workspace = sandbox.workspace_arg();
    // An MCP server the editor offers is not started when no prompt can run (this one
    // would leave a mark, and never answer the handshake).
    let mark = sandbox.home.path().join("started");
    let servers = json!([{"name": "marker", "command": "/bin/sh",
        "args": ["-c", "touch \"$0\"; exec sleep 60", mark], "env": []}]);
    let outcome = tokio::task::spawn_blocking(move || {
        let mut child = Command::new(env!("CARGO_BIN_EXE_aptix"))
            .arg("acp")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", sandbox.home.path())
            .current_dir(sandbox.workspace.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut exchange = |line: Value| {
            writeln!(stdin, "{line}").unwrap();
            let mut answer = String::new();
            stdout.read_line(&mut answer).unwrap();
            serde_json::from_str::<Value>(&answer).unwrap()
        };
        exchange(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}));
        let created = exchange(json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                      "params": {"cwd": workspace, "mcpServers": servers}}));
        let session_id = created["result"]["sessionId"].clone();
        let failed = exchange(json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                                     "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}}));
        drop(stdin);
        let status = child.wait().unwrap();
        (failed, status, mark.exists())
    })
    .await;
    let (failed, status, started) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("OPENAI_API_KEY"), "{failed}");
    // A code, as every failed prompt has one.
    assert_eq!(
        failed["error"]["data"]["errorCode"], "no_provider",
        "{failed}"
    );
    assert!(status.success());
    assert!(
        !started,
        "an MCP server was started for a session that cannot prompt"
    );
}

/// The updates among `messages`.
fn updates_of(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|message| message["method"] == "session/update")
        .map(|message| &message["params"]["update"])
        .collect()
}

/// The thoughts among `updates` that contain `needle`.
fn thoughts_about<'a>(updates: &[&'a Value], needle: &str) -> Vec<&'a str> {
    updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_thought_chunk")
        .filter_map(|update| update["content"]["text"].as_str())
        .filter(|text| text.contains(needle))
        .collect()
}

/// The last update about the tool call `call_id`.
fn last_about<'a>(updates: &[&'a Value], call_id: &str) -> &'a Value {
    updates
        .iter()
        .rev()
        .find(|update| update["toolCallId"] == call_id)
        .unwrap_or_else(|| panic!("no update about {call_id} among {updates:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_stream_answered_anew_is_never_shown_spliced_and_no_call_is_left_running() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    // The first attempt shows some text and begins a tool call, then the connection
    // drops; sent again, the model answers differently.
    let mut cut = text_answer_events("resp_1", &["The answer is 42 "])
        .get(..4)
        .unwrap()
        .to_vec();
    cut.push(
        json!({"type": "response.output_item.added", "output_index": 1,
        "item": {"type": "function_call", "id": "fc_a", "call_id": "call_A",
                 "name": "search_code", "arguments": "", "status": "in_progress"}}),
    );
    let server = FaultServer::start(vec![
        Reply::sse_steps(vec![
            Step::Send(sse_text(&numbered(cut)).into_bytes()),
            Step::Reset,
        ]),
        text("resp_2", &["Well, it depends", " on the input."]),
        // The next prompt: the model calls a tool the session does not have.
        tool_call("resp_3", "call_X", "no_such_tool", &json!({})),
        text("resp_4", &["Done."]),
    ])
    .await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        let first = agent.prompt(3, &session_id, "What is the answer?");
        let second = agent.prompt(4, &session_id, "Try a tool");
        (first, second, server.requests().len(), agent.finish())
    })
    .await;
    let (first, second, requests, (status, stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert_eq!(requests, 4, "{stderr}");
    let updates = updates_of(&first);
    let shown: String = updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|update| update["content"]["text"].as_str())
        .collect();
    // What was shown stays, and the new answer follows whole, apart: never "The answer
    // is 42 on the input.", a sentence the model did not write.
    assert_eq!(
        shown, "The answer is 42 \n\nWell, it depends on the input.",
        "{updates:#?}"
    );
    assert!(
        !thoughts_about(&updates, "differs from the text shown").is_empty(),
        "the editor is told the answer starts over: {updates:#?}"
    );
    // The call the cut attempt began is closed as not run, at the retry.
    let call = last_about(&updates, "call_A");
    assert_eq!(call["status"], "failed", "{updates:#?}");
    let why = call["content"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.starts_with("not run: ") && why.ends_with("the request is sent again"),
        "{why}"
    );
    assert_eq!(first.last().unwrap()["result"]["stopReason"], "end_turn");

    // A call to a tool the session does not have ends with the reason the model is
    // told, before the answer that follows it.
    let updates = updates_of(&second);
    let refused = updates
        .iter()
        .position(|update| update["toolCallId"] == "call_X" && update["status"] == "failed")
        .unwrap_or_else(|| panic!("the refused call is not closed: {updates:#?}"));
    assert_eq!(
        updates[refused]["content"][0]["content"]["text"],
        "there is no tool named \"no_such_tool\""
    );
    let answer = updates
        .iter()
        .position(|update| update["sessionUpdate"] == "agent_message_chunk")
        .unwrap_or_else(|| panic!("no answer: {updates:#?}"));
    assert!(refused < answer, "{updates:#?}");
    // The turn's warning is told to the editor too, once, as the turn ends.
    let warnings: Vec<&str> = updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_thought_chunk")
        .filter_map(|update| update["content"]["text"].as_str())
        .filter(|text| text.starts_with("\n[warning: the model called \"no_such_tool\""))
        .collect();
    assert_eq!(warnings.len(), 1, "{updates:#?}");
    assert!(
        warnings[0].contains("which is not a tool this turn offers (mode QA); it was told so]"),
        "{warnings:?}"
    );
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_is_not_utf8_is_answered_and_the_agent_keeps_serving() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![
        text("resp_1", &["Read it."]),
        text("resp_2", &["Still here."]),
    ])
    .await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        // "café" as Latin-1, as an editor passing a buffer's bytes through may send it:
        // the SDK's transport ended the connection, and every session, on such a line.
        let mut line = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "caf@"}]}})
        .to_string()
        .into_bytes();
        let at = line.iter().position(|byte| *byte == b'@').unwrap();
        line[at] = 0xE9;
        agent.send_bytes(&line);
        let first = agent.until_response(json!(3));
        let second = agent.prompt(4, &session_id, "Are you there?");
        (first, second, server.requests(), agent.finish())
    })
    .await;
    let (first, second, requests, (status, stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert_eq!(
        first.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{first:#?}"
    );
    assert_eq!(
        second.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{second:#?}"
    );
    // The byte reached the model as U+FFFD; the rest of the text as sent.
    let sent = serde_json::to_string(&requests[0].json()).unwrap();
    assert!(sent.contains("caf\u{fffd}"), "{sent}");
    assert!(stderr.contains("not UTF-8"), "{stderr}");
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_on_the_home_folder_is_refused_rather_than_indexing_it() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.home.path().join("diary.txt"), "private\n").unwrap();
    let server = FaultServer::start(Vec::new()).await;
    let home = sandbox.home.path().to_string_lossy().into_owned();
    let outcome = tokio::task::spawn_blocking(move || {
        let mut agent = Agent::start(&sandbox, &server);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        let refused = agent.request(2, "session/new", json!({"cwd": home, "mcpServers": []}));
        let indexed = sandbox.home.path().join(".aptix").exists();
        (refused, indexed, agent.finish())
    })
    .await;
    let (refused, indexed, (status, stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    let message = refused.last().unwrap()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("too wide a workspace"), "{refused:?}");
    // The editor's parameter is what is wrong, not the agent.
    assert_eq!(error_code(refused.last().unwrap()), -32602, "{refused:?}");
    assert!(!indexed, "the home folder was indexed");
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
}

/// The process with this id is gone (or a zombie no one waits for), within 15 s.
fn gone(pid: u64) -> bool {
    let status = format!("/proc/{pid}/status");
    for _ in 0..300 {
        match std::fs::read_to_string(&status) {
            Err(_) => return true,
            Ok(text)
                if text
                    .lines()
                    .any(|line| line.starts_with("State:") && line.contains('Z')) =>
            {
                return true;
            }
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_editors_mcp_servers_are_started_for_the_session_and_their_tools_offered() {
    let Some(python) =
        acp_python("the_editors_mcp_servers_are_started_for_the_session_and_their_tools_offered")
    else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    // One prompt: the model calls three tools of the editor's MCP server, one after the
    // other, then answers.
    let server = FaultServer::start(vec![
        tool_call(
            "resp_1",
            "call_add",
            "mcp__tickets__add",
            &json!({"a": 2, "b": 3}),
        ),
        tool_call(
            "resp_2",
            "call_env",
            "mcp__tickets__environment",
            &json!({}),
        ),
        tool_call(
            "resp_3",
            "call_close",
            "mcp__tickets__close_ticket",
            &json!({"ticket": "T-9"}),
        ),
        text("resp_4", &["Done."]),
        // After the session is loaded again: its new server runs the tool, and the user
        // refuses a call that would change things.
        tool_call(
            "resp_5",
            "call_env2",
            "mcp__tickets__environment",
            &json!({}),
        ),
        tool_call(
            "resp_6",
            "call_close2",
            "mcp__tickets__close_ticket",
            &json!({"ticket": "T-10"}),
        ),
        text("resp_7", &["Loaded."]),
    ])
    .await;
    let workspace = sandbox.workspace_arg();
    // Compared as the folder it is (the server reports its real path).
    let workspace_dir = std::fs::canonicalize(&workspace).unwrap();
    let script = repo_root().join("crates/aptix-cli/tests/acp/mcp_server.py");
    let outcome = tokio::task::spawn_blocking(move || {
        let mut agent = Agent::start(&sandbox, &server);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        // The server is started through a shell that outlives the server's stdin
        // (as `npx` or `uvx` wrappers may): only a stop that kills ends it.
        let servers = json!([
            {"name": "tickets", "command": "/bin/sh",
             "args": ["-c", "\"$0\" \"$1\"; exec sleep 120 </dev/null >/dev/null 2>&1", python, script],
             "env": [{"name": "TICKETS_OFFSET", "value": "10"},
                     {"name": "TICKETS_TOKEN", "value": "tok-editor-secret-7"}]},
            {"name": "broken", "command": "/nonexistent/mcp-server", "args": [], "env": []},
            {"name": " ", "command": "/bin/true", "args": [], "env": []},
        ]);
        // Loaded again, the server is started as it is: it exits when its stdin closes,
        // and leaves its child to the stop of its process group.
        let direct = json!([
            {"name": "tickets", "command": python, "args": [script],
             "env": [{"name": "TICKETS_OFFSET", "value": "10"}]},
        ]);
        let session_id = agent.new_session_with(&workspace, servers);
        // `close_ticket` is not read-only: the editor is asked, and allows it once.
        agent.permission_answers.push_back("allow_once");
        let prompt = agent.prompt(3, &session_id, "Add 2 and 3, then close T-9");
        // Loaded again while open: the session's servers are started anew, and the
        // ones it had stopped.
        let loaded = agent.request(
            4,
            "session/load",
            json!({"sessionId": session_id, "cwd": workspace, "mcpServers": direct}),
        );
        assert!(loaded.last().unwrap().get("result").is_some(), "{loaded:?}");
        let first_parent = server
            .requests()
            .get(2)
            .and_then(aptix_testkit::fault_server::Received::json)
            .map(|request| output_for(&request, "call_env"))
            .and_then(|output| serde_json::from_str::<Value>(&output).ok())
            .and_then(|environment| environment["parent"].as_u64())
            .unwrap_or_else(|| panic!("no environment output: {prompt:?}"));
        let first_child = server
            .requests()
            .get(2)
            .and_then(aptix_testkit::fault_server::Received::json)
            .map(|request| output_for(&request, "call_env"))
            .and_then(|output| serde_json::from_str::<Value>(&output).ok())
            .and_then(|environment| environment["child"].as_u64())
            .unwrap_or_else(|| panic!("no child pid: {prompt:?}"));
        let stopped_on_load = gone(first_parent) && gone(first_child);
        agent.permission_answers.push_back("reject_always");
        let after_load = agent.prompt(5, &session_id, "Where are you? Close T-10");
        let asked = std::mem::take(&mut agent.permission_requests);
        let asked_at = std::mem::take(&mut agent.permission_positions);
        let requests = received_json(&server);
        (
            prompt,
            after_load,
            stopped_on_load,
            (asked, asked_at),
            requests,
            agent.finish(),
        )
    })
    .await;
    let (
        prompt,
        after_load,
        stopped_on_load,
        (asked, asked_at),
        requests,
        (status, stdout, stderr),
    ) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert_eq!(requests.len(), 7, "{stderr}");
    assert_eq!(
        prompt.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{prompt:#?}\n{stderr}"
    );

    // The server's tools are offered to the model with their schemas, beside the
    // built-in ones.
    let tools = requests[0]["tools"].as_array().unwrap();
    let add = tools
        .iter()
        .find(|tool| tool["name"] == "mcp__tickets__add")
        .unwrap_or_else(|| panic!("no MCP tool offered: {tools:#?}"));
    assert_eq!(add["type"], "function");
    assert!(
        add["description"]
            .as_str()
            .unwrap()
            .starts_with("Adds two whole numbers"),
        "{add}"
    );
    assert_eq!(add["parameters"]["properties"]["a"]["type"], "integer");
    assert_eq!(add["parameters"]["required"], json!(["a", "b"]));
    assert!(tools.iter().any(|tool| tool["name"] == "read_file"));
    assert!(
        !tools
            .iter()
            .any(|tool| tool["name"].as_str().unwrap().contains("broken"))
    );

    // Each call ran on the server, with the environment the editor gave it, and its
    // result went back to the model.
    assert_eq!(output_for(&requests[1], "call_add"), "15");
    let environment: Value = serde_json::from_str(&output_for(&requests[2], "call_env"))
        .unwrap_or_else(|error| panic!("{error}: {}", output_for(&requests[2], "call_env")));
    assert_eq!(
        Path::new(environment["cwd"].as_str().unwrap()),
        workspace_dir
    );
    assert_eq!(environment["offset"], "10");
    // The provider's key and address are not handed to the editor's servers.
    assert_eq!(
        environment["withheld"],
        json!(["OPENAI_API_KEY", "OPENAI_BASE_URL"])
    );
    assert!(
        output_for(&requests[3], "call_close").contains("no ticket T-9"),
        "{}",
        output_for(&requests[3], "call_close")
    );

    // The editor sees each run as a tool call, the failed one as failed.
    let updates = updates_of(&prompt);
    let added = last_about(&updates, "call_add");
    assert_eq!(added["status"], "completed");
    // The editor's card shows what the tool said.
    assert_eq!(added["content"][0]["content"]["text"], "15", "{added}");
    assert!(
        updates
            .iter()
            .any(|update| update["toolCallId"] == "call_add" && update["title"] == "tickets: add"),
        "{updates:#?}"
    );
    assert_eq!(last_about(&updates, "call_env")["status"], "completed");
    let closed = last_about(&updates, "call_close");
    assert_eq!(closed["status"], "failed", "{closed}");
    // The server that did not start is told, once, with the first prompt; so is the one
    // with no name, which is not started.
    let told = thoughts_about(&updates, "the MCP server `broken`");
    assert_eq!(told.len(), 1, "{updates:#?}");
    assert!(
        told[0].contains("could not be started") && told[0].contains("/nonexistent/mcp-server"),
        "{told:?}"
    );
    assert_eq!(
        thoughts_about(&updates, "an MCP server (/bin/true) has no name").len(),
        1,
        "{updates:#?}"
    );

    // Loading the session again stopped its first server (the shell around it too).
    assert!(
        stopped_on_load,
        "the first server (pid {}) outlived the session's load",
        environment["parent"]
    );
    assert_eq!(
        after_load.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{after_load:#?}"
    );
    let again: Value = serde_json::from_str(&output_for(&requests[5], "call_env2")).unwrap();
    assert_ne!(again["pid"], environment["pid"]);
    // The editor was asked before each call that changes things, never before a
    // read-only one, and the refusal went back to the model.
    let asked_about: Vec<&Value> = asked
        .iter()
        .map(|request| &request["params"]["toolCall"]["toolCallId"])
        .collect();
    assert_eq!(
        asked_about,
        [&json!("call_close"), &json!("call_close2")],
        "{asked:#?}"
    );
    // The question names the call as its card does: a client may draw it from the
    // request alone.
    let asked_call = &asked[0]["params"]["toolCall"];
    assert!(
        asked_call["title"]
            .as_str()
            .is_some_and(|title| !title.is_empty()),
        "{asked_call}"
    );
    assert_eq!(asked_call["kind"], "other", "{asked_call}");
    assert!(asked_call["rawInput"].is_object(), "{asked_call}");
    let options: Vec<&str> = asked[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| option["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    // A call put to the user shows `pending` while they are asked, `in_progress` once
    // allowed; a refused one never runs.
    let statuses = |messages: &[Value], call: &str| -> Vec<String> {
        updates_of(messages)
            .into_iter()
            .filter(|update| update["toolCallId"] == call)
            .filter_map(|update| update["status"].as_str().map(str::to_owned))
            .collect()
    };
    let before = statuses(&prompt[..asked_at[0]], "call_close");
    assert!(!before.contains(&"in_progress".to_owned()), "{before:?}");
    let after = statuses(&prompt[asked_at[0]..], "call_close");
    assert_eq!(
        after.first().map(String::as_str),
        Some("in_progress"),
        "{after:?}"
    );
    let refused_statuses = statuses(&after_load, "call_close2");
    assert!(
        !refused_statuses.contains(&"in_progress".to_owned()),
        "{refused_statuses:?}"
    );
    // A read-only one goes ahead at once.
    assert!(statuses(&prompt, "call_add").contains(&"in_progress".to_owned()));
    let refused = output_for(&requests[6], "call_close2");
    assert!(
        refused.contains("the user did not allow this call"),
        "{refused}"
    );
    assert_eq!(
        last_about(&updates_of(&after_load), "call_close2")["status"],
        "failed"
    );
    // The agent exits when the editor goes, and the servers with it.
    assert!(status.success(), "{stderr}");
    let parent = again["parent"].as_u64().unwrap();
    assert!(
        gone(parent),
        "the MCP server (pid {parent}) outlived the agent"
    );
    let child = again["child"].as_u64().unwrap();
    assert!(
        gone(child),
        "the MCP server's child (pid {child}) outlived the agent"
    );
    assert_only_json_rpc(&stdout);
    assert!(!stderr.contains(SECRET_KEY), "the key is in the log");
    // The server's stderr is in the agent's log, named; the editor's values for it
    // are not.
    assert!(
        stderr
            .lines()
            .any(|line| line.contains("mcp_server=tickets")
                && line.contains("tickets: serving on stdio")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("tok-editor-secret-7"),
        "an env value is in the log"
    );
}

/// The test MCP server over streamable HTTP, killed when dropped.
struct HttpMcpServer {
    child: std::process::Child,
    url: String,
}

impl HttpMcpServer {
    fn start(python: &Path, token: &str) -> HttpMcpServer {
        let script = repo_root().join("crates/aptix-cli/tests/acp/mcp_server.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg("http")
            .env("TICKETS_TOKEN", token)
            .env("TICKETS_OFFSET", "10")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("port ")
            .unwrap_or_else(|| panic!("the MCP server said {line:?}, not its port"));
        HttpMcpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for HttpMcpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editors_mcp_server_over_http_is_connected_with_its_headers() {
    let Some(python) = acp_python("an_editors_mcp_server_over_http_is_connected_with_its_headers")
    else {
        return;
    };
    const TOKEN: &str = "tok-http-secret-3";
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![
        tool_call(
            "resp_1",
            "call_add",
            "mcp__web__add",
            &json!({"a": 2, "b": 3}),
        ),
        text("resp_2", &["Done."]),
    ])
    .await;
    let mcp = HttpMcpServer::start(&python, TOKEN);
    let url = mcp.url.clone();
    let outcome = tokio::task::spawn_blocking(move || {
        let mut agent = Agent::start(&sandbox, &server);
        let init = agent.request(1, "initialize", json!({"protocolVersion": 1}));
        let servers = json!([
            {"type": "http", "name": "web", "url": url,
             "headers": [{"name": "Authorization", "value": format!("Bearer {TOKEN}")}]},
            // The same server without the token: it refuses, the session opens anyway.
            {"type": "http", "name": "locked", "url": format!("{url}?key=query-secret-5"),
             "headers": []},
        ]);
        let session_id = agent.new_session_with(&sandbox.workspace_arg(), servers);
        let prompt = agent.prompt(3, &session_id, "Add 2 and 3");
        let requests = received_json(&server);
        (init, prompt, requests, agent.finish())
    })
    .await;
    let (init, prompt, requests, (_status, _stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    // The agent says it connects to MCP servers over HTTP, so an editor offers them.
    assert_eq!(
        init[0]["result"]["agentCapabilities"]["mcpCapabilities"]["http"], true,
        "{init:?}"
    );
    assert_eq!(requests.len(), 2, "{prompt:#?}\n{stderr}");
    let tools = requests[0]["tools"].as_array().unwrap();
    assert!(
        tools.iter().any(|tool| tool["name"] == "mcp__web__add"),
        "{tools:#?}"
    );
    assert!(
        !tools
            .iter()
            .any(|tool| tool["name"].as_str().unwrap().contains("locked")),
        "{tools:#?}"
    );
    // The call ran on the server, over HTTP, and its result went back to the model.
    assert_eq!(output_for(&requests[1], "call_add"), "15");
    assert_eq!(
        prompt.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{prompt:#?}"
    );
    // The refused one is told once, by name and address, without its query.
    let updates = updates_of(&prompt);
    let told = thoughts_about(&updates, "the MCP server `locked`");
    assert_eq!(told.len(), 1, "{updates:#?}");
    assert!(
        told[0].contains("could not be started")
            && told[0].contains("/mcp")
            && told[0].contains("401")
            && !told[0].contains("rmcp::"),
        "{told:?}"
    );
    // The editor's token reaches no log line, even at -vvv.
    assert!(!stderr.contains(TOKEN), "the token in the log:\n{stderr}");
    // Aptix's own words leave out a url's query, which may carry a key. (The ACP
    // library's trace of each message it receives, at -vvv only, shows the url whole.)
    assert!(
        !serde_json::to_string(&prompt)
            .unwrap()
            .contains("query-secret-5"),
        "a url's query shown to the editor"
    );
    assert!(
        !stderr
            .lines()
            .filter(|line| line.contains("aptix_acp"))
            .any(|line| line.contains("query-secret-5")),
        "a url's query in Aptix's log lines:\n{stderr}"
    );
    drop(mcp);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_ends_the_agent_and_the_mcp_servers_it_started() {
    let Some(python) = acp_python("a_signal_ends_the_agent_and_the_mcp_servers_it_started") else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(Vec::new()).await;
    let workspace = sandbox.workspace_arg();
    let script = repo_root().join("crates/aptix-cli/tests/acp/mcp_server.py");
    let pid_file = sandbox.home.path().join("server.pid");
    let outcome = tokio::task::spawn_blocking(move || {
        let mut agent = Agent::start(&sandbox, &server);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        // The server writes its pid, runs, and (its shell) outlives its stdin.
        let servers = json!([{"name": "tickets", "command": "/bin/sh",
            "args": ["-c", "echo $$ > \"$2\"; \"$0\" \"$1\"; exec sleep 120 </dev/null >/dev/null 2>&1",
                     python, script, pid_file],
            "env": []}]);
        let created = agent.request(
            2,
            "session/new",
            json!({"cwd": workspace, "mcpServers": servers}),
        );
        assert!(created[0]["result"]["sessionId"].is_string(), "{created:?}");
        let pid: u64 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let killed = Command::new("kill")
            .args(["-TERM", &agent.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = agent.child.wait().unwrap();
        (status, pid, gone(pid))
    })
    .await;
    let (status, pid, server_gone) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(
        server_gone,
        "the MCP server (pid {pid}) outlived the agent's SIGTERM"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_mid_prompt_answers_the_prompt_cancelled_before_the_agent_ends() {
    // The editor is not left waiting on a request that will never be answered.
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![stalled_text("resp_1")]).await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        agent.start_prompt(7, &session_id, "Think long");
        let killed = Command::new("kill")
            .args(["-TERM", &agent.child.id().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let answer = agent.until_response(json!(7));
        let status = agent.child.wait().unwrap();
        (answer, status)
    })
    .await;
    let (answer, status) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    let last = answer.last().unwrap();
    assert_eq!(last["result"]["stopReason"], "cancelled", "{answer:?}");
    assert_eq!(status.code(), Some(143), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_sent_right_after_a_cancel_waits_for_the_cancelled_one() {
    // A client that sends `session/cancel` and its next prompt back to back (before the
    // cancelled prompt has answered) had the new prompt refused as a second one.
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![stalled_text("resp_1"), text("resp_2", &["Next."])]).await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        agent.start_prompt(7, &session_id, "Think long");
        agent.send(
            &json!({"jsonrpc": "2.0", "method": "session/cancel",
                    "params": {"sessionId": session_id}})
            .to_string(),
        );
        let next = agent.prompt(8, &session_id, "Then this");
        (next, agent.finish())
    })
    .await;
    let (next, (status, stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    let first = next
        .iter()
        .find(|message| message["id"] == 7)
        .unwrap_or_else(|| panic!("the cancelled prompt was not answered: {next:?}"));
    assert_eq!(first["result"]["stopReason"], "cancelled", "{first}");
    let second = next.last().unwrap();
    assert_eq!(second["result"]["stopReason"], "end_turn", "{next:?}");
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_closed_mid_prompt_cancels_it_and_releases_its_session() {
    // The editor quits (or crashes) mid-prompt: the agent exits, and the session it was
    // running must not stay leased, busy to a replica on another host until the lease
    // runs out.
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![text("resp_1", &["Done."]), stalled_text("resp_2")]).await;
    let workspace = sandbox.workspace.path().to_path_buf();
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        let first = agent.prompt(3, &session_id, "First");
        assert_eq!(
            first.last().unwrap()["result"]["stopReason"],
            "end_turn",
            "{first:?}"
        );
        agent.start_prompt(7, &session_id, "Think long");
        let (status, stdout, stderr) = agent.finish();
        (sandbox, session_id, status, stdout, stderr)
    })
    .await;
    let (_sandbox, session_id, status, stdout, stderr) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
    // The row itself: a lease whose holder is a process gone is taken over on this
    // host, but a replica on another cannot tell, and waits for it to expire.
    let db = rusqlite::Connection::open(workspace.join(".aptix/sessions.db")).unwrap();
    let leases: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM leases WHERE session_id = ?1",
            [&session_id],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(leases, 0, "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_mcp_tool_is_cancelled_at_its_time_limit_and_the_turn_goes_on() {
    let Some(python) =
        acp_python("a_hung_mcp_tool_is_cancelled_at_its_time_limit_and_the_turn_goes_on")
    else {
        return;
    };
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![
        tool_call(
            "resp_1",
            "call_wait",
            "mcp__tickets__wait_forever",
            &json!({}),
        ),
        text("resp_2", &["It did not answer."]),
    ])
    .await;
    let workspace = sandbox.workspace_arg();
    let script = repo_root().join("crates/aptix-cli/tests/acp/mcp_server.py");
    let outcome = tokio::task::spawn_blocking(move || {
        let mut agent = Agent::start_with(&sandbox, &server, &["--mcp-tool-timeout", "1s"]);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        // And one that exits at once: said as what happened.
        let servers = json!([{"name": "tickets", "command": python, "args": [script], "env": []},
                             {"name": "quitter", "command": "/bin/sh", "args": ["-c", "exit 0"], "env": []}]);
        let session_id = agent.new_session_with(&workspace, servers);
        let prompt = agent.prompt(3, &session_id, "Wait for it");
        let requests = received_json(&server);
        (prompt, requests, agent.finish())
    })
    .await;
    let (prompt, requests, (_, _, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert_eq!(
        prompt.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{prompt:#?}\n{stderr}"
    );
    assert_eq!(requests.len(), 2, "{stderr}");
    let quit = thoughts_about(&updates_of(&prompt), "the MCP server `quitter`");
    assert_eq!(quit.len(), 1, "{prompt:#?}");
    assert!(quit[0].contains("it exited"), "{quit:?}");
    let told = output_for(&requests[1], "call_wait");
    assert!(
        told.contains("did not answer within 1s") && told.contains("cancelled"),
        "{told}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_still_starting_when_the_editor_leaves_is_stopped_too() {
    // A server that never answers the MCP handshake: the editor closes the agent's stdin
    // while `session/new` still waits for it. It used to be left running.
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(Vec::new()).await;
    let pid_file = sandbox.home.path().join("hung.pid");
    let pid_arg = pid_file.to_str().unwrap().to_owned();
    let workspace = sandbox.workspace_arg();
    let pid = tokio::task::spawn_blocking(move || {
        let mut agent = Agent::start(&sandbox, &server);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        let servers = json!([{"name": "hung", "command": "/bin/sh",
                              "args": ["-c", "echo $$ > \"$0\"; exec sleep 1000", pid_arg],
                              "env": []}]);
        agent.send(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
                    "params": {"cwd": workspace, "mcpServers": servers}})
            .to_string(),
        );
        // Counted, not timed: until the server has started (bounded).
        let mut pid = None;
        for _ in 0..200 {
            pid = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok());
            if pid.is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        let pid = pid.expect("the server never started");
        // The handshake under way (the leak showed from half a second on).
        std::thread::sleep(std::time::Duration::from_millis(700));
        let (status, _, stderr) = agent.finish();
        assert_eq!(status.code(), Some(0), "{stderr}");
        pid
    })
    .await
    .unwrap();
    assert!(gone(pid), "the server {pid} outlived the agent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_start_in_its_time_is_stopped_and_the_session_opens_without_it() {
    // `session/new` waits for the editor's servers: how long is the user's to say, and a
    // server still in its handshake by then is stopped, not left running.
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    let server = FaultServer::start(vec![text("resp_1", &["Hello."])]).await;
    let pid_file = sandbox.home.path().join("slow.pid");
    let pid_arg = pid_file.to_str().unwrap().to_owned();
    let workspace = sandbox.workspace_arg();
    let outcome = tokio::task::spawn_blocking(move || {
        let mut agent = Agent::start_with(&sandbox, &server, &["--mcp-startup-timeout", "1s"]);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        let servers = json!([{"name": "slow", "command": "/bin/sh",
                              "args": ["-c", "echo $$ > \"$0\"; exec sleep 1000", pid_arg],
                              "env": []}]);
        let session_id = agent.new_session_with(&workspace, servers);
        let pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .expect("the server never started");
        let prompt = agent.prompt(3, &session_id, "Hello");
        (pid, prompt, agent.finish())
    })
    .await;
    let (pid, prompt, (status, _, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(
        prompt.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{prompt:#?}\n{stderr}"
    );
    let slow = thoughts_about(&updates_of(&prompt), "the MCP server `slow`");
    assert_eq!(slow.len(), 1, "{prompt:#?}");
    assert!(
        slow[0].contains("did not start within 1s (--mcp-startup-timeout)"),
        "{slow:?}"
    );
    assert!(gone(pid), "the server {pid} outlived its startup time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_and_a_word_of_thanks_bring_no_notes_about_the_plumbing() {
    // A refusal is the answer (shown as message text): where the envelope keeps it is
    // no news to an editor user; nor is a "thanks" finding no code.
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/lib.rs", "pub fn invoice_total() -> u32 { 3 }\n");
    let message = json!({"type": "message", "id": "msg_r", "role": "assistant", "status": "completed",
                         "content": [{"type": "refusal", "refusal": "I can't help with that."}]});
    let refusal = numbered(vec![
        json!({"type": "response.created", "response": {"id": "resp_r", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_r", "role": "assistant", "status": "in_progress", "content": []}}),
        json!({"type": "response.content_part.added", "item_id": "msg_r", "output_index": 0, "content_index": 0,
               "part": {"type": "refusal", "refusal": ""}}),
        json!({"type": "response.refusal.delta", "item_id": "msg_r", "output_index": 0, "content_index": 0,
               "delta": "I can't help with that."}),
        json!({"type": "response.refusal.done", "item_id": "msg_r", "output_index": 0, "content_index": 0,
               "refusal": "I can't help with that."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": message}),
        json!({"type": "response.completed", "response": {"id": "resp_r", "status": "completed", "model": "m",
               "output": [message],
               "usage": {"input_tokens": 5, "output_tokens": 5, "total_tokens": 10}}}),
    ]);
    let server = FaultServer::start(vec![
        Reply::sse(sse_text(&refusal)),
        text("resp_t", &["You're welcome."]),
    ])
    .await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        let refused = agent.prompt(3, &session_id, "Write malware about invoice_total");
        let thanked = agent.prompt(4, &session_id, "thanks!");
        (refused, thanked, agent.finish())
    })
    .await;
    let (refused, thanked, (_, _, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    assert_eq!(
        refused.last().unwrap()["result"]["stopReason"],
        "refusal",
        "{refused:#?}\n{stderr}"
    );
    let updates = updates_of(&refused);
    assert!(
        updates
            .iter()
            .any(|update| update["content"]["text"] == "I can't help with that."),
        "the refusal is shown: {updates:#?}"
    );
    assert!(
        thoughts_about(&updates, "`refusal`").is_empty(),
        "{updates:#?}"
    );
    let updates = updates_of(&thanked);
    assert!(
        thoughts_about(&updates, "workspace index").is_empty(),
        "{updates:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_id_a_server_reuses_is_a_new_card_in_the_editor_live_and_replayed() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/main.rs", "fn main() {}\n");
    // A local server that numbers each reply's calls from call_0: the same id in both
    // prompts, and twice within the second.
    let search = json!({"query": "main"});
    let server = FaultServer::start(vec![
        tool_call("resp_1", "call_0", "search_code", &search),
        text("resp_2", &["Found it."]),
        tool_call("resp_3", "call_0", "search_code", &search),
        tool_call("resp_4", "call_0", "list_files", &json!({})),
        text("resp_5", &["Done."]),
        tool_call("resp_6", "call_0", "search_code", &search),
        text("resp_7", &["Again."]),
    ])
    .await;
    let outcome = tokio::task::spawn_blocking(move || {
        let (mut agent, session_id) = Agent::with_session(&sandbox, &server);
        let first = agent.prompt(3, &session_id, "Where is main?");
        let second = agent.prompt(4, &session_id, "Look again");
        let workspace = sandbox.workspace_arg();
        let loaded = agent.request(
            5,
            "session/load",
            json!({"sessionId": session_id, "cwd": workspace, "mcpServers": []}),
        );
        let third = agent.prompt(6, &session_id, "Once more");
        (first, second, loaded, third, agent.finish())
    })
    .await;
    let (first, second, loaded, third, (status, stdout, stderr)) = match outcome {
        Ok(finished) => finished,
        Err(panicked) => std::panic::resume_unwind(panicked.into_panic()),
    };
    // Each call's card: its id, and the status its last update gave it.
    let cards = |messages: &[Value]| -> Vec<(String, String)> {
        let mut cards: Vec<(String, String)> = Vec::new();
        for update in updates_of(messages) {
            let Some(id) = update["toolCallId"].as_str() else {
                continue;
            };
            let status = update["status"].as_str().unwrap_or_default().to_owned();
            match cards.iter_mut().find(|(card, _)| card == id) {
                Some(card) if !status.is_empty() => card.1 = status,
                Some(_) => {}
                None => {
                    assert_eq!(
                        update["sessionUpdate"], "tool_call",
                        "an update of a call never shown: {update}"
                    );
                    cards.push((id.to_owned(), status));
                }
            }
        }
        cards
    };
    let card = |id: &str, status: &str| (id.to_owned(), status.to_owned());
    assert_eq!(cards(&first), [card("call_0", "completed")], "{stderr}");
    // The second prompt's calls are cards of their own, not updates of the first's.
    assert_eq!(
        cards(&second),
        [card("call_0#2", "completed"), card("call_0#3", "completed")],
        "{second:#?}"
    );
    // Replayed as the editor saw them live.
    assert_eq!(
        cards(&loaded),
        [
            card("call_0", "completed"),
            card("call_0#2", "completed"),
            card("call_0#3", "completed"),
        ],
        "{loaded:#?}"
    );
    // And the loaded session's next call goes on from there.
    assert_eq!(cards(&third), [card("call_0#4", "completed")], "{third:#?}");
    assert!(status.success(), "{stderr}");
    assert_only_json_rpc(&stdout);
}

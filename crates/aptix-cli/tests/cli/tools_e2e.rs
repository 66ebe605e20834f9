//! The built-in tools end to end: a scripted model calls `search_code`, then
//! `read_file` on what it found, then answers, through the `aptix` binary against a
//! fake Responses server. Each later request carries the previous tool's output. And
//! the per-tool switches: a dry run's body offers exactly the tools not disabled.

use aptix_testkit::fault_server::{FaultServer, Reply};
use serde_json::{Value, json};

use crate::support::{SECRET_KEY, Sandbox, code, stderr, stdout, stdout_json};

/// The names of the tools a request body offers, and those its tool-usage block
/// describes to the model.
fn offered(body: &Value) -> (Vec<String>, Vec<String>) {
    let tools = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str())
        .map(str::to_owned)
        .collect();
    let text: String = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|item| item["content"].as_array().into_iter().flatten())
        .filter_map(|part| part["text"].as_str())
        .collect();
    let described = ["search_code", "read_file", "list_files"]
        .into_iter()
        .filter(|name| text.contains(&format!("APTIX_TOOL_USAGE_BEGIN name='{name}'")))
        .map(str::to_owned)
        .collect();
    (tools, described)
}

/// `aptix ask --no-stream [EXTRA...] QUESTION` in the sandbox's workspace against
/// `server`.
async fn ask_unstreamed(
    sandbox: &Sandbox,
    server: &FaultServer,
    extra: &[&str],
    question: &str,
) -> std::process::Output {
    let mut command = sandbox.aptix();
    command
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--no-stream", "--base-url", &server.base_url()])
        .args(["--workspace", &sandbox.workspace_arg()])
        .args(extra)
        .arg(question);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

#[test]
fn a_dry_run_offers_only_the_tools_not_disabled_from_any_layer() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/store.rs", "pub fn commit_turn() {}\n");
    let dry_run = |extra: &[&str], env: &[(&str, &str)]| {
        let mut command = sandbox.aptix();
        command
            .args(["ask", "--dry-run", "--workspace", &sandbox.workspace_arg()])
            .args(extra)
            .arg("Where is a turn committed?");
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command.output().unwrap();
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        offered(&stdout_json(&output))
    };
    let names = |list: &[&str]| -> (Vec<String>, Vec<String>) {
        let list: Vec<String> = list.iter().map(|name| (*name).to_owned()).collect();
        (list.clone(), list)
    };

    assert_eq!(
        dry_run(&[], &[]),
        names(&["search_code", "read_file", "list_files"])
    );
    assert_eq!(
        dry_run(&["--disable-tool", "read_file"], &[]),
        names(&["search_code", "list_files"])
    );
    assert_eq!(
        dry_run(
            &[
                "--disable-tool",
                "read_file",
                "--disable-tool",
                "search_code"
            ],
            &[]
        ),
        names(&["list_files"])
    );
    assert_eq!(
        dry_run(&["--disable-tool", "read_file,list_files"], &[]),
        names(&["search_code"])
    );

    // The file, the environment over it, the flag over both: the highest layer's list.
    sandbox.write_workspace_file("aptix.toml", "disabled_tools = [\"list_files\"]\n");
    assert_eq!(dry_run(&[], &[]), names(&["search_code", "read_file"]));
    let env = [("APTIX_DISABLED_TOOLS", "search_code")];
    assert_eq!(dry_run(&[], &env), names(&["read_file", "list_files"]));
    assert_eq!(
        dry_run(&["--disable-tool", "read_file"], &env),
        names(&["search_code", "list_files"])
    );
    // Every tool off is no tool at all, as with --no-tools.
    assert_eq!(
        dry_run(&["--disable-tool", "search_code,read_file,list_files"], &[]),
        names(&[])
    );
    assert_eq!(dry_run(&["--no-tools"], &[]), names(&[]));
}

#[test]
fn an_unknown_tool_name_is_a_usage_error_listing_the_known_names() {
    let sandbox = Sandbox::new();
    let known = "(known tools: search_code, read_file, list_files)";
    let ask = |extra: &[&str], env: &[(&str, &str)]| {
        let mut command = sandbox.aptix();
        command
            .args(["ask", "--dry-run", "--workspace", &sandbox.workspace_arg()])
            .args(extra)
            .arg("hello");
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().unwrap()
    };

    let output = ask(&["--disable-tool", "run_shell"], &[]);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(stdout(&output).is_empty());
    assert_eq!(
        stderr(&output),
        format!("error: --disable-tool \"run_shell\" is not a built-in tool {known}\n")
    );

    let output = ask(&[], &[("APTIX_DISABLED_TOOLS", "read_file, grep")]);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!(
            "APTIX_DISABLED_TOOLS \"grep\" is not a built-in tool {known}"
        )),
        "{}",
        stderr(&output)
    );

    let file = sandbox.write_workspace_file("aptix.toml", "disabled_tools = [\"readfile\"]\n");
    let output = ask(&[], &[]);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!(
            "`disabled_tools` in {} \"readfile\" is not a built-in tool {known}",
            file.display()
        )),
        "{}",
        stderr(&output)
    );
    // `aptix serve` and `aptix acp` read the same settings and refuse the same way.
    let output = sandbox
        .aptix()
        .args(["serve", "--workspace", &sandbox.workspace_arg()])
        .output()
        .unwrap();
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is not a built-in tool"),
        "{}",
        stderr(&output)
    );
}

fn call(id: &str, call_id: &str, name: &str, arguments: Value) -> Value {
    json!({
        "id": id, "status": "completed", "model": "m",
        "output": [{"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
                    "name": name, "arguments": arguments.to_string()}],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    })
}

/// A reply whose answer is `text`.
fn answer(id: &str, text: &str) -> Value {
    json!({
        "id": id, "status": "completed", "model": "m",
        "output": [{"type": "message", "id": format!("msg_{id}"), "role": "assistant",
                    "content": [{"type": "output_text", "text": text}]}],
        "usage": {"input_tokens": 30, "output_tokens": 8, "total_tokens": 38}
    })
}

/// The `output` text of the `function_call_output` answering `call_id` in a request.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_searches_then_reads_then_answers() {
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file(
        "src/store.rs",
        "//! The session store.\n\npub fn commit_turn(state: &str) -> usize {\n    state.len()\n}\n",
    );
    sandbox.write_workspace_file("src/other.rs", "pub fn unrelated() {}\n");
    let answer = answer("resp_3", "commit_turn in src/store.rs commits it.");
    let server = FaultServer::start(vec![
        Reply::json(
            200,
            &call(
                "resp_1",
                "call_s",
                "search_code",
                json!({"query": "commit_turn"}),
            ),
        ),
        Reply::json(
            200,
            &call(
                "resp_2",
                "call_r",
                "read_file",
                json!({"path": "src/store.rs", "start_line": 3, "end_line": 5}),
            ),
        ),
        Reply::json(200, &answer),
    ])
    .await;
    let output = ask_unstreamed(&sandbox, &server, &[], "Where is a turn committed?").await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stdout(&output).contains("commit_turn in src/store.rs commits it."),
        "{}",
        stdout(&output)
    );

    let requests: Vec<Value> = server
        .requests()
        .iter()
        .map(|request| request.json().unwrap())
        .collect();
    assert_eq!(requests.len(), 3);
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for tool in ["search_code", "read_file", "list_files"] {
        assert!(names.contains(&tool), "{tool} not offered: {names:?}");
    }
    let found = output_for(&requests[1], "call_s");
    assert!(found.contains("src/store.rs"), "{found}");
    let read = output_for(&requests[2], "call_r");
    assert!(read.contains("3| pub fn commit_turn"), "{read}");
    assert!(
        !read.contains("The session store"),
        "read past the range: {read}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_stopped_at_its_bound_of_model_calls_is_incomplete_and_says_so_once() {
    // A model that keeps calling a tool it does not have: the turn stops at its bound
    // of model calls. It used to exit 0 with nothing on stdout and the same warning
    // once per call.
    let sandbox = Sandbox::new();
    let replies = (0..20).map(|n| {
        Reply::json(
            200,
            &call(
                &format!("resp_{n}"),
                &format!("call_{n}"),
                "write_file",
                json!({}),
            ),
        )
    });
    let server = FaultServer::start(replies.collect()).await;
    let output = ask_unstreamed(&sandbox, &server, &[], "Change the file").await;
    let text = stderr(&output);
    assert_eq!(code(&output), 3, "{text}");
    assert!(text.contains("the answer is not done"), "{text}");
    assert!(text.contains("--session"), "{text}");
    assert_eq!(
        text.matches("which is not a tool this turn offers").count(),
        1,
        "one warning for one thing: {text}"
    );

    // Continued: the last call's output goes with the new question, and nothing was
    // cancelled, so nothing is said to be.
    let session = text
        .split("--session ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| c.is_whitespace() || c == ')').next())
        .unwrap_or_else(|| panic!("no session named: {text}"))
        .to_owned();
    let answer = answer("resp_next", "I cannot write files.");
    let next = FaultServer::start(vec![Reply::json(200, &answer)]).await;
    let output = ask_unstreamed(&sandbox, &next, &["--session", &session], "Why not?").await;
    let text = stderr(&output);
    assert_eq!(code(&output), 0, "{text}");
    assert!(!text.contains("were cancelled"), "{text}");
    let sent: Value = next.requests()[0].json().unwrap();
    assert!(
        sent["input"].to_string().contains("function_call_output"),
        "the last call's output goes with the question: {sent}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_serve_tokens_file_in_the_workspace_is_neither_context_nor_read_by_a_tool() {
    // `aptix serve`'s bearer tokens, kept in the workspace and named in its aptix.toml:
    // `aptix ask` there must not send them to the provider as context, nor let the
    // model search, list or read them.
    let sandbox = Sandbox::new();
    let token = "team-token-7f3a9c2e5b1d4e8f";
    sandbox.write_workspace_file("conf/team.txt", &format!("# team token\n{token}\n"));
    sandbox.write_workspace_file("conf/notes.md", "Team notes: which token is whose.\n");
    sandbox.write_workspace_file("aptix.toml", "tokens_file = \"conf/team.txt\"\n");
    let answer = answer("resp_4", "I cannot see it.");
    let server = FaultServer::start(vec![
        Reply::json(
            200,
            &call(
                "resp_1",
                "call_s",
                "search_code",
                json!({"query": "team token"}),
            ),
        ),
        Reply::json(
            200,
            &call("resp_2", "call_l", "list_files", json!({"path": "conf"})),
        ),
        Reply::json(
            200,
            &call(
                "resp_3",
                "call_r",
                "read_file",
                json!({"path": "conf/team.txt"}),
            ),
        ),
        Reply::json(200, &answer),
    ])
    .await;
    let output = ask_unstreamed(&sandbox, &server, &[], "Which team token is configured?").await;
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let requests: Vec<Value> = server
        .requests()
        .iter()
        .map(|request| request.json().unwrap())
        .collect();
    assert_eq!(requests.len(), 4);
    for request in &requests {
        let text = request.to_string();
        assert!(
            !text.contains(token),
            "the token reached the provider: {text}"
        );
    }
    let listed = output_for(&requests[2], "call_l");
    assert!(listed.contains("conf/notes.md"), "{listed}");
    assert!(!listed.contains("team.txt"), "{listed}");
    let read = output_for(&requests[3], "call_r");
    assert!(read.contains("secret"), "{read}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_before_a_tool_call_and_the_answer_after_it_are_two_paragraphs() {
    use aptix_testkit::fault_server::{sse_text, text_answer_events};
    let sandbox = Sandbox::new();
    sandbox.write_workspace_file("src/store.rs", "pub fn commit_turn() {}\n");
    // "Let me look." streamed, and the final response also calls read_file.
    let mut first = text_answer_events("resp_1", &["Let me look."]);
    let last = first.len() - 1;
    first[last]["response"]["output"]
        .as_array_mut()
        .unwrap()
        .push(
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_r",
                     "name": "read_file", "arguments": "{\"path\": \"src/store.rs\"}",
                     "status": "completed"}),
        );
    let second = text_answer_events("resp_2", &["It is in src/store.rs."]);
    let server = FaultServer::start(vec![
        Reply::sse(sse_text(&first)),
        Reply::sse(sse_text(&second)),
    ])
    .await;
    let mut command = sandbox.aptix();
    command
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--base-url", &server.base_url()])
        .args(["--workspace", &sandbox.workspace_arg()])
        .arg("Where is a turn committed?");
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(server.requests().len(), 2, "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "Let me look.\n\nIt is in src/store.rs.\n",
        "{}",
        stderr(&output)
    );
}

//! The built-in tools end to end: a scripted model calls `search_code`, then
//! `read_file` on what it found, then answers, through the `aptix` binary against a
//! fake Responses server. Each later request carries the previous tool's output.

use aptix_testkit::fault_server::{FaultServer, Reply};
use serde_json::{Value, json};

use crate::support::{SECRET_KEY, Sandbox, code, stderr, stdout};

fn call(id: &str, call_id: &str, name: &str, arguments: Value) -> Value {
    json!({
        "id": id, "status": "completed", "model": "m",
        "output": [{"type": "function_call", "id": format!("fc_{call_id}"), "call_id": call_id,
                    "name": name, "arguments": arguments.to_string()}],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
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
    let answer = json!({
        "id": "resp_3", "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": "commit_turn in src/store.rs commits it."}]}],
        "usage": {"input_tokens": 30, "output_tokens": 8, "total_tokens": 38}
    });
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
    let mut command = sandbox.aptix();
    command
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--no-stream", "--base-url", &server.base_url()])
        .args(["--workspace", &sandbox.workspace_arg()])
        .arg("Where is a turn committed?");
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
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

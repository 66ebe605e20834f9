//! `aptix ask` against local mock servers: answer text streamed to stdout, the `--json`
//! envelope, a session continued with `--session` (chained by `previous_response_id`,
//! or replayed with `--stateless` and on the chat bridge), a provider error, and the
//! workspace indexed on first use with its context sent.

use aptix_mapping::{TurnContext, map_capture};
use aptix_testkit::postgres::TestDatabase;
use aptix_testkit::read_fixture;
use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::support::{SECRET_KEY, Sandbox, code, stderr, stdout, stdout_json};

const STREAMED_TEXT: &str = "Hello! How can I assist you today?";

/// A reply carrying an SSE body.
fn sse(body: Vec<u8>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// Requests that did not ask for a stream.
fn not_streaming(request: &Request) -> bool {
    request
        .body_json::<Value>()
        .is_ok_and(|body| body.get("stream").is_none())
}

/// `/v1/responses`: the recorded text stream for streaming requests, the recorded
/// plain-text body for the others.
async fn responses_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(sse(read_fixture("sse_text_deltas.sse")))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(not_streaming)
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(read_fixture("response_plain_text.json"), "application/json"),
        )
        .mount(&server)
        .await;
    server
}

/// The envelope of a fixture, as the library maps it.
fn fixture_envelope(name: &str) -> Value {
    serde_json::to_value(map_capture(&read_fixture(name), &TurnContext::default()).envelope)
        .unwrap()
}

/// The session id from "session ID (new)" on stderr.
fn new_session_id(stderr: &str) -> String {
    let line = stderr
        .lines()
        .find(|line| line.contains("(new)"))
        .unwrap_or_else(|| panic!("no new session announced in:\n{stderr}"));
    let after = line.split("session ").nth(1).unwrap();
    after.split_whitespace().next().unwrap().to_owned()
}

/// The bodies the server received, in order.
async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| request.body_json().unwrap())
        .collect()
}

/// Every text of every message with `role` in a Responses `input`.
fn texts_with_role(body: &Value, role: &str) -> Vec<String> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["role"] == role)
        .flat_map(|item| item["content"].as_array().unwrap().clone())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_streamed_answer_then_a_json_continuation_chained_by_previous_response_id() {
    let server = responses_server().await;
    let base_url = format!("{}/v1", server.uri());
    let sandbox = Sandbox::new();

    let first = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args([
            "-vvv",
            "ask",
            "--mode",
            "code-edit",
            "--base-url",
            &base_url,
        ])
        .args(["--workspace", &sandbox.workspace_arg(), "What is Aptix?"])
        .output()
        .unwrap();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert_eq!(stdout(&first), format!("{STREAMED_TEXT}\n"));
    assert!(!stderr(&first).contains(SECRET_KEY), "the key was logged");
    let session = new_session_id(&stderr(&first));
    let aptix_dir = sandbox.workspace.path().join(".aptix");
    assert!(aptix_dir.join("sessions.db").is_file());
    assert!(aptix_dir.join(".gitignore").is_file());

    let second = sandbox
        .aptix()
        .env("OPENAI_API_KEY", SECRET_KEY)
        .args(["ask", "--no-stream", "--json", "--session", &session])
        .args(["--model", "gpt-other"])
        .args([
            "--base-url",
            &base_url,
            "--workspace",
            &sandbox.workspace_arg(),
        ])
        .arg("And what does it store?")
        .output()
        .unwrap();
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert!(stderr(&second).contains(&format!("session {session} (continued)")));
    let envelope = stdout_json(&second);
    let recorded = fixture_envelope("response_plain_text.json");
    assert_eq!(envelope["kind"], "ok");
    assert_eq!(envelope["conversationId"], session.as_str());
    assert_eq!(envelope["mode"], "CODE_EDIT", "the session keeps its mode");
    assert_eq!(envelope["text"], recorded["text"]);
    assert_eq!(
        envelope["responseContinuationId"],
        recorded["responseContinuationId"]
    );

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.headers.get("authorization").unwrap(),
            &format!("Bearer {SECRET_KEY}")
        );
    }
    let bodies = bodies(&server).await;
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["input"][0]["role"], "system");
    assert!(bodies[0].get("previous_response_id").is_none());
    let streamed_id = fixture_envelope("sse_text_deltas.sse")["responseContinuationId"].clone();
    assert_eq!(bodies[1]["previous_response_id"], streamed_id);
    assert_eq!(bodies[0]["model"], "gpt-5-mini");
    assert_eq!(
        bodies[1]["model"], "gpt-other",
        "--model applies to a continued session"
    );
    assert!(bodies[1].get("stream").is_none());
    assert!(
        texts_with_role(&bodies[1], "user")
            .iter()
            .any(|text| text.starts_with("[MODE: CODE_EDIT]")
                && text.contains("[INSTRUCTION]\nAnd what does it store?"))
    );
    assert!(
        texts_with_role(&bodies[1], "assistant").is_empty(),
        "a chained turn does not replay history"
    );

    // A dry run on the session shows the chain it would continue, and sends nothing.
    let dry = sandbox
        .aptix()
        .args(["ask", "--dry-run", "--session", &session])
        .args(["--workspace", &sandbox.workspace_arg(), "One more"])
        .output()
        .unwrap();
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    assert_eq!(
        stdout_json(&dry)["previous_response_id"],
        recorded["responseContinuationId"]
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn stateless_sessions_replay_the_history_instead_of_chaining() {
    let server = responses_server().await;
    let base_url = format!("{}/v1", server.uri());
    let sandbox = Sandbox::new();
    let ask = |extra: &[&str], instruction: &str| {
        sandbox
            .aptix()
            .args(["ask", "--stateless", "--base-url", &base_url])
            .args(["--workspace", &sandbox.workspace_arg()])
            .args(extra)
            .arg(instruction)
            .output()
            .unwrap()
    };
    let first = ask(&[], "What is Aptix?");
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let session = new_session_id(&stderr(&first));
    let second = ask(&["--session", &session, "--no-stream"], "And sessions?");
    assert_eq!(code(&second), 0, "{}", stderr(&second));

    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let replay = &bodies[1];
    assert!(replay.get("previous_response_id").is_none());
    assert_eq!(replay["input"][0]["role"], "system");
    let users = texts_with_role(replay, "user");
    assert_eq!(users.len(), 2, "{replay:#}");
    assert!(users[0].contains("What is Aptix?"));
    assert!(users[1].contains("And sessions?"));
    assert_eq!(texts_with_role(replay, "assistant"), [STREAMED_TEXT]);
    // Without server state no replayed item carries the id the server gave it: such an
    // id names nothing kept, and a call's id pairs it with a reasoning item that a
    // reasoning model asked for no encrypted content does not give to replay (`Item
    // 'fc_...' was provided without its required 'reasoning' item`).
    for item in replay["input"].as_array().unwrap() {
        assert!(item.get("id").is_none(), "{item}");
    }
}

/// A Chat Completions SSE body saying `text` in two pieces.
fn chat_stream(text: &str) -> Vec<u8> {
    let (head, tail) = text.split_at(text.len() / 2);
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
               "model": "llama", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let chunks = [
        chunk(json!({"role": "assistant", "content": head}), Value::Null),
        chunk(json!({"content": tail}), Value::Null),
        chunk(json!({}), json!("stop")),
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [],
               "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}}),
    ];
    let mut body = String::new();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

#[tokio::test]
async fn the_chat_bridge_streams_and_replays_the_session() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({"stream": true})))
        .respond_with(sse(chat_stream("Hello from llama")))
        .mount(&server)
        .await;
    let base_url = format!("{}/v1", server.uri());
    let sandbox = Sandbox::new();
    let ask = |extra: &[&str], instruction: &str| {
        sandbox
            .aptix()
            .args([
                "ask",
                "--api",
                "chat",
                "--model",
                "llama",
                "--base-url",
                &base_url,
            ])
            .args(["--workspace", &sandbox.workspace_arg()])
            .args(extra)
            .arg(instruction)
            .output()
            .unwrap()
    };
    let first = ask(&[], "Who are you?");
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    assert_eq!(stdout(&first), "Hello from llama\n");
    let session = new_session_id(&stderr(&first));
    let second = ask(&["--session", &session], "And then?");
    assert_eq!(code(&second), 0, "{}", stderr(&second));

    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "llama");
    let messages = bodies[1]["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|message| message["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "user"],
        "{messages:#?}"
    );
    assert_eq!(messages[2]["content"], "Hello from llama");
    assert!(bodies[1].get("previous_response_id").is_none());
}

#[tokio::test]
async fn a_provider_error_is_an_error_envelope_and_exit_code_1() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(header("authorization", "Bearer sk-wrong"))
        .respond_with(ResponseTemplate::new(401).set_body_raw(
            read_fixture("error_401_invalid_api_key.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    let base_url = format!("{}/v1", server.uri());
    let sandbox = Sandbox::new();
    let ask = |extra: &[&str]| {
        sandbox
            .aptix()
            .env("OPENAI_API_KEY", "sk-wrong")
            .args(["ask", "--base-url", &base_url])
            .args(["--workspace", &sandbox.workspace_arg()])
            .args(extra)
            .arg("hi")
            .output()
            .unwrap()
    };
    let plain = ask(&[]);
    assert_eq!(code(&plain), 1);
    assert!(plain.stdout.is_empty());
    assert!(
        stderr(&plain).contains("(invalid_api_key)"),
        "{}",
        stderr(&plain)
    );
    assert!(stderr(&plain).contains("check OPENAI_API_KEY"));
    // The new session's id was printed before the turn; nothing of it was kept.
    let session = new_session_id(&stderr(&plain));
    assert!(
        stderr(&plain).contains(&format!(
            "nothing was saved, so session {session} was not started"
        )),
        "{}",
        stderr(&plain)
    );

    let json = ask(&["--json", "--no-stream"]);
    assert_eq!(code(&json), 1);
    let envelope = stdout_json(&json);
    assert_eq!(envelope["kind"], "error");
    assert_eq!(envelope["errorCode"], "invalid_api_key");
}

#[tokio::test]
async fn the_first_ask_indexes_the_workspace_and_sends_its_context() {
    let server = responses_server().await;
    let base_url = format!("{}/v1", server.uri());
    let sandbox = crate::index::code_workspace();
    let output = sandbox
        .aptix()
        .args(["ask", "--json", "--base-url", &base_url])
        .args(["--workspace", &sandbox.workspace_arg()])
        .arg("Where is commit_turn defined?")
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("for the first time"),
        "{}",
        stderr(&output)
    );
    let index_meta = sandbox.workspace.path().join(".aptix/index/meta.json");
    assert!(index_meta.is_file());

    let bodies = bodies(&server).await;
    let user = crate::index::user_text(&bodies[0]);
    assert!(user.contains("[CONTEXT]"), "{user}");
    assert!(user.contains("pub fn commit_turn"), "{user}");
    let envelope = stdout_json(&output);
    let sources: Vec<&str> = envelope["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|source| source["path"].as_str().unwrap())
        .collect();
    assert!(sources.contains(&"src/session.rs"), "{sources:?}");
}

#[tokio::test]
async fn a_base_url_without_its_v1_gets_a_hint_and_a_pasted_endpoint_is_refused() {
    // Only /v1/responses exists: a base URL without /v1 posts to /responses, a 404.
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    let ask = |base_url: &str| {
        sandbox
            .aptix()
            .env("OPENAI_API_KEY", "sk-test")
            .args(["ask", "--no-tools", "--base-url", base_url])
            .args(["--workspace", &sandbox.workspace_arg(), "hi"])
            .output()
            .unwrap()
    };
    let missing_v1 = ask(&server.uri());
    assert_eq!(code(&missing_v1), 1, "{}", stderr(&missing_v1));
    assert!(
        stderr(&missing_v1).contains("check the base URL (base_url")
            && stderr(&missing_v1).contains("/v1"),
        "{}",
        stderr(&missing_v1)
    );
    // A server that is not there: what to check is said too.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let gone = ask(&format!("http://127.0.0.1:{port}/v1"));
    assert_eq!(code(&gone), 1, "{}", stderr(&gone));
    assert!(
        stderr(&gone).contains("check that the server runs and that base_url"),
        "{}",
        stderr(&gone)
    );
    let pasted = ask(&format!("{}/v1/responses", server.uri()));
    assert_eq!(code(&pasted), 2, "{}", stderr(&pasted));
    assert!(
        stderr(&pasted).contains(&format!("e.g. {}/v1", server.uri())),
        "{}",
        stderr(&pasted)
    );
    assert!(
        server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .all(|r| r.url.path() != "/v1/responses/responses")
    );
}

#[tokio::test]
async fn a_server_that_ignores_stream_true_still_gets_its_answer_printed() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(read_fixture("response_plain_text.json"), "application/json"),
        )
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .env("OPENAI_API_KEY", "sk-test")
        .args([
            "ask",
            "--no-tools",
            "--base-url",
            &format!("{}/v1", server.uri()),
        ])
        .args(["--workspace", &sandbox.workspace_arg(), "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let expected: serde_json::Value =
        serde_json::from_slice(&read_fixture("response_plain_text.json")).unwrap();
    let text = expected["output"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n\n");
    assert_eq!(stdout(&output).trim_end(), text.trim_end());
    // Nothing streamed, so nothing differs from the final response.
    assert!(
        !stderr(&output).contains("differs from the final response"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test]
async fn a_chat_server_that_ignores_stream_true_still_gets_its_answer_printed() {
    let server = MockServer::start().await;
    let completion = serde_json::json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "local",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Whole, not streamed."}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 4, "total_tokens": 9}
    });
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(completion.to_string().into_bytes(), "application/json"),
        )
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    let output = sandbox
        .aptix()
        .args(["ask", "--no-tools", "--api", "chat", "--base-url"])
        .arg(format!("{}/v1", server.uri()))
        .args(["--workspace", &sandbox.workspace_arg(), "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout(&output), "Whole, not streamed.\n");
}

#[tokio::test]
async fn sessions_lists_shows_and_deletes_what_ask_stored() {
    let server = responses_server().await;
    let base_url = format!("{}/v1", server.uri());
    let sandbox = Sandbox::new();
    let ask = |extra: &[&str], instruction: &str| {
        sandbox
            .aptix()
            .env("OPENAI_API_KEY", SECRET_KEY)
            .args(["ask", "--base-url", &base_url])
            .args(["--workspace", &sandbox.workspace_arg()])
            .args(extra)
            .arg(instruction)
            .output()
            .unwrap()
    };
    let sessions = |args: &[&str]| {
        sandbox
            .aptix()
            .arg("sessions")
            .args(["--workspace", &sandbox.workspace_arg()])
            .args(args)
            .output()
            .unwrap()
    };
    // Before any session: nothing listed, and looking creates no store.
    let none = sessions(&[]);
    assert_eq!(code(&none), 0, "{}", stderr(&none));
    let nothing = ask(&["-c"], "Go on");
    assert_eq!(code(&nothing), 2, "{}", stderr(&nothing));
    assert!(
        stderr(&nothing).contains("--continue: no session to continue in "),
        "{}",
        stderr(&nothing)
    );
    assert!(
        stderr(&none).contains("no sessions in "),
        "{}",
        stderr(&none)
    );
    let store = sandbox.workspace.path().join(".aptix").join("sessions.db");
    assert!(!store.exists());
    assert!(
        stderr(&none).contains("(no session store there yet)"),
        "{}",
        stderr(&none)
    );
    assert_eq!(stdout_json(&sessions(&["--json"])), json!([]));
    // A folder named as the store is refused, not listed as empty.
    sandbox.write_workspace_file("src/lib.rs", "");
    let folder = sessions(&["--store", "src"]);
    assert_eq!(code(&folder), 2, "{}", stderr(&folder));
    assert!(
        stderr(&folder).contains("is a folder"),
        "{}",
        stderr(&folder)
    );

    let first = ask(&[], "What is Aptix?");
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let older = new_session_id(&stderr(&first));
    let again = ask(
        &["--session", &older],
        "And what does it store?\nIn detail.",
    );
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    let other = ask(&[], "Where is the index kept?");
    let newer = new_session_id(&stderr(&other));
    // `--continue` takes the most recently used one.
    let resumed = ask(&["--continue"], "And how is it refreshed?");
    assert_eq!(code(&resumed), 0, "{}", stderr(&resumed));
    assert!(
        stderr(&resumed).contains(&format!("session {newer} (continued)")),
        "{}",
        stderr(&resumed)
    );

    // Newest first, with the last thing each asked.
    let listed = sessions(&[]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let lines: Vec<String> = stdout(&listed).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with(&newer), "{lines:?}");
    assert!(lines[0].contains("2 turns") && lines[0].ends_with("And how is it refreshed?"));
    assert!(lines[1].starts_with(&older) && lines[1].contains("2 turns"));
    assert!(lines[1].ends_with("And what does it store?…"), "{lines:?}");
    let json = stdout_json(&sessions(&["--json", "--limit", "1"]));
    assert_eq!(json.as_array().map(Vec::len), Some(1));
    assert_eq!(json[0]["sessionId"], newer.as_str());
    assert_eq!(json[0]["lastInstruction"], "And how is it refreshed?");

    // A session that does not read is listed as such, and the others still are.
    let scratch = ask(&[], "A session to damage");
    let damaged = new_session_id(&stderr(&scratch));
    rusqlite::Connection::open(&store)
        .unwrap()
        .execute(
            "UPDATE sessions SET state = '{not json' WHERE session_id = ?1",
            [&damaged],
        )
        .unwrap();
    let listed = sessions(&[]);
    assert_eq!(code(&listed), 0, "{}", stderr(&listed));
    let text = stdout(&listed);
    assert!(
        text.lines()
            .next()
            .is_some_and(|line| line.starts_with(&damaged) && line.contains("(unreadable: ")),
        "{text}"
    );
    assert_eq!(text.lines().count(), 3, "{text}");
    let deleted = sessions(&["delete", &damaged]);
    assert_eq!(code(&deleted), 0, "{}", stderr(&deleted));

    // One session: the service's view of it, or lines.
    let shown = stdout_json(&sessions(&["show", &older, "--json"]));
    assert_eq!(shown["sessionId"], older.as_str());
    assert_eq!(shown["turns"], 2);
    assert_eq!(shown["recentTurns"].as_array().map(Vec::len), Some(2));
    let text = stdout(&sessions(&["show", &older]));
    assert!(
        text.starts_with(&format!("session {older}  (mode")),
        "{text}"
    );
    assert!(text.contains("turns: 2;") && text.contains("recent turns, newest first:"));
    // The last instruction, whole, where the listing cut it.
    assert!(
        text.contains("last asked: And what does it store?\nIn detail."),
        "{text}"
    );
    let (prompt, completion) = (
        shown["usage"]["promptTokens"].as_u64().unwrap(),
        shown["usage"]["completionTokens"].as_u64().unwrap(),
    );
    assert!(prompt > 0 && completion > 0, "{shown}");
    assert!(
        text.contains(&format!("tokens: {prompt} in"))
            && text.contains(&format!("{completion} out")),
        "{text}"
    );
    let newest = &shown["recentTurns"][0];
    assert!(
        text.contains(&format!(
            "{} in / {} out tokens",
            newest["usage"]["promptTokens"], newest["usage"]["completionTokens"]
        )),
        "{text}"
    );

    // Deleted, it is gone; an unknown id is an error naming the store.
    let deleted = sessions(&["delete", &older]);
    assert_eq!(code(&deleted), 0, "{}", stderr(&deleted));
    for args in [["show", older.as_str()], ["delete", older.as_str()]] {
        let gone = sessions(&args);
        assert_eq!(code(&gone), 1);
        assert!(
            stderr(&gone).contains(&format!("no session {older} in ")),
            "{}",
            stderr(&gone)
        );
    }
    assert_eq!(stdout(&sessions(&[])).lines().count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_on_a_shared_store_takes_this_workspaces_last_session_not_anyones() {
    let server = responses_server().await;
    let base_url = format!("{}/v1", server.uri());
    let database = TestDatabase::create();
    let ask = |sandbox: &Sandbox, extra: &[&str], instruction: &str| {
        sandbox
            .aptix()
            .env("OPENAI_API_KEY", SECRET_KEY)
            .args(["ask", "--base-url", &base_url, "--store", database.url()])
            .args(["--workspace", &sandbox.workspace_arg()])
            .args(extra)
            .arg(instruction)
            .output()
            .unwrap()
    };
    let (mine, theirs, newcomer) = (Sandbox::new(), Sandbox::new(), Sandbox::new());
    let first = ask(&mine, &[], "What is Aptix?");
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let my_session = new_session_id(&stderr(&first));
    // Another client of the database asks after: its session is the store's newest.
    let other = ask(&theirs, &[], "A question of someone else's");
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    let their_session = new_session_id(&stderr(&other));

    let resumed = ask(&mine, &["-c"], "And then?");
    assert_eq!(code(&resumed), 0, "{}", stderr(&resumed));
    assert!(
        stderr(&resumed).contains(&format!("session {my_session} (continued)")),
        "{}",
        stderr(&resumed)
    );
    assert!(!stderr(&resumed).contains(&their_session));

    // A workspace that never asked has nothing to continue there, and is told how to
    // name a session instead of being handed another client's.
    let nothing = ask(&newcomer, &["-c"], "Go on");
    assert_eq!(code(&nothing), 2, "{}", stderr(&nothing));
    let said = stderr(&nothing);
    assert!(
        said.contains("--continue: aptix ask has not used a session in this workspace")
            && said.contains("--session ID")
            && !said.contains(&their_session),
        "{said}"
    );
}

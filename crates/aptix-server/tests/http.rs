//! The service over real HTTP: a client against the router served on `127.0.0.1:0`,
//! with scripted providers. Every status of the API, streamed and unstreamed envelopes,
//! a client that disconnects mid-turn, concurrent turns, graceful shutdown, and tokens
//! that never come back.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aptix_client::{Capabilities, ClientError, FakeProvider, ProviderResponse, ResponsesProvider};
use aptix_model::wire::{CreateResponseRequest, Response};
use aptix_orchestrator::{InMemorySessionStore, Orchestrator};
use aptix_server::{Metrics, ServerConfig, TimedProvider, Tokens, router, serve};
use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::{Notify, oneshot};

fn text_response(id: &str, text: &str) -> Response {
    serde_json::from_value(json!({
        "id": id, "status": "completed", "model": "m",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}]}],
        "usage": {"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}
    }))
    .unwrap()
}

/// A provider whose calls wait for `open` before answering, counting calls.
struct Gated {
    open: Notify,
    entered: Notify,
    calls: AtomicUsize,
}

#[async_trait]
impl ResponsesProvider for Gated {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        self.entered.notify_one();
        self.open.notified().await;
        Ok(ProviderResponse::new(
            text_response(&format!("resp_{n}"), "gated answer"),
            Default::default(),
        ))
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

fn gated() -> Arc<Gated> {
    Arc::new(Gated {
        open: Notify::new(),
        entered: Notify::new(),
        calls: AtomicUsize::new(0),
    })
}

struct Running {
    base: String,
    shutdown: Option<oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<()>,
    client: reqwest::Client,
}

async fn start(provider: Arc<dyn ResponsesProvider>, config: ServerConfig) -> Running {
    start_on(provider, Arc::new(InMemorySessionStore::new()), config).await
}

/// [`start`] on a store the test keeps, to read what the service stored.
async fn start_on(
    provider: Arc<dyn ResponsesProvider>,
    store: Arc<InMemorySessionStore>,
    config: ServerConfig,
) -> Running {
    let orchestrator = Orchestrator::builder(provider, store).build().unwrap();
    start_with(orchestrator, config).await
}

/// The service over `orchestrator`.
async fn start_with(orchestrator: Orchestrator, config: ServerConfig) -> Running {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (shutdown, signal) = oneshot::channel::<()>();
    let header_read_timeout = config.header_read_timeout;
    let app = router(Arc::new(orchestrator), config);
    let served = tokio::spawn(async move {
        serve(listener, app, header_read_timeout, async {
            let _ = signal.await;
        })
        .await
        .unwrap();
    });
    Running {
        base,
        shutdown: Some(shutdown),
        served,
        client: reqwest::Client::new(),
    }
}

impl Running {
    fn post(&self, body: &Value) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}/v1/agent/execute", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
    }

    /// `GET path`, without a token.
    async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
    }

    /// `GET path` with one header (`authorization`, `host`, ...).
    async fn get_with(&self, path: &str, header: &str, value: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .header(header, value)
            .send()
            .await
            .unwrap()
    }

    /// A streamed turn's response, its body still to read.
    async fn stream(&self, body: &Value) -> reqwest::Response {
        self.post(body)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap()
    }

    /// The whole SSE body of a streamed turn.
    async fn streamed(&self, body: &Value) -> String {
        self.stream(body).await.text().await.unwrap()
    }
}

/// Reads a streamed body into `received` until `enough` holds, each chunk within 10 s.
async fn read_until(
    response: &mut reqwest::Response,
    received: &mut String,
    waiting_for: &str,
    enough: impl Fn(&str) -> bool,
) {
    while !enough(received) {
        let chunk = tokio::time::timeout(Duration::from_secs(10), response.chunk())
            .await
            .unwrap_or_else(|_| panic!("{waiting_for} within 10 s"))
            .unwrap()
            .expect("the stream is still open");
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
}

/// A retried turn was answered from the store: the model was called once in all.
fn assert_one_model_call(calls: &AtomicUsize) {
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the retry made no model call"
    );
}

fn turn(session: &str, turn: &str) -> Value {
    json!({"sessionId": session, "turnId": turn, "instruction": "Say hello"})
}

async fn error_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body)
}

#[tokio::test]
async fn a_json_turn_answers_with_the_envelope_and_a_request_id() {
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(text_response("resp_1", "Hello!"));
    let server = start(provider, ServerConfig::default()).await;
    let response = server
        .post(&turn("s1", "t1"))
        .header("x-request-id", "req-from-client")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-request-id"], "req-from-client");
    let envelope: Value = response.json().await.unwrap();
    assert_eq!(envelope["kind"], "ok");
    assert_eq!(envelope["text"], "Hello!");
    assert_eq!(envelope["turnId"], "t1");

    let session = server.get("/v1/sessions/s1").await;
    assert_eq!(session.status(), 200);
    assert!(session.headers().contains_key("x-request-id"));
    let session: Value = session.json().await.unwrap();
    assert_eq!(session["sessionId"], "s1");
    assert_eq!(session["lastResponseId"], "resp_1");
}

#[tokio::test]
async fn a_streamed_turn_sends_deltas_then_the_envelope_the_json_path_returns() {
    let events = text_delta_events();
    let final_response = events.last().unwrap().terminal_response().unwrap().clone();

    let streamed = Arc::new(FakeProvider::new());
    streamed.push_events(events);
    let server = start(streamed, ServerConfig::default()).await;
    let body = server.stream(&turn("s1", "t1")).await;
    assert_eq!(body.status(), 200);
    assert!(
        body.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let text = body.text().await.unwrap();
    let mut names = Vec::new();
    let mut envelope = None;
    let mut streamed_text = String::new();
    for block in text.split("\n\n").filter(|block| !block.trim().is_empty()) {
        let name = block
            .lines()
            .find_map(|line| line.strip_prefix("event: "))
            .unwrap_or("comment");
        let data: String = block
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .collect();
        names.push(name.to_owned());
        match name {
            "delta" => {
                let delta: Value = serde_json::from_str(&data).unwrap();
                if let Some(piece) = delta["text"].as_str() {
                    streamed_text.push_str(piece);
                }
            }
            "envelope" => envelope = Some(serde_json::from_str::<Value>(&data).unwrap()),
            _ => {}
        }
    }
    assert_eq!(names.iter().filter(|name| *name == "envelope").count(), 1);
    assert_eq!(names.last().map(String::as_str), Some("envelope"));
    assert!(names.iter().any(|name| name == "delta"));
    assert_eq!(streamed_text, "Hello! How can I assist you today?");

    let plain = Arc::new(FakeProvider::new());
    plain.push_response(final_response);
    let server = start(plain, ServerConfig::default()).await;
    let expected: Value = server
        .post(&turn("s1", "t1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut envelope = envelope.unwrap();
    for value in [&mut envelope, &mut expected.clone()] {
        value.as_object_mut().unwrap().remove("rawResponseJson");
    }
    let mut expected = expected;
    expected.as_object_mut().unwrap().remove("rawResponseJson");
    assert_eq!(envelope, expected);
}

#[tokio::test]
async fn every_contract_violation_is_listed_in_a_400() {
    let server = start(Arc::new(FakeProvider::new()), ServerConfig::default()).await;
    let (status, body) = error_of(
        server
            .post(&json!({"sessionId": "", "turnId": "t1", "temperature": 5}))
            .header("x-request-id", "req-bad")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "invalid_request");
    assert_eq!(body["error"]["requestId"], "req-bad");
    let violations = body["error"]["violations"].as_array().unwrap();
    assert!(violations.len() >= 2, "{violations:?}");
    for violation in violations {
        assert!(violation["path"].is_string() && violation["rule"].is_string());
        assert!(violation["message"].is_string());
    }
    let paths: Vec<&str> = violations
        .iter()
        .filter_map(|v| v["path"].as_str())
        .collect();
    assert!(paths.contains(&"sessionId"), "{paths:?}");

    let (status, body) = error_of(server.post(&json!("not an object")).send().await.unwrap()).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["code"], "invalid_request");
}

/// Sends raw bytes on a new connection and reads until the server closes it (or the
/// guard of 10 s passes: then `None`).
async fn raw_exchange(base: &str, sent: &[u8]) -> Option<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let address = base.trim_start_matches("http://");
    let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
    socket.write_all(sent).await.unwrap();
    let mut received = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut received))
        .await
        .ok()?;
    // A reset after the answer is a close too.
    let _ = read;
    Some(String::from_utf8_lossy(&received).into_owned())
}

#[tokio::test]
async fn timeouts_past_what_the_clock_holds_serve_as_no_timeout() {
    // A deadline of u64::MAX seconds overflowed the timer of every connection: each
    // panicked, and the service answered nothing.
    let config = ServerConfig {
        header_read_timeout: Duration::MAX,
        body_read_timeout: Duration::MAX,
        turn_timeout: Duration::MAX,
        ..ServerConfig::default()
    };
    let provider = FakeProvider::new();
    provider.push_response(
        serde_json::from_value(json!({"id": "resp_1", "status": "completed", "model": "m",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Still here."}]}]}))
        .unwrap(),
    );
    let server = start(Arc::new(provider), config).await;
    assert_eq!(server.get("/healthz").await.status(), 200);
    let answered = server
        .post(&json!({"sessionId": "s-max", "turnId": "t-1", "instruction": "Up?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let envelope: Value = answered.json().await.unwrap();
    assert_eq!(envelope["text"], "Still here.", "{envelope}");
}

#[tokio::test]
async fn slow_clients_are_cut_off_headers_by_closing_and_bodies_with_408() {
    let config = ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        body_read_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let server = start(Arc::new(FakeProvider::new()), config).await;

    // Headers that never end: the connection is closed, with nothing sent back.
    let answer = raw_exchange(
        &server.base,
        b"POST /v1/agent/execute HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n",
    )
    .await
    .expect("the server held a connection whose headers never ended");
    assert!(!answer.contains("200"), "{answer}");

    // A connection that sends nothing is closed the same way.
    assert!(raw_exchange(&server.base, b"").await.is_some());

    // A body that stops short of its length: 408 in the one error shape.
    let answer = raw_exchange(
        &server.base,
        b"POST /v1/agent/execute HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\nx-request-id: req-slow\r\n\r\n{\"sessionId\":",
    )
    .await
    .expect("the server held a connection whose body never ended");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body: Value = serde_json::from_str(&answer[answer.find("\r\n\r\n").unwrap() + 4..])
        .unwrap_or_else(|error| panic!("{error}: {answer}"));
    assert_eq!(body["error"]["code"], "body_timeout");
    assert_eq!(body["error"]["requestId"], "req-slow");

    // A timely request on the same server is served.
    let provider_answer = server.get("/healthz").await;
    assert_eq!(provider_answer.status(), 200);
}

#[tokio::test]
async fn a_chunked_body_over_the_limit_is_413_and_a_broken_one_400() {
    let config = ServerConfig {
        body_limit: 1024,
        ..ServerConfig::default()
    };
    let server = start(Arc::new(FakeProvider::new()), config).await;
    // No content-length: the limit is found while reading.
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..8).map(|_| Ok(vec![b' '; 512])).collect();
    let (status, body) = error_of(
        server
            .client
            .post(format!("{}/v1/agent/execute", server.base))
            .header("content-type", "application/json")
            .body(reqwest::Body::wrap_stream(futures_util::stream::iter(
                pieces,
            )))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("body_too_large"))
    );

    // Chunked encoding that breaks off with garbage: not JSON, and not 413.
    let answer = raw_exchange(
        &server.base,
        b"POST /v1/agent/execute HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"a\"\r\nzz\r\n",
    )
    .await
    .expect("the server held a broken chunked body");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("invalid_request"), "{answer}");
}

#[tokio::test]
async fn media_type_size_and_unknown_sessions_have_their_statuses() {
    let config = ServerConfig {
        body_limit: 1024,
        ..ServerConfig::default()
    };
    let server = start(Arc::new(FakeProvider::new()), config).await;
    let (status, body) = error_of(
        server
            .client
            .post(format!("{}/v1/agent/execute", server.base))
            .header("content-type", "text/plain")
            .body(turn("s1", "t1").to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (415, Some("unsupported_media_type"))
    );
    // A compressed body is refused for its coding, not read as malformed JSON; a body
    // sent as it is (`identity`) is read.
    let compressed = server
        .post(&turn("s1", "t1"))
        .header("content-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(compressed.headers()["accept-encoding"], "identity");
    let (status, body) = error_of(compressed).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (415, Some("unsupported_media_type")),
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("\"gzip\""),
        "{body}"
    );
    let plain = server
        .post(&turn("s1", "t1"))
        .header("content-encoding", "identity")
        .send()
        .await
        .unwrap();
    assert_ne!(plain.status(), 415);
    // Two content types are as ambiguous as two tokens: refused, naming the header.
    let address = server.base.trim_start_matches("http://");
    let body = turn("s9", "t1").to_string();
    let sent = format!(
        "POST /v1/agent/execute HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let answer = raw_exchange(&server.base, sent.as_bytes()).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(
        answer.contains(r#""path":"content-type","rule":"duplicate_field""#),
        "{answer}"
    );
    // A query string `execute` does not take is named, not ignored.
    let (status, body) = error_of(
        server
            .client
            .post(format!("{}/v1/agent/execute?stream=true", server.base))
            .header("content-type", "application/json")
            .body(turn("s9", "t1").to_string())
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["violations"][0]["path"], "stream", "{body}");
    assert_eq!(
        body["error"]["violations"][0]["rule"], "unknown_field",
        "{body}"
    );

    let mut big = turn("s1", "t1");
    big["instruction"] = json!("x".repeat(4096));
    let (status, body) = error_of(server.post(&big).send().await.unwrap()).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (413, Some("body_too_large"))
    );

    let continuation = json!({
        "sessionId": "nobody", "turnId": "t1",
        "toolResults": [{"toolCallId": "call_1", "executionMs": 4, "resultJson": "{}"}]
    });
    let (status, body) = error_of(server.post(&continuation).send().await.unwrap()).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("unknown_session"))
    );
    // Streamed, the turn is refused before its head goes out: the same status.
    let streamed = server.stream(&continuation).await;
    assert_eq!(streamed.headers()["content-type"], "application/json");
    let (status, body) = error_of(streamed).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("unknown_session"))
    );

    let (status, body) = error_of(server.get("/v1/sessions/nobody").await).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("unknown_session"))
    );
    assert_eq!(body["error"]["message"], "there is no session \"nobody\"");
    // A long id is not sent back whole.
    let long = "x".repeat(5000);
    let (status, body) = error_of(server.get(&format!("/v1/sessions/{long}")).await).await;
    assert_eq!(status, 404, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.len() < 300, "{message}");
    assert!(message.ends_with("… (5000 characters)"), "{message}");
}

#[tokio::test]
async fn tokens_guard_the_api_and_never_come_back() {
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(text_response("resp_1", "Hello!"));
    let config = ServerConfig {
        tokens: Tokens::from_lines("secret-token-123\n").unwrap(),
        ..ServerConfig::default()
    };
    let server = start(provider, config).await;
    for header in [None, Some("Bearer wrong-token"), Some("secret-token-123")] {
        let mut request = server.post(&turn("s1", "t1"));
        if let Some(value) = header {
            request = request.header("authorization", value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        let (status, body) = error_of(response).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (401, Some("unauthorized"))
        );
        assert!(!body.to_string().contains("secret-token"), "{body}");
    }
    let ok = server
        .post(&turn("s1", "t1"))
        .header("authorization", "Bearer secret-token-123")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    // The scheme's name is case-insensitive, and spaces around the token do not count;
    // the token itself is compared exactly.
    for (header, status) in [
        ("bearer secret-token-123", 200),
        ("BEARER   secret-token-123 ", 200),
        ("Bearer SECRET-TOKEN-123", 401),
        ("Basic secret-token-123", 401),
        ("Bearer", 401),
        ("Bearer ", 401),
    ] {
        let response = server
            .get_with("/v1/sessions/s1", "authorization", header)
            .await;
        assert_eq!(response.status(), status, "{header:?}");
    }
    let session = server.get("/v1/sessions/s1").await;
    assert_eq!(session.status(), 401);
    // Two Authorization headers are refused, whichever comes first: a proxy in front
    // may read the other one.
    let address = server.base.trim_start_matches("http://");
    for (first, second) in [("secret-token-123", "wrong"), ("wrong", "secret-token-123")] {
        let sent = format!(
            "GET /v1/sessions HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {first}\r\nauthorization: Bearer {second}\r\nconnection: close\r\n\r\n"
        );
        let answer = raw_exchange(&server.base, sent.as_bytes()).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(
            answer.contains("the authorization header is sent more than once"),
            "{answer}"
        );
        // Named as a violation, as a body's are.
        assert!(
            answer.contains(r#""violations":[{"path":"authorization","rule":"duplicate_field""#),
            "{answer}"
        );
    }
    // Under /v1/ a path no route has asks for the token first: without it, no one
    // learns which routes exist.
    assert_eq!(server.get("/v1/nothing-here").await.status(), 401);
    let missing = server
        .get_with(
            "/v1/nothing-here",
            "authorization",
            "Bearer secret-token-123",
        )
        .await;
    assert_eq!(missing.status(), 404);
    // So does a route's path with a method it does not take.
    let wrong_method = server
        .client
        .put(format!("{}/v1/sessions", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_method.status(), 401);
    for open in ["/healthz", "/readyz"] {
        let response = server
            .client
            .get(format!("{}{open}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{open}");
    }
}

#[tokio::test]
async fn without_tokens_only_loopback_hosts_are_answered() {
    // A web page can make the browser send requests to 127.0.0.1 and, through DNS
    // rebinding, read the answers: such requests name the page's host, not a loopback
    // one. With tokens the bearer check guards instead, whatever the host.
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(text_response("resp_1", "Hello!"));
    provider.push_response(text_response("resp_2", "Hello!"));
    let open = start(provider, ServerConfig::default()).await;
    let port = open.base.rsplit(':').next().unwrap().to_owned();
    for host in [
        "evil.example",
        "evil.example:8787",
        "192.168.1.20",
        "localhost.evil.example",
    ] {
        for path in ["/v1/sessions", "/metrics"] {
            let (status, body) = error_of(open.get_with(path, "host", host).await).await;
            assert_eq!(
                (status, body["error"]["code"].as_str()),
                (403, Some("host_not_allowed")),
                "{host} {path}"
            );
        }
        let refused = open
            .post(&turn("s-host", "t1"))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 403, "{host}");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost.:{port}"),
        format!("[::1]:{port}"),
        format!("app.localhost:{port}"),
        "127.0.0.2".to_owned(),
    ] {
        let response = open.get_with("/v1/sessions", "host", &host).await;
        assert_eq!(response.status(), 200, "{host}");
    }
    assert_eq!(
        open.post(&turn("s-host", "t1"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    // What follows a loopback name must be a port.
    for host in ["localhost:80@evil.example", "[::1]x", "127.0.0.1:80:evil"] {
        let (status, _) = error_of(open.get_with("/v1/sessions", "host", host).await).await;
        assert_eq!(status, 403, "{host}");
    }
    // A target in absolute form names its host, which wins over `Host` (RFC 9112
    // §3.2.2): both must be loopback.
    for (target, expected) in [
        ("http://evil.example/v1/sessions", "HTTP/1.1 403"),
        (
            &*format!("http://127.0.0.1:{port}/v1/sessions"),
            "HTTP/1.1 200",
        ),
    ] {
        let sent =
            format!("GET {target} HTTP/1.1\r\nhost: localhost:{port}\r\nconnection: close\r\n\r\n");
        let answer = raw_exchange(&open.base, sent.as_bytes()).await.unwrap();
        assert!(answer.starts_with(expected), "{target}: {answer}");
    }
    // Two Host headers are refused (RFC 9112 §3.2), whichever comes first.
    for (first, second) in [("localhost", "evil.example"), ("evil.example", "localhost")] {
        let sent = format!(
            "GET /v1/sessions HTTP/1.1\r\nhost: {first}\r\nhost: {second}\r\nconnection: close\r\n\r\n"
        );
        let answer = raw_exchange(&open.base, sent.as_bytes()).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    }
    // The health routes stay open to any host, as to any caller.
    let health = open.get_with("/healthz", "host", "evil.example").await;
    assert_eq!(health.status(), 200);

    // An embedder whose own front authenticates callers turns the check off.
    let config = ServerConfig {
        loopback_hosts_only: false,
        ..ServerConfig::default()
    };
    let fronted = start(Arc::new(FakeProvider::new()), config).await;
    let response = fronted
        .get_with("/v1/sessions", "host", "evil.example")
        .await;
    assert_eq!(response.status(), 200);

    let provider = Arc::new(FakeProvider::new());
    provider.push_response(text_response("resp_3", "Hello!"));
    let config = ServerConfig {
        tokens: Tokens::from_lines("host-token-1\n").unwrap(),
        ..ServerConfig::default()
    };
    let guarded = start(provider, config).await;
    let response = guarded
        .post(&turn("s-host", "t1"))
        .header("host", "aptix.internal.example:443")
        .header("authorization", "Bearer host-token-1")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn methods_of_the_client_s_own_make_no_metric_series_of_their_own() {
    // HTTP lets a client send any token as a method: counted by name, each one would
    // be a series of its own, and a client could grow the metrics without bound.
    let server = start(Arc::new(FakeProvider::new()), ServerConfig::default()).await;
    for n in 0..20 {
        let method = reqwest::Method::from_bytes(format!("BREW{n}").as_bytes()).unwrap();
        let response = server
            .client
            .request(method, format!("{}/v1/sessions", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405);
    }
    let text = server.get("/metrics").await.text().await.unwrap();
    let labels = [
        ("route", "/v1/sessions"),
        ("method", "other"),
        ("status", "405"),
    ];
    assert_eq!(
        sample(&text, "aptix_http_requests_total", &labels),
        Some(20.0),
        "{text}"
    );
    assert!(!text.contains("BREW"), "{text}");
}

#[tokio::test]
async fn a_second_turn_on_a_busy_session_is_409_and_over_capacity_is_503() {
    let provider = gated();
    let config = ServerConfig {
        max_concurrent_turns: 2,
        ..ServerConfig::default()
    };
    let server = start(provider.clone(), config).await;
    let first = tokio::spawn(server.post(&turn("s1", "t1")).send());
    provider.entered.notified().await;
    let busy = server.post(&turn("s1", "t2")).send().await.unwrap();
    assert_eq!(busy.headers()["retry-after"], "1");
    let (status, body) = error_of(busy).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("session_busy"))
    );
    // It says when the session frees, not who holds it (the log has that).
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("its lease expires in"), "{message}");
    assert!(!message.contains("process"), "{message}");
    // A streamed request is refused with the same status, not a 200 and an error event.
    let (status, body) = error_of(server.stream(&turn("s1", "t3")).await).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("session_busy"))
    );
    // The session is stored with its first turn: until then it is not there to show,
    // and the answer says why, nor there to delete while the turn runs.
    let (status, body) = error_of(server.get("/v1/sessions/s1").await).await;
    assert_eq!(status, 404, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("its first turn is running"), "{message}");
    let deleted = server
        .client
        .delete(format!("{}/v1/sessions/s1", server.base))
        .send()
        .await
        .unwrap();
    let (status, body) = error_of(deleted).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("session_busy"))
    );

    let second = tokio::spawn(server.post(&turn("s2", "t1")).send());
    provider.entered.notified().await;
    let response = server.post(&turn("s3", "t1")).send().await.unwrap();
    assert_eq!(response.headers()["retry-after"], "1");
    let (status, body) = error_of(response).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("over_capacity"))
    );
    // At capacity, a turn on a session that is running one (a client's retry after it
    // lost its connection) is told the session is busy, as with room to spare.
    let response = server.post(&turn("s2", "t1")).send().await.unwrap();
    let (status, body) = error_of(response).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("session_busy"))
    );

    provider.open.notify_waiters();
    // Each waiting call takes one wake-up; wake until both have answered.
    for _ in 0..50 {
        if first.is_finished() && second.is_finished() {
            break;
        }
        provider.open.notify_one();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(first.await.unwrap().unwrap().status(), 200);
    assert_eq!(second.await.unwrap().unwrap().status(), 200);
    assert_eq!(provider.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_turn_id_reused_for_another_request_is_422_and_calls_no_model() {
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(text_response("resp_1", "Hello."));
    let server = start(provider.clone(), ServerConfig::default()).await;
    let first: Value = server
        .post(&turn("s1", "t1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(first["text"], "Hello.");

    for stream in [false, true] {
        let mut reused = turn("s1", "t1");
        reused["instruction"] = json!("Now something else");
        let response = if stream {
            server.stream(&reused).await
        } else {
            server.post(&reused).send().await.unwrap()
        };
        let (status, body) = error_of(response).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (422, Some("turn_id_reused")),
            "{body}"
        );
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|message| message.contains("t1") && message.contains("new turnId")),
            "{body}"
        );
    }
    // The request that ran it, streamed or not, still gets its envelope.
    let mut retry = turn("s1", "t1");
    retry["stream"] = json!(true);
    let again: Value = server
        .post(&retry)
        .header("accept", "application/json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again, first);
    assert_eq!(provider.calls().len(), 1);
}

#[tokio::test]
async fn at_capacity_a_stored_turn_is_still_answered_and_a_new_one_is_503() {
    let provider = gated();
    let config = ServerConfig {
        max_concurrent_turns: 1,
        ..ServerConfig::default()
    };
    let server = start(provider.clone(), config).await;
    let stored = tokio::spawn(server.post(&turn("s-done", "t1")).send());
    provider.entered.notified().await;
    provider.open.notify_one();
    let stored: Value = stored.await.unwrap().unwrap().json().await.unwrap();
    assert_eq!(stored["text"], "gated answer");

    // The one place is taken by a turn waiting on its model.
    let running = tokio::spawn(server.post(&turn("s-running", "t1")).send());
    provider.entered.notified().await;
    // A client that lost its connection sends its stored turn again: no model call, so
    // no place needed. JSON and streamed alike.
    let again = server.post(&turn("s-done", "t1")).send().await.unwrap();
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again, stored);
    let streamed = server.stream(&turn("s-done", "t1")).await;
    assert_eq!(streamed.status(), 200);
    assert!(streamed.text().await.unwrap().contains("event: envelope"));
    // Its id reused for another request is refused at once too, not sent to wait.
    let mut reused = turn("s-done", "t1");
    reused["instruction"] = json!("Something else");
    let (status, body) = error_of(server.post(&reused).send().await.unwrap()).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (422, Some("turn_id_reused"))
    );
    // A new turn waits for a place.
    let (status, body) = error_of(server.post(&turn("s-new", "t1")).send().await.unwrap()).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("over_capacity"))
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|message| message.starts_with("1 turn is already running")),
        "{body}"
    );
    provider.open.notify_one();
    assert_eq!(running.await.unwrap().unwrap().status(), 200);
    assert_eq!(provider.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_client_that_disconnects_mid_turn_can_retry_and_gets_the_stored_envelope() {
    let provider = gated();
    let server = start(provider.clone(), ServerConfig::default()).await;
    let abandoned = tokio::spawn(server.post(&turn("s1", "t1")).send());
    provider.entered.notified().await;
    abandoned.abort();
    let _ = abandoned.await;
    // The turn goes on without its client, and is stored.
    provider.open.notify_one();
    let mut envelope = Value::Null;
    for _ in 0..100 {
        let response = server.post(&turn("s1", "t1")).send().await.unwrap();
        if response.status() == 200 {
            envelope = response.json().await.unwrap();
            break;
        }
        assert_eq!(
            response.status(),
            409,
            "only busy while the first run finishes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(envelope["text"], "gated answer");
    assert_one_model_call(&provider.calls);
}

#[tokio::test]
async fn shutdown_lets_the_turn_in_flight_finish() {
    let provider = gated();
    let mut server = start(provider.clone(), ServerConfig::default()).await;
    let in_flight = tokio::spawn(server.post(&turn("s1", "t1")).send());
    provider.entered.notified().await;
    server.shutdown.take().unwrap().send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !server.served.is_finished(),
        "stopped before the turn finished"
    );
    provider.open.notify_one();
    let response = in_flight.await.unwrap().unwrap();
    assert_eq!(response.status(), 200);
    tokio::time::timeout(Duration::from_secs(5), server.served)
        .await
        .expect("the server stops once the turn is done")
        .unwrap();
}

/// The value of the sample `name{labels}` in OpenMetrics text, labels in any order.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
        if metric != name {
            return None;
        }
        let rest = rest.strip_suffix('}')?;
        let found: Vec<&str> = rest.split(',').filter(|pair| !pair.is_empty()).collect();
        let wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        (found.len() == wanted.len() && wanted.iter().all(|w| found.contains(&w.as_str())))
            .then(|| value.parse().ok())
            .flatten()
    })
}

#[tokio::test]
async fn metrics_count_requests_turns_tokens_errors_and_provider_time_behind_the_token() {
    let fake = Arc::new(FakeProvider::new().with_meta(aptix_client::ReplyMeta {
        rate_limits: Some(aptix_client::RateLimits {
            remaining_requests: Some(59),
            remaining_tokens: Some(149_000),
            ..aptix_client::RateLimits::default()
        }),
        ..aptix_client::ReplyMeta::synthetic()
    }));
    let mut answered = text_response("resp_1", "Hello!");
    answered.usage = serde_json::from_value(json!({
        "input_tokens": 10, "output_tokens": 3, "total_tokens": 13,
        "input_tokens_details": {"cached_tokens": 4},
        "output_tokens_details": {"reasoning_tokens": 2}
    }))
    .unwrap();
    fake.push_response(answered);
    fake.push_response(
        serde_json::from_value(json!({
            "id": "resp_2", "status": "failed", "model": "m", "output": [],
            "error": {"code": "server_error", "message": "the model fell over"}
        }))
        .unwrap(),
    );
    let metrics = Metrics::new();
    let provider = Arc::new(TimedProvider::new(fake, metrics.clone()));
    let config = ServerConfig {
        tokens: Tokens::from_lines("metrics-secret-77\n").unwrap(),
        metrics,
        ..ServerConfig::default()
    };
    let server = start(provider, config).await;
    let auth = "Bearer metrics-secret-77";

    let unauthorized = server.get("/metrics").await;
    assert_eq!(unauthorized.status(), 401);

    let ok = server
        .post(&turn("s-secret-session", "t1"))
        .header("authorization", auth)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let failed: Value = server
        .post(&turn("s2", "t1"))
        .header("authorization", auth)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(failed["kind"], "error");
    let error_code = failed["errorCode"].as_str().unwrap().to_owned();
    // A retry answered from the store, and a reused turn id refused, call no model: they
    // are neither turns to time nor tokens to count again.
    let retried = server
        .post(&turn("s-secret-session", "t1"))
        .header("authorization", auth)
        .send()
        .await
        .unwrap();
    assert_eq!(retried.status(), 200);
    let reused = server
        .post(&json!({"sessionId": "s-secret-session", "turnId": "t1", "instruction": "Other"}))
        .header("authorization", auth)
        .send()
        .await
        .unwrap();
    assert_eq!(reused.status(), 422);
    let wrong_type = server
        .client
        .post(format!("{}/v1/agent/execute", server.base))
        .header("authorization", auth)
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_type.status(), 415);
    let session = server
        .client
        .get(format!("{}/v1/sessions/s-secret-session", server.base))
        .header("authorization", auth)
        .send()
        .await
        .unwrap();
    assert_eq!(session.status(), 200);

    let response = server
        .client
        .get(format!("{}/metrics", server.base))
        .header("authorization", auth)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text")
    );
    let text = response.text().await.unwrap();
    assert!(text.ends_with("# EOF\n"), "{text}");
    let execute = |status: &'static str| {
        [
            ("route", "/v1/agent/execute"),
            ("method", "POST"),
            ("status", status),
        ]
    };
    assert_eq!(
        sample(&text, "aptix_http_requests_total", &execute("200")),
        Some(3.0)
    );
    assert_eq!(
        sample(&text, "aptix_http_requests_total", &execute("422")),
        Some(1.0)
    );
    assert_eq!(
        sample(&text, "aptix_http_requests_total", &execute("415")),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "aptix_http_requests_total",
            &[("route", "/metrics"), ("method", "GET"), ("status", "401")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "aptix_http_requests_total",
            &[
                ("route", "/v1/sessions/{id}"),
                ("method", "GET"),
                ("status", "200")
            ]
        ),
        Some(1.0)
    );
    for (kind, left) in [("requests", 59.0), ("tokens", 149_000.0)] {
        assert_eq!(
            sample(
                &text,
                "aptix_provider_rate_limit_remaining",
                &[("kind", kind)]
            ),
            Some(left),
            "{kind}"
        );
    }
    for (kind, count) in [
        ("input", 10.0),
        ("output", 3.0),
        ("cached", 4.0),
        ("reasoning", 2.0),
    ] {
        assert_eq!(
            sample(&text, "aptix_tokens_total", &[("kind", kind)]),
            Some(count),
            "{kind}"
        );
    }
    assert_eq!(
        sample(
            &text,
            "aptix_errors_total",
            &[("source", "response"), ("code", "unsupported_media_type")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "aptix_errors_total",
            &[("source", "response"), ("code", "unauthorized")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "aptix_errors_total",
            &[("source", "envelope"), ("code", error_code.as_str())]
        ),
        Some(1.0)
    );
    // Series a dashboard rates over exist from the start, at zero.
    for kind in ["request", "stream"] {
        assert_eq!(
            sample(&text, "aptix_provider_retries_total", &[("kind", kind)]),
            Some(0.0),
            "{kind}"
        );
    }
    assert_eq!(sample(&text, "aptix_turns_in_flight", &[]), Some(0.0));
    assert_eq!(
        sample(&text, "aptix_turn_duration_seconds_count", &[]),
        Some(2.0)
    );
    assert_eq!(
        sample(&text, "aptix_turn_overhead_seconds_count", &[]),
        Some(2.0)
    );
    assert_eq!(
        sample(
            &text,
            "aptix_provider_call_duration_seconds_count",
            &[("call", "create"), ("outcome", "ok")]
        ),
        Some(2.0)
    );
    // Nothing secret: neither the token nor a session id.
    assert!(!text.contains("metrics-secret"), "{text}");
    assert!(!text.contains("s-secret-session"), "{text}");
}

/// The events of the recorded `sse_text_deltas.sse`.
fn text_delta_events() -> Vec<aptix_model::wire::StreamEvent> {
    aptix_testkit::read_fixture_text("sse_text_deltas.sse")
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| aptix_model::wire::StreamEvent::from_json(data).unwrap())
        .collect()
}

/// A server over `fake` timed by a `TimedProvider` into its metrics.
async fn timed(fake: Arc<FakeProvider>) -> (Running, Metrics) {
    let metrics = Metrics::new();
    let provider = Arc::new(TimedProvider::new(fake, metrics.clone()));
    let server = start(
        provider,
        ServerConfig {
            metrics: metrics.clone(),
            ..ServerConfig::default()
        },
    )
    .await;
    (server, metrics)
}

#[tokio::test]
async fn a_streamed_turn_is_timed_until_its_stream_ends_and_counted_once() {
    let events = text_delta_events();
    let fake = Arc::new(FakeProvider::new());
    fake.push_events(events);
    let (server, metrics) = timed(fake).await;
    let body = server.streamed(&turn("s1", "t1")).await;
    assert!(body.contains("event: envelope"), "{body}");
    let text = metrics.encode();
    assert_eq!(
        sample(
            &text,
            "aptix_provider_call_duration_seconds_count",
            &[("call", "stream"), ("outcome", "ok")]
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "aptix_turn_overhead_seconds_count", &[]),
        Some(1.0)
    );
    assert_eq!(sample(&text, "aptix_turns_in_flight", &[]), Some(0.0));
}

#[tokio::test]
async fn a_broken_stream_is_no_ok_call_and_the_wait_before_its_retry_is_no_overhead() {
    use aptix_client::{ClientError, FakeReply, TransportPhase};
    let events = text_delta_events();
    // The first stream breaks after its opening events, with a reset (`error`) or by
    // ending before its final event (`cut`); the second is whole.
    for (reset, outcome) in [(true, "error"), (false, "cut")] {
        let fake = Arc::new(FakeProvider::new());
        let mut broken: Vec<Result<_, ClientError>> = events[..3].iter().cloned().map(Ok).collect();
        if reset {
            broken.push(Err(ClientError::Transport {
                phase: TransportPhase::ReadBody,
                message: "connection reset".into(),
                source: None,
            }));
        }
        fake.push(FakeReply::Events(broken));
        fake.push_events(events.clone());
        let (server, metrics) = timed(fake).await;
        let body = server.streamed(&turn("s1", "t1")).await;
        assert!(body.contains("event: envelope"), "{body}");
        let wait_ms = body
            .split("\n\n")
            .find_map(|block| block.strip_prefix("event: retry\ndata: "))
            .map(|data| {
                serde_json::from_str::<Value>(data).unwrap()["waitMs"]
                    .as_f64()
                    .unwrap()
            })
            .unwrap_or_else(|| panic!("no retry event: {body}"));
        let text = metrics.encode();
        let calls = |outcome: &str| {
            sample(
                &text,
                "aptix_provider_call_duration_seconds_count",
                &[("call", "stream"), ("outcome", outcome)],
            )
        };
        assert_eq!(
            (calls("ok"), calls(outcome)),
            (Some(1.0), Some(1.0)),
            "{outcome}: {text}"
        );
        // The turn waited `wait_ms` before sending the request again: time waiting on
        // the provider, not the service's own.
        let overhead = sample(&text, "aptix_turn_overhead_seconds_sum", &[]).unwrap();
        let turn = sample(&text, "aptix_turn_duration_seconds_sum", &[]).unwrap();
        assert!(wait_ms > 0.0, "{body}");
        assert!(
            overhead <= turn - wait_ms / 1000.0,
            "overhead {overhead} s of a {turn} s turn that waited {wait_ms} ms"
        );
    }
}

#[tokio::test]
async fn the_openapi_document_is_served_without_a_token() {
    let config = ServerConfig {
        tokens: Tokens::from_lines("secret-token-123\n").unwrap(),
        ..ServerConfig::default()
    };
    let server = start(Arc::new(FakeProvider::new()), config).await;
    let response = server.get("/openapi.json").await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.text().await.unwrap(), aptix_server::openapi_json());
}

#[tokio::test]
async fn sessions_are_listed_newest_first_in_pages_and_deleted() {
    let provider = Arc::new(FakeProvider::new());
    for n in 0..3 {
        provider.push_response(text_response(&format!("resp_{n}"), "Hello!"));
    }
    let server = start(provider, ServerConfig::default()).await;
    // Ids with characters a query string gives a meaning to: the cursor holds them, and
    // pasted into the next URL as it came (as `docs/serve.md` says), it must not lose
    // any session.
    for session in ["s-a", "a+b", "c&d #e"] {
        let response = server.post(&turn(session, "t1")).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let mut seen = Vec::new();
    let mut url = format!("{}/v1/sessions?limit=1", server.base);
    loop {
        let page: Value = server
            .client
            .get(&url)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for session in page["sessions"].as_array().unwrap() {
            seen.push(session["sessionId"].as_str().unwrap().to_owned());
        }
        match page["nextCursor"].as_str() {
            Some(cursor) => {
                assert!(
                    cursor
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || b"-_".contains(&byte)),
                    "{cursor}"
                );
                url = format!("{}/v1/sessions?limit=1&cursor={cursor}", server.base);
            }
            None => break,
        }
    }
    assert_eq!(seen, ["c&d #e", "a+b", "s-a"]);

    let (status, body) = error_of(server.get("/v1/sessions?cursor=nonsense").await).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("invalid_request"))
    );

    let deleted = server
        .client
        .delete(format!("{}/v1/sessions/a+b", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let (status, body) = error_of(
        server
            .client
            .delete(format!("{}/v1/sessions/a+b", server.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("unknown_session"))
    );
    let gone = server.get("/v1/sessions/a+b").await;
    assert_eq!(gone.status(), 404);
}

#[tokio::test]
async fn unreadable_paths_queries_routes_and_methods_get_the_one_error_shape() {
    let server = start(Arc::new(FakeProvider::new()), ServerConfig::default()).await;
    // Each refusal: the JSON error shape with its code, the request id, and the detail a
    // client needs to fix the call.
    let cases: [(&str, &str, u16, &str, &str); 12] = [
        (
            "GET",
            "/v1/sessions?limit=abc",
            400,
            "invalid_request",
            "limit",
        ),
        (
            "GET",
            "/v1/sessions?limit=1&limit=2",
            400,
            "invalid_request",
            "limit",
        ),
        (
            "GET",
            "/v1/sessions?limit=0",
            400,
            "invalid_request",
            "1 to 1000, not \"0\"",
        ),
        (
            "GET",
            "/v1/sessions?limit=1001",
            400,
            "invalid_request",
            "not \"1001\"",
        ),
        (
            "GET",
            "/v1/sessions/%FF%FE",
            400,
            "invalid_request",
            "UTF-8",
        ),
        (
            "DELETE",
            "/v1/sessions/%FF",
            400,
            "invalid_request",
            "UTF-8",
        ),
        // A NUL (or any control character) is no session id: PostgreSQL refuses it in
        // text, which was a 503 `store_unavailable` for the client's mistake.
        (
            "GET",
            "/v1/sessions/a%00b",
            400,
            "invalid_request",
            "control character",
        ),
        (
            "DELETE",
            "/v1/sessions/a%00",
            400,
            "invalid_request",
            "control character",
        ),
        (
            "GET",
            "/v1/sessions?cursor=1%3Aa%00b",
            400,
            "invalid_request",
            "is not a cursor: pass the nextCursor of the previous page as it came",
        ),
        (
            // base64url of `1:a\0b`: a cursor in form, which no store cursor is.
            "GET",
            "/v1/sessions?cursor=MTphAGI",
            400,
            "invalid_request",
            // Said of the cursor as sent, not as the store decodes it.
            "\"MTphAGI\" is not a cursor",
        ),
        (
            "GET",
            "/v1/nothing-here",
            404,
            "not_found",
            "GET /v1/nothing-here",
        ),
        ("PUT", "/v1/agent/execute", 405, "method_not_allowed", "PUT"),
    ];
    for (method, path, status, code, detail) in cases {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = server
            .client
            .request(method.clone(), format!("{}{path}", server.base))
            .header("x-request-id", "req-shape")
            .send()
            .await
            .unwrap();
        let allow = response
            .headers()
            .get("allow")
            .map(|value| value.to_str().unwrap().to_owned());
        assert_eq!(
            response.headers()["content-type"],
            "application/json",
            "{method} {path}"
        );
        let (got, body) = error_of(response).await;
        assert_eq!(got, status, "{method} {path}: {body}");
        let error = &body["error"];
        assert_eq!(error["code"], code, "{method} {path}: {body}");
        assert_eq!(error["requestId"], "req-shape", "{method} {path}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(detail), "{method} {path}: {message}");
        if status == 405 {
            assert_eq!(allow.as_deref(), Some("POST"), "{method} {path}");
        }
    }
    // Every wrong parameter is a violation of its own, named, with its rule: as a
    // body's are.
    let violations: [(&str, &[(&str, &str)]); 9] = [
        ("/v1/sessions?limit=abc", &[("limit", "wrong_type")]),
        ("/v1/sessions?limit=%2B5", &[("limit", "wrong_type")]),
        (
            "/v1/sessions?limit=99999999999999999999999",
            &[("limit", "invalid_number")],
        ),
        // A route without parameters names each one sent, rather than ignoring it.
        (
            "/v1/sessions/s1?limit=2&x=1&x=2",
            &[("limit", "unknown_field"), ("x", "unknown_field")],
        ),
        (
            "/v1/sessions?limit=1&limit=2",
            &[("limit", "duplicate_field")],
        ),
        ("/v1/sessions?limit=0", &[("limit", "invalid_number")]),
        ("/v1/sessions/%FF", &[("id", "invalid_id")]),
        ("/v1/sessions/a%00b", &[("id", "invalid_id")]),
        (
            "/v1/sessions?limit=-1&cursor=%25%25&page=2",
            &[
                ("limit", "invalid_number"),
                ("cursor", "wrong_type"),
                ("page", "unknown_field"),
            ],
        ),
    ];
    for (path, expected) in violations {
        let (status, body) = error_of(server.get(path).await).await;
        assert_eq!(status, 400, "{path}: {body}");
        let found: Vec<(&str, &str)> = body["error"]["violations"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}: no violations: {body}"))
            .iter()
            .map(|v| (v["path"].as_str().unwrap(), v["rule"].as_str().unwrap()))
            .collect();
        assert_eq!(found, expected, "{path}: {body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(!message.contains("deserialize"), "{path}: {message}");
        assert!(!message.contains("Invalid URL"), "{path}: {message}");
    }
    // A limit in range, and none, still list.
    for path in [
        "/v1/sessions?limit=1",
        "/v1/sessions?limit=1000",
        "/v1/sessions",
    ] {
        assert_eq!(server.get(path).await.status(), 200, "{path}");
    }
}

#[tokio::test]
async fn a_long_streamed_turn_sends_heartbeats_until_its_envelope() {
    let provider = gated();
    let server = start(
        provider.clone(),
        ServerConfig {
            heartbeat: Duration::from_millis(40),
            ..ServerConfig::default()
        },
    )
    .await;
    let mut response = server.stream(&turn("s1", "t1")).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["cache-control"], "no-cache");
    // The model has not answered: only heartbeats come, as comments.
    let mut received = String::new();
    read_until(&mut response, &mut received, "a heartbeat", |text| {
        text.matches(": heartbeat\n\n").count() >= 2
    })
    .await;
    assert!(!received.contains("event:"), "{received}");
    provider.open.notify_one();
    while let Some(chunk) = response.chunk().await.unwrap() {
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    // Every block is a heartbeat comment, a delta or the one final envelope, last.
    let blocks: Vec<&str> = received.split_terminator("\n\n").collect();
    assert_eq!(
        blocks
            .last()
            .map(|b| b.starts_with("event: envelope\ndata: ")),
        Some(true)
    );
    for block in &blocks {
        assert!(
            *block == ": heartbeat"
                || block.starts_with("event: delta\ndata: {")
                || block.starts_with("event: envelope\ndata: {"),
            "{block:?}"
        );
    }
    let envelope: Value = serde_json::from_str(
        blocks
            .last()
            .and_then(|b| b.strip_prefix("event: envelope\ndata: "))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(envelope["text"], "gated answer");
}

#[tokio::test]
async fn a_stream_waiting_on_its_model_opens_with_a_heartbeat_long_before_the_interval() {
    let provider = gated();
    // The default interval, 15 s: the head does not wait for it.
    let server = start(provider.clone(), ServerConfig::default()).await;
    let opened = tokio::time::timeout(Duration::from_secs(10), async {
        let mut response = server.stream(&turn("s1", "t1")).await;
        let first = response.chunk().await.unwrap().unwrap_or_default();
        (response, first)
    })
    .await;
    let (mut response, first) = opened.expect("the stream opens before the heartbeat interval");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    assert_eq!(&first[..], b": heartbeat\n\n");
    provider.open.notify_one();
    let mut received = String::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        received.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(
        received.ends_with("\n\n") && received.contains("event: envelope\n"),
        "{received}"
    );
}

#[tokio::test]
async fn heartbeats_turned_off_with_the_longest_interval_still_stream_the_turn() {
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(text_response("resp_1", "no heartbeats"));
    let server = start(
        provider,
        ServerConfig {
            heartbeat: Duration::MAX,
            ..ServerConfig::default()
        },
    )
    .await;
    let text = server.streamed(&turn("s1", "t1")).await;
    assert!(!text.contains(": heartbeat"), "{text}");
    // The answer streams as a delta, with no warning that the stream differed.
    assert!(
        text.split("\n\n")
            .any(|block| block.starts_with("event: delta\n") && block.contains("no heartbeats")),
        "{text}"
    );
    assert!(!text.contains("differs"), "{text}");
    assert!(text.contains("event: delta\n"), "{text}");
    assert!(text.ends_with("\n\n"), "{text}");
    assert_eq!(text.matches("event: envelope\n").count(), 1, "{text}");
}

/// A provider whose stream hands over the events the test sends, when it sends them.
struct Piped {
    events: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<String>>>,
    calls: AtomicUsize,
}

impl Piped {
    /// The provider, and where the test writes its stream's events.
    fn new() -> (Arc<Piped>, tokio::sync::mpsc::UnboundedSender<String>) {
        let (send, events) = tokio::sync::mpsc::unbounded_channel::<String>();
        let provider = Arc::new(Piped {
            events: std::sync::Mutex::new(Some(events)),
            calls: AtomicUsize::new(0),
        });
        (provider, send)
    }
}

#[async_trait]
impl ResponsesProvider for Piped {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        Err(ClientError::config(
            "provider",
            "this provider only streams",
        ))
    }

    async fn stream(
        &self,
        _: &CreateResponseRequest,
    ) -> Result<aptix_client::EventStream, ClientError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let events = self.events.lock().unwrap().take().expect("one stream");
        let frames = futures_util::stream::unfold(events, |mut events| async move {
            let data = events.recv().await?;
            let event: Value = serde_json::from_str(&data).unwrap();
            let frame = aptix_sse::SseEvent {
                event: event["type"].as_str().map(str::to_owned),
                data,
                ..aptix_sse::SseEvent::default()
            };
            Some((Ok(frame), events))
        });
        Ok(aptix_client::EventStream::new(
            aptix_client::ReplyMeta::synthetic(),
            frames,
        ))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

#[tokio::test]
async fn a_client_that_drops_a_stream_mid_answer_can_retry_and_gets_the_stored_envelope() {
    let (provider, send) = Piped::new();
    let server = start(provider.clone(), ServerConfig::default()).await;
    let event = |value: Value| send.send(value.to_string()).unwrap();
    let delta = |sequence: u64, text: &str| {
        json!({"type": "response.output_text.delta", "sequence_number": sequence,
               "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": text})
    };
    event(json!({"type": "response.created", "sequence_number": 0,
                 "response": {"id": "resp_1", "status": "in_progress", "model": "m", "output": []}}));
    event(
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
                 "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
    );
    event(delta(2, "Hel"));
    let mut response = server.stream(&turn("s1", "t1")).await;
    assert_eq!(response.status(), 200);
    let mut received = String::new();
    read_until(&mut response, &mut received, "the first delta", |text| {
        text.contains(r#""text":"Hel""#)
    })
    .await;
    assert!(!received.contains("event: envelope"), "{received}");
    // The client goes away mid-answer; the model's answer goes on arriving.
    drop(response);
    tokio::time::sleep(Duration::from_millis(50)).await;
    event(delta(3, "lo"));
    event(
        json!({"type": "response.output_item.done", "sequence_number": 4, "output_index": 0,
                 "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": "Hello"}]}}),
    );
    event(json!({"type": "response.completed", "sequence_number": 5,
                 "response": {"id": "resp_1", "status": "completed", "model": "m",
                              "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                                          "status": "completed",
                                          "content": [{"type": "output_text", "text": "Hello"}]}],
                              "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}}));
    // The turn completed without its client and was stored: the retry gets its envelope,
    // streamed, without a second model call.
    let mut retried = String::new();
    for _ in 0..100 {
        let response = server.stream(&turn("s1", "t1")).await;
        if response.status() == 200 {
            retried = response.text().await.unwrap();
            break;
        }
        assert_eq!(response.status(), 409, "only busy while the first run ends");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let envelope: Value = serde_json::from_str(
        retried
            .split_terminator("\n\n")
            .last()
            .and_then(|block| block.strip_prefix("event: envelope\ndata: "))
            .unwrap_or_else(|| panic!("no envelope last: {retried}")),
    )
    .unwrap();
    assert_eq!(envelope["kind"], "ok", "{envelope}");
    assert_eq!(envelope["text"], "Hello", "{envelope}");
    assert_one_model_call(&provider.calls);
}

#[tokio::test]
async fn shutdown_waits_for_a_turn_whose_client_went_away_and_stores_it() {
    let provider = gated();
    let store = Arc::new(InMemorySessionStore::new());
    let mut server = start_on(provider.clone(), store.clone(), ServerConfig::default()).await;
    let abandoned = tokio::spawn(server.post(&turn("s1", "t1")).send());
    provider.entered.notified().await;
    abandoned.abort();
    let _ = abandoned.await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    // Stopping now: no connection is left, but the turn still runs.
    server.shutdown.take().unwrap().send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !server.served.is_finished(),
        "serve returned while a turn whose client left was still running"
    );
    provider.open.notify_one();
    tokio::time::timeout(Duration::from_secs(5), server.served)
        .await
        .expect("serve returns once the turn has ended")
        .unwrap();
    let stored = aptix_orchestrator::SessionStore::load(store.as_ref(), "s1")
        .await
        .unwrap()
        .expect("the turn was stored");
    assert!(
        stored.value.last_response_id.is_some(),
        "the stored session has the answer's response id"
    );
}

/// The body of a chunked HTTP/1.1 response, when `raw` holds all of it.
fn dechunked(raw: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(raw).ok()?;
    let (_, mut rest) = text.split_once("\r\n\r\n")?;
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.push_str(after.get(..size)?);
        rest = after.get(size..)?.strip_prefix("\r\n")?;
    }
}

#[tokio::test]
async fn a_client_that_stops_reading_does_not_hold_its_turn() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let (provider, send) = Piped::new();
    let store = Arc::new(InMemorySessionStore::new());
    let server = start_on(provider.clone(), store.clone(), ServerConfig::default()).await;
    let event = |value: Value| send.send(value.to_string()).unwrap();
    event(json!({"type": "response.created", "sequence_number": 0,
                 "response": {"id": "resp_1", "status": "in_progress", "model": "m", "output": []}}));
    event(
        json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0,
                 "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
    );
    // A client with a small receive window that sends its request and reads nothing.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let address = server
        .base
        .strip_prefix("http://")
        .unwrap()
        .parse()
        .unwrap();
    let mut client = socket.connect(address).await.unwrap();
    let body = turn("s1", "t1").to_string();
    let request = format!(
        "POST /v1/agent/execute HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
         accept: text/event-stream\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    client.write_all(request.as_bytes()).await.unwrap();
    // The model answers with far more than the socket buffers between them hold
    // (16 MiB against a few), after the turn has waited for it.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let piece = "a".repeat(32 << 10);
    let pieces = 512;
    for n in 0..pieces {
        event(
            json!({"type": "response.output_text.delta", "sequence_number": 2 + n,
                     "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": piece}),
        );
    }
    let answer = piece.repeat(pieces as usize);
    event(
        json!({"type": "response.completed", "sequence_number": 2 + pieces,
                 "response": {"id": "resp_1", "status": "completed", "model": "m",
                              "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                                          "status": "completed",
                                          "content": [{"type": "output_text", "text": answer}]}],
                              "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}}),
    );
    // The turn ends and is stored while its client is connected and still not reading.
    let mut stored = None;
    for _ in 0..500 {
        stored = aptix_orchestrator::SessionStore::load(store.as_ref(), "s1")
            .await
            .unwrap()
            .filter(|session| session.value.last_response_id.is_some());
        if stored.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        stored.is_some(),
        "the turn was not stored within 10 s while its client was not reading"
    );
    // When the client reads at last, it gets the deltas it had room for, in order, a
    // notice where they stop, and the whole answer in the envelope.
    let mut raw = Vec::new();
    let text = loop {
        let mut buffer = vec![0; 1 << 20];
        let read = tokio::time::timeout(Duration::from_secs(10), client.read(&mut buffer))
            .await
            .expect("the rest of the response within 10 s")
            .unwrap();
        assert!(read > 0, "the connection closed before the body's end");
        raw.extend_from_slice(&buffer[..read]);
        if raw.ends_with(b"\r\n0\r\n\r\n")
            && let Some(text) = dechunked(&raw)
        {
            break text;
        }
    };
    assert!(
        text.contains("\n: the client fell behind"),
        "no overflow notice"
    );
    let mut streamed = String::new();
    let mut envelope = None;
    for block in text.split_terminator("\n\n") {
        if let Some(data) = block.strip_prefix("event: delta\ndata: ") {
            let delta: Value = serde_json::from_str(data).unwrap();
            streamed.push_str(delta["text"].as_str().unwrap_or_default());
        } else if let Some(data) = block.strip_prefix("event: envelope\ndata: ") {
            envelope = Some(serde_json::from_str::<Value>(data).unwrap());
        }
    }
    let envelope = envelope.expect("the envelope came last");
    assert_eq!(envelope["text"].as_str().map(str::len), Some(answer.len()));
    assert!(
        !streamed.is_empty() && streamed.len() < answer.len() && answer.starts_with(&streamed),
        "the deltas sent are the answer's beginning: {} of {} bytes",
        streamed.len(),
        answer.len()
    );
    assert!(
        text.len() < (8 << 20) + 3 * answer.len(),
        "the unsent deltas were bounded: {} bytes",
        text.len()
    );
    assert_one_model_call(&provider.calls);
}

/// A server tool that tells the time.
struct Clock;

#[async_trait]
impl aptix_orchestrator::ServerTool for Clock {
    fn name(&self) -> &str {
        "clock"
    }
    fn description(&self) -> &str {
        "Tells the time"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn execute(&self, _: &str) -> Result<String, String> {
        Ok(r#"{"time":"12:00"}"#.to_owned())
    }
}

#[tokio::test]
async fn retries_and_server_tools_stream_as_their_own_events_and_retries_are_counted() {
    use aptix_testkit::fault_server::{FaultServer, Reply, Step, sse_text, text_answer_events};
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_1",
                      "name": "clock", "arguments": "{}", "status": "completed"});
    let tool_call = vec![
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                        "name": "clock", "arguments": "", "status": "in_progress"}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": call}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
               "model": "m", "output": [call],
               "usage": {"input_tokens": 10, "output_tokens": 2, "total_tokens": 12}}}),
    ];
    let answer = text_answer_events("resp_2", &["It is ", "noon."]);
    let upstream = FaultServer::start(vec![
        // The first request is rate limited, and sent again.
        Reply::rate_limited(10),
        // The model calls the server tool.
        Reply::sse(sse_text(&tool_call)),
        // Its answer is cut after its first delta, and the request sent again.
        Reply::sse_steps(vec![
            Step::Send(sse_text(&answer[..4]).into_bytes()),
            Step::Reset,
        ]),
        Reply::sse(sse_text(&answer)),
    ])
    .await;
    let client = aptix_client::OpenAiConfig::builder()
        .base_url(upstream.base_url())
        .api_key("sk-test-retries-0000")
        .retry(aptix_client::RetryPolicy {
            max_retries: 2,
            jitter: false,
            ..aptix_client::RetryPolicy::default()
        })
        .build()
        .unwrap();
    let provider = Arc::new(aptix_client::OpenAiProvider::new(client).unwrap());
    let orchestrator = Orchestrator::builder(provider, Arc::new(InMemorySessionStore::new()))
        .server_tool(Arc::new(Clock))
        .config(aptix_orchestrator::OrchestratorConfig {
            stream_recovery: aptix_orchestrator::StreamRecovery {
                max_attempts: 3,
                initial_backoff: Duration::from_millis(10),
                max_backoff: Duration::from_millis(20),
                jitter: false,
            },
            ..aptix_orchestrator::OrchestratorConfig::default()
        })
        .build()
        .unwrap();
    let server = start_with(orchestrator, ServerConfig::default()).await;
    let text = server.streamed(&turn("s1", "t1")).await;
    let events: Vec<(&str, Value)> = text
        .split_terminator("\n\n")
        .filter_map(|block| {
            let (name, data) = block.strip_prefix("event: ")?.split_once("\ndata: ")?;
            Some((name, serde_json::from_str(data).unwrap()))
        })
        .collect();
    let named = |name: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|(event, _)| *event == name)
            .map(|(_, data)| data)
            .collect()
    };
    // Every retry notice is `event: retry`, the request's before anything else.
    let retries = named("retry");
    assert_eq!(retries.len(), 2, "{text}");
    assert_eq!(events[0].0, "retry", "{text}");
    assert_eq!(retries[0]["type"], "retrying");
    // Each notice says what it counts: the request's sends, then the model call's
    // streams.
    assert_eq!(retries[0]["cause"], "request_failed");
    assert_eq!(retries[1]["cause"], "stream_cut");
    assert_eq!(retries[0]["reason"], "rate limited (429)");
    assert_eq!(retries[0]["events"], 0);
    assert_eq!(retries[0]["waitMs"], 10);
    assert!(retries[1]["events"].as_u64().unwrap() > 0, "{}", retries[1]);
    // The server tool's start and end are `event: tool`.
    let tools: Vec<&str> = named("tool")
        .iter()
        .map(|data| data["type"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["toolRunning", "toolFinished"], "{text}");
    assert!(
        named("delta").iter().all(|data| !matches!(
            data["type"].as_str(),
            Some("retrying" | "toolRunning" | "toolFinished")
        )),
        "{text}"
    );
    let envelope = named("envelope");
    assert_eq!(envelope.len(), 1, "{text}");
    assert_eq!(envelope[0]["kind"], "ok", "{text}");
    assert_eq!(envelope[0]["text"], "It is noon.");
    assert_eq!(events.last().unwrap().0, "envelope");

    let metrics = server.get("/metrics").await.text().await.unwrap();
    for kind in ["request", "stream"] {
        assert_eq!(
            sample(&metrics, "aptix_provider_retries_total", &[("kind", kind)]),
            Some(1.0),
            "{metrics}"
        );
    }
}

#[tokio::test]
async fn a_session_shows_its_turns_and_their_usage_totals() {
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(text_response("resp_1", "Hello!"));
    provider.push_response(text_response("resp_2", "Hello again!"));
    let server = start(provider, ServerConfig::default()).await;
    for turn_id in ["t1", "t2", "t1"] {
        // The last is a retry, answered from the store: not a turn of its own.
        let response = server.post(&turn("s1", turn_id)).send().await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let session: Value = server.get("/v1/sessions/s1").await.json().await.unwrap();
    assert_eq!(session["turns"], 2, "{session}");
    assert_eq!(session["usage"]["promptTokens"], 20, "{session}");
    assert_eq!(session["usage"]["completionTokens"], 6, "{session}");
    assert_eq!(session["usage"]["totalTokens"], 26, "{session}");
    let recent: Vec<(&str, &str, &str)> = session["recentTurns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|turn| {
            (
                turn["turnId"].as_str().unwrap(),
                turn["scenario"].as_str().unwrap(),
                turn["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        recent,
        [("t2", "user_turn", "ok"), ("t1", "user_turn", "ok")],
        "{session}"
    );
    assert_eq!(session["recentTurns"][0]["usage"]["totalTokens"], 13);
}

/// `cannot connect to <database>`, caused by the error it holds.
#[derive(Debug)]
struct At(std::io::Error);

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("cannot connect to postgres://aptix:***@db/aptix")
    }
}

impl std::error::Error for At {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// A store that is down: every read fails with a refused connection, or (`hangs`) never
/// answers.
struct DownStore {
    hangs: bool,
}

#[async_trait]
impl aptix_orchestrator::SessionStore for DownStore {
    async fn load(
        &self,
        _: &str,
    ) -> Result<
        Option<aptix_orchestrator::Versioned<aptix_orchestrator::SessionState>>,
        aptix_orchestrator::OrchestratorError,
    > {
        if self.hangs {
            std::future::pending::<()>().await;
        }
        // Shaped as the PostgreSQL store's: where, then why.
        Err(aptix_orchestrator::OrchestratorError::Store {
            operation: "load session",
            source: Box::new(At(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "Connection refused (os error 111)",
            ))),
        })
    }

    async fn stored_turn(
        &self,
        _: &aptix_orchestrator::TurnKey,
    ) -> Result<Option<aptix_orchestrator::StoredTurn>, aptix_orchestrator::OrchestratorError> {
        Ok(None)
    }

    async fn commit(
        &self,
        _: aptix_orchestrator::SessionState,
        _: Option<u64>,
        _: aptix_orchestrator::StoredTurn,
        _: &str,
    ) -> Result<u64, aptix_orchestrator::OrchestratorError> {
        Ok(1)
    }

    async fn acquire_lease(
        &self,
        _: &str,
        _: &str,
        _: Duration,
    ) -> Result<bool, aptix_orchestrator::OrchestratorError> {
        Ok(true)
    }

    async fn release_lease(
        &self,
        _: &str,
        _: &str,
    ) -> Result<(), aptix_orchestrator::OrchestratorError> {
        Ok(())
    }
}

#[tokio::test]
async fn readyz_says_why_the_store_is_not_ready_and_never_waits_long() {
    for (hangs, reason) in [
        (false, "Connection refused (os error 111)"),
        (true, "no answer within 2 s"),
    ] {
        let orchestrator =
            Orchestrator::builder(Arc::new(FakeProvider::new()), Arc::new(DownStore { hangs }))
                .build()
                .unwrap();
        let server = start_with(orchestrator, ServerConfig::default()).await;
        let response = server.get("/readyz").await;
        assert_eq!(response.status(), 503);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "store_unavailable");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{message}");
        // The root cause, not where: the database's address stays in the log.
        assert!(!message.contains("postgres://"), "{message}");
    }
}

/// A store whose commits take `delay` (an `await`, so a dropped commit future would
/// never write) over an in-memory one the test reads.
struct SlowCommit {
    inner: Arc<InMemorySessionStore>,
    delay: Duration,
}

#[async_trait]
impl aptix_orchestrator::SessionStore for SlowCommit {
    async fn load(
        &self,
        session_id: &str,
    ) -> Result<
        Option<aptix_orchestrator::Versioned<aptix_orchestrator::SessionState>>,
        aptix_orchestrator::OrchestratorError,
    > {
        self.inner.load(session_id).await
    }

    async fn stored_turn(
        &self,
        key: &aptix_orchestrator::TurnKey,
    ) -> Result<Option<aptix_orchestrator::StoredTurn>, aptix_orchestrator::OrchestratorError> {
        self.inner.stored_turn(key).await
    }

    async fn commit(
        &self,
        state: aptix_orchestrator::SessionState,
        expected: Option<u64>,
        turn: aptix_orchestrator::StoredTurn,
        holder: &str,
    ) -> Result<u64, aptix_orchestrator::OrchestratorError> {
        tokio::time::sleep(self.delay).await;
        self.inner.commit(state, expected, turn, holder).await
    }

    async fn acquire_lease(
        &self,
        session_id: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, aptix_orchestrator::OrchestratorError> {
        self.inner.acquire_lease(session_id, holder, ttl).await
    }

    async fn release_lease(
        &self,
        session_id: &str,
        holder: &str,
    ) -> Result<(), aptix_orchestrator::OrchestratorError> {
        self.inner.release_lease(session_id, holder).await
    }

    async fn lease(
        &self,
        session_id: &str,
    ) -> Result<Option<aptix_orchestrator::LeaseInfo>, aptix_orchestrator::OrchestratorError> {
        self.inner.lease(session_id).await
    }
}

#[tokio::test]
async fn a_turn_stopped_by_its_deadline_answers_with_what_the_store_holds() {
    use aptix_orchestrator::SessionStore as _;
    let key = |session: &str| aptix_orchestrator::TurnKey {
        session_id: session.to_owned(),
        turn_id: "t-1".to_owned(),
        scenario: aptix_orchestrator::Scenario::UserTurn,
    };
    // The deadline leaves the turn's first steps (the tokenizer's first build, in a
    // debug build) time to reach the commit, which outlasts it.
    let config = || ServerConfig {
        turn_timeout: Duration::from_secs(2),
        ..ServerConfig::default()
    };

    // The model answers at once and the commit straddles the deadline: it runs to its
    // end, and the client gets the envelope that was stored, not a 504 that says
    // nothing was.
    let inner = Arc::new(InMemorySessionStore::new());
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(text_response("resp_1", "stored as it stopped"));
    let orchestrator = Orchestrator::builder(
        fake,
        Arc::new(SlowCommit {
            inner: Arc::clone(&inner),
            delay: Duration::from_secs(3),
        }),
    )
    .build()
    .unwrap();
    let server = start_with(orchestrator, config()).await;
    let response = server.post(&turn("s-1", "t-1")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let envelope: Value = response.json().await.unwrap();
    assert_eq!(envelope["text"], "stored as it stopped", "{envelope}");
    let stored = inner
        .stored_turn(&key("s-1"))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(
        stored.envelope.text.as_deref(),
        Some("stored as it stopped")
    );
    assert!(
        inner.lease("s-1").await.unwrap().is_none(),
        "lease given back"
    );

    // The model is slower than the deadline: 504, nothing stored, the session free.
    let inner = Arc::new(InMemorySessionStore::new());
    let slow = gated();
    let server = start_on(slow.clone(), Arc::clone(&inner), config()).await;
    let (status, body) = error_of(server.post(&turn("s-2", "t-1")).send().await.unwrap()).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["code"], "turn_timeout");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains("nothing of it was stored")),
        "{body}"
    );
    assert!(inner.stored_turn(&key("s-2")).await.unwrap().is_none());
    assert!(
        inner.lease("s-2").await.unwrap().is_none(),
        "lease given back"
    );
}

#[tokio::test]
async fn a_turn_stopped_by_its_deadline_while_its_model_call_waits_is_still_timed_as_a_turn() {
    // The call is counted as it begins: a turn whose model is slower than the deadline
    // called the model, and is among the turns timed, not left out as a retry would be.
    //
    // A process's first turn builds the token tables (most of a second in a debug
    // build, before its model call): built by a turn of their own first, as `aptix
    // serve` builds them before it serves, so that the turn below spends its time
    // waiting on its model.
    let warm = Arc::new(FakeProvider::new());
    warm.push_response(text_response("resp_warm", "Hello!"));
    let warming = start(warm, ServerConfig::default()).await;
    let response = warming.post(&turn("s-warm", "t-1")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let metrics = Metrics::new();
    let slow = gated();
    let provider = Arc::new(TimedProvider::new(slow.clone(), metrics.clone()));
    let server = start(
        provider,
        ServerConfig {
            turn_timeout: Duration::from_millis(500),
            metrics: metrics.clone(),
            ..ServerConfig::default()
        },
    )
    .await;
    let (status, body) = error_of(server.post(&turn("s-slow", "t-1")).send().await.unwrap()).await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(slow.calls.load(Ordering::SeqCst), 1);
    let text = metrics.encode();
    assert_eq!(
        sample(&text, "aptix_turn_duration_seconds_count", &[]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "aptix_turn_overhead_seconds_count", &[]),
        Some(1.0),
        "{text}"
    );
    // The call stopped while it waited is timed, as `cut`, and its wait is the
    // provider's: the turn spent all but a sliver of its 500 ms waiting on it.
    assert_eq!(
        sample(
            &text,
            "aptix_provider_call_duration_seconds_count",
            &[("call", "create"), ("outcome", "cut")]
        ),
        Some(1.0),
        "{text}"
    );
    let overhead = sample(&text, "aptix_turn_overhead_seconds_sum", &[]).unwrap();
    let turn = sample(&text, "aptix_turn_duration_seconds_sum", &[]).unwrap();
    assert!(turn >= 0.5, "{text}");
    assert!(
        overhead < turn / 2.0,
        "overhead {overhead} s of a {turn} s turn that waited on its model call: {text}"
    );
}

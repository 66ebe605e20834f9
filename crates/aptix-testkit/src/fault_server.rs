//! A fault-injecting HTTP/1.1 server on loopback, scripted per request, for the tests of
//! the client, the orchestrator and the CLI (feature `fault-server`).
//!
//! Written on a bare `TcpListener` rather than a framework so that every fault is
//! exact: a connection closed before the first byte of the reply, a chunked body cut
//! mid-event (no final chunk), a stall that never ends, any status and headers. Each
//! request takes the next [`Reply`] of the script, whatever its method and path, and is
//! recorded ([`FaultServer::requests`]); a request past the end of the script gets a
//! 599 so that one request too many fails loudly. Every connection is closed after its
//! reply (`connection: close`), so one reply never leaks into the next.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One step of a reply body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send these bytes as one chunk.
    Send(Vec<u8>),
    /// Wait before the next step (real time).
    Sleep(Duration),
    /// Send nothing more and keep the connection open until the client goes away.
    Stall,
    /// Close the connection here, without the chunked body's final chunk: the client
    /// sees the body fail mid-read.
    Reset,
}

/// The scripted answer to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The status code; `None` sends no head at all: the connection is closed at once
    /// (a reset before the first byte), or held open silently when `steps` holds a
    /// [`Step::Stall`].
    pub status: Option<u16>,
    /// Reply headers besides `transfer-encoding` and `connection`.
    pub headers: Vec<(String, String)>,
    /// The body, step by step.
    pub steps: Vec<Step>,
}

impl Reply {
    /// A 200 `text/event-stream` reply sending `body` in one chunk and ending cleanly.
    pub fn sse(body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: Some(200),
            headers: vec![
                ("content-type".into(), "text/event-stream".into()),
                ("x-request-id".into(), "req_fault".into()),
            ],
            steps: vec![Step::Send(body.into())],
        }
    }

    /// A 200 event stream made of these steps.
    pub fn sse_steps(steps: Vec<Step>) -> Reply {
        Reply {
            steps,
            ..Reply::sse(Vec::new())
        }
    }

    /// A reply with this status, content type and body.
    pub fn status(status: u16, content_type: &str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status: Some(status),
            headers: vec![("content-type".into(), content_type.into())],
            steps: vec![Step::Send(body.into())],
        }
    }

    /// A JSON reply with this status.
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply::status(status, "application/json", body.to_string())
    }

    /// OpenAI's `429 rate_limit_exceeded`, asking to wait `retry_after_ms` before the
    /// next attempt (`retry-after-ms`, as OpenAI sends it).
    pub fn rate_limited(retry_after_ms: u64) -> Reply {
        Reply::json(
            429,
            &serde_json::json!({"error": {"message": "Rate limit reached", "type": "requests",
                                          "code": "rate_limit_exceeded"}}),
        )
        .header("retry-after-ms", &retry_after_ms.to_string())
    }

    /// The connection is closed as soon as the request is read: no byte of a reply.
    pub fn reset_before_head() -> Reply {
        Reply {
            status: None,
            headers: Vec::new(),
            steps: Vec::new(),
        }
    }

    /// Nothing is sent, not even the head, and the connection stays open until the
    /// client gives up (a server that accepted the request and went silent).
    pub fn stall_before_head() -> Reply {
        Reply {
            status: None,
            headers: Vec::new(),
            steps: vec![Step::Stall],
        }
    }

    /// This reply with one more header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The path and query, as sent (`/v1/responses/resp_1?stream=true&starting_after=4`).
    pub target: String,
    /// The headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Received {
    /// The body as JSON, when it is.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    received: Vec<Received>,
}

/// A running server; it stops with the runtime that started it.
#[derive(Clone)]
pub struct FaultServer {
    uri: String,
    shared: Arc<Mutex<Shared>>,
}

impl FaultServer {
    /// Starts a server on a free loopback port that answers requests with `script`, in
    /// order.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound (test support only).
    pub async fn start(script: Vec<Reply>) -> FaultServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port for the fault server");
        let address = listener.local_addr().expect("the fault server's address");
        let shared = Arc::new(Mutex::new(Shared {
            script: script.into(),
            received: Vec::new(),
        }));
        let accepting = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                tokio::spawn(serve(socket, Arc::clone(&accepting)));
            }
        });
        FaultServer {
            uri: format!("http://{address}"),
            shared,
        }
    }

    /// `http://127.0.0.1:port`.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// `http://127.0.0.1:port/v1`, the base URL a client is given.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.uri)
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Received> {
        lock(&self.shared).received.clone()
    }

    /// Adds replies at the end of the script.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        lock(&self.shared).script.extend(replies);
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn serve(mut socket: TcpStream, shared: Arc<Mutex<Shared>>) {
    let Some(received) = read_request(&mut socket).await else {
        return;
    };
    let reply = {
        let mut shared = lock(&shared);
        shared.received.push(received);
        shared.script.pop_front()
    };
    let reply = reply.unwrap_or_else(|| {
        Reply::status(599, "text/plain", "the fault server's script is exhausted")
    });
    let Some(status) = reply.status else {
        if reply.steps.contains(&Step::Stall) {
            let mut sink = [0u8; 64];
            while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
        }
        return; // Dropping the socket closes it before any byte of a reply.
    };
    let mut head = format!("HTTP/1.1 {status} Fault\r\n");
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    for step in reply.steps {
        match step {
            Step::Send(bytes) => {
                if bytes.is_empty() {
                    continue;
                }
                let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
                chunk.extend_from_slice(&bytes);
                chunk.extend_from_slice(b"\r\n");
                if socket.write_all(&chunk).await.is_err() {
                    return;
                }
                let _ = socket.flush().await;
            }
            Step::Sleep(delay) => tokio::time::sleep(delay).await,
            Step::Stall => {
                // Until the client closes its side.
                let mut sink = [0u8; 64];
                while matches!(socket.read(&mut sink).await, Ok(n) if n > 0) {}
                return;
            }
            Step::Reset => return,
        }
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let _ = socket.flush().await;
}

/// Reads one request: head, then a `content-length` body.
async fn read_request(socket: &mut TcpStream) -> Option<Received> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(chunk.get(..read)?);
    };
    let head = String::from_utf8_lossy(buffer.get(..head_end)?).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let target = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer.get(head_end..)?.to_vec();
    while body.len() < length {
        let read = socket.read(&mut chunk).await.ok()?;
        if read == 0 {
            break;
        }
        body.extend_from_slice(chunk.get(..read)?);
    }
    Some(Received {
        method,
        target,
        headers,
        body,
    })
}

/// SSE text for these events: each JSON value framed as `event: <type>` and `data:`.
pub fn sse_text(events: &[serde_json::Value]) -> String {
    events
        .iter()
        .map(|event| {
            let kind = event
                .get("type")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("message");
            format!("event: {kind}\ndata: {event}\n\n")
        })
        .collect()
}

/// The events of a plain text answer, numbered from 0: `response.created`, the message
/// item, one `output_text.delta` per piece, the done events and `response.completed`
/// carrying the whole text. `response_id` names the response.
pub fn text_answer_events(response_id: &str, pieces: &[&str]) -> Vec<serde_json::Value> {
    use serde_json::json;
    let text: String = pieces.concat();
    let message = json!({
        "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]
    });
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": response_id, "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}}),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0,
               "part": {"type": "output_text", "text": "", "annotations": []}}),
    ];
    for piece in pieces {
        events.push(
            json!({"type": "response.output_text.delta", "item_id": "msg_1",
                           "output_index": 0, "content_index": 0, "delta": piece}),
        );
    }
    events.push(
        json!({"type": "response.output_text.done", "item_id": "msg_1",
                       "output_index": 0, "content_index": 0, "text": text}),
    );
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": message}));
    events.push(json!({"type": "response.completed", "response": {
        "id": response_id, "object": "response", "status": "completed", "model": "gpt-fault",
        "output": [message],
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    }}));
    for (number, event) in events.iter_mut().enumerate() {
        if let Some(object) = event.as_object_mut() {
            object.insert("sequence_number".into(), json!(number));
        }
    }
    events
}

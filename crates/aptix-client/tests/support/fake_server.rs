//! A small streaming HTTP server (axum) for what wiremock cannot do: a body dribbled
//! in small chunks with delays, a stall, a connection dropped mid-body. It serves the
//! same script on `/v1/responses` and `/v1/chat/completions` and counts requests.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::Response;
use axum::routing::post;
use bytes::Bytes;

/// One step of the reply body.
#[derive(Debug, Clone)]
pub enum Step {
    /// Send these bytes as one chunk.
    Send(Bytes),
    /// Wait before the next step.
    Sleep(Duration),
    /// Send nothing more and keep the connection open.
    Stall,
    /// Abort the connection (the body ends with an error, so no final chunk is sent).
    Drop,
}

/// `bytes` as chunks of `size` bytes with `delay` between them: events split mid-line
/// and, for small sizes, mid-character.
pub fn dribble(bytes: &[u8], size: usize, delay: Duration) -> Vec<Step> {
    let mut steps = Vec::new();
    for chunk in bytes.chunks(size) {
        steps.push(Step::Send(Bytes::copy_from_slice(chunk)));
        steps.push(Step::Sleep(delay));
    }
    steps
}

#[derive(Clone)]
struct ServerState {
    steps: Arc<Vec<Step>>,
    requests: Arc<AtomicUsize>,
}

/// A running fake server; it stops with the test's runtime.
pub struct FakeServer {
    uri: String,
    requests: Arc<AtomicUsize>,
}

impl FakeServer {
    /// Starts a server on a free loopback port that answers every POST with `steps`.
    pub async fn start(steps: Vec<Step>) -> FakeServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let uri = format!("http://{}", listener.local_addr().unwrap());
        let state = ServerState {
            steps: Arc::new(steps),
            requests: Arc::new(AtomicUsize::new(0)),
        };
        let requests = Arc::clone(&state.requests);
        let router = Router::new()
            .route("/v1/responses", post(reply))
            .route("/v1/chat/completions", post(reply))
            .with_state(state);
        tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        FakeServer { uri, requests }
    }

    /// `http://127.0.0.1:port`.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

async fn reply(State(state): State<ServerState>, _body: Bytes) -> Response<Body> {
    state.requests.fetch_add(1, Ordering::SeqCst);
    let steps = Arc::clone(&state.steps);
    let body = futures_util::stream::unfold(0usize, move |mut index| {
        let steps = Arc::clone(&steps);
        async move {
            loop {
                match steps.get(index)? {
                    Step::Send(bytes) => return Some((Ok(bytes.clone()), index + 1)),
                    Step::Sleep(delay) => tokio::time::sleep(*delay).await,
                    Step::Stall => std::future::pending::<()>().await,
                    Step::Drop => {
                        let error = std::io::Error::other("connection dropped by the fake");
                        return Some((Err(error), index + 1));
                    }
                }
                index += 1;
            }
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream; charset=utf-8")
        .header("x-request-id", "req_fake_server")
        .body(Body::from_stream(body))
        .unwrap()
}

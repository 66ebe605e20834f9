//! A turn as users run it, against the floor of raw HTTP, in the same process and run;
//! shared by `benches/turn.rs` (the system allocator, as a library user gets by default)
//! and `benches/turn_mimalloc.rs` (the allocator the `aptix` command ships with).
//!
//! A loopback fake of `/v1/responses` (axum) answers every request with a prepared
//! body: a small reply (~1 KB of text) or a large one (~200 KB), whole or as a stream
//! of `response.output_text.delta` events. Three clients send the same first request of
//! a turn (with a `[CONTEXT]` block of 20 chunks of 1 KB):
//!
//! - **raw floor**: `reqwest` and `serde_json::Value`: encode a `Value` body, post it,
//!   read the reply, decode it as `Value` (a stream: split the events and decode each
//!   `data` as `Value`);
//! - **provider**: `OpenAiProvider::create` (or `stream`, drained) with the typed body;
//! - **full turn**: `Orchestrator::execute` (or `execute_streaming`): validate,
//!   retrieve, select and render the context, build, send, decode, fold, map, store.
//!
//! A last case gives every turn a context never seen before (the token counts of
//! chunks are remembered per process), to show what counting costs cold.
//!
//! Two more run the turn with a store that keeps nothing, to show what holding each
//! turn's state (history, envelope) in memory costs, and one runs the large turn with a
//! store at its bound (the last 100 sessions kept), as in a long-running process: the
//! memory of evicted sessions is reused, where a store that only grows takes new pages
//! from the kernel on every turn.
//!
//! `APTIX_BENCH_ROUNDS=N` sets the rounds per case (300); `APTIX_BENCH_ONLY=LABEL` runs
//! the one case of that label (`large, streamed`), for a profiler.
//!
//! Rounds are paired (raw, provider, turn back to back, in rotating order), so the
//! machine's drift touches all three alike; each case reports the p50 of every series
//! and the ratios of the p50s.
//!
//! Last, the turn's own CPU: the same small turn on one thread with a provider that
//! answers from memory (it encodes the request and decodes a prepared reply, as the
//! HTTP provider does, with no socket), against that provider call alone. The
//! difference is what the orchestration costs besides the model call.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aptix::wire::{CreateResponseRequest, Response};
use aptix::{
    AgentExecuteRequest, Capabilities, Chunk, ChunkId, ClientError, InMemorySessionStore, LineSpan,
    MemoryStoreLimits, OpenAiConfig, OpenAiProvider, Orchestrator, OrchestratorConfig,
    OrchestratorError, ProviderResponse, RagError, ReplyMeta, ResponsesProvider, Retrieval,
    RetrievalQuery, Retriever, ScoredChunk, SessionState, SessionStore, StoredTurn, StreamDelta,
    TurnKey, Versioned, async_trait,
};
use axum::Router;
use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use futures_util::StreamExt;
use serde_json::{Value, json};

/// The retriever's answer: 20 chunks of ~1 KB, the same every time, or (`fresh`) with
/// contents never seen before, so that nothing about them can be remembered.
struct TwentyChunks {
    chunks: Vec<ScoredChunk>,
    fresh: bool,
    calls: AtomicU64,
}

#[async_trait]
impl Retriever for TwentyChunks {
    async fn retrieve(&self, _query: &RetrievalQuery) -> Result<Retrieval, RagError> {
        let mut chunks = self.chunks.clone();
        if self.fresh {
            let call = self.calls.fetch_add(1, Ordering::Relaxed);
            for chunk in &mut chunks {
                let stamp = format!("// call {call:>12}\n");
                chunk.chunk.content.replace_range(..stamp.len(), &stamp);
            }
        }
        Ok(Retrieval {
            chunks,
            ..Retrieval::default()
        })
    }
}

fn chunks() -> Vec<ScoredChunk> {
    (0..20u32)
        .map(|i| {
            let content: String = (0..20)
                .map(|line| format!("    let value_{line} = compute_{i}(input, {line}); // step\n"))
                .collect::<String>()
                .chars()
                .take(1024)
                .collect();
            ScoredChunk {
                chunk: Chunk {
                    id: ChunkId::new(format!("src/module_{i}.rs#1")),
                    path: format!("src/module_{i}.rs"),
                    lines: LineSpan::new(1, 20).unwrap(),
                    language: "rust".into(),
                    content,
                    metadata: Default::default(),
                },
                score: 20.0 - i as f32,
            }
        })
        .collect()
}

/// What the turn's session store keeps.
#[derive(Clone, Copy)]
enum Keeps {
    /// Every session (the default bound, 10,000, is never reached here): the store only
    /// grows, as in a process's first minutes.
    Everything,
    /// The last 100 sessions: a store at its bound, as in a long-running process.
    Last100,
    /// Nothing ([`Forgetful`]).
    Nothing,
}

/// A store that keeps nothing: the turn without the cost of holding its state.
struct Forgetful;

#[async_trait]
impl SessionStore for Forgetful {
    async fn load(
        &self,
        _session_id: &str,
    ) -> Result<Option<Versioned<SessionState>>, OrchestratorError> {
        Ok(None)
    }

    async fn stored_turn(&self, _key: &TurnKey) -> Result<Option<StoredTurn>, OrchestratorError> {
        Ok(None)
    }

    async fn commit(
        &self,
        _state: SessionState,
        _expected_version: Option<u64>,
        _turn: StoredTurn,
        _holder: &str,
    ) -> Result<u64, OrchestratorError> {
        Ok(1)
    }

    async fn acquire_lease(
        &self,
        _session_id: &str,
        _holder: &str,
        _ttl: Duration,
    ) -> Result<bool, OrchestratorError> {
        Ok(true)
    }

    async fn release_lease(
        &self,
        _session_id: &str,
        _holder: &str,
    ) -> Result<(), OrchestratorError> {
        Ok(())
    }
}

/// The reply bodies of one size: whole and streamed.
struct Replies {
    json: Bytes,
    sse: Bytes,
}

fn replies(text_bytes: usize, deltas: usize) -> Replies {
    let sentence = "The turn reaches the store through one commit at the end. ";
    let text: String = sentence.chars().cycle().take(text_bytes).collect();
    let response = |status: &str, text: Option<&str>| {
        json!({
            "id": "resp_bench", "object": "response", "created_at": 1_700_000_000,
            "status": status, "model": "gpt-bench",
            "output": match text {
                Some(text) => json!([{"type": "message", "id": "msg_1", "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}]),
                None => json!([]),
            },
            "usage": {"input_tokens": 6000, "output_tokens": 300, "total_tokens": 6300,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}
        })
    };
    let json = serde_json::to_vec(&response("completed", Some(&text))).unwrap();
    let mut sse = String::new();
    let mut seq = 0;
    let mut event = |sse: &mut String, value: Value| {
        let kind = value["type"].as_str().unwrap().to_owned();
        let mut value = value;
        value["sequence_number"] = json!(seq);
        seq += 1;
        sse.push_str(&format!("event: {kind}\ndata: {value}\n\n"));
    };
    event(
        &mut sse,
        json!({"type": "response.created", "response": response("in_progress", None)}),
    );
    let piece = text.len().div_ceil(deltas);
    let chars: Vec<char> = text.chars().collect();
    for delta in chars.chunks(piece) {
        let delta: String = delta.iter().collect();
        event(
            &mut sse,
            json!({"type": "response.output_text.delta", "item_id": "msg_1",
                   "output_index": 0, "content_index": 0, "delta": delta}),
        );
    }
    event(
        &mut sse,
        json!({"type": "response.completed", "response": response("completed", Some(&text))}),
    );
    Replies {
        json: Bytes::from(json),
        sse: Bytes::from(sse),
    }
}

/// Serves `/v1/responses` on loopback: the model name picks the size, `stream` the form.
async fn serve(small: Replies, large: Replies) -> String {
    let small = Arc::new(small);
    let large = Arc::new(large);
    let app = Router::new().route(
        "/v1/responses",
        post(move |body: Bytes| {
            let small = small.clone();
            let large = large.clone();
            async move {
                let request: Value = serde_json::from_slice(&body).unwrap_or_default();
                let replies = if request["model"] == "large" {
                    large
                } else {
                    small
                };
                if request["stream"] == true {
                    (
                        [(header::CONTENT_TYPE, "text/event-stream")],
                        replies.sse.clone(),
                    )
                        .into_response()
                } else {
                    (
                        [(header::CONTENT_TYPE, "application/json")],
                        replies.json.clone(),
                    )
                        .into_response()
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{address}/v1")
}

/// The three ways to make the same call, for one reply size.
struct Case {
    model: &'static str,
    fresh: bool,
    store: Keeps,
    orchestrator: Orchestrator,
    provider: OpenAiProvider,
    typed_body: CreateResponseRequest,
    value_body: Value,
    client: reqwest::Client,
    url: String,
}

static TURN: AtomicU64 = AtomicU64::new(0);

impl Case {
    async fn new(model: &'static str, fresh: bool, store: Keeps, base_url: &str) -> Case {
        let config = OpenAiConfig::builder()
            .api_key("sk-bench")
            .base_url(base_url)
            .build()
            .unwrap();
        let provider = OpenAiProvider::new(config.clone()).unwrap();
        let mut settings = OrchestratorConfig::default();
        settings.model.model = model.into();
        settings.context_token_budget = 20_000;
        let orchestrator = Orchestrator::builder(
            Arc::new(OpenAiProvider::new(config).unwrap()),
            match store {
                Keeps::Everything => Arc::new(InMemorySessionStore::new()),
                Keeps::Last100 => Arc::new(InMemorySessionStore::with_limits(MemoryStoreLimits {
                    max_sessions: 100,
                    ..MemoryStoreLimits::default()
                })),
                Keeps::Nothing => Arc::new(Forgetful),
            },
        )
        .retriever(Arc::new(TwentyChunks {
            chunks: chunks(),
            fresh,
            calls: AtomicU64::new(0),
        }))
        .config(settings)
        .build()
        .unwrap();
        let typed_body = orchestrator.dry_run(&request()).await.unwrap();
        let value_body = serde_json::to_value(&typed_body).unwrap();
        Case {
            model,
            fresh,
            store,
            orchestrator,
            provider,
            typed_body,
            value_body,
            client: reqwest::Client::new(),
            url: format!("{base_url}/responses"),
        }
    }

    async fn raw(&self, stream: bool) -> usize {
        let mut body = self.value_body.clone();
        body["stream"] = json!(stream);
        let reply = self
            .client
            .post(&self.url)
            .bearer_auth("sk-bench")
            .header(header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(&body).unwrap())
            .send()
            .await
            .unwrap();
        if !stream {
            let bytes = reply.bytes().await.unwrap();
            let value: Value = serde_json::from_slice(&bytes).unwrap();
            return value["output"].as_array().map_or(0, Vec::len);
        }
        // Linear framing: scan only the new bytes for the blank line ending an event,
        // and drop the consumed events once per chunk.
        let mut buffer = Vec::new();
        let mut events = 0;
        let mut body = reply.bytes_stream();
        while let Some(chunk) = body.next().await {
            let scanned = buffer.len().saturating_sub(1);
            buffer.extend_from_slice(&chunk.unwrap());
            let mut start = 0;
            let mut at = scanned;
            while let Some(offset) = buffer[at..].windows(2).position(|w| w == b"\n\n") {
                let end = at + offset;
                for line in buffer[start..end].split(|b| *b == b'\n') {
                    if let Some(data) = line.strip_prefix(b"data: ") {
                        let value: Value = serde_json::from_slice(data).unwrap();
                        events += usize::from(value.is_object());
                    }
                }
                start = end + 2;
                at = start;
            }
            buffer.drain(..start);
        }
        events
    }

    async fn provider(&self, stream: bool) -> usize {
        if !stream {
            let reply = self.provider.create(&self.typed_body).await.unwrap();
            return reply.response.output.len();
        }
        let mut events = self.provider.stream(&self.typed_body).await.unwrap();
        let mut count = 0;
        while let Some(event) = events.next().await {
            event.unwrap();
            count += 1;
        }
        count
    }

    async fn turn(&self, stream: bool) -> usize {
        let n = TURN.fetch_add(1, Ordering::Relaxed);
        let mut request = request();
        if let AgentExecuteRequest::UserTurn(turn) = &mut request {
            turn.session_id = aptix::contract::SessionId::new(format!("s{n}")).unwrap();
        }
        let envelope = if stream {
            let mut text = 0;
            let mut sink = |delta: &StreamDelta| {
                if let StreamDelta::TextDelta { text: piece, .. } = delta {
                    text += piece.len();
                }
            };
            self.orchestrator
                .execute_streaming(request, &mut sink)
                .await
                .unwrap()
        } else {
            self.orchestrator.execute(request).await.unwrap()
        };
        assert_eq!(
            envelope.kind,
            aptix::Kind::Ok,
            "{:?}",
            envelope.error_message
        );
        envelope.text.map_or(0, |t| t.len())
    }
}

fn request() -> AgentExecuteRequest {
    AgentExecuteRequest::from_json_value(&json!({
        "sessionId": "s", "turnId": "t1",
        "instruction": "How does a turn reach the session store?"
    }))
    .unwrap()
}

fn p50(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

async fn time<F: std::future::Future<Output = usize>>(f: F) -> Duration {
    let started = Instant::now();
    std::hint::black_box(f.await);
    started.elapsed()
}

/// Runs every case and prints the tables.
pub(crate) fn run() {
    let rounds: usize = std::env::var("APTIX_BENCH_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    // One case only, by its label (`APTIX_BENCH_ONLY="large, streamed"`), for profiling.
    let only = std::env::var("APTIX_BENCH_ONLY").ok();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let base_url = serve(replies(1_000, 10), replies(200_000, 200)).await;
        println!(
            "{:<36} {:>10} {:>10} {:>10} {:>14} {:>10}",
            "case", "raw p50", "provider", "turn", "provider/raw", "turn/raw"
        );
        // (reply size, new context every turn, what the store keeps, streamed?)
        let cases = [
            ("small", false, Keeps::Everything, [false, true].as_slice()),
            ("large", false, Keeps::Everything, [false, true].as_slice()),
            ("small", true, Keeps::Everything, [false].as_slice()),
            ("small", false, Keeps::Nothing, [false].as_slice()),
            ("large", false, Keeps::Nothing, [false].as_slice()),
            ("large", false, Keeps::Last100, [false, true].as_slice()),
        ];
        for (model, fresh, store, streams) in cases {
            let case = Case::new(model, fresh, store, &base_url).await;
            for &stream in streams {
                let label = format!(
                    "{}{}{}{}",
                    case.model,
                    if stream { ", streamed" } else { "" },
                    if case.fresh { ", new context" } else { "" },
                    match case.store {
                        Keeps::Everything => "",
                        Keeps::Last100 => ", store at its bound",
                        Keeps::Nothing => ", no store",
                    }
                );
                if only.as_deref().is_some_and(|only| only != label) {
                    continue;
                }
                // Warm up connections, tables and caches.
                for _ in 0..20 {
                    case.raw(stream).await;
                    case.provider(stream).await;
                    case.turn(stream).await;
                }
                let (mut raw, mut provider, mut turn) = (Vec::new(), Vec::new(), Vec::new());
                for round in 0..rounds {
                    for k in 0..3 {
                        match (round + k) % 3 {
                            0 => raw.push(time(case.raw(stream)).await),
                            1 => provider.push(time(case.provider(stream)).await),
                            _ => turn.push(time(case.turn(stream)).await),
                        }
                    }
                }
                let (raw, provider, turn) = (p50(&mut raw), p50(&mut provider), p50(&mut turn));
                println!(
                    "{:<36} {:>8.0}µs {:>8.0}µs {:>8.0}µs {:>13.3}x {:>9.3}x",
                    label,
                    raw.as_secs_f64() * 1e6,
                    provider.as_secs_f64() * 1e6,
                    turn.as_secs_f64() * 1e6,
                    provider.as_secs_f64() / raw.as_secs_f64(),
                    turn.as_secs_f64() / raw.as_secs_f64(),
                );
            }
        }
    });
    if only.as_deref().is_none_or(|only| only == IN_PROCESS) {
        in_process(rounds.saturating_mul(20).max(1));
    }
}

/// The label of the last measure, for `APTIX_BENCH_ONLY`.
const IN_PROCESS: &str = "in process";

/// A provider that answers from memory, doing what the HTTP provider does around the
/// socket: encode the request, decode the reply body and keep it as `raw_json`.
struct FromMemory {
    body: String,
}

#[async_trait]
impl ResponsesProvider for FromMemory {
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        std::hint::black_box(serde_json::to_vec(request).unwrap());
        let raw_json = self.body.clone();
        let response: Response = serde_json::from_str(&raw_json).unwrap();
        let mut reply = ProviderResponse::new(response, ReplyMeta::synthetic());
        reply.raw_json = Some(raw_json);
        Ok(reply)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

/// The small turn's own CPU: `turns` turns (each a new session) on one thread with
/// [`FromMemory`] as the provider, against as many calls of that provider alone (means:
/// nothing waits here).
fn in_process(turns: usize) {
    let body = String::from_utf8(replies(1_000, 10).json.to_vec()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let settings = OrchestratorConfig {
        context_token_budget: 20_000,
        ..OrchestratorConfig::default()
    };
    let orchestrator = Orchestrator::builder(
        Arc::new(FromMemory { body: body.clone() }),
        // A store in its steady state: it keeps the last 100 sessions, so the memory
        // of evicted ones is reused instead of the kernel handing out (and clearing)
        // new pages for every turn.
        Arc::new(InMemorySessionStore::with_limits(MemoryStoreLimits {
            max_sessions: 100,
            ..MemoryStoreLimits::default()
        })),
    )
    .retriever(Arc::new(TwentyChunks {
        chunks: chunks(),
        fresh: false,
        calls: AtomicU64::new(0),
    }))
    .config(settings)
    .build()
    .unwrap();
    let provider = FromMemory { body };
    let session = |n: u64| {
        let mut request = request();
        if let AgentExecuteRequest::UserTurn(turn) = &mut request {
            turn.session_id = aptix::contract::SessionId::new(format!("p{n}")).unwrap();
        }
        request
    };
    runtime.block_on(async {
        let typed_body = orchestrator.dry_run(&request()).await.unwrap();
        let mut n = 0u64;
        for _ in 0..500 {
            n += 1;
            orchestrator.execute(session(n)).await.unwrap();
            provider.create(&typed_body).await.unwrap();
        }
        let started = Instant::now();
        for _ in 0..turns {
            std::hint::black_box(provider.create(&typed_body).await.unwrap());
        }
        let alone = started.elapsed().as_secs_f64() * 1e6 / turns as f64;
        let started = Instant::now();
        for _ in 0..turns {
            n += 1;
            std::hint::black_box(orchestrator.execute(session(n)).await.unwrap());
        }
        let turn = started.elapsed().as_secs_f64() * 1e6 / turns as f64;
        println!(
            "\n{IN_PROCESS} (small, one thread, {turns} turns): provider alone {alone:.1}µs, \
             turn {turn:.1}µs, the turn's own CPU {:.1}µs",
            turn - alone
        );
    });
}

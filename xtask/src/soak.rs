//! `cargo xtask soak [turns] [stateless|stateful] [seed] [window told]`: one long session through the
//! real HTTP client and the orchestrator against a loopback fake of the Responses API
//! with a small context window, while a tenth of the streams are cut at a random event.
//!
//! The fake counts a request's input as its JSON bytes / 4 (plus, for a chained
//! request, what the stored response's conversation held) and answers
//! `context_length_exceeded` past its window, as OpenAI does. Every third turn the model
//! first calls a server tool, so the history holds call/output pairs to keep together.
//! `stateless` is a server without stored state or `/responses/compact` (the session is
//! replayed and compacted by a summary call); `stateful` chains `previous_response_id`
//! and compacts through `/responses/compact`. Telling the orchestrator a larger window
//! than the fake's (the fourth argument; default the same, 4,000) makes the fake
//! answer `context_length_exceeded` before the threshold is reached, so each overflow
//! compacts and retries.
//!
//! Checked after every turn: it ended with its complete answer (exactly the text the
//! fake made for that turn) or with an error envelope that has a message. At the end:
//! each answered turn's answer is in the session exactly once (in the history or in the
//! items a compaction replaced), none of a failed turn, the history needs no repair,
//! and compactions happened. Prints turns ok/failed, compactions, stream retries, the
//! fake's overflows, the size of the session a turn loads and commits (the history and
//! the compaction records, without the items they replaced, which the store keeps
//! apart), the size of those items, and the wall time; fails when a check does not
//! hold.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use aptix_client::{Capabilities, OpenAiConfig, OpenAiProvider, RetryPolicy};
use aptix_mapping::StreamDelta;
use aptix_model::contract::{AgentExecuteRequest, Kind};
use aptix_model::wire::{ContentPart, InputItem, MessageContent, Role};
use aptix_orchestrator::{
    InMemorySessionStore, Orchestrator, OrchestratorConfig, ServerTool, SessionStore,
    StreamRecovery,
};
use async_trait::async_trait;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The fake's context window (its own count) and the one the orchestrator is told.
const WINDOW: u64 = 4_000;
/// A tenth of the streams are cut.
const CUT_PERCENT: u64 = 10;
const SESSION: &str = "soak";

/// A small deterministic generator (xorshift64*), shared by the fake's handlers.
struct Rng(Mutex<u64>);

impl Rng {
    fn below(&self, n: u64) -> u64 {
        let mut state = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let mut x = *state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *state = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// The fake Responses API.
struct Fake {
    rng: Rng,
    next_id: AtomicU64,
    /// What each stored response's conversation holds, in the fake's tokens.
    contexts: Mutex<HashMap<String, u64>>,
    /// The question each response answered, for a chained tool round.
    questions: Mutex<HashMap<String, String>>,
    cuts: AtomicU64,
    overflows: AtomicU64,
    summaries: AtomicU64,
    compacts: AtomicU64,
}

/// The answer the fake gives to an instruction: what a turn must end with, once.
fn answer_for(instruction: &str) -> String {
    let marker = instruction.split(':').next().unwrap_or_default();
    format!(
        "[{marker}] done. {}",
        "The session stays valid while its context is compacted. ".repeat(6)
    )
}

fn text_of(item: &Value) -> String {
    match &item["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

fn sse(events: &[Value]) -> Vec<Vec<u8>> {
    events
        .iter()
        .enumerate()
        .map(|(number, event)| {
            let mut event = event.clone();
            event["sequence_number"] = json!(number);
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            format!("event: {kind}\ndata: {event}\n\n").into_bytes()
        })
        .collect()
}

/// The events of a response whose output is `item`.
fn events_for(id: &str, item: &Value, usage: &Value) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": id, "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
    ];
    if item["type"] == "message" {
        let text = text_of(item);
        events.push(
            json!({"type": "response.content_part.added", "item_id": "msg_1",
            "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": ""}}),
        );
        // The text in pieces of about 40 bytes, so a cut can fall mid-answer.
        let mut piece = String::new();
        for word in text.split_inclusive(' ') {
            piece.push_str(word);
            if piece.len() > 40 {
                events.push(
                    json!({"type": "response.output_text.delta", "item_id": "msg_1",
                    "output_index": 0, "content_index": 0, "delta": piece}),
                );
                piece = String::new();
            }
        }
        if !piece.is_empty() {
            events.push(
                json!({"type": "response.output_text.delta", "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "delta": piece}),
            );
        }
        events.push(
            json!({"type": "response.output_text.done", "item_id": "msg_1",
            "output_index": 0, "content_index": 0, "text": text}),
        );
    }
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    events.push(json!({"type": "response.completed", "response": {
        "id": id, "object": "response", "status": "completed", "model": "soak-model",
        "output": [item], "usage": usage}}));
    events
}

impl Fake {
    fn tokens(&self, body: &Value) -> u64 {
        let own = (body["input"].to_string().len() + body["tools"].to_string().len()) as u64 / 4;
        let chained = body["previous_response_id"].as_str().map_or(0, |id| {
            self.contexts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(id)
                .copied()
                .unwrap_or(0)
        });
        own + chained
    }

    fn overflow(&self, tokens: u64) -> Response {
        self.overflows.fetch_add(1, Ordering::Relaxed);
        let body = json!({"error": {
            "message": format!("Your input exceeds the context window of this model: {tokens} tokens of {WINDOW}."),
            "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}});
        (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
    }

    fn responses(&self, body: Value) -> Response {
        let tokens = self.tokens(&body);
        if tokens > WINDOW {
            return self.overflow(tokens);
        }
        let id = format!("resp_{}", self.next_id.fetch_add(1, Ordering::Relaxed));
        let input = body["input"].as_array().cloned().unwrap_or_default();
        let first = input.first().map(text_of).unwrap_or_default();
        if first.contains("handover note") {
            self.summaries.fetch_add(1, Ordering::Relaxed);
            let note = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "Handover: the user asks numbered questions; each was answered."}]});
            let reply = json!({"id": id, "object": "response", "status": "completed", "model": "soak-model",
                "output": [note], "usage": {"input_tokens": tokens, "output_tokens": 20, "total_tokens": tokens + 20}});
            return axum::Json(reply).into_response();
        }
        // The turn's question: in the request's last user message that asks one, or,
        // for a chained tool round, in the conversation it continues.
        let asked = input.iter().enumerate().rev().find_map(|(index, item)| {
            let text = text_of(item);
            let start = text.find("Question ")?;
            (item["role"] == "user").then(|| {
                let rest = &text[start..];
                let end = rest.find('?').map_or(rest.len(), |end| end + 1);
                (index, rest[..end].to_owned())
            })
        });
        let inherited = body["previous_response_id"].as_str().and_then(|id| {
            self.questions
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(id)
                .cloned()
        });
        let (answered_since, question) = match asked {
            Some((index, question)) => (
                input[index + 1..]
                    .iter()
                    .any(|item| item["type"] == "function_call_output"),
                question,
            ),
            None => (true, inherited.unwrap_or_default()),
        };
        self.questions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), question.clone());
        let number: u64 = question
            .strip_prefix("Question ")
            .and_then(|rest| rest.split(':').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let item = if !answered_since && number.is_multiple_of(3) {
            json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
                   "name": "lookup", "arguments": "{}", "status": "completed"})
        } else {
            json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": answer_for(&question), "annotations": []}]})
        };
        let output_tokens = item.to_string().len() as u64 / 4;
        self.contexts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone(), tokens + output_tokens);
        let usage = json!({"input_tokens": tokens, "output_tokens": output_tokens,
                           "total_tokens": tokens + output_tokens});
        let chunks = sse(&events_for(&id, &item, &usage));
        let cut = (self.rng.below(100) < CUT_PERCENT).then(|| self.rng.below(chunks.len() as u64));
        if cut.is_some() {
            self.cuts.fetch_add(1, Ordering::Relaxed);
        }
        // Each chunk is its own write (a pause before each lets it go out), so a cut
        // falls after exactly the events before it: before the head for a cut at 0.
        let stream = futures_util::stream::unfold(
            (chunks.into_iter().enumerate(), cut, false),
            |(mut chunks, cut, ended)| async move {
                if ended {
                    return None;
                }
                tokio::time::sleep(Duration::from_micros(200)).await;
                let (index, chunk) = chunks.next()?;
                if cut == Some(index as u64) {
                    let error = std::io::Error::other("cut by the soak");
                    return Some((Err(error), (chunks, cut, true)));
                }
                Some((Ok(Bytes::from(chunk)), (chunks, cut, false)))
            },
        );
        (
            [(header::CONTENT_TYPE, "text/event-stream")],
            Body::from_stream(stream),
        )
            .into_response()
    }

    fn compact(&self, body: Value) -> Response {
        self.compacts.fetch_add(1, Ordering::Relaxed);
        let input = body["input"].as_array().cloned().unwrap_or_default();
        let summary = format!("{} items compacted", input.len());
        let reply = json!({"id": "cmp_resp", "object": "response.compaction", "created_at": 1,
            "output": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Earlier numbered questions."}]},
                {"type": "compaction", "id": format!("cmp_{}", self.next_id.fetch_add(1, Ordering::Relaxed)), "encrypted_content": summary}
            ],
            "usage": {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}});
        axum::Json(reply).into_response()
    }
}

async fn start(fake: Arc<Fake>) -> Result<String> {
    use axum::routing::post;
    let responses = Arc::clone(&fake);
    let app = axum::Router::new()
        .route(
            "/v1/responses",
            post(move |body: axum::Json<Value>| {
                let fake = Arc::clone(&responses);
                async move { fake.responses(body.0) }
            }),
        )
        .route(
            "/v1/responses/compact",
            post(move |body: axum::Json<Value>| {
                let fake = Arc::clone(&fake);
                async move { fake.compact(body.0) }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(url)
}

/// A server tool with a few hundred bytes of output.
struct Lookup;

#[async_trait]
impl ServerTool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Looks something up in the workspace."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    async fn execute(&self, _arguments_json: &str) -> Result<String, String> {
        Ok(json!({"found": "a line of the workspace that matters. ".repeat(8)}).to_string())
    }
}

fn item_text(item: &InputItem) -> String {
    match item {
        InputItem::Message(message) | InputItem::EasyMessage(message) => match &message.content {
            MessageContent::Text(text) => text.clone(),
            MessageContent::Parts(parts) => parts
                .iter()
                .filter_map(|part| match part {
                    ContentPart::OutputText(text) => Some(text.text.as_str()),
                    ContentPart::InputText { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        },
        _ => String::new(),
    }
}

fn is_assistant(item: &InputItem) -> bool {
    matches!(item, InputItem::Message(m) | InputItem::EasyMessage(m) if m.role == Role::Assistant)
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    let turns: usize = args
        .first()
        .map_or(Ok(200), |n| n.parse())
        .context("turns")?;
    let stateful = match args.get(1).map(String::as_str) {
        None | Some("stateless") => false,
        Some("stateful") => true,
        Some(other) => bail!("mode {other:?} is neither stateless nor stateful"),
    };
    let seed: u64 = args
        .get(2)
        .map_or(Ok(0x5eed), |n| n.parse())
        .context("seed")?;
    let told: u64 = args
        .get(3)
        .map_or(Ok(WINDOW), |n| n.parse())
        .context("window told")?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(soak(turns, stateful, seed, told))
}

async fn soak(turns: usize, stateful: bool, seed: u64, told: u64) -> Result<()> {
    let fake = Arc::new(Fake {
        rng: Rng(Mutex::new(seed.max(1))),
        next_id: AtomicU64::new(1),
        contexts: Mutex::new(HashMap::new()),
        questions: Mutex::new(HashMap::new()),
        cuts: AtomicU64::new(0),
        overflows: AtomicU64::new(0),
        summaries: AtomicU64::new(0),
        compacts: AtomicU64::new(0),
    });
    let url = start(Arc::clone(&fake)).await?;
    let capabilities = if stateful {
        Capabilities::openai_responses()
    } else {
        Capabilities::stateless_responses()
    };
    let client = OpenAiConfig::builder()
        .base_url(url)
        .api_key("sk-soak-not-a-key")
        .capabilities(capabilities)
        // The client's own retries (a reset before the reply's head) as shipped, with
        // short waits.
        .retry(RetryPolicy {
            initial_backoff: Duration::from_millis(2),
            max_backoff: Duration::from_millis(16),
            jitter: false,
            ..RetryPolicy::default()
        })
        .stream_idle_timeout(Some(Duration::from_secs(5)))
        .build()?;
    let provider = Arc::new(OpenAiProvider::new(client)?);
    let store = Arc::new(InMemorySessionStore::new());
    let orchestrator = Orchestrator::builder(provider, Arc::clone(&store) as Arc<dyn SessionStore>)
        .server_tool(Arc::new(Lookup))
        .config(OrchestratorConfig {
            context_window: Some(told),
            stream_recovery: StreamRecovery {
                max_attempts: 5,
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(8),
                jitter: false,
            },
            ..OrchestratorConfig::default()
        })
        .build()?;

    let started = Instant::now();
    let (mut ok, mut failed, mut retries, mut noticed) = (0usize, 0usize, 0u64, 0u64);
    let mut answered = Vec::new();
    let mut problems = Vec::new();
    for n in 1..=turns {
        let instruction = format!("Question {n}: what is the state of part {n} of the work?");
        let request = AgentExecuteRequest::from_json_value(&json!({
            "sessionId": SESSION, "turnId": format!("t{n}"), "instruction": instruction
        }))?;
        let counts = Arc::new(Mutex::new((0u64, 0u64)));
        let seen = Arc::clone(&counts);
        let mut sink = move |delta: &StreamDelta| {
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            match delta {
                StreamDelta::Retrying { .. } => seen.0 += 1,
                StreamDelta::Compacted { .. } => seen.1 += 1,
                _ => {}
            }
        };
        let envelope = orchestrator.execute_streaming(request, &mut sink).await?;
        let (turn_retries, turn_compactions) = *counts.lock().unwrap_or_else(|p| p.into_inner());
        retries += turn_retries;
        noticed += turn_compactions;
        match envelope.kind {
            Kind::Error => {
                failed += 1;
                let message = envelope.error_message.unwrap_or_default();
                if message.trim().is_empty() {
                    problems.push(format!("turn {n} failed without a message"));
                }
                eprintln!("soak: turn {n} failed: {message}");
            }
            _ => {
                ok += 1;
                let expected = answer_for(&instruction);
                if envelope.text.as_deref() != Some(expected.as_str()) {
                    problems.push(format!(
                        "turn {n} answered {:?}, not its complete answer",
                        envelope.text
                    ));
                }
                answered.push(n);
            }
        }
    }
    let elapsed = started.elapsed();

    // What the next turn would load, and the session with every replaced item.
    let loaded = store
        .load(SESSION)
        .await?
        .context("the session is not in the store")?
        .value;
    let state = store
        .load_full(SESSION)
        .await?
        .context("the session is not in the store")?
        .value;
    let (_, repairs) = aptix_request::normalize_history(state.history.clone(), &[]);
    if !repairs.is_empty() {
        problems.push(format!("the history needs repairs: {repairs:?}"));
    }
    if state.compactions.is_empty() {
        problems.push("no compaction happened".into());
    }
    // Each answered turn's answer once in the session (history or replaced items).
    let everything: Vec<&InputItem> = state
        .history
        .iter()
        .chain(state.compactions.iter().flat_map(|c| c.replaced.iter()))
        .filter(|item| is_assistant(item))
        .collect();
    for n in 1..=turns {
        let marker = format!("[Question {n}]");
        let copies = everything
            .iter()
            .filter(|item| item_text(item).starts_with(&marker))
            .count();
        let want = usize::from(answered.contains(&n));
        if copies != want {
            problems.push(format!(
                "turn {n}'s answer is in the session {copies} time(s), not {want}"
            ));
        }
    }
    let by_reason = |reason: &str| {
        state
            .compactions
            .iter()
            .filter(|c| c.reason.as_str() == reason)
            .count()
    };
    println!(
        "soak ({}): {turns} turns in one session, window {WINDOW} tokens (the orchestrator is told {told}), {CUT_PERCENT}% of streams cut, seed {seed}",
        if stateful {
            "stateful, /responses/compact"
        } else {
            "stateless, summary compaction"
        }
    );
    println!("  turns ok       {ok}");
    println!("  turns failed   {failed}");
    println!(
        "  compactions    {} ({} at the threshold, {} after context_length_exceeded; {} notices streamed)",
        state.compactions.len(),
        by_reason("threshold"),
        by_reason("overflow"),
        noticed
    );
    println!(
        "  fake           {} streams cut, {} retries, {} overflows answered, {} summary calls, {} compact calls",
        fake.cuts.load(Ordering::Relaxed),
        retries,
        fake.overflows.load(Ordering::Relaxed),
        fake.summaries.load(Ordering::Relaxed),
        fake.compacts.load(Ordering::Relaxed)
    );
    println!(
        "  history        {} items now, {} items replaced in all",
        state.history.len(),
        state
            .compactions
            .iter()
            .map(|c| c.replaced.len())
            .sum::<usize>()
    );
    // What every turn of this session loads and stores, and what the store keeps apart.
    let bytes = |json: serde_json::Result<Vec<u8>>| json.map_or(0, |json| json.len());
    let replaced: Vec<&InputItem> = state
        .compactions
        .iter()
        .flat_map(|c| c.replaced.iter())
        .collect();
    println!(
        "  loaded state   {} bytes of JSON a turn: history {}, compaction records {}; replaced items kept apart {}",
        bytes(serde_json::to_vec(&loaded)),
        bytes(serde_json::to_vec(&loaded.history)),
        bytes(serde_json::to_vec(&loaded.compactions)),
        bytes(serde_json::to_vec(&replaced))
    );
    println!("  wall time      {elapsed:.2?}");
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("soak: {problem}");
        }
        bail!("{} check(s) failed", problems.len());
    }
    println!(
        "  checks         every turn complete or a clear error, none duplicated, history valid"
    );
    Ok(())
}

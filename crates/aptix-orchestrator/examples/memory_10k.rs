//! Memory held by the in-memory session store after 10,000 turns, as the growth of the
//! process's resident set (Linux `/proc/self/statm`). Each scenario runs in its own
//! process so that one does not inherit another's heap:
//!
//! ```sh
//! cargo run --release -p aptix-orchestrator --example memory_10k -- sessions   # 10,000 sessions x 1 turn, default limits
//! cargo run --release -p aptix-orchestrator --example memory_10k -- bounded    # the same with max_sessions = 1,000
//! cargo run --release -p aptix-orchestrator --example memory_10k -- one        # 1 session x 10,000 turns
//! ```
//!
//! Every reply is the same ~1 KB answer (its body is kept as the envelope's
//! `rawResponseJson`).

use std::sync::Arc;

use aptix_client::{Capabilities, ClientError, ProviderResponse, ReplyMeta, ResponsesProvider};
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::{CreateResponseRequest, Response};
use aptix_orchestrator::{InMemorySessionStore, MemoryStoreLimits, Orchestrator};
use async_trait::async_trait;

const TURNS: usize = 10_000;

struct Fixed(Response);

#[async_trait]
impl ResponsesProvider for Fixed {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        Ok(ProviderResponse::new(
            self.0.clone(),
            ReplyMeta::synthetic(),
        ))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|text| text.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scenario = std::env::args().nth(1).unwrap_or_else(|| "sessions".into());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run(&scenario))
}

async fn run(scenario: &str) -> Result<(), Box<dyn std::error::Error>> {
    let text = "The answer, at some length. ".repeat(36);
    let response: Response = serde_json::from_value(serde_json::json!({
        "id": "resp_1", "status": "completed", "model": "gpt-test",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                    "content": [{"type": "output_text", "text": text}]}],
        "usage": {"input_tokens": 100, "output_tokens": 200, "total_tokens": 300}
    }))?;
    let limits = match scenario {
        "bounded" => MemoryStoreLimits {
            max_sessions: 1_000,
            ..MemoryStoreLimits::default()
        },
        _ => MemoryStoreLimits::default(),
    };
    let store = Arc::new(InMemorySessionStore::with_limits(limits));
    let orchestrator = Orchestrator::builder(Arc::new(Fixed(response)), store.clone()).build()?;

    // One turn first, so that one-time allocations (tokenizer tables, runtime) are
    // in the baseline.
    let warm = AgentExecuteRequest::from_json_value(
        &serde_json::json!({"sessionId": "warm", "turnId": "t0", "instruction": "Warm up"}),
    )?;
    orchestrator.execute(warm).await?;
    let before = rss_bytes();
    for i in 0..TURNS {
        let session = match scenario {
            "one" => "s".to_owned(),
            _ => format!("s{i}"),
        };
        let request = AgentExecuteRequest::from_json_value(&serde_json::json!({
            "sessionId": session, "turnId": format!("t{i}"), "instruction": "What does lib.rs declare?"
        }))?;
        orchestrator.execute(request).await?;
    }
    let after = rss_bytes();
    let grown = after.saturating_sub(before);
    println!(
        "scenario {scenario}: {TURNS} turns, {} sessions held, RSS {:.1} MiB -> {:.1} MiB (+{:.1} MiB, {:.0} bytes per turn)",
        store.session_count(),
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        grown as f64 / 1048576.0,
        grown as f64 / TURNS as f64,
    );
    Ok(())
}

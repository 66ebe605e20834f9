//! The `[CONTEXT]` rules hold whatever the retriever returns: a custom retriever that
//! ignores the token budget and the scope is still held to both by the orchestrator
//! (`aptix_rag::select_context`), and attachments count against the same budget.

use std::sync::Arc;

use aptix_client::FakeProvider;
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::{Input, InputItem, MessageContent, Response};
use aptix_orchestrator::{InMemorySessionStore, Orchestrator, OrchestratorConfig};
use aptix_rag::{
    Chunk, ChunkId, LineSpan, RagError, Retrieval, RetrievalQuery, Retriever, ScoredChunk,
    TokenCounter,
};
use async_trait::async_trait;
use serde_json::json;

/// Returns `count` chunks of about 600 tokens each, half under `src/` and half under
/// `docs/`, whatever it is asked.
struct Careless {
    count: usize,
}

#[async_trait]
impl Retriever for Careless {
    async fn retrieve(&self, _query: &RetrievalQuery) -> Result<Retrieval, RagError> {
        let chunks = (0..self.count)
            .map(|n| {
                let dir = if n % 2 == 0 { "src" } else { "docs" };
                ScoredChunk {
                    chunk: Chunk {
                        id: ChunkId::new(format!("c{n}")),
                        path: format!("{dir}/file_{n}.rs"),
                        lines: LineSpan::new(1, 120).unwrap(),
                        language: "rust".into(),
                        content: format!("fn item_{n}() {{ let value = {n}; }}\n").repeat(120),
                        metadata: Default::default(),
                    },
                    score: 100.0 - n as f32,
                }
            })
            .collect();
        Ok(Retrieval {
            chunks,
            ..Retrieval::default()
        })
    }
}

/// The user message's text parts of the one request the turn sent.
async fn sent_context(
    budget: usize,
    request: serde_json::Value,
) -> (String, aptix_model::contract::AgentExecuteResponse) {
    let provider = Arc::new(FakeProvider::new());
    let mut reply = Response::with_id("resp_1");
    reply.status = Some(aptix_model::wire::ResponseStatus::Completed);
    provider.push_response(reply);
    let config = OrchestratorConfig {
        context_token_budget: budget,
        ..OrchestratorConfig::default()
    };
    let orchestrator =
        Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
            .retriever(Arc::new(Careless { count: 30 }))
            .config(config)
            .build()
            .unwrap();
    let envelope = orchestrator
        .execute(AgentExecuteRequest::from_json_value(&request).unwrap())
        .await
        .unwrap();
    let sent = provider.requests().pop().unwrap();
    let Input::Items(items) = &sent.input else {
        panic!("{:?}", sent.input)
    };
    let mut text = String::new();
    for item in items {
        if let InputItem::Message(message) = item
            && let MessageContent::Parts(parts) = &message.content
        {
            for part in parts {
                if let Some(piece) = serde_json::to_value(part).unwrap()["text"].as_str() {
                    text.push_str(piece);
                }
            }
        }
    }
    (text, envelope)
}

fn context_block(text: &str) -> &str {
    let start = text.find("[CONTEXT]").expect("a [CONTEXT] block was sent");
    &text[start..]
}

#[tokio::test]
async fn a_retriever_returning_far_more_than_the_budget_is_packed_to_it() {
    let (text, envelope) = sent_context(
        2_000,
        json!({"sessionId": "s1", "turnId": "t1", "instruction": "where is item_3"}),
    )
    .await;
    let block = context_block(&text);
    let counter = TokenCounter::o200k().unwrap();
    let chunks = block.matches("=== CHUNK").count();
    assert!((1..30).contains(&chunks), "{chunks} chunks sent");
    // The block is the rest of the message from `[CONTEXT]` on; it may be followed by
    // nothing else here, so its tokens bound the context.
    assert!(
        counter.count(block) <= 2_000 + 50,
        "{} tokens",
        counter.count(block)
    );
    assert!(
        envelope
            .warnings
            .iter()
            .any(|warning| warning.contains("left out") && warning.contains("2000 tokens")),
        "{:?}",
        envelope.warnings
    );
}

#[tokio::test]
async fn a_retriever_that_ignores_the_scope_is_filtered_by_it() {
    let (text, _) = sent_context(
        100_000,
        json!({
            "sessionId": "s1", "turnId": "t1", "instruction": "where is item_3",
            "ragScope": {"conditions": [{"key": "path", "operator": "contains", "values": ["src/"]}]}
        }),
    )
    .await;
    let block = context_block(&text);
    assert!(block.contains("src/file_0.rs"), "{block}");
    assert!(
        !block.contains("docs/"),
        "a chunk outside the scope was sent"
    );
}

#[tokio::test]
async fn attachments_count_against_the_budget_and_come_first() {
    let attachment = "fn attached() {}\n".repeat(20);
    let (text, _) = sent_context(
        1_500,
        json!({
            "sessionId": "s1", "turnId": "t1", "instruction": "explain the attached file",
            "files": [{"path": "notes/attached.rs", "content": attachment}]
        }),
    )
    .await;
    let block = context_block(&text);
    let first = block.find("=== CHUNK 1 ===").unwrap();
    let attached = block
        .find("notes/attached.rs")
        .expect("the attachment was sent");
    assert!(attached > first && attached < block.find("=== CHUNK 2 ===").unwrap_or(block.len()));
    let counter = TokenCounter::o200k().unwrap();
    assert!(
        counter.count(block) <= 1_500 + 50,
        "{} tokens",
        counter.count(block)
    );
}

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

/// An orchestrator over [`Careless`] with a context budget of `budget` tokens, and its
/// provider, which answers each of `replies` (response ids) in turn with an empty
/// completed response.
fn careless_turns(budget: usize, replies: &[&str]) -> (Arc<FakeProvider>, Orchestrator) {
    let provider = Arc::new(FakeProvider::new());
    for id in replies {
        let mut reply = Response::with_id(*id);
        reply.status = Some(aptix_model::wire::ResponseStatus::Completed);
        provider.push_response(reply);
    }
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
    (provider, orchestrator)
}

/// The user message's text parts of the one request the turn sent.
async fn sent_context(
    budget: usize,
    request: serde_json::Value,
) -> (String, aptix_model::contract::AgentExecuteResponse) {
    let (provider, orchestrator) = careless_turns(budget, &["resp_1"]);
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

/// The `[CONTEXT]` chunk ids (`c<n>`, by their `item_<n>` text) of a request's last user
/// message.
fn chunk_numbers_sent(request: &aptix_model::wire::CreateResponseRequest) -> Vec<usize> {
    let Input::Items(items) = &request.input else {
        panic!("{:?}", request.input)
    };
    let Some(InputItem::Message(message)) = items.last() else {
        panic!("{items:?}")
    };
    let text = serde_json::to_string(&message.content).unwrap();
    let Some(start) = text.find("[CONTEXT]") else {
        return Vec::new();
    };
    let mut numbers: Vec<usize> = text[start..]
        .split("fn item_")
        .skip(1)
        .filter_map(|rest| rest.split("()").next()?.parse().ok())
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    numbers
}

#[tokio::test]
async fn a_follow_up_is_not_sent_the_code_the_conversation_holds_already() {
    // A follow-up question retrieves much of what the first did: sent again, the same
    // chunks cost thousands of tokens a turn, and crowd out what the follow-up needs.
    let (provider, orchestrator) = careless_turns(4_000, &["resp_1", "resp_2"]);
    let ask = |turn: &str| {
        AgentExecuteRequest::from_json_value(
            &json!({"sessionId": "s1", "turnId": turn, "instruction": "where is item_3"}),
        )
        .unwrap()
    };
    let first = orchestrator.execute(ask("t1")).await.unwrap();
    let second = orchestrator.execute(ask("t2")).await.unwrap();
    let requests = provider.requests();
    let sent_first = chunk_numbers_sent(&requests[0]);
    let sent_second = chunk_numbers_sent(&requests[1]);
    assert!(!sent_first.is_empty());
    // The second turn's budget went to chunks the first did not send.
    assert!(!sent_second.is_empty(), "{sent_second:?}");
    assert!(
        sent_second.iter().all(|n| !sent_first.contains(n)),
        "{sent_first:?} then {sent_second:?}"
    );
    // What the conversation holds is still a source of the follow-up's answer.
    let first_sources: Vec<&str> = first.sources.iter().map(|s| s.path.as_str()).collect();
    let second_sources: Vec<&str> = second.sources.iter().map(|s| s.path.as_str()).collect();
    assert!(
        first_sources
            .iter()
            .all(|path| second_sources.contains(path)),
        "{first_sources:?} / {second_sources:?}"
    );
}

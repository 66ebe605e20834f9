//! Files the user attaches always reach the model: the context budget is for what
//! retrieval adds, and an attachment is cut (with a warning saying which lines the model
//! got) only where the attachments together would pass half of the model's context
//! window.

use std::sync::Arc;

use aptix_client::FakeProvider;
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::Response;
use aptix_orchestrator::{InMemorySessionStore, Orchestrator, OrchestratorConfig};

fn answer() -> Response {
    serde_json::from_value(serde_json::json!({
        "id": "resp_1", "status": "completed", "model": "gpt-test",
        "output": [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Read."}]}]
    }))
    .unwrap()
}

/// A file of `lines` numbered lines.
fn file(lines: usize) -> String {
    (1..=lines)
        .map(|line| format!("let value_{line} = compute_something({line});"))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn sent_with(config: OrchestratorConfig, files: serde_json::Value) -> (String, Vec<String>) {
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(answer());
    let orchestrator =
        Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
            .config(config)
            .build()
            .unwrap();
    let request = AgentExecuteRequest::from_json_slice(
        serde_json::json!({"sessionId": "s", "turnId": "t", "instruction": "Review these",
                           "files": files})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let envelope = orchestrator.execute(request).await.unwrap();
    let sent = serde_json::to_string(&provider.requests()[0].input).unwrap();
    (sent, envelope.warnings)
}

#[tokio::test]
async fn an_attachment_larger_than_the_context_budget_is_sent_whole() {
    // ~9,000 tokens against a 1,000-token budget: it used to be left out, with only
    // "1 of 1 context chunk(s) were left out" to say so.
    let config = OrchestratorConfig {
        context_token_budget: 1_000,
        ..OrchestratorConfig::default()
    };
    let big = file(600);
    let (sent, warnings) = sent_with(
        config,
        serde_json::json!([{"path": "src/big.rs", "content": big}]),
    )
    .await;
    assert!(sent.contains("let value_1 = "), "{warnings:?}");
    assert!(sent.contains("let value_600 = "), "{warnings:?}");
    assert!(sent.contains("Lines: 1-600"), "{sent:.400}");
    assert!(
        !warnings.iter().any(|warning| warning.contains("left out")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn attachments_past_half_the_context_window_are_cut_at_a_line_and_said_so() {
    let config = OrchestratorConfig {
        context_window: Some(4_000),
        ..OrchestratorConfig::default()
    };
    let (sent, warnings) = sent_with(
        config,
        serde_json::json!([
            {"path": "src/first.rs", "content": file(600)},
            {"path": "src/second.rs", "content": file(10)},
        ]),
    )
    .await;
    assert!(sent.contains("let value_1 = "));
    assert!(!sent.contains("let value_600 = "));
    let cut = warnings
        .iter()
        .find(|warning| warning.starts_with("file input src/first.rs was cut to lines 1-"))
        .unwrap_or_else(|| panic!("{warnings:?}"));
    assert!(
        cut.contains("of 600") && cut.contains("2000 tokens"),
        "{cut}"
    );
    // The lines the warning names are the ones sent, whole.
    let last: usize = cut
        .trim_start_matches("file input src/first.rs was cut to lines 1-")
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(sent.contains(&format!("let value_{last} = compute_something({last});")));
    assert!(!sent.contains(&format!("let value_{} = ", last + 1)));
    assert!(sent.contains(&format!("Lines: 1-{last}")));
    assert!(
        warnings
            .iter()
            .any(|warning| warning.starts_with("file input src/second.rs was left out")),
        "{warnings:?}"
    );
}

#[tokio::test]
async fn a_selection_is_shown_at_its_lines_and_two_of_one_file_are_both_sent() {
    // An editor sends a selection as `path#L<start>-<end>` (GitHub's form).
    let (sent, warnings) = sent_with(
        OrchestratorConfig::default(),
        serde_json::json!([
            {"path": "src/five.rs#L3-4", "content": "let third = 3;\nlet fourth = 4;"},
            {"path": "src/five.rs#L5-5", "content": "let fifth = 5;"},
        ]),
    )
    .await;
    assert!(warnings.is_empty(), "{warnings:?}");
    for expected in [
        "Path: src/five.rs",
        "Lines: 3-4",
        "Lines: 5-5",
        "let third = 3;",
        "let fifth = 5;",
    ] {
        assert!(
            sent.contains(expected),
            "{expected} missing from {sent:.2000}"
        );
    }
    assert!(!sent.contains("Path: src/five.rs#L"), "{sent:.2000}");
}

#[tokio::test]
async fn overlapping_selections_of_one_file_are_both_sent() {
    // Two selections sharing a line were deduplicated as retrieved chunks are, and the
    // second was dropped with a warning blaming the budget (found in review).
    let (sent, warnings) = sent_with(
        OrchestratorConfig::default(),
        serde_json::json!([
            {"path": "src/five.rs#L3-5", "content": "let third = 3;\nlet fourth = 4;\nlet fifth = 5;"},
            {"path": "src/five.rs#L4-6", "content": "let fourth = 4;\nlet fifth = 5;\nlet sixth = 6;"},
        ]),
    )
    .await;
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(
        sent.contains("Lines: 3-5") && sent.contains("Lines: 4-6"),
        "{sent:.2000}"
    );
    assert!(sent.contains("let sixth = 6;"));
}

/// A retriever that found `found` chunks, kept the first `kept` of them (as the index
/// keeps what fits the budget) and says how many it left out.
struct Packing {
    kept: usize,
    found: usize,
}

#[async_trait::async_trait]
impl aptix_rag::Retriever for Packing {
    async fn retrieve(
        &self,
        _query: &aptix_rag::RetrievalQuery,
    ) -> Result<aptix_rag::Retrieval, aptix_rag::RagError> {
        let chunks = (0..self.kept)
            .map(|n| aptix_rag::ScoredChunk {
                chunk: aptix_rag::Chunk {
                    id: aptix_rag::ChunkId::new(format!("src/found_{n}.rs#1")),
                    path: format!("src/found_{n}.rs"),
                    lines: aptix_rag::LineSpan::new(1, 200).unwrap(),
                    language: "rust".into(),
                    content: file(200),
                    metadata: Default::default(),
                },
                score: 1.0 - n as f32 / 100.0,
            })
            .collect();
        Ok(aptix_rag::Retrieval {
            chunks,
            warnings: Vec::new(),
            left_out: self.found - self.kept,
        })
    }
}

#[tokio::test]
async fn what_the_budget_leaves_out_is_said_once_counting_what_the_retriever_left_out() {
    // The retriever found 5 chunks and kept 3 for the budget; an attachment then comes
    // first and leaves room for fewer still. One warning, with the turn's whole count:
    // before, the retriever and the orchestrator each warned, with counts of their own.
    let chunk_tokens = aptix_rag::TokenCounter::o200k().unwrap().count(&file(200));
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(answer());
    let orchestrator =
        Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
            .retriever(Arc::new(Packing { kept: 3, found: 5 }))
            .config(OrchestratorConfig {
                // Room for three and a half of these 200-line chunks: the retriever's
                // three fit alone, and the attachment takes one's room.
                context_token_budget: chunk_tokens * 7 / 2,
                ..OrchestratorConfig::default()
            })
            .build()
            .unwrap();
    let request = AgentExecuteRequest::from_json_slice(
        serde_json::json!({"sessionId": "s", "turnId": "t", "instruction": "Review these",
                           "files": [{"path": "src/mine.rs", "content": file(200)}]})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let envelope = orchestrator.execute(request).await.unwrap();
    let left_out: Vec<&String> = envelope
        .warnings
        .iter()
        .filter(|warning| warning.contains("left out to keep the context"))
        .collect();
    assert_eq!(left_out.len(), 1, "{:?}", envelope.warnings);
    let sent = serde_json::to_string(&provider.requests()[0].input).unwrap();
    let kept = (0..3)
        .filter(|n| sent.contains(&format!("src/found_{n}.rs")))
        .count();
    assert!(
        sent.contains("src/mine.rs"),
        "the attachment is always sent"
    );
    assert!(
        kept < 3,
        "the attachment took a retrieved chunk's room: {kept} kept"
    );
    // 1 attachment + 5 found = 6 offered; the attachment and `kept` of them were sent.
    let expected = format!("{} of 6 context chunk(s) were left out", 5 - kept);
    assert!(
        left_out[0].starts_with(&expected),
        "{left_out:?}, expected {expected}"
    );
}

/// A retriever that finds the lines of `src/mine.rs` the user attached.
struct FindsTheAttachment;

#[async_trait::async_trait]
impl aptix_rag::Retriever for FindsTheAttachment {
    async fn retrieve(
        &self,
        _query: &aptix_rag::RetrievalQuery,
    ) -> Result<aptix_rag::Retrieval, aptix_rag::RagError> {
        Ok(aptix_rag::Retrieval {
            chunks: vec![aptix_rag::ScoredChunk {
                chunk: aptix_rag::Chunk {
                    id: aptix_rag::ChunkId::new("src/mine.rs#1"),
                    path: "src/mine.rs".into(),
                    lines: aptix_rag::LineSpan::new(1, 20).unwrap(),
                    language: "rust".into(),
                    content: file(20),
                    metadata: Default::default(),
                },
                score: 1.0,
            }],
            warnings: Vec::new(),
            left_out: 0,
        })
    }
}

#[tokio::test]
async fn a_found_chunk_the_attachment_already_holds_is_not_said_left_out_for_the_budget() {
    // Its lines are in the context (the attachment's): "1 of 2 context chunk(s) were
    // left out to keep the context within 12000 tokens" was said of a context far
    // from its budget.
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(answer());
    let orchestrator =
        Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
            .retriever(Arc::new(FindsTheAttachment))
            .build()
            .unwrap();
    let request = AgentExecuteRequest::from_json_slice(
        serde_json::json!({"sessionId": "s", "turnId": "t", "instruction": "Review this",
                           "files": [{"path": "src/mine.rs", "content": file(40)}]})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let envelope = orchestrator.execute(request).await.unwrap();
    assert!(
        !envelope
            .warnings
            .iter()
            .any(|warning| warning.contains("left out")),
        "{:?}",
        envelope.warnings
    );
    let sent = serde_json::to_string(&provider.requests()[0].input).unwrap();
    assert_eq!(sent.matches("=== CHUNK").count(), 1, "sent once: {sent}");
}

#[tokio::test]
async fn chunks_a_retriever_hands_over_past_the_chunk_count_are_said_left_out() {
    // A retriever of someone else's making that returns five chunks for a limit of
    // three: the two past it are not sent, and the warning counts them.
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(answer());
    let orchestrator =
        Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
            .retriever(Arc::new(Packing { kept: 5, found: 5 }))
            .config(OrchestratorConfig {
                max_chunks: 3,
                context_token_budget: 1_000_000,
                ..OrchestratorConfig::default()
            })
            .build()
            .unwrap();
    let request = AgentExecuteRequest::from_json_slice(
        br#"{"sessionId": "s", "turnId": "t", "instruction": "Review"}"#,
    )
    .unwrap();
    let envelope = orchestrator.execute(request).await.unwrap();
    assert!(
        envelope
            .warnings
            .iter()
            .any(|warning| warning.starts_with("2 of 5 context chunk(s) were left out")),
        "{:?}",
        envelope.warnings
    );
    let sent = serde_json::to_string(&provider.requests()[0].input).unwrap();
    assert_eq!(sent.matches("=== CHUNK").count(), 3);
}

/// A retriever that finds nothing and keeps the budget it was asked for.
#[derive(Default)]
struct Budgets(std::sync::Mutex<Vec<usize>>);

#[async_trait::async_trait]
impl aptix_rag::Retriever for Budgets {
    async fn retrieve(
        &self,
        query: &aptix_rag::RetrievalQuery,
    ) -> Result<aptix_rag::Retrieval, aptix_rag::RagError> {
        self.0.lock().unwrap().push(query.token_budget);
        Ok(aptix_rag::Retrieval {
            chunks: Vec::new(),
            warnings: Vec::new(),
            left_out: 0,
        })
    }
}

#[tokio::test]
async fn retrieval_takes_at_most_a_quarter_of_a_small_context_window() {
    // A local model with an 8,192-token window and the default 12,000-token budget:
    // the context alone overflowed every request.
    for (window, budget, asked) in [
        (Some(8_192), 12_000, 2_048),
        (Some(1_000_000), 12_000, 12_000),
        // The default model's window (its id's, 272,000 tokens) leaves the budget be.
        (None, 12_000, 12_000),
    ] {
        let provider = Arc::new(FakeProvider::new());
        provider.push_response(answer());
        let budgets = Arc::new(Budgets::default());
        let orchestrator =
            Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
                .retriever(budgets.clone())
                .config(OrchestratorConfig {
                    context_window: window,
                    context_token_budget: budget,
                    ..OrchestratorConfig::default()
                })
                .build()
                .unwrap();
        let request = AgentExecuteRequest::from_json_slice(
            br#"{"sessionId": "s", "turnId": "t", "instruction": "Where is the store?"}"#,
        )
        .unwrap();
        orchestrator.execute(request).await.unwrap();
        assert_eq!(*budgets.0.lock().unwrap(), [asked], "{window:?}");
    }
}

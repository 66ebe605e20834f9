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

//! Runs a user turn with a client tool call and its continuation against a scripted
//! provider, offline, printing each envelope: the shape of a tool loop without a model.
//!
//! `cargo run -p aptix-orchestrator --example turn_offline`

use std::sync::Arc;

use aptix_client::FakeProvider;
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::Response;
use aptix_orchestrator::{ClientTool, InMemorySessionStore, Orchestrator};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> Result<(), Box<dyn std::error::Error>> {
    let provider = Arc::new(FakeProvider::new());
    provider
        .push_response(serde_json::from_str::<Response>(
            r#"{"id": "resp_1", "status": "completed", "model": "gpt-test",
                "output": [{"type": "function_call", "call_id": "call_1", "name": "read_file",
                            "arguments": "{\"path\": \"src/lib.rs\"}"}]}"#,
        )?)
        .push_response(serde_json::from_str::<Response>(
            r#"{"id": "resp_2", "status": "completed", "model": "gpt-test",
                "output": [{"type": "message", "role": "assistant",
                            "content": [{"type": "output_text", "text": "lib.rs declares three modules."}]}]}"#,
        )?);
    let read_file = ClientTool {
        definition: serde_json::from_value(serde_json::json!({
            "name": "read_file",
            "description": "Reads a workspace file on the client",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"], "additionalProperties": false},
            "strict": true
        }))?,
        usage: Some("Read a file before describing it.".into()),
    };
    let orchestrator =
        Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
            .client_tool(read_file)
            .build()?;

    let turn = AgentExecuteRequest::from_json_slice(
        br#"{"sessionId": "demo", "turnId": "t1", "instruction": "What does src/lib.rs declare?"}"#,
    )?;
    let first = orchestrator.execute(turn).await?;
    println!("{}", serde_json::to_string_pretty(&first)?);

    let results = AgentExecuteRequest::from_json_slice(
        br#"{"sessionId": "demo", "turnId": "t1", "toolResults": [
            {"toolCallId": "call_1", "executionMs": 3, "resultJson": "{\"text\": \"mod a; mod b; mod c;\"}"}]}"#,
    )?;
    let second = orchestrator.execute(results).await?;
    println!("{}", serde_json::to_string_pretty(&second)?);
    println!(
        "the continuation sent: {}",
        serde_json::to_string_pretty(&provider.requests()[1])?
    );
    Ok(())
}

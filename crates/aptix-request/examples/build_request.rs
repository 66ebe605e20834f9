//! Prints the two `/v1/responses` bodies of one tool round trip, offline: the initial
//! request of a turn, then the continuation that answers the model's function call.
//!
//! Run with `cargo run -p aptix-request --example build_request`.

use aptix_request::{RequestBuilder, RequestError, ToolOutput, ToolUsageBlock, parse_tools_json};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = parse_tools_json(
        r#"[{"type":"function","name":"read_file","description":"Reads a workspace file",
             "parameters":{"type":"object","properties":{"path":{"type":"string"}},
                           "required":["path"],"additionalProperties":false},
             "strict":true}]"#,
    )?;
    let usage = ToolUsageBlock::new()
        .tool("read_file", "Read a file before you quote it.")
        .render()
        .unwrap_or_default();
    let context = "[CONTEXT]\n\n=== CHUNK 1 ===\nId: ctx_1\nPath: src/retry.rs\nLines: 1-3\n\
                   Language: rust\n```rust\npub fn attempts() -> u32 {\n    3\n}\n```\n\n";

    let initial = RequestBuilder::new("gpt-4o-mini")
        .base_system_prompt("You are Aptix, a coding agent.")
        .system_prompt("Answer in one paragraph.")
        .tool_usage_block(usage)
        .mode("QA")
        .instruction("How many retry attempts are made?")
        .context_block(context)
        .tools(tools.clone())
        .temperature(0.2)
        .build()?;
    println!(
        "// initial request\n{}",
        serde_json::to_string_pretty(&initial)?
    );

    let continuation = RequestBuilder::new("gpt-4o-mini")
        .mode("QA")
        .previous_response_id("resp_example_1")
        .tool_outputs([ToolOutput::result(
            "call_example_1",
            r#"{"text":"pub fn attempts() -> u32 { 3 }"}"#,
        )
        .with_tool_name("read_file")
        .with_execution_ms(4)])
        .tools(tools)
        .build()?;
    println!(
        "// continuation\n{}",
        serde_json::to_string_pretty(&continuation)?
    );

    // Bad input is an error naming the element, never a silently smaller request.
    let nested = parse_tools_json(r#"[{"type":"function","function":{"name":"read_file"}}]"#);
    if let Err(error @ RequestError::InvalidTool { .. }) = nested {
        println!("// rejected ToolsJson: {error}");
    }
    Ok(())
}

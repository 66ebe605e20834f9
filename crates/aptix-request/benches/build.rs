//! Building and serialising a realistic request (a 20-chunk `[CONTEXT]` block of 60
//! lines of code each, 10 tools, a usage block), next to the floor it cannot beat:
//! `serde_json::to_vec` of the same texts in a plain `Vec<String>`. Both report bytes of
//! JSON written per second; the target is to stay within 2x of the baseline.
//!
//! Run with `cargo bench -p aptix-request --bench build`.

use std::fmt::Write;

use aptix_model::wire::FunctionTool;
use aptix_rag::{Chunk, ChunkId, LineSpan, render_context_block};
use aptix_request::{RequestBuilder, ToolUsageBlock};
use divan::Bencher;
use divan::counter::BytesCount;
use serde_json::json;

fn main() {
    divan::main();
}

const CHUNKS: usize = 20;
const LINES_PER_CHUNK: usize = 60;
const TOOLS: usize = 10;

/// Sixty lines of plausible Rust: indentation, quotes, braces and escapes, as retrieved
/// code has.
fn code_chunk(chunk: usize) -> String {
    let mut code = String::new();
    for line in 0..LINES_PER_CHUNK {
        let _ = match line % 6 {
            0 => writeln!(
                code,
                "/// Loads the \"{chunk}_{line}\" setting, or its default."
            ),
            1 => writeln!(
                code,
                "pub fn load_{chunk}_{line}(map: &Map<String, Value>) -> Result<u32, Error> {{"
            ),
            2 => writeln!(
                code,
                "    let raw = map.get(\"key_{line}\").ok_or_else(|| Error::missing(\"key_{line}\"))?;"
            ),
            3 => writeln!(
                code,
                "    let text = raw.as_str().unwrap_or(\"\\t{line}\\n\");"
            ),
            4 => writeln!(
                code,
                "    text.trim().parse::<u32>().map_err(|e| Error::parse(e, {line}))"
            ),
            _ => writeln!(code, "}}"),
        };
    }
    code
}

/// An AGN-002 `[CONTEXT]` block of [`CHUNKS`] chunks, rendered by `aptix-rag`.
fn context_block() -> String {
    let chunks: Vec<Chunk> = (0..CHUNKS)
        .map(|chunk| Chunk {
            id: ChunkId::new(format!("ctx_{chunk}")),
            path: format!("src/config/part_{chunk}.rs"),
            lines: LineSpan::new(1, LINES_PER_CHUNK as u32).expect("a valid span"),
            language: "rust".into(),
            content: code_chunk(chunk).trim_end().to_owned(),
            metadata: Default::default(),
        })
        .collect();
    render_context_block(&chunks).expect("chunks render a block")
}

fn tools() -> Vec<FunctionTool> {
    (0..TOOLS)
        .map(|index| FunctionTool {
            name: format!("workspace_tool_{index}"),
            description: Some(format!(
                "Tool {index}: reads or edits workspace files; returns JSON with the outcome."
            )),
            parameters: Some(json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Workspace-relative path"},
                    "start_line": {"type": ["integer", "null"]},
                    "end_line": {"type": ["integer", "null"]},
                    "mode": {"type": "string", "enum": ["read", "write", "append"]}
                },
                "required": ["path", "start_line", "end_line", "mode"],
                "additionalProperties": false
            })),
            strict: true,
        })
        .collect()
}

fn usage_block() -> String {
    (0..TOOLS)
        .map(|index| {
            (
                format!("workspace_tool_{index}"),
                format!(
                    "Use workspace_tool_{index} for files under part_{index}.\nNever guess paths."
                ),
            )
        })
        .collect::<ToolUsageBlock>()
        .render()
        .unwrap_or_default()
}

fn builder() -> RequestBuilder {
    RequestBuilder::new("gpt-4o-mini")
        .base_system_prompt("You are Aptix, a coding agent. Cite chunks by number.")
        .system_prompt("Answer in terse bullet points.")
        .tool_usage_block(usage_block())
        .mode("CODE_EDIT")
        .instruction("Make every loader return a typed error with the key name.")
        .context_block(context_block())
        .tools(tools())
        .temperature(0.2)
}

/// The texts the request carries, for the baseline.
fn texts() -> Vec<String> {
    let mut texts = vec![
        "You are Aptix, a coding agent. Cite chunks by number.".to_owned(),
        "Answer in terse bullet points.".to_owned(),
        usage_block(),
        "[MODE: CODE_EDIT]\n\n[INSTRUCTION]\nMake every loader return a typed error with the key name."
            .to_owned(),
        context_block(),
    ];
    texts.extend(
        tools()
            .into_iter()
            .map(|tool| format!("{} {}", tool.name, tool.description.unwrap_or_default())),
    );
    texts
}

#[divan::bench]
fn build_and_serialise(bencher: Bencher<'_, '_>) {
    let template = builder();
    let output_len = serde_json::to_vec(&template.clone().build().expect("the request builds"))
        .expect("serialises")
        .len();
    bencher
        .with_inputs(|| template.clone())
        .input_counter(move |_| BytesCount::new(output_len))
        .bench_values(|builder| {
            let request = builder.build().expect("the request builds");
            serde_json::to_vec(&request).expect("serialises")
        });
}

#[divan::bench]
fn baseline_serialise_same_texts(bencher: Bencher<'_, '_>) {
    let texts = texts();
    let output_len = serde_json::to_vec(&texts).expect("serialises").len();
    bencher
        .counter(BytesCount::new(output_len))
        .bench(|| serde_json::to_vec(divan::black_box(&texts)).expect("serialises"));
}

#[divan::bench]
fn build_only(bencher: Bencher<'_, '_>) {
    let template = builder();
    bencher
        .with_inputs(|| template.clone())
        .bench_values(|builder| builder.build().expect("the request builds"));
}

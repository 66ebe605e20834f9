//! Inputs and checks shared by the integration tests: realistic tools, blocks and tool
//! results, and [`body`], which builds a request, serialises it and validates it
//! against the OpenAPI spec, so every body a test looks at is a valid `CreateResponse`.
// Each test binary includes this module and uses a different part of it.
#![allow(dead_code)]

pub(crate) use aptix_testkit::spec;

use aptix_model::wire::FunctionTool;
use aptix_rag::{Chunk, ChunkId, LineSpan, render_context_block};
use aptix_request::{RequestBuilder, RequestError, ToolOutput, ToolUsageBlock};
use serde_json::{Value, json};

pub(crate) const MODEL: &str = "gpt-4o-mini";
pub(crate) const BASE_PROMPT: &str = "You are Aptix, a coding agent. Follow the tool rules.";
pub(crate) const PER_REQUEST_PROMPT: &str = "Answer in terse bullet points.";
pub(crate) const INSTRUCTION: &str = "Where is the retry policy configured?";
pub(crate) const RESPONSE_ID: &str = "resp_0df7c3d8927b3a940068c9ef43dce481949ab7ac4c9f676d61";

/// The function tool of the recorded fixtures (`strict: false`).
pub(crate) fn weather_tool() -> FunctionTool {
    FunctionTool {
        name: "get_weather_at_location".into(),
        description: Some(
            "Gets the weather at a specified location, optionally specifying units for temperature"
                .into(),
        ),
        parameters: Some(json!({
            "type": "object",
            "properties": {
                "location": {"type": "string"},
                "unit": {"type": "string", "enum": ["C", "F", "K"]}
            },
            "required": ["location"]
        })),
        strict: false,
    }
}

/// A strict function tool.
pub(crate) fn read_file_tool() -> FunctionTool {
    FunctionTool {
        name: "read_file".into(),
        description: Some("Reads a file of the workspace".into()),
        parameters: Some(json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": false
        })),
        strict: true,
    }
}

pub(crate) fn tools() -> Vec<FunctionTool> {
    vec![read_file_tool(), weather_tool()]
}

pub(crate) fn usage_block() -> String {
    ToolUsageBlock::new()
        .tool(
            "read_file",
            "Read a file before you quote it.\nPaths are relative.",
        )
        .tool("get_weather_at_location", "Only for weather questions.")
        .render()
        .unwrap_or_default()
}

/// A `[CONTEXT]` block rendered by `aptix-rag` (AGN-002).
pub(crate) fn context_block() -> String {
    let chunk = Chunk {
        id: ChunkId::new("ctx_1"),
        path: "src/retry.rs".into(),
        lines: LineSpan::new(10, 12).expect("a valid span"),
        language: "rust".into(),
        content: "pub fn policy() -> Policy {\n    Policy::exponential(3)\n}".into(),
        metadata: Default::default(),
    };
    render_context_block(&[chunk]).expect("one chunk renders a block")
}

/// One result and one error, with and without the optional fields.
pub(crate) fn tool_outputs() -> Vec<ToolOutput> {
    vec![
        ToolOutput::result(
            "call_S2X9KuEJpYvFcF4hgv1XwM0j",
            r#"{"temperature":22,"unit":"C"}"#,
        )
        .with_tool_name("get_weather_at_location")
        .with_execution_ms(12),
        ToolOutput::error("call_b7Tq0", "file src/missing.rs not found")
            .with_tool_name("read_file"),
    ]
}

/// The smallest valid initial request.
pub(crate) fn initial() -> RequestBuilder {
    RequestBuilder::new(MODEL)
        .mode("QA")
        .instruction(INSTRUCTION)
}

/// A continuation of [`RESPONSE_ID`] carrying [`tool_outputs`].
pub(crate) fn continuation() -> RequestBuilder {
    RequestBuilder::new(MODEL)
        .mode("QA")
        .previous_response_id(RESPONSE_ID)
        .tool_outputs(tool_outputs())
}

/// Builds, serialises and validates against the spec's `CreateResponse`.
pub(crate) fn body(builder: RequestBuilder) -> Value {
    let request = builder
        .build()
        .unwrap_or_else(|error| panic!("build failed: {error}"));
    let value = serde_json::to_value(&request).expect("a request serialises");
    spec::assert_valid_create_response("built body", &value);
    value
}

/// The error `build` returns; fails when it builds.
pub(crate) fn build_error(builder: RequestBuilder) -> RequestError {
    match builder.build() {
        Ok(request) => panic!("expected an error, built {request:?}"),
        Err(error) => error,
    }
}

/// The input items of a body.
pub(crate) fn items(body: &Value) -> &Vec<Value> {
    body["input"].as_array().expect("input is an array")
}

/// The messages of a body with the given role.
pub(crate) fn messages<'a>(body: &'a Value, role: &str) -> Vec<&'a Value> {
    items(body)
        .iter()
        .filter(|item| item["type"] == "message" && item["role"] == role)
        .collect()
}

/// The texts of a message's `input_text` parts, in order, checking every part is one.
pub(crate) fn texts(message: &Value) -> Vec<&str> {
    message["content"]
        .as_array()
        .expect("content is a list of parts")
        .iter()
        .map(|part| {
            assert_eq!(part["type"], "input_text", "part {part}");
            part["text"].as_str().expect("text is a string")
        })
        .collect()
}

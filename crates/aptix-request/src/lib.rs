//! Aptix request construction: server-owned turn state in, the exact `/v1/responses`
//! body out (AGN-003, with the wire corrections of `docs/wire.md`; the full format is in
//! `docs/request.md`).
//!
//! # Overview
//!
//! - [`RequestBuilder`] takes what AGN-003 section 2 lists, now server-owned state
//!   (AGN-034): model, base and per-request system prompts, tool-usage block,
//!   temperature, mode, instruction, [`Continuation`] (initial, `previous_response_id`,
//!   or stateless replay of history), tools, forced tool, tool results, `[CONTEXT]`
//!   block, stream flag, and what a real request needs (max output tokens, store,
//!   metadata, parallel tool calls, reasoning effort, text format).
//!   [`build`](RequestBuilder::build) validates everything and returns the wire
//!   [`CreateResponseRequest`](aptix_model::wire::CreateResponseRequest) or a
//!   [`RequestError`].
//! - [`ToolOutput`] / [`ToolReply`]: one executed call's result or error, sent as a
//!   `function_call_output` item and, by default, shown in the `[TOOL_RESULTS]` block
//!   ([`render_tool_results_block`]).
//! - [`parse_tools_json`]: AGN-003's `ToolsJson`, checked element by element.
//! - [`ToolUsageBlock`]: the AGN-005 delimited usage block for the system message.
//! - [`check_model_settings`]: the one rule for model, temperature, `top_p`,
//!   `max_output_tokens` and reasoning effort, shared by the builder, `aptix-schema`
//!   and the CLI.
//!
//! # Design decisions
//!
//! - **The wire wins, the seed's intent stays.** Content parts are `input_text`, a
//!   forced tool is `{"type":"function","name":...}`, `strict` is always explicit,
//!   `temperature` and `stream` are omitted when unset, and continuations after tool
//!   calls carry one `function_call_output` per result (the API fails without them)
//!   *and* the seed's `[TOOL_RESULTS]` block (which an option switches off).
//! - **No silent drops.** AGN-003 ignores a `ToolsJson` that does not parse; here a bad
//!   tool, a malformed tool result, an unknown forced tool or a broken history pairing
//!   is an error naming the index or call id. Soft defaults are only AGN-003's own:
//!   blank optional texts are omitted.
//! - **Never panics.** Every input either builds or returns a [`RequestError`]
//!   (property-tested).
//! - **Own input types.** Tool results come as [`ToolOutput`], not the public request
//!   contract's type, so this crate does not move when that contract does.
//!
//! **Architecture invariant:** pure functions over data. No I/O, no async runtime, no
//! environment access; everything the builder needs arrives as arguments.
//!
//! # Example
//!
//! ```
//! use aptix_request::{parse_tools_json, RequestBuilder, ToolOutput, ToolUsageBlock};
//!
//! let tools = parse_tools_json(
//!     r#"[{"type":"function","name":"read_file","description":"Read a file",
//!          "parameters":{"type":"object","properties":{"path":{"type":"string"}},
//!                        "required":["path"],"additionalProperties":false},
//!          "strict":true}]"#,
//! )?;
//! let usage = ToolUsageBlock::new().tool("read_file", "Read before you edit.").render();
//!
//! // The first request of a turn: system message, user message, tools.
//! let initial = RequestBuilder::new("gpt-4o-mini")
//!     .base_system_prompt("You are Aptix.")
//!     .tool_usage_block(usage.unwrap_or_default())
//!     .mode("QA")
//!     .instruction("Where is the config loaded?")
//!     .tools(tools)
//!     .build()?;
//! let body = serde_json::to_value(&initial).expect("a request always serialises");
//! assert_eq!(body["input"][0]["role"], "system");
//! assert_eq!(body["tools"][0]["strict"], true);
//!
//! // The continuation after the model called read_file.
//! let next = RequestBuilder::new("gpt-4o-mini")
//!     .mode("QA")
//!     .previous_response_id("resp_123")
//!     .tool_outputs([ToolOutput::result("call_1", r#"{"text":"fn main() {}"}"#)])
//!     .build()?;
//! let body = serde_json::to_value(&next).expect("a request always serialises");
//! assert_eq!(body["previous_response_id"], "resp_123");
//! assert_eq!(body["input"][0]["type"], "function_call_output");
//! assert_eq!(body["input"][1]["role"], "user");
//! # Ok::<(), aptix_request::RequestError>(())
//! ```
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod assemble;
mod builder;
mod error;
mod history;
mod settings;
mod strict;
mod text;
mod tool_output;
mod tool_results;
mod tools;
mod usage_block;

pub use assemble::instruction_of;
pub use builder::{Continuation, RequestBuilder};
pub use error::{RequestError, ToolProblem};
pub use history::{ABORTED_OUTPUT, HistoryRepair, normalize_history, safe_split};
pub use settings::{MIN_MAX_OUTPUT_TOKENS, ModelParams, REASONING_EFFORTS, check_model_settings};
pub use strict::{RemovedKeyword, StrictSchema, normalize_strict};
pub use tool_output::{MAX_OUTPUT_BYTES, ToolOutput, ToolReply};
pub use tool_results::render_tool_results_block;
pub use tools::{is_valid_name, parse_tools_json};
pub use usage_block::ToolUsageBlock;

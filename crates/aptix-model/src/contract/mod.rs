//! The public Aptix contracts: AGN-034's request and AGN-004's response envelope.
//!
//! # The request
//!
//! A client sends an [`AgentExecuteRequest`]. [`AgentExecuteRequest::from_json_slice`]
//! (bytes) and [`validate`] (a decoded [`serde_json::Value`]) check it against every rule
//! of AGN-034 and return either the typed request, a [`UserTurnRequest`] or a
//! [`ToolContinuationRequest`], or a [`RequestRejection`] listing **every** [`Violation`]
//! at once, each with a canonical camelCase field path (`toolResults[1].toolCallId`), a
//! [`ViolationCode`] and a sentence for the client developer. Both are total: any input
//! gives one of the two, never a panic.
//!
//! ```json
//! {"sessionId": "s-42", "turnId": "t-7", "instruction": "why does `parse` fail on empty input?",
//!  "files": [{"path": "src/parse.rs"}],
//!  "ragScope": {"conditions": [{"key": "language", "operator": "==", "values": ["rust"]}]},
//!  "hints": {"repository": "aptix", "language": "rust"}, "stream": true}
//!
//! {"sessionId": "s-42", "turnId": "t-7",
//!  "toolResults": [{"toolCallId": "call_1", "executionMs": 12, "resultJson": "{\"lines\": 3}"},
//!                  {"toolCallId": "call_2", "executionMs": 4, "errorMessage": "file not found"}]}
//! ```
//!
//! Decisions where AGN-034 is silent, and why:
//!
//! - **Scenario by presence.** A request with `toolResults` is a tool continuation, any
//!   other a user turn (AGN-034 section 3). On a continuation, `instruction`, `files`,
//!   `images`, `ragScope`, `hints` and `stream` are each a violation: its reply is
//!   delivered the way the turn's user request asked.
//! - **Casing.** camelCase is canonical; PascalCase (`SessionId`, `ToolCallId`) is
//!   accepted too, as the original server accepted it. Both spellings of one field in one
//!   object is a `duplicate_field` violation. Paths and messages always use camelCase.
//! - **`null` is absence.** A field whose value is `null` is treated exactly as if it were
//!   left out, everywhere, because C# and Java clients write unset properties as `null`.
//!   So `"toolResults": null` is a user turn and `"mode": null` is no violation.
//! - **Unknown fields are violations.** The contract is small on purpose, and a typo
//!   (`sesionId`, `tool_results`) must not be silently ignored: an ignored `toolResults`
//!   typo would turn a continuation into a user turn. The message suggests the field meant
//!   when only case or underscores differ.
//! - **Server-owned fields get their own code.** Mode, continuation and conversation ids,
//!   model, tools, prompts, sampling settings, correlation ids and diagnostics
//!   (`mode`, `previousResponseId`, `model`, `systemPrompt`, `temperature`, `requestId`,
//!   ...) are `server_owned` violations whose message says who owns them; they match in
//!   any casing, so OpenAI's own `previous_response_id` is caught too.
//! - **`resultJson`** is a string holding JSON text (the seed's form, which must parse) or
//!   an inline JSON value; see [`ResultJson`]. A tool result has exactly one of
//!   `resultJson` and `errorMessage`, and a non-blank `errorMessage`.
//! - **`executionMs`** is required and a whole number `>= 0`; `12.0` counts as `12`.
//! - **Paths** are workspace-relative; see [`RelativePath`] for what is refused and how
//!   `\` separators are normalised.
//! - **Blank text.** Ids, the instruction, hints, scope keys and error messages must not be
//!   empty or only whitespace; scope `values` may contain empty strings, but not be empty.
//! - **Limits.** Sizes and counts are bounded by the generous constants in [`limits`], so a
//!   huge input gets a `too_large` violation naming the field.
//! - **Not checked here:** whether tool results answer the session's pending calls, same
//!   ids in the same order. That needs the stored session and is the orchestrator's check.
//!
//! # The response
//!
//! The orchestrator answers with an [`AgentExecuteResponse`] envelope: [`Kind`],
//! text, [`AgentToolCall`]s, [`LlmUsage`], [`FinishReason`], [`SourceRef`]s, a
//! [`FileBundle`], warnings, error fields and the raw provider JSON. Every field is always
//! written (`null` when unset); see [`AgentExecuteResponse`].

mod artifacts;
mod attachment;
mod labels;
pub mod limits;
mod path;
mod request;
mod response;
mod scope;
mod strict_json;
mod text;
mod tool_result;
mod validator;
mod violation;

pub use artifacts::{BundleFile, FileBundle, SourceRef};
pub use attachment::{Base64Data, FileInput, FileSource, ImageInput, ImageSource, MediaType};
pub use labels::{FinishReason, Kind};
pub use path::RelativePath;
pub use request::{
    AgentExecuteRequest, RagScope, ToolContinuationRequest, UserTurnRequest, ValidatedRequest,
    WorkspaceHints,
};
pub use response::{AgentExecuteResponse, AgentToolCall, LlmUsage, RateLimitInfo};
pub use scope::{ScopeCondition, ScopeOperator};
pub use text::{Instruction, SessionId, ToolCallId, ToolErrorMessage, TurnId};
pub use tool_result::{ResultJson, ToolOutcome, ToolResult};
pub use validator::validate;
pub use violation::{RequestRejection, Violation, ViolationCode};

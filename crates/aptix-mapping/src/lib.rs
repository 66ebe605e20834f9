//! Aptix result mapping: a `/v1/responses` result, error body or SSE stream in, the
//! AGN-004 [`AgentExecuteResponse`](aptix_model::contract::AgentExecuteResponse)
//! envelope out.
//!
//! **Architecture invariant:** pure functions over bytes and data. No I/O, no async
//! runtime; the incremental SSE decoder is fed bytes by whoever owns the connection.
//!
//! # Overview
//!
//! - **Finished responses.** [`map_response`] (a decoded wire
//!   [`Response`](aptix_model::wire::Response)) and [`map_response_body`] (the 2xx body
//!   as bytes, kept as `rawResponseJson` byte for byte) give a [`Mapped`]: the envelope
//!   and the [`MappingWarning`]s found on the way. The turn's identities (session id as
//!   `conversationId`, turn id, mode, context ids, sources, `x-request-id`) come from a
//!   [`TurnContext`], never from the response.
//! - **Failures.** One function per kind, each giving `kind = "error"` with `errorCode`
//!   and `errorMessage`: [`map_error_body`] (non-2xx reply, JSON or not),
//!   [`map_stream_error`] (in-stream `error` event, nested or flat), a `failed` HTTP 200
//!   through [`map_response`], [`map_transport_failure`] (no body at all), and
//!   [`map_mapping_error`] (this crate's [`MappingError`]s: a body that is not a
//!   response, a stream cut short).
//! - **Streams.** `aptix-sse` frames `text/event-stream` bytes into events;
//!   [`StreamFold`] folds them into the final response, emitting [`StreamDelta`]s
//!   (text, refusal, tool call start, arguments, reasoning summary, error, done) as they
//!   arrive; [`SseBodyFold`] drives both over byte chunks; [`map_folded`] maps the
//!   result. The envelope of a folded stream is the envelope of its final response.
//!   A front end that shows the deltas as they come passes them through
//!   [`ShownAnswer`], which skips the text a model call sent again repeats.
//! - **Captures.** [`map_capture`] maps a saved body of unknown kind (`aptix inspect`);
//!   [`is_capture`] tells whether a file is one at all.
//!
//! # Decisions
//!
//! - **Soft problems are values.** Only unusable input is an `Err`; an unknown output
//!   item, a refusal, a built-in tool call, a repeated stream event are warnings, in
//!   [`Mapped::warnings`] (typed) and in the envelope's `warnings` (text). Nothing the
//!   provider sent is dropped without one.
//! - **Text** is every `output_text` part of every `message` item, in order, joined with
//!   one blank line; empty parts are skipped; no text is `null`. **Refusals** are not
//!   text: they go to the envelope's `refusal` (joined the same way) with a warning, and
//!   a refusal alone classifies as `ok`, because it is the model's answer in words, not
//!   an API error and not nothing.
//! - **Tool calls** are `function_call` items: `callId` is `call_id` (what a tool result
//!   must reference), `argumentsJson` the `arguments` string byte for byte, valid JSON or
//!   not. A `custom_tool_call` is mapped too (its free-form `input` as `argumentsJson`,
//!   with a warning), because a call left out could never be answered and would break
//!   the next turn. Built-in tool calls (`web_search_call`, `mcp_call`, ...) run on the
//!   provider's side and are reported, not mapped.
//! - **Finish reason** is derived from `status` and `incomplete_details.reason`;
//!   unknown values pass through as they were sent (the label is an open enum) with a
//!   warning. `queued` and `in_progress` have none. See `docs/mapping.md` for the table.
//! - **`errorCode`** is the error's `code`, else its `type`, else the HTTP status.
//! - **`rawResponseJson`** is the body as received whenever the caller has the bytes
//!   (including a terminal event's `response` member, cut from the SSE data as sent);
//!   otherwise the response serialised again.
//! - **Streams** end with a terminal event or they are an error
//!   ([`MappingError::StreamEndedEarly`]); an `error` event is recorded and folding goes
//!   on, expecting `response.failed`; events with non-increasing sequence numbers are
//!   skipped and counted. See the rules on [`StreamFold`].
//!
//! # Example
//!
//! ```
//! use aptix_mapping::{TurnContext, map_response_body};
//! use aptix_model::contract::{FinishReason, Kind};
//!
//! let body = br#"{
//!   "id": "resp_1", "status": "completed", "model": "gpt-4o-mini",
//!   "output": [
//!     {"type": "message", "id": "msg_1", "role": "assistant",
//!      "content": [{"type": "output_text", "text": "Two files mention it."}]},
//!     {"type": "function_call", "id": "fc_1", "call_id": "call_1",
//!      "name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}
//!   ],
//!   "usage": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150,
//!             "input_tokens_details": {"cached_tokens": 64}}
//! }"#;
//! let turn = TurnContext::new("session-1", "turn-7");
//! let mapped = map_response_body(body, &turn)?;
//! let envelope = &mapped.envelope;
//! assert_eq!(envelope.kind, Kind::Ok);
//! assert_eq!(envelope.finish_reason, Some(FinishReason::ToolUse));
//! assert_eq!(envelope.turn_id.as_deref(), Some("turn-7"));
//! assert_eq!(envelope.response_continuation_id.as_deref(), Some("resp_1"));
//! assert_eq!(envelope.text.as_deref(), Some("Two files mention it."));
//! assert_eq!(envelope.tool_calls[0].call_id, "call_1");
//! assert_eq!(envelope.tool_calls[0].arguments_json, r#"{"path":"src/lib.rs"}"#);
//! assert_eq!(envelope.usage.cached_tokens, 64);
//! assert!(mapped.warnings.is_empty());
//! # Ok::<(), aptix_mapping::MappingError>(())
//! ```
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]
// Library code must never panic on input; slicing goes through `get`.
#![deny(clippy::indexing_slicing)]

mod capture;
mod context;
mod error;
mod fold;
mod map;
mod stream;
mod warning;

pub use capture::{is_capture, map_capture};
pub use context::{Mapped, TurnContext};
pub use error::MappingError;
pub use fold::{AnswerText, FoldedStream, RetryCause, ShownAnswer, StreamDelta, StreamFold};
pub use map::{
    map_error_body, map_folded, map_mapping_error, map_response, map_response_body,
    map_stream_error, map_transport_failure,
};
pub use stream::SseBodyFold;
pub use warning::MappingWarning;

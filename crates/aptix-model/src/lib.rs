//! Aptix's public contracts and the OpenAI Responses API wire types.
//!
//! This crate owns the shapes that cross a boundary:
//!
//! - [`contract`]: what Aptix clients send and receive. The request is AGN-034's
//!   [`AgentExecuteRequest`](contract::AgentExecuteRequest) (a user turn or a tool
//!   continuation, decided by which fields are present), checked by
//!   [`validate`](contract::validate) which reports *every* violation with its field
//!   path. The reply is AGN-004's [`AgentExecuteResponse`](contract::AgentExecuteResponse)
//!   envelope.
//! - [`wire`]: the real `POST /v1/responses` body, the `Response` object, its output
//!   items, content parts, usage, error bodies and stream events, as the recorded
//!   traffic shows them (see `docs/wire.md` for where the seeds' conceptual JSON and
//!   the wire differ, and why the wire wins).
//!
//! # Design decisions
//!
//! - **Lenient decoding, exact encoding.** Wire types ignore unknown fields and keep
//!   unknown item, content-part and event types as an `Other` variant holding the raw
//!   JSON, because OpenAI adds new ones often and a client must not break when it does.
//!   Encoding omits every unset optional field, because some servers reject `null`.
//! - **The envelope is always whole.** Unlike the wire types, the AGN-004 envelope writes
//!   every field (`null` when unset, `[]` for lists) so that typed clients see one stable
//!   shape whatever the turn produced.
//! - **Data only.** No I/O, no async runtime, no environment access: this crate is
//!   serde types and pure functions, so every other crate (and every user) can depend
//!   on it without pulling in a network stack.
//!
//! # Example
//!
//! ```
//! use aptix_model::contract::{AgentExecuteRequest, ViolationCode};
//! use aptix_model::wire::{OutputItem, Response};
//!
//! // A tool continuation may not carry an instruction: every violation is reported.
//! let rejection = AgentExecuteRequest::from_json_slice(
//!     br#"{"sessionId":"s1","turnId":"t1","mode":"QA","instruction":"hi",
//!          "toolResults":[{"toolCallId":"call_1","executionMs":3,"resultJson":"{}"}]}"#,
//! )
//! .unwrap_err();
//! assert!(rejection.has("mode", ViolationCode::ServerOwned));
//! assert!(rejection.has("instruction", ViolationCode::NotAllowedOnToolContinuation));
//!
//! // Wire responses decode leniently: an unknown item is kept, not an error.
//! let response: Response = serde_json::from_str(
//!     r#"{"id":"resp_1","status":"completed","output":[{"type":"brand_new_item"}]}"#,
//! )
//! .unwrap();
//! assert_eq!(response.output[0].type_name(), Some("brand_new_item"));
//! assert!(matches!(response.output[0], OutputItem::Other(_)));
//! ```
//!
//! # Features
//!
//! - `openapi`: `utoipa::ToSchema` for the request, the envelope and every type they reach,
//!   describing each exactly as it is serialised and validated (for `aptix-server`'s
//!   `GET /openapi.json`).
//!
//! **Architecture invariant:** nothing here knows about HTTP, files, clocks or the
//! environment.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod canonical;
pub mod contract;
pub mod wire;

mod error;
mod open_enum;
#[cfg(feature = "openapi")]
mod openapi;
mod url;

pub use error::ModelError;
pub use url::{is_loopback_host, is_loopback_url, redact_url, url_host};

/// `error` and its causes on one line, joined by `: `, as Aptix prints and logs an
/// error. A cause whose text the line already holds is left out: many errors repeat
/// their source in their own message.
///
/// ```
/// let io = std::io::Error::other("disk full");
/// assert_eq!(aptix_model::error_chain(&io), "disk full");
/// ```
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// A word for the kind of a JSON value (`null`, `a boolean`, `a number`, `a string`,
/// `an array`, `an object`), for error messages that say what was found.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Middle);

    #[derive(Debug, thiserror::Error)]
    #[error("middle: {0}")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn an_error_chain_joins_the_causes_and_leaves_out_a_repeated_one() {
        let error = Outer(Middle(std::io::Error::other("disk full")));
        // `Middle` already says its source: it is not said twice.
        assert_eq!(super::error_chain(&error), "outer: middle: disk full");
    }
}

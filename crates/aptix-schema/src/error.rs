//! The one error type of `aptix-schema`: why a schema-constrained Request gave no
//! solution.
//!
//! Two kinds of failure share it. A Request that cannot be *prepared* names the input
//! at fault as a field (a message index and its content type, a JSON pointer into the
//! schema, an option key), so a caller can point at it without parsing the message.
//! A Request that was *sent* and gave no solution (the provider failed, a reply ended
//! it, every attempt was rejected) carries the [`AttemptLog`] of what the attempts
//! cost and found. Problems with one *answer* are not errors: they are
//! [`AttemptFailure`](crate::AttemptFailure)s, fed back to the model.

use aptix_client::ClientError;
use aptix_request::RequestError;
use serde_json::Value;

use crate::answer::StopReason;
use crate::solve::{AttemptLog, Solution};

/// Why a schema-constrained Request gave no solution.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A message's content has a custom type that no handler is registered for.
    /// Unknown types are never stringified: the model would see JSON it was not meant to.
    #[error(
        "message {index} has content type {content_type:?}, which no handler is registered for"
    )]
    UnknownContentType {
        /// The message's 0-based position in the context.
        index: usize,
        /// The content's `type`.
        content_type: String,
    },
    /// A content handler rejected its message.
    #[error("message {index} of content type {content_type:?} was rejected: {reason}")]
    Handler {
        /// The message's 0-based position in the context.
        index: usize,
        /// The content's `type`.
        content_type: String,
        /// What the handler reported.
        reason: String,
    },
    /// After every handler ran there was no message left to send.
    #[error("the context has no messages to send after its handlers ran")]
    EmptyContext,
    /// The configuration (after the handlers ran) breaks a rule every request follows:
    /// a blank model, a temperature, `top_p` or `max_output_tokens` out of range (see
    /// `aptix_request::check_model_settings`), or another check of the request builder.
    #[error(transparent)]
    Request(#[from] RequestError),
    /// An extra option names a field that the Request itself sets; sending both would
    /// put the key twice in the body.
    #[error("option {key:?} is set by the request itself and cannot be given as an extra option")]
    ReservedOption {
        /// The option's key.
        key: String,
    },
    /// The schema's name does not match `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("schema name {name:?} must be 1 to 64 letters, digits, '_' or '-'")]
    InvalidSchemaName {
        /// The name given.
        name: String,
    },
    /// The schema is not a JSON object, or the JSON Schema validator rejects it.
    #[error("the schema is invalid: {reason}")]
    InvalidSchema {
        /// What is wrong with it.
        reason: String,
    },
    /// The schema cannot be normalised for strict mode (native output, strict tools).
    #[error("the schema cannot be made strict at {pointer:?}: {reason}")]
    NotStrict {
        /// JSON pointer into the schema, `""` for the root.
        pointer: String,
        /// What strict mode cannot express there.
        reason: String,
    },
    /// An ordinary tool is invalid (name, parameters) or two share a name.
    #[error("tool {index} is invalid: {reason}")]
    InvalidTool {
        /// The tool's 0-based position among the request's tools.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The request carries ordinary tools and the provider cannot take function tools.
    #[error("the request carries {count} tools but the provider cannot take function tools")]
    ToolsUnsupported {
        /// How many tools the request carries.
        count: usize,
    },
    /// The provider call of an attempt failed (transport, HTTP status, API error).
    #[error("attempt {attempt} of the schema request failed at the provider")]
    Provider {
        /// The attempt's 1-based number.
        attempt: u32,
        /// The provider's error.
        #[source]
        source: ClientError,
        /// The attempts so far (boxed: it keeps every error of every attempt).
        log: Box<AttemptLog>,
    },
    /// A reply ended the Request: a refusal, a failed or truncated response, or calls of
    /// ordinary tools.
    #[error("attempt {attempt} ended the schema request: {reason}")]
    Stopped {
        /// The attempt's 1-based number.
        attempt: u32,
        /// Why.
        reason: StopReason,
        /// The attempts so far (boxed: it keeps every error of every attempt).
        log: Box<AttemptLog>,
    },
    /// Every attempt was rejected; the log holds each one's errors.
    #[error(
        "no valid answer after {} attempts: {}",
        log.attempts,
        log.error_lines().join("; ")
    )]
    Exhausted {
        /// Every attempt.
        log: Box<AttemptLog>,
    },
    /// The validated solution does not deserialise into the requested type (the
    /// schema and the type disagree, e.g. a handler changed the schema).
    #[error("the solution does not deserialise into the requested type")]
    Deserialize {
        /// The solution, with its usage and attempts.
        solution: Box<Solution>,
        /// What serde reported.
        #[source]
        source: serde_json::Error,
    },
}

impl SchemaError {
    /// The attempts made before the error, when any were (none for a Request that could
    /// not be prepared).
    pub fn log(&self) -> Option<&AttemptLog> {
        match self {
            SchemaError::Provider { log, .. }
            | SchemaError::Stopped { log, .. }
            | SchemaError::Exhausted { log } => Some(log),
            _ => None,
        }
    }

    /// The value the model gave, when the error is about its type.
    pub fn value(&self) -> Option<&Value> {
        match self {
            SchemaError::Deserialize { solution, .. } => Some(&solution.value),
            _ => None,
        }
    }
}

//! [`SolveError`]: why a schema-constrained Request gave no solution, with everything
//! the attempts before the end cost and found ([`AttemptLog`]).

use aptix_client::ClientError;
use aptix_model::contract::LlmUsage;
use aptix_request::schema::{AttemptFailure, SchemaError, StopReason};
use serde_json::Value;

use super::Solution;

/// What the attempts of one Request did: how many were sent, what was wrong with each
/// rejected one, and the tokens they used together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AttemptLog {
    /// Attempts sent, including the last.
    pub attempts: u32,
    /// Every rejected attempt's failure, in order.
    pub failures: Vec<AttemptFailure>,
    /// Token usage summed over every attempt that got a reply.
    pub usage: LlmUsage,
}

impl AttemptLog {
    /// Every error of every rejected attempt, one line each, prefixed with the attempt.
    pub fn error_lines(&self) -> Vec<String> {
        self.failures
            .iter()
            .flat_map(|failure| {
                failure
                    .errors()
                    .into_iter()
                    .map(move |error| format!("attempt {}: {error}", failure.attempt))
            })
            .collect()
    }
}

/// Why a schema-constrained Request gave no solution.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SolveError {
    /// The Request could not be prepared (a handler, the configuration, the schema).
    #[error("the schema request could not be prepared")]
    Prepare(#[from] SchemaError),
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

impl SolveError {
    /// The attempts made before the error, when any were.
    pub fn log(&self) -> Option<&AttemptLog> {
        match self {
            SolveError::Provider { log, .. }
            | SolveError::Stopped { log, .. }
            | SolveError::Exhausted { log } => Some(log),
            SolveError::Prepare(_) | SolveError::Deserialize { .. } => None,
        }
    }

    /// The value the model gave, when the error is about its type.
    pub fn value(&self) -> Option<&Value> {
        match self {
            SolveError::Deserialize { solution, .. } => Some(&solution.value),
            _ => None,
        }
    }
}

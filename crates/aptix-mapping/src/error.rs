//! The crate's one error type.
//!
//! Only unusable input is an error here; soft problems (an unknown output item, a
//! refusal, a repeated stream event) are [`MappingWarning`](crate::MappingWarning)s
//! returned next to the result, not this enum. Every error still becomes an envelope:
//! [`map_mapping_error`](crate::map_mapping_error) turns one into `kind = "error"` with
//! the stable [`code`](MappingError::code) as `errorCode`.

use aptix_model::wire::ApiError;
use thiserror::Error;

/// Everything that makes input unusable for `aptix-mapping`.
///
/// New variants are added as the crate grows, so matches need a wildcard arm.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MappingError {
    /// A 2xx body that is not a `Response` object: not JSON, not UTF-8, or JSON of
    /// another shape (no `id`, an `output` that is not a list, ...).
    #[error("response body is not a responses api response: {reason}")]
    InvalidResponseBody {
        /// What the JSON decoder reported.
        reason: String,
        /// The start of the body, whitespace collapsed, for the error message.
        excerpt: String,
    },

    /// The stream ended before `response.completed`, `response.incomplete` or
    /// `response.failed`: whatever text arrived is partial, so it is not a result.
    #[error(
        "stream ended after {events} events without a final response (last sequence number {})",
        display_sequence(*last_sequence_number)
    )]
    StreamEndedEarly {
        /// The highest `sequence_number` seen, `None` when no event had one.
        last_sequence_number: Option<u64>,
        /// Stream events received (decoded or not).
        events: u64,
        /// The response id from `response.created`, when that event arrived.
        response_id: Option<String>,
        /// The answer text streamed before it ended, which the error envelope keeps.
        partial_text: Option<String>,
    },

    /// The stream's final event (`response.completed`, `.incomplete` or `.failed`)
    /// came but could not be decoded: a server's fault that asking again would repeat,
    /// so it is not a cut stream.
    #[error("the stream's final `{event_type}` event could not be decoded: {reason}")]
    UndecodableFinalEvent {
        /// The event's type.
        event_type: String,
        /// What the decoder reported, with where.
        reason: String,
        /// The response id from `response.created`, when that event arrived.
        response_id: Option<String>,
        /// The answer text streamed before it, which the error envelope keeps.
        partial_text: Option<String>,
    },

    /// The stream sent an `error` event and then ended without `response.failed`.
    #[error("stream failed with {}: {}", error_label(error), error.message)]
    StreamFailed {
        /// The error the event carried (nested or flat shape, read the same way).
        error: Box<ApiError>,
        /// The `error` event's `sequence_number`, when it had one.
        sequence_number: Option<u64>,
        /// The response id from `response.created`, when that event arrived.
        response_id: Option<String>,
        /// The answer text streamed before it failed, which the error envelope keeps.
        partial_text: Option<String>,
    },
}

impl MappingError {
    /// A stable snake_case code for the envelope's `errorCode`: `sse_event_too_large`,
    /// `invalid_response_body`, `stream_ended_early`, `invalid_final_event`, or for
    /// [`StreamFailed`](Self::StreamFailed) the stream error's own code (its `code`, else
    /// its `type`, else `stream_error`).
    pub fn code(&self) -> String {
        match self {
            MappingError::InvalidResponseBody { .. } => "invalid_response_body".into(),
            MappingError::StreamEndedEarly { .. } => "stream_ended_early".into(),
            MappingError::UndecodableFinalEvent { .. } => "invalid_final_event".into(),
            MappingError::StreamFailed { error, .. } => crate::map::stream_error_code(error),
        }
    }
}

fn display_sequence(number: Option<u64>) -> String {
    number.map_or_else(|| "none".to_owned(), |number| number.to_string())
}

fn error_label(error: &ApiError) -> &str {
    error
        .code
        .as_deref()
        .or(error.kind.as_deref())
        .unwrap_or("an error")
}

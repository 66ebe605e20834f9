//! The one JSON error shape of the service, and the crate's error type.

use aptix_model::contract::Violation;
use aptix_orchestrator::OrchestratorError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// Every cause of an error response, with its stable snake_case code and status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// `400 invalid_request`: the body broke AGN-034 (every violation listed), or is not
    /// JSON; or the path or query string is not one the route reads.
    InvalidRequest,
    /// `400 tool_results_mismatch`: the tool results do not answer the pending calls.
    ToolResultsMismatch,
    /// `401 unauthorized`: a bearer token is required and none (or a wrong one) came.
    Unauthorized,
    /// `403 host_not_allowed`: without tokens, a request named a host that is not
    /// loopback (how a web page reaches a local service through DNS rebinding).
    HostNotAllowed,
    /// `404 unknown_session`: a tool continuation, or a session read, names no session.
    UnknownSession,
    /// `404 not_found`: no route has this path.
    NotFound,
    /// `405 method_not_allowed`: the route exists, not with this method (`Allow` lists
    /// the methods it has).
    MethodNotAllowed,
    /// `409 session_busy`: another turn runs on this session.
    SessionBusy,
    /// `409 nothing_pending`: a tool continuation arrived while no calls were pending.
    NothingPending,
    /// `409 session_conflict`: the session changed while the turn ran.
    SessionConflict,
    /// `422 turn_id_reused`: the user turn ran already, for a different request. A retry
    /// sends the same request again (and gets the stored envelope); a new request needs
    /// a new `turnId`. `stream` may differ between the two.
    TurnIdReused,
    /// `408 body_timeout`: the request body did not arrive within the body read timeout.
    BodyTimeout,
    /// `413 body_too_large`: the body is over the limit.
    BodyTooLarge,
    /// `415 unsupported_media_type`: the body is not `application/json`.
    UnsupportedMediaType,
    /// `503 over_capacity`: too many turns in flight; retry after `Retry-After`.
    OverCapacity,
    /// `503 store_unavailable`: the session store failed.
    StoreUnavailable,
    /// `503 shutting_down`: the service is stopping and stopped the turn before it
    /// ended (its grace period ran out, or its operator asked twice); nothing of the
    /// turn was stored, so it can be sent again, to another replica or after a restart.
    ShuttingDown,
    /// `504 turn_timeout`: the turn ran past the deadline.
    TurnTimeout,
    /// `500 internal_error`: anything else; the message says what.
    #[serde(rename = "internal_error")]
    Internal,
}

impl ErrorCode {
    /// The code as sent.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::ToolResultsMismatch => "tool_results_mismatch",
            ErrorCode::Unauthorized => "unauthorized",
            ErrorCode::HostNotAllowed => "host_not_allowed",
            ErrorCode::UnknownSession => "unknown_session",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::SessionBusy => "session_busy",
            ErrorCode::NothingPending => "nothing_pending",
            ErrorCode::SessionConflict => "session_conflict",
            ErrorCode::TurnIdReused => "turn_id_reused",
            ErrorCode::BodyTimeout => "body_timeout",
            ErrorCode::BodyTooLarge => "body_too_large",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::OverCapacity => "over_capacity",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::StoreUnavailable => "store_unavailable",
            ErrorCode::TurnTimeout => "turn_timeout",
            ErrorCode::Internal => "internal_error",
        }
    }

    /// The HTTP status it is sent with.
    pub fn status(self) -> StatusCode {
        match self {
            ErrorCode::InvalidRequest | ErrorCode::ToolResultsMismatch => StatusCode::BAD_REQUEST,
            ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
            ErrorCode::HostNotAllowed => StatusCode::FORBIDDEN,
            ErrorCode::UnknownSession | ErrorCode::NotFound => StatusCode::NOT_FOUND,
            ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::SessionBusy | ErrorCode::NothingPending | ErrorCode::SessionConflict => {
                StatusCode::CONFLICT
            }
            ErrorCode::TurnIdReused => StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::BodyTimeout => StatusCode::REQUEST_TIMEOUT,
            ErrorCode::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::OverCapacity | ErrorCode::StoreUnavailable | ErrorCode::ShuttingDown => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ErrorCode::TurnTimeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// Errors of the service itself (not of a request).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Listening or serving failed.
    #[error("the server failed to {operation}")]
    Io {
        /// What it was doing.
        operation: &'static str,
        /// The failure.
        #[source]
        source: std::io::Error,
    },
    /// A configured bearer token holds a character no `Authorization: Bearer` value
    /// carries (a space, a control character, a letter outside ASCII). Names where it
    /// is, never what it is.
    #[error(
        "{what} {number} is not a bearer token: a token is one word of visible ASCII \
         characters (letters, digits, punctuation){}",
        if *what == "line" { ", and a # comment may follow it after a space" } else { "" }
    )]
    InvalidToken {
        /// `line` (of a tokens file) or `item` (of a comma-separated list).
        what: &'static str,
        /// Which, counting from 1.
        number: usize,
    },
}

/// An error response: the one JSON shape.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub(crate) code: ErrorCode,
    pub(crate) message: String,
    pub(crate) request_id: String,
    pub(crate) violations: Vec<Violation>,
}

/// The body of every error response (and the data of an SSE `error` event).
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Error)]
pub(crate) struct ErrorBody {
    /// What went wrong.
    error: ErrorDetail,
}

/// What went wrong.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ErrorDetail {
    /// The stable code of the cause; its status is fixed (see the responses).
    code: ErrorCode,
    /// What happened, for a person.
    message: String,
    /// The request's `x-request-id`.
    request_id: String,
    /// Every AGN-034 violation; on `400 invalid_request` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    violations: Option<Vec<ViolationJson>>,
}

/// One AGN-034 violation.
#[derive(Serialize, utoipa::ToSchema)]
#[schema(as = Violation)]
pub(crate) struct ViolationJson {
    /// Where, as a JSON path into the request (`sessionId`, `toolResults[0].resultJson`).
    path: String,
    /// The rule broken (`ViolationCode`, snake_case).
    rule: &'static str,
    /// What is wrong, for a person.
    message: String,
}

impl ApiError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>, request_id: &str) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            request_id: request_id.to_owned(),
            violations: Vec::new(),
        }
    }

    /// The JSON text of the body (also the data of an SSE `error` event).
    pub(crate) fn json(&self) -> String {
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message.clone(),
                request_id: self.request_id.clone(),
                violations: (self.code == ErrorCode::InvalidRequest).then(|| {
                    self.violations
                        .iter()
                        .map(|violation| ViolationJson {
                            path: violation.path.clone(),
                            rule: violation.code.as_str(),
                            message: violation.message.clone(),
                        })
                        .collect()
                }),
            },
        };
        serde_json::to_string(&body).unwrap_or_else(|_| {
            r#"{"error":{"code":"internal_error","message":"the error could not be encoded"}}"#
                .to_owned()
        })
    }

    /// An orchestrator failure as its response.
    pub(crate) fn from_orchestrator(error: OrchestratorError, request_id: &str) -> ApiError {
        let message = match &error {
            // Who holds the session (a process id and a host name) is the operator's to
            // know, not every client's: the log has it, the answer says when it frees.
            OrchestratorError::SessionBusy {
                session_id,
                holder,
                expires_in,
            } => {
                tracing::info!(request_id, session_id, holder, "session busy");
                OrchestratorError::SessionBusy {
                    session_id: session_id.clone(),
                    holder: None,
                    expires_in: *expires_in,
                }
                .to_string()
            }
            error => error.to_string(),
        };
        if matches!(
            error,
            OrchestratorError::Store { .. }
                | OrchestratorError::CorruptState { .. }
                | OrchestratorError::Context(_)
        ) {
            // The answer says what failed; the log says why, for the operator (a store's
            // errors name its database without the password).
            tracing::error!(request_id, cause = %aptix_model::error_chain(&error), "{message}");
        }
        let code = match &error {
            OrchestratorError::InvalidRequest(_) | OrchestratorError::InvalidCursor { .. } => {
                ErrorCode::InvalidRequest
            }
            OrchestratorError::UnknownSession { .. } => ErrorCode::UnknownSession,
            OrchestratorError::NothingPending { .. } => ErrorCode::NothingPending,
            OrchestratorError::ToolResultsMismatch { .. } => ErrorCode::ToolResultsMismatch,
            OrchestratorError::SessionBusy { .. } => ErrorCode::SessionBusy,
            OrchestratorError::Conflict { .. } => ErrorCode::SessionConflict,
            OrchestratorError::TurnReused { .. } => ErrorCode::TurnIdReused,
            OrchestratorError::Store { .. } => ErrorCode::StoreUnavailable,
            _ => ErrorCode::Internal,
        };
        let mut api = ApiError::new(code, message, request_id);
        if let OrchestratorError::InvalidRequest(rejection) = error {
            api.violations = rejection.into_violations();
        }
        api
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.code.status(),
            [(header::CONTENT_TYPE, "application/json")],
            self.json(),
        )
            .into_response();
        // Read by the metrics layer, which counts errors by code.
        response.extensions_mut().insert(self.code);
        let headers = response.headers_mut();
        match self.code {
            // Each is over in a moment: another turn ends, a store comes back, a
            // replica takes the retry.
            ErrorCode::OverCapacity
            | ErrorCode::ShuttingDown
            | ErrorCode::SessionBusy
            | ErrorCode::StoreUnavailable => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            ErrorCode::Unauthorized => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            // The codings a body may come in (RFC 9110 §12.5.3): none.
            ErrorCode::UnsupportedMediaType => {
                headers.insert(
                    header::ACCEPT_ENCODING,
                    HeaderValue::from_static("identity"),
                );
            }
            _ => {}
        }
        response
    }
}

/// What went wrong at the bottom of `error`, when it is a plain I/O failure (a refused
/// connection, an unreachable host) that tells a caller nothing about the database: a
/// database's own words (a user name in "password authentication failed for user",
/// a database name) stay in the log.
pub(crate) fn io_cause(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut last = error;
    while let Some(cause) = last.source() {
        last = cause;
    }
    last.downcast_ref::<std::io::Error>()
        .map(ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_serialise_as_their_codes() {
        for code in [
            ErrorCode::InvalidRequest,
            ErrorCode::ToolResultsMismatch,
            ErrorCode::Unauthorized,
            ErrorCode::HostNotAllowed,
            ErrorCode::UnknownSession,
            ErrorCode::NotFound,
            ErrorCode::MethodNotAllowed,
            ErrorCode::SessionBusy,
            ErrorCode::NothingPending,
            ErrorCode::SessionConflict,
            ErrorCode::BodyTimeout,
            ErrorCode::BodyTooLarge,
            ErrorCode::UnsupportedMediaType,
            ErrorCode::OverCapacity,
            ErrorCode::StoreUnavailable,
            ErrorCode::ShuttingDown,
            ErrorCode::TurnTimeout,
            ErrorCode::Internal,
        ] {
            assert_eq!(
                serde_json::to_value(code).ok(),
                Some(serde_json::Value::from(code.as_str()))
            );
        }
    }
}

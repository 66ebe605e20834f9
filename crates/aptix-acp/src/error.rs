//! This crate's one error type, and the JSON-RPC errors a request is answered with.

use std::path::PathBuf;

use agent_client_protocol::{Error as RpcError, ErrorCode};
use aptix_model::contract::AgentExecuteResponse;
use aptix_orchestrator::OrchestratorError;

/// What can go wrong serving ACP.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// A workspace could not be opened: its settings, its session store or its index.
    #[error("could not open the workspace {path}: {reason}")]
    Workspace {
        /// The workspace (the session's `cwd`).
        path: PathBuf,
        /// Why, in words a person can act on.
        reason: String,
    },
    /// A folder that cannot be a session's workspace (the home folder, `/`): the
    /// editor's `cwd` is refused, as invalid parameters.
    #[error("{path} cannot be a workspace: {reason}")]
    NotAWorkspace {
        /// The folder asked for.
        path: PathBuf,
        /// Why, and what to do instead.
        reason: String,
    },
    /// The connection to the editor failed (its pipes closed mid-message, say).
    #[error("the ACP connection failed: {0}")]
    Connection(#[from] RpcError),
}

/// A JSON-RPC error with this code and message (the message is what an editor shows).
pub(crate) fn rpc(code: ErrorCode, message: impl Into<String>) -> RpcError {
    RpcError::new(code, message)
}

/// `-32602`: the request's parameters are wrong, and why.
pub(crate) fn invalid_params(message: impl Into<String>) -> RpcError {
    rpc(ErrorCode::INVALID_PARAMS, message)
}

/// The error a request that needed a workspace is answered with: `-32602` for a
/// folder that cannot be one, `-32603` for one that could not be opened.
pub(crate) fn from_opening(error: &AcpError) -> RpcError {
    match error {
        AcpError::NotAWorkspace { .. } => invalid_params(error.to_string()),
        _ => internal(error.to_string()),
    }
}

/// `-32603` with a message saying what failed.
pub(crate) fn internal(message: impl Into<String>) -> RpcError {
    rpc(ErrorCode::INTERNAL_ERROR, message)
}

/// `-32002` for a session this agent does not know, with `data.sessionId`.
pub(crate) fn unknown_session(session_id: &str) -> RpcError {
    rpc(
        ErrorCode::RESOURCE_NOT_FOUND,
        format!("unknown session {session_id:?}: start one with session/new, or load a stored one with session/load"),
    )
    .data(serde_json::json!({ "sessionId": session_id }))
}

/// The error a prompt ends with when the orchestrator refuses the turn.
pub(crate) fn from_orchestrator(error: OrchestratorError) -> RpcError {
    match &error {
        OrchestratorError::InvalidRequest(_) => {
            invalid_params(format!("the prompt is not a valid turn: {error}"))
        }
        OrchestratorError::SessionBusy { .. } => rpc(
            ErrorCode::INVALID_REQUEST,
            format!("{error}; wait for the other turn to finish, or cancel it"),
        ),
        _ => internal(format!("the turn failed: {error}")),
    }
}

/// The error a prompt ends with when the model or the provider failed: the envelope's
/// message, with what to do about it for the failures people can fix themselves.
pub(crate) fn from_error_envelope(envelope: &AgentExecuteResponse) -> RpcError {
    let code = envelope.error_code.as_deref().unwrap_or("error");
    let message = envelope
        .error_message
        .as_deref()
        .unwrap_or("the provider reported an error");
    // A sentence of its own after the message, as an editor shows it.
    let advice = match aptix_client::remedy(code, message) {
        Some(remedy) => {
            let said = remedy.to_string();
            let mut chars = said.chars();
            let first: String = chars
                .next()
                .into_iter()
                .flat_map(char::to_uppercase)
                .collect();
            let key_from = if matches!(
                remedy,
                aptix_client::Remedy::CheckKey | aptix_client::Remedy::SetKey
            ) {
                ", in the environment the editor starts `aptix acp` with"
            } else {
                ""
            };
            format!(" {first}{}{key_from}.", chars.as_str())
        }
        None => String::new(),
    };
    internal(format!(
        "the model call failed: {message} ({code}).{advice}"
    ))
    .data(serde_json::json!({ "errorCode": code }))
}

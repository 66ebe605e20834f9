//! What mapping needs besides the provider's answer ([`TurnContext`]) and what it gives
//! back ([`Mapped`]).
//!
//! The turn's identities come from the request and the session, never from the
//! response: AGN-034 makes `turnId` a client field, so it is not the response id.

use aptix_model::contract::{AgentExecuteResponse, Kind, RateLimitInfo, SourceRef};

use crate::warning::MappingWarning;

/// The turn a response belongs to: the identities and context the envelope echoes.
///
/// Everything is optional so that offline tools (`aptix inspect`) can map a captured
/// body with [`TurnContext::default`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnContext {
    /// The request's `sessionId`, echoed as `conversationId`.
    pub conversation_id: Option<String>,
    /// The request's `turnId`.
    pub turn_id: Option<String>,
    /// The session's mode, echoed for display.
    pub mode: Option<String>,
    /// The server's agent context id.
    pub agent_context_id: Option<String>,
    /// The server's conversation context id.
    pub conversation_context_id: Option<String>,
    /// The retrieved chunks the request showed the model (AGN-004 section 2.8).
    pub sources: Vec<SourceRef>,
    /// The provider's `x-request-id` header, when there was an HTTP reply.
    pub request_id: Option<String>,
    /// The provider's rate limits from the reply's `x-ratelimit-*` headers.
    pub rate_limits: Option<RateLimitInfo>,
}

impl TurnContext {
    /// A context with the session and turn ids and nothing else.
    pub fn new(session_id: impl Into<String>, turn_id: impl Into<String>) -> Self {
        TurnContext {
            conversation_id: Some(session_id.into()),
            turn_id: Some(turn_id.into()),
            ..TurnContext::default()
        }
    }

    /// An envelope of `kind` carrying this turn's identities, sources and request id.
    pub(crate) fn envelope(&self, kind: Kind) -> AgentExecuteResponse {
        AgentExecuteResponse {
            conversation_id: self.conversation_id.clone(),
            turn_id: self.turn_id.clone(),
            agent_context_id: self.agent_context_id.clone(),
            conversation_context_id: self.conversation_context_id.clone(),
            mode: self.mode.clone(),
            sources: self.sources.clone(),
            request_id: self.request_id.clone(),
            rate_limits: self.rate_limits,
            ..AgentExecuteResponse::new(kind)
        }
    }
}

/// The result of mapping: the envelope, and the soft problems found on the way.
///
/// Each warning is also in `envelope.warnings` as its message, so a client sees it; the
/// typed list is for the orchestrator and the CLI, which may react to a kind of warning
/// (a refusal, an unmapped tool call) without parsing text.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// The AGN-004 envelope.
    pub envelope: AgentExecuteResponse,
    /// Soft problems, in the order they were found.
    pub warnings: Vec<MappingWarning>,
}

impl Mapped {
    /// Wraps an envelope, writing each warning's message into `envelope.warnings`.
    pub(crate) fn new(mut envelope: AgentExecuteResponse, warnings: Vec<MappingWarning>) -> Self {
        envelope
            .warnings
            .extend(warnings.iter().map(ToString::to_string));
        Mapped { envelope, warnings }
    }

    /// Adds more warnings after the fact, keeping both lists in step.
    pub(crate) fn push_warnings(&mut self, warnings: impl IntoIterator<Item = MappingWarning>) {
        for warning in warnings {
            self.envelope.warnings.push(warning.to_string());
            self.warnings.push(warning);
        }
    }
}

//! Top-level keys that carry server-owned state (AGN-034 section 3) or are known mistakes.
//!
//! AGN-034 moved mode, continuation ids, model settings, tools, prompts, correlation ids
//! and diagnostics out of the public request: the server keeps them per session. A client
//! still sending one (often an AGN-003-era client) gets a violation naming the field and
//! saying who owns it, rather than "unknown field" or, worse, silence. Keys match in any
//! casing or with underscores, so OpenAI's own `previous_response_id` is caught too.

use super::fields::{Stranger, same_folded};
use crate::contract::violation::ViolationCode;

/// Who owns a server-owned field, which decides what the message says.
#[derive(Clone, Copy)]
enum Owner {
    Mode,
    Continuation,
    Provider,
    Correlation,
}

/// Server-owned fields by canonical name.
const SERVER_OWNED: &[(&str, Owner)] = &[
    ("mode", Owner::Mode),
    ("modeId", Owner::Mode),
    ("agentMode", Owner::Mode),
    ("responseContinuationId", Owner::Continuation),
    ("previousResponseId", Owner::Continuation),
    ("responseId", Owner::Continuation),
    ("conversationId", Owner::Continuation),
    ("conversationContextId", Owner::Continuation),
    ("agentContextId", Owner::Continuation),
    ("toolCalls", Owner::Continuation),
    ("model", Owner::Provider),
    ("modelId", Owner::Provider),
    ("provider", Owner::Provider),
    ("tools", Owner::Provider),
    ("toolsJson", Owner::Provider),
    ("toolChoice", Owner::Provider),
    ("toolChoiceName", Owner::Provider),
    ("systemPrompt", Owner::Provider),
    ("requestSystemPrompt", Owner::Provider),
    ("instructions", Owner::Provider),
    ("temperature", Owner::Provider),
    ("topP", Owner::Provider),
    ("maxOutputTokens", Owner::Provider),
    ("maxTokens", Owner::Provider),
    ("reasoning", Owner::Provider),
    ("reasoningEffort", Owner::Provider),
    ("responseFormat", Owner::Provider),
    ("parallelToolCalls", Owner::Provider),
    ("serviceTier", Owner::Provider),
    ("store", Owner::Provider),
    ("requestId", Owner::Correlation),
    ("correlationId", Owner::Correlation),
    ("traceId", Owner::Correlation),
    ("diagnostics", Owner::Correlation),
];

/// The special treatment of an extra top-level key, if it has one.
pub(super) fn top_level_stranger(key: &str) -> Option<Stranger> {
    if same_folded(key, "context") {
        return Some(Stranger {
            name: "context",
            code: ViolationCode::UnknownField,
            message: "unknown field context in the request; workspace context goes in hints \
                      (workspaceId, repository, language) and ragScope"
                .to_owned(),
        });
    }
    let &(name, owner) = SERVER_OWNED
        .iter()
        .find(|(name, _)| same_folded(name, key))?;
    let message = match (name, owner) {
        ("instructions", _) => {
            "instructions (the provider's system instructions) is server-owned; \
                                put the developer's text in instruction"
                .to_owned()
        }
        (_, Owner::Mode) => format!(
            "{name} is server-owned: the server keeps each session's mode; remove it from the request"
        ),
        (_, Owner::Continuation) => format!(
            "{name} is server-owned: the server tracks the conversation, its provider continuation \
             and pending tool calls under sessionId and turnId; remove it from the request"
        ),
        (_, Owner::Provider) => format!(
            "{name} is server-owned: the server chooses the model, its settings, tools and \
             prompts; remove it from the request"
        ),
        (_, Owner::Correlation) => format!(
            "{name} is server-owned: correlation ids and diagnostics are assigned by the server; \
             remove it from the request"
        ),
    };
    Some(Stranger {
        name,
        code: ViolationCode::ServerOwned,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_any_casing_and_reports_the_canonical_name() {
        for key in [
            "previousResponseId",
            "PreviousResponseId",
            "previous_response_id",
        ] {
            let stranger = top_level_stranger(key).unwrap();
            assert_eq!(stranger.name, "previousResponseId");
            assert_eq!(stranger.code, ViolationCode::ServerOwned);
        }
        assert!(top_level_stranger("sessionIdd").is_none());
    }

    #[test]
    fn messages_are_lowercase_sentences() {
        for (name, _) in SERVER_OWNED {
            let message = top_level_stranger(name).unwrap().message;
            assert!(message.starts_with(name), "{message}");
            assert!(!message.ends_with('.'), "{message}");
        }
    }
}

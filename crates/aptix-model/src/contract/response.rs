//! The AGN-004 response envelope, [`AgentExecuteResponse`].

use serde::{Deserialize, Deserializer, Serialize};

use super::artifacts::{FileBundle, SourceRef};
use super::labels::{FinishReason, Kind};

/// What a turn produced, as Aptix clients receive it (AGN-004 section 1, plus `requestId`
/// and `refusal`).
///
/// # Shape on the wire
///
/// Field names are camelCase. **Every field is always written**: an optional value that is
/// unset is `null` (never left out) and a list is `[]`, so a client sees one stable shape
/// whatever the turn produced, and a typed client (the VS Code extension, C#) need not
/// tell "absent" from "null". In particular `text` is `null` when the model produced no
/// text (AGN-004 section 2.5 allows empty or null; Aptix picks null so that "no text" and
/// "an empty text" stay distinguishable), and `fileBundle` is `null` until a patching phase
/// fills it.
///
/// Decoding is lenient, for forward and backward compatibility: a missing field takes its
/// default (`null`, `[]`, zero usage, kind `empty`), unknown fields are ignored, and an
/// unknown `kind` or `finishReason` string is kept as `Other`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
// Every field is always written (`null` when unset), so the schema requires each one.
// Decoding defaults each missing field on its own (`serde(default)` on each field that is
// not an `Option`, which serde reads as `None`): the same as `default` on the struct,
// which would give the derived schema a `default` for fields a reader always receives.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentExecuteResponse {
    /// How to present the result.
    #[serde(default, deserialize_with = "null_as_default")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub kind: Kind,
    /// The conversation: the request's `sessionId`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub conversation_id: Option<String>,
    /// The turn: the request's `turnId`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub turn_id: Option<String>,
    /// The server's id for the agent context the turn ran in.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub agent_context_id: Option<String>,
    /// The server's id for the conversation's stored context.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub conversation_context_id: Option<String>,
    /// The provider response id (`resp_...`) the next call continues from.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub response_continuation_id: Option<String>,
    /// The session's mode (server-owned), echoed for the client's display.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub mode: Option<String>,
    /// The model that answered (`response.model`).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub model_id: Option<String>,
    /// The model's text: `output_text` parts in order, joined with one blank line; `null`
    /// when there is none. With `kind: error` after a stream given up, what arrived
    /// before it was.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub text: Option<String>,
    /// Why the model stopped; `null` when no response was received.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub finish_reason: Option<FinishReason>,
    /// Token counts; zero when the provider reported none.
    #[serde(default, deserialize_with = "null_as_default")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub usage: LlmUsage,
    /// Retrieved chunks the model was shown.
    #[serde(default, deserialize_with = "null_as_default")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub sources: Vec<SourceRef>,
    /// Files for a patching phase; `null` when there are none.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub file_bundle: Option<FileBundle>,
    /// Soft problems worth showing: a truncated context, an unknown output item, ...
    #[serde(default, deserialize_with = "null_as_default")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub warnings: Vec<String>,
    /// For `kind: error`: the error type, code or HTTP status.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub error_code: Option<String>,
    /// For `kind: error`: the server's or API's message.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub error_message: Option<String>,
    /// The provider's whole response (or error body) as JSON text, for debugging.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub raw_response_json: Option<String>,
    /// Tool calls the model made, in output order.
    #[serde(default, deserialize_with = "null_as_default")]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub tool_calls: Vec<AgentToolCall>,
    /// The provider's `x-request-id`, to quote to the provider's support.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub request_id: Option<String>,
    /// The model's refusal text, when it refused; a refusal is not `text`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub refusal: Option<String>,
    /// The provider's rate limits as its last reply's `x-ratelimit-*` headers gave them;
    /// `null` when it sent none (streamed replies, local servers).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub rate_limits: Option<RateLimitInfo>,
}

/// What is left of the provider's rate limits after the reply, and when they reset
/// (OpenAI's `x-ratelimit-*` headers). Each value is `null` when the header was absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
// Every field is always written (`null` when unset), so the schema requires each one.
// Decoding defaults each missing field on its own (`serde(default)` on each field that is
// not an `Option`, which serde reads as `None`): the same as `default` on the struct,
// which would give the derived schema a `default` for fields a reader always receives.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RateLimitInfo {
    /// Requests allowed per window (`x-ratelimit-limit-requests`).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub limit_requests: Option<u64>,
    /// Requests left in this window (`x-ratelimit-remaining-requests`).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub remaining_requests: Option<u64>,
    /// Milliseconds until the request window resets (`x-ratelimit-reset-requests`).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub reset_requests_ms: Option<u64>,
    /// Tokens allowed per window (`x-ratelimit-limit-tokens`).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub limit_tokens: Option<u64>,
    /// Tokens left in this window (`x-ratelimit-remaining-tokens`).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub remaining_tokens: Option<u64>,
    /// Milliseconds until the token window resets (`x-ratelimit-reset-tokens`).
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub reset_tokens_ms: Option<u64>,
}

impl AgentExecuteResponse {
    /// An envelope of `kind` with everything else unset.
    pub fn new(kind: Kind) -> Self {
        AgentExecuteResponse {
            kind,
            ..AgentExecuteResponse::default()
        }
    }
}

/// Decodes `null` as the default, so a client that writes `"warnings": null` is read as
/// one that wrote nothing.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// One tool call the model made (AGN-004 section 2.6).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
// Every field is always written (`null` when unset), so the schema requires each one.
// Decoding defaults each missing field on its own (`serde(default)` on each field that is
// not an `Option`, which serde reads as `None`): the same as `default` on the struct,
// which would give the derived schema a `default` for fields a reader always receives.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentToolCall {
    /// The call id (`call_...`) a tool result must answer with.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub call_id: String,
    /// The tool's name.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub name: String,
    /// The arguments exactly as the model emitted them: JSON text, possibly invalid.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub arguments_json: String,
}

/// Token counts of a turn. Missing counts are zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
// Every field is always written (`null` when unset), so the schema requires each one.
// Decoding defaults each missing field on its own (`serde(default)` on each field that is
// not an `Option`, which serde reads as `None`): the same as `default` on the struct,
// which would give the derived schema a `default` for fields a reader always receives.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LlmUsage {
    /// Input tokens (`input_tokens` on the wire).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub prompt_tokens: u64,
    /// Output tokens, reasoning included (`output_tokens`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub completion_tokens: u64,
    /// All tokens (`total_tokens`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub total_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub cached_tokens: u64,
    /// Output tokens spent on hidden reasoning.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub reasoning_tokens: u64,
}

impl From<&crate::wire::Usage> for LlmUsage {
    /// The wire's token counts under the envelope's names: a plain renaming (the wire
    /// type already reads the seed's names as aliases and missing counts as 0). A
    /// missing `total_tokens` stays 0 rather than being summed: the envelope reports what
    /// the provider counted.
    fn from(usage: &crate::wire::Usage) -> LlmUsage {
        LlmUsage {
            prompt_tokens: usage.input_tokens,
            completion_tokens: usage.output_tokens,
            total_tokens: usage.total_tokens,
            cached_tokens: usage.cached_tokens(),
            reasoning_tokens: usage.reasoning_tokens(),
        }
    }
}

impl LlmUsage {
    /// Adds `more` to these counts, saturating (a sum of many calls never wraps): the
    /// one way usage is totalled over a turn's model calls.
    pub fn add(&mut self, more: &LlmUsage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(more.prompt_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(more.completion_tokens);
        self.total_tokens = self.total_tokens.saturating_add(more.total_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(more.cached_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(more.reasoning_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::artifacts::BundleFile;
    use crate::contract::path::RelativePath;
    use serde_json::json;

    fn full() -> AgentExecuteResponse {
        AgentExecuteResponse {
            kind: Kind::ToolOnly,
            conversation_id: Some("s1".into()),
            turn_id: Some("t1".into()),
            agent_context_id: Some("ac".into()),
            conversation_context_id: Some("cc".into()),
            response_continuation_id: Some("resp_1".into()),
            mode: Some("codegen".into()),
            model_id: Some("gpt-5.1".into()),
            text: None,
            finish_reason: Some(FinishReason::ToolUse),
            usage: LlmUsage {
                prompt_tokens: 210,
                completion_tokens: 310,
                total_tokens: 520,
                cached_tokens: 64,
                reasoning_tokens: 128,
            },
            sources: vec![SourceRef {
                chunk_id: "c1".into(),
                path: "src/main.rs".into(),
                line_start: 1,
                line_end: 9,
                language: "rust".into(),
                score: Some(0.5),
            }],
            file_bundle: Some(FileBundle {
                files: vec![BundleFile {
                    path: RelativePath::new("src/new.rs").unwrap(),
                    content: "fn x() {}".into(),
                }],
            }),
            warnings: vec!["context truncated".into()],
            error_code: None,
            error_message: None,
            raw_response_json: Some("{\"id\":\"resp_1\"}".into()),
            tool_calls: vec![AgentToolCall {
                call_id: "call_1".into(),
                name: "read_file".into(),
                arguments_json: "{\"path\":\"a\"}".into(),
            }],
            request_id: Some("req_1".into()),
            refusal: None,
            rate_limits: Some(RateLimitInfo {
                limit_requests: Some(60),
                remaining_requests: Some(59),
                reset_requests_ms: Some(1000),
                limit_tokens: Some(150_000),
                remaining_tokens: None,
                reset_tokens_ms: None,
            }),
        }
    }

    #[test]
    fn serialises_every_field_in_camel_case() {
        let value = serde_json::to_value(full()).unwrap();
        assert_eq!(
            value,
            json!({
                "kind": "tool-only",
                "conversationId": "s1",
                "turnId": "t1",
                "agentContextId": "ac",
                "conversationContextId": "cc",
                "responseContinuationId": "resp_1",
                "mode": "codegen",
                "modelId": "gpt-5.1",
                "text": null,
                "finishReason": "tool_use",
                "usage": {
                    "promptTokens": 210, "completionTokens": 310, "totalTokens": 520,
                    "cachedTokens": 64, "reasoningTokens": 128
                },
                "sources": [{
                    "chunkId": "c1", "path": "src/main.rs", "lineStart": 1, "lineEnd": 9,
                    "language": "rust", "score": 0.5
                }],
                "fileBundle": {"files": [{"path": "src/new.rs", "content": "fn x() {}"}]},
                "warnings": ["context truncated"],
                "errorCode": null,
                "errorMessage": null,
                "rawResponseJson": "{\"id\":\"resp_1\"}",
                "toolCalls": [{"callId": "call_1", "name": "read_file", "argumentsJson": "{\"path\":\"a\"}"}],
                "requestId": "req_1",
                "refusal": null,
                "rateLimits": {
                    "limitRequests": 60, "remainingRequests": 59, "resetRequestsMs": 1000,
                    "limitTokens": 150000, "remainingTokens": null, "resetTokensMs": null
                }
            })
        );
    }

    #[test]
    fn round_trips() {
        let envelope = full();
        let text = serde_json::to_string(&envelope).unwrap();
        assert_eq!(
            serde_json::from_str::<AgentExecuteResponse>(&text).unwrap(),
            envelope
        );
        let empty = AgentExecuteResponse::new(Kind::Empty);
        let text = serde_json::to_string(&empty).unwrap();
        assert_eq!(
            serde_json::from_str::<AgentExecuteResponse>(&text).unwrap(),
            empty
        );
    }

    #[test]
    fn decoding_is_lenient() {
        let decoded: AgentExecuteResponse =
            serde_json::from_value(json!({"kind": "error", "errorCode": "429", "futureField": 1}))
                .unwrap();
        assert_eq!(decoded.kind, Kind::Error);
        assert_eq!(decoded.error_code.as_deref(), Some("429"));
        assert_eq!(decoded.usage, LlmUsage::default());
        assert!(decoded.tool_calls.is_empty() && decoded.text.is_none());
        let nulls: AgentExecuteResponse = serde_json::from_value(
            json!({"kind": null, "usage": null, "sources": null, "warnings": null, "toolCalls": null}),
        )
        .unwrap();
        assert_eq!(nulls, AgentExecuteResponse::default());
    }
}

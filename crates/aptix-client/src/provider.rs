//! The seam: [`ResponsesProvider`], what it reports about itself ([`Capabilities`])
//! and what a reply carries besides the wire `Response` ([`ReplyMeta`]).

use std::time::Duration;

use aptix_model::wire::{CompactRequest, CompactResponse, CreateResponseRequest, Response};
use async_trait::async_trait;

use crate::error::ClientError;
use crate::stream::EventStream;

/// Something that answers `/v1/responses` requests: the OpenAI Responses API over
/// HTTP, the Chat Completions bridge, a scripted fake.
///
/// Object safe and `Send + Sync`, so that the layers above hold an
/// `Arc<dyn ResponsesProvider>` and never name an implementation.
#[async_trait]
pub trait ResponsesProvider: Send + Sync {
    /// Sends the request and returns the complete response. The request's `stream`
    /// field is ignored: this call never streams.
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError>;

    /// Sends the request with streaming on and returns the events as they arrive,
    /// framed as the Responses API sends them. An `Err` item is a connection problem and
    /// the last item; what the events mean (an `error` event, a missing terminal event)
    /// is judged by the stream fold above. Drop the stream to cancel.
    ///
    /// The default answers with [`create`](Self::create) and plays the whole response
    /// as the events that would have carried it, each item's text or arguments as one
    /// delta ([`EventStream::from_response`]), for providers that cannot stream.
    async fn stream(&self, request: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        let reply = self.create(request).await?;
        Ok(EventStream::from_response(reply.meta, reply.response))
    }

    /// Streams a background response (`background: true`, `store: true`) again from
    /// after the event numbered `starting_after` (`GET /responses/{id}?stream=true&
    /// starting_after=N`), for a caller whose stream was cut: the events continue where
    /// the lost ones stopped, so nothing is shown twice.
    ///
    /// The default is [`ClientError::Unsupported`]: only a server that keeps responses
    /// can resume them.
    async fn resume_stream(
        &self,
        response_id: &str,
        starting_after: Option<u64>,
    ) -> Result<EventStream, ClientError> {
        let _ = (response_id, starting_after);
        Err(ClientError::Unsupported {
            provider: "this provider",
            feature: "resuming a background response's stream".to_owned(),
        })
    }

    /// Cancels a background response (`POST /responses/{id}/cancel`) that no one will
    /// read any more (its turn was stopped, or given up and sent again): the server
    /// would otherwise go on generating, and billing, to its end.
    ///
    /// The default is [`ClientError::Unsupported`]: only a server that keeps responses
    /// runs them in the background.
    async fn cancel(&self, response_id: &str) -> Result<(), ClientError> {
        let _ = response_id;
        Err(ClientError::Unsupported {
            provider: "this provider",
            feature: "cancelling a background response".to_owned(),
        })
    }

    /// Compacts a conversation on the server (`POST /v1/responses/compact`): the reply's
    /// `output` items replace the conversation in the next request's `input`. Only for
    /// providers whose [`Capabilities::compact_endpoint`] is true.
    ///
    /// The default is [`ClientError::Unsupported`]: a caller compacts locally instead.
    async fn compact(&self, request: &CompactRequest) -> Result<CompactResponse, ClientError> {
        let _ = request;
        Err(ClientError::Unsupported {
            provider: "this provider",
            feature: "compacting a conversation (/responses/compact)".to_owned(),
        })
    }

    /// What this provider can carry, so the layers above pick a strategy (native
    /// schema or a forced tool, `previous_response_id` or replayed history).
    fn capabilities(&self) -> Capabilities;

    /// What takes this provider's credentials out of text: the orchestrator passes what
    /// a turn adds to its session through it before the session is stored, since a
    /// workspace file holding the API key reaches a request as retrieved context or a
    /// tool's output (the HTTP providers also take it out of every request body they
    /// send). `None`, the default, for a provider that holds no credentials; a provider
    /// that wraps another passes its [`Redactor`](crate::Redactor) on.
    fn redactor(&self) -> Option<std::sync::Arc<crate::Redactor>> {
        None
    }
}

/// What a provider supports. A plain struct: build it with a constructor and change
/// fields as needed.
///
/// `Capabilities::default()` assumes nothing (every field `false`), the safe choice for
/// an unknown server: callers then replay history, and ask for JSON in the prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Capabilities {
    /// Native structured output: `text.format` with `json_schema`.
    pub native_json_schema: bool,
    /// Function tools and `function_call` output items.
    pub function_tools: bool,
    /// `strict: true` function tools (arguments guaranteed to match the schema).
    pub strict_tools: bool,
    /// Server-side conversation state through `previous_response_id`; without it the
    /// caller must replay the history in `input`.
    pub previous_response_id: bool,
    /// Native JSON schema output and tools in the same request.
    pub json_schema_with_tools: bool,
    /// Several function calls in one response (`parallel_tool_calls`).
    pub parallel_tool_calls: bool,
    /// `POST /v1/responses/compact` ([`ResponsesProvider::compact`]); without it a
    /// caller that must shrink a conversation summarises it with an ordinary request.
    pub compact_endpoint: bool,
}

impl Capabilities {
    /// The OpenAI Responses API: everything.
    pub fn openai_responses() -> Capabilities {
        Capabilities {
            native_json_schema: true,
            function_tools: true,
            strict_tools: true,
            previous_response_id: true,
            json_schema_with_tools: true,
            parallel_tool_calls: true,
            compact_endpoint: true,
        }
    }

    /// A `/v1/responses` server without stored state (llama.cpp's `llama-server`,
    /// vLLM, Ollama): everything but `previous_response_id` and the compaction endpoint.
    pub fn stateless_responses() -> Capabilities {
        Capabilities {
            previous_response_id: false,
            compact_endpoint: false,
            ..Capabilities::openai_responses()
        }
    }

    /// The Chat Completions bridge: tools and `response_format` json_schema, but no
    /// server-side state (callers replay history).
    pub fn chat_completions() -> Capabilities {
        Capabilities::stateless_responses()
    }
}

/// The wire `Response` plus what the reply's head said about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderResponse {
    /// The decoded response.
    pub response: Response,
    /// Status, request id, rate limits, attempts.
    pub meta: ReplyMeta,
    /// The body exactly as received, when it was `/v1/responses` JSON (the HTTP
    /// provider keeps it; a bridge or a fake has none). It becomes the envelope's
    /// `rawResponseJson` as is, instead of the response encoded again.
    pub raw_json: Option<String>,
}

impl ProviderResponse {
    /// A decoded response without its raw body.
    pub fn new(response: Response, meta: ReplyMeta) -> ProviderResponse {
        ProviderResponse {
            response,
            meta,
            raw_json: None,
        }
    }
}

/// Metadata of the reply that answered a call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplyMeta {
    /// The HTTP status (200 for fakes).
    pub status: u16,
    /// `x-request-id`, for OpenAI support and logs.
    pub request_id: Option<String>,
    /// The `x-ratelimit-*` headers, when the reply carried any.
    pub rate_limits: Option<RateLimits>,
    /// Attempts it took, retries included (1 when the first one succeeded).
    pub attempts: u32,
}

impl ReplyMeta {
    /// Metadata for a reply that did not come over HTTP (fakes, tests).
    pub fn synthetic() -> ReplyMeta {
        ReplyMeta {
            status: 200,
            request_id: None,
            rate_limits: None,
            attempts: 1,
        }
    }
}

/// The `x-ratelimit-*` headers, parsed. Each is `None` when absent or unreadable.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RateLimits {
    /// `x-ratelimit-limit-requests`.
    pub limit_requests: Option<u64>,
    /// `x-ratelimit-limit-tokens`.
    pub limit_tokens: Option<u64>,
    /// `x-ratelimit-remaining-requests`.
    pub remaining_requests: Option<u64>,
    /// `x-ratelimit-remaining-tokens`.
    pub remaining_tokens: Option<u64>,
    /// `x-ratelimit-reset-requests` (sent as a duration string like `2ms` or `6m0s`).
    pub reset_requests: Option<Duration>,
    /// `x-ratelimit-reset-tokens`.
    pub reset_tokens: Option<Duration>,
}

impl From<&RateLimits> for aptix_model::contract::RateLimitInfo {
    /// The envelope's view: counts as they came, reset times in milliseconds.
    fn from(limits: &RateLimits) -> Self {
        let millis = |reset: Option<Duration>| {
            reset.map(|reset| u64::try_from(reset.as_millis()).unwrap_or(u64::MAX))
        };
        aptix_model::contract::RateLimitInfo {
            limit_requests: limits.limit_requests,
            remaining_requests: limits.remaining_requests,
            reset_requests_ms: millis(limits.reset_requests),
            limit_tokens: limits.limit_tokens,
            remaining_tokens: limits.remaining_tokens,
            reset_tokens_ms: millis(limits.reset_tokens),
        }
    }
}

impl std::fmt::Display for RateLimits {
    /// `requests 59/60 left (reset in 1s), tokens 149000/150000 left (reset in 6m 0s)`:
    /// what is known, for a person reading logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let part =
            |what: &str, remaining: Option<u64>, limit: Option<u64>, reset: Option<Duration>| {
                let count = match (remaining, limit) {
                    (Some(remaining), Some(limit)) => format!("{remaining}/{limit} left"),
                    (Some(remaining), None) => format!("{remaining} left"),
                    (None, Some(limit)) => format!("limit {limit}"),
                    (None, None) => return None,
                };
                let reset = reset
                    .map(|wait| format!(" (reset in {})", crate::error::human_duration(wait)))
                    .unwrap_or_default();
                Some(format!("{what} {count}{reset}"))
            };
        let parts: Vec<String> = [
            part(
                "requests",
                self.remaining_requests,
                self.limit_requests,
                self.reset_requests,
            ),
            part(
                "tokens",
                self.remaining_tokens,
                self.limit_tokens,
                self.reset_tokens,
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            f.write_str("none reported")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_limits_read_as_what_is_left() {
        let limits = RateLimits {
            limit_requests: Some(60),
            remaining_requests: Some(59),
            reset_requests: Some(Duration::from_secs(1)),
            remaining_tokens: Some(149_000),
            limit_tokens: Some(150_000),
            reset_tokens: Some(Duration::from_secs(360)),
        };
        assert_eq!(
            limits.to_string(),
            "requests 59/60 left (reset in 1s), tokens 149000/150000 left (reset in 6m 0s)"
        );
        assert_eq!(RateLimits::default().to_string(), "none reported");
    }

    #[test]
    fn the_trait_is_object_safe_send_and_sync() {
        fn assert_send_sync<T: Send + Sync + ?Sized>() {}
        assert_send_sync::<dyn ResponsesProvider>();
        let _: Option<std::sync::Arc<dyn ResponsesProvider>> = None;
    }

    #[test]
    fn default_capabilities_assume_nothing() {
        assert_eq!(
            Capabilities::default(),
            Capabilities {
                native_json_schema: false,
                function_tools: false,
                strict_tools: false,
                previous_response_id: false,
                json_schema_with_tools: false,
                parallel_tool_calls: false,
                compact_endpoint: false,
            }
        );
        assert!(Capabilities::openai_responses().compact_endpoint);
        assert!(!Capabilities::stateless_responses().compact_endpoint);
        assert!(!Capabilities::chat_completions().compact_endpoint);
        assert!(!Capabilities::chat_completions().previous_response_id);
        assert!(Capabilities::openai_responses().previous_response_id);
    }
}

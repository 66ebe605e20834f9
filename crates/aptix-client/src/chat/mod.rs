//! The Chat Completions bridge: a [`ResponsesProvider`](crate::ResponsesProvider) for
//! servers that speak only `POST /v1/chat/completions`, so that everything above the
//! provider seam keeps speaking Responses.
//!
//! Split by direction: [`to_chat_request`] (Responses request -> chat request),
//! [`from_chat_completion`] (chat reply -> `Response`) and [`ChatStreamTranslator`]
//! (chat chunks -> Responses stream events ending in the folded `Response`). All three
//! are pure and compile without the `http` feature; the provider that sends them is
//! `ChatCompletionsProvider` (with the `http` feature).
//!
//! What the bridge cannot carry is reported, not dropped: `previous_response_id` (and
//! stored item references) are [`ClientError::Unsupported`](crate::ClientError) (callers
//! replay history instead, as [`Capabilities::chat_completions`](crate::Capabilities)
//! says), as are hosted tools and unknown item, part or format types. `docs/client.md`
//! has the full mapping table.

mod reply;
mod request;
mod stream;
mod wire;

#[cfg(feature = "http")]
mod provider;

pub use reply::from_chat_completion;
pub use request::to_chat_request;
pub use stream::ChatStreamTranslator;

#[cfg(feature = "http")]
pub use provider::ChatCompletionsProvider;

/// The provider name in [`ClientError::Unsupported`](crate::ClientError).
pub(crate) const BRIDGE: &str = "the chat completions bridge";

/// Options of the request translation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChatOptions {
    /// Which field carries `max_output_tokens`.
    pub max_tokens_field: MaxTokensField,
}

/// Which Chat Completions field carries the token limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_completion_tokens`: OpenAI's current name, the only one its reasoning
    /// models accept; vLLM and recent llama.cpp read it too.
    #[default]
    MaxCompletionTokens,
    /// `max_tokens`: the deprecated name, for servers that know only it.
    MaxTokens,
}

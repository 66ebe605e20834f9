//! [`ChatCompletionsProvider`]: the bridge over HTTP.

use std::fmt;
use std::sync::Arc;

use aptix_model::wire::{CreateResponseRequest, StreamEvent};
use async_trait::async_trait;
use bytes::Bytes;
use http::HeaderMap;

use super::stream::ChatStreamTranslator;
use super::{ChatOptions, from_chat_completion, request};
use crate::config::OpenAiConfig;
use crate::error::ClientError;
use crate::openai::{check_event_stream, is_json, whole_reply_as_event};
use crate::provider::{Capabilities, ProviderResponse, ResponsesProvider};
use crate::sse_body::{DataHandler, Items, event_stream};
use crate::stream::{EventStream, frame};
use crate::transport::HttpTransport;

/// The Chat Completions endpoint below the base URL.
const CHAT_PATH: &str = "chat/completions";

/// A provider for servers that speak only `/v1/chat/completions`: requests and
/// replies (streamed ones included) are translated to and from the Responses shapes.
/// Same configuration, retries, timeouts and errors as
/// [`OpenAiProvider`](crate::OpenAiProvider).
///
/// Capabilities default to [`Capabilities::chat_completions`]: no
/// `previous_response_id`, so callers replay history.
#[derive(Clone)]
pub struct ChatCompletionsProvider {
    transport: Arc<HttpTransport>,
    options: ChatOptions,
}

impl ChatCompletionsProvider {
    /// A bridge for a validated configuration.
    pub fn new(config: OpenAiConfig) -> Result<ChatCompletionsProvider, ClientError> {
        Ok(ChatCompletionsProvider {
            transport: Arc::new(HttpTransport::new(config)?),
            options: ChatOptions::default(),
        })
    }

    /// A bridge configured from the environment, as
    /// [`OpenAiConfig::from_env`] reads it.
    pub fn from_env() -> Result<ChatCompletionsProvider, ClientError> {
        ChatCompletionsProvider::new(OpenAiConfig::from_env()?)
    }

    /// The translation options.
    pub fn with_options(mut self, options: ChatOptions) -> ChatCompletionsProvider {
        self.options = options;
        self
    }

    /// A bridge sharing this one's connection pool that also sends `headers`.
    pub fn with_extra_headers(&self, headers: &HeaderMap) -> ChatCompletionsProvider {
        ChatCompletionsProvider {
            transport: Arc::new(self.transport.with_headers(headers)),
            options: self.options,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        self.transport.config()
    }

    fn body(&self, request: &CreateResponseRequest, stream: bool) -> Result<Bytes, ClientError> {
        let chat = request::build(request, &self.options, stream)?;
        serde_json::to_vec(&chat)
            .map(Bytes::from)
            .map_err(|error| ClientError::decode("chat request", &[], 0, error.to_string()))
    }
}

#[async_trait]
impl ResponsesProvider for ChatCompletionsProvider {
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        let body = self.body(request, false)?;
        let (bytes, meta) = self.transport.post(CHAT_PATH, body).await?;
        let response = from_chat_completion(&bytes)
            .map_err(|e| e.with_request_id(meta.request_id.as_deref()))?;
        Ok(ProviderResponse::new(response, meta))
    }

    async fn stream(&self, request: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        let body = self.body(request, true)?;
        let (response, meta) = self.transport.post_for_stream(CHAT_PATH, body).await?;
        if is_json(&response) {
            // A server that ignored `stream: true` (small local servers do): its whole
            // completion, as the final event a stream of it would end with.
            return Ok(whole_reply_as_event(
                response,
                meta,
                self.config(),
                |bytes: &[u8], request_id: Option<&str>| {
                    let response = from_chat_completion(bytes)
                        .map_err(|error| error.with_request_id(request_id))?;
                    Ok(frame(&StreamEvent::terminal(Some(0), response)))
                },
            ));
        }
        check_event_stream(&response, &meta)?;
        let transport = Arc::clone(&self.transport);
        Ok(event_stream(
            response,
            meta,
            self.config().timeouts().stream_idle,
            ChunkEvents(ChatStreamTranslator::new()),
            transport,
        ))
    }

    fn redactor(&self) -> Option<Arc<crate::Redactor>> {
        self.transport.redactor()
    }

    fn capabilities(&self) -> Capabilities {
        self.config()
            .capabilities()
            .unwrap_or_else(Capabilities::chat_completions)
    }
}

/// Chat chunks in, Responses events out.
struct ChunkEvents(ChatStreamTranslator);

impl DataHandler for ChunkEvents {
    fn on_event(&mut self, event: aptix_sse::SseEvent, out: &mut Items) {
        match self.0.push_data(&event.data) {
            Ok(events) => out.extend(events.iter().map(|event| Ok(frame(event)))),
            Err(error) => out.push(Err(error)),
        }
    }

    fn on_end(&mut self, out: &mut Items) {
        out.extend(self.0.finish().iter().map(|event| Ok(frame(event))));
    }
}

impl fmt::Debug for ChatCompletionsProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatCompletionsProvider")
            .field("config", self.config())
            .field("options", &self.options)
            .finish()
    }
}

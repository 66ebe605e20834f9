//! [`OpenAiProvider`]: the OpenAI Responses API (and any server that speaks
//! `POST /v1/responses`: llama.cpp's `llama-server`, vLLM, Ollama, Azure) over HTTP.

use std::fmt;
use std::sync::Arc;

use aptix_model::wire::{
    CompactRequest, CompactResponse, CreateResponseRequest, Response, StreamEvent,
};
use async_trait::async_trait;
use bytes::Bytes;
use http::HeaderMap;

use crate::config::OpenAiConfig;
use crate::error::{ClientError, json_decode_error};
use crate::provider::{Capabilities, ProviderResponse, ResponsesProvider};
use crate::sse_body::{ResponsesEvents, event_stream};
use crate::stream::EventStream;
use crate::transport::HttpTransport;

/// The Responses endpoint below the base URL.
const RESPONSES_PATH: &str = "responses";

/// The compaction endpoint below the base URL.
const COMPACT_PATH: &str = "responses/compact";

/// The OpenAI Responses API over HTTP. Cheap to clone (the connection pool is shared).
///
/// Capabilities default to [`Capabilities::openai_responses`]; set
/// [`OpenAiConfigBuilder::capabilities`](crate::OpenAiConfigBuilder::capabilities) for
/// a server without stored state.
#[derive(Clone)]
pub struct OpenAiProvider {
    transport: Arc<HttpTransport>,
}

impl OpenAiProvider {
    /// A provider for a validated configuration.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiProvider, ClientError> {
        Ok(OpenAiProvider {
            transport: Arc::new(HttpTransport::new(config)?),
        })
    }

    /// A provider configured from `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
    /// `OPENAI_ORG_ID` and `OPENAI_PROJECT_ID`.
    pub fn from_env() -> Result<OpenAiProvider, ClientError> {
        OpenAiProvider::new(OpenAiConfig::from_env()?)
    }

    /// A provider sharing this one's connection pool that also sends `headers` with
    /// every request: per-call extra headers without touching the configuration.
    pub fn with_extra_headers(&self, headers: &HeaderMap) -> OpenAiProvider {
        OpenAiProvider {
            transport: Arc::new(self.transport.with_headers(headers)),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        self.transport.config()
    }

    /// A streamed reply's events: checked to be an event stream, framed, scrubbed, and
    /// ended by the idle timeout.
    fn events(
        &self,
        response: reqwest::Response,
        meta: crate::provider::ReplyMeta,
    ) -> Result<EventStream, ClientError> {
        if is_json(&response) {
            return Ok(self.whole_reply(response, meta));
        }
        check_event_stream(&response, &meta)?;
        let transport = Arc::clone(&self.transport);
        Ok(event_stream(
            response,
            meta,
            self.config().timeouts().stream_idle,
            ResponsesEvents,
            transport,
        ))
    }

    /// A server that ignored `stream: true` and answered with the whole response as
    /// JSON (some proxies and local servers do): the reply as the one event a stream of
    /// it would end with (`response.completed`, `.incomplete` or `.failed`, by its
    /// status), so the turn goes on as if it had streamed, with no deltas before.
    fn whole_reply(
        &self,
        response: reqwest::Response,
        meta: crate::provider::ReplyMeta,
    ) -> EventStream {
        whole_reply_as_event(
            response,
            meta,
            self.config(),
            |bytes: &[u8], request_id: Option<&str>| {
                // Read for its status only: the fold decodes the response itself, once.
                #[derive(serde::Deserialize)]
                struct Status {
                    #[serde(default)]
                    status: Option<aptix_model::wire::ResponseStatus>,
                }
                let decoded: Status = serde_json::from_slice(bytes).map_err(|error| {
                    json_decode_error("reply", bytes, &error).with_request_id(request_id)
                })?;
                let kind = StreamEvent::terminal_type(decoded.status.as_ref());
                let body = String::from_utf8_lossy(bytes);
                Ok(aptix_sse::SseEvent {
                    event: Some(kind.to_owned()),
                    data: format!(
                        r#"{{"type":"{kind}","sequence_number":0,"response":{}}}"#,
                        body.trim()
                    ),
                    id: None,
                    retry: None,
                })
            },
        )
    }

    fn body(&self, request: &CreateResponseRequest, stream: bool) -> Result<Bytes, ClientError> {
        // The method decides streaming, whatever the request says: `create` on an SSE
        // reply could not decode it. A request that says so already is sent as it is,
        // not copied (it holds the whole context, and without server state the history).
        let wanted = stream.then_some(true);
        let encoded = if request.stream == wanted {
            serde_json::to_vec(request)
        } else {
            let mut request = request.clone();
            request.stream = wanted;
            serde_json::to_vec(&request)
        };
        encoded
            .map(Bytes::from)
            .map_err(|error| ClientError::decode("request", &[], 0, error.to_string()))
    }
}

#[async_trait]
impl ResponsesProvider for OpenAiProvider {
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        let body = self.body(request, false)?;
        let (bytes, meta) = self.transport.post(RESPONSES_PATH, body).await?;
        // The body is kept as the envelope's `rawResponseJson`. `String::from_utf8`
        // takes the reply's buffer over (no copy when it arrived in one piece) and
        // checks it once; decoding from the `str` then skips serde's own check.
        let (response, raw_json) = match String::from_utf8(Vec::from(bytes)) {
            Ok(text) => {
                let response = serde_json::from_str::<Response>(&text).map_err(|error| {
                    json_decode_error("response body", text.as_bytes(), &error)
                        .with_request_id(meta.request_id.as_deref())
                })?;
                (response, Some(text))
            }
            Err(not_utf8) => {
                let bytes = not_utf8.into_bytes();
                let response = serde_json::from_slice::<Response>(&bytes).map_err(|error| {
                    json_decode_error("response body", &bytes, &error)
                        .with_request_id(meta.request_id.as_deref())
                })?;
                (response, None)
            }
        };
        Ok(ProviderResponse {
            response,
            meta,
            raw_json,
        })
    }

    async fn stream(&self, request: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        let body = self.body(request, true)?;
        let (response, meta) = self.transport.post_for_stream(RESPONSES_PATH, body).await?;
        self.events(response, meta)
    }

    async fn resume_stream(
        &self,
        response_id: &str,
        starting_after: Option<u64>,
    ) -> Result<EventStream, ClientError> {
        check_response_id(response_id)?;
        let mut query = "stream=true".to_owned();
        if let Some(after) = starting_after {
            query.push_str(&format!("&starting_after={after}"));
        }
        let path = format!("{RESPONSES_PATH}/{response_id}");
        let (response, meta) = self.transport.get_for_stream(&path, &query).await?;
        self.events(response, meta)
    }

    async fn cancel(&self, response_id: &str) -> Result<(), ClientError> {
        check_response_id(response_id)?;
        let path = format!("{RESPONSES_PATH}/{response_id}/cancel");
        self.transport
            .post(&path, Bytes::from_static(b"{}"))
            .await
            .map(|_| ())
    }

    async fn compact(&self, request: &CompactRequest) -> Result<CompactResponse, ClientError> {
        if !self.capabilities().compact_endpoint {
            return Err(ClientError::Unsupported {
                provider: "this server",
                feature: "compacting a conversation (/responses/compact)".to_owned(),
            });
        }
        let body = serde_json::to_vec(request)
            .map(Bytes::from)
            .map_err(|error| ClientError::decode("compact request", &[], 0, error.to_string()))?;
        let (bytes, meta) = self.transport.post(COMPACT_PATH, body).await?;
        serde_json::from_slice::<CompactResponse>(&bytes).map_err(|error| {
            json_decode_error("compact reply", &bytes, &error)
                .with_request_id(meta.request_id.as_deref())
        })
    }

    fn redactor(&self) -> Option<Arc<crate::Redactor>> {
        self.transport.redactor()
    }

    fn capabilities(&self) -> Capabilities {
        self.config()
            .capabilities()
            .unwrap_or_else(Capabilities::openai_responses)
    }
}

/// A whole JSON reply to a streamed request, read within the request timeout and
/// scrubbed of the key, as the one event `to_event` makes of its bytes (given the
/// reply's request id for its errors): the stream a provider hands on when a server
/// ignored `stream: true`.
pub(crate) fn whole_reply_as_event(
    response: reqwest::Response,
    meta: crate::provider::ReplyMeta,
    config: &crate::OpenAiConfig,
    to_event: impl FnOnce(&[u8], Option<&str>) -> Result<aptix_sse::SseEvent, ClientError>
    + Send
    + 'static,
) -> EventStream {
    let secret = config.secret().map(str::to_owned);
    let limit = config.timeouts().request;
    let request_id = meta.request_id.clone();
    let status = meta.status;
    tracing::debug!("a streamed request was answered with JSON; reading it whole");
    let event = async move {
        let read = crate::transport::read_reply(response);
        let bytes = match limit {
            Some(limit) => {
                tokio::time::timeout(limit, read)
                    .await
                    .map_err(|_| ClientError::Timeout {
                        kind: crate::TimeoutKind::Request,
                        after: limit,
                    })?
            }
            None => read.await,
        }
        .map_err(|error| match error {
            crate::transport::ReplyError::Read(error) => {
                ClientError::decode("reply", &[], 0, error.to_string())
            }
            crate::transport::ReplyError::TooLarge(error) => error,
        })?;
        let bytes = crate::transport::scrub_bytes(bytes, secret.as_deref());
        // An error body with a success status (some proxies send one): the server's own
        // words, not a reply that does not decode.
        #[derive(serde::Deserialize)]
        struct Probe {
            #[serde(default)]
            id: Option<serde::de::IgnoredAny>,
            #[serde(default)]
            error: Option<serde_json::Value>,
        }
        if serde_json::from_slice::<Probe>(&bytes)
            .is_ok_and(|probe| probe.id.is_none() && probe.error.is_some_and(|e| !e.is_null()))
        {
            return Err(crate::transport::status_error_of_body(
                status,
                &bytes,
                request_id.as_deref(),
            ));
        }
        to_event(&bytes, request_id.as_deref())
    };
    EventStream::new(meta, futures_util::stream::once(event))
}

/// Whether a reply says it is JSON.
pub(crate) fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        })
}

/// A 2xx reply to a streaming request must be an event stream; a server that ignored
/// `stream: true` and sent JSON would otherwise read as "ended without a terminal
/// event". A missing content type is accepted.
pub(crate) fn check_event_stream(
    response: &reqwest::Response,
    meta: &crate::provider::ReplyMeta,
) -> Result<(), ClientError> {
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("text/event-stream");
    if content_type
        .trim_start()
        .to_ascii_lowercase()
        .starts_with("text/event-stream")
    {
        return Ok(());
    }
    Err(ClientError::Decode {
        what: "stream reply",
        position: 0,
        message: format!("expected content type text/event-stream, got {content_type}"),
        excerpt: String::new(),
        request_id: meta.request_id.clone(),
    })
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("config", self.config())
            .finish()
    }
}

/// A response id as the server makes them (`resp_...`): it goes into a URL path, so
/// anything else is refused before a request is made.
fn check_response_id(response_id: &str) -> Result<(), ClientError> {
    if response_id.is_empty()
        || !response_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(ClientError::config(
            "response_id",
            format!("{response_id:?} is not a response id"),
        ));
    }
    Ok(())
}

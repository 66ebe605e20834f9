//! Sending one JSON POST with retries: the part both HTTP providers share.
//!
//! Each attempt runs in its own tracing span (`aptix_client.attempt`, with the attempt
//! number, endpoint, `provider_status` and `provider_request_id`); the retry decision comes from the pure
//! [`RetryPolicy`] through `backon` (`.when()` classifies, `.adjust()` applies
//! `retry-after-ms` / `retry-after` and the wait cap), never from code in here.
//! Headers are never recorded: they hold the key.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use aptix_model::wire::ApiError;
use backon::{ExponentialBuilder, Retryable};
use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;
use tracing::Instrument;

use crate::config::OpenAiConfig;
use crate::error::{ClientError, MAX_RAW_BODY, TimeoutKind, TransportPhase, truncate};
use crate::provider::ReplyMeta;
use crate::redact::{key_tail, scrub};
use crate::retry::{Failure, RetryPolicy, headers};

/// The most of an error body read; bodies are decoded (JSON) or truncated to
/// [`MAX_RAW_BODY`] after that.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A configured HTTP client for one base URL.
#[derive(Clone)]
pub(crate) struct HttpTransport {
    client: reqwest::Client,
    config: OpenAiConfig,
    headers: HeaderMap,
    /// The key's redactor, for what the layers above store (see
    /// [`ResponsesProvider::redactor`](crate::ResponsesProvider::redactor)).
    redactor: Option<Arc<crate::Redactor>>,
}

/// A failed attempt: the error for the caller plus the headers the policy reads.
struct AttemptError {
    error: ClientError,
    /// Boxed: only failures carry it, and it would double the error's size.
    headers: Box<HeaderMap>,
}

impl AttemptError {
    fn new(error: ClientError) -> AttemptError {
        AttemptError {
            error,
            headers: Box::default(),
        }
    }

    fn failure(&self) -> Failure<'_> {
        match &self.error {
            ClientError::Status {
                status, api_error, ..
            } => Failure::Status {
                status: *status,
                headers: &self.headers,
                error: api_error.as_deref(),
            },
            ClientError::Transport { phase, .. } => Failure::Transport(*phase),
            ClientError::Timeout { kind, .. } => Failure::Timeout(*kind),
            _ => Failure::Permanent,
        }
    }
}

impl HttpTransport {
    /// Builds the client: rustls, the connect timeout and pool settings from `config`.
    pub(crate) fn new(config: OpenAiConfig) -> Result<HttpTransport, ClientError> {
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("aptix/", env!("CARGO_PKG_VERSION")))
            .pool_idle_timeout(config.pool_idle_timeout());
        if let Some(timeout) = config.timeouts().connect {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder.build().map_err(|error| {
            ClientError::config("http_client", error_chain(&error, config.secret()))
        })?;
        let headers = config.headers();
        // A placeholder key (`x`, `ollama`) is left alone, as in request bodies.
        let redactor = config
            .secret()
            .filter(|secret| crate::redact::is_scrubbed_key(secret))
            .map(|secret| Arc::new(crate::Redactor::new(secret)));
        Ok(HttpTransport {
            client,
            config,
            headers,
            redactor,
        })
    }

    /// The key's redactor, when the key is one worth taking out of text.
    pub(crate) fn redactor(&self) -> Option<Arc<crate::Redactor>> {
        self.redactor.clone()
    }

    /// The configuration.
    pub(crate) fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// A copy that also sends `extra` with every request.
    pub(crate) fn with_headers(&self, extra: &HeaderMap) -> HttpTransport {
        let mut transport = self.clone();
        for (name, value) in extra {
            let mut value = value.clone();
            value.set_sensitive(true);
            transport.headers.insert(name.clone(), value);
        }
        transport
    }

    /// Removes the key from text the server or the HTTP stack produced.
    pub(crate) fn scrub(&self, text: &str) -> String {
        scrub(text, self.config.secret())
    }

    /// `body` with the API key taken out: the key goes in its auth header
    /// (`Authorization`, or `api-key`) and nowhere else. A workspace file that holds it (a config committed with the
    /// key, a script) reaches a request as retrieved context or a tool's output, which
    /// the model's provider would then read and keep.
    fn keyless(&self, body: Bytes) -> Bytes {
        // The key's redactor: a placeholder key (`x`, `ollama`) has none.
        let Some(redactor) = &self.redactor else {
            return body;
        };
        // A vectorised byte search: the common body holds no key and is sent as it is.
        if !redactor.holds(&body) {
            return body;
        }
        tracing::warn!(
            "the request held the API key (a file of the workspace holds it?); it is sent as [redacted]"
        );
        // JSON text, and a key has no character JSON escapes: replaced as text.
        let text = String::from_utf8_lossy(&body);
        Bytes::from(redactor.redact(&text).unwrap_or_else(|| text.into_owned()))
    }

    /// The reply's `x-request-id`, scrubbed: it is copied into envelopes, errors and
    /// logs, and a proxy that echoes what it was sent could put the key in it.
    fn request_id(&self, reply_headers: &HeaderMap) -> Option<String> {
        // As streamed content is: a placeholder key (`x`) rewrites nothing.
        headers::request_id(reply_headers).map(|id| self.scrub_if_needed(&id).unwrap_or(id))
    }

    /// The scrubbed text, or `None` when `text` holds no form of the key (the common
    /// case, which costs a substring search and no copy).
    pub(crate) fn scrub_if_needed(&self, text: &str) -> Option<String> {
        // Streamed content: a placeholder key is left alone (see `is_scrubbed_key`).
        let secret = self
            .config
            .secret()
            .filter(|secret| crate::redact::is_scrubbed_key(secret))?;
        let needle = key_tail(secret).unwrap_or(secret);
        text.contains(needle).then(|| scrub(text, Some(secret)))
    }

    /// A guard against the key split across streamed deltas, when there is a key.
    pub(crate) fn delta_guard(&self) -> Option<crate::split_secret::DeltaGuard> {
        crate::split_secret::DeltaGuard::new(self.config.secret())
    }

    /// The error and its sources as one scrubbed line.
    pub(crate) fn describe(&self, error: &dyn std::error::Error) -> String {
        error_chain(error, self.config.secret())
    }

    /// POSTs `body` to `path` and reads the whole reply, retrying as the policy says.
    /// Each attempt (body included) is bounded by the request timeout.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: Bytes,
    ) -> Result<(Bytes, ReplyMeta), ClientError> {
        let timeout = self.config.timeouts().request;
        self.with_retries(path, |attempt| {
            let body = body.clone();
            async move {
                let work = async {
                    let response = self.send(path, body).await?;
                    let meta = self.accept(response.status(), response.headers(), attempt);
                    let meta = match meta {
                        Ok(meta) => meta,
                        Err(headers) => return Err(self.status_error(response, headers).await),
                    };
                    let bytes = read_reply(response).await.map_err(|error| match error {
                        ReplyError::Read(error) => AttemptError::new(
                            self.transport_error(TransportPhase::ReadBody, &error),
                        ),
                        ReplyError::TooLarge(error) => AttemptError::new(error),
                    })?;
                    // A whole reply can echo the key too (a `failed` response's error).
                    Ok((scrub_bytes(bytes, self.config.secret()), meta))
                };
                bounded(timeout, TimeoutKind::Request, work).await
            }
        })
        .await
    }

    /// POSTs `body` to `path` and returns the reply once its head says 2xx, retrying
    /// as the policy says until then. The wait for the head is bounded by the stream
    /// idle timeout; the body is the caller's to read.
    pub(crate) async fn post_for_stream(
        &self,
        path: &str,
        body: Bytes,
    ) -> Result<(reqwest::Response, ReplyMeta), ClientError> {
        let timeout = self.config.timeouts().stream_idle;
        self.with_retries(path, |attempt| {
            let body = body.clone();
            async move {
                let work = async {
                    let response = self.send(path, body).await?;
                    match self.accept(response.status(), response.headers(), attempt) {
                        Ok(meta) => Ok((response, meta)),
                        Err(headers) => Err(self.status_error(response, headers).await),
                    }
                };
                bounded(timeout, TimeoutKind::StreamIdle, work).await
            }
        })
        .await
    }

    /// GETs `path` with `query` appended (after the base URL's own query, if any) and
    /// returns the reply once its head says 2xx, retrying as for
    /// [`post_for_stream`](Self::post_for_stream). Resuming a background response's
    /// stream goes through here.
    pub(crate) async fn get_for_stream(
        &self,
        path: &str,
        query: &str,
    ) -> Result<(reqwest::Response, ReplyMeta), ClientError> {
        let timeout = self.config.timeouts().stream_idle;
        let mut url = self.config.endpoint(path);
        url.push(if url.contains('?') { '&' } else { '?' });
        url.push_str(query);
        let url = &url;
        self.with_retries(path, |attempt| async move {
            let work = async {
                let response = self
                    .client
                    .get(url)
                    .headers(self.headers.clone())
                    .header(http::header::ACCEPT, "text/event-stream")
                    .send()
                    .await
                    .map_err(|error| AttemptError::new(self.send_error(&error)))?;
                match self.accept(response.status(), response.headers(), attempt) {
                    Ok(meta) => Ok((response, meta)),
                    Err(headers) => Err(self.status_error(response, headers).await),
                }
            };
            bounded(timeout, TimeoutKind::StreamIdle, work).await
        })
        .await
    }

    async fn with_retries<T, F, Fut>(&self, path: &str, mut attempt_fn: F) -> Result<T, ClientError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, AttemptError>>,
    {
        let policy: RetryPolicy = self.config.retry();
        let mut backoff = ExponentialBuilder::default()
            .with_min_delay(policy.initial_backoff)
            .with_max_delay(policy.max_backoff)
            .with_max_times(usize::try_from(policy.max_retries).unwrap_or(usize::MAX));
        if policy.jitter {
            backoff = backoff.with_jitter();
        }
        let attempts = AtomicU32::new(0);
        let run = || {
            let attempt = attempts.fetch_add(1, Ordering::Relaxed).saturating_add(1);
            let span = tracing::info_span!(
                "aptix_client.attempt",
                attempt,
                endpoint = path,
                // Named for the provider: recorded from inside the attempt, a field
                // the enclosing span also has (a service's `request_id`) would be
                // overwritten there when this span is filtered out.
                provider_status = tracing::field::Empty,
                provider_request_id = tracing::field::Empty,
            );
            let future = attempt_fn(attempt);
            async move {
                let result = future.await;
                if let Err(failed) = &result {
                    tracing::debug!(error = %failed.error, "attempt failed");
                }
                result
            }
            .instrument(span)
        };
        run.retry(backoff)
            .sleep(tokio::time::sleep)
            .when(
                |failed: &AttemptError| match policy.classify(&failed.failure()) {
                    Ok(()) => true,
                    Err(reason) => {
                        tracing::debug!(?reason, "not retrying");
                        false
                    }
                },
            )
            .adjust(|failed: &AttemptError, next| {
                match policy.delay(&failed.failure(), next, SystemTime::now()) {
                    Ok(wait) => Some(wait),
                    Err(reason) => {
                        tracing::debug!(?reason, "not retrying");
                        None
                    }
                }
            })
            .notify(|failed: &AttemptError, wait: Duration| {
                let retry = attempts.load(Ordering::Relaxed);
                tracing::warn!(
                    error = %failed.error,
                    wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    "{}",
                    retry_note(&failed.error, wait, retry, policy.max_retries)
                );
                crate::retry::notify(&crate::RetryNotice {
                    attempt: retry.saturating_add(1),
                    max_attempts: policy.max_retries.saturating_add(1),
                    wait,
                    reason: retry_reason(&failed.error),
                });
            })
            .await
            .map_err(|failed| failed.error)
    }

    async fn send(&self, path: &str, body: Bytes) -> Result<reqwest::Response, AttemptError> {
        let body = self.keyless(body);
        self.client
            .post(self.config.endpoint(path))
            .headers(self.headers.clone())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|error| AttemptError::new(self.send_error(&error)))
    }

    /// Records the head in the span; `Ok(meta)` for 2xx, else the headers for the
    /// status error.
    fn accept(
        &self,
        status: reqwest::StatusCode,
        reply_headers: &HeaderMap,
        attempt: u32,
    ) -> Result<ReplyMeta, HeaderMap> {
        let span = tracing::Span::current();
        span.record("provider_status", status.as_u16());
        let request_id = self.request_id(reply_headers);
        if let Some(id) = &request_id {
            span.record("provider_request_id", id.as_str());
        }
        if !status.is_success() {
            return Err(reply_headers.clone());
        }
        Ok(ReplyMeta {
            status: status.as_u16(),
            request_id,
            rate_limits: headers::rate_limits(reply_headers),
            attempts: attempt,
        })
    }

    /// Reads a non-2xx reply into a typed error. The body is decoded as
    /// `{"error": {...}}`, as a flat error object (vLLM), or as `{"error": "text"}`;
    /// anything else is kept as truncated text.
    async fn status_error(&self, response: reqwest::Response, headers: HeaderMap) -> AttemptError {
        let status = response.status().as_u16();
        let body = read_capped(response, MAX_ERROR_BODY).await;
        let (api_error, raw_body) = match decode_error_body(&body) {
            Some(mut error) => {
                // Every text of it, not only the message: a server may echo anything
                // it was sent in any member.
                error.message = self.scrub(&error.message);
                for text in [&mut error.kind, &mut error.param, &mut error.code]
                    .into_iter()
                    .flatten()
                {
                    *text = self.scrub(text);
                }
                // The body as sent too, scrubbed, when it is short enough to keep whole:
                // a caller that records it (`rawResponseJson`) gets every member, not
                // only those `ApiError` knows.
                let text = self.scrub(String::from_utf8_lossy(&body).trim());
                let raw = (!text.is_empty() && text.len() <= MAX_RAW_BODY).then_some(text);
                (Some(Box::new(error)), raw)
            }
            None => {
                let text = self.scrub(String::from_utf8_lossy(&body).trim());
                let text = if is_html(&headers, &text) {
                    html_summary(&text)
                } else {
                    text
                };
                (
                    None,
                    (!text.is_empty()).then(|| truncate(&text, MAX_RAW_BODY)),
                )
            }
        };
        // A server that wants a key, sent none: not a key it refused (the advice to
        // check the key would send the reader after a key that was never set).
        let api_error = if status == 401 && !self.config.has_api_key() {
            let said = api_error
                .as_ref()
                .map(|error| error.message.clone())
                .or_else(|| raw_body.clone())
                .filter(|text| !text.is_empty())
                .unwrap_or_else(|| "unauthorized".to_owned());
            Some(Box::new(aptix_model::wire::ApiError {
                message: format!("{said} (no API key was sent: this server wants one)"),
                code: Some(crate::remedy::MISSING_API_KEY.to_owned()),
                ..api_error.map(|error| *error).unwrap_or_default()
            }))
        } else {
            api_error
        };
        let error = ClientError::Status {
            status,
            api_error,
            raw_body,
            request_id: self.request_id(&headers),
            retry_after: headers::retry_after(&headers, SystemTime::now()),
        };
        AttemptError {
            error,
            headers: Box::new(headers),
        }
    }

    fn send_error(&self, error: &reqwest::Error) -> ClientError {
        if error.is_builder() {
            return ClientError::config("base_url", error_chain(error, self.config.secret()));
        }
        if error.is_connect() && error.is_timeout() {
            return ClientError::Timeout {
                kind: TimeoutKind::Connect,
                after: self.config.timeouts().connect.unwrap_or_default(),
            };
        }
        let phase = if error.is_connect() {
            TransportPhase::Connect
        } else {
            TransportPhase::Send
        };
        self.transport_error(phase, error)
    }

    pub(crate) fn transport_error(
        &self,
        phase: TransportPhase,
        error: &reqwest::Error,
    ) -> ClientError {
        ClientError::Transport {
            phase,
            message: error_chain(error, self.config.secret()),
            source: None,
        }
    }
}

/// What a retry warning says: "rate limited (429); retrying in 1.5s (retry 1 of 2)",
/// or the failure itself for anything else.
fn retry_note(error: &ClientError, wait: Duration, retry: u32, max_retries: u32) -> String {
    format!(
        "{}; retrying in {} (retry {retry} of {max_retries})",
        retry_reason(error),
        crate::error::human_duration(wait)
    )
}

/// Why a request is retried, in words.
fn retry_reason(error: &ClientError) -> String {
    match error.status() {
        Some(429) => "rate limited (429)".to_owned(),
        Some(status) => format!("the server answered {status}"),
        None => error.to_string(),
    }
}

/// The most of a whole (unstreamed) reply that is read: the limit on one streamed
/// event, since a stream's final event carries the same whole response. A bigger reply
/// (a server gone wrong, a hostile one) is refused before it fills memory and the
/// session store.
pub(crate) const MAX_REPLY_BODY: usize = aptix_sse::DEFAULT_MAX_EVENT_SIZE;

/// Why a whole reply was not read.
pub(crate) enum ReplyError {
    /// The connection failed while reading.
    Read(reqwest::Error),
    /// The reply is over [`MAX_REPLY_BODY`].
    TooLarge(ClientError),
}

/// A whole reply, at most [`MAX_REPLY_BODY`] bytes of it: a declared length over the
/// limit is refused before any of the body is read, an undeclared one as soon as the
/// limit is passed.
pub(crate) async fn read_reply(mut response: reqwest::Response) -> Result<Bytes, ReplyError> {
    let too_large = |size: String| {
        ReplyError::TooLarge(ClientError::decode(
            "response body",
            &[],
            0,
            format!(
                "the reply is {size}, over the {} MiB a reply may be",
                MAX_REPLY_BODY / (1024 * 1024)
            ),
        ))
    };
    let declared = response.content_length();
    if let Some(length) = declared
        && length > MAX_REPLY_BODY as u64
    {
        return Err(too_large(format!("{length} bytes")));
    }
    let mut body = bytes::BytesMut::with_capacity(
        declared.map_or(0, |length| usize::try_from(length).unwrap_or(0)),
    );
    while let Some(chunk) = response.chunk().await.map_err(ReplyError::Read)? {
        if body.len() + chunk.len() > MAX_REPLY_BODY {
            return Err(too_large("larger".to_owned()));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

/// Reads at most about `limit` bytes of a body: an error page can be large, and only
/// its start is kept. A read failure keeps what arrived.
async fn read_capped(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body
}

/// Whether an error body is a web page (a proxy's or load balancer's 502 page) rather
/// than an API's text.
fn is_html(headers: &HeaderMap, text: &str) -> bool {
    let declared = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.to_ascii_lowercase().contains("html"));
    let start = text
        .get(..text.len().min(64))
        .unwrap_or_default()
        .to_ascii_lowercase();
    declared || start.starts_with("<!doctype html") || start.starts_with("<html")
}

/// An HTML error page as one line: its `<title>` (or first heading) and its size, never
/// the page itself, which would flood every retry warning and the final error.
fn html_summary(page: &str) -> String {
    let title = tag_text(page, "title").or_else(|| tag_text(page, "h1"));
    match title {
        Some(title) => format!("{title} (an HTML error page of {} bytes)", page.len()),
        None => format!("an HTML error page of {} bytes", page.len()),
    }
}

/// The text of the first `<tag>` element, whitespace collapsed, at most 200 bytes.
fn tag_text(page: &str, tag: &str) -> Option<String> {
    let lower = page.to_ascii_lowercase();
    let open = lower.find(&format!("<{tag}"))?;
    let content = open + lower.get(open..)?.find('>')? + 1;
    let close = content + lower.get(content..)?.find(&format!("</{tag}"))?;
    let text = page
        .get(content..close)?
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!text.is_empty()).then(|| truncate(&text, 200))
}

/// Runs `work` under `timeout`, turning expiry into a typed timeout error.
async fn bounded<T>(
    timeout: Option<Duration>,
    kind: TimeoutKind,
    work: impl Future<Output = Result<T, AttemptError>>,
) -> Result<T, AttemptError> {
    match timeout {
        Some(after) => tokio::time::timeout(after, work)
            .await
            .unwrap_or_else(|_| Err(AttemptError::new(ClientError::Timeout { kind, after }))),
        None => work.await,
    }
}

/// An error body a server sent under `status` (a proxy's error with a success
/// status, to a streamed request), as the status error it reads as; `body` is already
/// scrubbed of the key.
pub(crate) fn status_error_of_body(
    status: u16,
    body: &[u8],
    request_id: Option<&str>,
) -> ClientError {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    ClientError::Status {
        status,
        api_error: decode_error_body(body).map(Box::new),
        raw_body: (!text.is_empty()).then(|| truncate(text, MAX_RAW_BODY)),
        request_id: request_id.map(str::to_owned),
        retry_after: None,
    }
}

/// An error body in any of the shapes servers send, or `None`.
fn decode_error_body(body: &[u8]) -> Option<ApiError> {
    let value: Value = serde_json::from_slice(body).ok()?;
    let object = value.as_object()?;
    match object.get("error") {
        Some(nested @ Value::Object(_)) => serde_json::from_value(nested.clone()).ok(),
        Some(Value::String(message)) => Some(ApiError {
            message: message.clone(),
            ..ApiError::default()
        }),
        _ if object.contains_key("message") => serde_json::from_value(value.clone()).ok(),
        _ => None,
    }
}

/// The error and its sources as one line, scrubbed of the key. Kept as text rather
/// than as a boxed source because the HTTP stack's errors are not ours to vouch for.
fn error_chain(error: &dyn std::error::Error, secret: Option<&str>) -> String {
    scrub(&aptix_model::error_chain(error), secret)
}

/// A reply's content scrubbed as [`scrub`] does, untouched (not copied) when there is
/// nothing to scrub, or the key is a placeholder `is_scrubbed_key` leaves alone.
pub(crate) fn scrub_bytes(bytes: Bytes, secret: Option<&str>) -> Bytes {
    let Some(secret) = secret.filter(|secret| crate::redact::is_scrubbed_key(secret)) else {
        return bytes;
    };
    let needle = key_tail(secret).unwrap_or(secret);
    // A byte search (vectorised), without validating UTF-8: the caller decodes the body
    // and checks it then, once.
    if memchr::memmem::find(&bytes, needle.as_bytes()).is_none() {
        return bytes;
    }
    let text = String::from_utf8_lossy(&bytes);
    let scrubbed = scrub(&text, Some(secret));
    if scrubbed == text {
        bytes
    } else {
        Bytes::from(scrubbed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_bodies_in_every_shape() {
        let nested = decode_error_body(br#"{"error":{"message":"m","type":"t","code":"c"}}"#);
        assert_eq!(nested.unwrap().code.as_deref(), Some("c"));
        let numeric =
            decode_error_body(br#"{"error":{"code":500,"message":"m","type":"server_error"}}"#);
        assert_eq!(numeric.unwrap().code.as_deref(), Some("500"));
        let flat = decode_error_body(
            br#"{"object":"error","message":"bad","type":"BadRequestError","code":400}"#,
        );
        assert_eq!(flat.unwrap().message, "bad");
        let text = decode_error_body(br#"{"error":"model not found"}"#);
        assert_eq!(text.unwrap().message, "model not found");
        assert!(decode_error_body(b"<html>502</html>").is_none());
        assert!(decode_error_body(b"[1]").is_none());
    }

    #[test]
    fn retry_warnings_say_rate_limited_and_when() {
        let limited = ClientError::Status {
            status: 429,
            api_error: None,
            raw_body: None,
            request_id: None,
            retry_after: None,
        };
        assert_eq!(
            retry_note(&limited, Duration::from_millis(1500), 1, 2),
            "rate limited (429); retrying in 1.5s (retry 1 of 2)"
        );
        let reset = ClientError::Transport {
            phase: TransportPhase::Send,
            message: "connection reset".into(),
            source: None,
        };
        assert_eq!(
            retry_note(&reset, Duration::from_secs(2), 2, 2),
            "transport error while sending the request: connection reset; retrying in 2s (retry 2 of 2)"
        );
    }

    #[test]
    fn html_error_pages_are_summarised_by_their_title() {
        let page = format!(
            "<!DOCTYPE html>\n<html><head><title>502 Bad\n  Gateway</title></head><body>{}</body></html>",
            "<p>cloudflare</p>".repeat(100)
        );
        assert!(is_html(&HeaderMap::new(), &page));
        let summary = html_summary(&page);
        assert_eq!(
            summary,
            format!(
                "502 Bad Gateway (an HTML error page of {} bytes)",
                page.len()
            )
        );
        assert_eq!(
            html_summary("<html><body>down</body></html>"),
            "an HTML error page of 30 bytes"
        );
        assert!(!is_html(&HeaderMap::new(), "upstream connect error"));
    }

    #[test]
    fn scrub_removes_the_secret() {
        assert_eq!(
            scrub("key sk-1234567890ab here", Some("sk-1234567890ab")),
            "key [redacted] here"
        );
        assert_eq!(scrub("nothing", None), "nothing");
        assert_eq!(scrub("x", Some("")), "x");
        // A local server's placeholder is no secret: scrubbed from content, it rewrote
        // words of the question and the answer (`red`, the `x` of `text`).
        for placeholder in ["ollama", "EMPTY", "x", "red", "sk-1234"] {
            let text = format!("the text: {placeholder} is red, ollama says");
            let body = Bytes::from(text.clone());
            assert_eq!(scrub_bytes(body.clone(), Some(placeholder)), body);
            assert_eq!(crate::scrub_key(&text, Some(placeholder)), text);
        }
        // An error text is scrubbed of any key: a word is worth less than a secret.
        assert_eq!(
            scrub("Incorrect API key provided: ollama.", Some("ollama")),
            "Incorrect API key provided: [redacted]."
        );
    }

    #[test]
    fn scrub_removes_the_masked_forms_servers_echo() {
        let key = Some("sk-proj-abcdefghijklmnop9z8y");
        for echoed in [
            "Incorrect API key provided: sk-proj-****************9z8y. See",
            "Incorrect API key provided: sk-...9z8y. See",
            "key ***9z8y. See",
            "key sk-proj-\u{2026}9z8y. See",
            "key sk-xxxxxxxx9z8y. See",
        ] {
            let scrubbed = scrub(echoed, key);
            assert!(!scrubbed.contains("9z8y"), "{scrubbed}");
            assert!(scrubbed.contains("[redacted]. See"), "{scrubbed}");
        }
        // The tail alone, in an ordinary word, is not the key.
        assert_eq!(scrub("order 9z8y shipped", key), "order 9z8y shipped");
        let body = Bytes::from_static(br#"{"error":{"message":"bad key ***9z8y"}}"#);
        let scrubbed = scrub_bytes(body, key);
        assert_eq!(
            &scrubbed[..],
            br#"{"error":{"message":"bad key [redacted]"}}"#
        );
        let clean = Bytes::from_static(b"nothing here");
        assert_eq!(scrub_bytes(clean.clone(), key), clean);
    }
}

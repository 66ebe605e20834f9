//! The one error type of `aptix-client`.
//!
//! Every variant carries structured fields (status, request id, decoded error body,
//! position of undecodable bytes) rather than a pre-formatted sentence, so callers can
//! branch on them and the mapping layer can fill the envelope's `ErrorCode`. No variant
//! ever holds the API key: bodies and messages are scrubbed of it before they get here.

use std::fmt;
use std::time::Duration;

use aptix_model::wire::ApiError;

/// Longest raw (non-JSON) error body kept in [`ClientError::Status`], in bytes.
pub const MAX_RAW_BODY: usize = 2048;

/// Longest excerpt of undecodable bytes kept in [`ClientError::Decode`], in bytes.
pub(crate) const MAX_EXCERPT: usize = 160;

/// Everything that can go wrong between a request and a decoded reply.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The configuration cannot work: no API key for a host that needs one, a malformed
    /// base URL or header. Raised before any request is sent.
    #[error("invalid client configuration ({field}): {reason}")]
    Config {
        /// The setting at fault (`api_key`, `base_url`, an environment variable name).
        field: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The request could not be sent or the reply could not be read (DNS, connect, TLS,
    /// a reset or closed connection).
    #[error("transport error while {phase}: {message}")]
    Transport {
        /// How far the exchange got; decides whether a retry is safe.
        phase: TransportPhase,
        /// What the HTTP stack reported.
        message: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },

    /// A timeout elapsed.
    #[error("{kind} timeout after {after:?}")]
    Timeout {
        /// Which of the three timeouts.
        kind: TimeoutKind,
        /// The configured limit that elapsed.
        after: Duration,
    },

    /// The server answered with a non-2xx status, or with an error body under a 2xx
    /// one (a proxy's error, to a streamed request).
    #[error("http status {status}: {}{}", status_summary(.api_error.as_deref(), .raw_body.as_deref()), requested_wait(*.retry_after))]
    Status {
        /// The HTTP status code.
        status: u16,
        /// The decoded `{"error": {...}}` body, when the body was one.
        api_error: Option<Box<ApiError>>,
        /// The body as text, the key scrubbed: truncated to [`MAX_RAW_BODY`] when it was
        /// not an error object (an HTML page as its title and size); whole when it was
        /// one and fits in [`MAX_RAW_BODY`] (`None` when it does not, or was empty).
        raw_body: Option<String>,
        /// The reply's `x-request-id`, for support requests.
        request_id: Option<String>,
        /// The wait the server asked for (`retry-after-ms` / `retry-after`), if any.
        retry_after: Option<Duration>,
    },

    /// A reply body, SSE event or chunk could not be decoded.
    #[error("cannot decode {what} at byte {position}: {message} (near {excerpt:?})")]
    Decode {
        /// What was being decoded (`response body`, `stream event data`, ...).
        what: &'static str,
        /// Byte offset of the problem within the decoded text (0 when unknown).
        position: usize,
        /// The decoder's message.
        message: String,
        /// The bytes around the position, lossily as text, at most 160 bytes.
        excerpt: String,
        /// The reply's `x-request-id`.
        request_id: Option<String>,
    },

    /// The provider cannot carry a feature the request uses (for example
    /// `previous_response_id` on the Chat Completions bridge). Raised before sending.
    #[error("{provider} does not support {feature}")]
    Unsupported {
        /// The provider that refused.
        provider: &'static str,
        /// The feature, as the request names it.
        feature: String,
    },
}

/// How far an exchange got when the transport failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportPhase {
    /// Connecting (DNS, TCP, TLS): nothing was sent.
    Connect,
    /// Sending the request or waiting for the reply's head: no byte of the reply yet.
    Send,
    /// Reading the reply's body: the server answered, so the request took effect.
    ReadBody,
}

impl fmt::Display for TransportPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TransportPhase::Connect => "connecting",
            TransportPhase::Send => "sending the request",
            TransportPhase::ReadBody => "reading the reply body",
        })
    }
}

/// Which timeout elapsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeoutKind {
    /// Establishing the connection.
    Connect,
    /// The whole non-streaming request, body included (per attempt).
    Request,
    /// The gap between two chunks of a streamed body (or before its head).
    StreamIdle,
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutKind::Connect => "connect",
            TimeoutKind::Request => "request",
            TimeoutKind::StreamIdle => "stream idle",
        })
    }
}

impl ClientError {
    /// A configuration error.
    pub fn config(field: impl Into<String>, reason: impl Into<String>) -> ClientError {
        ClientError::Config {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// A decode error at `position` of `text`, with an excerpt around it.
    pub fn decode(
        what: &'static str,
        text: &[u8],
        position: usize,
        message: impl Into<String>,
    ) -> ClientError {
        ClientError::Decode {
            what,
            position,
            message: message.into(),
            excerpt: excerpt(text, position),
            request_id: None,
        }
    }

    /// The HTTP status, for [`Status`](Self::Status) errors.
    pub fn status(&self) -> Option<u16> {
        match self {
            ClientError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The decoded API error of a [`Status`](Self::Status).
    pub fn api_error(&self) -> Option<&ApiError> {
        match self {
            ClientError::Status { api_error, .. } => api_error.as_deref(),
            _ => None,
        }
    }

    /// The API error's machine code (`invalid_api_key`, `insufficient_quota`, ...).
    pub fn api_code(&self) -> Option<&str> {
        self.api_error().and_then(|error| error.code.as_deref())
    }

    /// The stable snake_case code of this failure for an error envelope's `errorCode`
    /// when there is no API error body to take one from: `configuration_error`,
    /// `transport_error`, `timeout`, `decode_error`, `unsupported`; for a
    /// [`Status`](Self::Status), the API error's code, else its type, else the HTTP
    /// status.
    pub fn code(&self) -> String {
        match self {
            ClientError::Config { .. } => "configuration_error".into(),
            ClientError::Transport { .. } => "transport_error".into(),
            ClientError::Timeout { .. } => "timeout".into(),
            ClientError::Decode { .. } => "decode_error".into(),
            ClientError::Unsupported { .. } => "unsupported".into(),
            ClientError::Status {
                status, api_error, ..
            } => api_error
                .as_deref()
                .and_then(ApiError::code_or_type)
                .map_or_else(|| status.to_string(), str::to_owned),
        }
    }

    /// The `x-request-id` of the reply this error came from, when there was a reply.
    pub fn request_id(&self) -> Option<&str> {
        match self {
            ClientError::Status { request_id, .. } | ClientError::Decode { request_id, .. } => {
                request_id.as_deref()
            }
            _ => None,
        }
    }

    /// Whether the same request may succeed if sent again later, by the rules the
    /// retry policy applies (without the reply's headers, which only the policy sees):
    /// 408, 409, 429 except `insufficient_quota`, 5xx, connection failures (a reply's
    /// body cut included), and connect timeouts. A caller that gets one of these after
    /// the provider's own retries ran out may try again later.
    pub fn is_retryable(&self) -> bool {
        match self {
            ClientError::Status {
                status, api_error, ..
            } => crate::retry::status_is_retryable(*status, api_error.as_deref()),
            ClientError::Transport { .. } => true,
            ClientError::Timeout { kind, .. } => *kind == TimeoutKind::Connect,
            _ => false,
        }
    }

    /// Sets the request id on the variants that carry one.
    pub(crate) fn with_request_id(mut self, id: Option<&str>) -> ClientError {
        let Some(id) = id else { return self };
        let slot = match &mut self {
            ClientError::Status { request_id, .. } | ClientError::Decode { request_id, .. } => {
                request_id
            }
            _ => return self,
        };
        if slot.is_none() {
            *slot = Some(id.to_owned());
        }
        self
    }
}

fn status_summary(api_error: Option<&ApiError>, raw_body: Option<&str>) -> String {
    match (api_error, raw_body) {
        (Some(error), _) if !error.message.is_empty() || error.code.is_some() => {
            api_error_summary(error)
        }
        (None, Some(raw)) if !raw.is_empty() => raw.to_owned(),
        _ => "no error body".to_owned(),
    }
}

/// "; the server asked to wait N s before retrying", for an error returned with a wait
/// the server asked for.
pub fn requested_wait(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(wait) => format!(
            "; the server asked to wait {} before retrying",
            human_duration(wait)
        ),
        None => String::new(),
    }
}

/// A duration as people write it: `450ms`, `12s`, `5m 3s`, `2h 0m`.
pub fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds == 0 {
        return format!("{}ms", duration.as_millis());
    }
    match seconds {
        0..60 => {
            let tenths = duration.as_millis() / 100 % 10;
            if tenths == 0 {
                format!("{seconds}s")
            } else {
                format!("{seconds}.{tenths}s")
            }
        }
        60..3600 => format!("{}m {}s", seconds / 60, seconds % 60),
        _ => format!("{}h {}m", seconds / 3600, seconds % 3600 / 60),
    }
}

fn api_error_summary(error: &ApiError) -> String {
    match &error.code {
        Some(code) => format!("{code}: {}", error.message),
        None => error.message.clone(),
    }
}

/// Up to [`MAX_EXCERPT`] bytes of `text` around `position`, lossily decoded.
pub(crate) fn excerpt(text: &[u8], position: usize) -> String {
    let half = MAX_EXCERPT / 2;
    let start = position.saturating_sub(half).min(text.len());
    let end = start.saturating_add(MAX_EXCERPT).min(text.len());
    String::from_utf8_lossy(text.get(start..end).unwrap_or_default()).into_owned()
}

/// `text` cut to at most `max` bytes on a character boundary.
// Only the HTTP providers need it.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut cut = text[..text.floor_char_boundary(max)].to_owned();
    cut.push_str("...");
    cut
}

/// The byte offset of a serde_json error's line and column within `text`.
pub(crate) fn json_error_offset(text: &[u8], line: usize, column: usize) -> usize {
    if line == 0 {
        return 0;
    }
    let mut offset = 0;
    for (index, row) in text.split(|byte| *byte == b'\n').enumerate() {
        if index + 1 == line {
            return (offset + column.saturating_sub(1)).min(text.len());
        }
        offset += row.len() + 1;
    }
    text.len()
}

/// A decode error for JSON `text` that serde_json rejected.
pub(crate) fn json_decode_error(
    what: &'static str,
    text: &[u8],
    error: &serde_json::Error,
) -> ClientError {
    let position = json_error_offset(text, error.line(), error.column());
    ClientError::decode(what, text, position, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_stays_in_bounds_and_on_the_position() {
        let text = vec![b'a'; 1000];
        assert_eq!(excerpt(&text, 500).len(), MAX_EXCERPT);
        assert_eq!(excerpt(&text, 5000), "");
        assert_eq!(excerpt(b"short", 2), "short");
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h...");
        assert_eq!(truncate("abc", 10), "abc");
    }

    #[test]
    fn json_errors_point_at_the_bad_byte() {
        let text = b"{\n  \"a\": x\n}";
        let error = serde_json::from_slice::<serde_json::Value>(text).unwrap_err();
        let ClientError::Decode {
            position, excerpt, ..
        } = json_decode_error("test", text, &error)
        else {
            panic!("not a decode error")
        };
        assert_eq!(text[position], b'x');
        assert!(excerpt.contains("x"));
    }

    #[test]
    fn a_status_error_says_the_wait_the_server_asked_for() {
        let error = ClientError::Status {
            status: 429,
            api_error: None,
            raw_body: Some("slow down".into()),
            request_id: None,
            retry_after: Some(Duration::from_secs(3600)),
        };
        assert_eq!(
            error.to_string(),
            "http status 429: slow down; the server asked to wait 1h 0m before retrying"
        );
        assert_eq!(human_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(human_duration(Duration::from_secs(303)), "5m 3s");
        assert_eq!(human_duration(Duration::from_millis(20)), "20ms");
    }

    #[test]
    fn messages_are_lowercase_without_a_trailing_period() {
        let errors = [
            ClientError::config("api_key", "missing"),
            ClientError::Timeout {
                kind: TimeoutKind::StreamIdle,
                after: Duration::from_secs(1),
            },
            ClientError::Status {
                status: 500,
                api_error: None,
                raw_body: None,
                request_id: None,
                retry_after: None,
            },
        ];
        for error in errors {
            let text = error.to_string();
            assert!(!text.ends_with('.'), "{text}");
            assert!(
                text.chars().next().is_some_and(char::is_lowercase),
                "{text}"
            );
        }
    }
}

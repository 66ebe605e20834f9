//! Failures to the envelope: a non-2xx body, an in-stream `error` event, a transport
//! failure without a body, and this crate's own [`MappingError`]s. Each is
//! `kind = "error"` with `errorCode` and `errorMessage`; a `failed` response (an HTTP 200)
//! is handled with the other responses in `response.rs`.
//!
//! `errorCode` is the most specific machine-readable value available: the error's
//! `code`, else its `type`, else the HTTP status as digits (`"502"`). `code` comes first
//! because it is the stable identifier (`invalid_api_key`, `insufficient_quota`) while
//! `type` is a broad class (`invalid_request_error`) or, on some routes, free text; the
//! status comes last because the body usually says more than the status does.

use aptix_model::contract::Kind;
use aptix_model::wire::{ApiError, ErrorEvent};
use serde_json::{Map, Value};

use crate::context::{Mapped, TurnContext};
use crate::error::MappingError;
use crate::warning::MappingWarning;

/// Characters of a body kept in an excerpt.
const EXCERPT_CHARS: usize = 300;

/// `errorCode` of an error body without code or type when the HTTP status is unknown.
const HTTP_ERROR_CODE: &str = "http_error";

/// `errorCode` of an in-stream error without code or type.
const STREAM_ERROR_CODE: &str = "stream_error";

/// Maps a non-2xx reply: `{"error": {"message", "type", "param", "code"}}` as OpenAI
/// sends it, the shapes compatible servers send (`{"error": "text"}`, a flat
/// `{"message", "type", "code"}`, `{"detail": "text"}`), or anything else (an HTML page
/// from a proxy), whose message is then an excerpt of the body.
///
/// `rawResponseJson` is the body as received (lossy UTF-8), even when it is not JSON.
pub fn map_error_body(http_status: u16, body: &[u8], turn: &TurnContext) -> Mapped {
    error_body(Some(http_status), body, turn)
}

/// [`map_error_body`] for a body whose HTTP status is unknown (a captured file).
pub(crate) fn error_body(http_status: Option<u16>, body: &[u8], turn: &TurnContext) -> Mapped {
    let status_code = || http_status.map_or_else(|| HTTP_ERROR_CODE.to_owned(), |s| s.to_string());
    let mut warnings = Vec::new();
    let read = read_error_body(body);
    // A 404 that names nothing it did not find (`model_not_found`, or a message about a
    // model, names the model) is a request sent to a URL the server does not have: the
    // base URL, most often.
    if http_status == Some(404)
        && read.as_ref().map_or(true, |found| {
            let generic_code = found
                .named_code
                .as_deref()
                .is_none_or(|code| matches!(code, "404" | "not_found" | "not_found_error"));
            let about_a_model = found
                .message
                .as_deref()
                .is_some_and(|message| message.to_ascii_lowercase().contains("model"));
            generic_code && !about_a_model
        })
    {
        warnings.push(MappingWarning::NoSuchEndpoint);
    }
    let (code, message) = match read {
        Ok(found) => (
            found.code.unwrap_or_else(status_code),
            found.message.unwrap_or_else(|| excerpt(body)),
        ),
        Err(reason) => {
            let empty = body.iter().all(u8::is_ascii_whitespace);
            let message = if empty {
                "empty response body".to_owned()
            } else {
                excerpt(body)
            };
            // Plain text ("Not Found", a proxy's page the client summed up) is a message
            // as it stands; only a body that meant to be JSON, or none, is worth a word.
            let meant_json = body
                .iter()
                .find(|byte| !byte.is_ascii_whitespace())
                .is_some_and(|first| matches!(first, b'{' | b'['));
            if empty || meant_json {
                warnings.push(MappingWarning::UnreadableErrorBody { reason });
            }
            (status_code(), message)
        }
    };
    let mut envelope = turn.envelope(Kind::Error);
    envelope.error_code = Some(code);
    envelope.error_message = Some(message);
    envelope.raw_response_json =
        (!body.is_empty()).then(|| String::from_utf8_lossy(body).into_owned());
    Mapped::new(envelope, warnings)
}

/// The code and message an error body names, each `None` when it names none.
struct FoundError {
    code: Option<String>,
    /// The `code` field alone, without falling back on `type`.
    named_code: Option<String>,
    message: Option<String>,
}

/// Reads the known error body shapes; `Err` says why the body is none of them.
fn read_error_body(body: &[u8]) -> Result<FoundError, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err("empty body".to_owned());
    }
    let value: Value =
        serde_json::from_slice(body).map_err(|error| format!("not json: {error}"))?;
    let Value::Object(top) = value else {
        return Err("json that is not an object".to_owned());
    };
    let from_fields = |object: &Map<String, Value>, message: Option<String>| FoundError {
        code: text_field(object, "code").or_else(|| text_field(object, "type")),
        named_code: text_field(object, "code"),
        message,
    };
    match top.get("error") {
        Some(Value::Object(error)) => Ok(from_fields(error, text_field(error, "message"))),
        Some(Value::String(message)) if !message.is_empty() => {
            Ok(from_fields(&top, Some(message.clone())))
        }
        _ if text_field(&top, "message").is_some() => {
            Ok(from_fields(&top, text_field(&top, "message")))
        }
        _ => match text_field(&top, "detail") {
            Some(detail) => Ok(FoundError {
                code: None,
                named_code: None,
                message: Some(detail),
            }),
            None => Err("json without an `error` object".to_owned()),
        },
    }
}

/// A string field, or a number or boolean as text (some servers send `"code": 400`);
/// `None` when missing, `null`, empty or of another kind.
fn text_field(object: &Map<String, Value>, key: &str) -> Option<String> {
    match object.get(key)? {
        Value::String(text) if !text.is_empty() => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        _ => None,
    }
}

/// Maps an in-stream `error` event, nested (`{"type":"error","error":{...}}`, the wire)
/// or flat (`{"type":"error","code","message"}`, the spec).
///
/// `raw_json` is the event's `data` as received, when the caller has it; otherwise the
/// event is serialised again.
pub fn map_stream_error(event: &ErrorEvent, raw_json: Option<&str>, turn: &TurnContext) -> Mapped {
    let raw = match raw_json {
        Some(raw) => Some(raw.to_owned()),
        None => serde_json::to_string(event).ok(),
    };
    api_error_envelope(&event.api_error(), raw, None, turn)
}

/// Maps a failure with no body at all (connection refused, timeout, TLS, a stream cut
/// before its first byte): the caller names it with its own `code` and `message`.
pub fn map_transport_failure(code: &str, message: &str, turn: &TurnContext) -> Mapped {
    let mut envelope = turn.envelope(Kind::Error);
    envelope.error_code = Some(code.to_owned());
    envelope.error_message = Some(message.to_owned());
    Mapped::new(envelope, Vec::new())
}

/// Maps one of this crate's errors: a 2xx body that is not a response, a stream that
/// ended early or failed with only an `error` event. `errorCode` is
/// [`MappingError::code`]; the response id is kept when the stream had sent it, and
/// the answer text it streamed as `text`.
pub fn map_mapping_error(error: &MappingError, turn: &TurnContext) -> Mapped {
    match error {
        MappingError::StreamFailed {
            error,
            response_id,
            partial_text,
            ..
        } => {
            let mut mapped = api_error_envelope(error, None, response_id.clone(), turn);
            mapped.envelope.text.clone_from(partial_text);
            mapped
        }
        MappingError::InvalidResponseBody { excerpt, .. } => {
            map_transport_failure(&error.code(), &format!("{error}; body: {excerpt}"), turn)
        }
        MappingError::StreamEndedEarly {
            response_id,
            partial_text,
            ..
        }
        | MappingError::UndecodableFinalEvent {
            response_id,
            partial_text,
            ..
        } => {
            let mut mapped = map_transport_failure(&error.code(), &error.to_string(), turn);
            mapped.envelope.response_continuation_id = response_id.clone();
            // What streamed is kept: the kind says it is incomplete.
            mapped.envelope.text.clone_from(partial_text);
            mapped
        }
    }
}

fn api_error_envelope(
    error: &ApiError,
    raw: Option<String>,
    response_id: Option<String>,
    turn: &TurnContext,
) -> Mapped {
    let mut envelope = turn.envelope(Kind::Error);
    envelope.error_code = Some(stream_error_code(error));
    envelope.error_message = Some(if error.message.is_empty() {
        "the stream reported an error without a message".to_owned()
    } else {
        error.message.clone()
    });
    envelope.raw_response_json = raw;
    envelope.response_continuation_id = response_id;
    Mapped::new(envelope, Vec::new())
}

/// `code`, else `type`, else `stream_error`.
pub(crate) fn stream_error_code(error: &ApiError) -> String {
    error
        .code_or_type()
        .map_or_else(|| STREAM_ERROR_CODE.to_owned(), str::to_owned)
}

/// The start of `body` for a message: lossy UTF-8, runs of whitespace collapsed to one
/// space (an HTML error page is mostly line breaks), at most [`EXCERPT_CHARS`]
/// characters, `…` when cut.
pub(crate) fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out = String::new();
    let mut kept = 0;
    for word in text.split_whitespace() {
        let separator = (kept > 0).then_some(' ');
        for c in separator.into_iter().chain(word.chars()) {
            if kept == EXCERPT_CHARS {
                out.push('…');
                return out;
            }
            out.push(c);
            kept += 1;
        }
    }
    out
}

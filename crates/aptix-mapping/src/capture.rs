//! [`map_capture`]: a captured body of unknown kind to the envelope, for `aptix inspect`
//! and the `map_response` example.

use serde_json::Value;

use crate::context::{Mapped, TurnContext};
use crate::map::{error_body, map_folded, map_mapping_error, map_response_body};
use crate::stream::SseBodyFold;

/// Maps a captured `/v1/responses` reply without knowing what it is: an SSE stream
/// (its first line is an SSE field or comment), an error body (a JSON object with an
/// `error` member and no `id`), or a response body. Total: what cannot be mapped becomes
/// a `kind = "error"` envelope saying why, as the orchestrator would show it.
///
/// The HTTP status of a captured error body is unknown, so an error body that names
/// neither `code` nor `type` gets the code `http_error`.
pub fn map_capture(bytes: &[u8], turn: &TurnContext) -> Mapped {
    if looks_like_sse(bytes) {
        let mut folder = SseBodyFold::new();
        folder.feed(bytes);
        return match folder.finish() {
            Ok(folded) => map_folded(folded, turn).0,
            Err(error) => map_mapping_error(&error, turn),
        };
    }
    if is_error_body(bytes) {
        return error_body(None, bytes, turn);
    }
    match map_response_body(bytes, turn) {
        Ok(mapped) => mapped,
        Err(error) => map_mapping_error(&error, turn),
    }
}

/// Whether the first non-blank line is an SSE field or comment.
fn looks_like_sse(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let start = bytes
        .iter()
        .position(|byte| !byte.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    let rest = bytes.get(start..).unwrap_or_default();
    [&b"event:"[..], b"data:", b"id:", b"retry:", b":"]
        .iter()
        .any(|prefix| rest.starts_with(prefix))
}

fn is_error_body(bytes: &[u8]) -> bool {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => object.contains_key("error") && !object.contains_key("id"),
        _ => false,
    }
}

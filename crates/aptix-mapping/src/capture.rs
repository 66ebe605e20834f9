//! [`map_capture`]: a captured body of unknown kind to the envelope, for `aptix inspect`
//! and the `map_response` example.

use serde_json::Value;

use aptix_model::contract::{RateLimitInfo, SourceRef};

use crate::context::{Mapped, TurnContext};
use crate::map::{
    error_body, map_folded, map_mapping_error, map_response_body, map_transport_failure,
};
use crate::stream::SseBodyFold;

/// Maps a captured `/v1/responses` reply without knowing what it is: an SSE stream
/// (its first line is an SSE field or comment), an error body (a JSON object with an
/// `error` member and no `id`), or a response body. Total: what cannot be mapped becomes
/// a `kind = "error"` envelope saying why, as the orchestrator would show it.
///
/// The HTTP status of a captured error body is unknown, so an error body that names
/// neither `code` nor `type` gets the code `http_error`.
///
/// An AGN-004 envelope saved earlier (`aptix ask --json`, an `aptix serve` answer: a
/// JSON object with `kind` and `rawResponseJson` and no response `id`) is mapped again
/// from the reply it holds, its session, turn, mode, sources and rate limits filling
/// what `turn` leaves unset; one that holds no reply is an error saying so.
pub fn map_capture(bytes: &[u8], turn: &TurnContext) -> Mapped {
    if let Some(saved) = saved_envelope(bytes) {
        let turn = saved.turn(turn);
        return match saved.raw {
            Some(raw) => map_capture(raw.as_bytes(), &turn),
            None => map_transport_failure(
                "invalid_response_body",
                &format!(
                    "this is an Aptix envelope (kind {:?}{}), not a captured reply, and it \
                     holds no rawResponseJson to map again: inspect takes a /v1/responses \
                     reply as the provider sent it",
                    saved.kind,
                    saved
                        .error_message
                        .as_deref()
                        .map(|message| format!(": {message}"))
                        .unwrap_or_default()
                ),
                &turn,
            ),
        };
    }
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

/// Whether `bytes` look like something [`map_capture`] reads: an SSE stream (its first
/// non-blank line is an SSE field or comment), or a JSON object with a member a
/// `/v1/responses` reply, an error body or a saved envelope has (`id`, `object`,
/// `output`, `status`, `error`, or `kind` with `rawResponseJson`). `map_capture` maps
/// anything else to an `invalid_response_body` envelope, as the orchestrator would map
/// such a reply; a front end reading a file the user named (`aptix inspect`) can ask
/// this first and say the file is not a capture at all.
pub fn is_capture(bytes: &[u8]) -> bool {
    if looks_like_sse(bytes) {
        return true;
    }
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(object)) => {
            ["id", "object", "output", "status", "error"]
                .iter()
                .any(|member| object.contains_key(*member))
                || (object.contains_key("kind") && object.contains_key("rawResponseJson"))
        }
        _ => false,
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

/// An envelope saved earlier, as far as mapping it again needs.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SavedEnvelope {
    kind: String,
    #[serde(rename = "rawResponseJson")]
    raw: Option<String>,
    error_message: Option<String>,
    conversation_id: Option<String>,
    turn_id: Option<String>,
    mode: Option<String>,
    agent_context_id: Option<String>,
    conversation_context_id: Option<String>,
    #[serde(default)]
    sources: Vec<SourceRef>,
    request_id: Option<String>,
    rate_limits: Option<RateLimitInfo>,
}

impl SavedEnvelope {
    /// `turn`, each field it leaves unset taken from the envelope.
    fn turn(&self, turn: &TurnContext) -> TurnContext {
        let or = |given: &Option<String>, saved: &Option<String>| given.clone().or(saved.clone());
        TurnContext {
            conversation_id: or(&turn.conversation_id, &self.conversation_id),
            turn_id: or(&turn.turn_id, &self.turn_id),
            mode: or(&turn.mode, &self.mode),
            agent_context_id: or(&turn.agent_context_id, &self.agent_context_id),
            conversation_context_id: or(
                &turn.conversation_context_id,
                &self.conversation_context_id,
            ),
            sources: if turn.sources.is_empty() {
                self.sources.clone()
            } else {
                turn.sources.clone()
            },
            request_id: or(&turn.request_id, &self.request_id),
            rate_limits: turn.rate_limits.or(self.rate_limits),
        }
    }
}

/// `bytes` as a saved envelope: a JSON object with the envelope's `kind` and
/// `rawResponseJson` members, and no `id` (which every response body has).
fn saved_envelope(bytes: &[u8]) -> Option<SavedEnvelope> {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(bytes) else {
        return None;
    };
    if object.contains_key("id")
        || !object.contains_key("kind")
        || !object.contains_key("rawResponseJson")
    {
        return None;
    }
    serde_json::from_value(Value::Object(object)).ok()
}

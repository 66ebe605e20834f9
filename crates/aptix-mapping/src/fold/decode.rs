//! SSE `data` to stream events, with a fast path for the events that make up almost
//! every byte of a stream: the four kinds of delta.
//!
//! The wire type [`StreamEvent`] is an internally tagged enum, which serde decodes by
//! first buffering the whole object into an intermediate tree and then decoding it
//! again. For a delta event that doubles the work and allocates for fields nobody reads
//! (`item_id`, `obfuscation`, `logprobs`). So a delta is decoded straight into
//! [`FastDelta`], borrowing its text from the input. The fast path accepts exactly what
//! the wire type accepts or falls back to it: its fields have the same types and
//! defaults, and anything it cannot decode (including a second `type` key) goes through
//! [`StreamEvent`] as usual.

use std::borrow::Cow;

use aptix_model::wire::StreamEvent;
use serde::Deserialize;
use serde_json::value::RawValue;

/// Which delta a [`FastDelta`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeltaKind {
    /// `response.output_text.delta`.
    Text,
    /// `response.refusal.delta`.
    Refusal,
    /// `response.function_call_arguments.delta`.
    Arguments,
    /// `response.reasoning_summary_text.delta`.
    ReasoningSummary,
}

impl DeltaKind {
    fn from_type(event_type: &str) -> Option<DeltaKind> {
        match event_type {
            "response.output_text.delta" => Some(DeltaKind::Text),
            "response.refusal.delta" => Some(DeltaKind::Refusal),
            "response.function_call_arguments.delta" => Some(DeltaKind::Arguments),
            "response.reasoning_summary_text.delta" => Some(DeltaKind::ReasoningSummary),
            _ => None,
        }
    }

    /// The event's `type`.
    pub(crate) fn event_type(self) -> &'static str {
        match self {
            DeltaKind::Text => "response.output_text.delta",
            DeltaKind::Refusal => "response.refusal.delta",
            DeltaKind::Arguments => "response.function_call_arguments.delta",
            DeltaKind::ReasoningSummary => "response.reasoning_summary_text.delta",
        }
    }
}

/// A delta event decoded without the intermediate tree; the same fields, types and
/// defaults as the wire's `TextDeltaEvent`.
#[derive(Debug, Deserialize)]
pub(crate) struct FastDelta<'a> {
    /// The `type`, decoded so that a duplicate `type` key fails here as it fails there.
    #[serde(rename = "type", borrow)]
    event_type: Cow<'a, str>,
    #[serde(default)]
    pub(crate) sequence_number: Option<u64>,
    #[serde(default, borrow)]
    pub(crate) item_id: Option<Cow<'a, str>>,
    pub(crate) output_index: u64,
    #[serde(default)]
    pub(crate) content_index: Option<u64>,
    #[serde(default)]
    pub(crate) summary_index: Option<u64>,
    /// `null` and missing are the empty string, as on the wire type.
    #[serde(default, borrow)]
    pub(crate) delta: Option<Cow<'a, str>>,
    #[serde(skip)]
    pub(crate) kind: Option<DeltaKind>,
}

/// One decoded SSE `data` payload.
#[derive(Debug)]
pub(crate) enum Decoded<'a> {
    /// A delta, through the fast path.
    Delta(FastDelta<'a>),
    /// Any event, through the wire type; `raw_response` is the `response` member's text
    /// for the terminal events, so the envelope can keep it exactly as sent.
    Event {
        event: StreamEvent,
        raw_response: Option<String>,
    },
}

/// Decodes one payload; `Err` is the reason it is not a JSON event at all.
pub(crate) fn decode(data: &str) -> Result<Decoded<'_>, String> {
    if let Some(kind) = leading_type(data).and_then(DeltaKind::from_type)
        && let Ok(mut delta) = serde_json::from_str::<FastDelta<'_>>(data)
        && DeltaKind::from_type(&delta.event_type) == Some(kind)
    {
        delta.kind = Some(kind);
        return Ok(Decoded::Delta(delta));
    }
    let event = StreamEvent::from_json(data).map_err(|error| error.to_string())?;
    let raw_response = event
        .terminal_response()
        .and_then(|_| serde_json::from_str::<RawTerminal<'_>>(data).ok())
        .map(|raw| raw.response.get().to_owned());
    Ok(Decoded::Event {
        event,
        raw_response,
    })
}

/// The `response` member of a terminal event, undecoded.
#[derive(Deserialize)]
struct RawTerminal<'a> {
    #[serde(borrow)]
    response: &'a RawValue,
}

/// The `type` when the payload starts with it, as OpenAI writes every event
/// (`{"type":"response.output_text.delta",...`); `None` sends the payload down the
/// general path, so this is only a shortcut, never a decision about validity.
fn leading_type(data: &str) -> Option<&str> {
    let rest = data.strip_prefix("{\"type\":\"")?;
    let end = memchr::memchr2(b'"', b'\\', rest.as_bytes())?;
    rest.get(..end)
}

/// Every event type the wire enum decodes into its own variant. An `Other` event of one
/// of these types is a known event of unexpected shape, not a new kind of event.
pub(crate) const KNOWN_EVENT_TYPES: &[&str] = &[
    "response.created",
    "response.in_progress",
    "response.queued",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "response.output_item.added",
    "response.output_item.done",
    "response.content_part.added",
    "response.content_part.done",
    "response.output_text.delta",
    "response.output_text.done",
    "response.refusal.delta",
    "response.refusal.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.reasoning_summary_part.added",
    "response.reasoning_summary_part.done",
    "response.reasoning_summary_text.delta",
    "response.reasoning_summary_text.done",
    "error",
];

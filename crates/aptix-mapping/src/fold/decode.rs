//! SSE `data` to stream events. Deltas and start events written `type` first are read
//! for what the fold takes from them ([`Delta`], [`Started`]), by serde, borrowing from
//! the payload; every other payload, and any of these those fields do not decode from,
//! goes through the wire type's own decoder ([`StreamEvent::from_json`]), which decides
//! as it would have. A terminal event's `response` member is kept as the text it was
//! sent as, for the envelope's `rawResponseJson`.

use std::borrow::Cow;

use aptix_model::wire::{StreamEvent, TextDeltaEvent};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Which delta an event is.
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

/// One decoded SSE `data` payload.
#[derive(Debug)]
pub(crate) enum Decoded<'a> {
    /// `response.created`, `.in_progress` or `.queued`, read for what the fold takes
    /// from them (see [`Started`]).
    Started(Started<'a>),
    /// A delta event, its text and item id borrowed from the payload where they need
    /// no unescaping (see [`Delta`]).
    Delta {
        kind: DeltaKind,
        sequence_number: Option<u64>,
        parts: DeltaParts<'a>,
    },
    /// Any other event, and for the terminal events the `response` member's text, so
    /// the envelope can keep it exactly as sent.
    Event {
        event: StreamEvent,
        raw_response: Option<String>,
    },
}

/// An event saying the response started: of its response the fold takes only the id
/// and the model (for [`StreamDelta::Started`](crate::StreamDelta::Started)), so the rest,
/// which the terminal event carries again, is skipped unread. Decoding the whole
/// response of these two events (created, then in progress) was ~7 % of the CPU of a
/// streamed turn in `aptix serve`, and folding a short recorded stream took a fifth less
/// time without it.
#[derive(Debug, Deserialize)]
pub(crate) struct Started<'a> {
    /// Named so that an event giving `type` twice is refused here, and decoded as the
    /// full decoding decides.
    #[serde(rename = "type")]
    _kind: serde::de::IgnoredAny,
    #[serde(default)]
    pub(crate) sequence_number: Option<u64>,
    #[serde(borrow)]
    pub(crate) response: StartedResponse<'a>,
}

/// The part of a started response the fold reads.
#[derive(Debug, Deserialize)]
pub(crate) struct StartedResponse<'a> {
    #[serde(borrow)]
    pub(crate) id: Cow<'a, str>,
    #[serde(default, borrow)]
    pub(crate) model: Option<Cow<'a, str>>,
}

/// The openings of the start events as providers write them, `type` first. An event
/// written otherwise, or one these fields do not decode from, takes the full decoding.
const STARTED: [&str; 3] = [
    r#"{"type":"response.created","#,
    r#"{"type":"response.in_progress","#,
    r#"{"type":"response.queued","#,
];

/// A delta event as the fold reads it: what [`TextDeltaEvent`] decodes, with the item
/// id and the text borrowed from the payload instead of copied. Most of a streamed
/// answer's events are deltas, and their text is copied once, into the delta passed on.
/// A payload these fields do not decode from (an escaped item id, a `null` text, a
/// second `type`) takes the full decoding, which decides as it always did.
#[derive(Debug, Deserialize)]
struct Delta<'a> {
    /// Named so that an event giving `type` twice is refused here.
    #[serde(rename = "type")]
    _kind: serde::de::IgnoredAny,
    #[serde(default)]
    sequence_number: Option<u64>,
    #[serde(default, borrow)]
    item_id: Option<&'a str>,
    output_index: u64,
    #[serde(default)]
    content_index: Option<u64>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default, borrow)]
    delta: Cow<'a, str>,
}

/// The delta events, each with the opening providers write it with (`type` first).
const DELTAS: [DeltaKind; 4] = [
    DeltaKind::Text,
    DeltaKind::Arguments,
    DeltaKind::Refusal,
    DeltaKind::ReasoningSummary,
];

/// The delta kind `data` opens as, when it opens as providers write deltas:
/// `{"type":"response.output_text.delta",...`.
fn delta_kind(data: &str) -> Option<DeltaKind> {
    let rest = data.strip_prefix(r#"{"type":""#)?;
    DELTAS.into_iter().find(|kind| {
        rest.strip_prefix(kind.event_type())
            .is_some_and(|rest| rest.starts_with(r#"","#))
    })
}

/// Decodes one payload; `Err` is the reason it is not a JSON event at all.
pub(crate) fn decode(data: &str) -> Result<Decoded<'_>, String> {
    if let Some(kind) = delta_kind(data)
        && let Ok(delta) = serde_json::from_str::<Delta<'_>>(data)
    {
        return Ok(Decoded::Delta {
            kind,
            sequence_number: delta.sequence_number,
            parts: DeltaParts {
                output_index: delta.output_index,
                content_index: delta.content_index,
                summary_index: delta.summary_index,
                item_id: delta.item_id.map(Cow::Borrowed),
                text: delta.delta,
            },
        });
    }
    if STARTED.iter().any(|opening| data.starts_with(opening))
        && let Ok(started) = serde_json::from_str::<Started<'_>>(data)
    {
        return Ok(Decoded::Started(started));
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

/// The fields of a delta event the fold uses.
#[derive(Debug)]
pub(crate) struct DeltaParts<'a> {
    pub(crate) output_index: u64,
    pub(crate) content_index: Option<u64>,
    pub(crate) summary_index: Option<u64>,
    pub(crate) item_id: Option<Cow<'a, str>>,
    pub(crate) text: Cow<'a, str>,
}

impl From<TextDeltaEvent> for DeltaParts<'static> {
    fn from(event: TextDeltaEvent) -> Self {
        DeltaParts {
            output_index: event.output_index,
            content_index: event.content_index,
            summary_index: event.summary_index,
            item_id: event.item_id.map(Cow::Owned),
            text: Cow::Owned(event.delta),
        }
    }
}

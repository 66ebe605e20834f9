//! SSE `data` to stream events, with a fast path for the events that make up almost
//! every byte of a stream: the four kinds of delta.
//!
//! The wire type [`StreamEvent`] is an internally tagged enum, which serde decodes by
//! first buffering the whole object into an intermediate tree and then decoding it
//! again. For a delta event that doubles the work and allocates for fields nobody reads
//! (`item_id`, `obfuscation`, `logprobs`). So a delta is decoded straight into
//! [`FastDelta`], borrowing its text from the input: first by the one-pass reader in
//! `scan`, which covers the deltas OpenAI sends, then by `serde_json` into the same
//! struct. The fast path accepts exactly what the wire type accepts or falls back to it:
//! its fields have the same types and defaults, and anything it cannot decode
//! (including a second `type` key) goes through [`StreamEvent`] as usual. Only the
//! speed depends on OpenAI's habit of writing `type` first.

use std::borrow::Cow;

use aptix_model::wire::{StreamEvent, TextDeltaEvent};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::scan::{ScanMemo, TYPE_PREFIX, scan_delta_after_type};

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
#[derive(Debug, PartialEq, Deserialize)]
pub(crate) struct FastDelta<'a> {
    /// The `type`, decoded so that a duplicate `type` key fails here as it fails there.
    #[serde(rename = "type", borrow)]
    pub(crate) event_type: Cow<'a, str>,
    #[serde(default)]
    pub(crate) sequence_number: Option<u64>,
    #[serde(default, borrow, deserialize_with = "borrowed_text")]
    pub(crate) item_id: Option<Cow<'a, str>>,
    pub(crate) output_index: u64,
    #[serde(default)]
    pub(crate) content_index: Option<u64>,
    #[serde(default)]
    pub(crate) summary_index: Option<u64>,
    /// `null` and missing are the empty string, as on the wire type.
    #[serde(default, borrow, deserialize_with = "borrowed_text")]
    pub(crate) delta: Option<Cow<'a, str>>,
    #[serde(skip)]
    pub(crate) kind: Option<DeltaKind>,
}

/// An optional string borrowed from the input when it has no escapes. Serde borrows a
/// bare `Cow<str>` field but not one inside an `Option`, which it copies into a new
/// `String`: one allocation per delta for text that is about to be copied anyway.
fn borrowed_text<'de, D>(deserializer: D) -> Result<Option<Cow<'de, str>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    struct Text;

    impl<'de> serde::de::Visitor<'de> for Text {
        type Value = Option<Cow<'de, str>>;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a string or null")
        }

        fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(text)))
        }

        fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(text.to_owned())))
        }

        fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
            Ok(Some(Cow::Owned(text)))
        }

        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: serde::Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Self::Value, D::Error> {
            deserializer.deserialize_str(self)
        }
    }

    deserializer.deserialize_option(Text)
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
pub(crate) fn decode<'a>(data: &'a str, memo: &mut ScanMemo) -> Result<Decoded<'a>, String> {
    if let Some((kind, type_end)) = leading_delta_kind(data)
        && let Some(mut delta) = scan_delta_after_type(data, type_end, memo)
            .or_else(|| serde_json::from_str::<FastDelta<'_>>(data).ok())
        && delta.event_type == kind.event_type()
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

/// The delta kind, and where its `type` member ends, when the payload starts with it as
/// OpenAI writes every event (`{"type":"response.output_text.delta",...`). `None` sends
/// the payload down the general path, so this is only a shortcut, never a decision about
/// validity. Fixed-size compares, so no call to `memcmp`.
fn leading_delta_kind(data: &str) -> Option<(DeltaKind, usize)> {
    let bytes = data.as_bytes();
    if bytes.first_chunk() != Some(TYPE_PREFIX) {
        return None;
    }
    let rest = bytes.get(TYPE_PREFIX.len()..)?;
    let (kind, length) = if rest.first_chunk() == Some(b"response.output_text.delta\"") {
        (DeltaKind::Text, 27)
    } else if rest.first_chunk() == Some(b"response.function_call_arguments.delta\"") {
        (DeltaKind::Arguments, 39)
    } else if rest.first_chunk() == Some(b"response.reasoning_summary_text.delta\"") {
        (DeltaKind::ReasoningSummary, 38)
    } else if rest.first_chunk() == Some(b"response.refusal.delta\"") {
        (DeltaKind::Refusal, 23)
    } else {
        return None;
    };
    Some((kind, TYPE_PREFIX.len() + length))
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

/// The fields of a delta event the fold uses, from either decoding path.
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

impl<'a> From<FastDelta<'a>> for DeltaParts<'a> {
    fn from(delta: FastDelta<'a>) -> Self {
        DeltaParts {
            output_index: delta.output_index,
            content_index: delta.content_index,
            summary_index: delta.summary_index,
            item_id: delta.item_id,
            text: delta.delta.unwrap_or(Cow::Borrowed("")),
        }
    }
}

//! SSE `data` to stream events: every payload goes through the wire type's own decoder
//! ([`StreamEvent::from_json`]), and a terminal event's `response` member is kept as
//! the text it was sent as, for the envelope's `rawResponseJson`.

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

/// One decoded SSE `data` payload: the event, and for the terminal events the
/// `response` member's text, so the envelope can keep it exactly as sent.
#[derive(Debug)]
pub(crate) struct Decoded {
    pub(crate) event: StreamEvent,
    pub(crate) raw_response: Option<String>,
}

/// Decodes one payload; `Err` is the reason it is not a JSON event at all.
pub(crate) fn decode(data: &str) -> Result<Decoded, String> {
    let event = StreamEvent::from_json(data).map_err(|error| error.to_string())?;
    let raw_response = event
        .terminal_response()
        .and_then(|_| serde_json::from_str::<RawTerminal<'_>>(data).ok())
        .map(|raw| raw.response.get().to_owned());
    Ok(Decoded {
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

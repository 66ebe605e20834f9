//! Stream events of `POST /v1/responses` with `"stream": true`.
//!
//! Each SSE event's `data` is one JSON object whose `type` names the event. Dispatch is
//! on that `type` (some proxies drop the `event:` line). There is no `[DONE]`: a stream
//! ends after `response.completed`, `response.incomplete` or `response.failed`, whose
//! `response` is the full final object. Deltas carry the item id (`item_id`) and
//! `output_index`, not the call id; `response.function_call_arguments.done` carries no
//! `name` on the wire. Deltas' `obfuscation` padding is ignored.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::ContentPart;
use super::error::ApiError;
use super::output::{OutputItem, SummaryPart};
use super::response::Response;
use super::serde_util::{null_as_default, string_or_number};
use crate::ModelError;

/// Declares [`StreamEvent`] from one table of `wire type => Variant(Payload)`, so that
/// the serde tags, [`StreamEvent::KNOWN_TYPES`] and [`StreamEvent::type_name`] cannot
/// drift apart: every name is written once, here.
macro_rules! stream_events {
    ($($(#[doc = $doc:literal])* $wire:literal => $variant:ident($payload:ty),)+) => {
        /// One stream event.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type")]
        pub enum StreamEvent {
            $(
                $(#[doc = $doc])*
                #[serde(rename = $wire)]
                $variant($payload),
            )+
            /// Any other event (annotations, hosted tool progress, new events), or a known one
            /// of unexpected shape, kept as received.
            #[serde(untagged)]
            Other(Value),
        }

        impl StreamEvent {
            /// Every event type that decodes into its own variant. An `Other` event of
            /// one of these types is a known event of unexpected shape, not a new kind
            /// of event.
            pub const KNOWN_TYPES: &'static [&'static str] = &[$($wire),+];

            /// The event's `type` as sent (`None` for an `Other` without one).
            pub fn type_name(&self) -> Option<&str> {
                match self {
                    $(StreamEvent::$variant(_) => Some($wire),)+
                    StreamEvent::Other(raw) => raw.get("type").and_then(Value::as_str),
                }
            }

            /// `data` decoded straight into the payload of the event type `wire`, or
            /// `None` when `wire` is not a known type, the payload does not decode, or
            /// it names `type` again (then the enum's own decoding decides: `Other`,
            /// or an error).
            fn decode_payload(wire: &str, data: &str) -> Option<StreamEvent> {
                match wire {
                    $($wire => super::stray_tag::decode_without_tag::<$payload>(data).map(StreamEvent::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

stream_events! {
    /// `response.created`: the response exists, `in_progress`.
    "response.created" => Created(ResponseEvent),
    /// `response.in_progress`.
    "response.in_progress" => InProgress(ResponseEvent),
    /// `response.queued` (background responses).
    "response.queued" => Queued(ResponseEvent),
    /// `response.completed`: terminal; carries the final response.
    "response.completed" => Completed(ResponseEvent),
    /// `response.incomplete`: terminal; carries the final response.
    "response.incomplete" => Incomplete(ResponseEvent),
    /// `response.failed`: terminal; carries the final response with its `error`.
    "response.failed" => Failed(ResponseEvent),
    /// `response.output_item.added`: a new item at `output_index`; for a function call
    /// this is where its `name` and `call_id` are.
    "response.output_item.added" => OutputItemAdded(OutputItemEvent),
    /// `response.output_item.done`: the finished item (authoritative).
    "response.output_item.done" => OutputItemDone(OutputItemEvent),
    /// `response.content_part.added`.
    "response.content_part.added" => ContentPartAdded(ContentPartEvent),
    /// `response.content_part.done`.
    "response.content_part.done" => ContentPartDone(ContentPartEvent),
    /// `response.output_text.delta`.
    "response.output_text.delta" => OutputTextDelta(TextDeltaEvent),
    /// `response.output_text.done`: carries the full `text`.
    "response.output_text.done" => OutputTextDone(TextDoneEvent),
    /// `response.refusal.delta`.
    "response.refusal.delta" => RefusalDelta(TextDeltaEvent),
    /// `response.refusal.done`: carries the full `refusal`.
    "response.refusal.done" => RefusalDone(TextDoneEvent),
    /// `response.function_call_arguments.delta`.
    "response.function_call_arguments.delta" => FunctionCallArgumentsDelta(TextDeltaEvent),
    /// `response.function_call_arguments.done`: carries the full `arguments` (and no
    /// `name`, whatever the spec says).
    "response.function_call_arguments.done" => FunctionCallArgumentsDone(TextDoneEvent),
    /// `response.reasoning_summary_part.added`.
    "response.reasoning_summary_part.added" => ReasoningSummaryPartAdded(SummaryPartEvent),
    /// `response.reasoning_summary_part.done`.
    "response.reasoning_summary_part.done" => ReasoningSummaryPartDone(SummaryPartEvent),
    /// `response.reasoning_summary_text.delta`.
    "response.reasoning_summary_text.delta" => ReasoningSummaryTextDelta(TextDeltaEvent),
    /// `response.reasoning_summary_text.done`.
    "response.reasoning_summary_text.done" => ReasoningSummaryTextDone(TextDoneEvent),
    /// `error`: an in-stream error, nested on the wire, flat in the spec.
    "error" => Error(ErrorEvent),
}

impl StreamEvent {
    /// Decodes one event from an SSE `data` payload. Unknown event types are `Other`;
    /// only data that is not a JSON object is an error.
    pub fn from_json(data: &str) -> Result<StreamEvent, ModelError> {
        // serde decodes an internally tagged enum by first buffering the whole event into
        // a tree of its own, then decoding the variant from that tree: for a stream of
        // small deltas most of the decoding time. Reading the `type` first (a scan that
        // skips every other value without keeping it) and then the payload straight from
        // the text gives the same event at about half the cost. `error` is left to the
        // enum: its payload is also read flat, where a `type` field is the error's own.
        #[derive(Deserialize)]
        struct Tag<'a> {
            #[serde(rename = "type", borrow)]
            kind: Option<std::borrow::Cow<'a, str>>,
        }
        // Providers write `type` first (`{"type":"response.output_text.delta",...`): then
        // it is read without scanning the rest, which for the events that carry the
        // whole response is most of the text. Any other layout takes the scan.
        let kind = match leading_type(data) {
            Some(kind) => Some(std::borrow::Cow::Borrowed(kind)),
            None => serde_json::from_str::<Tag<'_>>(data)
                .ok()
                .and_then(|tag| tag.kind),
        };
        if let Some(kind) = kind
            && kind != "error"
            && let Some(event) = StreamEvent::decode_payload(&kind, data)
        {
            return Ok(event);
        }
        let event: StreamEvent = serde_json::from_str(data).map_err(|error| ModelError::Json {
            path: "$".into(),
            message: error.to_string(),
        })?;
        // Every stream event is an object; an array or a number is a broken stream, not
        // a new event type.
        if let StreamEvent::Other(raw) = &event
            && !raw.is_object()
        {
            return Err(ModelError::Json {
                path: "$".into(),
                message: format!("expected a JSON object, found {}", crate::json_kind(raw)),
            });
        }
        Ok(event)
    }

    /// The final event a stream of `response` ends with, by its status:
    /// `response.incomplete`, `response.failed`, else `response.completed`.
    pub fn terminal(sequence_number: Option<u64>, response: Response) -> StreamEvent {
        let kind = StreamEvent::terminal_type(response.status.as_ref());
        let event = ResponseEvent {
            sequence_number,
            response: Box::new(response),
        };
        match kind {
            "response.incomplete" => StreamEvent::Incomplete(event),
            "response.failed" => StreamEvent::Failed(event),
            _ => StreamEvent::Completed(event),
        }
    }

    /// The `type` of the final event a stream of a response with this status ends with
    /// (see [`terminal`](Self::terminal)).
    pub fn terminal_type(status: Option<&crate::wire::ResponseStatus>) -> &'static str {
        match status {
            Some(crate::wire::ResponseStatus::Incomplete) => "response.incomplete",
            Some(crate::wire::ResponseStatus::Failed) => "response.failed",
            _ => "response.completed",
        }
    }

    /// Whether an event of this `type` ends a response's stream, carrying its final
    /// response: `response.completed`, `response.incomplete` or `response.failed`.
    pub fn is_terminal_type(event_type: &str) -> bool {
        matches!(
            event_type,
            "response.completed" | "response.incomplete" | "response.failed"
        )
    }

    /// The terminal events' final response: `completed`, `incomplete` or `failed`.
    pub fn terminal_response(&self) -> Option<&Response> {
        match self {
            StreamEvent::Completed(event)
            | StreamEvent::Incomplete(event)
            | StreamEvent::Failed(event) => Some(&event.response),
            _ => None,
        }
    }

    /// The event's `sequence_number`, when it has one.
    pub fn sequence_number(&self) -> Option<u64> {
        match self {
            StreamEvent::Created(e)
            | StreamEvent::InProgress(e)
            | StreamEvent::Queued(e)
            | StreamEvent::Completed(e)
            | StreamEvent::Incomplete(e)
            | StreamEvent::Failed(e) => e.sequence_number,
            StreamEvent::OutputItemAdded(e) | StreamEvent::OutputItemDone(e) => e.sequence_number,
            StreamEvent::ContentPartAdded(e) | StreamEvent::ContentPartDone(e) => e.sequence_number,
            StreamEvent::OutputTextDelta(e)
            | StreamEvent::RefusalDelta(e)
            | StreamEvent::FunctionCallArgumentsDelta(e)
            | StreamEvent::ReasoningSummaryTextDelta(e) => e.sequence_number,
            StreamEvent::OutputTextDone(e)
            | StreamEvent::RefusalDone(e)
            | StreamEvent::FunctionCallArgumentsDone(e)
            | StreamEvent::ReasoningSummaryTextDone(e) => e.sequence_number,
            StreamEvent::ReasoningSummaryPartAdded(e)
            | StreamEvent::ReasoningSummaryPartDone(e) => e.sequence_number,
            StreamEvent::Error(e) => e.sequence_number,
            StreamEvent::Other(raw) => raw.get("sequence_number").and_then(Value::as_u64),
        }
    }
}

/// The value of `type` when it is the object's first key and a plain string, written
/// without spaces or escapes: `{"type":"response.created",...`.
fn leading_type(data: &str) -> Option<&str> {
    let rest = data.trim_start().strip_prefix(r#"{"type":""#)?;
    let end = rest.find(['"', '\\'])?;
    // A backslash means an escape: the scan decodes it.
    (rest.as_bytes().get(end) == Some(&b'"')).then(|| &rest[..end])
}

/// An event that carries the whole response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseEvent {
    /// Position in the stream (0, 1, 2, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<u64>,
    /// The response as of this event.
    pub response: Box<Response>,
}

/// `response.output_item.added` / `.done`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputItemEvent {
    /// Position in the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<u64>,
    /// Index of the item in `output`.
    pub output_index: u64,
    /// The item.
    pub item: OutputItem,
}

/// `response.content_part.added` / `.done`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentPartEvent {
    /// Position in the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<u64>,
    /// The message item's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// Index of the item in `output`.
    pub output_index: u64,
    /// Index of the part in the item's `content`.
    pub content_index: u64,
    /// The part.
    pub part: ContentPart,
}

/// A delta of text, refusal, function arguments or reasoning summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextDeltaEvent {
    /// Position in the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<u64>,
    /// The item's id (`msg_...`, `fc_...`, `rs_...`), not a call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// Index of the item in `output`.
    pub output_index: u64,
    /// Index of the content part (text and refusal deltas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_index: Option<u64>,
    /// Index of the summary part (reasoning summary deltas).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_index: Option<u64>,
    /// The new text.
    #[serde(default, deserialize_with = "null_as_default")]
    pub delta: String,
}

/// The `.done` event of text, refusal, function arguments or reasoning summary: the
/// full value under whichever field name the event uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextDoneEvent {
    /// Position in the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<u64>,
    /// The item's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// Index of the item in `output`.
    pub output_index: u64,
    /// Index of the content part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_index: Option<u64>,
    /// Index of the summary part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_index: Option<u64>,
    /// `text` of `output_text.done` and `reasoning_summary_text.done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `refusal` of `refusal.done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// `arguments` of `function_call_arguments.done`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// `name` of `function_call_arguments.done`: in the spec, absent on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl TextDoneEvent {
    /// The full value, whichever field carried it.
    pub fn value(&self) -> Option<&str> {
        self.text
            .as_deref()
            .or(self.refusal.as_deref())
            .or(self.arguments.as_deref())
    }
}

/// `response.reasoning_summary_part.added` / `.done`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryPartEvent {
    /// Position in the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<u64>,
    /// The reasoning item's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// Index of the item in `output`.
    pub output_index: u64,
    /// Index of the part in the item's `summary`.
    pub summary_index: u64,
    /// The part.
    pub part: SummaryPart,
}

/// An in-stream `error` event. On the wire the error is nested
/// (`{"type":"error","error":{...}}`); the spec shows it flat
/// (`{"type":"error","code":...,"message":...}`). Both decode; use
/// [`api_error`](Self::api_error) to read either.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    /// Position in the stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence_number: Option<u64>,
    /// The nested error (wire shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ApiError>,
    /// Flat shape: the code.
    #[serde(
        default,
        deserialize_with = "string_or_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<String>,
    /// Flat shape: the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Flat shape: the parameter.
    #[serde(
        default,
        deserialize_with = "string_or_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub param: Option<String>,
}

impl ErrorEvent {
    /// The error, from the nested shape when present, else from the flat fields.
    pub fn api_error(&self) -> ApiError {
        match &self.error {
            Some(nested) => nested.clone(),
            None => ApiError {
                message: self.message.clone().unwrap_or_default(),
                kind: None,
                param: self.param.clone(),
                code: self.code.clone(),
            },
        }
    }
}

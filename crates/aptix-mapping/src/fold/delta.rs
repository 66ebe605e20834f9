//! [`StreamDelta`]: what the fold passes on while a stream is still arriving.

use aptix_model::contract::FinishReason;
use aptix_model::wire::OutputItem;
use serde::Serialize;

/// One piece of progress, emitted as the event that carries it is folded.
///
/// Made for two consumers: a CLI that prints [`TextDelta`](Self::TextDelta) text as it
/// arrives, and a server that forwards deltas to its own clients. For the latter it
/// serialises as a small tagged JSON object in the envelope's casing, e.g.
/// `{"type":"textDelta","outputIndex":1,"contentIndex":0,"text":"Hel"}`.
///
/// A delta is emitted only for what was folded: an event the fold could not place (an
/// orphan, a repeated sequence number) emits nothing, so concatenating the deltas gives
/// exactly the streamed items' text. The final response, not the deltas, is what the
/// envelope is made from.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// Each variant renames its own fields (`rename_all` on the variant, not
// `rename_all_fields` on the enum), which the OpenAPI schema derive reads too.
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum StreamDelta {
    /// The response exists (first `response.created`, `.queued` or `.in_progress`).
    #[serde(rename_all = "camelCase")]
    Started {
        /// The response id: the envelope's `responseContinuationId`.
        response_id: String,
        /// The model, when the event named it.
        model: Option<String>,
    },
    /// Answer text for the message at `output_index`.
    #[serde(rename_all = "camelCase")]
    TextDelta {
        /// The message's index in `output`.
        output_index: u64,
        /// The `output_text` part's index in the message.
        content_index: u64,
        /// The new text.
        text: String,
    },
    /// Refusal text for the message at `output_index`; not answer text.
    #[serde(rename_all = "camelCase")]
    RefusalDelta {
        /// The message's index in `output`.
        output_index: u64,
        /// The `refusal` part's index in the message.
        content_index: u64,
        /// The new refusal text.
        text: String,
    },
    /// A function call (or custom tool call) began; its arguments follow as
    /// [`ToolArgumentsDelta`](Self::ToolArgumentsDelta)s.
    #[serde(rename_all = "camelCase")]
    ToolCallStarted {
        /// The call's index in `output`.
        output_index: u64,
        /// The call id (`call_...`) a tool result must answer with.
        call_id: String,
        /// The tool's name.
        name: String,
    },
    /// More argument text for the function call at `output_index`.
    #[serde(rename_all = "camelCase")]
    ToolArgumentsDelta {
        /// The call's index in `output`.
        output_index: u64,
        /// The call id, from the call's `output_item.added` (delta events carry only
        /// the item id).
        call_id: String,
        /// The new argument text.
        delta: String,
    },
    /// A tool call is complete (its `output_item.done`).
    #[serde(rename_all = "camelCase")]
    ToolCallDone {
        /// The call's index in `output`.
        output_index: u64,
        /// The call id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// The full arguments, exactly as emitted.
        arguments_json: String,
    },
    /// Reasoning summary text for the reasoning item at `output_index`.
    #[serde(rename_all = "camelCase")]
    ReasoningSummaryDelta {
        /// The reasoning item's index in `output`.
        output_index: u64,
        /// The summary part's index.
        summary_index: u64,
        /// The new summary text.
        text: String,
    },
    /// The stream reported an `error` event. The fold goes on: OpenAI follows it with
    /// `response.failed`, whose response carries the same error.
    #[serde(rename_all = "camelCase")]
    Error {
        /// The error's code, else its type, else `stream_error`.
        code: String,
        /// The error's message.
        message: String,
    },
    /// The stream was cut (the connection lost, a stall past the idle timeout, a body
    /// that ended without a terminal event) and the caller is recovering it. Never
    /// emitted by the fold: the orchestrator sends it between the deltas of the cut
    /// attempt and those of the next, so a consumer knows exactly where the retry
    /// began. `aptix serve` also sends one, with `events` 0, for a request that failed
    /// before its reply and is sent again (`aptix_client::observe_retries`). `cause`
    /// tells the two apart: each counts its own attempts, so a cut stream's second
    /// attempt may be followed by its request's second send.
    #[serde(rename_all = "camelCase")]
    Retrying {
        /// Which of the two it is, and so what `attempt` counts.
        cause: RetryCause,
        /// The attempt about to start (2 for the first retry).
        attempt: u32,
        /// The most attempts of this kind: the model call's streams for a cut stream,
        /// the request's sends for a request that failed.
        max_attempts: u32,
        /// The wait before it, in milliseconds.
        wait_ms: u64,
        /// What cut the stream, in words.
        reason: String,
        /// Stream events received from the cut attempt.
        events: u64,
        /// `true`: the same response's stream resumes after the last event received,
        /// so the deltas that follow continue the text already delivered. `false`: the
        /// request is sent again and a new response streams from its start, so text
        /// already delivered for this model call comes again (usually the same; a
        /// consumer that printed it skips what it already showed). Either way the final
        /// envelope holds the text once.
        resumed: bool,
    },
    /// A server tool the orchestrator runs itself began to run, for a call the model
    /// completed ([`ToolCallDone`](Self::ToolCallDone)). Never emitted by the fold.
    #[serde(rename_all = "camelCase")]
    ToolRunning {
        /// The call id.
        call_id: String,
        /// The tool's name.
        name: String,
    },
    /// A server tool finished, or the orchestrator refused a call to a tool the turn's
    /// mode does not have (`ok` false, with the reason the model is told). Never emitted
    /// by the fold.
    #[serde(rename_all = "camelCase")]
    ToolFinished {
        /// The call id.
        call_id: String,
        /// The tool's name.
        name: String,
        /// Whether it succeeded.
        ok: bool,
        /// Its result as JSON text when it succeeded, else why it failed (what the model
        /// is told).
        output: String,
        /// How long it ran, in milliseconds.
        execution_ms: u64,
    },
    /// The session's context was compacted before the next model call: its older
    /// items were replaced by a summary (or the provider's compacted items) so the
    /// request fits the model's context window. Never emitted by the fold: the
    /// orchestrator sends it before the model call it made room for.
    #[serde(rename_all = "camelCase")]
    Compacted {
        /// Why: `threshold` (the request would have passed the compaction threshold) or
        /// `overflow` (the provider answered `context_length_exceeded`).
        reason: String,
        /// How: `endpoint` (`/responses/compact`) or `summary` (a model call that wrote
        /// a handover note).
        method: String,
        /// Estimated tokens of the conversation before.
        tokens_before: u64,
        /// Estimated tokens of the conversation after.
        tokens_after: u64,
        /// The notice in words, the same as the envelope's warning.
        message: String,
    },
    /// The final response arrived (`response.completed`, `.incomplete` or `.failed`).
    #[serde(rename_all = "camelCase")]
    Done {
        /// The response id.
        response_id: String,
        /// The final status as sent.
        status: Option<String>,
        /// The finish reason the envelope will carry.
        finish_reason: Option<FinishReason>,
    },
}

impl StreamDelta {
    /// The answer text this delta adds, for printing as it arrives: `Some` only for
    /// [`TextDelta`](Self::TextDelta).
    pub fn text(&self) -> Option<&str> {
        match self {
            StreamDelta::TextDelta { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// `ToolCallStarted` for a call item being added.
pub(crate) fn call_started(output_index: u64, item: &OutputItem) -> Option<StreamDelta> {
    let (call_id, name) = match item {
        OutputItem::FunctionCall(call) => (&call.call_id, &call.name),
        OutputItem::CustomToolCall(call) => (&call.call_id, &call.name),
        _ => return None,
    };
    Some(StreamDelta::ToolCallStarted {
        output_index,
        call_id: call_id.clone(),
        name: name.clone(),
    })
}

/// `ToolCallDone` for a finished call item.
pub(crate) fn call_done(output_index: u64, item: &OutputItem) -> Option<StreamDelta> {
    let (call_id, name, arguments) = match item {
        OutputItem::FunctionCall(call) => (&call.call_id, &call.name, &call.arguments),
        OutputItem::CustomToolCall(call) => (&call.call_id, &call.name, &call.input),
        _ => return None,
    };
    Some(StreamDelta::ToolCallDone {
        output_index,
        call_id: call_id.clone(),
        name: name.clone(),
        arguments_json: arguments.clone(),
    })
}

/// Why a model call is sent again ([`StreamDelta::Retrying`]). Each cause counts its own
/// attempts: a stream cut is recovered by another stream (a resumed one, or the request
/// sent again), and each stream's request may itself fail and be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RetryCause {
    /// The request failed before its reply (429, a 5xx, a connection failure) and is
    /// sent again: `attempt` counts this request's sends.
    RequestFailed,
    /// The stream was cut mid-answer (the connection lost, a stall past the idle
    /// timeout, a body ended without its final event), or ended with a failure the
    /// server may get past (`server_error`, `rate_limit_exceeded`): `attempt` counts
    /// the model call's streams.
    StreamCut,
}

//! Soft problems: [`MappingWarning`].
//!
//! A warning means "the envelope is usable, but something in the input was not what
//! AGN-004 or the wire notes expect". Nothing the provider sent is dropped silently:
//! what mapping cannot place in the envelope is named here, with the item's type and id.
//! Stream anomalies that can repeat (a duplicated event, an undecodable one) are counted
//! and reported once per stream, so a misbehaving proxy cannot flood the envelope.

use std::fmt;

/// A soft problem found while mapping a response or folding a stream.
///
/// The [`Display`](fmt::Display) text is what lands in the envelope's `warnings`:
/// lowercase, no trailing period, naming the item type and id when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MappingWarning {
    /// A message had `refusal` parts; their text is in the envelope's `refusal`, not in
    /// `text`.
    Refusal {
        /// The message item's id.
        item_id: Option<String>,
    },
    /// A call of a built-in or hosted tool (`web_search_call`, `file_search_call`,
    /// `code_interpreter_call`, `computer_call`, `mcp_call`, ...): not a client or server
    /// tool call Aptix can answer, so it is not in `toolCalls`.
    UnmappedToolCall {
        /// The item's `type`.
        item_type: String,
        /// The item's id.
        item_id: Option<String>,
    },
    /// An output item of a type this version does not know.
    UnknownItem {
        /// The item's `type`, `None` when it had none.
        item_type: Option<String>,
        /// The item's id.
        item_id: Option<String>,
    },
    /// An item of a known type (`message`, `function_call`, ...) whose shape did not
    /// decode, such as a `function_call` without `call_id`.
    UnreadableItem {
        /// The item's `type`.
        item_type: String,
        /// The item's id.
        item_id: Option<String>,
        /// What the decoder reported.
        reason: String,
    },
    /// A message content part that is neither `output_text` nor `refusal`, or one of
    /// those that did not decode.
    UnmappedContentPart {
        /// The message item's id.
        item_id: Option<String>,
        /// The part's `type`.
        part_type: Option<String>,
        /// What the decoder reported, for a known part type that did not decode.
        reason: Option<String>,
    },
    /// A `custom_tool_call` was mapped to a tool call whose `argumentsJson` is the
    /// tool's free-form input, which need not be JSON.
    CustomToolCall {
        /// The call id.
        call_id: String,
        /// The tool's name.
        name: String,
    },
    /// The response had no `status`; it was read as `completed`.
    MissingStatus,
    /// The response is `queued` or `in_progress`: not finished, so no finish reason.
    UnfinishedResponse {
        /// The status as sent.
        status: String,
    },
    /// The response was `cancelled` before it finished.
    Cancelled,
    /// A `status` this version does not know; it became the finish reason as sent.
    UnknownStatus {
        /// The status as sent.
        status: String,
    },
    /// An `incomplete` response without `incomplete_details.reason`.
    IncompleteWithoutReason,
    /// An `incomplete_details.reason` this version does not know; it became the finish
    /// reason as sent.
    UnknownIncompleteReason {
        /// The reason as sent.
        reason: String,
    },
    /// A `failed` response without an `error` object (or with an empty one).
    FailedWithoutError,
    /// A response that is not `failed` but carries an `error` object anyway.
    ErrorOnUnfailedResponse {
        /// The response status as sent.
        status: String,
        /// The error's code.
        code: Option<String>,
        /// The error's message.
        message: String,
    },
    /// A non-2xx body that is empty, or meant to be JSON (it opens with `{` or `[`) but is
    /// not a `{"error": {...}}` object; the envelope's message is an excerpt of it. A
    /// plain-text body (`Not Found`, a proxy's page) is the message as it stands, without
    /// this warning.
    UnreadableErrorBody {
        /// Why it could not be read.
        reason: String,
    },
    /// Stream events whose `sequence_number` was not above the previous one (repeated
    /// or out of order); they were skipped.
    OutOfOrderEvents {
        /// How many.
        count: u64,
        /// The sequence number before the first such event.
        first_previous: u64,
        /// The first such event's sequence number.
        first_received: u64,
    },
    /// Sequence numbers missing between consecutive events: events were lost on the way.
    SequenceGaps {
        /// How many numbers were missing in all.
        missing: u64,
        /// The sequence number before the first gap.
        first_after: u64,
    },
    /// Stream events that could not be decoded (data that is not JSON, an SSE event
    /// over the size limit); they were skipped.
    UndecodableEvents {
        /// How many.
        count: u64,
        /// The first one's problem.
        first_reason: String,
    },
    /// Stream events about an output item the stream never added, or of another type
    /// than the item at that index; they were not folded.
    OrphanEvents {
        /// How many.
        count: u64,
        /// The first one's `type`.
        first_event_type: String,
        /// The first one's `output_index`.
        first_output_index: u64,
    },
    /// Events that arrived after the final response; ignored.
    EventsAfterFinal {
        /// How many.
        count: u64,
    },
    /// The stream sent an `error` event, yet its final response did not fail.
    StreamErrorBeforeFinal {
        /// The error's code (or type).
        code: Option<String>,
        /// The error's message.
        message: String,
        /// The final response's status.
        final_status: String,
    },
    /// The items built from the stream events differ from the final response's output;
    /// the final response is used.
    StreamDiffersFromFinal {
        /// The output indexes that differ (or exist on one side only).
        output_indexes: Vec<u64>,
    },
    /// The final response had an empty `output`, so the items built from the stream
    /// events were used instead.
    OutputFilledFromStream {
        /// How many items.
        items: usize,
    },
    /// A 404 that names nothing it did not find (no `code`, or only `not_found`): the
    /// request went to a URL the server does not have, most often for a base URL
    /// without its `/v1`.
    NoSuchEndpoint,
}

impl MappingWarning {
    /// How a [`Refusal`](Self::Refusal)'s text ends: where to find the refusal in the
    /// envelope. A front end that shows the refusal as the answer (an editor) leaves
    /// this warning out.
    pub const REFUSAL_FIELD: &'static str = "the refusal is in `refusal`, not in `text`";
}

impl fmt::Display for MappingWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MappingWarning::Refusal { item_id } => match item_id {
                Some(id) => write!(
                    f,
                    "the model refused in message {id}; {}",
                    MappingWarning::REFUSAL_FIELD
                ),
                None => write!(f, "the model refused; {}", MappingWarning::REFUSAL_FIELD),
            },
            MappingWarning::UnmappedToolCall { item_type, item_id } => write!(
                f,
                "output item `{item_type}`{} is a built-in tool call that aptix does not map",
                id_suffix(item_id)
            ),
            MappingWarning::UnknownItem { item_type, item_id } => match item_type {
                Some(item_type) => write!(
                    f,
                    "unknown output item `{item_type}`{} was not mapped",
                    id_suffix(item_id)
                ),
                None => write!(
                    f,
                    "output item without a type{} was not mapped",
                    id_suffix(item_id)
                ),
            },
            MappingWarning::UnreadableItem {
                item_type,
                item_id,
                reason,
            } => write!(
                f,
                "output item `{item_type}`{} could not be read: {reason}",
                id_suffix(item_id)
            ),
            MappingWarning::UnmappedContentPart {
                item_id,
                part_type,
                reason,
            } => {
                let part = part_type.as_deref().unwrap_or("without a type");
                match reason {
                    Some(reason) => write!(
                        f,
                        "content part `{part}` of message{} could not be read: {reason}",
                        id_suffix(item_id)
                    ),
                    None => write!(
                        f,
                        "content part `{part}` of message{} was not mapped",
                        id_suffix(item_id)
                    ),
                }
            }
            MappingWarning::CustomToolCall { call_id, name } => write!(
                f,
                "custom tool call `{name}` ({call_id}) was mapped with its free-form input \
                 as argumentsJson, which need not be json"
            ),
            MappingWarning::MissingStatus => {
                f.write_str("response has no status; it was read as completed")
            }
            MappingWarning::UnfinishedResponse { status } => write!(
                f,
                "response status is `{status}`: it is not finished, so there is no finish reason"
            ),
            MappingWarning::Cancelled => f.write_str("response was cancelled before it finished"),
            MappingWarning::UnknownStatus { status } => write!(
                f,
                "unknown response status `{status}` was kept as the finish reason"
            ),
            MappingWarning::IncompleteWithoutReason => {
                f.write_str("response is incomplete without a reason")
            }
            MappingWarning::UnknownIncompleteReason { reason } => write!(
                f,
                "unknown incomplete reason `{reason}` was kept as the finish reason"
            ),
            MappingWarning::FailedWithoutError => {
                f.write_str("response failed without an error code or message")
            }
            MappingWarning::ErrorOnUnfailedResponse {
                status,
                code,
                message,
            } => write!(
                f,
                "response is `{status}` but carries an error ({}: {message})",
                code.as_deref().unwrap_or("no code")
            ),
            MappingWarning::UnreadableErrorBody { reason } => write!(
                f,
                "error body is not a json error object ({reason}); the message is an excerpt of it"
            ),
            MappingWarning::OutOfOrderEvents {
                count,
                first_previous,
                first_received,
            } => write!(
                f,
                "{count} stream {} repeated or out of order and skipped \
                 (first: sequence number {first_received} after {first_previous})",
                plural(*count, "event was", "events were")
            ),
            MappingWarning::SequenceGaps {
                missing,
                first_after,
            } => write!(
                f,
                "{missing} stream {} missing by sequence number (first gap after \
                 {first_after}); the final response is used as sent",
                plural(*missing, "event is", "events are")
            ),
            MappingWarning::UndecodableEvents {
                count,
                first_reason,
            } => write!(
                f,
                "{count} stream {} (first: {first_reason})",
                plural(
                    *count,
                    "event could not be decoded and was skipped",
                    "events could not be decoded and were skipped"
                )
            ),
            MappingWarning::OrphanEvents {
                count,
                first_event_type,
                first_output_index,
            } => write!(
                f,
                "{count} stream {} to output items the stream never added \
                 (first: `{first_event_type}` at output index {first_output_index})",
                plural(*count, "event referred", "events referred")
            ),
            MappingWarning::EventsAfterFinal { count } => write!(
                f,
                "{count} stream {}",
                plural(
                    *count,
                    "event came after the final response and was ignored",
                    "events came after the final response and were ignored"
                )
            ),
            MappingWarning::StreamErrorBeforeFinal {
                code,
                message,
                final_status,
            } => write!(
                f,
                "the stream reported an error ({}: {message}) but its final response is `{final_status}`",
                code.as_deref().unwrap_or("no code")
            ),
            MappingWarning::StreamDiffersFromFinal { output_indexes } => {
                let indexes: Vec<String> = output_indexes.iter().map(u64::to_string).collect();
                write!(
                    f,
                    "the streamed output differs from the final response at output index {}; \
                     the final response is used",
                    indexes.join(", ")
                )
            }
            MappingWarning::NoSuchEndpoint => f.write_str(
                "the server has no such endpoint (404): check the base URL (base_url, \
                 OPENAI_BASE_URL); it is the part before /responses (or /chat/completions \
                 for the Chat Completions API), and usually ends in /v1",
            ),
            MappingWarning::OutputFilledFromStream { items } => write!(
                f,
                "the final response has no output; the {items} {} built from the stream \
                 events {} used instead",
                plural(*items as u64, "item", "items"),
                plural(*items as u64, "was", "were")
            ),
        }
    }
}

/// `one` for a count of one, else `many`.
fn plural(count: u64, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 { one } else { many }
}

/// ` (id)` when there is an id, else nothing.
fn id_suffix(id: &Option<String>) -> String {
    id.as_deref()
        .map_or_else(String::new, |id| format!(" ({id})"))
}

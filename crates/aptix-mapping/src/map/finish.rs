//! `finishReason` and `kind`: derived, because the Responses API has no finish reason.
//!
//! | `status` | `incomplete_details.reason` | finish reason | warning |
//! |---|---|---|---|
//! | `completed`, with a function or custom tool call | | `tool_use` | |
//! | `completed` | | `stop` | |
//! | `incomplete` | `max_output_tokens` | `length` | |
//! | `incomplete` | `content_filter` | `content_filter` | |
//! | `incomplete` | other | the reason as sent | unknown reason |
//! | `incomplete` | none | `incomplete` | no reason |
//! | `failed` | | `error` | when `error` is missing |
//! | `cancelled` | | `cancelled` | cancelled |
//! | `queued`, `in_progress` | | `null` | not finished |
//! | missing | | as `completed` | no status |
//! | other | | the status as sent | unknown status |
//!
//! Unknown values are passed through as sent rather than squeezed into a known one: the
//! envelope's labels are open enums, and a client that does not know a value can still
//! show it. They go through [`FinishReason::from`], so a value that happens to be a known
//! label (a status of `content_filter`) is that label, exactly as a client decoding the
//! envelope would read it.

use aptix_model::contract::FinishReason;
use aptix_model::wire::{IncompleteReason, Response, ResponseStatus};

use crate::warning::MappingWarning;

/// The finish reason of `response`; `calls_tools` says whether its output has a
/// function or custom tool call.
pub(crate) fn finish_reason(
    response: &Response,
    calls_tools: bool,
    warnings: &mut Vec<MappingWarning>,
) -> Option<FinishReason> {
    let completed = || {
        Some(if calls_tools {
            FinishReason::ToolUse
        } else {
            FinishReason::Stop
        })
    };
    match &response.status {
        Some(ResponseStatus::Completed) => completed(),
        None => {
            // Compatible servers that leave `status` out return finished responses; a
            // running one would have come as a stream.
            warnings.push(MappingWarning::MissingStatus);
            completed()
        }
        Some(ResponseStatus::Incomplete) => Some(incomplete_reason(response, warnings)),
        Some(ResponseStatus::Failed) => Some(FinishReason::Error),
        Some(ResponseStatus::Cancelled) => {
            warnings.push(MappingWarning::Cancelled);
            Some(FinishReason::from("cancelled"))
        }
        Some(status @ (ResponseStatus::Queued | ResponseStatus::InProgress)) => {
            warnings.push(MappingWarning::UnfinishedResponse {
                status: status.as_str().to_owned(),
            });
            None
        }
        Some(ResponseStatus::Other(status)) => {
            warnings.push(MappingWarning::UnknownStatus {
                status: status.clone(),
            });
            Some(FinishReason::from(status.as_str()))
        }
    }
}

fn incomplete_reason(response: &Response, warnings: &mut Vec<MappingWarning>) -> FinishReason {
    let reason = response
        .incomplete_details
        .as_ref()
        .and_then(|details| details.reason.as_ref());
    match reason {
        Some(IncompleteReason::MaxOutputTokens) => FinishReason::Length,
        Some(IncompleteReason::ContentFilter) => FinishReason::ContentFilter,
        Some(IncompleteReason::Other(reason)) => {
            warnings.push(MappingWarning::UnknownIncompleteReason {
                reason: reason.clone(),
            });
            FinishReason::from(reason.as_str())
        }
        None => {
            warnings.push(MappingWarning::IncompleteWithoutReason);
            FinishReason::from("incomplete")
        }
    }
}

//! A finished `Response` (HTTP 200, or a stream's final event) to the envelope.

use aptix_model::contract::Kind;
use aptix_model::wire::{Response, ResponseStatus};

use super::failure::excerpt;
use super::finish::finish_reason;
use super::items::extract;
use super::usage::usage;
use crate::context::{Mapped, TurnContext};
use crate::error::MappingError;
use crate::warning::MappingWarning;

/// `errorCode` of a `failed` response whose `error` has no code.
pub(crate) const RESPONSE_FAILED_CODE: &str = "response_failed";

/// Maps a decoded response.
///
/// `raw_json` is the response as received, when the caller has it; it becomes
/// `rawResponseJson` unchanged (moved, not copied: a large reply is not held twice). Without it the response is serialised again, which keeps
/// every top-level field (unknown ones included) but not the original key order or
/// spacing, and drops unknown fields inside known output items.
///
/// Total: every `Response` maps. A `failed` one (an HTTP 200 can carry one) is
/// `kind = "error"` with its `error.code` (else `response_failed`) and `error.message`.
///
/// `finishReason`, derived because the API has none: `completed` with a function (or
/// custom tool) call is `tool_use`, else `stop`; `incomplete` is `length` for
/// `max_output_tokens` and `content_filter` for `content_filter`; `failed` is `error`;
/// `cancelled` is `cancelled`; `queued` and `in_progress` have none; a missing status
/// reads as `completed`; unknown values pass through as sent, with a warning.
///
/// `kind`: `error` for a failed response; else `ok` with text or a refusal; else
/// `tool-only` with tool calls; else `empty`. The full tables are in `docs/mapping.md`.
pub fn map_response(response: &Response, raw_json: Option<String>, turn: &TurnContext) -> Mapped {
    let extracted = extract(&response.output);
    let mut warnings = extracted.warnings;
    let reason = finish_reason(response, extracted.calls_tools, &mut warnings);
    let failed = response.status == Some(ResponseStatus::Failed);

    let mut envelope = turn.envelope(Kind::classify(
        failed,
        extracted.text.is_some(),
        !extracted.tool_calls.is_empty(),
        extracted.refusal.is_some(),
    ));
    envelope.response_continuation_id = Some(response.id.clone());
    envelope.model_id = response.model.clone();
    envelope.text = extracted.text;
    envelope.refusal = extracted.refusal;
    envelope.tool_calls = extracted.tool_calls;
    envelope.finish_reason = reason;
    envelope.usage = usage(response.usage.as_ref());
    envelope.raw_response_json = match raw_json {
        Some(raw) => Some(raw),
        None => serde_json::to_string(response).ok(),
    };

    let error = response
        .error
        .as_ref()
        .filter(|error| error.code.is_some() || !error.message.is_empty());
    if failed {
        if error.is_none() {
            warnings.push(MappingWarning::FailedWithoutError);
        }
        envelope.error_code = Some(
            error
                .and_then(|error| error.code.clone())
                .filter(|code| !code.is_empty())
                .unwrap_or_else(|| RESPONSE_FAILED_CODE.to_owned()),
        );
        envelope.error_message = Some(
            error
                .map(|error| error.message.clone())
                .filter(|message| !message.is_empty())
                .unwrap_or_else(|| "the response failed without an error message".to_owned()),
        );
    } else if let Some(error) = error {
        warnings.push(MappingWarning::ErrorOnUnfailedResponse {
            status: response
                .status
                .as_ref()
                .map_or("no status", ResponseStatus::as_str)
                .to_owned(),
            code: error.code.clone(),
            message: error.message.clone(),
        });
    }
    Mapped::new(envelope, warnings)
}

/// Decodes a 2xx `/v1/responses` body and maps it, keeping the body as
/// `rawResponseJson` byte for byte.
///
/// # Errors
///
/// [`MappingError::InvalidResponseBody`] when the body is not UTF-8 JSON of a
/// `Response` (no `id`, `output` not a list, ...). Turn it into an envelope with
/// [`map_mapping_error`](crate::map_mapping_error).
pub fn map_response_body(body: &[u8], turn: &TurnContext) -> Result<Mapped, MappingError> {
    let invalid = |reason: String| MappingError::InvalidResponseBody {
        reason,
        excerpt: excerpt(body),
    };
    let text = std::str::from_utf8(body).map_err(|error| invalid(error.to_string()))?;
    let response: Response =
        serde_json::from_str(text).map_err(|error| invalid(error.to_string()))?;
    Ok(map_response(&response, Some(text.to_owned()), turn))
}

//! A Chat Completions reply translated into a Responses `Response`.
//!
//! The first choice's message becomes a `message` output item (`output_text` and
//! `refusal` parts) followed by one `function_call` item per tool call; `finish_reason`
//! becomes `status` and `incomplete_details`; usage keeps the cached and reasoning
//! counts under their Responses names. The streaming translator folds chunks into the
//! same [`FoldedItem`]s and calls the same [`build_response`], so a streamed reply and
//! a whole one give the same `Response`.

use std::collections::BTreeMap;

use aptix_model::wire::{
    ContentPart, FunctionCall, IncompleteDetails, IncompleteReason, InputTokensDetails, ItemStatus,
    OutputItem, OutputMessage, OutputTokensDetails, Refusal, Response, ResponseStatus, Role, Usage,
};
use serde_json::Value;

use super::wire::ChatCompletion;
use crate::error::{ClientError, json_decode_error};

/// What identifies a chat reply (the same on every chunk of a stream).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ReplyHeader {
    pub(crate) id: String,
    pub(crate) created: Option<serde_json::Number>,
    pub(crate) model: Option<String>,
}

/// One output item, folded from a whole message or from chunks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FoldedItem {
    /// The assistant's message: its text and refusal, either possibly empty.
    Message { text: String, refusal: String },
    /// One tool call.
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
}

/// Translates a `chat.completion` body into a `Response`.
pub fn from_chat_completion(body: &[u8]) -> Result<Response, ClientError> {
    let completion: ChatCompletion = serde_json::from_slice(body)
        .map_err(|error| json_decode_error("chat completion", body, &error))?;
    let header = ReplyHeader {
        id: completion.id,
        created: completion.created,
        model: completion.model,
    };
    // Only the first choice: Aptix never asks for `n > 1`.
    let choice = completion
        .choices
        .into_iter()
        .min_by_key(|choice| choice.index)
        .ok_or_else(|| {
            ClientError::decode("chat completion", body, 0, "the reply has no choices")
        })?;
    let message = choice.message;
    let mut items = Vec::new();
    let text = content_text(message.content.as_ref());
    let refusal = message.refusal.unwrap_or_default();
    if !text.is_empty() || !refusal.is_empty() {
        items.push(FoldedItem::Message { text, refusal });
    }
    for call in message.tool_calls {
        items.push(FoldedItem::Call {
            call_id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
        });
    }
    let usage = completion.usage.as_ref().and_then(translate_usage);
    Ok(build_response(
        &header,
        items,
        choice.finish_reason.as_deref(),
        usage,
    ))
}

/// A message's `content`: a string, or a list of text parts joined (some servers).
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// The item id of the message of reply `id`; the stream uses it in its events too.
pub(crate) fn message_item_id(id: &str) -> String {
    format!("msg_{id}")
}

/// The item id of a function call (Responses tells item ids and call ids apart).
pub(crate) fn call_item_id(call_id: &str) -> String {
    format!("fc_{call_id}")
}

/// `finish_reason` as Responses `status` and `incomplete_details`: `length` and
/// `content_filter` are `incomplete` with that reason; `stop`, `tool_calls`,
/// `function_call`, none and anything unknown are `completed`.
pub(crate) fn status_for(
    finish_reason: Option<&str>,
) -> (ResponseStatus, Option<IncompleteDetails>) {
    let reason = match finish_reason {
        Some("length") => IncompleteReason::MaxOutputTokens,
        Some("content_filter") => IncompleteReason::ContentFilter,
        _ => return (ResponseStatus::Completed, None),
    };
    (
        ResponseStatus::Incomplete,
        Some(IncompleteDetails {
            reason: Some(reason),
        }),
    )
}

/// A message output item.
pub(crate) fn message_item(
    id: String,
    text: &str,
    refusal: &str,
    status: ItemStatus,
) -> OutputItem {
    let mut content = Vec::new();
    if !text.is_empty() || refusal.is_empty() {
        content.push(ContentPart::output_text(text));
    }
    if !refusal.is_empty() {
        content.push(ContentPart::Refusal(Refusal {
            refusal: refusal.to_owned(),
        }));
    }
    OutputItem::Message(OutputMessage {
        id: Some(id),
        role: Role::Assistant,
        status: Some(status),
        content,
    })
}

/// A function call output item.
pub(crate) fn call_item(
    call_id: &str,
    name: &str,
    arguments: &str,
    status: ItemStatus,
) -> OutputItem {
    OutputItem::FunctionCall(FunctionCall {
        id: Some(call_item_id(call_id)),
        call_id: call_id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
        status: Some(status),
    })
}

/// The final `Response` for folded items.
pub(crate) fn build_response(
    header: &ReplyHeader,
    items: Vec<FoldedItem>,
    finish_reason: Option<&str>,
    usage: Option<Usage>,
) -> Response {
    let (status, incomplete_details) = status_for(finish_reason);
    let item_status = match status {
        ResponseStatus::Incomplete => ItemStatus::Incomplete,
        _ => ItemStatus::Completed,
    };
    let output = items
        .into_iter()
        .map(|item| match item {
            FoldedItem::Message { text, refusal } => message_item(
                message_item_id(&header.id),
                &text,
                &refusal,
                item_status.clone(),
            ),
            FoldedItem::Call {
                call_id,
                name,
                arguments,
            } => call_item(&call_id, &name, &arguments, ItemStatus::Completed),
        })
        .collect();
    Response {
        id: header.id.clone(),
        object: Some("response".into()),
        created_at: header.created.clone(),
        status: Some(status),
        error: None,
        incomplete_details,
        model: header.model.clone(),
        output,
        usage,
        previous_response_id: None,
        extra: BTreeMap::new(),
    }
}

/// Chat usage under Responses names: `prompt_tokens` -> `input_tokens`,
/// `completion_tokens` -> `output_tokens`,
/// `prompt_tokens_details.cached_tokens` -> `input_tokens_details.cached_tokens`,
/// `completion_tokens_details.reasoning_tokens` ->
/// `output_tokens_details.reasoning_tokens`. Missing or `null` counts are 0.
pub(crate) fn translate_usage(usage: &Value) -> Option<Usage> {
    if !usage.is_object() {
        return None;
    }
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let input_tokens = count("/prompt_tokens");
    let output_tokens = count("/completion_tokens");
    let total = usage
        .get("total_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(input_tokens.saturating_add(output_tokens));
    Some(Usage {
        input_tokens,
        output_tokens,
        total_tokens: total,
        input_tokens_details: Some(InputTokensDetails {
            cached_tokens: count("/prompt_tokens_details/cached_tokens"),
            cache_write_tokens: None,
        }),
        output_tokens_details: Some(OutputTokensDetails {
            reasoning_tokens: count("/completion_tokens_details/reasoning_tokens"),
        }),
        extra: BTreeMap::new(),
    })
}

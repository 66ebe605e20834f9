//! Reading `response.output`: text, refusals and tool calls, and a warning for every item
//! or part that has no place in the envelope.
//!
//! Reasoning items are expected and carry nothing for the envelope (their summaries are
//! streamed as deltas), so they are skipped without a warning. Everything else that is not
//! mapped is named in a warning with its type and id.

use aptix_model::contract::AgentToolCall;
use aptix_model::wire::{
    ContentPart, CustomToolCall, FunctionCall, OutputItem, OutputMessage, OutputText,
    ReasoningItem, Refusal,
};
use serde_json::Value;

use crate::warning::MappingWarning;

/// Separator between text parts, and between refusals: one blank line (AGN-004 2.5).
const PART_SEPARATOR: &str = "\n\n";

/// Item types of built-in or hosted tools: calls Aptix neither executes nor returns to
/// the client. Any other type ending in `_call` is treated the same way, because new
/// built-in tools keep appearing with that suffix.
const BUILT_IN_TOOL_ITEMS: &[&str] = &[
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "computer_call",
    "image_generation_call",
    "local_shell_call",
    "shell_call",
    "apply_patch_call",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
];

/// What the output items hold for the envelope.
#[derive(Debug, Default)]
pub(crate) struct Extracted {
    /// `output_text` parts joined with a blank line; `None` when there is no text.
    pub(crate) text: Option<String>,
    /// `refusal` parts joined with a blank line; `None` when the model did not refuse.
    pub(crate) refusal: Option<String>,
    /// Function calls (and custom tool calls), in output order.
    pub(crate) tool_calls: Vec<AgentToolCall>,
    /// Whether the output has any `function_call` or `custom_tool_call` item, readable or
    /// not: the model stopped to have a tool called even if the item was garbled.
    pub(crate) calls_tools: bool,
    /// Soft problems found on the way.
    pub(crate) warnings: Vec<MappingWarning>,
}

/// Reads every output item in order.
pub(crate) fn extract(output: &[OutputItem]) -> Extracted {
    let mut texts: Vec<&str> = Vec::new();
    let mut refusals: Vec<&str> = Vec::new();
    let mut extracted = Extracted::default();
    for item in output {
        match item {
            OutputItem::Message(message) => {
                read_message(message, &mut texts, &mut refusals, &mut extracted.warnings);
            }
            OutputItem::FunctionCall(call) => {
                extracted.calls_tools = true;
                extracted.tool_calls.push(function_call(call));
            }
            OutputItem::CustomToolCall(call) => {
                extracted.calls_tools = true;
                extracted.tool_calls.push(custom_tool_call(call));
                extracted.warnings.push(MappingWarning::CustomToolCall {
                    call_id: call.call_id.clone(),
                    name: call.name.clone(),
                });
            }
            OutputItem::Reasoning(_) => {}
            OutputItem::Other(raw) => {
                if matches!(item.type_name(), Some("function_call" | "custom_tool_call")) {
                    extracted.calls_tools = true;
                }
                extracted.warnings.push(other_item_warning(item, raw));
            }
        }
    }
    extracted.text = join(&texts);
    extracted.refusal = join(&refusals);
    extracted
}

fn read_message<'a>(
    message: &'a OutputMessage,
    texts: &mut Vec<&'a str>,
    refusals: &mut Vec<&'a str>,
    warnings: &mut Vec<MappingWarning>,
) {
    let mut refused = false;
    for part in &message.content {
        match part {
            ContentPart::OutputText(text) => texts.push(&text.text),
            ContentPart::Refusal(refusal) => {
                refused = true;
                refusals.push(&refusal.refusal);
            }
            other => warnings.push(content_part_warning(message, other)),
        }
    }
    // One warning per refusing message, however many refusal parts it has.
    if refused {
        warnings.push(MappingWarning::Refusal {
            item_id: message.id.clone(),
        });
    }
}

fn function_call(call: &FunctionCall) -> AgentToolCall {
    AgentToolCall {
        call_id: call.call_id.clone(),
        name: call.name.clone(),
        // Byte for byte as emitted, even when it is not valid JSON (AGN-004 2.6): the
        // client that owns the tool decides what to do with malformed arguments.
        arguments_json: call.arguments.clone(),
    }
}

fn custom_tool_call(call: &CustomToolCall) -> AgentToolCall {
    AgentToolCall {
        call_id: call.call_id.clone(),
        name: call.name.clone(),
        arguments_json: call.input.clone(),
    }
}

/// Joins non-empty parts with a blank line. Empty parts are left out so that an empty
/// `output_text` neither adds stray blank lines nor turns "no text" into `""`.
fn join(parts: &[&str]) -> Option<String> {
    let mut non_empty = parts.iter().filter(|part| !part.is_empty()).peekable();
    non_empty.peek()?;
    let mut joined = String::new();
    for (index, part) in non_empty.enumerate() {
        if index > 0 {
            joined.push_str(PART_SEPARATOR);
        }
        joined.push_str(part);
    }
    Some(joined)
}

fn content_part_warning(message: &OutputMessage, part: &ContentPart) -> MappingWarning {
    let (part_type, reason) = match part {
        ContentPart::Other(raw) => {
            let part_type = raw.get("type").and_then(Value::as_str);
            let reason = match part_type {
                Some("output_text") => Some(decode_reason::<OutputText>(raw)),
                Some("refusal") => Some(decode_reason::<Refusal>(raw)),
                _ => None,
            };
            (part_type.map(str::to_owned), reason)
        }
        // Input parts are valid JSON but have no meaning in the model's own message.
        known => (
            serde_json::to_value(known)
                .ok()
                .and_then(|value| value.get("type").and_then(Value::as_str).map(str::to_owned)),
            None,
        ),
    };
    MappingWarning::UnmappedContentPart {
        item_id: message.id.clone(),
        part_type,
        reason,
    }
}

fn other_item_warning(item: &OutputItem, raw: &Value) -> MappingWarning {
    let item_id = item.id().map(str::to_owned);
    let Some(item_type) = item.type_name() else {
        return MappingWarning::UnknownItem {
            item_type: None,
            item_id,
        };
    };
    let reason = match item_type {
        "message" => Some(decode_reason::<OutputMessage>(raw)),
        "function_call" => Some(decode_reason::<FunctionCall>(raw)),
        "reasoning" => Some(decode_reason::<ReasoningItem>(raw)),
        "custom_tool_call" => Some(decode_reason::<CustomToolCall>(raw)),
        _ => None,
    };
    match reason {
        Some(reason) => MappingWarning::UnreadableItem {
            item_type: item_type.to_owned(),
            item_id,
            reason,
        },
        None if BUILT_IN_TOOL_ITEMS.contains(&item_type) || item_type.ends_with("_call") => {
            MappingWarning::UnmappedToolCall {
                item_type: item_type.to_owned(),
                item_id,
            }
        }
        None => MappingWarning::UnknownItem {
            item_type: Some(item_type.to_owned()),
            item_id,
        },
    }
}

/// Why `raw` does not decode as `T`: decoding it again is the only way to learn what
/// the lenient enum swallowed when it fell back to `Other`.
fn decode_reason<T: serde::de::DeserializeOwned>(raw: &Value) -> String {
    match T::deserialize(raw) {
        Err(error) => error.to_string(),
        // The item decodes on its own yet not inside the tagged enum: say so plainly.
        Ok(_) => "its shape does not match the wire type".to_owned(),
    }
}

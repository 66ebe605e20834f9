//! Output items: what a response's `output` holds.
//!
//! Reasoning items usually come first, so index 0 is not necessarily the message.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::ContentPart;
use super::input::{InputItem, InputMessage, MessageContent};
use super::open_enum::{ItemStatus, Role};
use super::serde_util::null_as_default;

/// One output item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutputItem {
    /// A message from the model: `output_text` and `refusal` parts.
    Message(OutputMessage),
    /// A call of a function tool.
    FunctionCall(FunctionCall),
    /// The model's reasoning (summaries, maybe encrypted content).
    Reasoning(ReasoningItem),
    /// A call of a custom (free-form input) tool.
    CustomToolCall(CustomToolCall),
    /// Anything else: hosted tool calls (`web_search_call`, `file_search_call`,
    /// `mcp_call`, ...), new item types, or a known type of unexpected shape. Kept as
    /// received so the caller can report it.
    #[serde(untagged)]
    Other(Value),
}

impl OutputItem {
    /// The item's `type` as sent, also for `Other` items (`None` when it had none).
    pub fn type_name(&self) -> Option<&str> {
        match self {
            OutputItem::Message(_) => Some("message"),
            OutputItem::FunctionCall(_) => Some("function_call"),
            OutputItem::Reasoning(_) => Some("reasoning"),
            OutputItem::CustomToolCall(_) => Some("custom_tool_call"),
            OutputItem::Other(raw) => raw.get("type").and_then(Value::as_str),
        }
    }

    /// The item's id (`msg_...`, `fc_...`, `rs_...`), when it has one.
    pub fn id(&self) -> Option<&str> {
        match self {
            OutputItem::Message(message) => message.id.as_deref(),
            OutputItem::FunctionCall(call) => call.id.as_deref(),
            OutputItem::Reasoning(reasoning) => reasoning.id.as_deref(),
            OutputItem::CustomToolCall(call) => call.id.as_deref(),
            OutputItem::Other(raw) => raw.get("id").and_then(Value::as_str),
        }
    }

    /// This item as an input item, for replaying history to a provider that keeps no
    /// state. Messages become assistant messages with their `output_text`/`refusal`
    /// parts; function calls, reasoning and custom tool calls are replayed as they are;
    /// unknown items are passed through raw.
    pub fn to_input_item(&self) -> InputItem {
        self.clone().into_input_item()
    }

    /// [`to_input_item`](Self::to_input_item), taking the item: its text moves rather
    /// than being copied.
    pub fn into_input_item(self) -> InputItem {
        match self {
            OutputItem::Message(message) => InputItem::Message(InputMessage {
                role: message.role,
                content: MessageContent::Parts(message.content),
                id: message.id,
                status: message.status,
            }),
            OutputItem::FunctionCall(call) => InputItem::FunctionCall(call),
            OutputItem::Reasoning(reasoning) => InputItem::Reasoning(reasoning),
            OutputItem::CustomToolCall(call) => match serde_json::to_value(&call) {
                Ok(Value::Object(mut map)) => {
                    map.insert("type".into(), Value::String("custom_tool_call".into()));
                    InputItem::Other(Value::Object(map))
                }
                _ => InputItem::Other(Value::Null),
            },
            OutputItem::Other(raw) => InputItem::Other(raw),
        }
    }
}

/// A `message` output item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputMessage {
    /// The item id (`msg_...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Always `assistant` from OpenAI; kept as sent.
    #[serde(default = "assistant")]
    pub role: Role,
    /// The item status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
    /// `output_text` and `refusal` parts, in order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub content: Vec<ContentPart>,
}

fn assistant() -> Role {
    Role::Assistant
}

/// A `function_call` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The item id (`fc_...`). Not what outputs reference: that is [`call_id`](Self::call_id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The call id (`call_...`) that the `function_call_output` must reference.
    pub call_id: String,
    /// The function's name.
    pub name: String,
    /// The arguments: a JSON document *as a string*, exactly as the model emitted it
    /// (it may be invalid JSON; Aptix passes it on untouched).
    #[serde(default, deserialize_with = "null_as_default")]
    pub arguments: String,
    /// The item status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
}

/// A `reasoning` item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningItem {
    /// The item id (`rs_...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Reasoning summary parts.
    #[serde(default, deserialize_with = "null_as_default")]
    pub summary: Vec<SummaryPart>,
    /// Reasoning text parts, when the provider exposes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Value>>,
    /// Opaque reasoning state for stateless replay (with `include`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
    /// The item status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
}

/// One part of a reasoning summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SummaryPart {
    /// Summary text.
    SummaryText {
        /// The text.
        text: String,
    },
    /// Anything else, kept as received.
    #[serde(untagged)]
    Other(Value),
}

/// A `custom_tool_call` item: a call of a tool that takes free-form text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomToolCall {
    /// The item id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The call id its output must reference.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The free-form input.
    #[serde(default, deserialize_with = "null_as_default")]
    pub input: String,
}

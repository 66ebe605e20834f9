//! Input items: what a request's `input` holds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::content::ContentPart;
use super::open_enum::{ItemStatus, Role};
use super::output::{FunctionCall, ReasoningItem};

/// A request's `input`: a plain string (one user message) or a list of items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Input {
    /// A single user message as text.
    Text(String),
    /// Messages, tool outputs and replayed output items, in order.
    Items(Vec<InputItem>),
}

impl Default for Input {
    fn default() -> Input {
        Input::Items(Vec::new())
    }
}

impl Input {
    /// The items, or none for the plain-text form.
    pub fn items(&self) -> &[InputItem] {
        match self {
            Input::Text(_) => &[],
            Input::Items(items) => items,
        }
    }
}

/// One input item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputItem {
    /// A message with a role.
    Message(InputMessage),
    /// A function call the model made earlier, replayed for a provider without stored
    /// state. Never resend one to a provider that has it (`Duplicate item found`).
    FunctionCall(FunctionCall),
    /// The result of a function call, referencing its `call_id`.
    FunctionCallOutput(FunctionCallOutput),
    /// A reasoning item, replayed (it must be followed by the item it preceded).
    Reasoning(ReasoningItem),
    /// A reference to an item stored by the provider.
    ItemReference {
        /// The stored item's id.
        id: String,
    },
    /// A message written without `"type":"message"` (the API's `EasyInputMessage`).
    #[serde(untagged)]
    EasyMessage(InputMessage),
    /// An item type this version does not know, kept as received.
    #[serde(untagged)]
    Other(Value),
}

/// A message: a role and its content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputMessage {
    /// Who wrote it.
    pub role: Role,
    /// A string or a list of parts.
    pub content: MessageContent,
    /// The item id, when replaying a stored message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The item status, when replaying a stored message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
}

impl InputMessage {
    /// A message whose content is the given parts.
    pub fn new(role: Role, parts: Vec<ContentPart>) -> InputMessage {
        InputMessage {
            role,
            content: MessageContent::Parts(parts),
            id: None,
            status: None,
        }
    }
}

/// A message's content: a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Typed parts.
    Parts(Vec<ContentPart>),
}

/// A `function_call_output` item: the result of the call with the same `call_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCallOutput {
    /// The `call_id` (`call_...`) of the `function_call` this answers, not its item id.
    pub call_id: String,
    /// The result, usually a string.
    pub output: FunctionOutput,
    /// The item id, when replaying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The item status, when replaying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ItemStatus>,
}

impl FunctionCallOutput {
    /// An output with a string result.
    pub fn text(call_id: impl Into<String>, output: impl Into<String>) -> FunctionCallOutput {
        FunctionCallOutput {
            call_id: call_id.into(),
            output: FunctionOutput::Text(output.into()),
            id: None,
            status: None,
        }
    }
}

/// A function result: a string (what Aptix sends) or content parts (newer API form).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FunctionOutput {
    /// A string.
    Text(String),
    /// Content parts.
    Parts(Vec<Value>),
}

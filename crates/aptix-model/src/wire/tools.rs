//! Tools and tool choice.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::open_enum::open_string_enum;

/// One tool definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Tool {
    /// A function tool, in the flat Responses shape (not nested under `function` as in
    /// Chat Completions, which the Responses API rejects).
    Function(FunctionTool),
    /// A hosted or newer tool (`web_search`, `file_search`, `mcp`, ...), or a function
    /// tool of unexpected shape, kept as given.
    #[serde(untagged)]
    Other(Value),
}

/// A function tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionTool {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Value>,
    /// Whether arguments must match the schema exactly. On the Responses API an omitted
    /// `strict` means `true`, so decoding reads a missing field as `true` and encoding
    /// always writes it.
    #[serde(default = "strict_by_default")]
    pub strict: bool,
}

fn strict_by_default() -> bool {
    true
}

/// `tool_choice`: a mode, a named function, or another form kept raw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `"auto"`, `"none"` or `"required"`.
    Mode(ToolChoiceMode),
    /// Force one tool: `{"type":"function","name":...}`.
    Named(NamedToolChoice),
    /// `allowed_tools`, hosted-tool choices and newer forms, kept as given.
    Other(Value),
}

impl ToolChoice {
    /// Forces the function tool `name`.
    pub fn function(name: impl Into<String>) -> ToolChoice {
        ToolChoice::Named(NamedToolChoice::Function { name: name.into() })
    }
}

open_string_enum! {
    /// How freely the model may call tools.
    pub enum ToolChoiceMode {
        /// The model decides.
        Auto = "auto",
        /// No tool calls.
        None = "none",
        /// At least one tool call.
        Required = "required",
    }
}

/// A tool choice that names one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NamedToolChoice {
    /// `{"type":"function","name":...}` (the seeds' `{"type":"tool"}` is rejected).
    Function {
        /// The function tool's name.
        name: String,
    },
}

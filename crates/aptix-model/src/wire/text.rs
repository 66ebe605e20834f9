//! The `text` request field: output format (plain, JSON schema, JSON object) and
//! verbosity. Structured output goes here, not in Chat Completions' `response_format`,
//! which the Responses API rejects.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `text` object of a request or response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextConfig {
    /// The output format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<TextFormat>,
    /// `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbosity: Option<String>,
    /// Fields this version does not know, kept for re-encoding.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `text.format`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TextFormat {
    /// Plain text (the default).
    Text,
    /// Output that conforms to a JSON Schema: the flat form with `name` and `schema`
    /// beside `type`.
    JsonSchema(JsonSchemaFormat),
    /// Any JSON object; the API requires the word "JSON" in an input message.
    JsonObject,
    /// Anything else, kept as given.
    #[serde(untagged)]
    Other(Value),
}

/// A `json_schema` text format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonSchemaFormat {
    /// A name for the schema (letters, digits, `_` and `-`, at most 64).
    pub name: String,
    /// The JSON Schema.
    pub schema: Value,
    /// What the output is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Strict schema adherence. Aptix's builders always set it; a decoded request may
    /// leave it unset (the API then echoes `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
}

//! The `POST /v1/responses` request body.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input::Input;
use super::text::TextConfig;
use super::tools::{Tool, ToolChoice};

/// The request body of `POST /v1/responses` (the API's `CreateResponse`).
///
/// Every optional field is omitted when unset: `temperature` in particular, which
/// reasoning models reject. Fields this version does not model are kept in
/// [`extra`](Self::extra), so a captured body decodes and re-encodes to the same JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CreateResponseRequest {
    /// The model id.
    pub model: String,
    /// Messages, tool outputs and replayed items.
    #[serde(default)]
    pub input: Input,
    /// System-level instructions. Not carried over by `previous_response_id`; Aptix uses
    /// a system message instead (AGN-003).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Continue from a stored response: its input and output items are carried over,
    /// its tools and `instructions` are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Tool>>,
    /// Which tool the model must or may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether several calls may come in one response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Sampling temperature; omit for reasoning models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Upper bound on generated tokens, reasoning included (at least 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Stream the reply as server-sent events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Store the response so that `previous_response_id` can refer to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<bool>,
    /// Up to 16 string pairs attached to the response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<BTreeMap<String, String>>,
    /// Reasoning effort and summaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningConfig>,
    /// Output format (plain, `json_schema`, `json_object`) and verbosity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<TextConfig>,
    /// Extra output to include, e.g. `reasoning.encrypted_content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    /// Every other field, kept as given.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `reasoning`: effort and summary settings for reasoning models.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasoningConfig {
    /// `none`, `minimal`, `low`, `medium`, `high`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// `auto`, `concise` or `detailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

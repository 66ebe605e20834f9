//! The Chat Completions shapes the bridge writes and reads: the request body it sends,
//! the `chat.completion` reply and the `chat.completion.chunk` stream items.
//!
//! Private to the bridge: callers only ever see Responses shapes. Replies decode
//! leniently (missing fields default, unknown fields are ignored, counts may be
//! `null`), as the servers that speak this API vary widely.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// `POST /v1/chat/completions` body.
#[derive(Debug, Clone, Default, Serialize)]
pub(crate) struct ChatRequest {
    pub(crate) model: String,
    pub(crate) messages: Vec<ChatMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tools: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_completion_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_format: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reasoning_effort: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) verbosity: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<Value>,
    /// Request fields both APIs share (`user`, `service_tier`, ...), copied as given.
    #[serde(flatten)]
    pub(crate) shared: BTreeMap<String, Value>,
}

/// One message of a chat request.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct ChatMessage {
    pub(crate) role: String,
    /// A string, a list of parts, or `null` (an assistant turn with only tool calls).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) content: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) refusal: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_calls: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_call_id: Option<String>,
}

/// A `chat.completion` reply.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChatCompletion {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) created: Option<serde_json::Number>,
    #[serde(default)]
    pub(crate) model: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) choices: Vec<ChatChoice>,
    #[serde(default)]
    pub(crate) usage: Option<Value>,
}

/// One choice of a reply.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChatChoice {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) index: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) message: ChatReplyMessage,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// The assistant message of a choice.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChatReplyMessage {
    /// A string, or (some servers) a list of text parts.
    #[serde(default)]
    pub(crate) content: Option<Value>,
    #[serde(default)]
    pub(crate) refusal: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) tool_calls: Vec<ChatToolCall>,
}

/// A tool call of a reply message.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChatToolCall {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) function: ChatFunction,
}

/// The function of a tool call; in chunks every field may be a fragment or absent.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChatFunction {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) arguments: String,
}

/// A `chat.completion.chunk`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChatChunk {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) id: String,
    #[serde(default)]
    pub(crate) created: Option<serde_json::Number>,
    #[serde(default)]
    pub(crate) model: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub(crate) usage: Option<Value>,
    /// Some servers report a failure mid-stream as a chunk with an `error` object.
    #[serde(default)]
    pub(crate) error: Option<Value>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChunkChoice {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) index: u64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) delta: ChunkDelta,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// What a chunk adds to the message.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChunkDelta {
    #[serde(default)]
    pub(crate) content: Option<String>,
    #[serde(default)]
    pub(crate) refusal: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) tool_calls: Vec<ChunkToolCall>,
}

/// A fragment of a tool call: `index` says which call it continues.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct ChunkToolCall {
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) index: u64,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) function: ChatFunction,
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

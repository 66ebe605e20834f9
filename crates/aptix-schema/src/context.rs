//! The Request's input: [`SchemaRequest`] (configuration, context, schema, tools), its
//! [`Message`]s and their [`Content`], which is text, content parts, or a
//! [`CustomContent`] that a registered handler turns into what the model sees.
//!
//! Everything here decodes from JSON shaped like the seed's examples:
//!
//! ```json
//! {"config": {"model": "gpt-4o-mini"},
//!  "context": [
//!    {"role": "system", "content": "You are a helpful assistant."},
//!    {"role": "user", "content": {"type": "state", "state": {"step": 2}}},
//!    {"role": "user", "content": "What is the capital of France?"}],
//!  "schema": {"type": "object", "properties": {"capital": {"type": "string"}}}}
//! ```

use std::collections::BTreeMap;

use aptix_model::wire::{ContentPart, FunctionTool, Role};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The schema name used when a request does not give one.
pub(crate) const DEFAULT_SCHEMA_NAME: &str = "response";

/// One schema-constrained Request: `context` + `schema` -> solution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaRequest {
    /// Model settings; content handlers may change them.
    #[serde(default)]
    pub config: LlmConfig,
    /// The messages, in order; custom content types run through their handlers.
    pub context: Vec<Message>,
    /// The JSON Schema the solution must satisfy; content handlers may change it.
    pub schema: Value,
    /// The schema's name on the wire (`text.format.name`), 1 to 64 of `a-zA-Z0-9_-`.
    #[serde(default = "default_schema_name")]
    pub name: String,
    /// What the solution is for, shown to the model with the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Ordinary function tools the model may call besides answering. A reply that calls
    /// one instead of answering ends the Request (the caller runs the tool).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<FunctionTool>,
}

fn default_schema_name() -> String {
    DEFAULT_SCHEMA_NAME.to_owned()
}

impl SchemaRequest {
    /// A request for `model` whose solution must satisfy `schema`, with no messages yet.
    pub fn new(model: impl Into<String>, schema: Value) -> SchemaRequest {
        SchemaRequest {
            config: LlmConfig {
                model: model.into(),
                ..LlmConfig::default()
            },
            context: Vec::new(),
            schema,
            name: default_schema_name(),
            description: None,
            tools: Vec::new(),
        }
    }

    /// Appends a message.
    #[must_use]
    pub fn message(mut self, role: Role, content: impl Into<Content>) -> SchemaRequest {
        self.context.push(Message {
            role,
            content: content.into(),
        });
        self
    }

    /// Appends a system message.
    #[must_use]
    pub fn system(self, text: impl Into<String>) -> SchemaRequest {
        self.message(Role::System, Content::Text(text.into()))
    }

    /// Appends a user message.
    #[must_use]
    pub fn user(self, text: impl Into<String>) -> SchemaRequest {
        self.message(Role::User, Content::Text(text.into()))
    }

    /// Sets the schema's wire name.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> SchemaRequest {
        self.name = name.into();
        self
    }

    /// Sets what the solution is for.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> SchemaRequest {
        self.description = Some(description.into());
        self
    }

    /// Adds ordinary function tools.
    #[must_use]
    pub fn tools(mut self, tools: impl IntoIterator<Item = FunctionTool>) -> SchemaRequest {
        self.tools.extend(tools);
        self
    }
}

/// The LLM configuration of a Request. Content handlers may change any of it; the
/// last change wins.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LlmConfig {
    /// The model id.
    #[serde(default)]
    pub model: String,
    /// Sampling temperature in `0..=2`; omitted when unset (reasoning models reject it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling in `0..=1`; omitted when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Upper bound on generated tokens, reasoning included (at least 16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
    /// Reasoning effort (`minimal`, `low`, `medium`, `high`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// Other request fields, sent as given (`service_tier`, `prompt_cache_key`, ...).
    /// A key the Request sets itself (`model`, `input`, `text`, `tools`, ...) is an
    /// error.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, Value>,
}

/// One message of the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub content: Content,
}

impl Message {
    /// A message with plain text.
    pub fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            content: Content::Text(text.into()),
        }
    }

    /// A message with custom content.
    pub fn custom(role: Role, content: CustomContent) -> Message {
        Message {
            role,
            content: Content::Custom(content),
        }
    }
}

/// A message's content.
///
/// In JSON: a string is [`Text`](Content::Text); an array is
/// [`Parts`](Content::Parts) (wire content parts; the seeds' `{"type":"text"}` part is
/// read as `input_text`, which is what the API accepts); an object with a string
/// `type` is [`Custom`](Content::Custom). Anything else does not decode.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Wire content parts, sent as given.
    Parts(Vec<ContentPart>),
    /// A custom content type, for a registered handler.
    Custom(CustomContent),
}

impl From<String> for Content {
    fn from(text: String) -> Content {
        Content::Text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Content {
        Content::Text(text.to_owned())
    }
}

impl From<CustomContent> for Content {
    fn from(content: CustomContent) -> Content {
        Content::Custom(content)
    }
}

impl Serialize for Content {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Content::Text(text) => serializer.serialize_str(text),
            Content::Parts(parts) => parts.serialize(serializer),
            Content::Custom(custom) => custom.to_value().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Content, D::Error> {
        use serde::de::Error;
        match Value::deserialize(deserializer)? {
            Value::String(text) => Ok(Content::Text(text)),
            Value::Array(parts) => parts
                .into_iter()
                .map(read_part)
                .collect::<Result<Vec<_>, _>>()
                .map(Content::Parts)
                .map_err(D::Error::custom),
            Value::Object(object) => CustomContent::from_object(object)
                .map(Content::Custom)
                .ok_or_else(|| D::Error::custom("custom content needs a string \"type\"")),
            _ => Err(D::Error::custom(
                "content must be a string, a list of parts or an object with a string \"type\"",
            )),
        }
    }
}

/// One wire content part; the seeds' `{"type":"text","text":...}` becomes `input_text`.
fn read_part(part: Value) -> Result<ContentPart, serde_json::Error> {
    if part.get("type").and_then(Value::as_str) == Some("text")
        && let Some(text) = part.get("text").and_then(Value::as_str)
    {
        return Ok(ContentPart::input_text(text));
    }
    serde_json::from_value(part)
}

/// A custom content type: `{"type": "<name>", ...fields}`.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomContent {
    /// The `type`: which handler processes it.
    pub content_type: String,
    /// Every other field, as given.
    pub fields: Map<String, Value>,
}

impl CustomContent {
    /// Custom content of `content_type` with no fields yet.
    pub fn new(content_type: impl Into<String>) -> CustomContent {
        CustomContent {
            content_type: content_type.into(),
            fields: Map::new(),
        }
    }

    /// Adds a field.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, value: Value) -> CustomContent {
        self.fields.insert(name.into(), value);
        self
    }

    /// Reads `{"type": ..., ...}`; `None` when `type` is missing or not a string.
    pub fn from_object(mut object: Map<String, Value>) -> Option<CustomContent> {
        match object.remove("type") {
            Some(Value::String(content_type)) => Some(CustomContent {
                content_type,
                fields: object,
            }),
            _ => None,
        }
    }

    /// The content as JSON, `type` included.
    pub fn to_value(&self) -> Value {
        let mut object = Map::with_capacity(self.fields.len() + 1);
        object.insert("type".to_owned(), Value::String(self.content_type.clone()));
        object.extend(self.fields.clone());
        Value::Object(object)
    }

    /// A field, when present.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }

    /// A field decoded as `T`; `Ok(None)` when absent or `null`, `Err` with a sentence
    /// naming the field when it does not decode.
    pub fn field<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, String> {
        match self.fields.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::deserialize(value)
                .map(Some)
                .map_err(|error| format!("field {name:?} is invalid: {error}")),
        }
    }

    /// A field that must be present, decoded as `T`.
    pub fn required_field<T: DeserializeOwned>(&self, name: &str) -> Result<T, String> {
        self.field(name)?
            .ok_or_else(|| format!("field {name:?} is missing"))
    }
}

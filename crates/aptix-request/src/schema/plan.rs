//! [`Prepared`]: a processed Request shaped by its [`Strategy`] into the exact
//! `/v1/responses` body, with the validator its answers are judged by.
//!
//! The body is assembled here rather than through [`RequestBuilder`](crate::RequestBuilder):
//! a schema Request's context is a list of messages with roles, not AGN-003's
//! mode + instruction + `[CONTEXT]` shape, and it is always self-contained (no
//! `previous_response_id`), so none of the builder's turn logic applies. What the two
//! share (name rules, tool checks) is reused.

use std::collections::BTreeMap;

use aptix_model::wire::{
    ContentPart, CreateResponseRequest, FunctionTool, Input, InputItem, InputMessage,
    JsonSchemaFormat, MessageContent, ReasoningConfig, Role, TextConfig, TextFormat, Tool,
    ToolChoice, ToolChoiceMode,
};
use serde_json::{Value, json};

use super::context::{LlmConfig, SchemaRequest};
use super::error::SchemaError;
use super::handler::{HandlerRegistry, Processed, process};
use super::strategy::{GENERATE_RESPONSE, SchemaSupport, Strategy};
use super::strict::{RemovedKeyword, normalize_strict};
use crate::assemble::MIN_MAX_OUTPUT_TOKENS;
use crate::tools::{check_function_tools, is_valid_name};

/// Request fields the schema Request sets itself, which an extra option may not name.
pub const RESERVED_OPTIONS: &[&str] = &[
    "model",
    "input",
    "text",
    "tools",
    "tool_choice",
    "temperature",
    "top_p",
    "max_output_tokens",
    "reasoning",
    "previous_response_id",
    "stream",
];

/// What the `generate_response` tool says about itself when the request gives no
/// description.
pub const GENERATE_RESPONSE_DESCRIPTION: &str =
    "Gives the final answer. The arguments are the answer, shaped by the parameters schema.";

/// A Request ready to send: the body of its first attempt, its strategy, and what its
/// answers are validated against.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub(crate) body: CreateResponseRequest,
    pub(crate) strategy: Strategy,
    pub(crate) validation_schema: Value,
    pub(crate) validator: jsonschema::Validator,
    pub(crate) removed: Vec<RemovedKeyword>,
}

/// Runs the handlers, picks the strategy (the `forced` one, or the best that `support`
/// allows) and assembles the first attempt's body.
///
/// # Errors
///
/// Any [`SchemaError`]: from the handlers, the strategy choice, the configuration, the
/// tools, the strict normaliser or the schema validator.
pub fn prepare(
    request: SchemaRequest,
    registry: &HandlerRegistry,
    support: &SchemaSupport,
    forced: Option<Strategy>,
) -> Result<Prepared, SchemaError> {
    let processed = process(request, registry)?;
    let strategy = match forced {
        Some(strategy) => strategy,
        None => support.choose(processed.tools.len())?,
    };
    Prepared::new(processed, strategy, support.strict_tools)
}

impl Prepared {
    /// Shapes a processed Request by `strategy`. `strict_tools` says whether the
    /// `generate_response` tool may be strict (its schema is then normalised).
    ///
    /// # Errors
    ///
    /// A [`SchemaError`] naming the configuration value, tool, or schema location at
    /// fault.
    pub fn new(
        processed: Processed,
        strategy: Strategy,
        strict_tools: bool,
    ) -> Result<Prepared, SchemaError> {
        check_config(&processed.config)?;
        if !is_valid_name(&processed.name) {
            return Err(SchemaError::InvalidSchemaName {
                name: processed.name.clone(),
            });
        }
        check_tools(&processed.tools)?;
        if !processed.schema.is_object() {
            return Err(SchemaError::InvalidSchema {
                reason: "the schema must be a JSON object".to_owned(),
            });
        }
        let strict = match strategy {
            Strategy::NativeSchema => true,
            Strategy::ToolCall => strict_tools,
            Strategy::JsonObject | Strategy::PromptOnly => false,
        };
        let (wire_schema, validation_schema, removed) = if strict {
            let normalised = normalize_strict(&processed.schema)?;
            (normalised.wire, normalised.validation, normalised.removed)
        } else {
            if matches!(strategy, Strategy::ToolCall | Strategy::JsonObject)
                && !root_is_object(&processed.schema)
            {
                return Err(SchemaError::InvalidSchema {
                    reason: format!(
                        "the {} strategy returns a JSON object, so the schema's root must be an object schema",
                        strategy.as_str()
                    ),
                });
            }
            (
                processed.schema.clone(),
                processed.schema.clone(),
                Vec::new(),
            )
        };
        let validator = jsonschema::validator_for(&validation_schema).map_err(|error| {
            SchemaError::InvalidSchema {
                reason: error.to_string(),
            }
        })?;
        let body = assemble(processed, strategy, strict, wire_schema);
        Ok(Prepared {
            body,
            strategy,
            validation_schema,
            validator,
            removed,
        })
    }

    /// The body of the next attempt (the first, or after [`reask`](Self::reask)).
    pub fn body(&self) -> &CreateResponseRequest {
        &self.body
    }

    /// The strategy in use.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// The schema answers are validated against: the normalised schema with every
    /// keyword the wire schema lost kept, or the schema as given for strategies that do
    /// not normalise.
    pub fn validation_schema(&self) -> &Value {
        &self.validation_schema
    }

    /// Keywords the strict normaliser removed from the wire schema (still validated).
    pub fn removed_keywords(&self) -> &[RemovedKeyword] {
        &self.removed
    }
}

fn check_config(config: &LlmConfig) -> Result<(), SchemaError> {
    if config.model.trim().is_empty() {
        return Err(SchemaError::BlankModel);
    }
    if let Some(value) = config.temperature
        && !(0.0..=2.0).contains(&value)
    {
        return Err(SchemaError::InvalidTemperature { value });
    }
    if let Some(value) = config.top_p
        && !(0.0..=1.0).contains(&value)
    {
        return Err(SchemaError::InvalidTopP { value });
    }
    if let Some(value) = config.max_output_tokens
        && value < MIN_MAX_OUTPUT_TOKENS
    {
        return Err(SchemaError::MaxOutputTokensTooSmall {
            value,
            minimum: MIN_MAX_OUTPUT_TOKENS,
        });
    }
    if let Some(key) = config
        .options
        .keys()
        .find(|key| RESERVED_OPTIONS.contains(&key.as_str()))
    {
        return Err(SchemaError::ReservedOption { key: key.clone() });
    }
    Ok(())
}

fn check_tools(tools: &[FunctionTool]) -> Result<(), SchemaError> {
    check_function_tools(tools.iter().enumerate()).map_err(|error| {
        let index = match &error {
            crate::RequestError::InvalidTool { index, .. }
            | crate::RequestError::DuplicateToolName { index, .. } => *index,
            _ => 0,
        };
        SchemaError::InvalidTool {
            index,
            reason: error.to_string(),
        }
    })?;
    match tools.iter().position(|tool| tool.name == GENERATE_RESPONSE) {
        Some(index) => Err(SchemaError::InvalidTool {
            index,
            reason: format!("the name {GENERATE_RESPONSE:?} is reserved for the answer tool"),
        }),
        None => Ok(()),
    }
}

/// Whether the root of a schema describes objects: `"type": "object"` (alone or in a
/// list), or no `type` but `properties`.
fn root_is_object(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        Some(_) => false,
        None => schema.get("properties").is_some(),
    }
}

/// The first attempt's body.
fn assemble(
    processed: Processed,
    strategy: Strategy,
    strict: bool,
    wire_schema: Value,
) -> CreateResponseRequest {
    let Processed {
        config,
        name,
        description,
        mut messages,
        tools,
        schema: _,
    } = processed;
    let has_tools = !tools.is_empty();
    let mut tools: Vec<Tool> = tools.into_iter().map(with_parameters).collect();
    let mut text = None;
    let mut tool_choice = None;
    match strategy {
        Strategy::NativeSchema => {
            text = Some(TextFormat::JsonSchema(JsonSchemaFormat {
                name,
                schema: wire_schema,
                description,
                strict: Some(true),
            }));
        }
        Strategy::ToolCall => {
            inject_system_text(&mut messages, tool_instruction(has_tools));
            tools.push(Tool::Function(FunctionTool {
                name: GENERATE_RESPONSE.to_owned(),
                description: Some(
                    description.unwrap_or_else(|| GENERATE_RESPONSE_DESCRIPTION.to_owned()),
                ),
                parameters: Some(wire_schema),
                strict,
            }));
            // With ordinary tools beside it, forcing `generate_response` would make
            // them dead weight: `required` lets the model call one of them first.
            tool_choice = Some(if has_tools {
                ToolChoice::Mode(ToolChoiceMode::Required)
            } else {
                ToolChoice::function(GENERATE_RESPONSE)
            });
        }
        Strategy::JsonObject | Strategy::PromptOnly => {
            inject_system_text(
                &mut messages,
                schema_instruction(&wire_schema, description.as_deref()),
            );
            if strategy == Strategy::JsonObject {
                text = Some(TextFormat::JsonObject);
            }
        }
    }
    CreateResponseRequest {
        model: config.model,
        input: Input::Items(messages.into_iter().map(InputItem::Message).collect()),
        tools: (!tools.is_empty()).then_some(tools),
        tool_choice,
        temperature: config.temperature,
        top_p: config.top_p,
        max_output_tokens: config.max_output_tokens,
        reasoning: config.reasoning_effort.map(|effort| ReasoningConfig {
            effort: Some(effort),
            summary: None,
        }),
        text: text.map(|format| TextConfig {
            format: Some(format),
            verbosity: None,
            extra: BTreeMap::new(),
        }),
        extra: config.options,
        ..CreateResponseRequest::default()
    }
}

/// A function tool with `parameters` always present: the API requires the field, and
/// "no arguments" is what a tool without one means.
fn with_parameters(mut tool: FunctionTool) -> Tool {
    if tool.parameters.is_none() {
        tool.parameters = Some(json!({
            "type": "object",
            "properties": {},
            "additionalProperties": false
        }));
    }
    Tool::Function(tool)
}

/// The system text of the JSON-mode strategies: the schema as a string, and the word
/// "JSON", which `json_object` requires in an input message.
pub(crate) fn schema_instruction(schema: &Value, description: Option<&str>) -> String {
    let mut text = String::from(
        "Answer with a single JSON value that conforms to the JSON Schema below. \
         Reply with the JSON only: no explanations and no code fences.",
    );
    if let Some(description) = description.filter(|text| !text.trim().is_empty()) {
        text.push_str("\n\nThe answer is: ");
        text.push_str(description);
    }
    text.push_str("\n\nJSON Schema:\n");
    text.push_str(&schema.to_string());
    text
}

/// The system text of the tool strategy.
pub(crate) fn tool_instruction(has_tools: bool) -> String {
    let mut text = format!(
        "Give your final answer by calling the {GENERATE_RESPONSE} function exactly once. \
         Its arguments are the answer and must conform to its parameters schema. \
         Do not answer in plain text."
    );
    if has_tools {
        text.push_str(" You may call the other tools first when you need what they return.");
    }
    text
}

/// Adds `text` to the system prompt: as one more part of the first message when that
/// is a system or developer message (the caller's own prompt stays byte for byte as it
/// was), or as a new system message in front.
fn inject_system_text(messages: &mut Vec<InputMessage>, text: String) {
    let part = ContentPart::input_text(text);
    match messages.first_mut() {
        Some(first) if matches!(first.role, Role::System | Role::Developer) => {
            match &mut first.content {
                MessageContent::Parts(parts) => parts.push(part),
                MessageContent::Text(existing) => {
                    let existing = ContentPart::input_text(std::mem::take(existing));
                    first.content = MessageContent::Parts(vec![existing, part]);
                }
            }
        }
        _ => messages.insert(0, InputMessage::new(Role::System, vec![part])),
    }
}

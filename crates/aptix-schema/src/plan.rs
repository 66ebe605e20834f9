//! [`Prepared`]: a processed Request shaped by its [`Strategy`] into the exact
//! `/v1/responses` body, with the validator its answers are judged by.
//!
//! The body is built with `aptix_request`'s [`RequestBuilder`]: the context, already a
//! list of messages with roles, goes in as [`messages`](RequestBuilder::messages) in
//! place of AGN-003's mode + instruction shape, and it is always self-contained (no
//! `previous_response_id`). So the builder's rules (model settings, tool names and
//! parameters, the forced tool) are the rules here too, with no second copy.

use aptix_model::wire::{
    ContentPart, CreateResponseRequest, FunctionTool, InputMessage, JsonSchemaFormat,
    MessageContent, Role, TextFormat,
};
use aptix_request::{
    ModelParams, RequestBuilder, RequestError, check_model_settings, is_valid_name,
};
use serde_json::Value;

use crate::context::{LlmConfig, SchemaRequest};
use crate::error::SchemaError;
use crate::handler::{HandlerRegistry, Processed, process};
use crate::strategy::{GENERATE_RESPONSE, SchemaSupport, Strategy};
use crate::strict::{RemovedKeyword, normalize_strict};

/// Request fields the schema Request sets itself, which an extra option may not name.
pub(crate) const RESERVED_OPTIONS: &[&str] = &[
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
pub(crate) const GENERATE_RESPONSE_DESCRIPTION: &str =
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
/// allows) and assembles the first attempt's body. A schema strict mode cannot express
/// (a map, `not`, ...) with no strategy forced is asked for without strict mode (the
/// `generate_response` tool not strict, else JSON mode, else the prompt) and its
/// answers still validated against the whole schema.
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
    let strict = match strategy {
        Strategy::NativeSchema => true,
        Strategy::ToolCall => support.strict_tools,
        Strategy::JsonObject | Strategy::PromptOnly => false,
    };
    if forced.is_some() || !strict {
        return Prepared::new(processed, strategy, support.strict_tools);
    }
    match Prepared::new(processed.clone(), strategy, support.strict_tools) {
        // A schema strict mode cannot express (a map, `not`, a long `allOf`) is asked
        // for without strict mode, as a caller who chose no strategy would ask next:
        // the answer is still validated against the whole schema, and re-asked.
        Err(SchemaError::NotStrict { pointer, reason }) => {
            let (fallback, strict_tools) = if support.function_tools {
                (Strategy::ToolCall, false)
            } else if support.json_object {
                (Strategy::JsonObject, false)
            } else {
                (Strategy::PromptOnly, false)
            };
            tracing::warn!(
                at = %pointer,
                %reason,
                strategy = fallback.as_str(),
                "the schema cannot be made strict; asking without strict mode (the answer is still validated against the whole schema)"
            );
            Prepared::new(processed, fallback, strict_tools)
        }
        prepared => prepared,
    }
}

impl Prepared {
    /// Shapes a processed Request by `strategy`. `strict_tools` says whether the
    /// `generate_response` tool may be strict (its schema is then normalised).
    ///
    /// # Errors
    ///
    /// A [`SchemaError`] naming the configuration value, tool, or schema location at
    /// fault.
    pub(crate) fn new(
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
        // Formats are checked (`uri`, `email`, ...): strict mode drops the ones it does
        // not know from what is sent, and the answer is still held to them here. A
        // schema the validator refuses is named where it is wrong.
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(&validation_schema)
            .map_err(|error| {
                let at = error.instance_path().to_string();
                SchemaError::InvalidSchema {
                    reason: if at.is_empty() {
                        error.to_string()
                    } else {
                        format!("at {at}: {error}")
                    },
                }
            })?;
        let body = assemble(processed, strategy, strict, wire_schema)?;
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

/// The model settings by the rule every request follows, then the extra options.
fn check_config(config: &LlmConfig) -> Result<(), SchemaError> {
    check_model_settings(&ModelParams {
        model: Some(&config.model),
        temperature: config.temperature,
        top_p: config.top_p,
        max_output_tokens: config.max_output_tokens,
        reasoning_effort: config
            .reasoning_effort
            .as_deref()
            .filter(|effort| !effort.trim().is_empty()),
    })?;
    if let Some(key) = config
        .options
        .keys()
        .find(|key| RESERVED_OPTIONS.contains(&key.as_str()))
    {
        return Err(SchemaError::ReservedOption { key: key.clone() });
    }
    Ok(())
}

/// The one tool rule of its own: `generate_response` is the answer tool's name. The
/// builder checks everything else about tools when the body is built.
fn check_tools(tools: &[FunctionTool]) -> Result<(), SchemaError> {
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

/// The first attempt's body, built by the request builder.
fn assemble(
    processed: Processed,
    strategy: Strategy,
    strict: bool,
    wire_schema: Value,
) -> Result<CreateResponseRequest, SchemaError> {
    let Processed {
        config,
        name,
        description,
        mut messages,
        tools,
        schema: _,
    } = processed;
    let has_tools = !tools.is_empty();
    let mut builder = RequestBuilder::new(config.model)
        .tools(tools)
        .temperature(config.temperature)
        .top_p(config.top_p)
        .max_output_tokens(config.max_output_tokens)
        .reasoning_effort(config.reasoning_effort.unwrap_or_default())
        .extra_fields(config.options);
    match strategy {
        Strategy::NativeSchema => {
            builder = builder.text_format(TextFormat::JsonSchema(JsonSchemaFormat {
                name,
                schema: wire_schema,
                description,
                strict: Some(true),
            }));
        }
        Strategy::ToolCall => {
            inject_system_text(&mut messages, tool_instruction(has_tools));
            builder = builder.tools([FunctionTool {
                name: GENERATE_RESPONSE.to_owned(),
                description: Some(
                    description.unwrap_or_else(|| GENERATE_RESPONSE_DESCRIPTION.to_owned()),
                ),
                parameters: Some(wire_schema),
                strict,
            }]);
            // With ordinary tools beside it, forcing `generate_response` would make
            // them dead weight: `required` lets the model call one of them first.
            builder = if has_tools {
                builder.require_tool_call(true)
            } else {
                builder.force_tool(GENERATE_RESPONSE)
            };
        }
        Strategy::JsonObject | Strategy::PromptOnly => {
            inject_system_text(
                &mut messages,
                schema_instruction(&wire_schema, description.as_deref()),
            );
            if strategy == Strategy::JsonObject {
                builder = builder.text_format(TextFormat::JsonObject);
            }
        }
    }
    builder.messages(messages).build().map_err(builder_error)
}

/// A builder error as this crate reports it: tool problems name the tool's index, as
/// the Request's own tool checks do.
fn builder_error(error: RequestError) -> SchemaError {
    let index = match &error {
        RequestError::InvalidTool { index, .. } | RequestError::DuplicateToolName { index, .. } => {
            Some(*index)
        }
        _ => None,
    };
    match index {
        Some(index) => SchemaError::InvalidTool {
            index,
            reason: error.to_string(),
        },
        None => SchemaError::Request(error),
    }
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
    text.push_str(&aptix_model::canonical::sorted(schema).to_string());
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

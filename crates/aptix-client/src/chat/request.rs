//! A Responses request translated into a Chat Completions request.
//!
//! Everything the Responses request says that Chat Completions can carry is carried;
//! what it cannot carry and would change the answer (`previous_response_id`, stored
//! item references, hosted tools, unknown item or part types) is a
//! [`ClientError::Unsupported`] before anything is sent, never silently dropped.
//! Bookkeeping fields that do not change the answer (`store`, `metadata`, `include`,
//! `reasoning.summary`, Responses-only extras such as `truncation`) are left out, and
//! replayed `reasoning` items are omitted: they are OpenAI's internal state, which no
//! Chat Completions server can take back.

use std::collections::BTreeMap;

use aptix_model::wire::{
    ContentPart, CreateResponseRequest, FunctionCall, FunctionCallOutput, FunctionOutput, Input,
    InputItem, InputMessage, MessageContent, NamedToolChoice, Role, TextFormat, Tool, ToolChoice,
};
use serde_json::{Map, Value, json};

use super::wire::{ChatMessage, ChatRequest};
use super::{BRIDGE, ChatOptions, MaxTokensField};
use crate::error::ClientError;

/// Request fields both APIs define the same way, copied from the request's extras.
const SHARED_FIELDS: &[&str] = &[
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "service_tier",
];

/// Separator between the text parts of one message when they are joined into the
/// single string every Chat Completions server accepts (the seeds' "one blank line").
const PART_SEPARATOR: &str = "\n\n";

/// Translates a Responses request into the Chat Completions request body.
/// `stream` decides streaming (with `stream_options.include_usage`, so the final
/// response carries usage); the request's own `stream` field is ignored.
pub fn to_chat_request(
    request: &CreateResponseRequest,
    options: &ChatOptions,
    stream: bool,
) -> Result<Value, ClientError> {
    let chat = build(request, options, stream)?;
    serde_json::to_value(&chat)
        .map_err(|error| ClientError::decode("chat request", &[], 0, error.to_string()))
}

pub(crate) fn build(
    request: &CreateResponseRequest,
    options: &ChatOptions,
    stream: bool,
) -> Result<ChatRequest, ClientError> {
    if request.previous_response_id.is_some() {
        return Err(unsupported(
            "previous_response_id (replay the conversation in input instead)",
        ));
    }
    let tools = match &request.tools {
        Some(tools) if !tools.is_empty() => Some(
            tools
                .iter()
                .map(translate_tool)
                .collect::<Result<Vec<_>, _>>()?,
        ),
        _ => None,
    };
    let (max_completion_tokens, max_tokens) = match options.max_tokens_field {
        MaxTokensField::MaxCompletionTokens => (request.max_output_tokens, None),
        MaxTokensField::MaxTokens => (None, request.max_output_tokens),
    };
    let (response_format, verbosity) = match &request.text {
        Some(text) => (
            text.format
                .as_ref()
                .map(translate_format)
                .transpose()?
                .flatten(),
            text.verbosity.clone(),
        ),
        None => (None, None),
    };
    let shared: BTreeMap<String, Value> = request
        .extra
        .iter()
        .filter(|(name, _)| SHARED_FIELDS.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    Ok(ChatRequest {
        model: request.model.clone(),
        messages: messages(request)?,
        // Chat Completions rejects `parallel_tool_calls` without tools.
        parallel_tool_calls: tools.as_ref().and(request.parallel_tool_calls),
        tool_choice: request
            .tool_choice
            .as_ref()
            .map(translate_tool_choice)
            .transpose()?,
        tools,
        temperature: request.temperature,
        top_p: request.top_p,
        max_completion_tokens,
        max_tokens,
        response_format,
        reasoning_effort: request
            .reasoning
            .as_ref()
            .and_then(|reasoning| reasoning.effort.clone()),
        verbosity,
        stream: stream.then_some(true),
        stream_options: stream.then(|| json!({ "include_usage": true })),
        shared,
    })
}

fn unsupported(feature: impl Into<String>) -> ClientError {
    ClientError::Unsupported {
        provider: BRIDGE,
        feature: feature.into(),
    }
}

fn messages(request: &CreateResponseRequest) -> Result<Vec<ChatMessage>, ClientError> {
    let mut out = Vec::new();
    if let Some(instructions) = &request.instructions {
        out.push(ChatMessage {
            role: "system".into(),
            content: Some(Value::String(instructions.clone())),
            ..ChatMessage::default()
        });
    }
    match &request.input {
        Input::Text(text) => out.push(ChatMessage {
            role: "user".into(),
            content: Some(Value::String(text.clone())),
            ..ChatMessage::default()
        }),
        Input::Items(items) => {
            for item in items {
                match item {
                    InputItem::Message(message) | InputItem::EasyMessage(message) => {
                        out.push(translate_message(message)?);
                    }
                    InputItem::FunctionCall(call) => push_tool_call(&mut out, call),
                    InputItem::FunctionCallOutput(output) => out.push(tool_message(output)?),
                    // OpenAI's private reasoning state: no chat server can use it, and
                    // leaving it out changes only what is cached, not the answer.
                    InputItem::Reasoning(_) => {}
                    InputItem::ItemReference { .. } => {
                        return Err(unsupported("item_reference input items (stored items)"));
                    }
                    InputItem::Other(raw) => {
                        let kind = raw.get("type").and_then(Value::as_str).unwrap_or("untyped");
                        return Err(unsupported(format!("input items of type {kind}")));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Chat roles: `developer` becomes `system`, which OpenAI treats the same for the
/// models that know `developer` and which every other server understands.
fn chat_role(role: &Role) -> String {
    match role {
        Role::System | Role::Developer => "system".into(),
        Role::User => "user".into(),
        Role::Assistant => "assistant".into(),
        Role::Other(other) => other.clone(),
    }
}

fn translate_message(message: &InputMessage) -> Result<ChatMessage, ClientError> {
    let role = chat_role(&message.role);
    let parts = match &message.content {
        MessageContent::Text(text) => {
            return Ok(ChatMessage {
                role,
                content: Some(Value::String(text.clone())),
                ..ChatMessage::default()
            });
        }
        MessageContent::Parts(parts) => parts,
    };
    let mut texts = Vec::new();
    let mut rich = Vec::new();
    let mut refusals = Vec::new();
    for part in parts {
        match part {
            ContentPart::InputText { text } => texts.push(text.clone()),
            ContentPart::OutputText(output) => texts.push(output.text.clone()),
            ContentPart::Refusal(refusal) => refusals.push(refusal.refusal.clone()),
            ContentPart::InputImage(image) => {
                let url = image
                    .image_url
                    .clone()
                    .ok_or_else(|| unsupported("input_image parts given by file_id"))?;
                let mut image_url = Map::new();
                image_url.insert("url".into(), Value::String(url));
                insert_some(
                    &mut image_url,
                    "detail",
                    image.detail.clone().map(Value::String),
                );
                rich.push((
                    texts.len(),
                    json!({ "type": "image_url", "image_url": image_url }),
                ));
            }
            ContentPart::InputFile(file) => {
                let file = serde_json::to_value(file).unwrap_or(Value::Null);
                rich.push((texts.len(), json!({ "type": "file", "file": file })));
            }
            ContentPart::Other(raw) => {
                let kind = raw.get("type").and_then(Value::as_str).unwrap_or("untyped");
                return Err(unsupported(format!("content parts of type {kind}")));
            }
        }
    }
    let content = if rich.is_empty() {
        (!texts.is_empty() || refusals.is_empty())
            .then(|| Value::String(texts.join(PART_SEPARATOR)))
    } else {
        // Images and files need the list form; texts keep their place among them.
        let mut list = Vec::new();
        let mut rich = rich.into_iter().peekable();
        for (index, text) in texts.iter().enumerate() {
            while let Some((_, part)) = rich.next_if(|(at, _)| *at == index) {
                list.push(part);
            }
            list.push(json!({ "type": "text", "text": text }));
        }
        list.extend(rich.map(|(_, part)| part));
        Some(Value::Array(list))
    };
    Ok(ChatMessage {
        role,
        content,
        refusal: (!refusals.is_empty()).then(|| refusals.join(PART_SEPARATOR)),
        ..ChatMessage::default()
    })
}

/// A replayed `function_call` joins the assistant message right before it (the
/// model's text and its calls are one assistant turn in Chat Completions), or starts
/// an assistant turn of its own.
fn push_tool_call(out: &mut Vec<ChatMessage>, call: &FunctionCall) {
    let tool_call = json!({
        "id": call.call_id,
        "type": "function",
        "function": { "name": call.name, "arguments": call.arguments },
    });
    if let Some(last) = out.last_mut()
        && last.role == "assistant"
    {
        last.tool_calls.get_or_insert_with(Vec::new).push(tool_call);
        if last.content.is_none() {
            last.content = Some(Value::Null);
        }
        return;
    }
    out.push(ChatMessage {
        role: "assistant".into(),
        // Explicit `null`: some servers require the field on an assistant turn.
        content: Some(Value::Null),
        tool_calls: Some(vec![tool_call]),
        ..ChatMessage::default()
    });
}

fn tool_message(output: &FunctionCallOutput) -> Result<ChatMessage, ClientError> {
    let content = match &output.output {
        FunctionOutput::Text(text) => text.clone(),
        FunctionOutput::Parts(parts) => {
            let mut texts = Vec::new();
            for part in parts {
                match (part.get("type").and_then(Value::as_str), part.get("text")) {
                    (Some("input_text" | "output_text" | "text"), Some(Value::String(text))) => {
                        texts.push(text.clone());
                    }
                    (kind, _) => {
                        return Err(unsupported(format!(
                            "function_call_output parts of type {}",
                            kind.unwrap_or("untyped")
                        )));
                    }
                }
            }
            texts.join(PART_SEPARATOR)
        }
    };
    Ok(ChatMessage {
        role: "tool".into(),
        content: Some(Value::String(content)),
        tool_call_id: Some(output.call_id.clone()),
        ..ChatMessage::default()
    })
}

fn translate_tool(tool: &Tool) -> Result<Value, ClientError> {
    match tool {
        Tool::Function(function) => {
            let mut definition = Map::new();
            definition.insert("name".into(), Value::String(function.name.clone()));
            let description = function.description.clone().map(Value::String);
            insert_some(&mut definition, "description", description);
            insert_some(&mut definition, "parameters", function.parameters.clone());
            // Always explicit: an omitted `strict` means true on Responses, false here.
            definition.insert("strict".into(), Value::Bool(function.strict));
            Ok(json!({ "type": "function", "function": definition }))
        }
        Tool::Other(raw) => {
            let kind = raw.get("type").and_then(Value::as_str).unwrap_or("untyped");
            Err(unsupported(format!("tools of type {kind}")))
        }
    }
}

fn translate_tool_choice(choice: &ToolChoice) -> Result<Value, ClientError> {
    match choice {
        ToolChoice::Mode(mode) => Ok(Value::String(mode.as_str().to_owned())),
        ToolChoice::Named(NamedToolChoice::Function { name }) => {
            Ok(json!({ "type": "function", "function": { "name": name } }))
        }
        ToolChoice::Other(raw) => {
            let kind = raw.get("type").and_then(Value::as_str).unwrap_or("untyped");
            Err(unsupported(format!("tool_choice of type {kind}")))
        }
    }
}

/// `text.format` as `response_format`; `None` for plain text (the default).
fn translate_format(format: &TextFormat) -> Result<Option<Value>, ClientError> {
    match format {
        TextFormat::Text => Ok(None),
        TextFormat::JsonObject => Ok(Some(json!({ "type": "json_object" }))),
        TextFormat::JsonSchema(schema) => {
            let mut json_schema = Map::new();
            json_schema.insert("name".into(), Value::String(schema.name.clone()));
            let description = schema.description.clone().map(Value::String);
            insert_some(&mut json_schema, "description", description);
            json_schema.insert("schema".into(), schema.schema.clone());
            insert_some(&mut json_schema, "strict", schema.strict.map(Value::Bool));
            Ok(Some(
                json!({ "type": "json_schema", "json_schema": json_schema }),
            ))
        }
        TextFormat::Other(raw) => {
            let kind = raw.get("type").and_then(Value::as_str).unwrap_or("untyped");
            Err(unsupported(format!("text.format of type {kind}")))
        }
    }
}

fn insert_some(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value);
    }
}

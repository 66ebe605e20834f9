//! [`RequestBuilder::build`]: validation, then assembly of the body (AGN-003 sections 3
//! to 7, with the wire shapes of `docs/wire.md`).
//!
//! All checks run before anything is assembled, so a failed build has no partial
//! result. The order of input items is fixed:
//!
//! - initial: the system message, then the user message;
//! - stored-response continuation: one `function_call_output` per tool result, then the
//!   user message (the API needs the outputs answering the previous response's calls
//!   before anything new);
//! - stateless replay: the history, then the `function_call_output` items, then the user
//!   message.

use std::collections::BTreeMap;

use aptix_model::wire::{
    ContentPart, CreateResponseRequest, Input, InputItem, InputMessage, JsonSchemaFormat,
    MessageContent, ReasoningConfig, Role, TextConfig, TextFormat, Tool, ToolChoice,
    ToolChoiceMode,
};

use crate::builder::{Continuation, RequestBuilder};
use crate::error::RequestError;
use crate::history::check_pairing;
use crate::settings::{ModelParams, check_model_settings};
use crate::text::{is_blank, needs_escape};
use crate::tool_output::check_tool_outputs;
use crate::tool_results::render_tool_results_block;
use crate::tools::{check_function_tools, is_valid_name};

/// The API's largest number of metadata pairs.
pub(crate) const MAX_METADATA_PAIRS: usize = 16;
/// The API's longest metadata key, in characters.
pub(crate) const MAX_METADATA_KEY_CHARS: usize = 64;
/// The API's longest metadata value, in characters.
pub(crate) const MAX_METADATA_VALUE_CHARS: usize = 512;

impl RequestBuilder {
    /// Checks every input and assembles the request body.
    ///
    /// Fails, with a [`RequestError`] naming the bad input, when: the model is blank,
    /// the temperature is outside `0..=2`, `top_p` outside `0..=1` or
    /// `max_output_tokens` below 16 (the rule of
    /// [`check_model_settings`](crate::check_model_settings)); the mode is blank, spans
    /// lines or holds `]`; the instruction is blank and there are no tool results (or,
    /// with [`messages`](RequestBuilder::messages), there are neither messages nor tool
    /// results); metadata exceeds 16 pairs, 64-character keys or 512-character values;
    /// a `json_schema` format name is invalid; a previous response id is empty or holds
    /// whitespace; stateless history is empty or breaks the call pairing rules; tool
    /// results come on an initial request, or any of them is invalid (call id, duplicate,
    /// malformed JSON, blank error, size); a function tool is invalid or duplicated; or
    /// the forced tool is not among the tools sent, or a tool call is required and no
    /// tools are sent.
    pub fn build(self) -> Result<CreateResponseRequest, RequestError> {
        self.check_settings()?;
        self.check_continuation()?;
        check_tool_outputs(&self.tool_outputs)?;
        match &self.messages {
            None if is_blank(&self.instruction) && self.tool_outputs.is_empty() => {
                return Err(RequestError::BlankInstruction);
            }
            Some(messages) if messages.is_empty() && self.tool_outputs.is_empty() => {
                return Err(RequestError::EmptyMessages);
            }
            _ => {}
        }
        check_function_tools(self.tools.iter().enumerate().filter_map(
            |(index, tool)| match tool {
                Tool::Function(function) => Some((index, function)),
                Tool::Other(_) => None,
            },
        ))?;
        let sends_tools = !self.continuation.is_continuation() || self.resend_tools_on_continuation;
        let tool_choice = self.tool_choice(sends_tools)?;
        if let Continuation::Stateless(history) = &self.continuation {
            let new_items: Vec<InputItem> = self
                .tool_outputs
                .iter()
                .map(|output| output.to_input_item())
                .collect();
            check_pairing(history, &new_items)?;
        }
        Ok(self.assemble(sends_tools, tool_choice))
    }

    /// Builds the body from checked inputs, moving every text into place (the context
    /// block can be hundreds of kilobytes; it is never copied).
    fn assemble(self, sends_tools: bool, tool_choice: Option<ToolChoice>) -> CreateResponseRequest {
        let RequestBuilder {
            model,
            base_system_prompt,
            system_prompt,
            tool_usage_block,
            temperature,
            top_p,
            messages,
            mode,
            instruction,
            continuation,
            tools,
            forced_tool: _,
            require_tool_call: _,
            tool_outputs,
            tool_results_block,
            context_block,
            stream,
            max_output_tokens,
            store,
            include,
            metadata,
            parallel_tool_calls,
            reasoning_effort,
            text_format,
            extra,
            resend_tools_on_continuation: _,
        } = self;
        let outputs = tool_outputs.iter().map(|output| output.to_input_item());
        let (mut items, previous_response_id) = match continuation {
            Continuation::Initial if messages.is_some() => (Vec::new(), None),
            Continuation::Initial => (
                vec![system_message(
                    base_system_prompt,
                    system_prompt,
                    tool_usage_block,
                )],
                None,
            ),
            Continuation::PreviousResponse(id) => (outputs.collect(), Some(id)),
            Continuation::Stateless(mut history) => {
                history.reserve(tool_outputs.len() + 1);
                history.extend(outputs);
                (history, None)
            }
        };
        if let Some(messages) = messages {
            items.extend(messages.into_iter().map(InputItem::Message));
        } else {
            let results_block = if tool_results_block {
                render_tool_results_block(&tool_outputs)
            } else {
                None
            };
            items.push(user_message(
                &mode,
                &instruction,
                context_block,
                results_block,
            ));
        }
        CreateResponseRequest {
            model,
            input: Input::Items(items),
            previous_response_id,
            tools: (sends_tools && !tools.is_empty())
                .then(|| tools.into_iter().map(with_explicit_parameters).collect()),
            tool_choice,
            parallel_tool_calls,
            temperature,
            top_p,
            max_output_tokens,
            stream,
            store,
            include: (!include.is_empty()).then_some(include),
            metadata: (!metadata.is_empty()).then_some(metadata),
            reasoning: (!is_blank(&reasoning_effort)).then_some(ReasoningConfig {
                effort: Some(reasoning_effort),
                summary: None,
            }),
            text: text_format.map(|format| TextConfig {
                format: Some(format),
                verbosity: None,
                extra: BTreeMap::new(),
            }),
            extra,
            ..CreateResponseRequest::default()
        }
    }

    fn check_settings(&self) -> Result<(), RequestError> {
        check_model_settings(&ModelParams {
            model: Some(&self.model),
            temperature: self.temperature,
            top_p: self.top_p,
            max_output_tokens: self.max_output_tokens,
            reasoning_effort: Some(self.reasoning_effort.as_str())
                .filter(|effort| !is_blank(effort)),
        })?;
        if self.messages.is_none() {
            check_mode(&self.mode)?;
        }
        check_metadata(&self.metadata)?;
        if let Some(TextFormat::JsonSchema(JsonSchemaFormat { name, .. })) = &self.text_format
            && !is_valid_name(name)
        {
            return Err(RequestError::InvalidTextFormatName { name: name.clone() });
        }
        Ok(())
    }

    fn check_continuation(&self) -> Result<(), RequestError> {
        match &self.continuation {
            Continuation::Initial if !self.tool_outputs.is_empty() => {
                Err(RequestError::ToolResultsOnInitialRequest {
                    count: self.tool_outputs.len(),
                })
            }
            Continuation::Initial => Ok(()),
            Continuation::PreviousResponse(id) => {
                if id.is_empty() || id.chars().any(|c| c.is_whitespace() || c.is_control()) {
                    Err(RequestError::InvalidPreviousResponseId { id: id.clone() })
                } else {
                    Ok(())
                }
            }
            Continuation::Stateless(history) if history.is_empty() => {
                Err(RequestError::EmptyStatelessHistory)
            }
            Continuation::Stateless(_) => Ok(()),
        }
    }

    fn tool_choice(&self, sends_tools: bool) -> Result<Option<ToolChoice>, RequestError> {
        if is_blank(&self.forced_tool) {
            return match (
                self.require_tool_call,
                sends_tools && !self.tools.is_empty(),
            ) {
                (false, _) => Ok(None),
                (true, true) => Ok(Some(ToolChoice::Mode(ToolChoiceMode::Required))),
                (true, false) => Err(RequestError::ToolCallRequiredWithoutTools),
            };
        }
        let name = &self.forced_tool;
        if !sends_tools {
            return Err(RequestError::ForcedToolWithoutTools { name: name.clone() });
        }
        let known = self
            .tools
            .iter()
            .any(|tool| matches!(tool, Tool::Function(function) if &function.name == name));
        if known {
            Ok(Some(ToolChoice::function(name.clone())))
        } else {
            Err(RequestError::UnknownForcedTool { name: name.clone() })
        }
    }
}

/// A function tool with `parameters` always present. The API's `FunctionTool` requires
/// the field, but the wire type omits it when unset, so a tool given without parameters
/// gets the schema of "no arguments", which every provider and strict mode accept.
fn with_explicit_parameters(tool: Tool) -> Tool {
    match tool {
        Tool::Function(mut function) => {
            if function.parameters.is_none() {
                function.parameters = Some(serde_json::json!({
                    "type": "object",
                    "properties": {},
                    "additionalProperties": false
                }));
            }
            Tool::Function(function)
        }
        other => other,
    }
}

/// The single system message: base prompt (always, even empty), per-request prompt and
/// tool-usage block (each when not blank), in that order.
fn system_message(base: String, per_request: String, usage_block: String) -> InputItem {
    let mut parts = vec![ContentPart::input_text(base)];
    for optional in [per_request, usage_block] {
        if !is_blank(&optional) {
            parts.push(ContentPart::input_text(optional));
        }
    }
    InputItem::Message(InputMessage::new(Role::System, parts))
}

/// What opens the user message, before the mode.
const MODE_OPEN: &str = "[MODE: ";
/// What follows the mode and opens the instruction.
const INSTRUCTION_OPEN: &str = "]\n\n[INSTRUCTION]\n";

/// The single user message: `[MODE]`/`[INSTRUCTION]`, then the context block when not
/// blank, then the `[TOOL_RESULTS]` block when there is one.
fn user_message(
    mode: &str,
    instruction: &str,
    context_block: String,
    results_block: Option<String>,
) -> InputItem {
    let mut parts = vec![ContentPart::input_text(format!(
        "{MODE_OPEN}{mode}{INSTRUCTION_OPEN}{instruction}"
    ))];
    if !is_blank(&context_block) {
        parts.push(ContentPart::input_text(context_block));
    }
    parts.extend(results_block.map(ContentPart::input_text));
    InputItem::Message(InputMessage::new(Role::User, parts))
}

/// The instruction a user message built by this crate carries, for a reader of a stored
/// history (an editor replaying a session): the text after `[INSTRUCTION]` in its first
/// part. `None` for any other message (a system message, a tool continuation's message,
/// whose `[INSTRUCTION]` is empty, one written by someone else).
///
/// ```
/// use aptix_model::wire::{ContentPart, InputMessage, Role};
/// use aptix_request::instruction_of;
///
/// let message = InputMessage::new(
///     Role::User,
///     vec![ContentPart::input_text("[MODE: QA]\n\n[INSTRUCTION]\nWhere is main?")],
/// );
/// assert_eq!(instruction_of(&message), Some("Where is main?"));
///
/// let results = InputMessage::new(
///     Role::User,
///     vec![ContentPart::input_text("[MODE: QA]\n\n[INSTRUCTION]\n")],
/// );
/// assert_eq!(instruction_of(&results), None);
/// ```
pub fn instruction_of(message: &InputMessage) -> Option<&str> {
    if message.role != Role::User {
        return None;
    }
    let first = match &message.content {
        MessageContent::Parts(parts) => match parts.first()? {
            ContentPart::InputText { text } => text.as_str(),
            _ => return None,
        },
        MessageContent::Text(text) => text.as_str(),
    };
    // A mode never holds `]` (`check_mode`), so the first header after it is ours.
    let (_mode, instruction) = first
        .strip_prefix(MODE_OPEN)?
        .split_once(INSTRUCTION_OPEN)?;
    // A tool continuation's message says nothing the user asked.
    (!is_blank(instruction)).then_some(instruction)
}

fn check_mode(mode: &str) -> Result<(), RequestError> {
    let reason = if is_blank(mode) {
        Some("it is blank")
    } else if mode.chars().any(needs_escape) {
        Some("it holds a line break, control or bidirectional character")
    } else if mode.contains(']') {
        Some("it holds ']', which would end the [MODE: ...] header")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(RequestError::InvalidMode {
            mode: mode.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

fn check_metadata(metadata: &BTreeMap<String, String>) -> Result<(), RequestError> {
    if metadata.len() > MAX_METADATA_PAIRS {
        return Err(RequestError::TooManyMetadataPairs {
            count: metadata.len(),
            max: MAX_METADATA_PAIRS,
        });
    }
    for (key, value) in metadata {
        let chars = key.chars().count();
        if chars > MAX_METADATA_KEY_CHARS {
            return Err(RequestError::MetadataKeyTooLong {
                key: key.clone(),
                chars,
                max: MAX_METADATA_KEY_CHARS,
            });
        }
        let chars = value.chars().count();
        if chars > MAX_METADATA_VALUE_CHARS {
            return Err(RequestError::MetadataValueTooLong {
                key: key.clone(),
                chars,
                max: MAX_METADATA_VALUE_CHARS,
            });
        }
    }
    Ok(())
}

//! [`RequestBuilder`]: the server-owned inputs of one `/v1/responses` call (AGN-003
//! section 2, as AGN-034 re-homes them), set one by one; [`build`](RequestBuilder::build)
//! (in `build.rs`) checks them and assembles the body.
//!
//! Optional text inputs follow AGN-003's rule that a "null/empty/whitespace" value is
//! omitted: a blank string means "absent", so a caller holding an `Option<String>` can
//! pass `value.unwrap_or_default()`. Optional scalars take `impl Into<Option<T>>`, so
//! both `0.2` and `None` work.

use std::collections::BTreeMap;

use aptix_model::wire::{FunctionTool, InputItem, InputMessage, TextFormat, Tool};
use serde_json::Value;

use crate::tool_output::ToolOutput;

/// Which kind of request this is, and so what carries the conversation so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Continuation {
    /// The first request of a conversation (AGN-003's "initial request"): the system
    /// message is sent, and tools.
    #[default]
    Initial,
    /// Continue a response stored by the provider (`previous_response_id`): no system
    /// message, no tools unless resent, and the previous calls' outputs.
    PreviousResponse(String),
    /// Replay the session's history to a provider that stores nothing: `input` is this
    /// history (which holds the initial system message) followed by this turn's items,
    /// and there is no `previous_response_id`.
    ///
    /// The history is the earlier requests' input items and the earlier responses'
    /// output items converted with `OutputItem::to_input_item`, in the order they
    /// happened, including earlier `function_call_output` items.
    Stateless(Vec<InputItem>),
}

impl Continuation {
    /// Whether this is a continuation of any kind (not the initial request).
    pub fn is_continuation(&self) -> bool {
        !matches!(self, Continuation::Initial)
    }
}

/// Builds one `/v1/responses` request body from server-owned turn state.
///
/// Required: the model (given to [`new`](Self::new)), a [`mode`](Self::mode), and an
/// [`instruction`](Self::instruction) unless the request continues with tool results.
/// Everything else is optional. [`build`](Self::build) validates and returns a
/// [`CreateResponseRequest`](aptix_model::wire::CreateResponseRequest) or a
/// [`RequestError`](crate::RequestError); it never panics.
#[derive(Debug, Clone)]
pub struct RequestBuilder {
    pub(crate) model: String,
    pub(crate) base_system_prompt: String,
    pub(crate) system_prompt: String,
    pub(crate) tool_usage_block: String,
    pub(crate) temperature: Option<f64>,
    pub(crate) top_p: Option<f64>,
    pub(crate) messages: Option<Vec<InputMessage>>,
    pub(crate) mode: String,
    pub(crate) instruction: String,
    pub(crate) continuation: Continuation,
    pub(crate) tools: Vec<Tool>,
    pub(crate) forced_tool: String,
    pub(crate) require_tool_call: bool,
    pub(crate) tool_outputs: Vec<ToolOutput>,
    pub(crate) tool_results_block: bool,
    pub(crate) context_block: String,
    pub(crate) stream: Option<bool>,
    pub(crate) max_output_tokens: Option<u64>,
    pub(crate) store: Option<bool>,
    pub(crate) include: Vec<String>,
    pub(crate) metadata: BTreeMap<String, String>,
    pub(crate) parallel_tool_calls: Option<bool>,
    pub(crate) reasoning_effort: String,
    pub(crate) text_format: Option<TextFormat>,
    pub(crate) extra: BTreeMap<String, Value>,
    pub(crate) resend_tools_on_continuation: bool,
}

impl RequestBuilder {
    /// A builder for `model` (`ConversationContext.ModelName`), initial by default, with
    /// the `[TOOL_RESULTS]` block on and tools not resent on continuations.
    pub fn new(model: impl Into<String>) -> RequestBuilder {
        RequestBuilder {
            model: model.into(),
            base_system_prompt: String::new(),
            system_prompt: String::new(),
            tool_usage_block: String::new(),
            temperature: None,
            top_p: None,
            messages: None,
            mode: String::new(),
            instruction: String::new(),
            continuation: Continuation::Initial,
            tools: Vec::new(),
            forced_tool: String::new(),
            require_tool_call: false,
            tool_outputs: Vec::new(),
            tool_results_block: true,
            context_block: String::new(),
            stream: None,
            max_output_tokens: None,
            store: None,
            include: Vec::new(),
            metadata: BTreeMap::new(),
            parallel_tool_calls: None,
            reasoning_effort: String::new(),
            text_format: None,
            extra: BTreeMap::new(),
            resend_tools_on_continuation: false,
        }
    }

    /// The base system prompt (`ConversationContext.System`): always the first part of
    /// the system message on initial requests, even when empty.
    #[must_use]
    pub fn base_system_prompt(mut self, prompt: impl Into<String>) -> RequestBuilder {
        self.base_system_prompt = prompt.into();
        self
    }

    /// The per-request system prompt: the system message's second part when not blank.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> RequestBuilder {
        self.system_prompt = prompt.into();
        self
    }

    /// The rendered tool-usage block (see [`ToolUsageBlock`](crate::ToolUsageBlock)):
    /// the system message's last part when not blank.
    #[must_use]
    pub fn tool_usage_block(mut self, block: impl Into<String>) -> RequestBuilder {
        self.tool_usage_block = block.into();
        self
    }

    /// Sampling temperature in `0..=2`; omitted from the body when `None` (reasoning
    /// models reject it).
    #[must_use]
    pub fn temperature(mut self, temperature: impl Into<Option<f64>>) -> RequestBuilder {
        self.temperature = temperature.into();
        self
    }

    /// Nucleus sampling in `0..=1`; omitted from the body when `None`.
    #[must_use]
    pub fn top_p(mut self, top_p: impl Into<Option<f64>>) -> RequestBuilder {
        self.top_p = top_p.into();
        self
    }

    /// Sends `messages`, as given and in order, in place of AGN-003's system and user
    /// messages: for a conversation that is already a list of messages with roles (the
    /// schema-constrained Request of `aptix-schema`). The base and per-request system
    /// prompts, the tool-usage block, the mode, the instruction, the `[CONTEXT]` block
    /// and the `[TOOL_RESULTS]` block are then not used; the continuation's items (the
    /// replayed history, the `function_call_output` items) still come first.
    #[must_use]
    pub fn messages(mut self, messages: impl IntoIterator<Item = InputMessage>) -> RequestBuilder {
        self.messages = Some(messages.into_iter().collect());
        self
    }

    /// The agent mode written as `[MODE: <mode>]` (one line, no `]`).
    #[must_use]
    pub fn mode(mut self, mode: impl Into<String>) -> RequestBuilder {
        self.mode = mode.into();
        self
    }

    /// The user's instruction, written as given under `[INSTRUCTION]`. May be blank only
    /// when the request carries tool results.
    #[must_use]
    pub fn instruction(mut self, instruction: impl Into<String>) -> RequestBuilder {
        self.instruction = instruction.into();
        self
    }

    /// Initial request, stored-response continuation, or stateless replay.
    #[must_use]
    pub fn continuation(mut self, continuation: Continuation) -> RequestBuilder {
        self.continuation = continuation;
        self
    }

    /// AGN-003's `ResponseContinuationId`: a non-blank id makes this a
    /// [`Continuation::PreviousResponse`]; a blank one an initial request.
    #[must_use]
    pub fn previous_response_id(self, id: impl Into<String>) -> RequestBuilder {
        let id = id.into();
        if crate::text::is_blank(&id) {
            self.continuation(Continuation::Initial)
        } else {
            self.continuation(Continuation::PreviousResponse(id))
        }
    }

    /// Stateless replay of `history` (see [`Continuation::Stateless`]).
    #[must_use]
    pub fn stateless_history(self, history: Vec<InputItem>) -> RequestBuilder {
        self.continuation(Continuation::Stateless(history))
    }

    /// Adds function tools (typed, or from
    /// [`parse_tools_json`](crate::parse_tools_json)), after any added before.
    #[must_use]
    pub fn tools(mut self, tools: impl IntoIterator<Item = FunctionTool>) -> RequestBuilder {
        self.tools.extend(tools.into_iter().map(Tool::Function));
        self
    }

    /// Adds one tool of any kind (a hosted tool is passed through as given).
    #[must_use]
    pub fn tool(mut self, tool: Tool) -> RequestBuilder {
        self.tools.push(tool);
        self
    }

    /// Sends tools on continuations too. Off by default, as AGN-003 says; turn it on
    /// when a continuation may call tools, because tools are not inherited through
    /// `previous_response_id`.
    #[must_use]
    pub fn resend_tools_on_continuation(mut self, resend: bool) -> RequestBuilder {
        self.resend_tools_on_continuation = resend;
        self
    }

    /// Forces the model to call the function tool `name` (`ToolChoiceName`); blank
    /// means no forced tool. It must be one of the tools sent.
    #[must_use]
    pub fn force_tool(mut self, name: impl Into<String>) -> RequestBuilder {
        self.forced_tool = name.into();
        self
    }

    /// Requires the model to call some tool (`tool_choice: "required"`) without naming
    /// one. A [forced tool](Self::force_tool) takes precedence; either needs the request
    /// to send tools.
    #[must_use]
    pub fn require_tool_call(mut self, required: bool) -> RequestBuilder {
        self.require_tool_call = required;
        self
    }

    /// Adds the results of the previous response's tool calls, in order.
    #[must_use]
    pub fn tool_outputs(mut self, outputs: impl IntoIterator<Item = ToolOutput>) -> RequestBuilder {
        self.tool_outputs.extend(outputs);
        self
    }

    /// Whether tool results also appear as the `[TOOL_RESULTS]` block in the user
    /// message (on by default; the `function_call_output` items are sent either way).
    #[must_use]
    pub fn include_tool_results_block(mut self, include: bool) -> RequestBuilder {
        self.tool_results_block = include;
        self
    }

    /// The pre-rendered `[CONTEXT]` block (AGN-002): the user message's second part
    /// when not blank.
    #[must_use]
    pub fn context_block(mut self, block: impl Into<String>) -> RequestBuilder {
        self.context_block = block.into();
        self
    }

    /// Whether to stream; omitted from the body when `None`.
    #[must_use]
    pub fn stream(mut self, stream: impl Into<Option<bool>>) -> RequestBuilder {
        self.stream = stream.into();
        self
    }

    /// Upper bound on generated tokens, reasoning included (at least 16).
    #[must_use]
    pub fn max_output_tokens(mut self, tokens: impl Into<Option<u64>>) -> RequestBuilder {
        self.max_output_tokens = tokens.into();
        self
    }

    /// Whether the provider stores the response (needed for a later
    /// `previous_response_id`).
    #[must_use]
    pub fn store(mut self, store: impl Into<Option<bool>>) -> RequestBuilder {
        self.store = store.into();
        self
    }

    /// Asks for extra output (`include`), e.g. `reasoning.encrypted_content`, which a
    /// stateless session needs to replay reasoning items. A value given twice is sent
    /// once.
    #[must_use]
    pub fn include(mut self, item: impl Into<String>) -> RequestBuilder {
        let item = item.into();
        if !self.include.contains(&item) {
            self.include.push(item);
        }
        self
    }

    /// Adds one metadata pair (at most 16; keys up to 64 characters, values up to 512).
    /// A key set twice keeps its last value.
    #[must_use]
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> RequestBuilder {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Whether the model may make several tool calls in one response.
    #[must_use]
    pub fn parallel_tool_calls(mut self, parallel: impl Into<Option<bool>>) -> RequestBuilder {
        self.parallel_tool_calls = parallel.into();
        self
    }

    /// Reasoning effort (`minimal`, `low`, `medium`, `high`, ...); blank means unset.
    #[must_use]
    pub fn reasoning_effort(mut self, effort: impl Into<String>) -> RequestBuilder {
        self.reasoning_effort = effort.into();
        self
    }

    /// The output format (`text.format`): plain text, a JSON schema, or any JSON object.
    #[must_use]
    pub fn text_format(mut self, format: impl Into<Option<TextFormat>>) -> RequestBuilder {
        self.text_format = format.into();
        self
    }

    /// Adds request fields the builder has no setter for (`service_tier`,
    /// `prompt_cache_key`, ...), sent as given; a key set twice keeps its last value.
    /// A key must not name a field the builder sets itself: the body would hold it
    /// twice.
    #[must_use]
    pub fn extra_fields(
        mut self,
        fields: impl IntoIterator<Item = (String, Value)>,
    ) -> RequestBuilder {
        self.extra.extend(fields);
        self
    }
}

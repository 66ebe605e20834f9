//! The one error type of `aptix-request`.
//!
//! Every variant carries the data a caller needs to point at the bad input (an index,
//! a call id, a tool name) as fields, so the orchestrator can map it to its own field
//! paths without parsing messages.

/// Why a request could not be built, or why a `ToolsJson` document was rejected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A schema cannot be normalised for strict mode (native structured output, strict
    /// tools): [`normalize_strict`](crate::normalize_strict).
    #[error("the schema cannot be made strict at {pointer:?}: {reason}")]
    NotStrict {
        /// JSON pointer into the schema, `""` for the root.
        pointer: String,
        /// What strict mode cannot express there.
        reason: String,
    },
    /// The model id was empty or blank.
    #[error("the model id is blank")]
    BlankModel,
    /// The mode cannot be written into the `[MODE: ...]` header.
    #[error("mode {mode:?} is invalid: {reason}")]
    InvalidMode {
        /// The mode as given.
        mode: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The instruction was blank and there were no tool results: the request would
    /// carry no intent at all.
    #[error("the instruction is blank and there are no tool results to continue with")]
    BlankInstruction,
    /// The temperature was outside `0..=2` or not a number.
    #[error("temperature {value} is outside 0..=2")]
    InvalidTemperature {
        /// The value given.
        value: f64,
    },
    /// `top_p` was outside `0..=1` or not a number.
    #[error("top_p {value} is outside 0..=1")]
    InvalidTopP {
        /// The value given.
        value: f64,
    },
    /// `max_output_tokens` was below the API's minimum.
    #[error("max_output_tokens {value} is below the minimum of {minimum}")]
    MaxOutputTokensTooSmall {
        /// The value given.
        value: u64,
        /// The smallest value the API accepts.
        minimum: u64,
    },
    /// The reasoning effort is not one the API names (see
    /// [`REASONING_EFFORTS`](crate::REASONING_EFFORTS)).
    #[error(
        "reasoning effort {value:?} is not one the API takes (known: {})",
        crate::REASONING_EFFORTS.join(", ")
    )]
    UnknownReasoningEffort {
        /// The value given.
        value: String,
    },
    /// More metadata pairs than the API accepts.
    #[error("{count} metadata pairs given, at most {max} are accepted")]
    TooManyMetadataPairs {
        /// How many were given.
        count: usize,
        /// The API's limit.
        max: usize,
    },
    /// A metadata key longer than the API accepts.
    #[error("metadata key {key:?} has {chars} characters, at most {max} are accepted")]
    MetadataKeyTooLong {
        /// The key.
        key: String,
        /// Its length in characters.
        chars: usize,
        /// The API's limit.
        max: usize,
    },
    /// A metadata value longer than the API accepts.
    #[error("metadata value of key {key:?} has {chars} characters, at most {max} are accepted")]
    MetadataValueTooLong {
        /// The key whose value is too long.
        key: String,
        /// The value's length in characters.
        chars: usize,
        /// The API's limit.
        max: usize,
    },
    /// The `json_schema` text format's name does not match `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("text format name {name:?} must be 1 to 64 letters, digits, '_' or '-'")]
    InvalidTextFormatName {
        /// The name given.
        name: String,
    },
    /// A previous response id that cannot be an id (it holds whitespace or control
    /// characters, or is empty where a typed continuation demanded one).
    #[error("previous response id {id:?} is not a valid response id")]
    InvalidPreviousResponseId {
        /// The id given.
        id: String,
    },
    /// `ToolsJson` was not JSON at all.
    #[error("tools JSON is not valid JSON at line {line}, column {column}: {message}")]
    ToolsJsonSyntax {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the JSON parser reported.
        message: String,
    },
    /// `ToolsJson` was JSON but not an array.
    #[error("tools JSON must be an array of function tools, found {found}")]
    ToolsJsonNotArray {
        /// What it was instead (`an object`, `a string`, ...).
        found: &'static str,
    },
    /// One tool is not a valid flat function tool.
    #[error("tool {index} is invalid: {problem}")]
    InvalidTool {
        /// The tool's 0-based position in the list.
        index: usize,
        /// What is wrong with it.
        problem: ToolProblem,
    },
    /// Two tools share a name; the model could not tell them apart.
    #[error("tool {index} is named {name:?}, like tool {first_index}")]
    DuplicateToolName {
        /// The later tool's 0-based position.
        index: usize,
        /// The earlier tool's 0-based position.
        first_index: usize,
        /// The shared name.
        name: String,
    },
    /// The forced tool is not among the tools this request sends.
    #[error("forced tool {name:?} is not among the tools sent")]
    UnknownForcedTool {
        /// The forced tool name.
        name: String,
    },
    /// A tool is forced on a continuation that sends no tools; the API rejects a
    /// `tool_choice` naming a tool it was not given.
    #[error(
        "forced tool {name:?} on a continuation that sends no tools; \
         enable resend_tools_on_continuation or drop the forced tool"
    )]
    ForcedToolWithoutTools {
        /// The forced tool name.
        name: String,
    },
    /// A tool call is required on a request that sends no tools.
    #[error("a tool call is required but the request sends no tools")]
    ToolCallRequiredWithoutTools,
    /// Messages were given in place of the instruction, but none, and there are no tool
    /// results either: the request would carry nothing.
    #[error("the request's messages are empty and there are no tool results")]
    EmptyMessages,
    /// Tool results on an initial request: there are no calls they could answer.
    #[error("{count} tool results given on an initial request, which has no calls to answer")]
    ToolResultsOnInitialRequest {
        /// How many were given.
        count: usize,
    },
    /// A tool result's call id is empty, too long, or holds whitespace.
    #[error("tool result {index} has invalid call id {call_id:?}: {reason}")]
    InvalidCallId {
        /// The result's 0-based position.
        index: usize,
        /// The call id given.
        call_id: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// Two tool results answer the same call.
    #[error("call {call_id} has more than one tool result")]
    DuplicateToolResult {
        /// The repeated call id.
        call_id: String,
    },
    /// A tool result's JSON does not parse.
    #[error(
        "result of call {call_id} is not valid JSON at line {line}, column {column}: {message}"
    )]
    MalformedToolResult {
        /// The call whose result is malformed.
        call_id: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the JSON parser reported.
        message: String,
    },
    /// A tool error without a message: the model could not tell what went wrong.
    #[error("error of call {call_id} has a blank message")]
    BlankToolError {
        /// The call whose error message is blank.
        call_id: String,
    },
    /// A tool output longer than the API accepts for one `function_call_output`.
    #[error("output of call {call_id} is {bytes} bytes, at most {max} are accepted")]
    ToolOutputTooLarge {
        /// The call.
        call_id: String,
        /// The output's length in bytes.
        bytes: usize,
        /// The API's limit.
        max: usize,
    },
    /// Stateless replay was asked for with no history; the first request of a
    /// conversation is an initial request.
    #[error("stateless replay needs the session's history; build the first request as initial")]
    EmptyStatelessHistory,
    /// A `function_call` has no `function_call_output` after it.
    #[error("call {call_id} has no function_call_output after it")]
    MissingFunctionCallOutput {
        /// The unanswered call.
        call_id: String,
    },
    /// A `function_call_output` answers no earlier `function_call`.
    #[error("function_call_output at item {index} answers no earlier call {call_id}")]
    OrphanFunctionCallOutput {
        /// The call id it names.
        call_id: String,
        /// Its 0-based position among history plus new items.
        index: usize,
    },
    /// A call answered twice.
    #[error("call {call_id} has more than one function_call_output")]
    DuplicateFunctionCallOutput {
        /// The call id.
        call_id: String,
    },
    /// Two `function_call` items share a call id.
    #[error("call id {call_id} is used by more than one function_call")]
    DuplicateFunctionCall {
        /// The call id.
        call_id: String,
    },
    /// The history ends with a `reasoning` item, which must be followed by the item it
    /// preceded (the API rejects it otherwise).
    #[error("history item {index} is a reasoning item with nothing after it")]
    TrailingReasoningItem {
        /// Its 0-based position in the history.
        index: usize,
    },
}

/// What is wrong with one tool definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolProblem {
    /// The element is not a JSON object.
    #[error("expected an object, found {found}")]
    NotAnObject {
        /// What it was instead.
        found: &'static str,
    },
    /// The Chat Completions shape, `{"type":"function","function":{...}}`, which the
    /// Responses API rejects.
    #[error(
        "uses the Chat Completions shape with a nested \"function\" object; \
         the Responses API wants name, description, parameters and strict beside \"type\""
    )]
    ChatCompletionsShape,
    /// No `type` field.
    #[error("has no \"type\"; function tools need \"type\":\"function\"")]
    MissingType,
    /// A `type` other than `function`.
    #[error("has type {type_name:?}; only function tools are accepted here")]
    UnsupportedType {
        /// The type given (or its JSON text when not a string).
        type_name: String,
    },
    /// No `name`, or a name that is not a string.
    #[error("has no string \"name\"")]
    MissingName,
    /// A name the API rejects.
    #[error("name {name:?} must be 1 to 64 letters, digits, '_' or '-'")]
    InvalidName {
        /// The name given.
        name: String,
    },
    /// A `description` that is not a string.
    #[error("\"description\" must be a string")]
    DescriptionNotString,
    /// `parameters` that is not a JSON Schema object.
    #[error("\"parameters\" must be a JSON Schema object, found {found}")]
    ParametersNotObject {
        /// What it was instead.
        found: &'static str,
    },
    /// A `strict` that is not a boolean.
    #[error("\"strict\" must be a boolean")]
    StrictNotBoolean,
    /// A field the wire type cannot carry; dropping it silently would change the tool.
    #[error("has field {field:?}, which Aptix does not send")]
    UnsupportedField {
        /// The field's name.
        field: String,
    },
}

//! [`SchemaError`]: why a schema-constrained Request could not be prepared.
//!
//! Every variant names the input at fault as a field (a message index and its content
//! type, a JSON pointer into the schema, an option key), so a caller can point at it
//! without parsing the message. Problems with the model's *answer* are not errors of
//! this kind: they are [`AttemptFailure`](super::AttemptFailure)s, fed back to the model.

/// Why a schema-constrained Request could not be prepared.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// A message's content has a custom type that no handler is registered for.
    /// Unknown types are never stringified: the model would see JSON it was not meant to.
    #[error(
        "message {index} has content type {content_type:?}, which no handler is registered for"
    )]
    UnknownContentType {
        /// The message's 0-based position in the context.
        index: usize,
        /// The content's `type`.
        content_type: String,
    },
    /// A content handler rejected its message.
    #[error("message {index} of content type {content_type:?} was rejected: {reason}")]
    Handler {
        /// The message's 0-based position in the context.
        index: usize,
        /// The content's `type`.
        content_type: String,
        /// What the handler reported.
        reason: String,
    },
    /// After every handler ran there was no message left to send.
    #[error("the context has no messages to send after its handlers ran")]
    EmptyContext,
    /// The model id is empty or blank (after the handlers ran).
    #[error("the model id is blank")]
    BlankModel,
    /// The temperature is outside `0..=2` or not a number.
    #[error("temperature {value} is outside 0..=2")]
    InvalidTemperature {
        /// The value given.
        value: f64,
    },
    /// `top_p` is outside `0..=1` or not a number.
    #[error("top_p {value} is outside 0..=1")]
    InvalidTopP {
        /// The value given.
        value: f64,
    },
    /// `max_output_tokens` is below the API's minimum.
    #[error("max_output_tokens {value} is below the minimum of {minimum}")]
    MaxOutputTokensTooSmall {
        /// The value given.
        value: u64,
        /// The smallest value the API accepts.
        minimum: u64,
    },
    /// An extra option names a field that the Request itself sets; sending both would
    /// put the key twice in the body.
    #[error("option {key:?} is set by the request itself and cannot be given as an extra option")]
    ReservedOption {
        /// The option's key.
        key: String,
    },
    /// The schema's name does not match `^[a-zA-Z0-9_-]{1,64}$`.
    #[error("schema name {name:?} must be 1 to 64 letters, digits, '_' or '-'")]
    InvalidSchemaName {
        /// The name given.
        name: String,
    },
    /// The schema is not a JSON object, or the JSON Schema validator rejects it.
    #[error("the schema is invalid: {reason}")]
    InvalidSchema {
        /// What is wrong with it.
        reason: String,
    },
    /// The schema cannot be normalised for strict mode (native output, strict tools).
    #[error("the schema cannot be made strict at {pointer:?}: {reason}")]
    NotStrict {
        /// JSON pointer into the schema, `""` for the root.
        pointer: String,
        /// What strict mode cannot express there.
        reason: String,
    },
    /// An ordinary tool is invalid (name, parameters) or two share a name.
    #[error("tool {index} is invalid: {reason}")]
    InvalidTool {
        /// The tool's 0-based position among the request's tools.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The request carries ordinary tools and the provider cannot take function tools.
    #[error("the request carries {count} tools but the provider cannot take function tools")]
    ToolsUnsupported {
        /// How many tools the request carries.
        count: usize,
    },
}

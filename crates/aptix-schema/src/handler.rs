//! Content-type handlers: the [`ContentHandler`] trait, the [`HandlerRegistry`] that
//! maps a custom content `type` to its handler, and [`process`], which runs the context
//! through them.
//!
//! Processing is a left fold over the messages, in order. Plain messages are lowered to
//! wire messages as they are; a custom message is given to its handler together with a
//! [`HandlerContext`] holding the state left by every earlier message: the LLM
//! configuration, the schema, and the output messages built so far. The handler may
//! change all three: render its content as text, add messages, drop earlier ones,
//! change the model or the schema. A handler never sees later messages, so the result
//! depends only on the order of the context: when two messages change the same setting,
//! the later one wins.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use aptix_model::wire::{ContentPart, FunctionTool, InputMessage, MessageContent, Role};
use serde_json::Value;

use super::context::{Content, CustomContent, LlmConfig, SchemaRequest};
use super::error::SchemaError;

/// What a handler reports when its content is unusable. The processing error adds the
/// message's index and content type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct HandlerError {
    /// A lowercase sentence saying what is wrong.
    pub reason: String,
}

impl HandlerError {
    /// An error with this reason.
    pub fn new(reason: impl Into<String>) -> HandlerError {
        HandlerError {
            reason: reason.into(),
        }
    }
}

impl From<String> for HandlerError {
    fn from(reason: String) -> HandlerError {
        HandlerError { reason }
    }
}

/// Turns one custom content type into what the model sees, and may change the
/// Request's configuration and schema on the way.
///
/// Closures `Fn(&CustomContent, &mut HandlerContext<'_>) -> Result<(), HandlerError>`
/// are handlers too.
pub trait ContentHandler: Send + Sync {
    /// Processes one message whose content has this handler's type. Emitting nothing
    /// drops the message.
    fn handle(
        &self,
        content: &CustomContent,
        cx: &mut HandlerContext<'_>,
    ) -> Result<(), HandlerError>;
}

impl<F> ContentHandler for F
where
    F: Fn(&CustomContent, &mut HandlerContext<'_>) -> Result<(), HandlerError> + Send + Sync,
{
    fn handle(
        &self,
        content: &CustomContent,
        cx: &mut HandlerContext<'_>,
    ) -> Result<(), HandlerError> {
        self(content, cx)
    }
}

/// What a handler may read and change while it processes one message.
pub struct HandlerContext<'a> {
    index: usize,
    role: &'a Role,
    config: &'a mut LlmConfig,
    schema: &'a mut Value,
    output: &'a mut Vec<InputMessage>,
}

impl HandlerContext<'_> {
    /// The message's 0-based position in the context.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The message's role.
    pub fn role(&self) -> &Role {
        self.role
    }

    /// The configuration as earlier messages left it.
    pub fn config(&self) -> &LlmConfig {
        self.config
    }

    /// The configuration, to change.
    pub fn config_mut(&mut self) -> &mut LlmConfig {
        self.config
    }

    /// The schema as earlier messages left it.
    pub fn schema(&self) -> &Value {
        self.schema
    }

    /// The schema, to change.
    pub fn schema_mut(&mut self) -> &mut Value {
        self.schema
    }

    /// The messages to send, as far as they are built.
    pub fn messages(&self) -> &[InputMessage] {
        self.output
    }

    /// The messages to send, to add to, change or drop from.
    pub fn messages_mut(&mut self) -> &mut Vec<InputMessage> {
        self.output
    }

    /// Appends a text message from `role`, with the part type the API wants for it.
    pub fn push_text(&mut self, role: Role, text: impl Into<String>) {
        self.output.push(text_message(role, text.into()));
    }

    /// Appends a text message with this message's role.
    pub fn push_text_as_is(&mut self, text: impl Into<String>) {
        let role = self.role.clone();
        self.push_text(role, text);
    }
}

/// A text message with the part type the API accepts for its role: `output_text` for the
/// assistant (an `input_text` there is a 400), `input_text` for everyone else.
pub(crate) fn text_message(role: Role, text: String) -> InputMessage {
    let part = if role == Role::Assistant {
        ContentPart::output_text(text)
    } else {
        ContentPart::input_text(text)
    };
    InputMessage::new(role, vec![part])
}

/// The handlers of a Request, by content type.
///
/// [`HandlerRegistry::default`] holds the built-in handlers (`state`, `file`,
/// `require_fields` and `config`, described in `docs/schema-request.md`);
/// [`HandlerRegistry::empty`] none.
#[derive(Clone)]
pub struct HandlerRegistry {
    handlers: BTreeMap<String, Arc<dyn ContentHandler>>,
}

impl Default for HandlerRegistry {
    fn default() -> HandlerRegistry {
        super::handlers::builtin()
    }
}

impl fmt::Debug for HandlerRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.handlers.keys()).finish()
    }
}

impl HandlerRegistry {
    /// A registry with no handlers.
    pub fn empty() -> HandlerRegistry {
        HandlerRegistry {
            handlers: BTreeMap::new(),
        }
    }

    /// Registers `handler` for `content_type`, replacing and returning any earlier one.
    pub fn register(
        &mut self,
        content_type: impl Into<String>,
        handler: impl ContentHandler + 'static,
    ) -> Option<Arc<dyn ContentHandler>> {
        self.handlers.insert(content_type.into(), Arc::new(handler))
    }

    /// [`register`](Self::register), by value.
    #[must_use]
    pub fn with(
        mut self,
        content_type: impl Into<String>,
        handler: impl ContentHandler + 'static,
    ) -> HandlerRegistry {
        self.register(content_type, handler);
        self
    }

    /// The handler for `content_type`.
    pub fn get(&self, content_type: &str) -> Option<&Arc<dyn ContentHandler>> {
        self.handlers.get(content_type)
    }

    /// The registered content types, sorted.
    pub fn content_types(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }
}

/// A Request after its handlers ran: what goes on the wire, before a strategy shapes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Processed {
    /// The final configuration.
    pub config: LlmConfig,
    /// The final schema.
    pub schema: Value,
    /// The schema's wire name.
    pub name: String,
    /// What the solution is for.
    pub description: Option<String>,
    /// The final messages, as wire messages.
    pub messages: Vec<InputMessage>,
    /// Ordinary function tools.
    pub tools: Vec<FunctionTool>,
}

/// Runs the context through the handlers, in message order.
///
/// Plain text becomes one `input_text` part (`output_text` for the assistant); parts are
/// kept as given, except that `input_text` parts of assistant messages become
/// `output_text`. A custom type without a handler is
/// [`SchemaError::UnknownContentType`]; a handler's error is [`SchemaError::Handler`];
/// both name the message's index. No messages left at the end is
/// [`SchemaError::EmptyContext`].
pub fn process(
    request: SchemaRequest,
    registry: &HandlerRegistry,
) -> Result<Processed, SchemaError> {
    let SchemaRequest {
        mut config,
        context,
        mut schema,
        name,
        description,
        tools,
    } = request;
    let mut output = Vec::with_capacity(context.len());
    for (index, message) in context.into_iter().enumerate() {
        match message.content {
            Content::Text(text) => output.push(text_message(message.role, text)),
            Content::Parts(parts) => output.push(parts_message(message.role, parts)),
            Content::Custom(custom) => {
                let handler = registry.get(&custom.content_type).ok_or_else(|| {
                    SchemaError::UnknownContentType {
                        index,
                        content_type: custom.content_type.clone(),
                    }
                })?;
                let mut cx = HandlerContext {
                    index,
                    role: &message.role,
                    config: &mut config,
                    schema: &mut schema,
                    output: &mut output,
                };
                handler
                    .handle(&custom, &mut cx)
                    .map_err(|error| SchemaError::Handler {
                        index,
                        content_type: custom.content_type.clone(),
                        reason: error.reason,
                    })?;
            }
        }
    }
    if output.is_empty() {
        return Err(SchemaError::EmptyContext);
    }
    Ok(Processed {
        config,
        schema,
        name,
        description,
        messages: output,
        tools,
    })
}

fn parts_message(role: Role, parts: Vec<ContentPart>) -> InputMessage {
    let parts = if role == Role::Assistant {
        parts
            .into_iter()
            .map(|part| match part {
                ContentPart::InputText { text } => ContentPart::output_text(text),
                other => other,
            })
            .collect()
    } else {
        parts
    };
    InputMessage {
        role,
        content: MessageContent::Parts(parts),
        id: None,
        status: None,
    }
}

//! The built-in content handlers, registered by
//! [`HandlerRegistry::default`](super::HandlerRegistry::default):
//!
//! | `type` | fields | effect |
//! |---|---|---|
//! | `state` | `state` (object), `label` (optional) | the object rendered as labelled, fenced JSON, with the message's role |
//! | `file` | `path`, `content`, `lines` (`{start,end}`, optional), `language`, `id` (optional) | an AGN-002 `[CONTEXT]` block holding the file as one chunk |
//! | `require_fields` | `fields` (names), `at` (JSON pointer, optional) | makes the listed properties of the schema object at `at` required; sends nothing |
//! | `config` | `model`, `temperature`, `top_p`, `max_output_tokens`, `reasoning_effort`, `options` | changes the LLM configuration (a `null` unsets); sends nothing |
//!
//! Every handler rejects fields it does not know, so a misspelt field is an error, not
//! a silent no-op.

mod config;
mod file;
mod require_fields;
mod state;

pub(crate) use config::ConfigHandler;
pub(crate) use file::FileHandler;
pub(crate) use require_fields::RequireFieldsHandler;
pub(crate) use state::StateHandler;

use super::context::CustomContent;
use super::handler::{HandlerError, HandlerRegistry};

/// The registry with every built-in handler under its type name.
pub(crate) fn builtin() -> HandlerRegistry {
    HandlerRegistry::empty()
        .with(StateHandler::TYPE, StateHandler)
        .with(FileHandler::TYPE, FileHandler)
        .with(RequireFieldsHandler::TYPE, RequireFieldsHandler)
        .with(ConfigHandler::TYPE, ConfigHandler)
}

/// Rejects any field not in `known`.
fn check_fields(content: &CustomContent, known: &[&str]) -> Result<(), HandlerError> {
    match content
        .fields
        .keys()
        .find(|name| !known.contains(&name.as_str()))
    {
        Some(name) => Err(HandlerError::new(format!(
            "unknown field {name:?}; expected one of {known:?}"
        ))),
        None => Ok(()),
    }
}

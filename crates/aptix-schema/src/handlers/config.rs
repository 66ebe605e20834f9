//! The `config` handler: `{"type":"config","model":"gpt-4o","temperature":0.2}` changes
//! the LLM configuration and sends nothing. Each field given replaces the setting; an
//! explicit `null` unsets it; `options` entries are merged key by key (a `null` value
//! removes the key). Values are checked when the request is assembled, after every
//! handler ran, so a later message can still correct an earlier one.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::check_fields;
use crate::context::CustomContent;
use crate::handler::{ContentHandler, HandlerContext, HandlerError};

/// Changes model settings from the context.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ConfigHandler;

impl ConfigHandler {
    /// The content type it handles.
    pub(crate) const TYPE: &'static str = "config";
}

impl ContentHandler for ConfigHandler {
    fn handle(
        &self,
        content: &CustomContent,
        cx: &mut HandlerContext<'_>,
    ) -> Result<(), HandlerError> {
        check_fields(
            content,
            &[
                "model",
                "temperature",
                "top_p",
                "max_output_tokens",
                "reasoning_effort",
                "options",
            ],
        )?;
        let config = cx.config_mut();
        if let Some(model) = setting::<String>(content, "model")? {
            config.model = model.unwrap_or_default();
        }
        if let Some(temperature) = setting(content, "temperature")? {
            config.temperature = temperature;
        }
        if let Some(top_p) = setting(content, "top_p")? {
            config.top_p = top_p;
        }
        if let Some(tokens) = setting(content, "max_output_tokens")? {
            config.max_output_tokens = tokens;
        }
        if let Some(effort) = setting(content, "reasoning_effort")? {
            config.reasoning_effort = effort;
        }
        if let Some(options) = setting::<serde_json::Map<String, Value>>(content, "options")? {
            for (key, value) in options.unwrap_or_default() {
                if value.is_null() {
                    config.options.remove(&key);
                } else {
                    config.options.insert(key, value);
                }
            }
        }
        Ok(())
    }
}

/// `None` when the field is absent, `Some(None)` when it is `null`, `Some(Some(value))`
/// otherwise.
fn setting<T: DeserializeOwned>(
    content: &CustomContent,
    name: &str,
) -> Result<Option<Option<T>>, HandlerError> {
    match content.get(name) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(value) => T::deserialize(value)
            .map(|value| Some(Some(value)))
            .map_err(|error| HandlerError::new(format!("field {name:?} is invalid: {error}"))),
    }
}

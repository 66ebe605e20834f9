//! The `state` handler: `{"type":"state","state":{...},"label":"cart"}` becomes a text
//! message with the message's role:
//!
//! ````text
//! [STATE: cart]
//! ```json
//! {
//!   "items": 2
//! }
//! ```
//! ````
//!
//! The JSON is pretty-printed with sorted keys, so the same state always renders the
//! same text, and fenced with a fence longer than any backtick run inside it, so a
//! string in the state cannot close the block.

use aptix_rag::text::{push_fenced, push_single_line};
use serde_json::Value;

use super::check_fields;
use crate::context::CustomContent;
use crate::handler::{ContentHandler, HandlerContext, HandlerError};

/// Renders a state object as labelled JSON.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StateHandler;

impl StateHandler {
    /// The content type it handles.
    pub(crate) const TYPE: &'static str = "state";
}

impl ContentHandler for StateHandler {
    fn handle(
        &self,
        content: &CustomContent,
        cx: &mut HandlerContext<'_>,
    ) -> Result<(), HandlerError> {
        check_fields(content, &["state", "label"])?;
        let state = match content.get("state") {
            Some(state @ Value::Object(_)) => state,
            Some(_) => return Err(HandlerError::new("field \"state\" must be an object")),
            None => return Err(HandlerError::new("field \"state\" is missing")),
        };
        let label: Option<String> = content.field("label")?;
        cx.push_text_as_is(render_state(state, label.as_deref()));
        Ok(())
    }
}

/// The text a state renders to.
pub(crate) fn render_state(state: &Value, label: Option<&str>) -> String {
    let mut out = String::from("[STATE");
    if let Some(label) = label.filter(|label| !label.trim().is_empty()) {
        out.push_str(": ");
        push_single_line(&mut out, label);
    }
    out.push_str("]\n");
    // Serialising a `Value` cannot fail; the fallback keeps this total anyway.
    // Sorted, so the text is the same whatever serde_json's features.
    let state = aptix_model::canonical::sorted(state);
    let json = serde_json::to_string_pretty(&state).unwrap_or_else(|_| state.to_string());
    push_fenced(&mut out, "json", &json);
    out.truncate(out.trim_end_matches('\n').len());
    out
}

//! The `require_fields` handler, an example of a handler that narrows the schema:
//! `{"type":"require_fields","fields":["email"],"at":"/properties/user"}` makes the
//! listed properties of the object schema at JSON pointer `at` (the root when absent)
//! required. It sends nothing to the model.
//!
//! A field that the object does not declare is an error: requiring it would make the
//! schema ask for a property it never describes.

use serde_json::Value;

use super::check_fields;
use crate::context::CustomContent;
use crate::handler::{ContentHandler, HandlerContext, HandlerError};

/// Makes listed schema properties required.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequireFieldsHandler;

impl RequireFieldsHandler {
    /// The content type it handles.
    pub(crate) const TYPE: &'static str = "require_fields";
}

impl ContentHandler for RequireFieldsHandler {
    fn handle(
        &self,
        content: &CustomContent,
        cx: &mut HandlerContext<'_>,
    ) -> Result<(), HandlerError> {
        check_fields(content, &["fields", "at"])?;
        let fields: Vec<String> = content.required_field("fields")?;
        let at: String = content.field("at")?.unwrap_or_default();
        let target = cx
            .schema_mut()
            .pointer_mut(&at)
            .ok_or_else(|| HandlerError::new(format!("the schema has nothing at {at:?}")))?;
        require(target, &fields).map_err(|reason| HandlerError::new(format!("at {at:?}: {reason}")))
    }
}

/// Adds `fields` to the `required` list of the object schema `target`, keeping its
/// order and adding each name once.
fn require(target: &mut Value, fields: &[String]) -> Result<(), String> {
    let Value::Object(object) = target else {
        return Err("the schema there is not an object schema".to_owned());
    };
    let declared = object.get("properties").and_then(Value::as_object);
    if let Some(missing) = fields
        .iter()
        .find(|field| !declared.is_some_and(|properties| properties.contains_key(*field)))
    {
        return Err(format!(
            "property {missing:?} is not declared in \"properties\""
        ));
    }
    let required = object
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(required) = required else {
        return Err("\"required\" is not an array".to_owned());
    };
    for field in fields {
        if !required.iter().any(|name| name.as_str() == Some(field)) {
            required.push(Value::String(field.clone()));
        }
    }
    Ok(())
}

//! Function tools: reading AGN-003's `ToolsJson` and checking typed tools.
//!
//! AGN-003 section 6.1 skips elements that are not objects and silently drops the whole
//! list when it does not parse. That is how a broken tool list once went unnoticed: the
//! model simply never called the tool. Here every problem is an error naming the
//! element's index and the reason, and the caller decides what to do.

use std::collections::HashMap;

use aptix_model::json_kind;
use aptix_model::wire::FunctionTool;
use serde_json::{Map, Value};

use crate::error::{RequestError, ToolProblem};

/// The fields a flat function tool may carry, as far as [`FunctionTool`] can send them.
const KNOWN_FIELDS: &[&str] = &["type", "name", "description", "parameters", "strict"];

/// Parses `ToolsJson`: a JSON array of flat Responses function tools,
/// `{"type":"function","name":...,"description":...,"parameters":{...},"strict":...}`.
///
/// Rejected, with the element's index and the reason: an element that is not an object,
/// the Chat Completions shape (`{"type":"function","function":{...}}`), a missing or
/// non-`function` `type`, a missing name or one not matching `^[a-zA-Z0-9_-]{1,64}$`,
/// a non-string description, `parameters` that is not an object, a non-boolean `strict`,
/// any other field (it could not be sent, and dropping it would change the tool), and a
/// name used twice. A missing `strict` reads as `true`, which is what the Responses API
/// does with it; the request then always states it.
///
/// ```
/// use aptix_request::{parse_tools_json, RequestError, ToolProblem};
///
/// let tools = parse_tools_json(r#"[{"type":"function","name":"search","parameters":{"type":"object"}}]"#)?;
/// assert_eq!(tools[0].name, "search");
/// assert!(tools[0].strict);
///
/// let nested = parse_tools_json(r#"[{"type":"function","function":{"name":"search"}}]"#);
/// assert_eq!(
///     nested,
///     Err(RequestError::InvalidTool { index: 0, problem: ToolProblem::ChatCompletionsShape }),
/// );
/// # Ok::<(), RequestError>(())
/// ```
pub fn parse_tools_json(tools_json: &str) -> Result<Vec<FunctionTool>, RequestError> {
    let document: Value =
        serde_json::from_str(tools_json).map_err(|error| RequestError::ToolsJsonSyntax {
            line: error.line(),
            column: error.column(),
            message: error.to_string(),
        })?;
    let Value::Array(elements) = document else {
        return Err(RequestError::ToolsJsonNotArray {
            found: json_kind(&document),
        });
    };
    let tools = elements
        .into_iter()
        .enumerate()
        .map(|(index, element)| {
            parse_tool(element).map_err(|problem| RequestError::InvalidTool { index, problem })
        })
        .collect::<Result<Vec<_>, _>>()?;
    check_function_tools(tools.iter().enumerate())?;
    Ok(tools)
}

fn parse_tool(element: Value) -> Result<FunctionTool, ToolProblem> {
    let Value::Object(mut object) = element else {
        return Err(ToolProblem::NotAnObject {
            found: json_kind(&element),
        });
    };
    if object.get("function").is_some_and(Value::is_object) {
        return Err(ToolProblem::ChatCompletionsShape);
    }
    match object.get("type") {
        None => return Err(ToolProblem::MissingType),
        Some(Value::String(kind)) if kind == "function" => {}
        Some(Value::String(kind)) => {
            return Err(ToolProblem::UnsupportedType {
                type_name: kind.clone(),
            });
        }
        Some(other) => {
            return Err(ToolProblem::UnsupportedType {
                type_name: other.to_string(),
            });
        }
    }
    if let Some(field) = object
        .keys()
        .find(|key| !KNOWN_FIELDS.contains(&key.as_str()))
    {
        return Err(ToolProblem::UnsupportedField {
            field: field.clone(),
        });
    }
    let name = match object.remove("name") {
        Some(Value::String(name)) => name,
        _ => return Err(ToolProblem::MissingName),
    };
    check_name(&name)?;
    let description = match object.remove("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(_) => return Err(ToolProblem::DescriptionNotString),
    };
    let parameters = match object.remove("parameters") {
        None | Some(Value::Null) => None,
        Some(Value::Object(schema)) => Some(Value::Object(schema)),
        Some(other) => {
            return Err(ToolProblem::ParametersNotObject {
                found: json_kind(&other),
            });
        }
    };
    let strict = strict_field(&object)?;
    Ok(FunctionTool {
        name,
        description,
        parameters,
        strict,
    })
}

fn strict_field(object: &Map<String, Value>) -> Result<bool, ToolProblem> {
    match object.get("strict") {
        // The Responses API reads an omitted (or null) `strict` as true.
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(strict)) => Ok(*strict),
        Some(_) => Err(ToolProblem::StrictNotBoolean),
    }
}

/// Checks typed function tools with the rules `parse_tools_json` applies: a valid name,
/// `parameters` an object when present, and no name used twice.
///
/// `tools` yields each function tool with its index in the caller's list, so errors
/// name the position the caller knows (hosted tools in between keep their places).
pub(crate) fn check_function_tools<'a>(
    tools: impl IntoIterator<Item = (usize, &'a FunctionTool)>,
) -> Result<(), RequestError> {
    let mut first_index_of: HashMap<&str, usize> = HashMap::new();
    for (index, tool) in tools {
        check_name(&tool.name).map_err(|problem| RequestError::InvalidTool { index, problem })?;
        if let Some(parameters) = &tool.parameters
            && !parameters.is_object()
        {
            return Err(RequestError::InvalidTool {
                index,
                problem: ToolProblem::ParametersNotObject {
                    found: json_kind(parameters),
                },
            });
        }
        if let Some(&first_index) = first_index_of.get(tool.name.as_str()) {
            return Err(RequestError::DuplicateToolName {
                index,
                first_index,
                name: tool.name.clone(),
            });
        }
        first_index_of.insert(&tool.name, index);
    }
    Ok(())
}

fn check_name(name: &str) -> Result<(), ToolProblem> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(ToolProblem::InvalidName {
            name: name.to_owned(),
        })
    }
}

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`, the API's rule for function tool
/// and `json_schema` format names.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-')
}

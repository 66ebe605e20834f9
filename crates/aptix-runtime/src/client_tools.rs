//! Tools the client runs, declared in a JSON file (`aptix serve --client-tools FILE`):
//! AGN-034 requests carry no tool definitions (tools are server-owned), so a service
//! learns which tools its clients run from its operator.

use std::path::Path;

use aptix_model::wire::FunctionTool;
use aptix_orchestrator::ClientTool;
use serde::Deserialize;

use crate::Error;

/// One entry of the file: a Responses API function tool, plus Aptix's `usage`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// `function`, when given (the shape the API takes, copied as it is).
    #[serde(rename = "type", default)]
    kind: Option<String>,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<serde_json::Value>,
    /// Omitted: strict when strict mode takes the schema as it is (see
    /// [`strict_compatible`]).
    #[serde(default)]
    strict: Option<bool>,
    /// Guidance for the model, rendered into the tool-usage block.
    #[serde(default)]
    usage: Option<String>,
}

/// The client tools a JSON file declares: an array of function tools as the Responses
/// API takes them (`{"type": "function", "name", "description", "parameters",
/// "strict"}`, `type` optional), each with an optional `usage`, guidance for the model.
///
/// What every turn would be refused for is refused here, once: a name the API does not
/// take, two tools of one name, a built-in tool's name, `strict: true` over a schema
/// strict mode refuses. Without `parameters` a tool takes no arguments (an empty
/// object); without `strict` it is strict when its schema allows it.
///
/// # Errors
///
/// [`Error::Config`], naming the file and the tool, when it cannot be read or is not
/// such an array.
pub fn read_client_tools(path: &Path) -> Result<Vec<ClientTool>, Error> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        Error::config(format!(
            "could not read the client tools file {}: {error}",
            path.display()
        ))
    })?;
    let wrong = |what: String| {
        Error::config(format!(
            "the client tools file {} {what}; it must be a JSON array of function tools, \
             e.g. [{{\"name\": \"apply_edit\", \"description\": \"...\", \"parameters\": \
             {{\"type\": \"object\", ...}}}}]",
            path.display()
        ))
    };
    let entries: Vec<Entry> =
        serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|error| {
            wrong(format!(
                "does not read at line {}, column {}: {}",
                error.line(),
                error.column(),
                error
            ))
        })?;
    let mut names = std::collections::HashSet::new();
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let tool = || format!("tool {} ({:?})", index + 1, entry.name);
            if !aptix_request::is_valid_name(&entry.name) {
                return Err(wrong(format!(
                    "names {}: a name is 1 to 64 ASCII letters, digits, `_` or `-`",
                    tool()
                )));
            }
            if aptix_tools::TOOL_NAMES.contains(&entry.name.as_str()) {
                return Err(wrong(format!(
                    "gives {} a built-in tool's name ({}): pick another",
                    tool(),
                    aptix_tools::TOOL_NAMES.join(", ")
                )));
            }
            if !names.insert(entry.name.clone()) {
                return Err(wrong(format!("declares {} twice", tool())));
            }
            if let Some(kind) = entry.kind.as_deref().filter(|kind| *kind != "function") {
                return Err(wrong(format!(
                    "gives tool {} ({:?}) the type {kind:?}: only function tools run on the client",
                    index + 1,
                    entry.name
                )));
            }
            if let Some(parameters) = &entry.parameters
                && !parameters.is_object()
            {
                return Err(wrong(format!(
                    "gives tool {} ({:?}) parameters that are not a JSON Schema object",
                    index + 1,
                    entry.name
                )));
            }
            // The API requires `parameters`: none is a tool of no arguments.
            let parameters = entry.parameters.unwrap_or_else(|| {
                serde_json::json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
            });
            let compatible = strict_compatible(&parameters);
            if entry.strict == Some(true) && !compatible {
                return Err(wrong(format!(
                    "asks strict mode for {}, whose parameters strict mode refuses (every \
                     object needs \"additionalProperties\": false and all its properties in \
                     \"required\"): fix the schema, or set \"strict\": false",
                    tool()
                )));
            }
            Ok(ClientTool {
                definition: FunctionTool {
                    name: entry.name,
                    description: entry.description,
                    parameters: Some(parameters),
                    strict: entry.strict.unwrap_or(compatible),
                },
                usage: entry.usage,
            })
        })
        .collect()
}

/// Whether strict mode takes `schema` as it is: the strict-mode normaliser of
/// `aptix-schema` (the one home of strict mode's rules) accepts it and changes nothing,
/// neither a keyword removed nor an object closed nor an optional property made
/// required. A schema it would have to change is not sent as strict, since the client
/// would then get arguments of another shape than its schema says (a `null` for an
/// absent member).
fn strict_compatible(schema: &serde_json::Value) -> bool {
    aptix_request::normalize_strict(schema).is_ok_and(|strict| strict.wire == *schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Vec<ClientTool>, Error> {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        read_client_tools(file.path())
    }

    #[test]
    fn function_tools_are_read_as_the_api_takes_them() {
        let tools = read(
            r#"[{"type": "function", "name": "apply_edit", "description": "Edit a file",
                 "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                "required": ["path"], "additionalProperties": false},
                 "usage": "Apply one edit at a time."},
                {"name": "run_tests", "strict": false}]"#,
        )
        .unwrap();
        assert_eq!(tools.len(), 2);
        assert_eq!(tools[0].definition.name, "apply_edit");
        assert!(tools[0].definition.strict, "strict unless it says not");
        assert_eq!(tools[0].usage.as_deref(), Some("Apply one edit at a time."));
        assert_eq!(tools[1].definition.name, "run_tests");
        assert!(!tools[1].definition.strict);
        // No parameters: a tool of no arguments, which the API requires spelt out.
        assert_eq!(
            tools[1].definition.parameters,
            Some(
                serde_json::json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
            )
        );
    }

    #[test]
    fn an_omitted_strict_is_strict_only_where_the_schema_allows_it() {
        let tools = read(
            r#"[{"name": "closed", "parameters": {"type": "object",
                   "properties": {"a": {"type": "array", "items": {"type": "object",
                       "properties": {"b": {"type": "string"}}, "required": ["b"],
                       "additionalProperties": false}}},
                   "required": ["a"], "additionalProperties": false}},
                {"name": "open", "parameters": {"type": "object",
                   "properties": {"a": {"type": "string"}}}},
                {"name": "nested_open", "parameters": {"type": "object",
                   "properties": {"a": {"type": "object", "properties": {}}},
                   "required": ["a"], "additionalProperties": false}},
                {"name": "no_arguments"}]"#,
        )
        .unwrap();
        let strict: Vec<bool> = tools.iter().map(|tool| tool.definition.strict).collect();
        assert_eq!(strict, [true, false, false, true]);
        let error = read(
            r#"[{"name": "open", "strict": true, "parameters": {"type": "object",
                   "properties": {"a": {"type": "string"}}}}]"#,
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("asks strict mode for tool 1 (\"open\")"),
            "{error}"
        );
    }

    #[test]
    fn a_file_that_is_not_an_array_of_function_tools_says_where() {
        for (text, says) in [
            ("{\"name\": \"x\"}", "does not read at line 1"),
            (
                "[{\"name\": \"x\", \"paramaters\": {}}]",
                "unknown field `paramaters`",
            ),
            (
                "[{\"type\": \"web_search\", \"name\": \"x\"}]",
                "the type \"web_search\"",
            ),
            (
                "[{\"name\": \"x\", \"parameters\": []}]",
                "not a JSON Schema object",
            ),
            ("[{\"description\": \"no name\"}]", "missing field `name`"),
            ("[{\"name\": \"read_file\"}]", "a built-in tool's name"),
            ("[{\"name\": \"has space\"}]", "a name is 1 to 64"),
            (
                "[{\"name\": \"a\"}, {\"name\": \"a\"}]",
                "declares tool 2 (\"a\") twice",
            ),
        ] {
            let error = read(text).unwrap_err().to_string();
            assert!(error.contains("the client tools file"), "{error}");
            assert!(error.contains(says), "{text}: {error}");
        }
        let error = read_client_tools(Path::new("no-such-tools.json"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("could not read the client tools file no-such-tools.json"),
            "{error}"
        );
    }
}

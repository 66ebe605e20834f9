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
    /// As on the API, an omitted `strict` is `true`.
    #[serde(default)]
    strict: Option<bool>,
    /// Guidance for the model, rendered into the tool-usage block.
    #[serde(default)]
    usage: Option<String>,
}

/// The client tools a JSON file declares: an array of function tools as the Responses
/// API takes them (`{"type": "function", "name", "description", "parameters",
/// "strict"}`, `type` optional), each with an optional `usage`, guidance for the model.
/// Names are checked (the API's rule, no two alike, none a built-in tool's) when the
/// orchestrator is built.
///
/// # Errors
///
/// [`Error::Io`] when the file cannot be read; [`Error::Config`], naming the file and
/// where, when it is not such an array.
pub fn read_client_tools(path: &Path) -> Result<Vec<ClientTool>, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        action: "read the client tools file",
        path: path.to_owned(),
        source,
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
    entries
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
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
            Ok(ClientTool {
                definition: FunctionTool {
                    name: entry.name,
                    description: entry.description,
                    parameters: entry.parameters,
                    strict: entry.strict.unwrap_or(true),
                },
                usage: entry.usage,
            })
        })
        .collect()
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
        assert_eq!(tools[1].definition.parameters, None);
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
        ] {
            let error = read(text).unwrap_err().to_string();
            assert!(error.contains("the client tools file"), "{error}");
            assert!(error.contains(says), "{text}: {error}");
        }
        let error = read_client_tools(Path::new("no-such-tools.json"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("no-such-tools.json"), "{error}");
    }
}

//! How a tool call looks in an editor: its kind, a title a person reads, the workspace
//! files it touched, and a one-line summary of its result. Knows the built-in tools by
//! name; any other tool is shown by its name alone.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdateFields, ToolKind,
};
use serde_json::Value;

/// The arguments as JSON, or `Null` when the model's text does not parse.
pub(crate) fn arguments(arguments_json: &str) -> Value {
    serde_json::from_str(arguments_json).unwrap_or(Value::Null)
}

/// The ACP kind of a tool.
pub(crate) fn kind(name: &str) -> ToolKind {
    match name {
        "search_code" | "list_files" => ToolKind::Search,
        "read_file" => ToolKind::Read,
        _ => ToolKind::Other,
    }
}

/// The title: what the call does, with its main argument when known.
pub(crate) fn title(name: &str, arguments: &Value) -> String {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str);
    let line = |key: &str| arguments.get(key).and_then(Value::as_u64);
    match name {
        "search_code" => match text("query") {
            Some(query) => format!("Search code: {query}"),
            None => "Search code".to_owned(),
        },
        "read_file" => match (text("path"), line("start_line"), line("end_line")) {
            (Some(path), Some(start), Some(end)) => format!("Read {path} ({start}-{end})"),
            (Some(path), Some(start), None) => format!("Read {path} (from {start})"),
            (Some(path), _, _) => format!("Read {path}"),
            (None, _, _) => "Read file".to_owned(),
        },
        "list_files" => {
            let folder = text("path").filter(|path| !path.is_empty()).unwrap_or(".");
            match text("glob") {
                Some(glob) => format!("List files in {folder} matching {glob}"),
                None => format!("List files in {folder}"),
            }
        }
        // An editor's MCP server's tool (`mcp__<server>__<tool>`): the server, then
        // the tool.
        other => match other
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
        {
            Some((server, tool)) if !server.is_empty() && !tool.is_empty() => {
                format!("{server}: {tool}")
            }
            _ => other.to_owned(),
        },
    }
}

/// A workspace-relative path as the absolute path an editor opens; `None` for a path
/// that is absolute or climbs out (the tool refuses those anyway).
fn in_workspace(cwd: &Path, relative: &str) -> Option<std::path::PathBuf> {
    let path = Path::new(relative);
    let plain = path.components().all(|part| {
        matches!(
            part,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    });
    plain.then(|| cwd.join(path))
}

fn location(cwd: &Path, relative: &str, line: Option<u64>) -> Option<ToolCallLocation> {
    let path = in_workspace(cwd, relative)?;
    let line = line.and_then(|line| u32::try_from(line).ok());
    Some(ToolCallLocation::new(path).line(line))
}

/// The files a call is about, from its arguments (before it runs).
pub(crate) fn locations_of_arguments(
    cwd: &Path,
    name: &str,
    arguments: &Value,
) -> Vec<ToolCallLocation> {
    let path = arguments.get("path").and_then(Value::as_str);
    match (name, path) {
        ("read_file", Some(path)) => location(
            cwd,
            path,
            Some(
                arguments
                    .get("start_line")
                    .and_then(Value::as_u64)
                    .unwrap_or(1),
            ),
        )
        .into_iter()
        .collect(),
        ("list_files", Some(path)) if !path.is_empty() => {
            location(cwd, path, None).into_iter().collect()
        }
        _ => Vec::new(),
    }
}

/// The files a call touched, from its result (search hits, the file read).
pub(crate) fn locations_of_result(cwd: &Path, name: &str, result: &Value) -> Vec<ToolCallLocation> {
    match name {
        "search_code" => result
            .get("hits")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|hit| {
                let path = hit.get("path")?.as_str()?;
                location(cwd, path, hit.get("start_line").and_then(Value::as_u64))
            })
            .collect(),
        "read_file" => result
            .get("path")
            .and_then(Value::as_str)
            .and_then(|path| location(cwd, path, result.get("start_line").and_then(Value::as_u64)))
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// A line saying what a successful call found, for the editor's tool card.
pub(crate) fn summary(name: &str, result: &Value) -> Option<String> {
    let count = |key: &str| result.get(key).and_then(Value::as_array).map(Vec::len);
    match name {
        "search_code" => count("hits").map(|hits| match hits {
            1 => "1 match".to_owned(),
            n => format!("{n} matches"),
        }),
        "list_files" => count("files").map(|files| {
            let truncated = result.get("truncated").and_then(Value::as_bool) == Some(true);
            format!(
                "{files} file{}{}",
                if files == 1 { "" } else { "s" },
                if truncated { " (truncated)" } else { "" }
            )
        }),
        "read_file" => {
            let path = result.get("path")?.as_str()?;
            let start = result.get("start_line")?.as_u64()?;
            let end = result.get("end_line")?.as_u64()?;
            let total = result.get("total_lines")?.as_u64()?;
            Some(format!("{path}: lines {start}-{end} of {total}"))
        }
        // An MCP tool's result: its first line that says something, at most 120
        // characters.
        mcp if mcp.starts_with("mcp__") => {
            let text = match result {
                Value::String(text) => text.clone(),
                Value::Null => return None,
                other => other.to_string(),
            };
            let line = text.lines().map(str::trim).find(|line| !line.is_empty())?;
            Some(match line.char_indices().nth(120) {
                Some((cut, _)) => format!("{}…", &line[..cut]),
                None => line.to_owned(),
            })
        }
        _ => None,
    }
}

/// What a finished call of `name` shows, live or replayed: `completed` with the files
/// its result names, its one-line summary and the result itself as `rawOutput` (an
/// editor's expandable output), or `failed` with the reason the model was told.
pub(crate) fn finished(cwd: &Path, name: &str, result: Result<&str, &str>) -> ToolCallUpdateFields {
    match result {
        Ok(output) => {
            let value = arguments(output);
            let mut fields = ToolCallUpdateFields::new().status(ToolCallStatus::Completed);
            let locations = locations_of_result(cwd, name, &value);
            if !locations.is_empty() {
                fields = fields.locations(locations);
            }
            if let Some(summary) = summary(name, &value) {
                fields = fields.content(vec![ToolCallContent::from(summary)]);
            }
            fields.raw_output(value)
        }
        Err(reason) => ToolCallUpdateFields::new()
            .status(ToolCallStatus::Failed)
            .content(vec![ToolCallContent::from(reason.to_owned())])
            .raw_output(serde_json::json!({ "error": reason })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_tools_have_kinds_titles_and_locations() {
        let cwd = Path::new("/work/project");
        let read = json!({"path": "src/lib.rs", "start_line": 3, "end_line": 9});
        assert_eq!(
            title("mcp__tickets__close_ticket", &Value::Null),
            "tickets: close_ticket"
        );
        assert_eq!(title("mcp____x", &Value::Null), "mcp____x");
        assert_eq!(
            summary("mcp__tickets__add", &json!("\n  15\nmore")).as_deref(),
            Some("15")
        );
        assert_eq!(
            summary("mcp__t__x", &json!({"sum": 1})).as_deref(),
            Some(r#"{"sum":1}"#)
        );
        assert_eq!(summary("mcp__t__x", &json!("")), None);
        assert_eq!(title("my_tool", &Value::Null), "my_tool");
        assert_eq!(kind("read_file"), ToolKind::Read);
        assert_eq!(title("read_file", &read), "Read src/lib.rs (3-9)");
        let locations = locations_of_arguments(cwd, "read_file", &read);
        assert_eq!(locations.len(), 1);
        assert_eq!(locations[0].path, Path::new("/work/project/src/lib.rs"));
        assert_eq!(locations[0].line, Some(3));

        let found =
            json!({"hits": [{"path": "a.rs", "start_line": 2}, {"path": "../x", "start_line": 1}]});
        let locations = locations_of_result(cwd, "search_code", &found);
        assert_eq!(locations.len(), 1, "a path climbing out is not shown");
        assert_eq!(summary("search_code", &found).as_deref(), Some("2 matches"));
        assert_eq!(kind("search_code"), ToolKind::Search);
        assert_eq!(title("other_tool", &Value::Null), "other_tool");
        assert_eq!(kind("other_tool"), ToolKind::Other);
    }
}

//! `list_files`: the files below a workspace folder.

use aptix_orchestrator::ServerTool;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::confine::Workspace;
use crate::{ToolError, arguments, result};

/// The most files one call returns by default.
pub(crate) const DEFAULT_LIMIT: usize = 200;
/// The most files one call may ask for.
pub(crate) const MAX_LIMIT: usize = 1000;

/// The `list_files` tool.
#[derive(Debug, Clone)]
pub struct ListFiles {
    workspace: Workspace,
}

impl ListFiles {
    /// `list_files` over `workspace`.
    pub fn new(workspace: Workspace) -> ListFiles {
        ListFiles { workspace }
    }

    /// Runs the tool; the result is JSON.
    pub fn run(&self, arguments_json: &str) -> Result<Value, ToolError> {
        let args: Args = arguments(arguments_json)?;
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(ToolError::Arguments(format!(
                "limit must be 1 to {MAX_LIMIT}"
            )));
        }
        let glob = match args.glob.as_deref().filter(|g| !g.trim().is_empty()) {
            Some(pattern) => Some(
                globset::Glob::new(pattern.trim())
                    .map_err(|error| ToolError::Arguments(format!("glob {pattern:?}: {error}")))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let dir = args.path.unwrap_or_default();
        let confined = self.workspace.confine(&dir)?;
        if !confined.absolute.is_dir() {
            return Err(ToolError::WrongType {
                path: dir,
                expected: "is a file; use read_file to read it",
            });
        }
        let files = self.workspace.files();
        let keep = |path: &str| {
            !files.holds_secrets(path)
                && glob.as_ref().is_none_or(|glob| {
                    glob.is_match(path)
                        || path
                            .rsplit('/')
                            .next()
                            .is_some_and(|name| glob.is_match(name))
                })
        };
        let listing = files.list(&confined.relative, &keep, limit);
        let mut value = json!({
            "path": if confined.relative.is_empty() { "." } else { confined.relative.as_str() },
            "files": listing.files,
            "truncated": listing.truncated,
        });
        if listing.truncated {
            value["note"] = Value::String(format!(
                "more files than the limit of {limit}; narrow the folder or the glob"
            ));
        }
        Ok(value)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait]
impl ServerTool for ListFiles {
    fn name(&self) -> &str {
        "list_files"
    }

    fn description(&self) -> &str {
        "List the files below a folder of the workspace, recursively, optionally filtered by a glob."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Folder relative to the workspace root (default: the root)"},
                "glob": {"type": "string", "description": "Keep paths (or file names) matching this glob, e.g. *.rs or crates/*/Cargo.toml"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "The most files to return (default 200)"}
            },
            "additionalProperties": false
        })
    }

    fn usage(&self) -> Option<&str> {
        Some(
            "list_files: see which files a folder holds (recursively; paths relative to the workspace root) before reading them; narrow with glob. Ignored and secret files are not listed.",
        )
    }

    async fn execute(&self, arguments_json: &str) -> Result<String, String> {
        let value = self
            .run(arguments_json)
            .map_err(|error| error.to_string())?;
        result(&value)
    }
}

//! `search_code`: the workspace index, ranked chunks for a query.

use aptix_index::{SearchQuery, WorkspaceIndex};
use aptix_model::contract::ScopeCondition;
use aptix_orchestrator::ServerTool;
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{ToolError, arguments, result};

/// Chunks returned by default.
pub(crate) const DEFAULT_LIMIT: usize = 8;
/// The most chunks one call may ask for.
pub(crate) const MAX_LIMIT: usize = 30;
/// The most lines of each chunk's text shown.
const MAX_CHUNK_LINES: usize = 40;

/// The `search_code` tool.
#[derive(Debug, Clone)]
pub struct SearchCode {
    index: WorkspaceIndex,
}

impl SearchCode {
    /// `search_code` over `index` (searched as it is; refresh it before the turn).
    pub fn new(index: WorkspaceIndex) -> SearchCode {
        SearchCode { index }
    }

    /// Runs the tool; the result is JSON.
    pub fn run(&self, arguments_json: &str) -> Result<Value, ToolError> {
        let args: Args = arguments(arguments_json)?;
        if args.query.trim().is_empty() {
            return Err(ToolError::Arguments("query is empty".to_owned()));
        }
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(ToolError::Arguments(format!(
                "limit must be 1 to {MAX_LIMIT}"
            )));
        }
        let scope = args
            .scope
            .iter()
            .map(|text| ScopeCondition::parse(text))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| ToolError::Arguments(error.to_string()))?;
        let results = self
            .index
            .search(
                &SearchQuery::new(args.query)
                    .with_scope(scope)
                    .with_limit(limit),
            )
            .map_err(|error| ToolError::Search(error.to_string()))?;
        let hits: Vec<Value> = results
            .hits
            .iter()
            .map(|hit| {
                let chunk = &hit.chunk;
                let total = chunk.content.lines().count();
                let mut text: String = chunk
                    .content
                    .lines()
                    .take(MAX_CHUNK_LINES)
                    .collect::<Vec<_>>()
                    .join("\n");
                if total > MAX_CHUNK_LINES {
                    text.push_str("\n... (use read_file for the rest)");
                }
                json!({
                    "path": chunk.path,
                    "start_line": chunk.lines.start(),
                    "end_line": chunk.lines.end(),
                    "kind": chunk.metadata.get("kind"),
                    "symbol": chunk.metadata.get("symbol"),
                    "score": hit.score,
                    "text": text,
                })
            })
            .collect();
        Ok(json!({
            "hits": hits,
            "warnings": results.warnings,
        }))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: String,
    #[serde(default, deserialize_with = "one_or_many")]
    scope: Vec<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// A list of strings, or one string for a list of one: models often write one condition
/// as a string where the schema asks for a list, and `null` for none.
fn one_or_many<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let wrong = || {
        serde::de::Error::custom(
            "scope must be a list of conditions such as [\"kind == source\"] (or one condition as a string)",
        )
    };
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(one)) => Ok(vec![one]),
        Some(Value::Array(many)) => many
            .into_iter()
            .map(|item| match item {
                Value::String(condition) => Ok(condition),
                _ => Err(wrong()),
            })
            .collect(),
        Some(_) => Err(wrong()),
    }
}

#[async_trait]
impl ServerTool for SearchCode {
    fn name(&self) -> &str {
        "search_code"
    }

    fn description(&self) -> &str {
        "Search the workspace's code index: identifiers, error messages or a question; returns ranked chunks with paths and line ranges."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Identifiers, an error message or a question"},
                "scope": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Conditions `KEY OP VALUE[,VALUE...]`, ANDed; OP is ==, !=, contains or does_not_contain; keys: path, kind (source, test, docs, config, ...), language, extension, symbol. E.g. `path contains crates/`, `kind == source`"
                },
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "The most chunks (default 8)"}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    }

    fn usage(&self) -> Option<&str> {
        Some(
            "search_code: when the context does not hold the code you need, search the workspace index by identifiers or error text; narrow with scope (e.g. `kind == source`, `path contains crates/`). Then read_file the hits to see more.",
        )
    }

    async fn execute(&self, arguments_json: &str) -> Result<String, String> {
        let value = self
            .run(arguments_json)
            .map_err(|error| error.to_string())?;
        result(&value)
    }
}

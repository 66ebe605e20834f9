//! Tools: [`ServerTool`]s that the orchestrator runs itself, and [`ClientTool`]s whose
//! calls go back to the caller.
//!
//! A server tool has a name, a JSON schema for its arguments, an optional usage text
//! that goes into the AGN-005 tool-usage block of the system message, and `execute`.
//! A tool failure is a value (the model is told the call failed and why), not an error
//! of the turn.
//!
//! [`TypedTool`] is the typed way to write one (after rig's `Tool`): arguments and
//! output are Rust types, the arguments' JSON schema is derived with `schemars`, and
//! [`Typed`] adapts it to the string-in/string-out [`ServerTool`], so the orchestrator
//! sees no difference. Arguments that do not decode come back to the model as the
//! call's error, naming what was wrong, and the tool body never runs.

use std::fmt::Display;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use aptix_model::wire::FunctionTool;

/// The most text of one server tool's result (or failure) the model is given, as
/// `read_file` gives (64 KiB; a result goes to the model twice, as the call's output and
/// in `[TOOL_RESULTS]`, so a larger one would crowd a 128k-token window by itself): the
/// rest is cut, and the model told how much was left out. Whatever the tool (a user's
/// [`TypedTool`], an editor's MCP server), no one result fills the context. A smaller
/// window gives less: see [`result_bytes_for`].
pub(crate) const MAX_RESULT_BYTES: usize = 64 * 1024;

/// The most bytes of one tool result for a model whose context window is
/// `window_tokens`: an eighth of the window at about 4 bytes a token (the result is
/// sent twice, so a quarter of the window), [`MAX_RESULT_BYTES`] at most and 2 KiB at
/// least. A 12 KB file read whole into an 8k window overflowed it by itself, and the
/// model, asked again, read it again.
pub(crate) fn result_bytes_for(window_tokens: u64) -> usize {
    // An eighth of the window's tokens, at 4 bytes each: half the window in bytes.
    let bytes = usize::try_from(window_tokens / 2).unwrap_or(usize::MAX);
    bytes.clamp(2 * 1024, MAX_RESULT_BYTES)
}

/// `text` cut to `max_bytes` at a character boundary, saying how much was left out.
pub(crate) fn cap_result(mut text: String, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text;
    }
    let end = text.floor_char_boundary(max_bytes);
    let left = text.len() - end;
    text.truncate(end);
    text.push_str(&format!(
        "\n[cut: {left} more bytes of this result were left out; ask for less at a time]"
    ));
    text
}

/// A tool the orchestrator executes.
#[async_trait]
pub trait ServerTool: Send + Sync {
    /// The name the model calls it by (`^[a-zA-Z0-9_-]{1,64}$`).
    fn name(&self) -> &str;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;

    /// Whether the provider must hold arguments to the schema exactly (`strict`).
    fn strict(&self) -> bool {
        false
    }

    /// Guidance for the model, rendered into the AGN-005 tool-usage block.
    fn usage(&self) -> Option<&str> {
        None
    }

    /// Runs the tool with the model's arguments (a JSON document as text, exactly as the
    /// model emitted it; it may be invalid). Returns the result as JSON text, or a
    /// sentence saying why the call failed.
    async fn execute(&self, arguments_json: &str) -> Result<String, String>;
}

/// The wire definition of a server tool.
pub(crate) fn function_tool(tool: &dyn ServerTool) -> FunctionTool {
    FunctionTool {
        name: tool.name().to_owned(),
        description: Some(tool.description().to_owned()),
        parameters: Some(tool.parameters()),
        strict: tool.strict(),
    }
}

/// A tool the client executes: the orchestrator only tells the model about it, and a
/// call of it ends the turn with `kind: "tool-only"`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientTool {
    /// The wire definition.
    pub definition: FunctionTool,
    /// Guidance for the model, rendered into the tool-usage block.
    pub usage: Option<String>,
}

/// A server tool with typed arguments and output.
///
/// Implement it, then register `Typed::new(tool)` (an [`Arc`](std::sync::Arc) of it) as
/// a [`ServerTool`]. The arguments' schema is derived from [`Args`](Self::Args); the
/// model's arguments are decoded into it before [`call`](Self::call) runs, and a call's
/// `Err` is sent to the model as the tool's error text.
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The name the model calls it by (`^[a-zA-Z0-9_-]{1,64}$`).
    const NAME: &'static str;

    /// The arguments object; its `schemars` schema is the tool's `parameters`.
    type Args: DeserializeOwned + JsonSchema + Send;

    /// What a successful call returns; sent to the model as JSON.
    type Output: Serialize + Send;

    /// Why a call failed; its `Display` text is what the model reads.
    type Error: Display + Send;

    /// What it does, for the model.
    fn description(&self) -> &str;

    /// Guidance for the model, rendered into the AGN-005 tool-usage block.
    fn usage(&self) -> Option<&str> {
        None
    }

    /// Whether the provider must hold arguments to the schema exactly (`strict`).
    /// [`Typed::new`] then normalises the derived schema for strict mode: every
    /// property required (an `Option<T>` one made nullable: the model sends `null` for
    /// "absent"), objects closed to other properties.
    fn strict(&self) -> bool {
        false
    }

    /// Runs the tool with decoded arguments.
    async fn call(&self, args: Self::Args) -> Result<Self::Output, Self::Error>;
}

/// The model-facing sentence for arguments that do not decode: the field at fault (when
/// there is one) and serde's reason.
fn invalid_arguments(tool: &str, error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = error.path().to_string();
    let inner = error.inner();
    if path.is_empty() || path == "." {
        format!("invalid arguments for {tool}: {inner}")
    } else {
        format!("invalid arguments for {tool}: at `{path}`: {inner}")
    }
}

/// A [`TypedTool`] as a [`ServerTool`]: the schema is derived once, at construction.
#[derive(Debug)]
pub struct Typed<T> {
    tool: T,
    parameters: Value,
    /// The tool asks for strict mode and its schema could be made strict.
    strict: bool,
}

impl<T: TypedTool> Typed<T> {
    /// Wraps `tool`, deriving its arguments' JSON schema. A [`strict`](TypedTool::strict)
    /// tool's schema is normalised for strict mode (`aptix_request::normalize_strict`:
    /// an `Option<T>` field required and nullable, objects closed, keywords strict mode
    /// rejects removed), as the provider would otherwise refuse it; one that cannot be
    /// (a map field, say) is sent as derived and not strict, with a warning in the log.
    pub fn new(tool: T) -> Typed<T> {
        let mut parameters = schemars::schema_for!(T::Args).to_value();
        if let Value::Object(schema) = &mut parameters {
            // The dialect and the Rust type's name mean nothing to the model.
            schema.remove("$schema");
            schema.remove("title");
        }
        let mut strict = tool.strict();
        if strict {
            match aptix_request::normalize_strict(&parameters) {
                Ok(normalised) => parameters = normalised.wire,
                Err(error) => {
                    tracing::warn!(
                        tool = T::NAME,
                        %error,
                        "the tool's arguments cannot be held to strict mode; it is offered without strict"
                    );
                    strict = false;
                }
            }
        }
        Typed {
            tool,
            parameters,
            strict,
        }
    }

    /// The wrapped tool.
    pub fn inner(&self) -> &T {
        &self.tool
    }
}

#[async_trait]
impl<T: TypedTool> ServerTool for Typed<T> {
    fn name(&self) -> &str {
        T::NAME
    }

    fn description(&self) -> &str {
        self.tool.description()
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    fn usage(&self) -> Option<&str> {
        self.tool.usage()
    }

    fn strict(&self) -> bool {
        self.strict
    }

    async fn execute(&self, arguments_json: &str) -> Result<String, String> {
        // Some servers send a call without arguments as nothing at all: read as `{}`,
        // as the built-in tools do.
        let arguments_json = match arguments_json.trim() {
            "" => "{}",
            _ => arguments_json,
        };
        let mut decoder = serde_json::Deserializer::from_str(arguments_json);
        let args: T::Args = serde_path_to_error::deserialize(&mut decoder)
            .map_err(|error| invalid_arguments(T::NAME, &error))?;
        decoder
            .end()
            .map_err(|error| format!("invalid arguments for {}: {error}", T::NAME))?;
        let output = self
            .tool
            .call(args)
            .await
            .map_err(|error| error.to_string())?;
        serde_json::to_string(&output)
            .map_err(|error| format!("{} could not encode its result: {error}", T::NAME))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_over_the_cap_is_cut_at_a_character_and_says_how_much() {
        assert_eq!(cap_result("small".to_owned(), MAX_RESULT_BYTES), "small");
        // One byte, then two-byte characters: the cut falls inside one, and is moved
        // back to its start.
        let big = cap_result(
            format!("a{}", "é".repeat(MAX_RESULT_BYTES)),
            MAX_RESULT_BYTES,
        );
        let (kept, note) = big.split_once("\n[cut: ").unwrap();
        assert_eq!(kept.len(), MAX_RESULT_BYTES - 1);
        assert!(
            note.starts_with(&format!(
                "{} more bytes of this result were left out",
                MAX_RESULT_BYTES + 2
            )),
            "{note}"
        );
    }

    #[test]
    fn a_smaller_window_takes_a_smaller_result() {
        assert_eq!(result_bytes_for(1_047_576), MAX_RESULT_BYTES);
        assert_eq!(result_bytes_for(128_000), 64_000);
        assert_eq!(result_bytes_for(32_768), 16 * 1024);
        assert_eq!(result_bytes_for(8_192), 4 * 1024);
        assert_eq!(result_bytes_for(1_000), 2 * 1024);
        assert_eq!(result_bytes_for(0), 2 * 1024);
    }
}

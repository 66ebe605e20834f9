//! Tools: [`ServerTool`]s that the orchestrator runs itself, and [`ClientTool`]s whose
//! calls go back to the caller.
//!
//! A server tool has a name, a JSON schema for its arguments, an optional usage text
//! that goes into the AGN-005 tool-usage block of the system message, and `execute`.
//! A tool failure is a value (the model is told the call failed and why), not an error
//! of the turn.

use async_trait::async_trait;
use serde_json::Value;

use aptix_model::wire::FunctionTool;

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

//! From a provider's [`Capabilities`] to the [`SchemaSupport`] the strategy choice reads.
//!
//! `Capabilities` has no field for `json_object`. Every server that implements native
//! structured output or function tools over the OpenAI shapes (OpenAI, Azure, vLLM,
//! llama.cpp's `llama-server`, Ollama) also implements `json_object`, so it is taken as
//! present when either is; a provider that claims neither (`Capabilities::default()`,
//! an unknown server) gets plain text with the schema in the prompt, the one strategy
//! that cannot be rejected. A caller who knows better overrides the support or the
//! strategy in [`SolveOptions`](super::SolveOptions).

use aptix_client::Capabilities;

use crate::strategy::SchemaSupport;

/// What a provider with these capabilities supports for schema-shaped answers.
pub fn schema_support(capabilities: &Capabilities) -> SchemaSupport {
    SchemaSupport {
        native_json_schema: capabilities.native_json_schema,
        function_tools: capabilities.function_tools,
        strict_tools: capabilities.strict_tools,
        json_schema_with_tools: capabilities.json_schema_with_tools,
        json_object: capabilities.native_json_schema || capabilities.function_tools,
    }
}

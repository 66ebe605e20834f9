//! How the schema reaches the model: the [`Strategy`], chosen from what the provider
//! supports ([`SchemaSupport`]) unless the caller forces one.
//!
//! In order of preference:
//!
//! 1. [`NativeSchema`](Strategy::NativeSchema): `text.format` =
//!    `{"type":"json_schema","name":...,"schema":...,"strict":true}`; the provider
//!    constrains decoding to the schema. The most reliable.
//! 2. [`ToolCall`](Strategy::ToolCall): one function tool `generate_response` whose
//!    parameters are the schema, forced with `tool_choice`, plus an instruction to call
//!    it; the solution is the call's arguments.
//! 3. [`JsonObject`](Strategy::JsonObject): `text.format` `json_object` (any JSON
//!    object), with the schema written into the system prompt.
//! 4. [`PromptOnly`](Strategy::PromptOnly): no output format at all, for a provider
//!    without even JSON mode; the schema is in the system prompt and the answer is
//!    parsed from plain text.
//!
//! 3 and 4 are the seed's "JSON mode with prompt injection", split by whether the
//! provider has `json_object`.

use serde::{Deserialize, Serialize};

use super::error::SchemaError;

/// The name of the function tool of the [`ToolCall`](Strategy::ToolCall) strategy.
pub(crate) const GENERATE_RESPONSE: &str = "generate_response";

/// How the schema is applied to one Request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Native structured output: `text.format` `json_schema`, strict.
    NativeSchema,
    /// A forced `generate_response` function tool whose parameters are the schema.
    ToolCall,
    /// JSON mode: `text.format` `json_object`, the schema in the system prompt.
    JsonObject,
    /// Plain text, the schema in the system prompt.
    PromptOnly,
}

impl Strategy {
    /// Whether the schema travels as text in the system prompt (3 and 4).
    pub fn injects_schema(self) -> bool {
        matches!(self, Strategy::JsonObject | Strategy::PromptOnly)
    }

    /// The strategy's name in configuration and logs (`native_schema`, `tool_call`,
    /// `json_object`, `prompt_only`).
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::NativeSchema => "native_schema",
            Strategy::ToolCall => "tool_call",
            Strategy::JsonObject => "json_object",
            Strategy::PromptOnly => "prompt_only",
        }
    }
}

/// What a provider supports for schema-shaped answers, from its
/// [`Capabilities`](aptix_client::Capabilities) by
/// [`schema_support`](crate::schema_support), which the solver uses; a plain struct so
/// that a caller can also state it for a provider it knows better.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SchemaSupport {
    /// `text.format` `json_schema`.
    pub native_json_schema: bool,
    /// Function tools.
    pub function_tools: bool,
    /// `strict: true` function tools.
    pub strict_tools: bool,
    /// Native JSON schema output and tools in the same request.
    pub json_schema_with_tools: bool,
    /// `text.format` `json_object`.
    pub json_object: bool,
}

impl SchemaSupport {
    /// Everything, as the OpenAI Responses API has it.
    pub fn full() -> SchemaSupport {
        SchemaSupport {
            native_json_schema: true,
            function_tools: true,
            strict_tools: true,
            json_schema_with_tools: true,
            json_object: true,
        }
    }

    /// The best strategy for a request that carries `tool_count` ordinary tools.
    ///
    /// Native output when supported, unless the request carries tools that the
    /// provider cannot combine with it; then the tool fallback when the provider has
    /// function tools; then `json_object`; then plain text.
    ///
    /// # Errors
    ///
    /// [`SchemaError::ToolsUnsupported`] when the request carries tools and the provider
    /// has no function tools: they could not be sent at all.
    pub fn choose(&self, tool_count: usize) -> Result<Strategy, SchemaError> {
        let has_tools = tool_count > 0;
        if has_tools && !self.function_tools {
            return Err(SchemaError::ToolsUnsupported { count: tool_count });
        }
        Ok(
            if self.native_json_schema && (!has_tools || self.json_schema_with_tools) {
                Strategy::NativeSchema
            } else if self.function_tools {
                Strategy::ToolCall
            } else if self.json_object {
                Strategy::JsonObject
            } else {
                Strategy::PromptOnly
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_follows_support_and_tools() {
        let full = SchemaSupport::full();
        let no_mix = SchemaSupport {
            json_schema_with_tools: false,
            ..full
        };
        let tools_only = SchemaSupport {
            native_json_schema: false,
            json_schema_with_tools: false,
            ..full
        };
        let json_only = SchemaSupport {
            json_object: true,
            ..SchemaSupport::default()
        };
        let cases = [
            (full, 0, Strategy::NativeSchema),
            (full, 2, Strategy::NativeSchema),
            (no_mix, 0, Strategy::NativeSchema),
            (no_mix, 1, Strategy::ToolCall),
            (tools_only, 0, Strategy::ToolCall),
            (json_only, 0, Strategy::JsonObject),
            (SchemaSupport::default(), 0, Strategy::PromptOnly),
        ];
        for (support, tools, expected) in cases {
            assert!(
                matches!(support.choose(tools), Ok(chosen) if chosen == expected),
                "{support:?} with {tools} tools"
            );
        }
        assert!(matches!(
            json_only.choose(1),
            Err(SchemaError::ToolsUnsupported { count: 1 })
        ));
    }
}

/// A strategy the server refused (a 400 naming the structured-output format or the
/// tools it sends), and what the server said: a schema the API finds too deep or too
/// large is refused this way too, and its message is the one place that says so.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedStrategy {
    /// The strategy refused.
    pub strategy: Strategy,
    /// The server's error, as the provider reported it.
    pub reason: String,
}

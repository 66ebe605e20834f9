//! Token usage.
//!
//! The wire names are `input_tokens` / `output_tokens`; the seeds' Chat Completions
//! names `prompt_tokens` / `completion_tokens` are read too. Missing or `null` counts
//! are 0, and `usage` itself may be `null` (in-progress and failed responses).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::serde_util::lenient_count;

/// Token usage of one response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the input, including cached ones.
    #[serde(default, alias = "prompt_tokens", deserialize_with = "lenient_count")]
    pub input_tokens: u64,
    /// Tokens generated, including reasoning tokens.
    #[serde(
        default,
        alias = "completion_tokens",
        deserialize_with = "lenient_count"
    )]
    pub output_tokens: u64,
    /// Input plus output.
    #[serde(default, deserialize_with = "lenient_count")]
    pub total_tokens: u64,
    /// Breakdown of the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens_details: Option<InputTokensDetails>,
    /// Breakdown of the output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_details: Option<OutputTokensDetails>,
    /// Fields this version does not know.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Usage {
    /// Input tokens served from the prompt cache (0 when not reported).
    pub fn cached_tokens(&self) -> u64 {
        self.input_tokens_details
            .as_ref()
            .map_or(0, |details| details.cached_tokens)
    }

    /// Output tokens spent on reasoning (0 when not reported).
    pub fn reasoning_tokens(&self) -> u64 {
        self.output_tokens_details
            .as_ref()
            .map_or(0, |details| details.reasoning_tokens)
    }
}

/// `usage.input_tokens_details`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputTokensDetails {
    /// Tokens read from the cache.
    #[serde(default, deserialize_with = "lenient_count")]
    pub cached_tokens: u64,
    /// Tokens written to the cache; the spec requires it, many replies omit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputTokensDetails {
    /// Tokens spent on reasoning.
    #[serde(default, deserialize_with = "lenient_count")]
    pub reasoning_tokens: u64,
}

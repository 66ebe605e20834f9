//! `usage`: the wire's token counts under the envelope's names.
//!
//! The wire types already read the seed's names (`prompt_tokens`, `completion_tokens`)
//! as aliases and turn missing or `null` counts into 0, so this is a plain renaming. A
//! missing `total_tokens` stays 0 rather than being summed: the envelope reports what the
//! provider counted, and a total it did not send is not a count it made.

use aptix_model::contract::LlmUsage;
use aptix_model::wire::Usage;

/// The envelope's usage for a response's `usage` (`null` -> all zero).
pub(crate) fn usage(usage: Option<&Usage>) -> LlmUsage {
    let Some(usage) = usage else {
        return LlmUsage::default();
    };
    LlmUsage {
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        total_tokens: usage.total_tokens,
        cached_tokens: usage.cached_tokens(),
        reasoning_tokens: usage.reasoning_tokens(),
    }
}

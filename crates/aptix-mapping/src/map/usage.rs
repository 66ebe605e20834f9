//! `usage`: the wire's token counts under the envelope's names.
//!
//! The renaming itself is `LlmUsage::from(&Usage)` in `aptix-model`, its one home; a
//! response without `usage` counts zero.

use aptix_model::contract::LlmUsage;
use aptix_model::wire::Usage;

/// The envelope's usage for a response's `usage` (`null` -> all zero).
pub(crate) fn usage(usage: Option<&Usage>) -> LlmUsage {
    usage.map(LlmUsage::from).unwrap_or_default()
}

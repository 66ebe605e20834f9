//! Strict schemas: the normaliser itself is `aptix-request`'s
//! ([`aptix_request::normalize_strict`]), shared with the orchestrator's strict typed
//! tools; here its refusal is this crate's [`SchemaError::NotStrict`].

use serde_json::Value;

use crate::error::SchemaError;
pub use aptix_request::{RemovedKeyword, StrictSchema};

/// Normalises `schema` for strict mode (native structured output, strict tools): see
/// [`aptix_request::normalize_strict`] for the rules.
///
/// # Errors
///
/// [`SchemaError::NotStrict`] naming the JSON pointer of the first construct strict
/// mode cannot express.
pub fn normalize_strict(schema: &Value) -> Result<StrictSchema, SchemaError> {
    aptix_request::normalize_strict(schema).map_err(|error| match error {
        aptix_request::RequestError::NotStrict { pointer, reason } => {
            SchemaError::NotStrict { pointer, reason }
        }
        other => SchemaError::Request(other),
    })
}

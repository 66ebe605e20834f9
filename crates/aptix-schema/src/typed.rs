//! Typed solutions: a Rust type that derives `schemars::JsonSchema` supplies the schema
//! ([`schema_for_type`], [`SchemaRequest::for_type`]) and comes back as itself
//! ([`deserialize_solution`]).
//!
//! The schema is schemars' draft 2020-12 output; the strict normaliser then closes its
//! objects, removes what strict mode does not take (`format: "uint32"`, `default`,
//! `$schema`) and turns `oneOf` enums into `anyOf`. An optional field the model gives as
//! `null` is read as `None` (an `Option`) or as absent (`#[serde(default)]`).

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::context::SchemaRequest;

/// The JSON Schema of `T`, as schemars derives it.
pub fn schema_for_type<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

impl SchemaRequest {
    /// A request for `model` whose solution is a `T`.
    pub fn for_type<T: JsonSchema>(model: impl Into<String>) -> SchemaRequest {
        SchemaRequest::new(model, schema_for_type::<T>())
    }
}

/// A validated solution as a `T`. The solution already has the shape `T`'s schema
/// describes: a `null` strict mode made the model write for a field optional by
/// `#[serde(default)]` was read as absent before it was validated (`crate::absent`),
/// and an `Option` field's `null` reads as `None`.
///
/// # Errors
///
/// The `serde_json` error of reading the value.
pub(crate) fn deserialize_solution<T: DeserializeOwned>(
    value: &Value,
) -> Result<T, serde_json::Error> {
    T::deserialize(value)
}

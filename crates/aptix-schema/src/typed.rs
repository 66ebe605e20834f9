//! Typed solutions: a Rust type that derives `schemars::JsonSchema` supplies the schema
//! ([`schema_for_type`], [`SchemaRequest::for_type`]) and comes back as itself
//! ([`deserialize_solution`]).
//!
//! The schema is schemars' draft 2020-12 output; the strict normaliser then closes its
//! objects, removes what strict mode does not take (`format: "uint32"`, `default`,
//! `$schema`) and turns `oneOf` enums into `anyOf`. Optional fields come back as
//! `null`, which `Option<T>` fields read as `None`.

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

/// A validated solution as a `T`.
///
/// The value is read as it is first. When that fails, it is read again with every
/// `null` object member removed: strict mode makes optional fields nullable, so a
/// field that is optional by `#[serde(default)]` rather than by being an `Option`
/// comes back as `null`, which serde reads only as "absent". The first error is the
/// one returned.
///
/// # Errors
///
/// The `serde_json` error of reading the value as it was given.
pub(crate) fn deserialize_solution<T: DeserializeOwned>(
    value: &Value,
) -> Result<T, serde_json::Error> {
    match T::deserialize(value) {
        Ok(typed) => Ok(typed),
        Err(error) => {
            let mut stripped = value.clone();
            drop_null_members(&mut stripped);
            T::deserialize(&stripped).map_err(|_| error)
        }
    }
}

/// Removes every object member whose value is `null`, at any depth.
fn drop_null_members(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, member| !member.is_null());
            map.values_mut().for_each(drop_null_members);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_members),
        _ => {}
    }
}

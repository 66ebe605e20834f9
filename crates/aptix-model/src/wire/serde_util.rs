//! Small lenient deserialisers shared by the wire types.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::json_kind;

/// Decodes `null` as the type's default, so `"output": null` is an empty list rather
/// than a decode failure.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Decodes a token count leniently: missing or `null` is 0, a float is truncated, a
/// negative number is 0. Anything else (a string, an object) is an error, because a
/// count we cannot read must not silently become a number.
pub(crate) fn lenient_count<'de, D>(deserializer: D) -> Result<u64, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Option::<Value>::deserialize(deserializer)?;
    match value {
        None | Some(Value::Null) => Ok(0),
        Some(Value::Number(number)) => Ok(number
            .as_u64()
            .or_else(|| number.as_f64().map(|f| if f > 0.0 { f as u64 } else { 0 }))
            .unwrap_or(0)),
        Some(other) => Err(serde::de::Error::custom(format!(
            "expected a token count, found {}",
            json_kind(&other)
        ))),
    }
}

/// Decodes an error code that servers send either as a string (`"invalid_api_key"`) or
/// as a number (llama.cpp sends the HTTP status), keeping it as text.
pub(crate) fn string_or_number<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Option::<Value>::deserialize(deserializer)?;
    Ok(match value {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text),
        Some(Value::Number(number)) => Some(number.to_string()),
        Some(Value::Bool(flag)) => Some(flag.to_string()),
        Some(other) => Some(other.to_string()),
    })
}

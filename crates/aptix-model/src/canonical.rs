//! JSON text that does not depend on how the build was put together.
//!
//! `serde_json` keeps object members sorted by key, unless any crate of the build turns
//! on its `preserve_order` feature (the Agent Client Protocol SDK does), after which they
//! keep the order they were inserted or parsed in. Wherever Aptix writes a JSON value
//! as text that a model reads or a test compares (an inline tool result, a schema in a
//! prompt, a state block), it writes [`sorted`] first, so the text is the same in every
//! build.

use serde_json::{Map, Value};

/// `value` with the members of every object sorted by key, at any depth.
///
/// ```
/// use aptix_model::canonical::sorted;
/// use serde_json::json;
///
/// let text = sorted(&json!({"b": [{"d": 1, "c": 2}], "a": null})).to_string();
/// assert_eq!(text, r#"{"a":null,"b":[{"c":2,"d":1}]}"#);
/// ```
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::with_capacity(map.len());
            for key in keys {
                if let Some(member) = map.get(key) {
                    out.insert(key.clone(), sorted(member));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

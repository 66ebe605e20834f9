//! Making an optional property's schema accept `null`, the strict-mode spelling of
//! "optional" (every property must be listed in `required`).
//!
//! The smallest change that works is chosen, so the schema stays readable for the
//! model: `"type": "string"` becomes `"type": ["string", "null"]` (with `null` added to
//! an `enum`); a bare `anyOf` gets a `{"type": "null"}` branch; anything else (a
//! `$ref`, a `const`, a `oneOf`) is wrapped as `{"anyOf": [schema, {"type": "null"}]}`.

use serde_json::{Map, Value, json};

/// `schema`, also accepting `null`.
pub(crate) fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return wrap(schema);
    };
    if accepts_null(&map) {
        return Value::Object(map);
    }
    let composite = ["$ref", "oneOf", "allOf", "const"]
        .iter()
        .any(|keyword| map.contains_key(*keyword));
    if composite {
        return wrap(Value::Object(map));
    }
    if !map.contains_key("type") {
        return match map.get_mut("anyOf") {
            Some(Value::Array(branches)) => {
                branches.push(null_schema());
                Value::Object(map)
            }
            _ => wrap(Value::Object(map)),
        };
    }
    if map.contains_key("anyOf") {
        return wrap(Value::Object(map));
    }
    match map.get_mut("type") {
        Some(Value::String(single)) => {
            let single = std::mem::take(single);
            map.insert("type".to_owned(), json!([single, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|kind| kind == "null") {
                types.push(Value::String("null".to_owned()));
            }
        }
        _ => return wrap(Value::Object(map)),
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.iter().any(Value::is_null)
    {
        values.push(Value::Null);
    }
    Value::Object(map)
}

/// Whether the schema already accepts `null`, judged conservatively: a `false` only
/// costs a wrapper that changes nothing.
fn accepts_null(map: &Map<String, Value>) -> bool {
    if let Some(Value::Array(branches)) = map.get("anyOf")
        && branches.iter().any(is_null_schema)
        && !map.contains_key("type")
    {
        return true;
    }
    let type_allows = match map.get("type") {
        Some(Value::String(kind)) => kind == "null",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "null"),
        _ => false,
    };
    let enum_allows = match map.get("enum") {
        Some(Value::Array(values)) => values.iter().any(Value::is_null),
        Some(_) => false,
        None => true,
    };
    let const_allows = map.get("const").is_none_or(Value::is_null);
    let composite = ["$ref", "anyOf", "oneOf", "allOf"]
        .iter()
        .any(|keyword| map.contains_key(*keyword));
    type_allows && enum_allows && const_allows && !composite
}

fn is_null_schema(schema: &Value) -> bool {
    schema.as_object().is_some_and(|map| {
        map.len() == 1 && map.get("type").and_then(Value::as_str) == Some("null")
    })
}

fn null_schema() -> Value {
    json!({"type": "null"})
}

fn wrap(schema: Value) -> Value {
    json!({"anyOf": [schema, null_schema()]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_nullable_form_is_chosen() {
        let cases = [
            (
                json!({"type": "string"}),
                json!({"type": ["string", "null"]}),
            ),
            (
                json!({"type": ["integer", "string"]}),
                json!({"type": ["integer", "string", "null"]}),
            ),
            (
                json!({"type": "string", "enum": ["a"]}),
                json!({"type": ["string", "null"], "enum": ["a", null]}),
            ),
            (
                json!({"$ref": "#/$defs/A"}),
                json!({"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}),
            ),
            (
                json!({"anyOf": [{"type": "string"}]}),
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            ),
            (
                json!({"const": "x"}),
                json!({"anyOf": [{"const": "x"}, {"type": "null"}]}),
            ),
            (
                json!({"type": ["string", "null"]}),
                json!({"type": ["string", "null"]}),
            ),
            (
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
                json!({"anyOf": [{"type": "string"}, {"type": "null"}]}),
            ),
            (
                json!({"type": ["string", "null"], "enum": ["a"]}),
                json!({"type": ["string", "null"], "enum": ["a", null]}),
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(nullable(input.clone()), expected, "input {input}");
        }
    }
}

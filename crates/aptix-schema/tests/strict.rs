//! The strict-mode normaliser, rule by rule: what it changes, what it removes (and
//! still validates), and what it rejects with the JSON pointer of the culprit.

use aptix_schema::{SchemaError, normalize_strict, schema_for_type};
use serde_json::{Value, json};

/// Normalises `input` and checks the wire schema and the removed keywords
/// (`pointer/keyword`).
fn check(input: Value, wire: Value, removed: &[&str]) {
    let strict = normalize_strict(&input).expect("normalises");
    assert_eq!(strict.wire, wire, "wire schema of {input}");
    let listed: Vec<String> = strict
        .removed
        .iter()
        .map(|removed| format!("{}/{}", removed.pointer, removed.keyword))
        .collect();
    assert_eq!(listed, removed, "removed keywords of {input}");
    let again = normalize_strict(&strict.wire).expect("normalises again");
    assert_eq!(again.wire, strict.wire, "idempotent on {input}");
    assert!(again.removed.is_empty());
}

/// Normalising `input` fails at `pointer` with a reason containing `reason`.
fn check_rejected(input: Value, pointer: &str, reason: &str) {
    match normalize_strict(&input) {
        Err(SchemaError::NotStrict {
            pointer: at,
            reason: why,
        }) => {
            assert_eq!(at, pointer, "pointer for {input}: {why}");
            assert!(why.contains(reason), "reason {why:?} lacks {reason:?}");
        }
        other => panic!("expected a rejection of {input}, got {other:?}"),
    }
}

#[test]
fn objects_are_closed_and_optional_properties_become_nullable() {
    check(
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "nick": {"type": "string"},
                "kind": {"type": "string", "enum": ["a", "b"]},
                "tags": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "integer"}}}}
            },
            "required": ["name"]
        }),
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "nick": {"type": ["string", "null"]},
                "kind": {"type": ["string", "null"], "enum": ["a", "b", null]},
                "tags": {"type": ["array", "null"], "items": {
                    "type": "object",
                    "properties": {"v": {"type": ["integer", "null"]}},
                    "required": ["v"],
                    "additionalProperties": false
                }}
            },
            "required": ["name", "kind", "nick", "tags"],
            "additionalProperties": false
        }),
        &[],
    );
}

#[test]
fn unions_references_and_definitions_are_walked() {
    check(
        json!({
            "type": "object",
            "properties": {
                "shape": {"oneOf": [
                    {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]},
                    {"type": "null"}
                ]},
                "home": {"$ref": "#/$defs/Address", "description": "Where they live."},
                "work": {"$ref": "#/definitions/Address"},
                "box": {"allOf": [{"type": "object", "properties": {"w": {"type": "number"}}}]}
            },
            "required": ["shape", "home", "work", "box"],
            "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}}},
            "definitions": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
        }),
        json!({
            "type": "object",
            "properties": {
                "shape": {"anyOf": [
                    {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"], "additionalProperties": false},
                    {"type": "null"}
                ]},
                "home": {
                    "type": "object",
                    "description": "Where they live.",
                    "properties": {"city": {"type": ["string", "null"]}},
                    "required": ["city"],
                    "additionalProperties": false
                },
                "work": {"$ref": "#/definitions/Address"},
                "box": {
                    "type": "object",
                    "properties": {"w": {"type": ["number", "null"]}},
                    "required": ["w"],
                    "additionalProperties": false
                }
            },
            "required": ["shape", "home", "work", "box"],
            "additionalProperties": false,
            "$defs": {"Address": {
                "type": "object",
                "properties": {"city": {"type": ["string", "null"]}},
                "required": ["city"],
                "additionalProperties": false
            }},
            "definitions": {"Address": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": false
            }}
        }),
        &[],
    );
}

#[test]
fn a_reference_to_an_optional_property_keeps_what_it_named() {
    // `a` is optional, so nullable on the wire; `c` is required and names `a`'s schema:
    // on the wire it must not be nullable, or strict mode would allow a null the
    // caller's schema rejects.
    check(
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                "c": {"$ref": "#/properties/a"}
            },
            "required": ["c"]
        }),
        json!({
            "type": "object",
            "properties": {
                "a": {
                    "type": ["object", "null"],
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"],
                    "additionalProperties": false
                },
                "c": {
                    "type": "object",
                    "properties": {"n": {"type": "integer"}},
                    "required": ["n"],
                    "additionalProperties": false
                }
            },
            "required": ["c", "a"],
            "additionalProperties": false
        }),
        &[],
    );
}

#[test]
fn loosening_keywords_are_removed_from_the_wire_and_kept_for_validation() {
    let input = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "code": {"type": "string", "minLength": 3, "maxLength": 5, "format": "uri", "default": "abc"},
            "when": {"type": "string", "format": "date-time"},
            "count": {"type": "integer", "format": "uint32", "minimum": 0},
            "ids": {"type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": true, "maxItems": 3},
            "extra": {"type": "object", "properties": {}, "minProperties": 0, "x-vendor": true}
        },
        "required": ["code", "when", "count", "ids", "extra"]
    });
    check(
        input.clone(),
        json!({
            "type": "object",
            "properties": {
                "code": {"type": "string"},
                "when": {"type": "string", "format": "date-time"},
                "count": {"type": "integer", "minimum": 0},
                "ids": {"type": "array", "items": {"type": "string", "format": "uuid"}, "maxItems": 3},
                "extra": {"type": "object", "properties": {}, "required": [], "additionalProperties": false}
            },
            "required": ["code", "when", "count", "ids", "extra"],
            "additionalProperties": false
        }),
        &[
            "/$schema",
            "/properties/code/default",
            "/properties/code/format",
            "/properties/code/maxLength",
            "/properties/code/minLength",
            "/properties/count/format",
            "/properties/extra/minProperties",
            "/properties/extra/x-vendor",
            "/properties/ids/uniqueItems",
        ],
    );
    let validation = normalize_strict(&input).expect("normalises").validation;
    assert_eq!(validation["properties"]["code"]["minLength"], 3);
    assert_eq!(validation["properties"]["ids"]["uniqueItems"], true);
    assert_eq!(validation["additionalProperties"], false);
    assert_eq!(validation["$schema"], input["$schema"]);
}

#[test]
fn validation_keeps_one_of_where_the_wire_says_any_of() {
    let input = json!({
        "type": "object",
        "properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "number"}]}},
        "required": ["v"]
    });
    let strict = normalize_strict(&input).expect("normalises");
    assert!(strict.wire["properties"]["v"].get("anyOf").is_some());
    assert!(strict.validation["properties"]["v"].get("oneOf").is_some());
}

#[test]
fn a_root_that_is_not_an_object_schema_is_named_for_what_it_is() {
    check_rejected(json!({"type": "objekt"}), "", "it has \"type\": \"objekt\"");
    check_rejected(
        json!({"type": ["object", "null"]}),
        "",
        "it has a list of types (a union)",
    );
    check_rejected(
        json!({"anyOf": [{"type": "object"}, {"type": "string"}]}),
        "",
        "it has a union (anyOf/oneOf)",
    );
    check_rejected(json!({"description": "x"}), "", "it has no \"type\"");
}

#[test]
fn what_strict_mode_cannot_express_is_rejected_at_its_pointer() {
    let object = |property: Value| json!({"type": "object", "properties": {"p": property}, "required": ["p"]});
    let cases = [
        // References that name no schema: a cycle of bare references, one that does
        // not resolve.
        (
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "required": ["x"],
                   "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}),
            "/$defs/a/$ref",
            "leads only to references",
        ),
        (
            object(json!({"$ref": "#/$defs/missing"})),
            "/properties/p/$ref",
            "does not resolve",
        ),
        (
            json!({"type": "array", "items": {"type": "string"}}),
            "",
            "root",
        ),
        (
            json!({"anyOf": [{"type": "object", "properties": {}}]}),
            "",
            "root",
        ),
        (json!(true), "", "root"),
        (
            object(json!({"type": "string", "not": {"const": "x"}})),
            "/properties/p/not",
            "not",
        ),
        (
            object(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            "/properties/p/additionalProperties",
            "map",
        ),
        (
            // Closing it would refuse answers the schema allows.
            object(
                json!({"type": "object", "properties": {"a": {"type": "string"}},
                          "additionalProperties": true}),
            ),
            "/properties/p/additionalProperties",
            "does not name",
        ),
        (
            object(json!({"type": "object"})),
            "/properties/p",
            "without \"properties\"",
        ),
        (
            object(json!({"type": "array"})),
            "/properties/p",
            "without \"items\"",
        ),
        (
            object(json!({"type": "array", "prefixItems": [{"type": "string"}]})),
            "/properties/p/prefixItems",
            "tuples",
        ),
        (
            object(json!({"type": "array", "items": [{"type": "string"}]})),
            "/properties/p/items",
            "tuples",
        ),
        (object(json!({})), "/properties/p", "accepts anything"),
        (object(json!(true)), "/properties/p", "boolean"),
        (
            object(
                json!({"type": "object", "properties": {}, "patternProperties": {"^x": {"type": "string"}}}),
            ),
            "/properties/p/patternProperties",
            "patternProperties",
        ),
        (
            object(json!({"type": "string", "if": {"const": "a"}, "then": {"const": "a"}})),
            "/properties/p/if",
            "conditional",
        ),
        (
            object(json!({"allOf": [{"type": "string"}, {"minLength": 1}]})),
            "/properties/p/allOf",
            "exactly one",
        ),
        (
            object(json!({"$ref": "https://example.com/s.json"})),
            "/properties/p/$ref",
            "local",
        ),
        (
            object(json!({"$ref": "#/$defs/Missing", "description": "x"})),
            "/properties/p/$ref",
            "does not resolve",
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}),
            "/required",
            "\"b\"",
        ),
        (
            json!({"type": "object", "properties": {"a~b/c": {"type": "object"}}}),
            "/properties/a~0b~1c",
            "without \"properties\"",
        ),
        (
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A", "title": "loop"}}}),
            "/$defs/A/$ref",
            "refers to itself",
        ),
    ];
    for (input, pointer, reason) in cases {
        check_rejected(input, pointer, reason);
    }
}

#[test]
fn a_derived_schema_normalises_to_what_strict_mode_takes() {
    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    struct Person {
        /// Full name.
        name: String,
        nick: Option<String>,
        age: u32,
        /// Home.
        home: Address,
        kind: Kind,
    }
    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    struct Address {
        city: String,
    }
    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    enum Kind {
        A,
        B,
    }
    let strict = normalize_strict(&schema_for_type::<Person>()).expect("normalises");
    assert_eq!(
        strict.wire,
        json!({
            "title": "Person",
            "type": "object",
            "properties": {
                "name": {"description": "Full name.", "type": "string"},
                "nick": {"type": ["string", "null"]},
                "age": {"type": "integer", "minimum": 0},
                "home": {
                    "description": "Home.",
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                    "additionalProperties": false
                },
                "kind": {"$ref": "#/$defs/Kind"}
            },
            "required": ["name", "age", "home", "kind", "nick"],
            "additionalProperties": false,
            "$defs": {
                "Address": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                    "additionalProperties": false
                },
                "Kind": {"type": "string", "enum": ["A", "B"]}
            }
        })
    );
}

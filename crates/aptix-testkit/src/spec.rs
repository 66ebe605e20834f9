//! The official OpenAPI description of the Responses API, loaded once per test process,
//! and validation of request bodies against its `CreateResponse` schema.
//!
//! The spec is vendored, trimmed to the schemas the tests reach, as
//! `tests/fixtures/spec/responses-openapi.json` (see `scripts/trim-spec.py`). A missing
//! spec fails the test with the path it was looked for at; it never skips.
//!
//! Input items are checked one by one, because the spec cannot check them in place:
//! `InputItem` is a `oneOf` whose `EasyInputMessage` and `Item` -> `InputMessage`
//! branches both match every typed message (`{"type":"message","role":"user",
//! "content":[{"type":"input_text",...}]}`), and a `oneOf` fails when two branches
//! match. So the body is validated with `input` emptied, and each item against the one
//! schema it is meant to be (see [`item_schema`]), after asserting that a message really
//! does match both ambiguous branches (so the workaround is still needed).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::{Registry, Validator};
use serde_json::{Value, json};

const SPEC_URI: &str = "https://aptix.invalid/openai-openapi";

pub use crate::spec_path;

/// The spec as JSON, read once per process.
pub fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| {
        let path = spec_path();
        let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
            panic!(
                "the OpenAPI spec is required at {}: {error}",
                path.display()
            )
        });
        serde_json::from_str(&text)
            .unwrap_or_else(|error| panic!("{} is not valid JSON: {error}", path.display()))
    })
}

fn registry() -> &'static Registry<'static> {
    static REGISTRY: OnceLock<Registry<'static>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        Registry::new()
            .add(SPEC_URI, spec())
            .and_then(|builder| builder.prepare())
            .unwrap_or_else(|error| panic!("the spec does not load as a schema registry: {error}"))
    })
}

/// A validator for `#/components/schemas/<name>` inside the spec document, compiled
/// once per process (property tests validate hundreds of bodies).
pub fn validator(name: &str) -> Arc<Validator> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Validator>>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let compiled = cache.entry(name.to_owned()).or_insert_with(|| {
        let root = json!({ "$ref": format!("{SPEC_URI}#/components/schemas/{name}") });
        let validator = jsonschema::options()
            .with_registry(registry())
            .build(&root)
            .unwrap_or_else(|error| panic!("schema {name} does not compile: {error}"));
        Arc::new(validator)
    });
    Arc::clone(compiled)
}

/// The errors of `instance` against the named schema, as readable lines.
pub fn errors(name: &str, instance: &Value) -> Vec<String> {
    validator(name)
        .iter_errors(instance)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect()
}

/// Asserts that `body` is a valid `CreateResponse` (see [`create_response_problems`]).
pub fn assert_valid_create_response(label: &str, body: &Value) {
    let problems = create_response_problems(body);
    assert!(problems.is_empty(), "{label}: {problems:#?}\n{body:#}");
}

/// Why `body` is not a valid `CreateResponse`, or nothing: every top-level field must
/// be one the schema defines (the schema itself allows any extra field, so a typo would
/// pass it), the body with `input` emptied must validate, and each input item must
/// validate against the schema of its kind (and, for a typed message, against both
/// ambiguous branches).
pub fn create_response_problems(body: &Value) -> Vec<String> {
    let Some(object) = body.as_object() else {
        return vec!["body is not an object".into()];
    };
    let known = create_response_properties();
    let mut problems: Vec<String> = object
        .keys()
        .filter(|key| !known.contains(key.as_str()))
        .map(|key| format!("field {key:?} is not a CreateResponse property"))
        .collect();
    let mut without_input = body.clone();
    without_input["input"] = json!([]);
    problems.extend(errors("CreateResponse", &without_input));
    let Some(items) = body["input"].as_array() else {
        problems.push("input is not an array".into());
        return problems;
    };
    for (index, item) in items.iter().enumerate() {
        let Some(schema) = item_schema(item) else {
            problems.push(format!("input[{index}] has no known item type: {item}"));
            continue;
        };
        let item = &with_recorded_wire_defaults(item);
        for error in errors(schema, item) {
            problems.push(format!("input[{index}] is not a valid {schema}: {error}"));
        }
        if schema == "InputMessage" {
            for error in errors("EasyInputMessage", item) {
                problems.push(format!(
                    "input[{index}] is not a valid EasyInputMessage: {error}"
                ));
            }
        }
    }
    problems
}

/// `item` with the fields the spec requires but recorded traffic omits filled in.
///
/// A replayed assistant message needs `id` and `status`, and its `output_text` parts
/// `logprobs`, by the spec's `OutputMessage`; the recorded request
/// `request_stateless_history_with_assistant_output_text.json` sends none of them and
/// the API accepted it. Recorded traffic wins over the spec (`docs/wire.md`), so only
/// these omissions are forgiven; everything else in the item is checked as is.
fn with_recorded_wire_defaults(item: &Value) -> Value {
    let mut item = item.clone();
    if item["type"] != "message" || item["role"] != "assistant" {
        return item;
    }
    if let Some(object) = item.as_object_mut() {
        object.entry("id").or_insert_with(|| json!("msg_replayed"));
        object.entry("status").or_insert_with(|| json!("completed"));
    }
    if let Some(parts) = item["content"].as_array_mut() {
        for part in parts
            .iter_mut()
            .filter(|part| part["type"] == "output_text")
        {
            if let Some(object) = part.as_object_mut() {
                object.entry("logprobs").or_insert_with(|| json!([]));
            }
        }
    }
    item
}

/// The spec schema an input item of this kind must satisfy.
pub fn item_schema(item: &Value) -> Option<&'static str> {
    match (item["type"].as_str(), item["role"].as_str()) {
        (Some("message"), Some("assistant")) => Some("OutputMessage"),
        (Some("message"), _) => Some("InputMessage"),
        (Some("function_call_output"), _) => Some("FunctionCallOutputItemParam"),
        (Some("function_call"), _) => Some("FunctionToolCall"),
        (Some("reasoning"), _) => Some("ReasoningItem"),
        _ => None,
    }
}

/// Every property name `CreateResponse` defines, through its `allOf` and `$ref`s.
pub fn create_response_properties() -> &'static BTreeSet<String> {
    static NAMES: OnceLock<BTreeSet<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names = BTreeSet::new();
        collect_properties(
            &spec()["components"]["schemas"]["CreateResponse"],
            &mut names,
        );
        assert!(names.contains("model") && names.contains("previous_response_id"));
        names
    })
}

fn collect_properties(schema: &Value, names: &mut BTreeSet<String>) {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.trim_start_matches("#/components/schemas/");
        collect_properties(&spec()["components"]["schemas"][name], names);
    }
    if let Some(properties) = schema["properties"].as_object() {
        names.extend(properties.keys().cloned());
    }
    if let Some(parts) = schema["allOf"].as_array() {
        for part in parts {
            collect_properties(part, names);
        }
    }
}

//! Validation of JSON values against the component schemas of an OpenAPI 3.1 document,
//! whose schemas are JSON Schema 2020-12.
//!
//! A component is compiled as `{"$ref": "#/components/schemas/NAME"}` inside a copy of
//! the document's `components`, so every `$ref` between components resolves in place and
//! nothing is fetched. Use it to check that what serde writes is what the document says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jsonschema::{Draft, Validator};
use serde_json::{Value, json};

/// The component schemas of one OpenAPI document, each compiled once on first use.
pub struct Components {
    schemas: Value,
    compiled: Mutex<HashMap<String, Arc<Validator>>>,
}

impl Components {
    /// The schemas of `document` (`components.schemas`). Panics when it has none, so a
    /// test cannot pass against an empty document.
    pub fn new(document: &Value) -> Self {
        let schemas = document["components"]["schemas"].clone();
        assert!(
            schemas
                .as_object()
                .is_some_and(|schemas| !schemas.is_empty()),
            "the document has no components.schemas"
        );
        Components {
            schemas,
            compiled: Mutex::default(),
        }
    }

    /// The names of the component schemas, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .schemas
            .as_object()
            .map(|schemas| schemas.keys().cloned().collect())
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The schema named `name`, as written in the document.
    pub fn schema(&self, name: &str) -> &Value {
        let schema = &self.schemas[name];
        assert!(!schema.is_null(), "no component schema named {name}");
        schema
    }

    /// A validator for the component `name`. Panics when there is no such component or
    /// it does not compile as a JSON Schema 2020-12 schema.
    pub fn validator(&self, name: &str) -> Arc<Validator> {
        self.schema(name);
        let mut compiled = self
            .compiled
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let validator = compiled.entry(name.to_owned()).or_insert_with(|| {
            let root = json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$ref": format!("#/components/schemas/{name}"),
                "components": {"schemas": self.schemas.clone()},
            });
            let validator = jsonschema::options()
                .with_draft(Draft::Draft202012)
                .build(&root)
                .unwrap_or_else(|error| panic!("schema {name} does not compile: {error}"));
            Arc::new(validator)
        });
        Arc::clone(validator)
    }

    /// The errors of `instance` against the component `name`, one readable line each.
    pub fn errors(&self, name: &str, instance: &Value) -> Vec<String> {
        self.validator(name)
            .iter_errors(instance)
            .map(|error| format!("{error} at {}", error.instance_path()))
            .collect()
    }

    /// Asserts that `instance` is valid against the component `name`.
    #[track_caller]
    pub fn assert_valid(&self, name: &str, label: &str, instance: &Value) {
        let errors = self.errors(name, instance);
        assert!(
            errors.is_empty(),
            "{label}: not a valid {name}:\n{}\n{instance}",
            errors.join("\n")
        );
    }

    /// Asserts that `instance` is not valid against the component `name`.
    #[track_caller]
    pub fn assert_invalid(&self, name: &str, label: &str, instance: &Value) {
        assert!(
            !self.validator(name).is_valid(instance),
            "{label}: the {name} schema accepts it: {instance}"
        );
    }
}

//! The OpenAPI schema of the request agrees with the validator (feature `openapi`).
//!
//! Every request of this suite goes through [`agrees`] from `check`: what the validator
//! accepts, the schema accepts; what it rejects for a rule the schema encodes, the schema
//! rejects; what it rejects only for rules the schema leaves to the server, the schema
//! accepts. So each rule is either in the schema exactly or stated as the server's.

use std::sync::OnceLock;

use aptix_testkit::openapi::Components;
use serde_json::{Map, Value, json};
use utoipa::{PartialSchema, ToSchema};

use crate::contract::AgentExecuteRequest;
use crate::contract::limits::{
    MAX_FILE_INPUTS, MAX_HINT_BYTES, MAX_ID_BYTES, MAX_IMAGE_INPUTS, MAX_INSTRUCTION_BYTES,
    MAX_MEDIA_TYPE_BYTES, MAX_SCOPE_CONDITIONS, MAX_SCOPE_KEY_BYTES, MAX_SCOPE_VALUES,
    MAX_TOOL_OUTPUT_BYTES, MAX_TOOL_RESULTS,
};
use crate::contract::violation::ViolationCode::{self, *};

/// Rules the schema encodes exactly: a request breaking one is not valid against it.
const IN_SCHEMA: &[ViolationCode] = &[
    WrongType,
    Missing,
    UnknownField,
    ServerOwned,
    DuplicateField,
    NotAllowedOnToolContinuation,
    UnknownOperator,
    InvalidBase64,
    InvalidMediaType,
];

/// Rules the schema leaves to the server (between fields, or not expressible in JSON
/// Schema): a request breaking only these is valid against it. The request's
/// description names each.
const SERVER_ONLY: &[ViolationCode] = &[
    MissingInput,
    ConflictingContent,
    ConflictingOutcome,
    MissingOutcome,
    DuplicateToolCallId,
    InvalidPath,
    InvalidId,
    InvalidResultJson,
];

// Neither list: `Empty`, `TooLarge` and `InvalidNumber` are encoded in part (an empty
// string or list, a length in characters where the limit is in bytes, a negative or
// fractional number but not a whole one past 2^64), so no assertion is made for them.

/// The request's components, as `aptix-server` puts them in its document.
pub(super) fn components() -> &'static Components {
    static COMPONENTS: OnceLock<Components> = OnceLock::new();
    COMPONENTS.get_or_init(|| {
        let mut schemas = vec![(
            AgentExecuteRequest::name().into_owned(),
            AgentExecuteRequest::schema(),
        )];
        AgentExecuteRequest::schemas(&mut schemas);
        let schemas: Map<String, Value> = schemas
            .into_iter()
            .map(|(name, schema)| (name, serde_json::to_value(schema).unwrap()))
            .collect();
        Components::new(&json!({"components": {"schemas": schemas}}))
    })
}

/// Whether `name` is a field of one of the request's objects, as the validator knows
/// them.
fn is_field(name: &str) -> bool {
    super::super::SHAPES
        .iter()
        .any(|shape| shape.fields.contains(&name))
}

/// The request with each PascalCase field name (`SessionId`) spelt in camelCase, the one
/// casing the schema lists, unless the object also has the camelCase name (both is a
/// `duplicate_field`, which the schema must still reject). Inline `resultJson` values are
/// the tool's own JSON and are left alone.
fn camel_cased(value: &Value) -> Value {
    let Value::Object(object) = value else {
        return match value {
            Value::Array(items) => Value::Array(items.iter().map(camel_cased).collect()),
            other => other.clone(),
        };
    };
    let mut renamed = Map::new();
    for (key, field) in object {
        let mut chars = key.chars();
        let camel = match chars.next() {
            Some(first) if first.is_uppercase() => first.to_lowercase().chain(chars).collect(),
            _ => key.clone(),
        };
        let known = is_field(&camel) && !object.contains_key(&camel);
        let key = if known { camel } else { key.clone() };
        let field = if key == "resultJson" {
            field.clone()
        } else {
            camel_cased(field)
        };
        renamed.insert(key, field);
    }
    Value::Object(renamed)
}

/// Asserts that the schema agrees with the validator's verdict on `request` (see the
/// module docs).
#[track_caller]
pub(super) fn agrees(request: &Value, codes: &[ViolationCode]) {
    let request = camel_cased(request);
    let valid = components()
        .validator("AgentExecuteRequest")
        .is_valid(&request);
    let errors = || {
        components()
            .errors("AgentExecuteRequest", &request)
            .join("\n")
    };
    if codes.iter().all(|code| SERVER_ONLY.contains(code)) {
        assert!(
            valid,
            "the validator found only {codes:?}, but the schema rejects {request}:\n{}",
            errors()
        );
    } else if let Some(code) = codes.iter().find(|code| IN_SCHEMA.contains(code)) {
        assert!(
            !valid,
            "the validator found {code} (of {codes:?}), but the schema accepts {request}"
        );
    }
}

#[test]
fn the_schema_holds_the_validators_limits() {
    let schemas = components();
    let property = |component: &str, path: &str| -> Value {
        let mut value = schemas.schema(component)["properties"].clone();
        for part in path.split('/') {
            value = value[part].clone();
        }
        assert!(!value.is_null(), "{component}: no {path}");
        value
    };
    let id_schemas = ["SessionId", "TurnId", "ToolCallId"];
    for id in id_schemas {
        assert_eq!(schemas.schema(id)["maxLength"], MAX_ID_BYTES, "{id}");
        assert_eq!(schemas.schema(id)["minLength"], 1, "{id}");
    }
    assert_eq!(
        schemas.schema("Instruction")["maxLength"],
        MAX_INSTRUCTION_BYTES
    );
    assert_eq!(
        schemas.schema("ToolErrorMessage")["maxLength"],
        MAX_TOOL_OUTPUT_BYTES
    );
    let limits = [
        ("UserTurnRequest", "files/maxItems", MAX_FILE_INPUTS),
        ("UserTurnRequest", "images/maxItems", MAX_IMAGE_INPUTS),
        (
            "ToolContinuationRequest",
            "toolResults/maxItems",
            MAX_TOOL_RESULTS,
        ),
        ("ToolContinuationRequest", "toolResults/minItems", 1),
        ("RagScope", "conditions/maxItems", MAX_SCOPE_CONDITIONS),
        ("ScopeCondition", "key/maxLength", MAX_SCOPE_KEY_BYTES),
        ("ScopeCondition", "values/maxItems", MAX_SCOPE_VALUES),
        ("ScopeCondition", "values/minItems", 1),
        ("WorkspaceHints", "workspaceId/maxLength", MAX_HINT_BYTES),
        ("WorkspaceHints", "repository/maxLength", MAX_HINT_BYTES),
        ("WorkspaceHints", "language/maxLength", MAX_HINT_BYTES),
        ("ImageInput", "mediaType/maxLength", MAX_MEDIA_TYPE_BYTES),
    ];
    for (component, path, limit) in limits {
        assert_eq!(property(component, path), limit, "{component}.{path}");
    }
}

//! Properties of the fast paths: decoding a stream event by its `type` first gives what
//! the enum's own decoding gives, and the hand-written decoding of a `Response` gives
//! what serde's derive gives, whatever the JSON holds.

use std::collections::BTreeMap;

use aptix_model::wire::{
    IncompleteDetails, OutputItem, Response, ResponseError, ResponseStatus, StreamEvent, Usage,
};
use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The oracle: `Response` as it was declared when its decoding was derived.
#[derive(Deserialize)]
struct Derived {
    id: String,
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    created_at: Option<serde_json::Number>,
    #[serde(default)]
    status: Option<ResponseStatus>,
    #[serde(default)]
    error: Option<ResponseError>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    output: Vec<OutputItem>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    previous_response_id: Option<String>,
    #[serde(flatten)]
    extra: BTreeMap<String, Value>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<OutputItem>, D::Error> {
    Ok(Option::<Vec<OutputItem>>::deserialize(d)?.unwrap_or_default())
}

impl From<Derived> for Response {
    fn from(derived: Derived) -> Response {
        let mut response = Response::with_id(derived.id);
        response.object = derived.object;
        response.created_at = derived.created_at;
        response.status = derived.status;
        response.error = derived.error;
        response.incomplete_details = derived.incomplete_details;
        response.model = derived.model;
        response.output = derived.output;
        response.usage = derived.usage;
        response.previous_response_id = derived.previous_response_id;
        response.extra = derived.extra;
        response
    }
}

/// A response object: fields drawn from the names a response has, plus strangers, each
/// with a value right or wrong for it.
fn response_object() -> impl Strategy<Value = String> {
    let names = proptest::sample::select(vec![
        "id",
        "id",
        "object",
        "created_at",
        "status",
        "error",
        "incomplete_details",
        "model",
        "output",
        "usage",
        "previous_response_id",
        "tools",
        "stranger",
        "ID",
    ]);
    let value = prop_oneof![
        3 => field_value(),
        1 => Just(json!("resp_1")),
        1 => Just(json!("completed")),
        1 => Just(json!({"code": "server_error", "message": "m"})),
        1 => Just(json!({"reason": "max_output_tokens"})),
        1 => Just(json!({"input_tokens": 3, "output_tokens": 2, "total_tokens": 5})),
        1 => Just(json!([{"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "t", "annotations": []}]}, {"type": "new"}])),
    ];
    proptest::collection::vec((names, value), 0..10).prop_map(|fields| {
        let mut object = Map::new();
        for (name, value) in fields {
            object.insert(name.to_owned(), value);
        }
        Value::Object(object).to_string()
    })
}

/// A JSON value of the kinds an event field may hold, right or wrong.
fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u32>().prop_map(|n| json!(n)),
        (-5i64..5).prop_map(|n| json!(n)),
        Just(json!(1.5)),
        "[a-z\"\\\\\u{e9}\u{1f980} ]{0,12}".prop_map(Value::String),
        Just(json!([1, "two", null])),
        Just(json!({"nested": {"type": "x"}})),
        Just(json!({"id": "r", "status": "completed", "output": []})),
        Just(json!({"type": "message", "role": "assistant", "content": []})),
        Just(json!({"type": "output_text", "text": "t"})),
    ]
}

/// An event: a `type` (a known one, an unknown one, a wrong kind, or none) and fields
/// drawn from the names the payloads read, plus strangers.
fn event() -> impl Strategy<Value = String> {
    let known: Vec<Value> = StreamEvent::KNOWN_TYPES.iter().map(|t| json!(t)).collect();
    let kind = prop_oneof![
        4 => proptest::sample::select(known).prop_map(Some),
        1 => Just(Some(json!("response.unknown.kind"))),
        1 => Just(Some(json!(7))),
        1 => Just(None),
    ];
    let names = proptest::sample::select(vec![
        "sequence_number",
        "item_id",
        "output_index",
        "content_index",
        "summary_index",
        "delta",
        "text",
        "refusal",
        "arguments",
        "response",
        "item",
        "part",
        "error",
        "code",
        "message",
        "param",
        "stranger",
        // Written after a leading `type`, a second one.
        "type",
    ]);
    (
        kind,
        proptest::collection::vec((names, field_value()), 0..8),
        any::<bool>(),
    )
        .prop_map(|(kind, fields, type_first)| {
            let mut object = Map::new();
            for (name, value) in fields {
                object.insert(name.to_owned(), value);
            }
            match kind {
                // As providers write it: `type` first, then the rest.
                Some(kind) if type_first => {
                    let rest = Value::Object(object).to_string();
                    let rest = rest.trim_start_matches('{');
                    let comma = if rest == "}" { "" } else { "," };
                    format!(r#"{{"type":{kind}{comma}{rest}"#)
                }
                Some(kind) => {
                    object.insert("type".into(), kind);
                    Value::Object(object).to_string()
                }
                None => Value::Object(object).to_string(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn decoding_by_type_first_equals_the_enums_decoding(data in event()) {
        let direct = StreamEvent::from_json(&data).ok();
        let by_enum: Option<StreamEvent> = serde_json::from_str(&data).ok();
        prop_assert_eq!(direct, by_enum, "{}", data);
    }

    #[test]
    fn decoding_a_response_by_hand_equals_the_derived_decoding(data in response_object()) {
        let by_hand = serde_json::from_str::<Response>(&data).map_err(|e| e.to_string());
        let derived = serde_json::from_str::<Derived>(&data)
            .map(Response::from)
            .map_err(|e| e.to_string());
        prop_assert_eq!(by_hand.is_ok(), derived.is_ok(), "{}: {:?} / {:?}", data, by_hand, derived);
        prop_assert_eq!(by_hand.as_ref().ok(), derived.as_ref().ok(), "{}", data);
        // The same from a tree as from text.
        let value: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        let from_tree = serde_json::from_value::<Response>(value).ok();
        prop_assert_eq!(from_tree.as_ref(), by_hand.as_ref().ok(), "{}", data);
    }
}

#[test]
fn a_response_field_given_twice_or_no_id_is_an_error_naming_it() {
    let twice = serde_json::from_str::<Response>(r#"{"id": "a", "model": "m", "id": "b"}"#);
    let message = twice.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("duplicate field `id`"), "{message}");
    let none = serde_json::from_str::<Response>(r#"{"model": "m"}"#);
    let message = none.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("missing field `id`"), "{message}");
    let not_object = serde_json::from_str::<Response>("[1]");
    assert!(not_object.is_err());
    // An escaped key is still the field it names.
    let escaped = serde_json::from_str::<Response>(r#"{"\u0069d": "resp_e", "x": 1}"#);
    let escaped = escaped.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(escaped.id, "resp_e");
    assert_eq!(escaped.extra.get("x"), Some(&json!(1)));
}

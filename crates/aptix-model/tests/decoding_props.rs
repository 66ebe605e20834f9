//! Properties of the fast paths: decoding a stream event by its `type` first gives what
//! the enum's own decoding gives, whatever the event holds.

use aptix_model::wire::StreamEvent;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

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
    ]);
    (
        kind,
        proptest::collection::vec((names, field_value()), 0..8),
    )
        .prop_map(|(kind, fields)| {
            let mut object = Map::new();
            if let Some(kind) = kind {
                object.insert("type".into(), kind);
            }
            for (name, value) in fields {
                object.insert(name.to_owned(), value);
            }
            Value::Object(object).to_string()
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
}

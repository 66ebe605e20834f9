//! `/responses/compact` against the official description (the vendored, trimmed spec):
//! the body Aptix sends is a valid `CompactResponseMethodPublicBody` and names no field
//! the schema lacks, the spec's example reply decodes, and its `compaction` item goes
//! back as a valid input item.

use aptix_model::wire::{CompactRequest, CompactResponse, Input, InputItem};
use aptix_testkit::spec::{errors, spec};
use serde_json::Value;

#[test]
fn the_compact_body_is_valid_and_uses_only_known_fields() {
    let mut request = CompactRequest {
        model: "gpt-5.1-codex-max".into(),
        input: Some(Input::Text("Create a landing page.".into())),
        previous_response_id: Some("resp_123".into()),
        instructions: Some("Keep the file names.".into()),
        ..CompactRequest::default()
    };
    let body = serde_json::to_value(&request).unwrap();
    assert_eq!(
        errors("CompactResponseMethodPublicBody", &body),
        Vec::<String>::new()
    );
    let properties =
        &spec()["components"]["schemas"]["CompactResponseMethodPublicBody"]["properties"];
    for key in body.as_object().unwrap().keys() {
        assert!(properties.get(key).is_some(), "{key} is not in the schema");
    }
    // Without a model the schema refuses it: the check can fail.
    request.model.clear();
    let mut body = serde_json::to_value(&request).unwrap();
    body.as_object_mut().unwrap().remove("model");
    assert!(!errors("CompactResponseMethodPublicBody", &body).is_empty());
}

#[test]
fn the_spec_example_reply_decodes_and_its_compaction_item_is_valid_input() {
    let example: &Value = &spec()["components"]["schemas"]["CompactResource"]["example"];
    // The example is not valid under its own schema (its messages have no id or
    // status, its usage no details): decoding must be as lenient as the API's examples.
    assert!(!errors("CompactResource", example).is_empty());
    let reply: CompactResponse = serde_json::from_value(example.clone()).unwrap();
    assert_eq!(reply.object, "response.compaction");
    let compaction = reply
        .output
        .iter()
        .find_map(|item| match item {
            InputItem::Other(raw) if raw["type"] == "compaction" => Some(raw.clone()),
            _ => None,
        })
        .expect("the compaction item is kept");
    let again = serde_json::to_value(InputItem::Other(compaction)).unwrap();
    assert_eq!(
        errors("CompactionSummaryItemParam", &again),
        Vec::<String>::new()
    );
    assert!(reply.usage.is_some_and(|usage| usage.input_tokens > 0));
}

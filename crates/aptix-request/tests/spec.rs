//! The spec check itself: it loads the official OpenAPI description (failing, never
//! skipping, when it is missing), accepts the recorded real request bodies, rejects
//! bodies the API would reject, and the `oneOf` ambiguity it works around is real.
//!
//! The bodies the builder produces are validated wherever tests build them
//! (`common::body`, and the property tests).

mod common;

use common::spec::{create_response_problems, errors, spec_path};
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    serde_json::from_slice(&aptix_testkit::read_fixture(name))
        .unwrap_or_else(|error| panic!("{name} is not JSON: {error}"))
}

#[test]
fn the_spec_is_present_and_defines_create_response() {
    assert!(spec_path().is_file(), "missing {}", spec_path().display());
    let spec = common::spec::spec();
    assert_eq!(spec["openapi"], "3.1.0");
    assert!(spec["components"]["schemas"]["CreateResponse"]["allOf"].is_array());
}

#[test]
fn recorded_request_bodies_pass_the_check() {
    let names: Vec<String> = aptix_testkit::fixture_names(".json")
        .into_iter()
        .filter(|name| name.starts_with("request_"))
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    for name in names {
        let problems = create_response_problems(&fixture(&name));
        assert!(problems.is_empty(), "{name}: {problems:#?}");
    }
}

/// A change that makes a valid body invalid.
type Breaker = Box<dyn Fn(&mut Value)>;

#[test]
fn bodies_the_api_rejects_fail_the_check() {
    let valid = fixture("request_tool_choice_function.json");
    let cases: Vec<(&str, Breaker)> = vec![
        (
            "temperature above 2",
            Box::new(|body| body["temperature"] = json!(2.5)),
        ),
        (
            "max_output_tokens below 16",
            Box::new(|body| body["max_output_tokens"] = json!(8)),
        ),
        (
            "a typo in a field name",
            Box::new(|body| body["previous_response"] = json!("resp_1")),
        ),
        (
            "stream as a string",
            Box::new(|body| body["stream"] = json!("true")),
        ),
        (
            "a text part instead of input_text",
            Box::new(|body| body["input"][0]["content"][0]["type"] = json!("text")),
        ),
        (
            "a function_call_output without output",
            Box::new(|body| {
                body["input"] = json!([{"type": "function_call_output", "call_id": "call_1"}])
            }),
        ),
        (
            "an input_text part in a replayed assistant message",
            Box::new(|body| {
                body["input"] = json!([{
                    "type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                    "content": [{"type": "input_text", "text": "hi"}]
                }])
            }),
        ),
        (
            "a forced tool of the seed's shape",
            Box::new(|body| body["tool_choice"] = json!({"type": "tool", "name": "x"})),
        ),
    ];
    assert!(create_response_problems(&valid).is_empty());
    for (what, break_it) in cases {
        let mut body = valid.clone();
        break_it(&mut body);
        assert!(
            !create_response_problems(&body).is_empty(),
            "{what} passed the check: {body:#}"
        );
    }
}

#[test]
fn a_typed_message_matches_two_input_item_branches() {
    // Why items are validated one by one: the spec's own oneOf rejects every typed message.
    let message = json!({
        "type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "hi"}]
    });
    let problems = errors("InputItem", &message);
    assert!(
        problems
            .iter()
            .any(|problem| problem.contains("more than one")),
        "{problems:?}"
    );
    assert!(errors("InputMessage", &message).is_empty());
    assert!(errors("EasyInputMessage", &message).is_empty());
}

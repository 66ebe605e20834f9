//! The rules of a tool continuation and its tool results.

use serde_json::{Value, json};

use super::{check, continuation, one_result, result, without};
use crate::contract::limits::{MAX_RESULT_JSON_DEPTH, MAX_TOOL_OUTPUT_BYTES, MAX_TOOL_RESULTS};
use crate::contract::violation::ViolationCode::*;

#[test]
fn a_tool_continuation_carries_nothing_but_results() {
    let results = json!([result(json!({}))]);
    for (name, value) in [
        ("instruction", json!("also do x")),
        ("files", json!([{"path": "a"}])),
        ("images", json!([])),
        ("ragScope", json!({})),
        ("hints", json!({"language": "rust"})),
        ("stream", json!(false)),
    ] {
        check(
            continuation(results.clone(), json!({ name: value })),
            &[(name, NotAllowedOnToolContinuation)],
        );
    }
}

#[test]
fn tool_results_are_a_non_empty_bounded_list_of_objects() {
    check(
        continuation(json!("done"), json!({})),
        &[("toolResults", WrongType)],
    );
    check(
        continuation(json!([]), json!({})),
        &[("toolResults", Empty)],
    );
    check(
        continuation(json!([result(json!({})), 5]), json!({})),
        &[("toolResults[1]", WrongType)],
    );
    let many: Vec<Value> = (0..=MAX_TOOL_RESULTS)
        .map(|i| result(json!({"toolCallId": format!("c{i}")})))
        .collect();
    check(
        continuation(json!(many), json!({})),
        &[("toolResults", TooLarge)],
    );
}

#[test]
fn tool_call_ids_are_required_and_unique() {
    check(
        continuation(
            json!([without(result(json!({})), &["toolCallId"])]),
            json!({}),
        ),
        &[("toolResults[0].toolCallId", Missing)],
    );
    check(
        one_result(json!({"toolCallId": ""})),
        &[("toolResults[0].toolCallId", Empty)],
    );
    check(
        one_result(json!({"toolCallId": 7})),
        &[("toolResults[0].toolCallId", WrongType)],
    );
    let ids = |ids: &[&str]| {
        json!(
            ids.iter()
                .map(|id| result(json!({"toolCallId": id})))
                .collect::<Vec<_>>()
        )
    };
    check(
        continuation(ids(&["a", "b", "a"]), json!({})),
        &[("toolResults[2].toolCallId", DuplicateToolCallId)],
    );
    check(
        continuation(ids(&["a", "a", "a"]), json!({})),
        &[
            ("toolResults[1].toolCallId", DuplicateToolCallId),
            ("toolResults[2].toolCallId", DuplicateToolCallId),
        ],
    );
}

#[test]
fn execution_ms_is_a_whole_non_negative_number() {
    check(
        continuation(
            json!([without(result(json!({})), &["executionMs"])]),
            json!({}),
        ),
        &[("toolResults[0].executionMs", Missing)],
    );
    check(
        one_result(json!({"executionMs": -1})),
        &[("toolResults[0].executionMs", InvalidNumber)],
    );
    check(
        one_result(json!({"executionMs": 1.5})),
        &[("toolResults[0].executionMs", InvalidNumber)],
    );
    check(
        one_result(json!({"executionMs": -0.5})),
        &[("toolResults[0].executionMs", InvalidNumber)],
    );
    check(
        one_result(json!({"executionMs": 1e20})),
        &[("toolResults[0].executionMs", InvalidNumber)],
    );
    check(
        one_result(json!({"executionMs": "12"})),
        &[("toolResults[0].executionMs", WrongType)],
    );
    check(one_result(json!({"executionMs": u64::MAX})), &[]);
}

#[test]
fn a_tool_result_has_exactly_one_outcome() {
    check(
        one_result(json!({"errorMessage": "boom"})),
        &[("toolResults[0]", ConflictingOutcome)],
    );
    check(
        one_result(json!({"resultJson": null})),
        &[("toolResults[0]", MissingOutcome)],
    );
    check(
        continuation(
            json!([
                result(json!({})),
                result(json!({"toolCallId": "c2", "resultJson": "{", "errorMessage": ""}))
            ]),
            json!({}),
        ),
        &[
            ("toolResults[1]", ConflictingOutcome),
            ("toolResults[1].resultJson", InvalidResultJson),
            ("toolResults[1].errorMessage", Empty),
        ],
    );
}

#[test]
fn result_json_strings_must_hold_json_and_errors_must_be_text() {
    check(
        one_result(json!({"resultJson": "not json"})),
        &[("toolResults[0].resultJson", InvalidResultJson)],
    );
    check(
        one_result(json!({"resultJson": ""})),
        &[("toolResults[0].resultJson", InvalidResultJson)],
    );
    check(
        one_result(json!({"resultJson": null, "errorMessage": " "})),
        &[("toolResults[0].errorMessage", Empty)],
    );
    check(
        one_result(json!({"resultJson": null, "errorMessage": {"e": 1}})),
        &[("toolResults[0].errorMessage", WrongType)],
    );
}

#[test]
fn tool_outputs_are_bounded() {
    let big = format!("\"{}\"", "x".repeat(MAX_TOOL_OUTPUT_BYTES));
    check(
        one_result(json!({"resultJson": big})),
        &[("toolResults[0].resultJson", TooLarge)],
    );
    let inline = json!(["x".repeat(MAX_TOOL_OUTPUT_BYTES)]);
    check(
        one_result(json!({"resultJson": inline})),
        &[("toolResults[0].resultJson", TooLarge)],
    );
    let message = "x".repeat(MAX_TOOL_OUTPUT_BYTES + 1);
    check(
        one_result(json!({"resultJson": null, "errorMessage": message})),
        &[("toolResults[0].errorMessage", TooLarge)],
    );
    let deep = (0..=MAX_RESULT_JSON_DEPTH).fold(json!(1), |inner, _| json!([inner]));
    check(
        one_result(json!({"resultJson": deep})),
        &[("toolResults[0].resultJson", InvalidResultJson)],
    );
}

//! Property tests: mapping is total. Arbitrary JSON trees (and response-shaped ones, so
//! that the mapping itself runs, not only the decoder), arbitrary bytes as error bodies
//! and captures, and arbitrary sequences of real stream events (shuffled, repeated,
//! dropped, cut anywhere) never panic, and every envelope that comes out keeps the
//! envelope's invariants. Two properties go further than "no panic": a recording with
//! events repeated, or with events other than the final one dropped, still folds to its
//! final response.

use aptix_mapping::{
    Mapped, SseBodyFold, StreamDelta, TurnContext, map_capture, map_error_body, map_folded,
    map_mapping_error, map_response, map_response_body,
};
use aptix_model::contract::{AgentExecuteResponse, Kind};
use aptix_model::wire::Response;
use aptix_testkit::{fixture_names, read_fixture_text};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Map, Value, json};

/// Field names the wire types read, so that generated objects hit real code paths.
const KEYS: &[&str] = &[
    "id",
    "type",
    "status",
    "output",
    "content",
    "text",
    "refusal",
    "call_id",
    "name",
    "arguments",
    "input",
    "usage",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "prompt_tokens",
    "completion_tokens",
    "input_tokens_details",
    "cached_tokens",
    "output_tokens_details",
    "reasoning_tokens",
    "error",
    "code",
    "message",
    "param",
    "incomplete_details",
    "reason",
    "model",
    "summary",
    "role",
    "annotations",
    "detail",
];

/// Values the wire types treat specially.
const WORDS: &[&str] = &[
    "message",
    "function_call",
    "custom_tool_call",
    "reasoning",
    "web_search_call",
    "mcp_call",
    "output_text",
    "refusal",
    "summary_text",
    "input_text",
    "completed",
    "incomplete",
    "failed",
    "cancelled",
    "queued",
    "in_progress",
    "max_output_tokens",
    "content_filter",
    "assistant",
    "",
    "{\"a\":",
    "call_1",
    "resp_1",
];

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(WORDS).prop_map(str::to_owned),
        2 => any::<String>(),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|n| json!(n)),
        string().prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![select(KEYS).prop_map(str::to_owned), any::<String>()],
                    inner
                ),
                0..6
            )
            .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// An object of `base` fields, each kept, or with probability `rate` dropped or replaced
/// by an arbitrary value, plus arbitrary extra fields: mostly well formed, often not.
fn mutate_at(base: Value, rate: f64) -> impl Strategy<Value = Value> {
    let fields: Vec<(String, Value)> = match base {
        Value::Object(map) => map.into_iter().collect(),
        _ => Vec::new(),
    };
    let count = fields.len();
    (
        prop::collection::vec(prop::option::weighted(rate, json_value()), count),
        prop::collection::vec(prop::bool::weighted(rate), count),
        prop::collection::vec((select(KEYS), json_value()), 0..2),
    )
        .prop_map(move |(replacements, drops, extra)| {
            let mut object = Map::new();
            for (((key, value), replacement), drop) in
                fields.iter().cloned().zip(replacements).zip(drops)
            {
                if drop && key != "type" && key != "id" {
                    continue;
                }
                object.insert(key, replacement.unwrap_or(value));
            }
            for (key, value) in extra {
                object.entry(key.to_owned()).or_insert(value);
            }
            Value::Object(object)
        })
}

fn mutate(base: Value) -> impl Strategy<Value = Value> {
    mutate_at(base, 0.1)
}

fn part() -> impl Strategy<Value = Value> {
    prop_oneof![
        string().prop_flat_map(|text| mutate(
            json!({"type": "output_text", "text": text, "annotations": []})
        )),
        string().prop_flat_map(|text| mutate(json!({"type": "refusal", "refusal": text}))),
        json_value(),
    ]
}

fn item() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => prop::collection::vec(part(), 0..4).prop_flat_map(|parts| mutate(
            json!({"type": "message", "id": "msg_1", "role": "assistant", "content": parts})
        )),
        2 => (string(), string()).prop_flat_map(|(name, arguments)| mutate(
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name, "arguments": arguments})
        )),
        1 => string().prop_flat_map(|input| mutate(
            json!({"type": "custom_tool_call", "call_id": "call_2", "name": "patch", "input": input})
        )),
        1 => mutate(json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "t"}]})),
        1 => (select(WORDS), json_value()).prop_map(|(kind, value)| json!({"type": kind, "id": "x_1", "value": value})),
        1 => json_value(),
    ]
}

fn usage() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => mutate_at(json!({
            "input_tokens": 10, "output_tokens": 20, "total_tokens": 30,
            "input_tokens_details": {"cached_tokens": 4},
            "output_tokens_details": {"reasoning_tokens": 8},
        }), 0.03),
        1 => json_value(),
    ]
}

fn response_error() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => Just(Value::Null),
        2 => mutate(json!({"code": "server_error", "message": "m"})),
        1 => json_value(),
    ]
}

fn status() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => select(&["completed", "incomplete", "failed"][..]).prop_map(|status| json!(status)),
        1 => string().prop_map(Value::String),
    ]
}

fn response_shaped() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(item(), 0..5),
        status(),
        usage(),
        response_error(),
    )
        .prop_flat_map(|(output, status, usage, error)| {
            mutate_at(
                json!({
                    "id": "resp_1", "object": "response", "status": status, "model": "m",
                    "output": output, "usage": usage, "error": error,
                    "incomplete_details": {"reason": "max_output_tokens"},
                }),
                0.03,
            )
        })
}

fn turn() -> TurnContext {
    TurnContext::new("session-1", "turn-1")
}

/// What every envelope keeps, whatever went in.
fn assert_invariants(mapped: &Mapped) {
    let envelope = &mapped.envelope;
    assert_eq!(envelope.kind == Kind::Error, envelope.error_code.is_some());
    if envelope.kind == Kind::Error {
        assert!(
            envelope
                .error_code
                .as_deref()
                .is_some_and(|code| !code.is_empty())
        );
        assert!(envelope.error_message.is_some());
    }
    assert_ne!(
        envelope.text.as_deref(),
        Some(""),
        "no text is null, not empty"
    );
    match envelope.kind {
        Kind::ToolOnly => assert!(!envelope.tool_calls.is_empty() && envelope.text.is_none()),
        Kind::Empty => assert!(
            envelope.text.is_none() && envelope.tool_calls.is_empty() && envelope.refusal.is_none()
        ),
        _ => {}
    }
    assert_eq!(envelope.turn_id.as_deref(), Some("turn-1"));
    let texts: Vec<String> = mapped.warnings.iter().map(ToString::to_string).collect();
    assert_eq!(envelope.warnings, texts);
    for warning in &texts {
        assert!(!warning.ends_with('.'), "{warning}");
        assert!(!warning.starts_with(char::is_uppercase), "{warning}");
    }
    let json = serde_json::to_string(envelope).unwrap_or_default();
    let back: AgentExecuteResponse = serde_json::from_str(&json).unwrap_or_default();
    assert_eq!(&back, envelope, "the envelope round-trips");
}

/// Every mapping entry point on one JSON value.
fn map_every_way(value: &Value, status: u16) {
    if let Ok(response) = serde_json::from_value::<Response>(value.clone()) {
        assert_invariants(&map_response(&response, None, &turn()));
    }
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    match map_response_body(&bytes, &turn()) {
        Ok(mapped) => assert_invariants(&mapped),
        Err(error) => {
            assert_eq!(error.code(), "invalid_response_body");
            assert_invariants(&map_mapping_error(&error, &turn()));
        }
    }
    assert_invariants(&map_error_body(status, &bytes, &turn()));
    assert_invariants(&map_capture(&bytes, &turn()));
}

/// The events of every recording, and a few shapes the recordings lack, as `data` text.
fn event_pool() -> Vec<String> {
    let mut pool: Vec<String> = fixture_names(".sse")
        .iter()
        .flat_map(|name| {
            read_fixture_text(name)
                .lines()
                .filter_map(|line| line.strip_prefix("data: ").map(str::to_owned))
                .collect::<Vec<_>>()
        })
        .collect();
    pool.extend(
        [
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "summary_index": 0, "delta": "x"}),
            json!({"type": "response.reasoning_summary_part.added", "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
            json!({"type": "response.refusal.delta", "output_index": 1, "content_index": 0, "delta": "no"}),
            json!({"type": "response.refusal.done", "output_index": 1, "content_index": 3, "refusal": "no"}),
            json!({"type": "error", "code": "server_error", "message": "flat"}),
            json!({"type": "response.output_text.delta", "output_index": 18446744073709551615u64, "content_index": 18446744073709551615u64, "delta": "far"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 0, "arguments": "{}", "name": "late_name"}),
            json!({"type": "response.incomplete", "response": {"id": "r", "status": "incomplete", "output": []}}),
        ]
        .iter()
        .map(Value::to_string),
    );
    pool.push("[DONE]".to_owned());
    pool.push("{not json".to_owned());
    pool
}

/// An SSE body of `events`, with or without `event:` lines.
fn body_of(events: &[&str], with_names: bool) -> String {
    let mut body = String::new();
    for data in events {
        if with_names {
            let name = serde_json::from_str::<Value>(data)
                .ok()
                .and_then(|value| value["type"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "message".to_owned());
            body.push_str(&format!("event: {name}\n"));
        }
        body.push_str(&format!("data: {data}\n\n"));
    }
    body
}

/// Folds `body` in chunks cut at `cuts`, then maps whatever came out.
fn fold_and_map(body: &[u8], cuts: &[Index]) -> (Vec<StreamDelta>, Mapped) {
    let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(body.len() + 1)).collect();
    points.sort_unstable();
    let mut folder = SseBodyFold::new();
    let mut deltas = Vec::new();
    let mut start = 0;
    for point in points.into_iter().chain([body.len()]) {
        folder.feed_into(body.get(start..point).unwrap_or_default(), &mut deltas);
        start = point;
    }
    let mapped = match folder.finish() {
        Ok(folded) => map_folded(folded, &turn()).0,
        Err(error) => map_mapping_error(&error, &turn()),
    };
    (deltas, mapped)
}

proptest! {
    // Failures print their minimal input, to be pinned as a plain test; no regressions
    // file is written into the source tree behind the author's back.
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn mapping_is_total_over_arbitrary_json(value in json_value(), status in 100u16..600) {
        map_every_way(&value, status);
    }

    #[test]
    fn mapping_is_total_over_response_shaped_json(value in response_shaped(), status in 100u16..600) {
        map_every_way(&value, status);
        let error_body = json!({"error": value.clone()});
        assert_invariants(&map_error_body(status, &serde_json::to_vec(&error_body).unwrap_or_default(), &turn()));
    }

    #[test]
    fn mapping_is_total_over_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400), status in 0u16..1000) {
        assert_invariants(&map_error_body(status, &bytes, &turn()));
        assert_invariants(&map_capture(&bytes, &turn()));
        if let Ok(mapped) = map_response_body(&bytes, &turn()) {
            assert_invariants(&mapped);
        }
        fold_and_map(&bytes, &[]);
    }

    #[test]
    fn folding_any_sequence_of_real_events_is_total(
        picks in prop::collection::vec(any::<Index>(), 0..40),
        with_names in any::<bool>(),
        cuts in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let pool = event_pool();
        let events: Vec<&str> = picks.iter().map(|pick| pick.get(&pool).as_str()).collect();
        let (_, mapped) = fold_and_map(body_of(&events, with_names).as_bytes(), &cuts);
        assert_invariants(&mapped);
    }

    #[test]
    fn repeated_events_change_nothing(
        which in 0usize..3,
        repeats in prop::collection::vec(any::<bool>(), 20),
        cuts in prop::collection::vec(any::<Index>(), 0..6),
    ) {
        let text = read_fixture_text(&fixture_names(".sse")[which]);
        let events: Vec<&str> = text.lines().filter_map(|line| line.strip_prefix("data: ")).collect();
        let (clean_deltas, clean) = fold_and_map(body_of(&events, true).as_bytes(), &[]);
        let mut noisy = Vec::new();
        for (index, event) in events.iter().enumerate() {
            noisy.push(*event);
            if repeats.get(index).copied().unwrap_or(false) {
                noisy.push(*event);
            }
        }
        let (deltas, mapped) = fold_and_map(body_of(&noisy, true).as_bytes(), &cuts);
        // The repeats are skipped: same deltas, same envelope but for the one warning.
        prop_assert_eq!(deltas, clean_deltas);
        let mut envelope = mapped.envelope.clone();
        envelope.warnings.retain(|warning| {
            !warning.contains("repeated or out of order") && !warning.contains("after the final response")
        });
        prop_assert_eq!(envelope, clean.envelope);
    }

    #[test]
    fn dropped_events_still_give_the_final_response(
        which in 0usize..3,
        keep in prop::collection::vec(any::<bool>(), 20),
    ) {
        let text = read_fixture_text(&fixture_names(".sse")[which]);
        let events: Vec<&str> = text.lines().filter_map(|line| line.strip_prefix("data: ")).collect();
        let (_, clean) = fold_and_map(body_of(&events, true).as_bytes(), &[]);
        let last = events.len() - 1;
        let kept: Vec<&str> = events
            .iter()
            .enumerate()
            .filter(|(index, _)| *index == last || keep.get(*index).copied().unwrap_or(true))
            .map(|(_, event)| *event)
            .collect();
        let (_, mapped) = fold_and_map(body_of(&kept, true).as_bytes(), &[]);
        // The final event is authoritative: only the warnings about the loss differ.
        let mut envelope = mapped.envelope.clone();
        envelope.warnings.clear();
        prop_assert_eq!(envelope, clean.envelope);
    }
}

//! Every recorded `.sse` stream folds to exactly the response its terminal event
//! carries, whatever the chunking (whole, every two-way split, one byte at a time), and
//! maps to exactly the envelope that mapping that response directly gives (ripgrep's
//! `SearcherTester` idea: one scenario through every code path, all agreeing).
//!
//! The terminal response is read from the recording independently of the fold: the last
//! event's `data` line, parsed with `serde_json`. The deltas are checked against the
//! final text and arguments, and the fold is also run with every `.done` event removed,
//! so that the deltas alone must rebuild the text and the arguments.

use aptix_mapping::{
    FoldedStream, MappingError, MappingWarning, SseBodyFold, StreamDelta, TurnContext, map_folded,
    map_response, map_response_body,
};
use aptix_model::contract::AgentExecuteResponse;
use aptix_model::wire::{OutputItem, Response};
use aptix_testkit::{fixture_names, read_fixture, read_fixture_text};
use serde_json::Value;

type Folded = (Vec<StreamDelta>, Result<FoldedStream, MappingError>);

fn fold(chunks: &[&[u8]]) -> Folded {
    let mut folder = SseBodyFold::new();
    let mut deltas = Vec::new();
    for chunk in chunks {
        folder.feed_into(chunk, &mut deltas);
    }
    deltas.extend(folder.end_of_input());
    (deltas, folder.finish())
}

/// The recording's terminal event: its `response` decoded, and the member's text as
/// recorded (it is the last member of the event object in every recording).
fn terminal(text: &str) -> (Response, String) {
    let data = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .next_back()
        .unwrap_or_else(|| panic!("no data lines"));
    let event: Value = serde_json::from_str(data).unwrap_or_else(|error| panic!("{error}"));
    let response = serde_json::from_value(event["response"].clone())
        .unwrap_or_else(|error| panic!("terminal response: {error}"));
    let start = data
        .find("\"response\":")
        .map(|at| at + "\"response\":".len());
    let raw = start
        .and_then(|start| data.get(start..data.len() - 1))
        .unwrap_or_else(|| panic!("no response member"));
    (response, raw.to_owned())
}

/// Removes every `.done` event except the terminal one.
fn without_done_events(text: &str) -> String {
    text.split_inclusive("\n\n")
        .filter(|event| {
            let name = event.lines().next().unwrap_or_default();
            !(name.ends_with(".done") && name.starts_with("event: response."))
        })
        .collect()
}

/// Text and tool calls of `output`, through the mapping, to compare items by content.
fn content_of(output: &[OutputItem], like: &Response) -> AgentExecuteResponse {
    let mut response = like.clone();
    response.output = output.to_vec();
    let mut envelope =
        map_response(&response, Some(String::new()), &TurnContext::default()).envelope;
    envelope.warnings.clear();
    envelope
}

/// The one check every recording goes through.
fn check(name: &str) {
    let bytes = read_fixture(name);
    let text = read_fixture_text(name);
    let (final_response, raw) = terminal(&text);
    let turn = TurnContext::new("session-1", "turn-1");

    let (deltas, result) = fold(&[&bytes]);
    let folded = result.unwrap_or_else(|error| panic!("{name}: {error}"));
    assert_eq!(
        folded.response, final_response,
        "{name}: the final response"
    );
    assert_eq!(
        folded.streamed_output, final_response.output,
        "{name}: the items the events built"
    );
    assert_eq!(
        folded.raw_response_json.as_deref(),
        Some(raw.as_str()),
        "{name}: raw"
    );
    assert!(folded.warnings.is_empty(), "{name}: {:?}", folded.warnings);
    let events = text.matches("\nevent: ").count() as u64 + 1;
    assert_eq!(folded.events, events, "{name}: events");
    assert_eq!(folded.last_sequence_number, Some(events - 1), "{name}");

    // The envelope of the stream is the envelope of its final response.
    let (mapped, _) = map_folded(folded.clone(), &turn);
    assert_eq!(
        mapped,
        map_response(&final_response, Some(raw.clone()), &turn),
        "{name}: envelope"
    );
    let envelope = &mapped.envelope;

    // The deltas carry the answer as it arrived, and end with `Done`.
    let streamed_text: String = deltas.iter().filter_map(StreamDelta::text).collect();
    assert_eq!(
        streamed_text,
        envelope.text.clone().unwrap_or_default(),
        "{name}: text deltas"
    );
    for call in &envelope.tool_calls {
        let started = deltas.iter().any(|delta| {
            matches!(delta, StreamDelta::ToolCallStarted { call_id, name, .. }
                if *call_id == call.call_id && *name == call.name)
        });
        assert!(started, "{name}: {} started", call.call_id);
        let arguments: String = deltas
            .iter()
            .filter_map(|delta| match delta {
                StreamDelta::ToolArgumentsDelta { call_id, delta, .. }
                    if *call_id == call.call_id =>
                {
                    Some(delta.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(arguments, call.arguments_json, "{name}: argument deltas");
    }
    match deltas.last() {
        Some(StreamDelta::Done {
            response_id,
            finish_reason,
            ..
        }) => {
            assert_eq!(
                Some(response_id),
                envelope.response_continuation_id.as_ref()
            );
            assert_eq!(finish_reason, &envelope.finish_reason, "{name}");
        }
        other => panic!("{name}: last delta {other:?}"),
    }

    // Every chunking gives the same deltas and the same fold.
    let same = |(other_deltas, result): Folded, how: &str| {
        let other = result.unwrap_or_else(|error| panic!("{name} {how}: {error}"));
        assert!(other_deltas == deltas, "{name}: {how}: deltas differ");
        assert!(other == folded, "{name}: {how}: fold differs");
    };
    for split in 0..=bytes.len() {
        let (head, tail) = bytes.split_at(split);
        same(fold(&[head, tail]), &format!("split at {split}"));
    }
    let bytes_one_by_one: Vec<&[u8]> = bytes.chunks(1).collect();
    same(fold(&bytes_one_by_one), "one byte at a time");

    // Without any `.done` event the deltas alone must rebuild the content.
    let trimmed = without_done_events(&text);
    let (_, result) = fold(&[trimmed.as_bytes()]);
    let partial = result.unwrap_or_else(|error| panic!("{name} without .done: {error}"));
    assert_eq!(
        partial.response, final_response,
        "{name}: still the final response"
    );
    assert_eq!(
        content_of(&partial.streamed_output, &final_response),
        content_of(&final_response.output, &final_response),
        "{name}: the deltas rebuild text and arguments"
    );
    let differs = partial
        .warnings
        .iter()
        .any(|warning| matches!(warning, MappingWarning::StreamDiffersFromFinal { .. }));
    assert_eq!(
        differs,
        !final_response.output.is_empty(),
        "{name}: items still in progress differ from the final ones, and that is said"
    );
}

/// One test per recording, so that they run in parallel.
const STREAMS: [&str; 3] = [
    "sse_error_event_then_response_failed.sse",
    "sse_function_call_arguments.sse",
    "sse_text_deltas.sse",
];

#[test]
fn every_recorded_stream_has_a_test() {
    assert_eq!(fixture_names(".sse"), STREAMS);
}

#[test]
fn text_stream_folds_in_every_chunking() {
    check(STREAMS[2]);
}

#[test]
fn function_call_stream_folds_in_every_chunking() {
    check(STREAMS[1]);
}

#[test]
fn error_then_failed_stream_folds_in_every_chunking() {
    check(STREAMS[0]);
}

#[test]
fn the_failed_stream_maps_like_the_recorded_failed_body() {
    // `response_failed_error.json` is the `response.failed` event's object, re-indented.
    let turn = TurnContext::new("session-1", "turn-1");
    let (_, result) = fold(&[&read_fixture("sse_error_event_then_response_failed.sse")]);
    let folded = result.unwrap_or_else(|error| panic!("{error}"));
    let (mut streamed, _) = map_folded(folded.clone(), &turn);
    let mut direct = map_response_body(&read_fixture("response_failed_error.json"), &turn)
        .unwrap_or_else(|error| panic!("{error}"));
    // Only the raw text differs: the file was re-indented.
    streamed.envelope.raw_response_json = None;
    direct.envelope.raw_response_json = None;
    assert_eq!(streamed, direct);
    assert_eq!(
        folded.stream_error.and_then(|error| error.code).as_deref(),
        Some("insufficient_quota")
    );
}

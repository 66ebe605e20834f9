//! The fold's rules on synthetic streams: a stream without its terminal event, reasoning
//! before the message, parallel function calls interleaved, refusals, repeated and
//! missing sequence numbers, events after the end, undecodable data, an `error` event
//! with and without `response.failed`, a bare final response, servers that skip events.
//!
//! Each case is a list of events (sequence numbers are added in order unless the event
//! has one) and what must come out: the deltas, as their JSON, and the envelope's key
//! fields (for a stream that fails, the envelope `map_mapping_error` gives). One `check`
//! runs every case whole and one byte at a time and requires the same result.

use aptix_mapping::{
    SseBodyFold, StreamDelta, TurnContext, map_folded, map_mapping_error, map_response,
};
use serde_json::{Value, json};

/// Writes events as an SSE body; an event without `sequence_number` gets its position.
/// A JSON string is written as the `data` line verbatim, for payloads that are not JSON.
fn sse(events: &[Value]) -> String {
    let mut body = String::new();
    for (number, event) in events.iter().enumerate() {
        if let Value::String(data) = event {
            body.push_str(&format!("data: {data}\n\n"));
            continue;
        }
        let mut event = event.clone();
        if event.get("sequence_number").is_none() && event.is_object() {
            event["sequence_number"] = json!(number);
        }
        let name = event["type"].as_str().unwrap_or("message").to_owned();
        body.push_str(&format!("event: {name}\ndata: {event}\n\n"));
    }
    body
}

/// What a stream must give.
struct Expect {
    deltas: Value,
    envelope: Value,
}

fn check(case: &str, body: &str, expect: Expect) {
    let turn = TurnContext::new("session-1", "turn-1");
    let run = |chunk_size: usize| {
        let mut folder = SseBodyFold::new();
        let mut deltas = Vec::new();
        for chunk in body.as_bytes().chunks(chunk_size.max(1)) {
            folder.feed_into(chunk, &mut deltas);
        }
        (deltas, folder.finish())
    };
    let (deltas, result) = run(body.len());
    let (small_deltas, small_result) = run(1);
    assert_eq!(small_deltas, deltas, "{case}: deltas one byte at a time");
    let mapped = match &result {
        Ok(folded) => {
            // Mapping the fold is mapping its final response, plus the fold's warnings.
            let direct = map_response(&folded.response, folded.raw_response_json.clone(), &turn);
            let (mapped, response) = map_folded(folded.clone(), &turn);
            assert_eq!(
                response, folded.response,
                "{case}: the final response handed back"
            );
            assert_eq!(mapped.envelope.text, direct.envelope.text, "{case}");
            assert_eq!(
                mapped.envelope.tool_calls, direct.envelope.tool_calls,
                "{case}"
            );
            assert_eq!(
                mapped.warnings.get(..direct.warnings.len()),
                Some(&direct.warnings[..])
            );
            assert_eq!(
                small_result.as_ref().ok(),
                Some(folded),
                "{case}: one byte at a time"
            );
            mapped
        }
        Err(error) => {
            let small = small_result
                .as_ref()
                .map(|_| ())
                .map_err(ToString::to_string);
            assert_eq!(small, Err(error.to_string()), "{case}: one byte at a time");
            map_mapping_error(error, &turn)
        }
    };
    let deltas_json = serde_json::to_value(&deltas).unwrap_or_default();
    assert_eq!(deltas_json, expect.deltas, "{case}: deltas");
    let envelope = serde_json::to_value(&mapped.envelope).unwrap_or_default();
    let mut summary = json!({});
    for key in expect
        .envelope
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, _)| key)
    {
        summary[key] = envelope[key].clone();
    }
    assert_eq!(summary, expect.envelope, "{case}: envelope");
}

fn created() -> Value {
    json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "model": "m", "output": []}})
}

fn final_event(kind: &str, status: &str, output: Value) -> Value {
    json!({"type": kind, "response": {"id": "resp_1", "status": status, "model": "m", "output": output,
        "usage": {"input_tokens": 5, "output_tokens": 6, "total_tokens": 11}}})
}

fn completed(output: Value) -> Value {
    final_event("response.completed", "completed", output)
}

fn started() -> Value {
    json!({"type": "started", "responseId": "resp_1", "model": "m"})
}

fn done(status: &str, finish_reason: &str) -> Value {
    json!({"type": "done", "responseId": "resp_1", "status": status, "finishReason": finish_reason})
}

fn message_added(index: u64, id: &str) -> Value {
    json!({"type": "response.output_item.added", "output_index": index,
        "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}})
}

fn text_delta(index: u64, id: &str, delta: &str) -> Value {
    json!({"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": 0, "delta": delta, "obfuscation": "xyz"})
}

fn message(id: &str, text: &str) -> Value {
    json!({"type": "message", "id": id, "role": "assistant", "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

fn call_added(index: u64, id: &str, call_id: &str, name: &str) -> Value {
    json!({"type": "response.output_item.added", "output_index": index,
        "item": {"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": "", "status": "in_progress"}})
}

fn args_delta(index: u64, id: &str, delta: &str) -> Value {
    json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": delta})
}

fn call(id: &str, call_id: &str, name: &str, arguments: &str) -> Value {
    json!({"type": "function_call", "id": id, "call_id": call_id, "name": name, "arguments": arguments, "status": "completed"})
}

fn text_stream_ending_with(last: Value) -> Vec<Value> {
    vec![
        created(),
        message_added(0, "msg_1"),
        text_delta(0, "msg_1", "Hel"),
        text_delta(0, "msg_1", "lo"),
        last,
    ]
}

fn hello_deltas() -> Vec<Value> {
    vec![
        started(),
        json!({"type": "textDelta", "outputIndex": 0, "contentIndex": 0, "text": "Hel"}),
        json!({"type": "textDelta", "outputIndex": 0, "contentIndex": 0, "text": "lo"}),
    ]
}

#[test]
fn a_stream_without_its_final_event_is_an_error() {
    let mut events = text_stream_ending_with(text_delta(0, "msg_1", "!"));
    events.push(json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "text": "Hello!"}));
    let mut deltas = hello_deltas();
    deltas.push(json!({"type": "textDelta", "outputIndex": 0, "contentIndex": 0, "text": "!"}));
    check(
        "cut after the text",
        &sse(&events),
        Expect {
            deltas: json!(deltas),
            envelope: json!({
                // The text that streamed is kept; the kind says it is incomplete.
                "kind": "error", "text": "Hello!", "errorCode": "stream_ended_early",
                "errorMessage": "stream ended after 6 events without a final response (last sequence number 5)",
                "responseContinuationId": "resp_1",
            }),
        },
    );
    let error = json!({"type": "error", "error": {"type": "server_error", "code": null, "message": "Upstream died."}});
    let mut deltas = hello_deltas();
    deltas.push(json!({"type": "error", "code": "server_error", "message": "Upstream died."}));
    check(
        "an error event and then nothing",
        &sse(&text_stream_ending_with(error)),
        Expect {
            deltas: json!(deltas),
            envelope: json!({"kind": "error", "errorCode": "server_error", "errorMessage": "Upstream died.", "responseContinuationId": "resp_1"}),
        },
    );
}

#[test]
fn a_final_event_that_does_not_decode_ends_the_stream_saying_why() {
    // A server bug, not a cut: asking again would get the same bytes.
    let mut broken = completed(json!([message("msg_1", "Hello")]));
    broken["response"]["status"] = json!(7);
    let body = sse(&text_stream_ending_with(broken.clone()));
    let expect = |deltas| Expect {
        deltas,
        envelope: json!({
            "kind": "error", "text": "Hello", "errorCode": "invalid_final_event",
            "responseContinuationId": "resp_1",
        }),
    };
    check(
        "status of the wrong type",
        &body,
        expect(json!(hello_deltas())),
    );
    let mut folder = SseBodyFold::new();
    let mut deltas = Vec::new();
    folder.feed_into(body.as_bytes(), &mut deltas);
    let error = folder.finish().unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("the stream's final `response.completed` event could not be decoded: "),
        "{message}"
    );
    assert!(message.contains("invalid type: integer `7`"), "{message}");
    // Without `event:` lines, the payload's own type says it was the final one.
    let mut bare = String::new();
    for event in text_stream_ending_with(broken) {
        bare.push_str(&format!("data: {event}\n\n"));
    }
    check("no event lines", &bare, expect(json!(hello_deltas())));
    // A payload that is not JSON at all, even named final, is the same.
    let garbage = "event: response.completed\ndata: {not json\n\n";
    let mut folder = SseBodyFold::new();
    folder.feed_into(garbage.as_bytes(), &mut Vec::new());
    assert_eq!(folder.finish().unwrap_err().code(), "invalid_final_event");
}

#[test]
fn reasoning_first_then_the_message_at_index_one() {
    let events = [
        created(),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_part.added", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
        json!({"type": "response.reasoning_summary_text.delta", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "delta": "Check the file."}),
        json!({"type": "response.reasoning_summary_text.done", "item_id": "rs_1", "output_index": 0, "summary_index": 0, "text": "Check the file."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Check the file."}]}}),
        message_added(1, "msg_1"),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 1, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        text_delta(1, "msg_1", "It is "),
        text_delta(1, "msg_1", "fine."),
        json!({"type": "response.output_text.done", "item_id": "msg_1", "output_index": 1, "content_index": 0, "text": "It is fine."}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": message("msg_1", "It is fine.")}),
        completed(json!([
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Check the file."}]},
            message("msg_1", "It is fine."),
        ])),
    ];
    check(
        "reasoning at 0, message at 1",
        &sse(&events),
        Expect {
            deltas: json!([
                started(),
                {"type": "reasoningSummaryDelta", "outputIndex": 0, "summaryIndex": 0, "text": "Check the file."},
                {"type": "textDelta", "outputIndex": 1, "contentIndex": 0, "text": "It is "},
                {"type": "textDelta", "outputIndex": 1, "contentIndex": 0, "text": "fine."},
                done("completed", "stop"),
            ]),
            envelope: json!({"kind": "ok", "finishReason": "stop", "text": "It is fine.", "warnings": [],
                "usage": {"promptTokens": 5, "completionTokens": 6, "totalTokens": 11, "cachedTokens": 0, "reasoningTokens": 0}}),
        },
    );
}

#[test]
fn two_parallel_function_calls_interleaved() {
    let events = [
        created(),
        call_added(0, "fc_a", "call_a", "read_file"),
        call_added(1, "fc_b", "call_b", "list_dir"),
        args_delta(0, "fc_a", "{\"path\":"),
        args_delta(1, "fc_b", "{\"dir\":"),
        args_delta(1, "fc_b", "\"src\"}"),
        args_delta(0, "fc_a", "\"a.rs\"}"),
        // `.done` without `name`, as on the wire.
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_b", "output_index": 1, "arguments": "{\"dir\":\"src\"}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_a", "output_index": 0, "arguments": "{\"path\":\"a.rs\"}"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": call("fc_b", "call_b", "list_dir", "{\"dir\":\"src\"}")}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": call("fc_a", "call_a", "read_file", "{\"path\":\"a.rs\"}")}),
        completed(json!([
            call("fc_a", "call_a", "read_file", "{\"path\":\"a.rs\"}"),
            call("fc_b", "call_b", "list_dir", "{\"dir\":\"src\"}"),
        ])),
    ];
    check(
        "two calls, deltas interleaved",
        &sse(&events),
        Expect {
            deltas: json!([
                started(),
                {"type": "toolCallStarted", "outputIndex": 0, "callId": "call_a", "name": "read_file"},
                {"type": "toolCallStarted", "outputIndex": 1, "callId": "call_b", "name": "list_dir"},
                {"type": "toolArgumentsDelta", "outputIndex": 0, "callId": "call_a", "delta": "{\"path\":"},
                {"type": "toolArgumentsDelta", "outputIndex": 1, "callId": "call_b", "delta": "{\"dir\":"},
                {"type": "toolArgumentsDelta", "outputIndex": 1, "callId": "call_b", "delta": "\"src\"}"},
                {"type": "toolArgumentsDelta", "outputIndex": 0, "callId": "call_a", "delta": "\"a.rs\"}"},
                {"type": "toolCallDone", "outputIndex": 1, "callId": "call_b", "name": "list_dir", "argumentsJson": "{\"dir\":\"src\"}"},
                {"type": "toolCallDone", "outputIndex": 0, "callId": "call_a", "name": "read_file", "argumentsJson": "{\"path\":\"a.rs\"}"},
                done("completed", "tool_use"),
            ]),
            envelope: json!({
                "kind": "tool-only", "finishReason": "tool_use", "warnings": [],
                "toolCalls": [
                    {"callId": "call_a", "name": "read_file", "argumentsJson": "{\"path\":\"a.rs\"}"},
                    {"callId": "call_b", "name": "list_dir", "argumentsJson": "{\"dir\":\"src\"}"},
                ],
            }),
        },
    );
}

#[test]
fn a_refusal_streams_as_refusal_deltas() {
    let refused = json!({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
        "content": [{"type": "refusal", "refusal": "I can't."}]});
    let events = [
        created(),
        message_added(0, "msg_1"),
        json!({"type": "response.content_part.added", "item_id": "msg_1", "output_index": 0, "content_index": 0, "part": {"type": "refusal", "refusal": ""}}),
        json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "I can't."}),
        json!({"type": "response.refusal.done", "item_id": "msg_1", "output_index": 0, "content_index": 0, "refusal": "I can't."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": refused.clone()}),
        completed(json!([refused])),
    ];
    check(
        "refusal",
        &sse(&events),
        Expect {
            deltas: json!([
                started(),
                {"type": "refusalDelta", "outputIndex": 0, "contentIndex": 0, "text": "I can't."},
                done("completed", "stop"),
            ]),
            envelope: json!({"kind": "ok", "text": null, "refusal": "I can't.",
                "warnings": ["the model refused in message msg_1; the refusal is in `refusal`, not in `text`"]}),
        },
    );
}

#[test]
fn repeated_missing_and_late_events_are_counted_not_folded() {
    let hello = completed(json!([message("msg_1", "Hello")]));
    let mut events = vec![
        json!({"sequence_number": 0, "type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
        message_added(0, "msg_1"),
        text_delta(0, "msg_1", "Hel"),
        text_delta(0, "msg_1", "lo"),
    ];
    events[1]["sequence_number"] = json!(1);
    events[2]["sequence_number"] = json!(2);
    events[3]["sequence_number"] = json!(5);
    let mut duplicate = events[2].clone();
    duplicate["sequence_number"] = json!(2);
    events.push(duplicate);
    let mut last = hello;
    last["sequence_number"] = json!(6);
    events.push(last);
    let mut late = text_delta(0, "msg_1", "!");
    late["sequence_number"] = json!(7);
    events.push(late);
    let body = format!("{}data: [DONE]\n\ndata: not json\n\n", sse(&events));
    check(
        "a gap, a repeat, late events, [DONE] and garbage",
        &body,
        Expect {
            deltas: json!([
                {"type": "started", "responseId": "resp_1", "model": null},
                {"type": "textDelta", "outputIndex": 0, "contentIndex": 0, "text": "Hel"},
                {"type": "textDelta", "outputIndex": 0, "contentIndex": 0, "text": "lo"},
                done("completed", "stop"),
            ]),
            envelope: json!({"kind": "ok", "text": "Hello", "warnings": [
                "1 stream event was repeated or out of order and skipped (first: sequence number 2 after 5)",
                "2 stream events are missing by sequence number (first gap after 2); the final response is used as sent",
                "2 stream events came after the final response and were ignored",
                "the streamed output differs from the final response at output index 0; the final response is used",
            ]}),
        },
    );
}

#[test]
fn undecodable_and_unknown_events() {
    let events = [
        created(),
        json!({"type": "response.output_item.added", "output_index": 0}),
        json!({"no_type": true}),
        json!({"type": "response.output_text.annotation.added", "output_index": 0}),
        json!({"type": "response.web_search_call.searching", "output_index": 0}),
        args_delta(3, "fc_x", "{}"),
        json!("{not json"),
        completed(json!([message("msg_1", "Hi")])),
    ];
    check(
        "shapes the fold cannot use",
        &sse(&events),
        Expect {
            deltas: json!([started(), done("completed", "stop")]),
            // The payload that is not JSON took a sequence number nobody saw: a gap.
            envelope: json!({"kind": "ok", "text": "Hi", "warnings": [
                "1 stream event is missing by sequence number (first gap after 5); the final response is used as sent",
                "3 stream events could not be decoded and were skipped (first: a `response.output_item.added` event of unexpected shape)",
                "1 stream event referred to output items the stream never added (first: `response.function_call_arguments.delta` at output index 3)",
                "the streamed output differs from the final response at output index 0; the final response is used",
            ]}),
        },
    );
}

#[test]
fn error_events_and_what_follows_them() {
    let error = json!({"type": "error", "code": "server_error", "message": "Blip."});
    let failed_bare = final_event("response.failed", "failed", json!([]));
    check(
        "an error event, then a failed response without its own error",
        &sse(&[created(), error.clone(), failed_bare]),
        Expect {
            deltas: json!([started(), {"type": "error", "code": "server_error", "message": "Blip."}, done("failed", "error")]),
            envelope: json!({"kind": "error", "finishReason": "error", "errorCode": "server_error", "errorMessage": "Blip.",
                "warnings": ["response failed without an error code or message"]}),
        },
    );
    check(
        "an error event, then a completed response",
        &sse(&[
            created(),
            message_added(0, "msg_1"),
            error,
            completed(json!([message("msg_1", "Fine.")])),
        ]),
        Expect {
            deltas: json!([started(), {"type": "error", "code": "server_error", "message": "Blip."}, done("completed", "stop")]),
            envelope: json!({"kind": "ok", "text": "Fine.", "errorCode": null, "warnings": [
                "the streamed output differs from the final response at output index 0; the final response is used",
                "the stream reported an error (server_error: Blip.) but its final response is `completed`",
            ]}),
        },
    );
}

#[test]
fn compatible_servers_that_skip_events_or_names() {
    // No `event:` lines, no `output_item.added`, no sequence numbers, and a final
    // response without its output: the deltas start the message, and fill the output.
    let body = [
        r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"Hi "}"#,
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"there"}"#,
        r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[]}}"#,
    ]
    .iter()
    .map(|data| format!("data: {data}\r\n\r\n"))
    .collect::<String>();
    check(
        "a minimal server",
        &body,
        Expect {
            deltas: json!([
                {"type": "started", "responseId": "resp_1", "model": null},
                {"type": "textDelta", "outputIndex": 0, "contentIndex": 0, "text": "Hi "},
                {"type": "textDelta", "outputIndex": 0, "contentIndex": 0, "text": "there"},
                done("completed", "stop"),
            ]),
            envelope: json!({"kind": "ok", "text": "Hi there", "warnings": [
                "the final response has no output; the 1 item built from the stream events was used instead",
            ]}),
        },
    );
}

#[test]
fn deltas_serialise_for_forwarding() {
    let delta = StreamDelta::TextDelta {
        output_index: 1,
        content_index: 0,
        text: "Hel".into(),
    };
    assert_eq!(
        serde_json::to_string(&delta).unwrap_or_default(),
        r#"{"type":"textDelta","outputIndex":1,"contentIndex":0,"text":"Hel"}"#
    );
    assert_eq!(delta.text(), Some("Hel"));
}

/// Start events are read for their id and model only (the rest of their response is
/// skipped): for each of these, folding the SSE text gives what folding the fully
/// decoded event gives, deltas and result alike, whether the event takes the short
/// reading (`type` first) or not.
#[test]
fn start_events_fold_as_their_full_decoding_does() {
    let rest = [
        r#"{"type":"response.output_text.delta","sequence_number":7,"item_id":"msg_1","output_index":0,"delta":"Hi"}"#,
        r#"{"type":"response.completed","sequence_number":8,"response":{"id":"resp_1","status":"completed","model":"m","output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}]}}"#,
    ];
    let starts = [
        // The usual ones, with a response as OpenAI sends it.
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-4o-mini","output":[],"tools":[],"metadata":{},"usage":null}}"#,
        r#"{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","status":"in_progress","model":"gpt-4o-mini","output":[]}}"#,
        r#"{"type":"response.queued","sequence_number":0,"response":{"id":"resp_q","status":"queued","model":null}}"#,
        // `type` not first: the full decoding.
        r#"{"sequence_number":0,"type":"response.created","response":{"id":"resp_1","model":"m"}}"#,
        // No sequence number; no model.
        r#"{"type":"response.created","response":{"id":"resp_1"}}"#,
        // No id: not a response at all.
        r#"{"type":"response.created","sequence_number":0,"response":{"model":"m"}}"#,
        r#"{"type":"response.created","sequence_number":0,"response":{"id":null,"model":"m"}}"#,
        r#"{"type":"response.created","sequence_number":0,"response":5}"#,
        r#"{"type":"response.created","sequence_number":0}"#,
        // An id of the wrong type, a sequence number as text.
        r#"{"type":"response.created","sequence_number":0,"response":{"id":7,"model":"m"}}"#,
        r#"{"type":"response.created","sequence_number":"0","response":{"id":"resp_1"}}"#,
        // `type` twice, or `response` twice.
        r#"{"type":"response.created","type":"response.output_text.delta","sequence_number":0,"output_index":0,"delta":"x","response":{"id":"resp_1"}}"#,
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"},"response":{"id":"resp_2"}}"#,
        // Not JSON after the opening.
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"}"#,
        // A stale number after a later event is a repeat.
        r#"{"type":"response.in_progress","sequence_number":9,"response":{"id":"resp_1"}}"#,
    ];
    for start in starts {
        let payloads: Vec<&str> = std::iter::once(start).chain(rest).collect();
        assert_sse_folds_as_typed(&payloads);
    }
}

/// Folding `payloads` as SSE text gives what folding their full decodings gives: the
/// same deltas, response id, last sequence number, result and warnings (but for the
/// SSE path's own report of a payload that does not decode at all).
fn assert_sse_folds_as_typed(payloads: &[&str]) {
    use aptix_mapping::StreamFold;
    use aptix_model::wire::StreamEvent;
    let frames: Vec<aptix_sse::SseEvent> = payloads
        .iter()
        .map(|data| aptix_sse::SseEvent {
            data: (*data).to_owned(),
            ..aptix_sse::SseEvent::default()
        })
        .collect();
    let mut short = StreamFold::new();
    let short_deltas: Vec<_> = frames.iter().filter_map(|f| short.apply_sse(f)).collect();
    let mut full = StreamFold::new();
    let mut full_deltas = Vec::new();
    let mut undecodable = 0;
    for frame in &frames {
        match StreamEvent::from_json(&frame.data) {
            Ok(event) => full_deltas.extend(full.apply(event)),
            Err(_) => undecodable += 1,
        }
    }
    let context = payloads.join("\n");
    assert_eq!(short_deltas, full_deltas, "{context}");
    assert_eq!(short.response_id(), full.response_id(), "{context}");
    assert_eq!(
        short.last_sequence_number(),
        full.last_sequence_number(),
        "{context}"
    );
    let (short, full) = (short.finish().unwrap(), full.finish().unwrap());
    assert_eq!(short.response, full.response, "{context}");
    assert_eq!(short.streamed_output, full.streamed_output, "{context}");
    // The typed path never saw an undecodable event; the SSE path reports it.
    assert_eq!(short.events, full.events + undecodable, "{context}");
    let warnings = |folded: &aptix_mapping::FoldedStream| {
        folded
            .warnings
            .iter()
            .map(ToString::to_string)
            .filter(|warning| !warning.contains("could not be decoded"))
            .collect::<Vec<_>>()
    };
    assert_eq!(warnings(&short), warnings(&full), "{context}");
}

/// Delta events are read with their text and item id borrowed where the payload allows;
/// whatever a delta payload holds, folding its SSE text gives what folding its full
/// decoding gives.
#[test]
fn delta_events_fold_as_their_full_decoding_does() {
    let deltas = [
        // As OpenAI writes them.
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello","logprobs":[],"obfuscation":"fnaZ"}"#,
        r#"{"type":"response.function_call_arguments.delta","sequence_number":10,"item_id":"fc_1","output_index":1,"delta":"{\"a\":"}"#,
        r#"{"type":"response.refusal.delta","sequence_number":10,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"No"}"#,
        r#"{"type":"response.reasoning_summary_text.delta","sequence_number":10,"item_id":"rs_1","output_index":2,"summary_index":0,"delta":"Think"}"#,
        // Escapes in the text and in the item id.
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"line\n\"two\" \u00e9 \ud83d\ude00"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg\u005f1","output_index":0,"content_index":0,"delta":"x"}"#,
        // Absent or null fields.
        r#"{"type":"response.output_text.delta","sequence_number":10,"output_index":0,"delta":"no id"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":null,"output_index":0,"content_index":null,"delta":"nulls"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_1","output_index":0,"delta":null}"#,
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_1","output_index":0}"#,
        r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"no number"}"#,
        // Wrong types, missing index, `type` twice, `type` not first.
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_1","output_index":"0","delta":"x"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":7,"output_index":0,"delta":"x"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_1","output_index":0,"delta":5}"#,
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_1","delta":"x"}"#,
        r#"{"type":"response.output_text.delta","type":"response.refusal.delta","sequence_number":10,"output_index":0,"delta":"x"}"#,
        r#"{"sequence_number":10,"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"delta":"late type"}"#,
        r#"{"type":"response.output_text.deltas","sequence_number":10,"output_index":0,"delta":"x"}"#,
        r#"{"type":"response.output_text.delta" ,"sequence_number":10,"output_index":0,"delta":"x"}"#,
        // A delta for an index with no item; a stale number; not JSON after the opening.
        r#"{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_9","output_index":9,"delta":"orphan"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"delta":"stale"}"#,
        r#"{"type":"response.output_text.delta","sequence_number":10,"output_index":0,"delta":"x""#,
    ];
    for delta in deltas {
        assert_sse_folds_as_typed(&around_a_delta(delta));
    }
}

/// `delta` in a stream that has a message at index 0, a function call at 1 and a
/// reasoning item at 2, from its start to its final response.
fn around_a_delta(delta: &str) -> Vec<&str> {
    let start =
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","model":"m"}}"#;
    let items = [
        r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}"#,
        r#"{"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}"#,
        r#"{"type":"response.output_item.added","sequence_number":3,"output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":""}}"#,
        r#"{"type":"response.output_item.added","sequence_number":4,"output_index":2,"item":{"type":"reasoning","id":"rs_1","summary":[]}}"#,
    ];
    let end = r#"{"type":"response.completed","sequence_number":99,"response":{"id":"resp_1","status":"completed","model":"m","output":[]}}"#;
    let mut payloads = vec![start];
    payloads.extend(items);
    payloads.push(delta);
    payloads.push(end);
    payloads
}

/// The one difference the short reading makes, on purpose: a start event whose response
/// is malformed only where the fold does not read it still starts the response from its
/// SSE text (the typed event, which had to decode whole, is a known event of unexpected
/// shape).
#[test]
fn a_start_event_is_not_judged_on_what_the_fold_does_not_read() {
    use aptix_mapping::StreamFold;
    let frame = aptix_sse::SseEvent {
        data: r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","model":"m","output":5,"tools":"none"}}"#.to_owned(),
        ..aptix_sse::SseEvent::default()
    };
    let mut fold = StreamFold::new();
    assert_eq!(
        fold.apply_sse(&frame),
        Some(StreamDelta::Started {
            response_id: "resp_1".into(),
            model: Some("m".into()),
        })
    );
    assert_eq!(fold.response_id(), Some("resp_1"));
    assert_eq!(fold.last_sequence_number(), Some(0));
}

proptest::proptest! {
    /// Any delta payload written `type` first (the short reading's way in), whatever its
    /// other fields, their order and their values: folding its SSE text gives what
    /// folding its full decoding gives.
    #[test]
    fn any_delta_payload_folds_as_its_full_decoding_does(
        kind in proptest::sample::select(&[
            "response.output_text.delta",
            "response.refusal.delta",
            "response.function_call_arguments.delta",
            "response.reasoning_summary_text.delta",
        ][..]),
        fields in proptest::collection::vec(
            (
                proptest::sample::select(&[
                    "type", "sequence_number", "item_id", "output_index", "content_index",
                    "summary_index", "delta", "logprobs", "obfuscation",
                ][..]),
                proptest::sample::select(&[
                    "0", "1", "2", "11", "-1", "1.5", "\"0\"", "null", "true", "[]", "{}",
                    "\"msg_1\"", "\"fc_1\"", "\"rs_1\"", "\"msg\\u005f1\"", "\"Hello\"",
                    "\"a\\nb \\\"c\\\" \\ud83d\\ude00\"", "\"\"", "\"response.refusal.delta\"",
                ][..]),
            ),
            0..8,
        ),
    ) {
        let mut delta = format!(r#"{{"type":"{kind}""#);
        for (key, value) in &fields {
            delta.push_str(&format!(r#","{key}":{value}"#));
        }
        delta.push('}');
        assert_sse_folds_as_typed(&around_a_delta(&delta));
    }
}

//! Every recorded `.sse` stream decodes fully, and identically whatever the chunking
//! (ripgrep's `SearcherTester` idea: one scenario through every code path).
//!
//! "Fully" is checked against the recording itself: as many events as it has `event:`
//! lines, `sequence_number` counting 0, 1, 2, ... with none skipped, each `data` a JSON
//! object whose `type` equals the event name, and a terminal event last.

use aptix_sse::{SseDecoder, SseEvent};
use aptix_testkit::{fixture_names, read_fixture};
use serde_json::Value;

/// Feeds `chunks` in order, draining after each, then finishes. Any error fails.
fn decode(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.feed(chunk);
        while let Some(result) = decoder.next_event() {
            events.push(result.unwrap_or_else(|error| panic!("decoding failed: {error}")));
        }
    }
    while let Some(event) = decoder
        .finish()
        .unwrap_or_else(|error| panic!("finishing failed: {error}"))
    {
        events.push(event);
    }
    events
}

/// The checks that tie the decoded events to the recording they came from.
fn assert_complete(name: &str, text: &str, events: &[SseEvent]) {
    let event_lines = text
        .lines()
        .filter(|line| line.starts_with("event:"))
        .count();
    assert!(event_lines > 0, "{name}: the recording has no events");
    assert_eq!(events.len(), event_lines, "{name}: events decoded");
    for (index, event) in events.iter().enumerate() {
        let name_field = event
            .event
            .as_deref()
            .unwrap_or_else(|| panic!("{name}: event {index} has no event name"));
        let json: Value = serde_json::from_str(&event.data)
            .unwrap_or_else(|error| panic!("{name}: event {index} data is not JSON: {error}"));
        assert_eq!(json["type"], name_field, "{name}: event {index} type");
        assert_eq!(
            json["sequence_number"], index,
            "{name}: event {index} sequence_number"
        );
    }
    let last = events.last().map(SseEvent::event_type);
    assert!(
        matches!(
            last,
            Some("response.completed" | "response.failed" | "response.incomplete")
        ),
        "{name}: ends with {last:?}, not a terminal event"
    );
}

#[test]
fn every_fixture_decodes_fully_when_fed_whole() {
    for name in fixture_names(".sse") {
        let bytes = read_fixture(&name);
        let text = String::from_utf8_lossy(&bytes);
        assert_complete(&name, &text, &decode(&[&bytes]));
    }
}

#[test]
fn every_two_way_split_gives_the_same_events() {
    for name in fixture_names(".sse") {
        let bytes = read_fixture(&name);
        let whole = decode(&[&bytes]);
        for split in 0..=bytes.len() {
            let (head, tail) = bytes.split_at(split);
            assert_eq!(
                decode(&[head, tail]),
                whole,
                "{name}: split at byte {split}"
            );
        }
    }
}

#[test]
fn one_byte_chunks_give_the_same_events() {
    for name in fixture_names(".sse") {
        let bytes = read_fixture(&name);
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode(&chunks), decode(&[&bytes]), "{name}");
    }
}

#[test]
fn crlf_and_cr_line_ends_give_the_same_events() {
    for name in fixture_names(".sse") {
        let bytes = read_fixture(&name);
        let whole = decode(&[&bytes]);
        for line_end in [&b"\r\n"[..], b"\r"] {
            let converted: Vec<u8> = bytes
                .split(|byte| *byte == b'\n')
                .collect::<Vec<_>>()
                .join(line_end);
            let chunks: Vec<&[u8]> = converted.chunks(1).collect();
            assert_eq!(decode(&[&converted]), whole, "{name}: {line_end:?} whole");
            assert_eq!(decode(&chunks), whole, "{name}: {line_end:?} byte by byte");
        }
    }
}

#[test]
fn a_missing_final_blank_line_loses_nothing() {
    for name in fixture_names(".sse") {
        let bytes = read_fixture(&name);
        let whole = decode(&[&bytes]);
        for trimmed in [
            bytes.strip_suffix(b"\n").unwrap_or(&bytes),
            bytes.strip_suffix(b"\n\n").unwrap_or(&bytes),
        ] {
            assert!(trimmed.len() < bytes.len(), "{name}: nothing trimmed");
            assert_eq!(decode(&[trimmed]), whole, "{name}: {} bytes", trimmed.len());
        }
    }
}

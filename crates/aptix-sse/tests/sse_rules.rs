//! The SSE parsing rules, one table row each: input bytes -> expected events.
//!
//! Every row goes through one `check` helper that decodes the input whole, one byte at
//! a time and split in two at every position, so each rule is also checked against
//! every chunk boundary (inside a UTF-8 character, between CR and LF, ...).

use aptix_sse::{SseDecoder, SseError, SseEvent};

/// What the decoder produced: an event, or an error as its message.
type Outcome = Result<SseEvent, String>;

/// Feeds `chunks` in order, draining after each, then finishes until nothing is left.
fn decode(decoder: &mut SseDecoder, chunks: &[&[u8]]) -> Vec<Outcome> {
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.feed(chunk);
        while let Some(result) = decoder.next_event() {
            out.push(result.map_err(|error| error.to_string()));
        }
    }
    loop {
        match decoder.finish() {
            Ok(Some(event)) => out.push(Ok(event)),
            Ok(None) => break,
            Err(error) => out.push(Err(error.to_string())),
        }
    }
    out
}

/// Decodes `input` whole, byte by byte and in every two-way split with a decoder of
/// the given limit, and asserts each gives `expected`.
fn check_with_limit(name: &str, limit: usize, input: &[u8], expected: &[Outcome]) {
    let whole = decode(&mut SseDecoder::with_max_event_size(limit), &[input]);
    assert_eq!(whole, expected, "{name}: fed whole");
    let bytes: Vec<&[u8]> = input.chunks(1).collect();
    let byte_by_byte = decode(&mut SseDecoder::with_max_event_size(limit), &bytes);
    assert_eq!(byte_by_byte, expected, "{name}: fed one byte at a time");
    for split in 0..=input.len() {
        let (head, tail) = input.split_at(split);
        let halves = decode(&mut SseDecoder::with_max_event_size(limit), &[head, tail]);
        assert_eq!(halves, expected, "{name}: split at byte {split}");
    }
}

fn check(name: &str, input: &[u8], expected: &[SseEvent]) {
    let expected: Vec<Outcome> = expected.iter().cloned().map(Ok).collect();
    check_with_limit(name, aptix_sse::DEFAULT_MAX_EVENT_SIZE, input, &expected);
}

/// An event with only data.
fn data(data: &str) -> SseEvent {
    SseEvent {
        data: data.to_owned(),
        ..SseEvent::default()
    }
}

/// An event with a type and data.
fn typed(event: &str, data: &str) -> SseEvent {
    SseEvent {
        event: Some(event.to_owned()),
        data: data.to_owned(),
        ..SseEvent::default()
    }
}

fn with_id(id: &str, event: SseEvent) -> SseEvent {
    SseEvent {
        id: Some(id.to_owned()),
        ..event
    }
}

fn with_retry(retry: u64, event: SseEvent) -> SseEvent {
    SseEvent {
        retry: Some(retry),
        ..event
    }
}

#[test]
fn line_ends() {
    let rows: &[(&str, &[u8], Vec<SseEvent>)] = &[
        ("lf", b"event: a\ndata: 1\n\n", vec![typed("a", "1")]),
        (
            "crlf",
            b"event: a\r\ndata: 1\r\n\r\n",
            vec![typed("a", "1")],
        ),
        ("cr", b"event: a\rdata: 1\r\r", vec![typed("a", "1")]),
        (
            "mixed in one event",
            b"data: 1\r\ndata: 2\rdata: 3\n\r\n",
            vec![data("1\n2\n3")],
        ),
        (
            "crlf is one line end, not a line end and a blank line",
            b"data: 1\r\ndata: 2\r\n\r\n",
            vec![data("1\n2")],
        ),
        (
            "lf then cr is two line ends",
            b"data: 1\n\rdata: 2\n\n",
            vec![data("1"), data("2")],
        ),
        (
            "blank lines between events change nothing",
            b"\n\r\n\rdata: 1\n\n\n\ndata: 2\n\n",
            vec![data("1"), data("2")],
        ),
    ];
    for (name, input, expected) in rows {
        check(name, input, expected);
    }
}

#[test]
fn fields() {
    let rows: &[(&str, &[u8], Vec<SseEvent>)] = &[
        (
            "one leading space stripped, not more",
            b"data:  two\n\n",
            vec![data(" two")],
        ),
        ("no space after the colon", b"data:x\n\n", vec![data("x")]),
        ("a tab is not stripped", b"data:\tx\n\n", vec![data("\tx")]),
        (
            "colons in the value are kept",
            b"data: {\"a\": 1}\n\n",
            vec![data("{\"a\": 1}")],
        ),
        (
            "a line without colon is an empty field",
            b"data\n\n",
            vec![data("")],
        ),
        (
            "an empty data line still dispatches",
            b"data:\n\n",
            vec![data("")],
        ),
        (
            "data lines join with lf",
            b"data: a\ndata:\ndata: b\n\n",
            vec![data("a\n\nb")],
        ),
        (
            "comments are ignored",
            b": keep-alive\ndata: x\n:\n\n:only a comment\n\n",
            vec![data("x")],
        ),
        (
            "unknown and differently spelt fields are ignored",
            b"foo: bar\nData: no\ndata : no\ndata: yes\n\n",
            vec![data("yes")],
        ),
        ("nul in data is kept", b"data: a\0b\n\n", vec![data("a\0b")]),
    ];
    for (name, input, expected) in rows {
        check(name, input, expected);
    }
}

#[test]
fn event_type_and_dispatch() {
    let rows: &[(&str, &[u8], Vec<SseEvent>)] = &[
        (
            "an event without data is not dispatched, and its type is reset",
            b"event: a\n\ndata: x\n\n",
            vec![data("x")],
        ),
        (
            "the last event field wins",
            b"event: a\nevent: b\ndata: x\n\n",
            vec![typed("b", "x")],
        ),
        (
            "an empty event field means the default type",
            b"event: a\nevent:\ndata: x\n\n",
            vec![data("x")],
        ),
        (
            "the type does not carry over",
            b"event: a\ndata: 1\n\ndata: 2\n\n",
            vec![typed("a", "1"), data("2")],
        ),
    ];
    for (name, input, expected) in rows {
        check(name, input, expected);
    }
}

#[test]
fn id_and_retry() {
    let rows: &[(&str, &[u8], Vec<SseEvent>)] = &[
        (
            "the id carries over until changed or emptied",
            b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
            vec![with_id("1", data("a")), with_id("1", data("b")), data("c")],
        ),
        (
            "an id containing nul is ignored",
            b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n",
            vec![with_id("1", data("a")), with_id("1", data("b"))],
        ),
        (
            "an id from an event without data still applies",
            b"id: 7\n\ndata: a\n\n",
            vec![with_id("7", data("a"))],
        ),
        (
            "retry takes digits only and does not carry over",
            b"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry: -1\ndata: c\n\n\
              retry:\ndata: d\n\nretry: +5\ndata: e\n\nretry:  5\ndata: f\n\n",
            vec![
                with_retry(1500, data("a")),
                data("b"),
                data("c"),
                data("d"),
                data("e"),
                data("f"),
            ],
        ),
        (
            "a retry too large for u64 is ignored, the last valid one wins",
            b"retry: 7\nretry: 99999999999999999999999\ndata: a\n\n",
            vec![with_retry(7, data("a"))],
        ),
    ];
    for (name, input, expected) in rows {
        check(name, input, expected);
    }
}

#[test]
fn text_and_byte_order_mark() {
    let rows: &[(&str, &[u8], Vec<SseEvent>)] = &[
        (
            "multi-byte characters survive every split",
            "data: héllo 😀 €\n\n".as_bytes(),
            vec![data("héllo 😀 €")],
        ),
        (
            "invalid utf-8 becomes the replacement character",
            b"data: a\xFFb\xE2\x82\n\n",
            vec![data("a\u{FFFD}b\u{FFFD}")],
        ),
        (
            "a bom at the start is skipped",
            b"\xEF\xBB\xBFdata: x\n\n",
            vec![data("x")],
        ),
        (
            "only the first bom is skipped",
            b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n",
            vec![data("y")],
        ),
        (
            "the start of a bom alone is not skipped",
            b"\xEF\xBBdata: x\n\ndata: y\n\n",
            vec![data("y")],
        ),
        (
            "a lone bom prefix at the end is harmless",
            b"\xEF\xBB",
            vec![],
        ),
    ];
    for (name, input, expected) in rows {
        check(name, input, expected);
    }
}

#[test]
fn end_of_input() {
    let rows: &[(&str, &[u8], Vec<SseEvent>)] = &[
        ("empty input", b"", vec![]),
        ("blank lines only", b"\n\r\n\r", vec![]),
        (
            "an event without its blank line is dispatched",
            b"event: a\ndata: 1\n",
            vec![typed("a", "1")],
        ),
        (
            "an unfinished last line counts as complete",
            b"data: 1\n\ndata: 2",
            vec![data("1"), data("2")],
        ),
        ("a final cr ends the line", b"data: 1\r", vec![data("1")]),
        (
            "a pending event without data is not dispatched",
            b"data: 1\n\nevent: a\nid: 3\n",
            vec![data("1")],
        ),
    ];
    for (name, input, expected) in rows {
        check(name, input, expected);
    }
}

#[test]
fn oversized_events_are_reported_once_and_skipped() {
    let too_large = |offset: u64| Err(SseError::EventTooLarge { limit: 20, offset }.to_string());
    // "data: 0123456789abc\n" is 20 bytes: exactly at the limit is fine.
    check_with_limit(
        "at the limit",
        20,
        b"data: 0123456789abc\n\n",
        &[Ok(data("0123456789abc"))],
    );
    check_with_limit(
        "one line over the limit, then a good event",
        20,
        b"data: a\n\ndata: 0123456789abcd\ndata: more\n\ndata: ok\n\n",
        &[Ok(data("a")), too_large(9), Ok(data("ok"))],
    );
    check_with_limit(
        "small lines adding up past the limit",
        20,
        b": c\ndata: 1\ndata: 2\ndata: 3\n\ndata: ok\n\n",
        &[too_large(0), Ok(data("ok"))],
    );
    check_with_limit(
        "a line over the limit that never ends",
        20,
        b"data: ok\n\ndata: 0123456789012345678901234567890123456789",
        &[Ok(data("ok")), too_large(10)],
    );
    // Found by the arbitrary-bytes property: a CRLF split across two chunks counted
    // one byte less than a whole one, so the same stream was over the limit or not
    // depending on chunking. A line end now counts as one byte whatever its spelling.
    let mut crlf_then_long_line = vec![0u8; 7];
    crlf_then_long_line.extend_from_slice(b"\r\n");
    crlf_then_long_line.extend_from_slice(&[b'x'; 43]);
    // 7 bytes + one line end + 43 bytes = 51: over a limit of 50 and within 51, in
    // every chunking.
    check_with_limit(
        "a CRLF counts as one byte wherever the chunks split it: over the limit",
        50,
        &crlf_then_long_line,
        &[Err(SseError::EventTooLarge {
            limit: 50,
            offset: 0,
        }
        .to_string())],
    );
    check_with_limit(
        "a CRLF counts as one byte wherever the chunks split it: at the limit",
        51,
        &crlf_then_long_line,
        &[],
    );
    check_with_limit(
        "CRLF and LF line ends weigh the same",
        20,
        b"data: 0123456789abc\r\n\r\n",
        &[Ok(data("0123456789abc"))],
    );
    assert_eq!(
        SseError::EventTooLarge {
            limit: 20,
            offset: 9
        }
        .to_string(),
        "sse event starting at byte 9 is larger than the limit of 20 bytes"
    );
}

#[test]
fn a_line_that_never_ends_is_not_buffered() {
    let limit = 1024;
    let mut decoder = SseDecoder::with_max_event_size(limit);
    decoder.feed(b"data: ok\n\ndata: ");
    let mut outcomes = Vec::new();
    let mut most_buffered = 0;
    for _ in 0..1000 {
        decoder.feed(&[b'x'; 100]);
        while let Some(result) = decoder.next_event() {
            outcomes.push(result.map_err(|error| error.to_string()));
        }
        most_buffered = most_buffered.max(decoder.buffered_len());
    }
    // 100 KB went in; never more than the limit plus one chunk was held.
    assert!(most_buffered <= limit + 100, "buffered {most_buffered}");
    assert_eq!(decoder.buffered_len(), 0, "the skipped line is not kept");
    decoder.feed(b"xxx\ndata: dropped\n\ndata: next\n\n");
    while let Some(result) = decoder.next_event() {
        outcomes.push(result.map_err(|error| error.to_string()));
    }
    assert_eq!(
        decoder.finish().map_err(|error| error.to_string()),
        Ok(None)
    );
    let expected = vec![
        Ok(data("ok")),
        Err(SseError::EventTooLarge { limit, offset: 10 }.to_string()),
        Ok(data("next")),
    ];
    assert_eq!(outcomes, expected);
}

#[test]
fn finish_returns_undrained_events_in_order_then_resets() {
    let mut decoder = SseDecoder::new();
    decoder.feed(b"id: 4\nretry: 300\n\ndata: a\n\ndata: b\n\ndata: c");
    let mut finished = Vec::new();
    while let Some(event) = decoder
        .finish()
        .map_err(|error| error.to_string())
        .transpose()
    {
        finished.push(event);
    }
    let expected: Vec<Outcome> = ["a", "b", "c"]
        .into_iter()
        .map(|text| Ok(with_id("4", data(text))))
        .collect();
    assert_eq!(finished, expected);
    // The retry came in an event that was never dispatched, and is still known.
    assert_eq!(decoder.reconnection_time(), Some(300));
    assert_eq!(decoder.last_event_id(), Some("4"));

    // A new stream: its byte order mark is skipped again, the last event ID is kept.
    assert_eq!(
        decode(&mut decoder, &[b"\xEF\xBB\xBFdata: new\n\n"]),
        vec![Ok(with_id("4", data("new")))]
    );
}

#[test]
fn event_type_defaults_to_message() {
    assert_eq!(data("x").event_type(), "message");
    assert_eq!(
        typed("response.created", "x").event_type(),
        "response.created"
    );
}

//! Mapping throughput: decoding and folding a streamed answer, and mapping a large
//! response, with `eventsource-stream` 0.2 on the same stream bytes as the yardstick.
//!
//! The stream is the recorded `sse_text_deltas.sse` scaled to about 1 MB: its opening
//! events, then its `response.output_text.delta` events repeated with increasing
//! sequence numbers, then `output_item.done` and `response.completed` carrying the whole
//! text, so the fold ends clean (checked before measuring). Our side decodes the SSE,
//! decodes every event's JSON, folds it and emits its delta. It is measured next to two
//! `eventsource-stream` yardsticks on the same bytes and chunks (1 KiB and 16 KiB,
//! typical network reads):
//! - the same work on top of `eventsource-stream`: its events, each decoded into the wire
//!   `StreamEvent` with `serde_json` and folded by the same `StreamFold` (what one would
//!   build with that crate, and what this crate's pipeline replaces);
//! - `eventsource-stream`'s framing alone, with no JSON at all: a conservative floor.
//!
//! The response is about 200 KB: many messages of several `output_text` parts, plus
//! function calls, decoded from bytes and mapped (`map_response_body`), and mapped alone
//! from the decoded value (`map_response`).
//!
//! Run: `cargo bench -p aptix-mapping --bench mapping`.

use std::convert::Infallible;
use std::fmt;
use std::sync::LazyLock;

use aptix_mapping::{
    SseBodyFold, StreamFold, TurnContext, map_folded, map_response, map_response_body,
};
use aptix_model::wire::{Response, StreamEvent};
use divan::counter::BytesCount;
use divan::{Bencher, black_box};
use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::{Value, json};

fn main() {
    // The inputs must be what they claim before their speed means anything.
    let chunks: Vec<&[u8]> = STREAM.chunks(16 * 1024).collect();
    let folded = fold(&chunks);
    assert!(folded.1 > 4000, "too few deltas: {}", folded.1);
    assert_eq!(
        folded.0,
        eventsource_stream_count(&chunks),
        "event counts differ"
    );
    assert_eq!(
        folded,
        eventsource_stream_fold(&chunks),
        "the two pipelines fold differently"
    );
    let mapped = map_response_body(&RESPONSE, &TurnContext::default())
        .unwrap_or_else(|error| panic!("benchmark response: {error}"));
    assert!(mapped.warnings.is_empty(), "{:?}", mapped.warnings);
    let text = mapped.envelope.text.as_ref().map_or(0, String::len);
    assert!(
        (180_000..280_000).contains(&RESPONSE.len()),
        "{}",
        RESPONSE.len()
    );
    assert!(text > 90_000, "{text}");
    assert_eq!(mapped.envelope.tool_calls.len(), 22);
    eprintln!(
        "stream: {} bytes, {} events; response: {} bytes, {text} bytes of text",
        STREAM.len(),
        folded.0,
        RESPONSE.len()
    );
    // Set `APTIX_BENCH_UNPAIRED=1` to skip the paired rounds (when profiling one bench).
    if std::env::var_os("APTIX_BENCH_UNPAIRED").is_none() {
        paired_report();
    }
    divan::main();
}

/// Paired rounds: this machine's speed drifts by up to 2x over seconds (a shared
/// virtual machine), so benchmarks run one after the other can land in different
/// phases. Here each round times our pipeline and both yardsticks back to back on the
/// same chunks, and the ratios are taken within the round; their median is the figure
/// to quote. Divan's table follows for the absolute numbers.
fn paired_report() {
    const ROUNDS: usize = 60;
    let mb = STREAM.len() as f64 / 1e6;
    for chunking in CHUNKINGS {
        let chunks = chunking.chunks();
        let mut ours = Vec::with_capacity(ROUNDS);
        let mut framing = Vec::with_capacity(ROUNDS);
        let mut same_work = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let [a, b, c] = [
                time(|| fold(black_box(&chunks))),
                time(|| eventsource_stream_count(black_box(&chunks))),
                time(|| eventsource_stream_fold(black_box(&chunks))),
            ];
            ours.push(a);
            framing.push(b / a);
            same_work.push(c / a);
        }
        eprintln!(
            "paired, {chunking} chunks, {ROUNDS} rounds: ours {:.0} MB/s (median); \
             eventsource-stream framing only takes {:.2}x our time (quartiles {:.2}-{:.2}); \
             eventsource-stream + serde_json + the same fold takes {:.2}x ({:.2}-{:.2})",
            mb / median(&mut ours),
            median(&mut framing),
            quartile(&framing, 1),
            quartile(&framing, 3),
            median(&mut same_work),
            quartile(&same_work, 1),
            quartile(&same_work, 3),
        );
    }
}

fn time<T>(work: impl FnOnce() -> T) -> f64 {
    let start = std::time::Instant::now();
    black_box(work());
    start.elapsed().as_secs_f64()
}

/// Sorts `values` and returns the middle one.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    quartile(values, 2)
}

/// The `n`th quartile of sorted `values`.
fn quartile(values: &[f64], n: usize) -> f64 {
    values
        .get(values.len() * n / 4)
        .copied()
        .unwrap_or(f64::NAN)
}

/// Target size of the generated stream.
const STREAM_SIZE: usize = 1 << 20;

/// About 1 MB of events built from the recording; see the module docs.
static STREAM: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let recording = aptix_testkit::read_fixture_text("sse_text_deltas.sse");
    let events: Vec<&str> = recording.split_inclusive("\n\n").collect();
    let is = |event: &&str, name: &str| event.starts_with(&format!("event: {name}\n"));
    let opening: Vec<&str> = events
        .iter()
        .take_while(|event| !is(event, "response.output_text.delta"))
        .copied()
        .collect();
    let deltas: Vec<&str> = events
        .iter()
        .filter(|event| is(event, "response.output_text.delta"))
        .copied()
        .collect();
    let completed = events
        .iter()
        .find(|event| is(event, "response.completed"))
        .unwrap_or_else(|| panic!("no response.completed in the recording"));

    // The opening events are numbered 0, 1, ...; the deltas carry on from there.
    let mut sequence_number = opening.len() as u64 - 1;
    let mut stream: String = opening.concat();
    let mut text = String::new();
    while stream.len() < STREAM_SIZE {
        for delta in &deltas {
            sequence_number += 1;
            stream.push_str(&renumber(delta, sequence_number));
            text.push_str(data_of(delta)["delta"].as_str().unwrap_or_default());
        }
    }
    // The final events carry the whole text, as a real stream's would.
    let mut completed = data_of(completed);
    completed["response"]["output"][0]["content"][0]["text"] = json!(text);
    let item = completed["response"]["output"][0].clone();
    for (name, mut data) in [
        (
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
        ("response.completed", completed),
    ] {
        sequence_number += 1;
        data["sequence_number"] = json!(sequence_number);
        stream.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    }
    stream.into_bytes()
});

/// An event with its `sequence_number` replaced in place, so the JSON keeps the
/// recording's key order (`type` first, as OpenAI sends it).
fn renumber(event: &str, sequence_number: u64) -> String {
    const KEY: &str = "\"sequence_number\":";
    let Some(start) = event.find(KEY).map(|at| at + KEY.len()) else {
        panic!("no sequence number in {event}");
    };
    let digits = event[start..]
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(0);
    format!(
        "{}{sequence_number}{}",
        &event[..start],
        &event[start + digits..]
    )
}

fn data_of(event: &str) -> Value {
    let data = event
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or_else(|| panic!("no data in {event}"));
    serde_json::from_str(data).unwrap_or_else(|error| panic!("{error}"))
}

/// About 200 KB of response: 220 messages of three `output_text` parts each, with a
/// function call after every tenth message.
static RESPONSE: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let paragraph = "The parser reads the header, then each record; an empty input \
                     yields no records and no error, which is why `parse` returns Ok(vec![]). ";
    let mut output = Vec::new();
    for index in 0..220 {
        output.push(json!({
            "type": "message", "id": format!("msg_{index}"), "role": "assistant", "status": "completed",
            "content": (0..3).map(|part| json!({
                "type": "output_text", "annotations": [], "logprobs": [],
                "text": format!("{index}.{part} {}", paragraph),
            })).collect::<Vec<_>>(),
        }));
        if index % 10 == 9 {
            output.push(json!({
                "type": "function_call", "id": format!("fc_{index}"), "call_id": format!("call_{index}"),
                "name": "read_file", "arguments": format!("{{\"path\":\"src/file_{index}.rs\"}}"),
                "status": "completed",
            }));
        }
    }
    let response = json!({
        "id": "resp_bench", "object": "response", "status": "completed", "model": "gpt-4o-mini",
        "output": output,
        "usage": {"input_tokens": 1000, "output_tokens": 50000, "total_tokens": 51000},
    });
    serde_json::to_vec_pretty(&response).unwrap_or_default()
});

static DECODED: LazyLock<Response> =
    LazyLock::new(|| serde_json::from_slice(&RESPONSE).unwrap_or_else(|error| panic!("{error}")));

/// How the stream is cut before it is fed.
#[derive(Clone, Copy)]
enum Chunking {
    Kib1,
    Kib16,
}

impl Chunking {
    fn chunks(self) -> Vec<&'static [u8]> {
        let size = match self {
            Self::Kib1 => 1024,
            Self::Kib16 => 16 * 1024,
        };
        STREAM.chunks(size).collect()
    }
}

impl fmt::Display for Chunking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Kib1 => "1KiB",
            Self::Kib16 => "16KiB",
        })
    }
}

const CHUNKINGS: [Chunking; 2] = [Chunking::Kib1, Chunking::Kib16];

/// Decodes, folds and maps; returns the events folded and the deltas emitted.
fn fold(chunks: &[&[u8]]) -> (u64, usize) {
    let mut folder = SseBodyFold::new();
    let mut deltas = Vec::with_capacity(64);
    let mut emitted = 0;
    for chunk in chunks {
        folder.feed_into(chunk, &mut deltas);
        // A consumer takes the deltas as they come; the buffer is reused.
        emitted += deltas.len();
        deltas.clear();
    }
    let folded = folder
        .finish()
        .unwrap_or_else(|error| panic!("benchmark stream: {error}"));
    assert!(folded.warnings.is_empty(), "{:?}", folded.warnings);
    let events = folded.events;
    let mapped = map_folded(folded, &TurnContext::default());
    black_box(&mapped);
    (events, emitted)
}

/// Events framed by `eventsource-stream`, which does not look inside them.
fn eventsource_stream_count(chunks: &[&[u8]]) -> u64 {
    let stream = futures::stream::iter(chunks.iter().map(|chunk| Ok::<_, Infallible>(*chunk)));
    futures::executor::block_on(stream.eventsource().fold(0, |count, event| async move {
        match event {
            Ok(event) => {
                black_box(event.data.len());
                count + 1
            }
            Err(error) => panic!("benchmark stream failed to decode: {error}"),
        }
    }))
}

/// [`fold`], with `eventsource-stream` framing and `serde_json` decoding each event.
fn eventsource_stream_fold(chunks: &[&[u8]]) -> (u64, usize) {
    let stream = futures::stream::iter(chunks.iter().map(|chunk| Ok::<_, Infallible>(*chunk)));
    let (fold, emitted) = futures::executor::block_on(stream.eventsource().fold(
        (StreamFold::new(), 0),
        |(mut fold, emitted), event| async move {
            let event = event.unwrap_or_else(|error| panic!("benchmark stream: {error}"));
            let event = StreamEvent::from_json(&event.data)
                .unwrap_or_else(|error| panic!("benchmark event: {error}"));
            let emitted = emitted + usize::from(fold.apply(event).is_some());
            (fold, emitted)
        },
    ));
    let folded = fold
        .finish()
        .unwrap_or_else(|error| panic!("benchmark stream: {error}"));
    assert!(folded.warnings.is_empty(), "{:?}", folded.warnings);
    let events = folded.events;
    let mapped = map_folded(folded, &TurnContext::default());
    black_box(&mapped);
    (events, emitted)
}

/// SSE decoding, JSON decoding, folding and mapping of the stream.
#[divan::bench(args = CHUNKINGS)]
fn stream_fold_and_map(bencher: Bencher<'_, '_>, chunking: Chunking) {
    let chunks = chunking.chunks();
    bencher
        .counter(BytesCount::of_slice(&*STREAM))
        .bench(|| fold(black_box(&chunks)));
}

/// The same decoding and folding built on `eventsource-stream` 0.2: its events, each
/// decoded with `serde_json` into the wire type and folded, then mapped.
#[divan::bench(args = CHUNKINGS)]
fn stream_eventsource_stream_same_work(bencher: Bencher<'_, '_>, chunking: Chunking) {
    let chunks = chunking.chunks();
    bencher
        .counter(BytesCount::of_slice(&*STREAM))
        .bench(|| eventsource_stream_fold(black_box(&chunks)));
}

/// SSE framing alone, by `eventsource-stream` 0.2: the conservative yardstick.
#[divan::bench(args = CHUNKINGS)]
fn stream_eventsource_stream_sse_only(bencher: Bencher<'_, '_>, chunking: Chunking) {
    let chunks = chunking.chunks();
    bencher
        .counter(BytesCount::of_slice(&*STREAM))
        .bench(|| eventsource_stream_count(black_box(&chunks)));
}

/// A 200 KB body decoded and mapped, raw text kept.
#[divan::bench]
fn response_body_decode_and_map(bencher: Bencher<'_, '_>) {
    let turn = TurnContext::default();
    bencher
        .counter(BytesCount::of_slice(&*RESPONSE))
        .bench(|| map_response_body(black_box(&RESPONSE), &turn));
}

/// The same response, already decoded, mapped (re-serialised as `rawResponseJson`
/// because no raw text is given).
#[divan::bench]
fn response_map_decoded(bencher: Bencher<'_, '_>) {
    let turn = TurnContext::default();
    bencher
        .counter(BytesCount::of_slice(&*RESPONSE))
        .bench(|| map_response(black_box(&DECODED), None, &turn));
}

/// SSE framing alone, by our decoder, for reference.
#[divan::bench(args = CHUNKINGS)]
fn stream_aptix_sse_only(bencher: Bencher<'_, '_>, chunking: Chunking) {
    let chunks = chunking.chunks();
    bencher.counter(BytesCount::of_slice(&*STREAM)).bench(|| {
        let mut decoder = aptix_sse::SseDecoder::new();
        let mut count = 0usize;
        for chunk in &chunks {
            decoder.feed(chunk);
            while let Some(event) = decoder.next_event() {
                count += event.map_or(0, |event| event.data.len());
            }
        }
        count
    });
}

/// JSON decoding and folding alone, from SSE events framed beforehand: the fold's share.
#[divan::bench]
fn stream_fold_of_framed_events(bencher: Bencher<'_, '_>) {
    let mut decoder = aptix_sse::SseDecoder::new();
    decoder.feed(&STREAM);
    let mut events = Vec::new();
    while let Some(Ok(event)) = decoder.next_event() {
        events.push(event);
    }
    bencher.counter(BytesCount::of_slice(&*STREAM)).bench(|| {
        let mut fold = aptix_mapping::StreamFold::new();
        let mut n = 0;
        for event in &events {
            n += fold.apply_sse(event).is_some() as usize;
        }
        n
    });
}

//! SSE decoding throughput: `SseDecoder` next to `eventsource-stream` 0.2, on the same
//! bytes and the same chunking, measured in the same run.
//!
//! The input is about 1 MB of `response.output_text.delta` events, the bulk of a real
//! streamed answer, built by repeating the delta events of the recorded
//! `sse_text_deltas.sse`. It is fed in 1 KiB chunks, 16 KiB chunks (typical network
//! reads) and whole. Both sides take every event and sum its data length, so neither
//! can skip work. Run: `cargo bench -p aptix-mapping --bench sse`.

use std::convert::Infallible;
use std::fmt;
use std::sync::LazyLock;

use aptix_sse::SseDecoder;
use divan::counter::BytesCount;
use divan::{Bencher, black_box};
use eventsource_stream::Eventsource;
use futures::StreamExt;

fn main() {
    // Both decoders must agree on the input before their speed means anything.
    let chunks: Vec<&[u8]> = INPUT.chunks(1024).collect();
    let ours = decode_aptix(&chunks);
    let theirs = decode_eventsource_stream(&chunks);
    assert_eq!(ours, theirs, "the decoders disagree on the benchmark input");
    assert!(ours.0 > 1000, "too few events: {ours:?}");
    divan::main();
}

/// Target size of the generated input.
const INPUT_SIZE: usize = 1 << 20;

/// About 1 MB of delta events cut from the recording.
static INPUT: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let recording = aptix_testkit::read_fixture_text("sse_text_deltas.sse");
    let deltas: String = recording
        .split_inclusive("\n\n")
        .filter(|event| event.starts_with("event: response.output_text.delta\n"))
        .collect();
    assert!(!deltas.is_empty(), "no delta events in the recording");
    deltas
        .repeat(INPUT_SIZE.div_ceil(deltas.len()))
        .into_bytes()
});

/// How the input is cut before it is fed.
#[derive(Clone, Copy)]
enum Chunking {
    Kib1,
    Kib16,
    Whole,
}

impl Chunking {
    fn chunks(self) -> Vec<&'static [u8]> {
        let size = match self {
            Self::Kib1 => 1024,
            Self::Kib16 => 16 * 1024,
            Self::Whole => INPUT.len(),
        };
        INPUT.chunks(size).collect()
    }
}

impl fmt::Display for Chunking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Kib1 => "1KiB",
            Self::Kib16 => "16KiB",
            Self::Whole => "whole",
        })
    }
}

const CHUNKINGS: [Chunking; 3] = [Chunking::Kib1, Chunking::Kib16, Chunking::Whole];

/// Events and total data bytes decoded.
type Tally = (usize, usize);

fn decode_aptix(chunks: &[&[u8]]) -> Tally {
    let mut decoder = SseDecoder::new();
    let mut tally = (0, 0);
    let mut count = |data: &str| {
        tally.0 += 1;
        tally.1 += data.len();
    };
    for chunk in chunks {
        decoder.feed(chunk);
        while let Some(event) = decoder.next_event() {
            match event {
                Ok(event) => count(&event.data),
                Err(error) => panic!("benchmark input failed to decode: {error}"),
            }
        }
    }
    match decoder.finish() {
        Ok(Some(event)) => count(&event.data),
        Ok(None) => {}
        Err(error) => panic!("benchmark input failed to decode: {error}"),
    }
    tally
}

fn decode_eventsource_stream(chunks: &[&[u8]]) -> Tally {
    let stream = futures::stream::iter(chunks.iter().map(|chunk| Ok::<_, Infallible>(*chunk)));
    futures::executor::block_on(
        stream
            .eventsource()
            .fold((0, 0), |tally, event| async move {
                match event {
                    Ok(event) => (tally.0 + 1, tally.1 + event.data.len()),
                    Err(error) => panic!("benchmark input failed to decode: {error}"),
                }
            }),
    )
}

#[divan::bench(args = CHUNKINGS)]
fn aptix(bencher: Bencher<'_, '_>, chunking: Chunking) {
    let chunks = chunking.chunks();
    bencher
        .counter(BytesCount::of_slice(&*INPUT))
        .bench(|| decode_aptix(black_box(&chunks)));
}

// Bounded in time: fed whole, this decoder is quadratic and takes about a second per run.
#[divan::bench(args = CHUNKINGS, max_time = 10)]
fn eventsource_stream(bencher: Bencher<'_, '_>, chunking: Chunking) {
    let chunks = chunking.chunks();
    bencher
        .counter(BytesCount::of_slice(&*INPUT))
        .bench(|| decode_eventsource_stream(black_box(&chunks)));
}

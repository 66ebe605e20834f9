//! How fast the `[CONTEXT]` block renders and packs: 20 chunks of 60 lines, the size of
//! a typical retrieval.
//!
//! Throughput counts the chunks' content bytes for every benchmark, so the renderer
//! reads directly against `baseline_concat`, the least any renderer must do: copy the
//! same contents into one fresh `String`. Run with `cargo bench -p aptix-rag`.

use std::hint::black_box;

use aptix_rag::{
    Chunk, ChunkId, LineSpan, ScoredChunk, TokenCounter, pack, render_context_block,
    render_context_block_into,
};
use divan::Bencher;
use divan::counter::BytesCount;

const CHUNKS: u32 = 20;
const LINES: u32 = 60;

fn main() {
    divan::main();
}

/// Rust-looking lines of typical width, one doc comment with inline code, so the
/// backtick scan has something to find.
fn chunks(line_end: &str) -> Vec<ScoredChunk> {
    (0..CHUNKS)
        .map(|index| {
            let content = (1..=LINES)
                .map(|line| match line % 6 {
                    0 => format!("    /// Returns `value_{line}` scaled by the `factor`."),
                    1 => format!("    pub fn compute_{line}(&self, factor: f64) -> f64 {{"),
                    2 => format!("        let value_{line} = self.values[{line}] * factor;"),
                    3 => format!("        tracing::debug!(value_{line}, \"computed\");"),
                    4 => format!("        value_{line}"),
                    _ => "    }".to_owned(),
                })
                .collect::<Vec<_>>()
                .join(line_end);
            let start = index * LINES + 1;
            ScoredChunk {
                chunk: Chunk {
                    id: ChunkId::new(format!("ctx_{index}")),
                    path: format!("crates/engine/src/module_{index}.rs"),
                    lines: LineSpan::new(start, start + LINES - 1).expect("valid span"),
                    language: "rust".into(),
                    content,
                    metadata: Default::default(),
                },
                score: 1.0,
            }
        })
        .collect()
}

fn content_bytes(chunks: &[ScoredChunk]) -> usize {
    chunks.iter().map(|c| c.chunk.content.len()).sum()
}

#[divan::bench]
fn baseline_concat(bencher: Bencher<'_, '_>) {
    let chunks = chunks("\n");
    bencher
        .counter(BytesCount::new(content_bytes(&chunks)))
        .bench(|| {
            let mut out = String::with_capacity(content_bytes(&chunks) + chunks.len());
            for chunk in black_box(&chunks) {
                out.push_str(&chunk.chunk.content);
                out.push('\n');
            }
            out
        });
}

#[divan::bench]
fn render_block(bencher: Bencher<'_, '_>) {
    let chunks = chunks("\n");
    bencher
        .counter(BytesCount::new(content_bytes(&chunks)))
        .bench(|| render_context_block(black_box(&chunks)));
}

#[divan::bench]
fn render_into_reused_buffer(bencher: Bencher<'_, '_>) {
    let chunks = chunks("\n");
    let mut out = String::new();
    bencher
        .counter(BytesCount::new(content_bytes(&chunks)))
        .bench_local(|| {
            out.clear();
            render_context_block_into(&mut out, black_box(&chunks));
            out.len()
        });
}

/// Windows line ends take the normalising path instead of one copy per chunk.
#[divan::bench]
fn render_block_crlf(bencher: Bencher<'_, '_>) {
    let chunks = chunks("\r\n");
    bencher
        .counter(BytesCount::new(content_bytes(&chunks)))
        .bench(|| render_context_block(black_box(&chunks)));
}

/// Exact o200k counting of every section: what packing really costs.
#[divan::bench(sample_count = 20)]
fn pack_to_budget(bencher: Bencher<'_, '_>) {
    let chunks = chunks("\n");
    let counter = TokenCounter::o200k().expect("bundled o200k vocabulary");
    bencher
        .counter(BytesCount::new(content_bytes(&chunks)))
        .with_inputs(|| chunks.clone())
        .bench_values(|ranked| pack(ranked, 8_000, &counter));
}

/// Why `TokenCounter` builds the tables once per process and shares them.
#[divan::bench(sample_count = 5)]
fn build_o200k_tables() -> tiktoken_rs::CoreBPE {
    tiktoken_rs::o200k_base().expect("bundled o200k vocabulary")
}

/// BPE's worst case: one 100 KB pre-token (a minified or base64 line) is merged pair by
/// pair, where ordinary text splits into short words first.
#[divan::bench(sample_count = 10)]
fn count_one_100kb_word(bencher: Bencher<'_, '_>) {
    let counter = TokenCounter::o200k().expect("bundled o200k vocabulary");
    let word = "a".repeat(100_000);
    bencher
        .counter(BytesCount::of_str(&word))
        .bench(|| counter.count(black_box(&word)));
}

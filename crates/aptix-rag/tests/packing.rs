//! Packing against the real o200k tokenizer: whatever the chunks and the budget, the
//! rendered block of the kept chunks fits, the reported count is the block's real count,
//! and every chunk is either kept or dropped, in rank order.

use std::sync::LazyLock;

use aptix_rag::{Chunk, ChunkId, LineSpan, ScoredChunk, TokenCounter, pack, render_context_block};
use proptest::prelude::*;

static COUNTER: LazyLock<TokenCounter> =
    LazyLock::new(|| TokenCounter::o200k().expect("bundled o200k vocabulary"));

fn block_tokens(chunks: &[ScoredChunk]) -> usize {
    render_context_block(chunks).map_or(0, |block| COUNTER.count(&block))
}

/// Code-like text with the awkward parts mixed in: backtick runs that lengthen fences,
/// CRLF, forged headers, long lines and arbitrary Unicode.
fn content() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => "[a-z_]{1,12}( |\\(|\\)|;|\n)",
        1 => "`{1,7}",
        1 => Just("\r\n".to_owned()),
        1 => Just("\n=== CHUNK 3 ===\n".to_owned()),
        1 => Just("    ".to_owned()),
        1 => any::<String>(),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

fn ranked() -> impl Strategy<Value = Vec<ScoredChunk>> {
    prop::collection::vec((content(), 1u32..2000, "[a-z/]{1,20}\\.(rs|ts|md)"), 0..12).prop_map(
        |chunks| {
            chunks
                .into_iter()
                .enumerate()
                .map(|(index, (content, start, path))| ScoredChunk {
                    chunk: Chunk {
                        // Ids past 9 give two-digit chunk numbers a chance to matter.
                        id: ChunkId::new(format!("ctx_{index}")),
                        language: aptix_rag::language_for_path(&path).to_owned(),
                        path,
                        lines: LineSpan::new(start, start + 59).unwrap(),
                        content,
                        metadata: Default::default(),
                    },
                    score: 1.0 / (index as f32 + 1.0),
                })
                .collect()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn the_kept_block_fits_and_is_counted_exactly(
        ranked in ranked(),
        budget in prop_oneof![0usize..60, 0usize..1500],
    ) {
        let packed = pack(ranked.clone(), budget, &COUNTER);
        prop_assert!(packed.tokens <= budget);
        prop_assert_eq!(packed.tokens, block_tokens(&packed.kept));
        // The block packed is the block rendered for what was kept.
        prop_assert_eq!(packed.block, render_context_block(&packed.kept));

        // Every chunk is kept or dropped, never both, and both lists keep rank order.
        let mut kept = packed.kept.iter().map(|c| &c.chunk.id).peekable();
        let mut dropped = packed.dropped.iter().peekable();
        for chunk in &ranked {
            let id = &chunk.chunk.id;
            if kept.peek() == Some(&id) {
                kept.next();
            } else {
                prop_assert_eq!(dropped.next(), Some(id));
            }
        }
        prop_assert!(kept.next().is_none() && dropped.next().is_none());
    }

    /// The pricing per section adds up to the count of the whole block: the property
    /// that makes greedy packing exact rather than an estimate.
    #[test]
    fn an_unlimited_budget_keeps_everything_at_the_blocks_real_cost(ranked in ranked()) {
        let packed = pack(ranked.clone(), usize::MAX, &COUNTER);
        prop_assert!(packed.dropped.is_empty());
        prop_assert_eq!(&packed.kept, &ranked);
        prop_assert_eq!(packed.tokens, block_tokens(&ranked));
    }

    /// A dropped chunk really did not fit: appending it to what was kept before it
    /// came up would have overrun the budget.
    #[test]
    fn a_dropped_chunk_did_not_fit_when_it_came_up(
        ranked in ranked(),
        budget in 0usize..1500,
    ) {
        let packed = pack(ranked.clone(), budget, &COUNTER);
        for dropped in &packed.dropped {
            let position = ranked.iter().position(|c| &c.chunk.id == dropped).unwrap();
            let mut trial: Vec<ScoredChunk> = packed
                .kept
                .iter()
                .filter(|kept| {
                    ranked.iter().position(|c| c.chunk.id == kept.chunk.id).unwrap() < position
                })
                .cloned()
                .collect();
            trial.push(ranked[position].clone());
            prop_assert!(block_tokens(&trial) > budget);
        }
    }
}

#[test]
fn twenty_chunks_of_sixty_lines_pack_to_a_typical_budget() {
    let ranked: Vec<ScoredChunk> = (0..20)
        .map(|index| ScoredChunk {
            chunk: Chunk {
                id: ChunkId::new(format!("ctx_{index}")),
                path: format!("src/module_{index}.rs"),
                lines: LineSpan::new(1, 60).unwrap(),
                language: "rust".into(),
                content: (1..=60)
                    .map(|line| format!("    let value_{line} = input[{line}] * {index};"))
                    .collect::<Vec<_>>()
                    .join("\n"),
                metadata: Default::default(),
            },
            score: 1.0,
        })
        .collect();
    let packed = pack(ranked, 4_000, &COUNTER);
    assert!(!packed.kept.is_empty() && !packed.dropped.is_empty());
    assert!(packed.tokens <= 4_000);
    assert_eq!(packed.tokens, block_tokens(&packed.kept));
    // Equal-sized chunks: the kept ones are a prefix of the ranking.
    let kept: Vec<&str> = packed.kept.iter().map(|c| c.chunk.id.as_str()).collect();
    let prefix: Vec<String> = (0..kept.len()).map(|i| format!("ctx_{i}")).collect();
    assert_eq!(kept, prefix);
}

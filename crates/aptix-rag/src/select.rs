//! Choosing among loaded chunks: scope filtering and overlap removal.
//!
//! Retrievers call these on chunks they have already loaded, before
//! [`pack`](crate::pack): first [`chunk_matches`] to honour the request's scope, then
//! [`dedupe_overlapping`] on the ranked survivors so the budget is not spent twice on
//! the same lines.

use std::collections::{HashMap, HashSet};

use aptix_model::contract::ScopeCondition;

use foldhash::fast::RandomState;

use crate::{Chunk, ChunkId, LineSpan, ScoredChunk};

/// Whether `chunk` passes every scope condition (AGN-034: conditions are ANDed, so an
/// empty scope accepts everything).
///
/// Each condition is checked by [`ScopeCondition::accepts`] against
/// [`Chunk::metadata_value`] for its key; a chunk without that key passes `!=` and
/// `does_not_contain` and fails `==` and `contains`.
pub(crate) fn chunk_matches(chunk: &Chunk, scope: &[ScopeCondition]) -> bool {
    scope
        .iter()
        .all(|condition| condition.accepts(chunk.metadata_value(&condition.key)))
}

/// Removes chunks that repeat lines of a better-ranked chunk, keeping rank order.
///
/// `ranked` is best first, and position is the rank: scores are only comparable within
/// one retrieval and a caller may have re-ranked, so the order given is what counts.
/// Walking in that order, a chunk is dropped when a chunk already kept has the same
/// `path` (compared exactly, as producers write paths relative with `/`) and a line span
/// sharing at least one line with it, or has the same id. Chunks that only touch
/// (`1-10` and `11-20`) both stay: they hold different lines.
///
/// Dropping rather than merging keeps every shown chunk a real stored chunk, so its id
/// stays a valid source reference and its line span stays exact (AGN-002 asks the model
/// to treat each chunk as authoritative for its span).
pub fn dedupe_overlapping(ranked: Vec<ScoredChunk>) -> Vec<ScoredChunk> {
    dedupe_keeping(ranked, 0).0
}

/// [`dedupe_overlapping`], with the first `chosen` chunks (a user's attachments) kept
/// even where they overlap one another (two selections of one file that share lines),
/// unless one repeats another's id exactly; the chunks after them are judged against
/// them as usual. Also returns how many of the chosen stayed (they lead the result).
pub(crate) fn dedupe_keeping(ranked: Vec<ScoredChunk>, chosen: usize) -> (Vec<ScoredChunk>, usize) {
    // Which to keep, judged on borrowed paths and ids (nothing is copied); spans kept
    // so far, per path. Retrievals return tens of chunks, a handful per file, so a
    // linear scan of one path's spans beats anything cleverer.
    let keep: Vec<bool> = {
        let mut spans: HashMap<&str, Vec<LineSpan>, RandomState> =
            HashMap::with_capacity_and_hasher(ranked.len(), RandomState::default());
        let mut ids: HashSet<&ChunkId, RandomState> =
            HashSet::with_capacity_and_hasher(ranked.len(), RandomState::default());
        ranked
            .iter()
            .enumerate()
            .map(|(rank, candidate)| {
                let chunk = &candidate.chunk;
                let kept_spans = spans.entry(chunk.path.as_str()).or_default();
                let overlaps =
                    rank >= chosen && kept_spans.iter().any(|span| span.overlaps(chunk.lines));
                if overlaps || !ids.insert(&chunk.id) {
                    return false;
                }
                kept_spans.push(chunk.lines);
                true
            })
            .collect()
    };
    let chosen_kept = keep.iter().take(chosen).filter(|kept| **kept).count();
    let kept = ranked
        .into_iter()
        .zip(keep)
        .filter_map(|(candidate, keep)| keep.then_some(candidate))
        .collect();
    (kept, chosen_kept)
}

#[cfg(test)]
mod tests {
    use aptix_model::contract::ScopeOperator;

    use super::*;
    use crate::ChunkId;

    fn scored(id: &str, path: &str, start: u32, end: u32) -> ScoredChunk {
        ScoredChunk {
            chunk: Chunk {
                id: ChunkId::new(id),
                path: path.into(),
                lines: LineSpan::new(start, end).unwrap(),
                language: "rust".into(),
                content: String::new(),
                metadata: [("repo".to_owned(), "aptix".to_owned())].into(),
            },
            score: 0.0,
        }
    }

    fn ids(chunks: &[ScoredChunk]) -> Vec<&str> {
        chunks.iter().map(|c| c.chunk.id.as_str()).collect()
    }

    #[test]
    fn overlapping_chunks_of_one_path_keep_the_better_ranked() {
        let ranked = vec![
            scored("b", "src/lib.rs", 10, 20),
            scored("a", "src/lib.rs", 1, 10), // shares line 10 with b
            scored("c", "src/lib.rs", 21, 30), // touches b, shares nothing
            scored("d", "src/main.rs", 1, 100), // another path
            scored("e", "src/lib.rs", 5, 25), // overlaps b and c
            scored("d", "src/other.rs", 1, 1), // a repeated id
            scored("f", "src/lib.rs", 31, 31),
        ];
        assert_eq!(ids(&dedupe_overlapping(ranked)), ["b", "c", "d", "f"]);
    }

    #[test]
    fn rank_is_position_not_score() {
        let mut worse = scored("worse", "x.rs", 1, 5);
        worse.score = 0.1;
        let mut better = scored("better", "x.rs", 3, 8);
        better.score = 0.9;
        assert_eq!(ids(&dedupe_overlapping(vec![worse, better])), ["worse"]);
    }

    proptest::proptest! {
        /// Kept chunks never overlap, keep their order, and every removed chunk
        /// overlaps (or shares the id of) a chunk kept before it.
        #[test]
        fn dedupe_keeps_the_first_of_every_overlap(
            raw in proptest::collection::vec((0u8..3, 1u32..40, 0u32..8, 0u8..30), 0..30)
        ) {
            let ranked: Vec<ScoredChunk> = raw
                .iter()
                .map(|&(path, start, extra, id)| {
                    scored(&format!("id{id}"), &format!("p{path}.rs"), start, start + extra)
                })
                .collect();
            let kept = dedupe_overlapping(ranked.clone());
            let mut kept_iter = kept.iter().peekable();
            let mut before: Vec<&Chunk> = Vec::new();
            for candidate in &ranked {
                let clashes = before.iter().any(|k| {
                    k.id == candidate.chunk.id
                        || (k.path == candidate.chunk.path && k.lines.overlaps(candidate.chunk.lines))
                });
                if kept_iter.peek().is_some_and(|k| *k == candidate) && !clashes {
                    before.push(&candidate.chunk);
                    kept_iter.next();
                } else {
                    proptest::prop_assert!(clashes, "{:?} was removed without a clash", candidate.chunk.id);
                }
            }
            proptest::prop_assert!(kept_iter.next().is_none());
        }
    }

    #[test]
    fn scope_conditions_are_anded_over_metadata() {
        let condition = |key: &str, operator, values: &[&str]| ScopeCondition {
            key: key.into(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        let chunk = scored("ctx_1", "src/lib.rs", 1, 2).chunk;
        let cases = [
            (vec![], true),
            (
                vec![condition("path", ScopeOperator::Contains, &["src/"])],
                true,
            ),
            (
                vec![condition("language", ScopeOperator::Equals, &["rust"])],
                true,
            ),
            (
                vec![condition("id", ScopeOperator::NotEquals, &["ctx_1"])],
                false,
            ),
            (
                vec![condition("repo", ScopeOperator::Equals, &["aptix"])],
                true,
            ),
            (
                vec![condition("symbol", ScopeOperator::Equals, &["x"])],
                false,
            ),
            (
                vec![condition("symbol", ScopeOperator::DoesNotContain, &["x"])],
                true,
            ),
            (
                vec![
                    condition("path", ScopeOperator::Contains, &["src/"]),
                    condition("language", ScopeOperator::Equals, &["python"]),
                ],
                false,
            ),
        ];
        for (scope, expected) in cases {
            assert_eq!(chunk_matches(&chunk, &scope), expected, "scope {scope:?}");
        }
    }
}

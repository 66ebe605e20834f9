//! Packing ranked chunks into a token budget; the rule is documented on [`pack`].

use std::sync::OnceLock;

use crate::render::{CONTEXT_HEADER, rendered_size_hint, write_section};
use crate::select::{chunk_matches, dedupe_keeping};
use crate::{Chunk, ChunkId, RetrievalQuery, ScoredChunk, TokenCounter};

/// The outcome of [`pack`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Packed {
    /// The chunks that fit, in their original rank order.
    pub kept: Vec<ScoredChunk>,
    /// The ids of the chunks that did not fit the token budget, in rank order. A chunk
    /// left out because it overlaps one sent (an attachment, a better-ranked chunk of
    /// the same lines) is not among them: its lines are in the context.
    pub dropped: Vec<ChunkId>,
    /// With [`select_context`], how many chunks came past the query's `max_chunks`
    /// (after the overlapping ones were left out) and were not considered: spares for a
    /// retriever that fetched more than it sends (the workspace index), chunks left out
    /// for the chunk count for one that hands over its results.
    pub past_max_chunks: usize,
    /// The o200k tokens of the `[CONTEXT]` block of [`kept`](Self::kept): at most the
    /// budget (unless attachments alone pass it, see [`select_context`]), and 0 when
    /// nothing was kept (no block is rendered then).
    pub tokens: usize,
    /// That block, rendered while packing: byte for byte what
    /// [`render_context_block`](crate::render_context_block) gives for
    /// [`kept`](Self::kept), and `None` when nothing was kept.
    pub block: Option<String>,
}

/// Keeps the best-ranked chunks whose rendered `[CONTEXT]` block fits in `budget`
/// o200k tokens. `ranked` is best first.
///
/// The budget is for the `[CONTEXT]` block exactly as [`render_context_block`] renders
/// the kept chunks, counted with o200k_base. A chunk's cost is the tokens of its whole
/// section (the `=== CHUNK N ===` line with the number it will get, the metadata lines,
/// the fences and the content), and the first kept chunk also pays for the
/// `[CONTEXT]` header.
///
/// The rule is greedy in rank order: each chunk is kept when it fits in what is left,
/// else dropped, and the scan goes on, so a large chunk that does not fit does not stop
/// smaller, lower-ranked ones from filling the space. It never reorders: a kept chunk is
/// numbered after every better-ranked kept chunk. Greedy is not the knapsack optimum,
/// but it is what "best first" means to a reader of the ranking, it is stable (the
/// same input packs the same way), and it counts each chunk once.
///
/// Summing section costs is exact, not an estimate: o200k's pre-tokenizer never joins a
/// line end with the `=` that starts the next section, so the tokens of the block are
/// the header's plus each section's (the packing tests check the sum against a count of
/// the rendered block).
///
/// A budget too small for the header and any one chunk keeps nothing.
///
/// [`render_context_block`]: crate::render_context_block
///
/// ```
/// use aptix_rag::{Chunk, ChunkId, LineSpan, ScoredChunk, TokenCounter, pack};
///
/// let first_line = LineSpan::new(1, 1)?;
/// let chunk = |id: &str, content: &str| ScoredChunk {
///     chunk: Chunk {
///         id: ChunkId::new(id),
///         path: format!("src/{id}.rs"),
///         lines: first_line,
///         language: "rust".into(),
///         content: content.into(),
///         metadata: Default::default(),
///     },
///     score: 1.0,
/// };
/// let counter = TokenCounter::o200k()?;
/// let ranked = vec![
///     chunk("big", &"fn f() {}\n".repeat(500)),
///     chunk("small", "fn g() {}"),
/// ];
/// let packed = pack(ranked, 100, &counter);
/// assert_eq!(packed.dropped, [ChunkId::new("big")]);
/// assert_eq!(packed.kept[0].chunk.id.as_str(), "small");
/// assert!(packed.tokens <= 100);
/// # Ok::<(), aptix_rag::RagError>(())
/// ```
pub fn pack(ranked: Vec<ScoredChunk>, budget: usize, counter: &TokenCounter) -> Packed {
    pack_keeping(ranked, 0, budget, counter)
}

/// [`pack`], with the first `keep` chunks kept whatever they cost (their tokens count
/// against the budget all the same, so the rest fill only what they leave).
fn pack_keeping(
    ranked: Vec<ScoredChunk>,
    keep: usize,
    budget: usize,
    counter: &TokenCounter,
) -> Packed {
    let mut packed = Packed::default();
    if ranked.is_empty() {
        return packed;
    }
    let header_tokens = header_tokens(counter);
    // The block is written as it is packed: each candidate's section is appended,
    // counted where it stands, and cut off again when it does not fit. The capacity
    // is a hint (never more than the bytes the budget could buy at a generous 16 per
    // token), so a retriever's thousand chunks do not reserve a megabyte.
    let mut block =
        String::with_capacity(rendered_size_hint(&ranked).min(budget.saturating_mul(16)));
    for (rank, candidate) in ranked.into_iter().enumerate() {
        let start = block.len();
        let header = if packed.kept.is_empty() {
            block.push_str(CONTEXT_HEADER);
            header_tokens
        } else {
            0
        };
        let section = block.len();
        write_section(&mut block, packed.kept.len() + 1, &candidate.chunk);
        let cost = counter.count(&block[section..]).saturating_add(header);
        match packed.tokens.checked_add(cost) {
            Some(total) if total <= budget || rank < keep => {
                packed.tokens = total;
                packed.kept.push(candidate);
            }
            _ => {
                block.truncate(start);
                packed.dropped.push(candidate.chunk.id);
            }
        }
    }
    packed.block = (!packed.kept.is_empty()).then_some(block);
    packed
}

/// The tokens of the block's `[CONTEXT]` header line, counted once per process (the
/// text is fixed, and BPE costs microseconds even for a few bytes).
fn header_tokens(counter: &TokenCounter) -> usize {
    static HEADER_TOKENS: OnceLock<usize> = OnceLock::new();
    *HEADER_TOKENS.get_or_init(|| counter.count(CONTEXT_HEADER))
}

/// What reaches the `[CONTEXT]` block of a turn, whoever retrieved it: the one home of
/// the scope, overlap, chunk-count and budget rules.
///
/// `attachments` (files the user attached, already chunked) come first, in the order
/// given, and are always kept: the user chose them, and a file left out without a word
/// is worse than a context over its budget (a front end cuts an attachment too large
/// for the model with [`cut_to_tokens`] first). They count against the budget, so the
/// retrieved chunks fill only what they leave. `retrieved` is a
/// retriever's answer, best first; a retriever may already have applied any of these
/// rules, and applying them again changes nothing, so a custom retriever that ignores
/// the scope or returns far more than the budget is still held to it:
///
/// 1. retrieved chunks that fail the query's scope conditions are dropped
///    ([`ScopeCondition::accepts`](aptix_model::contract::ScopeCondition::accepts)); a
///    condition on a key that no retrieved chunk carries is one the store does not know,
///    and is ignored (the index warns about it);
/// 2. retrieved chunks repeating lines of a better-placed one (an attachment included)
///    are dropped ([`dedupe_overlapping`](crate::dedupe_overlapping)); attachments are
///    not, even where two selections of one file share lines;
/// 3. at most `query.max_chunks` retrieved chunks are considered;
/// 4. the rest is [`pack`]ed into `query.token_budget` o200k tokens, rank order kept,
///    the attachments kept whatever they cost.
///
/// ```
/// use aptix_rag::{Chunk, ChunkId, LineSpan, RetrievalQuery, ScoredChunk, TokenCounter};
///
/// let chunk = |id: &str| ScoredChunk {
///     chunk: Chunk {
///         id: ChunkId::new(id),
///         path: format!("src/{id}.rs"),
///         lines: LineSpan::new(1, 40).expect("valid span"),
///         language: "rust".into(),
///         content: "fn f() { let x = 1; }\n".repeat(40),
///         metadata: Default::default(),
///     },
///     score: 1.0,
/// };
/// let query = RetrievalQuery {
///     text: "f".into(),
///     scope: Vec::new(),
///     token_budget: 1_000,
///     max_chunks: 40,
/// };
/// let counter = TokenCounter::o200k()?;
/// let retrieved: Vec<_> = (0..30).map(|n| chunk(&format!("c{n}"))).collect();
/// let packed = aptix_rag::select_context(Vec::new(), retrieved, &query, &counter);
/// assert!(packed.tokens <= 1_000);
/// assert!(packed.kept.len() < 30);
/// # Ok::<(), aptix_rag::RagError>(())
/// ```
pub fn select_context(
    attachments: Vec<ScoredChunk>,
    retrieved: Vec<ScoredChunk>,
    query: &RetrievalQuery,
    counter: &TokenCounter,
) -> Packed {
    // A condition on a key no candidate carries is one the store does not know: it is
    // ignored, as the index ignores it (with a warning) inside its query.
    let known: Vec<_> = query
        .scope
        .iter()
        .filter(|condition| {
            retrieved
                .iter()
                .any(|scored| scored.chunk.metadata_value(&condition.key).is_some())
        })
        .cloned()
        .collect();
    let retrieved: Vec<ScoredChunk> = retrieved
        .into_iter()
        .filter(|scored| chunk_matches(&scored.chunk, &known))
        .collect();
    let mut candidates = attachments;
    let chosen = candidates.len();
    candidates.extend(retrieved);
    // The attachments left (one given twice is sent once) lead, in order.
    let (mut candidates, kept) = dedupe_keeping(candidates, chosen);
    let limit = kept.saturating_add(query.max_chunks);
    let past_max_chunks = candidates.len().saturating_sub(limit);
    candidates.truncate(limit);
    Packed {
        past_max_chunks,
        ..pack_keeping(candidates, kept, query.token_budget, counter)
    }
}

impl Packed {
    /// The warning to pass on when `left_out` of the `offered` context chunks were not
    /// sent for `query`'s token budget or chunk count (the [`dropped`](Self::dropped),
    /// those [`past_max_chunks`](Self::past_max_chunks) when they are not spares, and
    /// any a retriever left out itself), `None` when none was left out. It says so loudly
    /// when nothing was kept: an empty context otherwise looks like a question nothing
    /// answers. The one wording of this warning, for the orchestrator and for
    /// retrievers that pack.
    pub fn left_out_warning(
        &self,
        left_out: usize,
        offered: usize,
        query: &RetrievalQuery,
    ) -> Option<String> {
        (left_out > 0).then(|| {
            let none_kept = if self.kept.is_empty() {
                "; no context is sent: raise the context token budget"
            } else {
                ""
            };
            format!(
                "{left_out} of {offered} context chunk(s) were left out to keep the context within {} tokens (or {} chunks){none_kept}",
                query.token_budget, query.max_chunks
            )
        })
    }
}

/// `chunk` cut to its first lines whose text fits in `max_tokens` o200k tokens, its line
/// span cut to match, with the tokens of the text kept; `None` when not even its first
/// line fits. A chunk that fits is returned whole. For an attachment too large for the
/// model: the lines kept are whole, and the span says which they are. Taken by value,
/// as an attachment may be megabytes: it is neither copied nor counted twice.
pub fn cut_to_tokens(
    mut chunk: Chunk,
    max_tokens: usize,
    counter: &TokenCounter,
) -> Option<(Chunk, usize)> {
    let whole = counter.count(&chunk.content);
    if whole <= max_tokens {
        return Some((chunk, whole));
    }
    // Byte offsets of each line's end (exclusive), in order.
    let ends: Vec<usize> = chunk
        .content
        .match_indices('\n')
        .map(|(at, _)| at)
        .chain(std::iter::once(chunk.content.len()))
        .collect();
    // The tokens of the first `lines` lines, when they fit.
    let fitting = |lines: usize| {
        let tokens = counter.count(&chunk.content[..ends[lines - 1]]);
        (tokens <= max_tokens).then_some(tokens)
    };
    // The most lines whose text fits: counts grow with the lines kept, so search. The
    // bounds start near the share of the text the budget buys, so that no count reads
    // much more than the budget's worth of a file that may be megabytes.
    let share = |factor: f64| {
        let bytes = chunk.content.len() as f64 * max_tokens as f64 / whole as f64 * factor;
        ends.partition_point(|end| (*end as f64) <= bytes)
    };
    let (mut fits, mut over, mut tokens) = (0usize, ends.len(), 0usize);
    let above = share(2.0);
    if above >= 1 && above < over && fitting(above).is_none() {
        over = above;
    }
    let below = share(0.5);
    if below >= 1
        && below < over
        && let Some(counted) = fitting(below)
    {
        (fits, tokens) = (below, counted);
    }
    while over - fits > 1 {
        let middle = fits + (over - fits) / 2;
        match fitting(middle) {
            Some(counted) => (fits, tokens) = (middle, counted),
            None => over = middle,
        }
    }
    if fits == 0 {
        return None;
    }
    let first = chunk.lines.start();
    let last = first.checked_add(u32::try_from(fits - 1).ok()?)?;
    chunk.lines = crate::LineSpan::new(first, last).ok()?;
    chunk.content.truncate(ends[fits - 1]);
    Some((chunk, tokens))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Chunk, LineSpan, render_context_block};

    fn scored(id: &str, lines: u32) -> ScoredChunk {
        let content = (1..=lines)
            .map(|line| format!("let value_{line} = compute({line});"))
            .collect::<Vec<_>>()
            .join("\n");
        ScoredChunk {
            chunk: Chunk {
                id: ChunkId::new(id),
                path: format!("src/{id}.rs"),
                lines: LineSpan::new(1, lines.max(1)).unwrap(),
                language: "rust".into(),
                content,
                metadata: Default::default(),
            },
            score: 1.0,
        }
    }

    fn ids(chunks: &[ScoredChunk]) -> Vec<&str> {
        chunks.iter().map(|c| c.chunk.id.as_str()).collect()
    }

    fn block_tokens(counter: &TokenCounter, chunks: &[ScoredChunk]) -> usize {
        render_context_block(chunks).map_or(0, |block| counter.count(&block))
    }

    #[test]
    fn a_big_chunk_is_skipped_and_smaller_ones_fill_the_space() {
        let counter = TokenCounter::o200k().unwrap();
        let ranked = vec![scored("a", 3), scored("huge", 400), scored("b", 3)];
        let budget = block_tokens(&counter, &[scored("a", 3), scored("b", 3)]);
        let packed = pack(ranked, budget, &counter);
        assert_eq!(ids(&packed.kept), ["a", "b"]);
        assert_eq!(packed.dropped, [ChunkId::new("huge")]);
        assert_eq!(packed.tokens, budget);
    }

    #[test]
    fn exact_budget_fits_and_one_less_does_not() {
        let counter = TokenCounter::o200k().unwrap();
        let both = [scored("a", 5), scored("b", 5)];
        let exact = block_tokens(&counter, &both);
        let packed = pack(both.to_vec(), exact, &counter);
        assert_eq!(ids(&packed.kept), ["a", "b"]);
        assert_eq!(packed.tokens, exact);

        let packed = pack(both.to_vec(), exact - 1, &counter);
        assert_eq!(ids(&packed.kept), ["a"]);
        assert_eq!(packed.dropped, [ChunkId::new("b")]);
    }

    #[test]
    fn a_budget_below_header_plus_one_chunk_keeps_nothing() {
        let counter = TokenCounter::o200k().unwrap();
        let single = [scored("a", 2)];
        let need = block_tokens(&counter, &single);
        for budget in [0, 1, need - 1] {
            let packed = pack(single.to_vec(), budget, &counter);
            assert!(packed.kept.is_empty(), "budget {budget}");
            assert_eq!(packed.dropped, [ChunkId::new("a")]);
            assert_eq!(packed.tokens, 0);
        }
        assert_eq!(pack(Vec::new(), 1000, &counter), Packed::default());
    }

    #[test]
    fn huge_budgets_do_not_overflow() {
        let counter = TokenCounter::o200k().unwrap();
        let packed = pack(vec![scored("a", 1), scored("b", 1)], usize::MAX, &counter);
        assert_eq!(ids(&packed.kept), ["a", "b"]);
    }

    fn query(budget: usize) -> RetrievalQuery {
        RetrievalQuery {
            text: "compute".into(),
            scope: Vec::new(),
            token_budget: budget,
            max_chunks: 40,
        }
    }

    #[test]
    fn attachments_are_kept_whatever_they_cost_and_retrieval_fills_what_is_left() {
        // An attached file larger than the budget was left out without a word; an
        // editor user's @-mention never reached the model.
        let counter = TokenCounter::o200k().unwrap();
        let attached = vec![scored("attached", 300)];
        let retrieved = vec![scored("r1", 3), scored("r2", 3)];
        let small_budget = block_tokens(&counter, &[scored("r1", 3)]);
        let packed = select_context(
            attached.clone(),
            retrieved.clone(),
            &query(small_budget),
            &counter,
        );
        assert_eq!(ids(&packed.kept), ["attached"]);
        assert_eq!(packed.tokens, block_tokens(&counter, &attached));
        assert_eq!(packed.dropped, [ChunkId::new("r1"), ChunkId::new("r2")]);
        // With room after the attachment, retrieved chunks fill it.
        let room = block_tokens(&counter, &[scored("attached", 300), scored("r1", 3)]);
        let packed = select_context(attached, retrieved, &query(room), &counter);
        assert_eq!(ids(&packed.kept), ["attached", "r1"]);
        assert_eq!(packed.dropped, [ChunkId::new("r2")]);
    }

    #[test]
    fn a_chunk_is_cut_to_whole_lines_within_its_tokens() {
        let counter = TokenCounter::o200k().unwrap();
        let chunk = scored("big", 200).chunk;
        assert_eq!(
            cut_to_tokens(chunk.clone(), usize::MAX, &counter).map(|(cut, _)| cut),
            Some(chunk.clone())
        );
        let whole = counter.count(&chunk.content);
        for max in [whole - 1, whole / 2, 20, 12] {
            let (cut, tokens) = cut_to_tokens(chunk.clone(), max, &counter).unwrap();
            assert_eq!(tokens, counter.count(&cut.content), "{max}");
            assert!(counter.count(&cut.content) <= max, "{max}");
            let lines = cut.content.lines().count();
            // The most lines that fit: one more would not.
            let more: Vec<&str> = chunk.content.lines().take(lines + 1).collect();
            assert!(counter.count(&more.join("\n")) > max, "{max}");
            assert_eq!((cut.lines.start(), cut.lines.end()), (1, lines as u32));
            assert!(chunk.content.starts_with(&cut.content));
            assert_eq!(
                (cut.id.clone(), cut.path.clone()),
                (chunk.id.clone(), chunk.path.clone())
            );
        }
        // Not even the first line fits.
        assert_eq!(cut_to_tokens(chunk, 1, &counter), None);
    }
}

//! The last step of a search: a deterministic order, contiguous chunks of one file
//! merged, and a cap on chunks per file.
//!
//! - **File evidence**: a file with several matching chunks is more likely the one
//!   meant than a file with one; each chunk gains [`FILE_EVIDENCE`] times the scores of
//!   up to [`FILE_EVIDENCE_CHUNKS`] other chunks of its file among the candidates (what
//!   whole-file ranking gets for free, without losing chunk precision).
//! - **Determinism**: scores are rounded to [`SCORE_QUANTUM`] and ties broken by path,
//!   then first line, so two indexes of the same tree give the same order whatever the
//!   order of their documents (segment layout, merge history).
//! - **Merging**: a chunk that continues a better-ranked chunk of the same file (its first
//!   line right after the other's last, or the reverse) is joined to it: one section, one
//!   header, and the file counts once toward its cap.
//! - **Per-file cap**: at most [`MAX_CHUNKS_PER_FILE`] chunks of one file among the
//!   results; later chunks of that file are moved behind every other result, so they are
//!   used only when nothing else is left (one large file no longer fills the context).

use std::cmp::Ordering;
use std::collections::HashMap;

use aptix_rag::{Chunk, LineSpan, ScoredChunk};

use crate::store;

/// At most this many chunks (after merging) of one file before the other files' chunks.
pub(crate) const MAX_CHUNKS_PER_FILE: usize = 3;

/// How much the other matching chunks of a file add to each of its chunks.
pub(crate) const FILE_EVIDENCE: f32 = 0.4;
/// How many other chunks of a file count toward [`FILE_EVIDENCE`].
pub(crate) const FILE_EVIDENCE_CHUNKS: usize = 5;

/// Contiguous chunks are merged only while the result stays this small, so that a
/// merged run still fits a context budget (a file of small matching windows would
/// otherwise become one chunk too large to pack).
pub(crate) const MAX_MERGED_BYTES: usize = 12 * 1024;

/// Scores are compared at this resolution, so that float noise from a different
/// summation order never decides a tie.
pub(crate) const SCORE_QUANTUM: f32 = 1e-4;

/// Rounds a score to [`SCORE_QUANTUM`].
pub(crate) fn quantize(score: f32) -> f32 {
    (score / SCORE_QUANTUM).round() * SCORE_QUANTUM
}

/// Best first: higher score, then path, then first line.
pub(crate) fn compare(a: &ScoredChunk, b: &ScoredChunk) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.chunk.path.cmp(&b.chunk.path))
        .then_with(|| a.chunk.lines.cmp(&b.chunk.lines))
}

/// Orders, merges and caps `hits` (any order), keeping at most `limit`.
pub(crate) fn finish(mut hits: Vec<ScoredChunk>, limit: usize) -> Vec<ScoredChunk> {
    for hit in &mut hits {
        hit.score = quantize(hit.score);
    }
    hits.sort_by(compare);
    add_file_evidence(&mut hits);
    hits.sort_by(compare);
    let mut kept: Vec<ScoredChunk> = Vec::with_capacity(hits.len());
    for hit in hits {
        absorb(&mut kept, hit);
    }
    let mut first = Vec::with_capacity(kept.len());
    let mut later = Vec::new();
    for (position, past) in past_the_cap(&kept).into_iter().enumerate() {
        if past {
            later.push(position);
        } else {
            first.push(position);
        }
    }
    let order: Vec<usize> = first.into_iter().chain(later).take(limit).collect();
    let mut slots: Vec<Option<ScoredChunk>> = kept.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|position| slots.get_mut(position).and_then(Option::take))
        .collect()
}

/// For each of `hits`, in order, whether its file already had
/// [`MAX_CHUNKS_PER_FILE`] chunks before it: the cap's one count.
fn past_the_cap(hits: &[ScoredChunk]) -> Vec<bool> {
    let mut per_file: HashMap<&str, usize> = HashMap::new();
    hits.iter()
        .map(|hit| {
            let count = per_file.entry(hit.chunk.path.as_str()).or_insert(0);
            *count += 1;
            *count > MAX_CHUNKS_PER_FILE
        })
        .collect()
}

/// Drops the chunks of `hits` (ranked by [`finish`]) past the per-file cap of files
/// that are not code: for a turn's context, a changelog, a long doc or a config file
/// gives at most [`MAX_CHUNKS_PER_FILE`] chunks, so that when little else matches, its
/// windows do not fill the token budget. More of a source, test or example file is
/// still worth its tokens. (A search lists them all, behind the other files'.)
pub(crate) fn drop_past_the_cap_but_code(hits: &mut Vec<ScoredChunk>) {
    let past = past_the_cap(hits);
    *hits = std::mem::take(hits)
        .into_iter()
        .zip(past)
        .filter(|(hit, past)| {
            !past
                || matches!(
                    crate::kind::classify(&hit.chunk.path),
                    crate::FileKind::Source | crate::FileKind::Test | crate::FileKind::Example
                )
        })
        .map(|(hit, _)| hit)
        .collect();
}

/// Adds to each chunk's score [`FILE_EVIDENCE`] times the scores of the best
/// [`FILE_EVIDENCE_CHUNKS`] other chunks of its file among `hits` (sorted best first).
fn add_file_evidence(hits: &mut [ScoredChunk]) {
    let mut by_file: HashMap<&str, Vec<f32>> = HashMap::new();
    for hit in hits.iter() {
        let scores = by_file.entry(hit.chunk.path.as_str()).or_default();
        if scores.len() <= FILE_EVIDENCE_CHUNKS {
            scores.push(hit.score);
        }
    }
    let bonus: Vec<f32> = hits
        .iter()
        .map(|hit| {
            let best = by_file
                .get(hit.chunk.path.as_str())
                .map_or(&[][..], Vec::as_slice);
            // The file's best scores without this chunk's own (one equal score is it).
            let mut sum: f32 = best.iter().sum();
            if best.contains(&hit.score) {
                sum -= hit.score;
            } else {
                sum -= best.last().copied().unwrap_or(0.0);
            }
            FILE_EVIDENCE * sum.max(0.0)
        })
        .collect();
    for (hit, bonus) in hits.iter_mut().zip(bonus) {
        hit.score = quantize(hit.score + bonus);
    }
}

/// Adds `hit` to `kept` (best first), merged into a kept chunk of the same file that it
/// continues, and that chunk then into any other it now touches.
fn absorb(kept: &mut Vec<ScoredChunk>, hit: ScoredChunk) {
    let touching = kept
        .iter()
        .position(|other| other.chunk.path == hit.chunk.path && touches(&other.chunk, &hit.chunk));
    let Some(at) = touching else {
        kept.push(hit);
        return;
    };
    let Some(merged) = kept
        .get(at)
        .and_then(|other| merge(&other.chunk, &hit.chunk))
    else {
        kept.push(hit);
        return;
    };
    if let Some(slot) = kept.get_mut(at) {
        slot.chunk = merged;
    }
    // The grown chunk may now touch another kept chunk of the file: join them too, at
    // the better rank (the earlier position).
    loop {
        let Some(current) = kept.get(at) else { return };
        let next = kept.iter().enumerate().position(|(other_at, other)| {
            other_at != at
                && other.chunk.path == current.chunk.path
                && touches(&other.chunk, &current.chunk)
        });
        let Some(other_at) = next else { return };
        let (first, second) = (at.min(other_at), at.max(other_at));
        let joined = match (kept.get(first), kept.get(second)) {
            (Some(a), Some(b)) => merge(&a.chunk, &b.chunk),
            _ => None,
        };
        let Some(joined) = joined else { return };
        kept.remove(second);
        if let Some(slot) = kept.get_mut(first) {
            slot.chunk = joined;
        }
        if first != at {
            return;
        }
    }
}

/// Whether one chunk starts on the line after the other ends, and both together are
/// at most [`MAX_MERGED_BYTES`].
fn touches(a: &Chunk, b: &Chunk) -> bool {
    let adjacent = a.lines.end().checked_add(1) == Some(b.lines.start())
        || b.lines.end().checked_add(1) == Some(a.lines.start());
    adjacent && a.content.len() + b.content.len() < MAX_MERGED_BYTES
}

/// The chunk covering both (which [`touches`] each other), metadata of `better`, symbols
/// of both; `None` when the spans do not make one.
fn merge(better: &Chunk, other: &Chunk) -> Option<Chunk> {
    let (top, bottom) = if better.lines.start() < other.lines.start() {
        (better, other)
    } else {
        (other, better)
    };
    let lines = LineSpan::new(top.lines.start(), bottom.lines.end()).ok()?;
    let line_end = if top.content.ends_with('\r') || top.content.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let content = format!("{}{line_end}{}", top.content, bottom.content);
    let mut metadata = better.metadata.clone();
    let mut symbols: Vec<&str> = Vec::new();
    for chunk in [top, bottom] {
        let listed = chunk
            .metadata
            .get("symbols")
            .or_else(|| chunk.metadata.get("symbol"));
        for symbol in listed.map(|s| s.split(',')).into_iter().flatten() {
            if !symbol.is_empty() && !symbols.contains(&symbol) {
                symbols.push(symbol);
            }
        }
    }
    if let Some(first) = symbols.first() {
        metadata.insert("symbol".to_owned(), (*first).to_owned());
    }
    if symbols.len() > 1 {
        metadata.insert("symbols".to_owned(), symbols.join(","));
    }
    Some(Chunk {
        id: store::chunk_id(&better.path, lines.start(), lines.end(), &content),
        path: better.path.clone(),
        lines,
        language: better.language.clone(),
        content,
        metadata,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aptix_rag::ChunkId;

    fn hit(path: &str, start: u32, end: u32, score: f32) -> ScoredChunk {
        let content = (start..=end)
            .map(|line| format!("line {line}"))
            .collect::<Vec<_>>()
            .join("\n");
        ScoredChunk {
            chunk: Chunk {
                id: ChunkId::new(format!("{path}:{start}")),
                path: path.to_owned(),
                lines: LineSpan::new(start, end).unwrap(),
                language: "rust".into(),
                content,
                metadata: Default::default(),
            },
            score,
        }
    }

    fn spans(hits: &[ScoredChunk]) -> Vec<String> {
        hits.iter()
            .map(|h| format!("{}:{}", h.chunk.path, h.chunk.lines))
            .collect()
    }

    #[test]
    fn at_most_three_chunks_of_a_file_come_before_other_files() {
        let hits = vec![
            hit("big.rs", 1, 10, 9.0),
            hit("big.rs", 20, 30, 8.0),
            hit("big.rs", 40, 50, 7.0),
            hit("big.rs", 60, 70, 6.0),
            hit("big.rs", 80, 90, 5.5),
            hit("other.rs", 1, 5, 5.0),
            hit("third.rs", 1, 5, 4.0),
        ];
        let ranked = finish(hits.clone(), 10);
        assert_eq!(
            spans(&ranked),
            [
                "big.rs:1-10",
                "big.rs:20-30",
                "big.rs:40-50",
                "other.rs:1-5",
                "third.rs:1-5",
                "big.rs:60-70",
                "big.rs:80-90"
            ]
        );
        // With a limit, the capped chunks are the ones left out.
        assert_eq!(finish(hits, 5).len(), 5);
        assert!(finish(vec![], 5).is_empty());
    }

    #[test]
    fn contiguous_chunks_of_a_file_merge_at_the_better_rank() {
        let ranked = finish(
            vec![
                hit("a.rs", 11, 20, 9.0),
                hit("b.rs", 1, 5, 8.0),
                hit("a.rs", 1, 10, 7.0),
                hit("a.rs", 21, 30, 6.0),
                hit("a.rs", 40, 50, 5.0),
            ],
            10,
        );
        // b.rs has one chunk; a.rs's other matches count for each of its chunks.
        assert_eq!(spans(&ranked), ["a.rs:1-30", "a.rs:40-50", "b.rs:1-5"]);
        let merged = &ranked[0].chunk;
        let expected: Vec<String> = (1..=30).map(|line| format!("line {line}")).collect();
        assert_eq!(merged.content, expected.join("\n"));
        assert!(ranked[0].score > ranked[1].score);
        assert_eq!(
            merged.id,
            store::chunk_id("a.rs", 1, 30, &merged.content),
            "a merged chunk gets the id of its new span and content"
        );
    }

    #[test]
    fn a_file_with_several_matching_chunks_outranks_a_single_slightly_better_one() {
        let ranked = finish(
            vec![
                hit("lone.rs", 1, 5, 10.0),
                hit("many.rs", 1, 5, 9.0),
                hit("many.rs", 20, 25, 4.0),
                hit("many.rs", 40, 45, 3.0),
            ],
            10,
        );
        assert_eq!(ranked[0].chunk.path, "many.rs");
        assert_eq!(ranked[1].chunk.path, "lone.rs");
        assert_eq!(ranked[0].score, quantize(9.0 + FILE_EVIDENCE * 7.0));
    }

    #[test]
    fn merging_stops_before_a_chunk_grows_too_large() {
        let mut a = hit("a.rs", 1, 2, 9.0);
        a.chunk.content = "x".repeat(MAX_MERGED_BYTES / 2);
        let mut b = hit("a.rs", 3, 4, 8.0);
        b.chunk.content = "y".repeat(MAX_MERGED_BYTES / 2);
        let c = hit("a.rs", 5, 6, 7.0);
        let ranked = finish(vec![a, b, c], 10);
        assert_eq!(spans(&ranked), ["a.rs:1-2", "a.rs:3-6"]);
    }

    #[test]
    fn ties_are_broken_by_path_then_line_whatever_the_input_order() {
        let hits = vec![
            hit("b.rs", 1, 5, 3.0),
            hit("a.rs", 30, 40, 3.0),
            hit("a.rs", 10, 20, 3.00001),
            hit("c.rs", 1, 5, 4.0),
        ];
        let mut reversed = hits.clone();
        reversed.reverse();
        // a.rs's two chunks support each other (3 + 0.4 * 3 each), ahead of c.rs.
        let expected = ["a.rs:10-20", "a.rs:30-40", "c.rs:1-5", "b.rs:1-5"];
        assert_eq!(spans(&finish(hits, 10)), expected);
        assert_eq!(spans(&finish(reversed, 10)), expected);
    }
}

//! Turning raw pieces into chunk-sized spans: overlaps removed, comments glued to the
//! definition after them, small neighbours merged.

use super::Piece;
use super::lines::LineIndex;
use crate::config::ChunkingConfig;

/// Normalises and merges `pieces` (in any order, possibly sharing rows) into disjoint
/// spans in file order.
pub(crate) fn merge(
    mut pieces: Vec<Piece>,
    lines: &LineIndex<'_>,
    config: &ChunkingConfig,
) -> Vec<Piece> {
    pieces.sort_by_key(|piece| (piece.first, piece.last));
    let pieces = remove_overlaps(pieces);
    let pieces = glue_trivia(pieces, lines, config);
    let fits = |first: usize, last: usize| {
        last - first < config.max_lines && lines.bytes(first, last) <= config.max_bytes
    };
    let is_small = |piece: &Piece| non_blank_rows(piece, lines) < config.min_lines;
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for piece in pieces {
        if let Some(current) = out.last_mut() {
            let mergeable = is_small(current)
                || is_small(&piece)
                || (!current.stands_alone && !piece.stands_alone);
            // A closing bracket alone is no chunk: it joins the piece before it even
            // when that goes a little over the maximum.
            let closer = is_closer(&piece, lines);
            if closer || (mergeable && fits(current.first, piece.last)) {
                absorb(current, piece);
                continue;
            }
        }
        out.push(piece);
    }
    out
}

/// Rows that share a line with the previous piece (two nodes on one line) go to the
/// previous piece: spans are whole lines, so they cannot be split.
fn remove_overlaps(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    for mut piece in pieces {
        if let Some(previous) = out.last_mut() {
            if piece.last <= previous.last {
                absorb_symbols(previous, piece);
                continue;
            }
            if piece.first <= previous.last {
                piece.first = previous.last + 1;
            }
        }
        out.push(piece);
    }
    out
}

/// Merges each comment or attribute piece into the piece after it when that fits, so
/// a doc comment travels with its function instead of the function before it.
fn glue_trivia(pieces: Vec<Piece>, lines: &LineIndex<'_>, config: &ChunkingConfig) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::with_capacity(pieces.len());
    let mut pending: Option<Piece> = None;
    for piece in pieces {
        let piece = match pending.take() {
            Some(trivia) => {
                let fits = piece.last - trivia.first < config.max_lines
                    && lines.bytes(trivia.first, piece.last) <= config.max_bytes;
                if fits {
                    Piece {
                        first: trivia.first,
                        ..piece
                    }
                } else {
                    out.push(trivia);
                    piece
                }
            }
            None => piece,
        };
        if piece.is_trivia {
            pending = Some(piece);
        } else {
            out.push(piece);
        }
    }
    out.extend(pending);
    out
}

/// At most this many lines of punctuation count as a closer.
const MAX_CLOSER_LINES: usize = 3;

fn is_closer(piece: &Piece, lines: &LineIndex<'_>) -> bool {
    piece.last - piece.first < MAX_CLOSER_LINES
        && !lines
            .text(piece.first, piece.last)
            .chars()
            .any(|c| c.is_alphanumeric())
}

fn absorb(current: &mut Piece, next: Piece) {
    current.last = current.last.max(next.last);
    current.stands_alone |= next.stands_alone;
    current.is_trivia = false;
    absorb_symbols(current, next);
}

fn absorb_symbols(current: &mut Piece, next: Piece) {
    for symbol in next.symbols {
        if !current.symbols.contains(&symbol) {
            current.symbols.push(symbol);
        }
    }
    for symbol in next.context {
        if !current.context.contains(&symbol) {
            current.context.push(symbol);
        }
    }
}

fn non_blank_rows(piece: &Piece, lines: &LineIndex<'_>) -> usize {
    (piece.first..=piece.last)
        .filter(|&row| !lines.is_blank(row))
        .count()
}

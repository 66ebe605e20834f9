//! Cutting one file into chunks: whole definitions where a grammar is compiled in and
//! the parse is usable, line windows otherwise, small neighbours merged.

#[cfg(feature = "tree-sitter")]
mod grammars;
mod lines;
mod merge;
#[cfg(feature = "tree-sitter")]
mod syntax;

pub(crate) use lines::LineIndex;

use crate::config::ChunkingConfig;
use crate::language::Grammar;

/// A chunk before it gets an id and metadata: 1-based inclusive lines and exact text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawChunk {
    pub(crate) start_line: u32,
    pub(crate) end_line: u32,
    pub(crate) content: String,
    /// Qualified names of the definitions in the chunk, outermost first.
    pub(crate) symbols: Vec<String>,
}

/// A span of rows (0-based, inclusive) on its way to becoming a chunk.
#[derive(Debug, Clone)]
pub(crate) struct Piece {
    pub(crate) first: usize,
    pub(crate) last: usize,
    pub(crate) symbols: Vec<String>,
    /// A definition stands on its own when it is large enough.
    pub(crate) is_definition: bool,
    /// Comments and attributes belong with what follows them.
    pub(crate) is_trivia: bool,
}

impl Piece {
    pub(crate) fn plain(first: usize, last: usize) -> Piece {
        Piece {
            first,
            last,
            symbols: Vec::new(),
            is_definition: false,
            is_trivia: false,
        }
    }
}

/// Reuses a tree-sitter parser across the files one thread chunks.
#[derive(Default)]
pub(crate) struct Chunker {
    #[cfg(feature = "tree-sitter")]
    parser: tree_sitter::Parser,
}

impl Chunker {
    /// The chunks of `text`, in file order, covering every non-blank line once.
    pub(crate) fn chunk(
        &mut self,
        text: &str,
        grammar: Option<Grammar>,
        config: &ChunkingConfig,
    ) -> Vec<RawChunk> {
        let lines = LineIndex::new(text);
        if lines.len() == 0 {
            return Vec::new();
        }
        let pieces = self
            .syntax_pieces(text, grammar, &lines, config)
            .unwrap_or_else(|| {
                lines
                    .windows(0, lines.len() - 1, config.window_lines, config.max_bytes)
                    .into_iter()
                    .map(|(first, last)| Piece::plain(first, last))
                    .collect()
            });
        merge::merge(pieces, &lines, config)
            .into_iter()
            .filter_map(|piece| finish(piece, &lines))
            .collect()
    }

    #[cfg(feature = "tree-sitter")]
    fn syntax_pieces(
        &mut self,
        text: &str,
        grammar: Option<Grammar>,
        lines: &LineIndex<'_>,
        config: &ChunkingConfig,
    ) -> Option<Vec<Piece>> {
        let pieces = syntax::pieces(&mut self.parser, grammar?, text, lines, config)?;
        (!pieces.is_empty()).then_some(pieces)
    }

    #[cfg(not(feature = "tree-sitter"))]
    fn syntax_pieces(
        &mut self,
        _text: &str,
        _grammar: Option<Grammar>,
        _lines: &LineIndex<'_>,
        _config: &ChunkingConfig,
    ) -> Option<Vec<Piece>> {
        None
    }
}

/// Trims blank rows off both ends and extracts the text; `None` for an all-blank piece.
fn finish(piece: Piece, lines: &LineIndex<'_>) -> Option<RawChunk> {
    let first = (piece.first..=piece.last).find(|&row| !lines.is_blank(row))?;
    let last = (first..=piece.last)
        .rev()
        .find(|&row| !lines.is_blank(row))?;
    let mut symbols = piece.symbols;
    let mut seen = std::collections::HashSet::new();
    symbols.retain(|symbol| seen.insert(symbol.clone()));
    Some(RawChunk {
        start_line: u32::try_from(first + 1).ok()?,
        end_line: u32::try_from(last + 1).ok()?,
        content: lines.text(first, last).to_owned(),
        symbols,
    })
}

//! Cutting one file into chunks: whole definitions where a grammar is compiled in and
//! the parse is usable, line windows otherwise, small neighbours merged.

#[cfg(feature = "tree-sitter")]
mod grammars;
mod lines;
mod merge;
#[cfg(feature = "tree-sitter")]
mod syntax;

pub(crate) use lines::LineIndex;

use std::collections::BTreeMap;

use aptix_rag::{Chunk, LineSpan};

use crate::config::ChunkingConfig;
use crate::language::{self, Grammar};
use crate::store;

/// Cuts one file into chunks the way the index does: ids, spans, language and the
/// `repo`, `extension`, `kind` (the [`FileKind`](crate::FileKind) of the path), `symbol`
/// (and, for chunks holding several definitions, `symbols`, comma-separated) metadata
/// included.
///
/// `path` is relative to the workspace with `/` separators; it picks the grammar and
/// the language tag. Useful to stores other than the embedded index that want the
/// same chunks.
pub fn chunk_file(path: &str, text: &str, repo: &str, config: &ChunkingConfig) -> Vec<Chunk> {
    Chunker::default()
        .chunk_file(path, text, repo, config)
        .into_iter()
        .map(|(chunk, _)| chunk)
        .collect()
}

/// The most headings of one chunk the index keeps as titles.
const MAX_HEADINGS: usize = 16;

/// The section headings a chunk holds, which the index searches beside definition
/// names: a section title says what its text is about the way a symbol does ("Feature
/// flags", "Sharing state with handlers"). Markdown's `#` headings, and the same in
/// Rust's doc comments (`//! # Feature flags`), outside fenced code (where `# ` starts a
/// shell comment or a hidden rustdoc line). At most [`MAX_HEADINGS`], each cut to 120
/// bytes.
pub(crate) fn headings<'a>(content: &'a str, language: &str) -> Vec<&'a str> {
    let markdown = language == "markdown";
    let mut out = Vec::new();
    let mut in_fence = false;
    for line in content.lines() {
        let trimmed = line.trim_start();
        let text = if markdown {
            // Indented by four or more, a line is code.
            if line.len() - trimmed.len() > 3 {
                continue;
            }
            trimmed
        } else if let Some(doc) = trimmed
            .strip_prefix("//!")
            .or_else(|| trimmed.strip_prefix("///"))
        {
            doc.strip_prefix(' ').unwrap_or(doc)
        } else {
            continue;
        };
        if text.starts_with("```") || text.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let level = text.bytes().take_while(|b| *b == b'#').count();
        let Some(title) = text.get(level..).filter(|_| (1..=6).contains(&level)) else {
            continue;
        };
        if !title.starts_with([' ', '\t']) {
            continue;
        }
        let title = title.trim().trim_end_matches('#').trim_end();
        if title.is_empty() {
            continue;
        }
        out.push(&title[..title.floor_char_boundary(120)]);
        if out.len() == MAX_HEADINGS {
            break;
        }
    }
    out
}

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
    /// Definitions the piece holds, outermost first.
    pub(crate) symbols: Vec<String>,
    /// Definitions the piece belongs to without holding them whole: the header or
    /// closing brace of a split class, a window of a long function.
    pub(crate) context: Vec<String>,
    /// A definition or a line window: merged with a neighbour only when small.
    pub(crate) stands_alone: bool,
    /// Comments and attributes belong with what follows them.
    pub(crate) is_trivia: bool,
}

impl Piece {
    /// A line window: already sized, so it is not merged with a full-sized neighbour.
    pub(crate) fn window(first: usize, last: usize) -> Piece {
        Piece {
            first,
            last,
            symbols: Vec::new(),
            context: Vec::new(),
            stands_alone: true,
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
    /// [`chunk_file`], also returning each chunk's full symbol list for the index.
    pub(crate) fn chunk_file(
        &mut self,
        path: &str,
        text: &str,
        repo: &str,
        config: &ChunkingConfig,
    ) -> Vec<(Chunk, Vec<String>)> {
        let language = aptix_rag::language_for_path(path);
        let extension = language::extension(path).map(str::to_ascii_lowercase);
        let kind = crate::kind::classify(path);
        self.chunk(text, Grammar::for_path(path), config)
            .into_iter()
            .filter_map(|raw| {
                let lines = LineSpan::new(raw.start_line, raw.end_line).ok()?;
                let mut metadata = BTreeMap::new();
                metadata.insert("repo".to_owned(), repo.to_owned());
                metadata.insert("kind".to_owned(), kind.as_str().to_owned());
                if let Some(extension) = &extension {
                    metadata.insert("extension".to_owned(), extension.clone());
                }
                if let Some(symbol) = raw.symbols.first() {
                    metadata.insert("symbol".to_owned(), symbol.clone());
                }
                if raw.symbols.len() > 1 {
                    metadata.insert("symbols".to_owned(), raw.symbols.join(","));
                }
                let chunk = Chunk {
                    id: store::chunk_id(path, raw.start_line, raw.end_line, &raw.content),
                    path: path.to_owned(),
                    lines,
                    language: language.to_owned(),
                    content: raw.content,
                    metadata,
                };
                Some((chunk, raw.symbols))
            })
            .collect()
    }

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
                    .map(|(first, last)| Piece::window(first, last))
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
        if text.len() > config.max_syntax_bytes {
            return None;
        }
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
    symbols.extend(piece.context);
    let mut seen = std::collections::HashSet::new();
    symbols.retain(|symbol| seen.insert(symbol.clone()));
    Some(RawChunk {
        start_line: u32::try_from(first + 1).ok()?,
        end_line: u32::try_from(last + 1).ok()?,
        content: lines.text(first, last).to_owned(),
        symbols,
    })
}

#[cfg(test)]
mod tests {
    use super::headings;

    #[test]
    fn markdown_and_doc_comment_headings_are_titles_and_code_is_not() {
        let markdown = "# Getting started\n\nText # not a heading\n## Feature flags ##\n\n```sh\n# a shell comment\n```\n    # indented code\n#hashtag\n###### Six\n####### Seven\n";
        assert_eq!(
            headings(markdown, "markdown"),
            ["Getting started", "Feature flags", "Six"]
        );
        let rust = "//! # Feature flags\n//!\n//! ```\n//! # use axum::Router;\n//! ```\n/// ## Errors\n// # not a doc comment\nfn f() {}\n";
        assert_eq!(headings(rust, "rust"), ["Feature flags", "Errors"]);
        // Elsewhere `#` starts a comment or an attribute, not a heading.
        assert!(headings("# Setup\nimport os\n", "python").is_empty());
        assert!(headings("#[derive(Debug)]\nstruct S;\n", "rust").is_empty());
    }

    #[test]
    fn headings_are_bounded() {
        let long = format!("# {}\n", "é".repeat(200));
        let cut = headings(&long, "markdown");
        assert_eq!(cut.len(), 1);
        assert!(cut[0].len() <= 120);
        let many = "# h\n".repeat(100);
        assert_eq!(headings(&many, "markdown").len(), super::MAX_HEADINGS);
    }
}

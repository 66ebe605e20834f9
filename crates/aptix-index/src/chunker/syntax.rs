//! Cutting a parsed file at definition boundaries.
//!
//! Every child of the root becomes a piece when it fits the size limits; a node that
//! does not fit is split at its own children (an `impl` or a class into its methods),
//! recursively; a node too large with no children left is cut into line windows.
//! Pieces are then merged by [`super::merge`].

use tree_sitter::{Node, Parser};

use super::Piece;
use super::lines::LineIndex;
use crate::config::ChunkingConfig;
use crate::language::Grammar;

/// Deeper recursion than this means a pathological file: the rest becomes windows,
/// which keeps the stack bounded.
const MAX_DEPTH: usize = 64;

/// At most this many definitions inside a chunk are listed as its symbols.
const MAX_SYMBOLS: usize = 32;

/// The pieces of `text`, or `None` when it should be chunked by line windows instead:
/// the grammar is not compiled in, or the parse failed or is mostly errors.
pub(crate) fn pieces(
    parser: &mut Parser,
    grammar: Grammar,
    text: &str,
    lines: &LineIndex<'_>,
    config: &ChunkingConfig,
) -> Option<Vec<Piece>> {
    parser.set_language(&grammar.tree_sitter()?).ok()?;
    let tree = parser.parse(text, None)?;
    let root = tree.root_node();
    if mostly_errors(root) {
        return None;
    }
    let mut cutter = Cutter {
        grammar,
        source: text.as_bytes(),
        lines,
        config,
        out: Vec::new(),
    };
    cutter.cut_children(root, None, 0);
    Some(cutter.out)
}

/// A parse is used when less than a quarter of the file sits in top-level error nodes;
/// tree-sitter recovers locally, so a few errors still leave good definitions around
/// them, while a file in another dialect parses into mostly errors.
fn mostly_errors(root: Node<'_>) -> bool {
    if root.is_error() {
        return true;
    }
    if !root.has_error() {
        return false;
    }
    let mut cursor = root.walk();
    let error_bytes: usize = root
        .children(&mut cursor)
        .filter(|child| child.is_error() || child.is_missing())
        .map(|child| child.byte_range().len())
        .sum();
    error_bytes.saturating_mul(4) >= root.byte_range().len()
}

struct Cutter<'a, 'l> {
    grammar: Grammar,
    source: &'a [u8],
    lines: &'l LineIndex<'a>,
    config: &'l ChunkingConfig,
    out: Vec<Piece>,
}

impl Cutter<'_, '_> {
    fn rows(&self, node: Node<'_>) -> (usize, usize) {
        let start = node.start_position().row;
        let end = node.end_position();
        // A node that ends at column 0 ends with the previous line's newline.
        let last = if end.column == 0 && end.row > start {
            end.row - 1
        } else {
            end.row
        };
        (start, last.min(self.lines.len().saturating_sub(1)))
    }

    fn qualify(&self, container: Option<&str>, name: &str) -> String {
        match container {
            Some(container) => format!("{container}{}{name}", self.grammar.separator()),
            None => name.to_owned(),
        }
    }

    fn cut_children(&mut self, node: Node<'_>, container: Option<&str>, depth: usize) {
        let mut cursor = node.walk();
        let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
        for child in children {
            self.cut(child, container, depth);
        }
    }

    fn cut(&mut self, node: Node<'_>, container: Option<&str>, depth: usize) {
        let (first, last) = self.rows(node);
        if first >= self.lines.len() {
            return;
        }
        let definition = self.grammar.definition(node, self.source);
        let symbol = definition
            .as_ref()
            .map(|definition| self.qualify(container, &definition.name));
        let fits = last - first < self.config.max_lines
            && self.lines.bytes(first, last) <= self.config.max_bytes;
        if fits {
            let mut symbols: Vec<String> = symbol.iter().cloned().collect();
            match &definition {
                Some(definition) if definition.is_container => {
                    self.nested_symbols(definition.node, symbol.as_deref(), &mut symbols, 0);
                }
                Some(_) => {}
                None => self.nested_symbols(node, container, &mut symbols, 0),
            }
            self.out.push(Piece {
                first,
                last,
                symbols,
                context: Vec::new(),
                stands_alone: definition.is_some(),
                is_trivia: self.grammar.is_leading_trivia(node.kind()),
            });
            return;
        }
        let before = self.out.len();
        if node.child_count() > 0 && depth < MAX_DEPTH {
            // Inside a wrapper (`export class`, a decorated Python class) the wrapped
            // definition names itself when it is cut, so the container stays the outer one.
            let inner_container = match &definition {
                Some(definition) if definition.node == node => symbol.as_deref(),
                _ => container,
            };
            self.cut_children(node, inner_container, depth + 1);
        } else {
            for (first, last) in
                self.lines
                    .windows(first, last, self.config.window_lines, self.config.max_bytes)
            {
                self.out.push(Piece::window(first, last));
            }
        }
        // Pieces of a split definition that name nothing themselves (its header, its
        // closing brace, windows of a long body) still belong to it.
        if let Some(symbol) = symbol {
            for piece in self.out.iter_mut().skip(before) {
                if piece.symbols.is_empty() && piece.context.is_empty() {
                    piece.context.push(symbol.clone());
                }
            }
        }
    }

    /// Adds the qualified names of definitions inside `node`, not looking inside
    /// function bodies (their local helpers are not what a reader searches for).
    fn nested_symbols(
        &self,
        node: Node<'_>,
        container: Option<&str>,
        symbols: &mut Vec<String>,
        depth: usize,
    ) {
        if depth >= MAX_DEPTH {
            return;
        }
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            if symbols.len() >= MAX_SYMBOLS {
                return;
            }
            match self.grammar.definition(child, self.source) {
                Some(definition) if definition.node != child => {
                    self.nested_symbols(child, container, symbols, depth + 1);
                }
                Some(definition) => {
                    let symbol = self.qualify(container, &definition.name);
                    symbols.push(symbol.clone());
                    if definition.is_container {
                        self.nested_symbols(child, Some(&symbol), symbols, depth + 1);
                    }
                }
                None => self.nested_symbols(child, container, symbols, depth + 1),
            }
        }
    }
}

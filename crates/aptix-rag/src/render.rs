//! The AGN-002 `[CONTEXT]` block, byte for byte. The format and the rules that keep
//! untrusted chunks from forging structure are documented on [`render_context_block`],
//! where users of the crate can read them.

use std::fmt::Write as _;

use crate::Chunk;
use crate::text::{
    push_fence, push_fence_tag, push_normalised_lines, push_single_line, scan_content,
};

/// The block's first line and the blank line after it.
pub(crate) const CONTEXT_HEADER: &str = "[CONTEXT]\n\n";

/// Bytes a section adds besides its content and metadata values: the header line with a
/// chunk number, the four labels, two fences, line ends and the closing blank line.
/// Only a capacity hint; a wrong guess costs a reallocation, never correctness.
const SECTION_OVERHEAD: usize = 96;

/// Renders chunks as the AGN-002 `[CONTEXT]` block, numbering them from 1 in the order
/// given; `None` when there are no chunks, since an empty block would only tell the
/// model that nothing was found in a place it cannot ask about. Accepts `&[Chunk]` and
/// `&[ScoredChunk]` alike.
///
/// ````text
/// [CONTEXT]
///
/// === CHUNK 1 ===
/// Id: ctx_1
/// Path: Billing/Managers/InvoiceManager.cs
/// Lines: 40-85
/// Language: csharp
/// ```csharp
/// public class InvoiceManager { }
/// ```
///
/// ````
///
/// Every line ends in `\n`, and every chunk section, the last one included, ends with its
/// closing fence and one blank line (`"```\n\n"`), as AGN-002 section 7 asks for each
/// chunk. That makes the block the header followed by self-contained, identically shaped
/// sections, so [`pack`](crate::pack()) can price each section on its own and whatever the
/// request builder appends after the block is already separated from it.
///
/// Chunk text is untrusted (a Markdown file with its own fences, a fixture, hostile
/// text), and so are its id, path and language. Three rules keep a reader from taking any
/// of it for structure:
///
/// - **Line ends**: `\r\n` and lone `\r` in content become `\n`, the only line end the
///   block contains, so no reader sees a line break that another reader does not.
/// - **Fences**: the fence is one backtick longer than the longest run of backticks
///   anywhere in the content, and at least three. CommonMark closes a fence only with a
///   run at least as long, so no content line can close it early, and a forged
///   `=== CHUNK 7 ===` line stays inside the code block where it is plain text.
/// - **Metadata**: in the `Id:`, `Path:` and `Language:` values, `\` becomes `\\`,
///   newline, carriage return and tab become `\n`, `\r`, `\t`, and every other control
///   character, the Unicode line and paragraph separators and the bidirectional
///   overrides become `\u{XXXX}`. A value therefore stays on its one line, reads as what
///   it is, and can be recovered exactly. The language after the opening fence must be
///   one word without backticks (CommonMark's info string), so there every character
///   outside `A-Z a-z 0-9 + # . _ -` becomes `_`; the `Language:` line keeps the exact
///   value.
///
/// ```
/// use aptix_rag::{Chunk, ChunkId, LineSpan, render_context_block};
///
/// let chunk = Chunk {
///     id: ChunkId::new("ctx_1"),
///     path: "src/lib.rs".into(),
///     lines: LineSpan::new(1, 1)?,
///     language: "rust".into(),
///     content: "pub fn answer() -> u32 { 42 }".into(),
///     metadata: Default::default(),
/// };
/// let block = render_context_block(&[chunk]).expect("one chunk renders a block");
/// assert_eq!(
///     block,
///     "[CONTEXT]\n\n=== CHUNK 1 ===\nId: ctx_1\nPath: src/lib.rs\nLines: 1-1\n\
///      Language: rust\n```rust\npub fn answer() -> u32 { 42 }\n```\n\n"
/// );
/// assert_eq!(render_context_block::<Chunk>(&[]), None);
/// # Ok::<(), aptix_rag::RagError>(())
/// ```
pub fn render_context_block<C: AsRef<Chunk>>(chunks: &[C]) -> Option<String> {
    if chunks.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(rendered_size_hint(chunks));
    render_context_block_into(&mut out, chunks);
    Some(out)
}

/// Appends the `[CONTEXT]` block for `chunks` to `out`, reusing its allocation; returns
/// whether anything was written (nothing at all for no chunks, as with
/// [`render_context_block`]).
pub fn render_context_block_into<C: AsRef<Chunk>>(out: &mut String, chunks: &[C]) -> bool {
    if chunks.is_empty() {
        return false;
    }
    out.reserve(rendered_size_hint(chunks));
    out.push_str(CONTEXT_HEADER);
    for (index, chunk) in chunks.iter().enumerate() {
        write_section(out, index + 1, chunk.as_ref());
    }
    true
}

pub(crate) fn rendered_size_hint<C: AsRef<Chunk>>(chunks: &[C]) -> usize {
    chunks.iter().fold(CONTEXT_HEADER.len(), |total, chunk| {
        let chunk = chunk.as_ref();
        total
            .saturating_add(chunk.content.len())
            .saturating_add(chunk.id.as_str().len())
            .saturating_add(chunk.path.len())
            .saturating_add(chunk.language.len().saturating_mul(2))
            .saturating_add(SECTION_OVERHEAD)
    })
}

/// Appends one chunk's section, `=== CHUNK number ===` through the blank line after its
/// closing fence. The block is [`CONTEXT_HEADER`] followed by these sections.
pub(crate) fn write_section(out: &mut String, number: usize, chunk: &Chunk) {
    // Writing to a `String` cannot fail, so the `fmt::Result`s below carry no information.
    let _ = writeln!(out, "=== CHUNK {number} ===");
    out.push_str("Id: ");
    push_single_line(out, chunk.id.as_str());
    out.push_str("\nPath: ");
    push_single_line(out, &chunk.path);
    let _ = write!(out, "\nLines: {}\nLanguage: ", chunk.lines);
    push_single_line(out, &chunk.language);
    out.push('\n');

    let scan = scan_content(&chunk.content);
    push_fence(out, scan.fence_len);
    push_fence_tag(out, &chunk.language);
    out.push('\n');
    if scan.has_carriage_return {
        push_normalised_lines(out, &chunk.content);
    } else {
        out.push_str(&chunk.content);
    }
    out.push('\n');
    push_fence(out, scan.fence_len);
    out.push_str("\n\n");
}

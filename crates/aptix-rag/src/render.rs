//! The AGN-002 `[CONTEXT]` block, byte for byte. The format and the rules that keep
//! untrusted chunks from forging structure are documented on [`render_context_block`],
//! where users of the crate can read them.

use std::fmt::Write as _;

use crate::Chunk;

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

fn rendered_size_hint<C: AsRef<Chunk>>(chunks: &[C]) -> usize {
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
    push_metadata_value(out, chunk.id.as_str());
    out.push_str("\nPath: ");
    push_metadata_value(out, &chunk.path);
    let _ = write!(out, "\nLines: {}\nLanguage: ", chunk.lines);
    push_metadata_value(out, &chunk.language);
    out.push('\n');

    let scan = scan_content(&chunk.content);
    let fence_len = scan.longest_backtick_run.saturating_add(1).max(3);
    push_fence(out, fence_len);
    push_fence_tag(out, &chunk.language);
    out.push('\n');
    if scan.has_carriage_return {
        push_normalised_lines(out, &chunk.content);
    } else {
        out.push_str(&chunk.content);
    }
    out.push('\n');
    push_fence(out, fence_len);
    out.push_str("\n\n");
}

/// What rendering needs to know about a chunk's content before copying it.
struct ContentScan {
    /// The longest run of consecutive backticks anywhere in the content.
    ///
    /// Anywhere, not only at a line start where CommonMark would look: a model reads
    /// loosely, and a fence longer than every run in sight is unambiguous to any reader.
    longest_backtick_run: usize,
    /// Whether the content needs line-end normalisation.
    has_carriage_return: bool,
}

/// One vectorised pass that jumps between the only two bytes that matter, so content
/// without them costs little more than the copy itself (a byte-by-byte loop here made
/// rendering several times slower; see `benches/render.rs`).
fn scan_content(text: &str) -> ContentScan {
    let bytes = text.as_bytes();
    let mut scan = ContentScan {
        longest_backtick_run: 0,
        has_carriage_return: false,
    };
    let mut current = 0;
    let mut next_if_consecutive = usize::MAX;
    for index in memchr::memchr2_iter(b'`', b'\r', bytes) {
        if bytes.get(index) == Some(&b'\r') {
            scan.has_carriage_return = true;
            continue;
        }
        current = if index == next_if_consecutive {
            current + 1
        } else {
            1
        };
        scan.longest_backtick_run = scan.longest_backtick_run.max(current);
        next_if_consecutive = index + 1;
    }
    scan
}

fn push_fence(out: &mut String, len: usize) {
    out.extend(std::iter::repeat_n('`', len));
}

/// Appends `text` with `\r\n` and lone `\r` turned into `\n`.
fn push_normalised_lines(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some((line, after)) = rest.split_once('\r') {
        out.push_str(line);
        out.push('\n');
        rest = after.strip_prefix('\n').unwrap_or(after);
    }
    out.push_str(rest);
}

/// Appends a metadata value so that it stays on one line and can be read back exactly
/// (see the module docs for the escapes).
fn push_metadata_value(out: &mut String, value: &str) {
    if !value.chars().any(needs_escape) {
        out.push_str(value);
        return;
    }
    for character in value.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            other if needs_escape(other) => {
                let _ = write!(out, "\\u{{{:04X}}}", u32::from(other));
            }
            other => out.push(other),
        }
    }
}

/// Characters a metadata value must not show raw: the escape character itself, control
/// characters (C0, DEL, C1 including NEL), the Unicode line and paragraph separators that
/// some readers break lines at, and the bidirectional controls that can make a line
/// display differently from what it says.
fn needs_escape(character: char) -> bool {
    character == '\\'
        || character.is_control()
        || matches!(
            character,
            '\u{2028}' | '\u{2029}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Appends the language as a CommonMark info string: one word, no backticks.
fn push_fence_tag(out: &mut String, language: &str) {
    out.extend(language.chars().map(|character| {
        if character.is_ascii_alphanumeric() || matches!(character, '+' | '#' | '.' | '_' | '-') {
            character
        } else {
            '_'
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(value: &str) -> String {
        let mut out = String::new();
        push_metadata_value(&mut out, value);
        out
    }

    fn normalised(text: &str) -> String {
        let mut out = String::new();
        push_normalised_lines(&mut out, text);
        out
    }

    fn tag(language: &str) -> String {
        let mut out = String::new();
        push_fence_tag(&mut out, language);
        out
    }

    #[test]
    fn metadata_escapes() {
        let cases = [
            (
                "Billing/Api/InvoiceController.cs",
                "Billing/Api/InvoiceController.cs",
            ),
            ("a\nb", "a\\nb"),
            ("a\r\nb", "a\\r\\nb"),
            ("tab\there", "tab\\there"),
            (r"C:\src\x.cs", r"C:\\src\\x.cs"),
            ("nul\0", "nul\\u{0000}"),
            ("nel\u{85}", "nel\\u{0085}"),
            ("ls\u{2028}ps\u{2029}", "ls\\u{2028}ps\\u{2029}"),
            ("rlo\u{202E}", "rlo\\u{202E}"),
            ("résumé 日本 🦀", "résumé 日本 🦀"),
            ("", ""),
        ];
        for (value, expected) in cases {
            assert_eq!(escaped(value), expected, "value {value:?}");
        }
    }

    #[test]
    fn line_ends_become_newlines() {
        let cases = [
            ("a\r\nb", "a\nb"),
            ("a\rb", "a\nb"),
            ("a\r\r\nb", "a\n\nb"),
            ("a\n\rb", "a\n\nb"),
            ("\r", "\n"),
            ("end\r\n", "end\n"),
            ("plain", "plain"),
        ];
        for (text, expected) in cases {
            assert_eq!(normalised(text), expected, "text {text:?}");
        }
    }

    #[test]
    fn fence_is_longer_than_any_backtick_run() {
        let cases = [
            ("no ticks", 0),
            ("`inline`", 1),
            ("```rust\n```", 3),
            ("a ```` b ``", 4),
            ("``````", 6),
            ("`\r`", 1),
            ("a``\r\n```b`", 3),
        ];
        for (text, run) in cases {
            assert_eq!(
                scan_content(text).longest_backtick_run,
                run,
                "text {text:?}"
            );
        }
    }

    #[test]
    fn fence_tags_are_one_word() {
        let cases = [
            ("csharp", "csharp"),
            ("c++", "c++"),
            ("objective-c", "objective-c"),
            ("visual basic", "visual_basic"),
            ("a`b", "a_b"),
            ("x\ny", "x_y"),
            ("日本", "__"),
            ("", ""),
        ];
        for (language, expected) in cases {
            assert_eq!(tag(language), expected, "language {language:?}");
        }
    }
}

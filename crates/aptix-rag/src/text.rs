//! Text primitives for every block Aptix shows a model: code fences that untrusted
//! content cannot close, line-end normalisation, and one-line header values that cannot
//! start a line of their own. The `[CONTEXT]` block (AGN-002) is built from them, and so
//! are `aptix-request`'s `[TOOL_RESULTS]` and tool-usage blocks, so every block follows
//! one convention.

use std::fmt::Write as _;

/// What fencing needs to know about content before copying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentScan {
    /// The fence length that nothing in the content can close: one more than the longest
    /// run of backticks *anywhere* in it (not only at a line start, where CommonMark
    /// would look: a model reads loosely, and a fence longer than every run in sight is
    /// unambiguous to any reader), and at least three.
    pub fence_len: usize,
    /// Whether the content has a carriage return and so needs line-end normalisation.
    pub has_carriage_return: bool,
}

/// One vectorised pass that jumps between the only two bytes that matter, so content
/// without them costs little more than the copy itself (a byte-by-byte loop here made
/// rendering several times slower; see `benches/render.rs`).
pub fn scan_content(text: &str) -> ContentScan {
    let bytes = text.as_bytes();
    let mut longest = 0usize;
    let mut has_carriage_return = false;
    let mut current = 0usize;
    let mut next_if_consecutive = usize::MAX;
    for index in memchr::memchr2_iter(b'`', b'\r', bytes) {
        if bytes.get(index) == Some(&b'\r') {
            has_carriage_return = true;
            continue;
        }
        current = if index == next_if_consecutive {
            current + 1
        } else {
            1
        };
        longest = longest.max(current);
        next_if_consecutive = index + 1;
    }
    ContentScan {
        fence_len: longest.saturating_add(1).max(3),
        has_carriage_return,
    }
}

/// Appends a fence of `len` backticks.
pub fn push_fence(out: &mut String, len: usize) {
    out.extend(std::iter::repeat_n('`', len));
}

/// Appends `text` with `\r\n` and lone `\r` turned into `\n`.
pub fn push_normalised_lines(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some((line, after)) = rest.split_once('\r') {
        out.push_str(line);
        out.push('\n');
        rest = after.strip_prefix('\n').unwrap_or(after);
    }
    out.push_str(rest);
}

/// Appends a header value so that it stays on one line and can be read back exactly:
/// `\` becomes `\\`; newline, carriage return and tab become `\n`, `\r`, `\t`; every
/// other character of [`needs_escape`] becomes `\u{XXXX}` (at least four upper-case hex
/// digits).
pub fn push_single_line(out: &mut String, value: &str) {
    if !value
        .chars()
        .any(|character| character == '\\' || needs_escape(character))
    {
        out.push_str(value);
        return;
    }
    for character in value.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            other if needs_escape(other) => push_unicode_escape(out, other),
            other => out.push(other),
        }
    }
}

/// Appends `\u{XXXX}` (at least four upper-case hex digits) for `character`.
pub fn push_unicode_escape(out: &mut String, character: char) {
    // Writing to a `String` cannot fail.
    let _ = write!(out, "\\u{{{:04X}}}", u32::from(character));
}

/// Characters a one-line value must not show raw: control characters (C0, DEL, C1
/// including NEL), the Unicode line and paragraph separators that some readers break
/// lines at, and the bidirectional controls that can make a line display differently
/// from what it says.
pub fn needs_escape(character: char) -> bool {
    character.is_control()
        || matches!(
            character,
            '\u{2028}' | '\u{2029}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Appends `info` as a CommonMark info string: one word, no backticks (every character
/// outside `A-Za-z0-9+#._-` becomes `_`).
pub fn push_fence_tag(out: &mut String, info: &str) {
    out.extend(info.chars().map(|character| {
        if character.is_ascii_alphanumeric() || matches!(character, '+' | '#' | '.' | '_' | '-') {
            character
        } else {
            '_'
        }
    }));
}

/// Appends `content` inside a backtick fence tagged `tag`, ending with the closing fence
/// and a newline.
///
/// The fence is one backtick longer than the longest run in the content, and at least
/// three: CommonMark closes a fence only with a run at least as long as the opening one,
/// so nothing inside can close it early, whichever reader (a Markdown parser or a model)
/// looks at it. Line ends are normalised to `\n` so the closing fence is always on a
/// line of its own; unlike a `[CONTEXT]` chunk, content that already ends with a line
/// end gets no second one. Used by the request blocks (`[TOOL_RESULTS]`) and the
/// schema Request's `state` content.
pub fn push_fenced(out: &mut String, tag: &str, content: &str) {
    let scan = scan_content(content);
    push_fence(out, scan.fence_len);
    push_fence_tag(out, tag);
    out.push('\n');
    if scan.has_carriage_return {
        push_normalised_lines(out, content);
    } else {
        out.push_str(content);
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    push_fence(out, scan.fence_len);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn escaped(value: &str) -> String {
        let mut out = String::new();
        push_single_line(&mut out, value);
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
                scan_content(text).fence_len,
                (run + 1).max(3),
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

//! Small text helpers shared by the block renderers: code fences that untrusted content
//! cannot close, one-line header values that cannot start a new line, and the
//! "blank means absent" rule for optional inputs.
//!
//! These mirror the conventions of the `[CONTEXT]` renderer in `aptix-rag` (AGN-002),
//! which keeps its helpers private; they are small enough to own here rather than widen
//! that crate's API for them.

/// Whether an optional text input counts as absent: AGN-003 omits a part whose text is
/// "null/empty/whitespace".
pub(crate) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// The length of the longest run of backticks in `text`.
pub(crate) fn longest_backtick_run(text: &str) -> usize {
    let mut longest = 0;
    let mut current = 0;
    for byte in text.bytes() {
        if byte == b'`' {
            current += 1;
            longest = longest.max(current);
        } else {
            current = 0;
        }
    }
    longest
}

/// Appends `content` inside a backtick fence tagged `tag`, ending with the closing fence
/// and a newline.
///
/// The fence is one backtick longer than the longest run in the content, and at least
/// three: CommonMark closes a fence only with a run at least as long as the opening one,
/// so nothing inside can close it early, whichever reader (a Markdown parser or a model)
/// looks at it. Line ends are normalised to `\n` so the closing fence is always on a
/// line of its own.
pub(crate) fn push_fenced(out: &mut String, tag: &str, content: &str) {
    let fence_len = (longest_backtick_run(content) + 1).max(3);
    push_backticks(out, fence_len);
    out.push_str(tag);
    out.push('\n');
    push_normalised_lines(out, content);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    push_backticks(out, fence_len);
    out.push('\n');
}

fn push_backticks(out: &mut String, count: usize) {
    out.extend(std::iter::repeat_n('`', count));
}

/// Appends `text` with `\r\n` and lone `\r` turned into `\n`.
fn push_normalised_lines(out: &mut String, text: &str) {
    let mut rest = text;
    while let Some((before, after)) = rest.split_once('\r') {
        out.push_str(before);
        out.push('\n');
        rest = after.strip_prefix('\n').unwrap_or(after);
    }
    out.push_str(rest);
}

/// Appends a header value on one line: `\` becomes `\\`, newline, carriage return and
/// tab become `\n`, `\r`, `\t`, and every other control or line-separator character
/// becomes `\u{XX}`, so a value can never start a line of its own (and forge a header)
/// and the original can be recovered exactly.
pub(crate) fn push_single_line(out: &mut String, value: &str) {
    for character in value.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            other if breaks_line(other) => push_unicode_escape(out, other),
            other => out.push(other),
        }
    }
}

/// Appends `\u{HEX}` for `character`.
pub(crate) fn push_unicode_escape(out: &mut String, character: char) {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let _ = write!(out, "\\u{{{:x}}}", u32::from(character));
}

/// Control characters and the Unicode line and paragraph separators: anything a reader
/// might take as the end of a line or that does not print.
pub(crate) fn breaks_line(character: char) -> bool {
    character.is_control() || matches!(character, '\u{2028}' | '\u{2029}')
}

/// Characters after which a new line starts, for any reasonable reader: the ASCII line
/// ends, vertical tab, form feed, next line and the Unicode separators.
pub(crate) fn is_line_terminator(character: char) -> bool {
    matches!(
        character,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(f: fn(&mut String, &str), cases: &[(&str, &str)]) {
        for (input, expected) in cases {
            let mut out = String::new();
            f(&mut out, input);
            assert_eq!(&out, expected, "input {input:?}");
        }
    }

    #[test]
    fn fences_outgrow_every_backtick_run() {
        check(
            |out, text| push_fenced(out, "json", text),
            &[
                ("{}", "```json\n{}\n```\n"),
                ("a\n", "```json\na\n```\n"),
                ("", "```json\n```\n"),
                ("```\nx\n```", "````json\n```\nx\n```\n````\n"),
                ("a ````` b", "``````json\na ````` b\n``````\n"),
                ("a\r\nb\rc", "```json\na\nb\nc\n```\n"),
            ],
        );
    }

    #[test]
    fn single_line_values_cannot_break_lines() {
        check(
            push_single_line,
            &[
                ("plain", "plain"),
                ("a\nb", "a\\nb"),
                ("a\r\nb\tc", "a\\r\\nb\\tc"),
                ("back\\slash", "back\\\\slash"),
                ("nl\u{85}sep\u{2028}", "nl\\u{85}sep\\u{2028}"),
                ("bell\u{7}", "bell\\u{7}"),
            ],
        );
    }

    #[test]
    fn blank_means_whitespace_only() {
        assert!(is_blank(""));
        assert!(is_blank(" \n\t"));
        assert!(!is_blank(" x "));
    }
}

//! Small text helpers of the block renderers. The fence, line-end and one-line escaping
//! primitives are `aptix_rag::text`'s, so the `[TOOL_RESULTS]` and tool-usage blocks
//! follow the same conventions as the `[CONTEXT]` block; what is here is specific to
//! requests: the "blank means absent" rule and a fenced block that ends in exactly one
//! line end.

pub(crate) use aptix_rag::text::{
    needs_escape, push_fenced, push_single_line, push_unicode_escape,
};

/// Whether an optional text input counts as absent: AGN-003 omits a part whose text is
/// "null/empty/whitespace".
pub(crate) fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
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
                ("nl\u{85}sep\u{2028}", "nl\\u{0085}sep\\u{2028}"),
                ("bell\u{7}", "bell\\u{0007}"),
                ("rtl\u{202E}txt", "rtl\\u{202E}txt"),
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

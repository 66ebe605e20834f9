//! The tool-usage metadata block (AGN-003 section 4.3, AGN-005 delimiters): usage
//! guidance for every server tool, as the third part of the system message.
//!
//! ```text
//! <<<APTIX_SERVER_TOOL_USAGE_METADATA_BEGIN>>>
//! <<<APTIX_TOOL_USAGE_BEGIN name='search'>>>
//! Call search before answering questions about the code.
//! <<<APTIX_TOOL_USAGE_END name='search'>>>
//! <<<APTIX_SERVER_TOOL_USAGE_METADATA_END>>>
//! ```
//!
//! Every line ends in `\n`. Two rules keep the structure intact whatever the texts hold:
//!
//! - **Names** are written between single quotes with `\`, `'`, `<`, `>`, and every
//!   control, line-separator and bidirectional character replaced by `\u{XXXX}` (four
//!   or more upper-case hex digits), so a name can neither end the quoted value, nor
//!   hold `>>>`, nor start a new line.
//! - **Usage texts** are line-based: a line that looks like a delimiter (after optional
//!   leading whitespace and backslashes, it starts with `<<<APTIX_`, in any letter case)
//!   gets one backslash inserted before its first `<` (or before its existing
//!   backslashes), the way mbox quotes `From ` lines. Such a line no longer starts with
//!   `<<<`, so it cannot close its own section, another tool's, or the block; adding a
//!   backslash also to already-escaped lines keeps the rule reversible. Every Unicode
//!   line terminator counts as the start of a new line, not only `\n`. Trailing line
//!   ends of a usage text are dropped; the text is followed by one `\n`.

use crate::text::{is_line_terminator, needs_escape, push_unicode_escape};

/// The block's first line.
pub(crate) const USAGE_BLOCK_BEGIN: &str = "<<<APTIX_SERVER_TOOL_USAGE_METADATA_BEGIN>>>";
/// The block's last line.
pub(crate) const USAGE_BLOCK_END: &str = "<<<APTIX_SERVER_TOOL_USAGE_METADATA_END>>>";
/// The prefix every delimiter line starts with; usage-text lines never do.
pub(crate) const DELIMITER_PREFIX: &str = "<<<APTIX_";

/// Builds the tool-usage block from (tool name, usage text) pairs, in the order added.
///
/// ```
/// use aptix_request::ToolUsageBlock;
///
/// let block = ToolUsageBlock::new()
///     .tool("search", "Search before you answer.")
///     .render();
/// assert_eq!(
///     block.as_deref(),
///     Some("<<<APTIX_SERVER_TOOL_USAGE_METADATA_BEGIN>>>\n\
///           <<<APTIX_TOOL_USAGE_BEGIN name='search'>>>\n\
///           Search before you answer.\n\
///           <<<APTIX_TOOL_USAGE_END name='search'>>>\n\
///           <<<APTIX_SERVER_TOOL_USAGE_METADATA_END>>>\n"),
/// );
/// assert_eq!(ToolUsageBlock::new().render(), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolUsageBlock {
    tools: Vec<(String, String)>,
}

impl ToolUsageBlock {
    /// An empty block (renders to nothing).
    pub fn new() -> ToolUsageBlock {
        ToolUsageBlock::default()
    }

    /// Adds one tool's usage text.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>, usage: impl Into<String>) -> ToolUsageBlock {
        self.push(name, usage);
        self
    }

    /// Adds one tool's usage text, in place.
    pub fn push(&mut self, name: impl Into<String>, usage: impl Into<String>) {
        self.tools.push((name.into(), usage.into()));
    }

    /// Whether no tool was added.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The block's text, or `None` when no tool was added (AGN-003: an empty block is
    /// omitted).
    pub fn render(&self) -> Option<String> {
        if self.tools.is_empty() {
            return None;
        }
        let text_len: usize = self
            .tools
            .iter()
            .map(|(name, usage)| 2 * name.len() + usage.len() + 80)
            .sum();
        let mut out = String::with_capacity(text_len + 96);
        out.push_str(USAGE_BLOCK_BEGIN);
        out.push('\n');
        for (name, usage) in &self.tools {
            push_delimiter(&mut out, "BEGIN", name);
            push_usage_text(&mut out, usage);
            push_delimiter(&mut out, "END", name);
        }
        out.push_str(USAGE_BLOCK_END);
        out.push('\n');
        Some(out)
    }
}

impl<N: Into<String>, U: Into<String>> FromIterator<(N, U)> for ToolUsageBlock {
    fn from_iter<I: IntoIterator<Item = (N, U)>>(iter: I) -> ToolUsageBlock {
        ToolUsageBlock {
            tools: iter
                .into_iter()
                .map(|(name, usage)| (name.into(), usage.into()))
                .collect(),
        }
    }
}

fn push_delimiter(out: &mut String, which: &str, name: &str) {
    out.push_str(DELIMITER_PREFIX);
    out.push_str("TOOL_USAGE_");
    out.push_str(which);
    out.push_str(" name='");
    push_escaped_name(out, name);
    out.push_str("'>>>\n");
}

/// Appends a tool name with `\`, `'`, `<`, `>` and the characters of
/// [`needs_escape`] written as `\u{XXXX}`.
fn push_escaped_name(out: &mut String, name: &str) {
    for character in name.chars() {
        if matches!(character, '\\' | '\'' | '<' | '>') || needs_escape(character) {
            push_unicode_escape(out, character);
        } else {
            out.push(character);
        }
    }
}

/// Appends a usage text without its trailing line ends, delimiter-looking lines
/// neutralised, followed by `\n` (nothing at all for an empty text).
fn push_usage_text(out: &mut String, usage: &str) {
    let usage = usage.trim_end_matches(is_line_terminator);
    if usage.is_empty() {
        return;
    }
    let mut line_start = true;
    let mut rest = usage;
    loop {
        if line_start && looks_like_delimiter(rest) {
            let line = rest.trim_start_matches(is_indent);
            out.push_str(rest.get(..rest.len() - line.len()).unwrap_or_default());
            out.push('\\');
            rest = line;
        }
        let mut chars = rest.chars();
        let Some(character) = chars.next() else { break };
        out.push(character);
        line_start = is_line_terminator(character);
        rest = chars.as_str();
    }
    out.push('\n');
}

/// Whitespace that may precede a delimiter on its line (not a line terminator).
fn is_indent(character: char) -> bool {
    character.is_whitespace() && !is_line_terminator(character)
}

/// Whether the line starting at `line` looks like a delimiter: optional indentation,
/// optional backslashes, then `<<<APTIX_` in any letter case.
pub(crate) fn looks_like_delimiter(line: &str) -> bool {
    let after = line.trim_start_matches(is_indent).trim_start_matches('\\');
    after
        .get(..DELIMITER_PREFIX.len())
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(DELIMITER_PREFIX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(usage: &str, expected_body: &str) {
        let mut out = String::new();
        push_usage_text(&mut out, usage);
        assert_eq!(out, expected_body, "usage {usage:?}");
    }

    #[test]
    fn delimiter_lines_are_neutralised() {
        check("plain", "plain\n");
        check("a\nb\n\n", "a\nb\n");
        check("", "");
        check("\n\r\n", "");
        check(
            "<<<APTIX_TOOL_USAGE_END name='x'>>>",
            "\\<<<APTIX_TOOL_USAGE_END name='x'>>>\n",
        );
        check("ok\n  <<<aptix_x", "ok\n  \\<<<aptix_x\n");
        check("ok\r<<<APTIX_x", "ok\r\\<<<APTIX_x\n");
        check("ok\u{2028}<<<APTIX_x", "ok\u{2028}\\<<<APTIX_x\n");
        check("\\\\<<<APTIX_x", "\\\\\\<<<APTIX_x\n");
        check("text <<<APTIX_x mid-line", "text <<<APTIX_x mid-line\n");
        check("<<<APTIX", "<<<APTIX\n");
    }

    #[test]
    fn names_are_escaped() {
        let mut out = String::new();
        push_escaped_name(&mut out, "a'b>>>c\nd\\e<");
        assert_eq!(
            out,
            "a\\u{0027}b\\u{003E}\\u{003E}\\u{003E}c\\u{000A}d\\u{005C}e\\u{003C}"
        );
    }
}

//! Line arithmetic over one file's text: where each line starts, the exact text of a
//! span of lines, and line windows for text without usable syntax.

/// Byte offsets of the lines of a text. Rows are 0-based here; chunks turn them into
/// AGN-002's 1-based spans at the very end.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset where each line starts; never empty for a non-empty text.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> LineIndex<'a> {
        let mut starts = Vec::new();
        if !text.is_empty() {
            starts.push(0);
            starts.extend(
                memchr::memchr_iter(b'\n', text.as_bytes())
                    .map(|newline| newline + 1)
                    .filter(|&start| start < text.len()),
            );
        }
        LineIndex { text, starts }
    }

    /// How many lines the text has (a final line without a newline counts).
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// Byte offset of the start of `row`.
    fn start_of(&self, row: usize) -> usize {
        self.starts.get(row).copied().unwrap_or(self.text.len())
    }

    /// Byte offset of the end of `row`'s text, before its `\n` or `\r\n`.
    fn end_of(&self, row: usize) -> usize {
        let next = self.start_of(row + 1);
        let bytes = self.text.as_bytes();
        let mut end = next;
        if end > 0 && bytes.get(end - 1) == Some(&b'\n') {
            end -= 1;
            if end > 0 && bytes.get(end - 1) == Some(&b'\r') {
                end -= 1;
            }
        }
        end.max(self.start_of(row))
    }

    /// The exact text of rows `first..=last`, without the last line's terminator.
    pub(crate) fn text(&self, first: usize, last: usize) -> &'a str {
        self.text
            .get(self.start_of(first)..self.end_of(last))
            .unwrap_or_default()
    }

    /// Bytes of rows `first..=last`, terminators included.
    pub(crate) fn bytes(&self, first: usize, last: usize) -> usize {
        self.start_of(last + 1).saturating_sub(self.start_of(first))
    }

    /// Whether the row holds only whitespace.
    pub(crate) fn is_blank(&self, row: usize) -> bool {
        self.text(row, row).trim().is_empty()
    }

    /// The longest line in bytes.
    pub(crate) fn longest_line(&self) -> usize {
        (0..self.len())
            .map(|row| self.end_of(row) - self.start_of(row))
            .max()
            .unwrap_or(0)
    }

    /// Cuts rows `first..=last` into windows of at most `window` rows and `max_bytes`
    /// bytes (a single longer line still makes one window), preferring to cut after a
    /// blank line in the second half of a window so that paragraphs stay whole.
    pub(crate) fn windows(
        &self,
        first: usize,
        last: usize,
        window: usize,
        max_bytes: usize,
    ) -> Vec<(usize, usize)> {
        let window = window.max(1);
        let mut out = Vec::new();
        let mut start = first;
        while start <= last {
            let mut end = last.min(start + window - 1);
            while end > start && self.bytes(start, end) > max_bytes {
                end -= 1;
            }
            if end < last {
                let earliest = start + (end - start) / 2;
                if let Some(blank) = (earliest..end).rev().find(|&row| self.is_blank(row)) {
                    end = blank;
                }
            }
            out.push((start, end));
            start = end + 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_exact_lines_with_any_terminator() {
        let lines = LineIndex::new("a\r\nbb\n\nccc");
        assert_eq!(lines.len(), 4);
        assert_eq!(lines.text(0, 0), "a");
        assert_eq!(lines.text(0, 1), "a\r\nbb");
        assert_eq!(lines.text(2, 2), "");
        assert_eq!(lines.text(3, 3), "ccc");
        assert!(lines.is_blank(2));
        assert_eq!(LineIndex::new("x\n").len(), 1);
        assert_eq!(LineIndex::new("").len(), 0);
    }

    #[test]
    fn windows_cover_every_row_once() {
        let text: String = (0..100)
            .map(|i| {
                if i % 7 == 0 {
                    "\n".to_owned()
                } else {
                    format!("line {i}\n")
                }
            })
            .collect();
        let lines = LineIndex::new(&text);
        let windows = lines.windows(0, 99, 30, usize::MAX);
        assert_eq!(windows.first().map(|w| w.0), Some(0));
        assert_eq!(windows.last().map(|w| w.1), Some(99));
        for pair in windows.windows(2) {
            assert_eq!(pair[0].1 + 1, pair[1].0);
        }
        assert!(windows.iter().all(|(a, b)| b - a < 30));
    }

    #[test]
    fn windows_respect_the_byte_limit_but_keep_long_lines() {
        let text = format!("{}\nshort\nshort\n", "x".repeat(100));
        let lines = LineIndex::new(&text);
        assert_eq!(lines.windows(0, 2, 10, 20), vec![(0, 0), (1, 2)]);
    }
}

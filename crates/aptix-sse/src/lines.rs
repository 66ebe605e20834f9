//! Cutting a byte stream that arrives in arbitrary chunks into SSE lines.
//!
//! Lines end in CRLF, LF or a lone CR. A CR that is the last buffered byte ends its line
//! at once, so a server that ends lines with CR alone is not held back by a chunk; an LF
//! that arrives first in the next chunk is then swallowed as the second half of that same
//! line end. A UTF-8 byte order mark at the very start of the stream is skipped.
//!
//! Bytes are only ever searched once: `scanned` remembers how far the unfinished line has
//! been searched for a line end, so a long line dribbled in small chunks costs O(n) in
//! total rather than O(n) per chunk. Consumed bytes are dropped from the front of the
//! buffer only when they outweigh what is left, which keeps that copying amortised O(n)
//! too. Lines are handed out as slices of the buffer: no allocation per line.

use memchr::memchr2;

/// The UTF-8 encoding of U+FEFF, skipped once at the very start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Buffers bytes and hands them back one line at a time.
#[derive(Debug)]
pub(crate) struct LineReader {
    /// Bytes received and not yet dropped; `buffer[line_start..]` is still unread.
    buffer: Vec<u8>,
    /// Where the next line starts in `buffer`.
    line_start: usize,
    /// How far, from `line_start`, the next line has already been searched for its end.
    scanned: usize,
    /// Stream offset of `buffer[0]`, so errors can say where in the stream they are.
    buffer_offset: u64,
    /// The last line ended in a CR that was the last buffered byte: an LF that comes
    /// next belongs to that line end, not to a new empty line.
    skip_lf: bool,
    /// Nothing has been read yet, so a byte order mark may still have to be skipped.
    at_stream_start: bool,
    /// The start of the current line was thrown away (its event is too large): the rest
    /// of the line is dropped unseen when its end arrives.
    skipping_line: bool,
}

/// What [`LineReader::next_line`] found.
#[derive(Debug)]
pub(crate) enum NextLine<'a> {
    /// A complete line, without its line end.
    Line {
        /// The bytes of the line, line end excluded.
        content: &'a [u8],
        /// The line's size for the event size limit: its content plus one byte for its
        /// line end, whatever the line end's spelling (`\r\n` counts as one), so the size
        /// does not depend on whether a CRLF was split across two chunks.
        raw_len: usize,
        /// Stream offset of the first byte of the line.
        offset: u64,
    },
    /// No complete line is buffered: more input is needed.
    NeedMore {
        /// Bytes of the unfinished line buffered so far.
        partial_len: usize,
        /// Stream offset where the unfinished line starts.
        offset: u64,
    },
    /// End of input, and every byte has been handed out.
    End,
}

impl Default for LineReader {
    fn default() -> Self {
        Self {
            buffer: Vec::new(),
            line_start: 0,
            scanned: 0,
            buffer_offset: 0,
            skip_lf: false,
            at_stream_start: true,
            skipping_line: false,
        }
    }
}

impl LineReader {
    /// Appends received bytes.
    pub(crate) fn push(&mut self, bytes: &[u8]) {
        let consumed = self.line_start.min(self.buffer.len());
        let unread = self.buffer.len() - consumed;
        // Dropping the consumed front moves the unread rest; do it only when the rest is
        // no longer than what is dropped, so every byte is moved O(1) times overall.
        if consumed > 0 && consumed >= unread {
            self.buffer.drain(..consumed);
            self.buffer_offset = self.buffer_offset.saturating_add(consumed as u64);
            self.line_start = 0;
            self.scanned = self.scanned.saturating_sub(consumed);
        }
        self.buffer.extend_from_slice(bytes);
    }

    /// Bytes received and not handed out yet.
    pub(crate) fn unread_len(&self) -> usize {
        self.buffer.len().saturating_sub(self.line_start)
    }

    /// Throws away the buffered start of the unfinished line and drops the rest of that
    /// line when it arrives, so an oversized line is never held in memory.
    pub(crate) fn skip_rest_of_line(&mut self) {
        // Marked as consumed rather than truncated, so stream offsets stay right.
        self.line_start = self.buffer.len();
        self.scanned = self.buffer.len();
        self.skipping_line = true;
    }

    /// Forgets everything about the current stream, keeping the buffer's memory.
    pub(crate) fn reset(&mut self) {
        let mut buffer = std::mem::take(&mut self.buffer);
        buffer.clear();
        *self = Self {
            buffer,
            ..Self::default()
        };
    }

    /// The next complete line. With `at_eof`, the input is over: an unfinished last line
    /// counts as complete, and [`NextLine::End`] follows once everything is handed out.
    pub(crate) fn next_line(&mut self, at_eof: bool) -> NextLine<'_> {
        loop {
            if self.skip_lf {
                match self.buffer.get(self.line_start) {
                    Some(b'\n') => {
                        self.line_start += 1;
                        self.scanned = self.scanned.max(self.line_start);
                        self.skip_lf = false;
                    }
                    Some(_) => self.skip_lf = false,
                    None if at_eof => self.skip_lf = false,
                    None => return self.need_more(),
                }
            }
            if self.at_stream_start && self.line_start < self.buffer.len() {
                let unread = self.buffer.get(self.line_start..).unwrap_or_default();
                if unread.starts_with(BOM) {
                    self.line_start += BOM.len();
                    self.scanned = self.line_start;
                    self.at_stream_start = false;
                } else if BOM.starts_with(unread) && !at_eof {
                    // Too few bytes yet to tell a split byte order mark from text.
                    return self.need_more();
                } else {
                    self.at_stream_start = false;
                }
            }

            let unscanned = self.buffer.get(self.scanned..).unwrap_or_default();
            let Some(found) = memchr2(b'\n', b'\r', unscanned) else {
                self.scanned = self.buffer.len();
                if !at_eof {
                    return self.need_more();
                }
                return self.final_line();
            };
            let end = self.scanned + found;
            let next = match (self.buffer.get(end), self.buffer.get(end + 1)) {
                (Some(b'\r'), Some(b'\n')) => end + 2,
                (Some(b'\r'), None) => {
                    self.skip_lf = true;
                    end + 1
                }
                _ => end + 1,
            };
            let start = self.line_start;
            self.line_start = next;
            self.scanned = next;
            if self.skipping_line {
                self.skipping_line = false;
                continue;
            }
            return NextLine::Line {
                content: self.buffer.get(start..end).unwrap_or_default(),
                raw_len: end - start + 1,
                offset: self.offset_of(start),
            };
        }
    }

    /// At the end of input: the unfinished line, if any, as a complete one.
    fn final_line(&mut self) -> NextLine<'_> {
        let start = self.line_start;
        self.line_start = self.buffer.len();
        self.scanned = self.buffer.len();
        let skipped = std::mem::replace(&mut self.skipping_line, false);
        if skipped || start >= self.buffer.len() {
            return NextLine::End;
        }
        NextLine::Line {
            content: self.buffer.get(start..).unwrap_or_default(),
            raw_len: self.buffer.len() - start,
            offset: self.offset_of(start),
        }
    }

    fn need_more(&self) -> NextLine<'_> {
        NextLine::NeedMore {
            partial_len: self.unread_len(),
            offset: self.offset_of(self.line_start),
        }
    }

    fn offset_of(&self, index: usize) -> u64 {
        self.buffer_offset.saturating_add(index as u64)
    }
}

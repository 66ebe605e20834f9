//! The code-aware tokenizer shared by indexing and querying.
//!
//! Source code names things in many spellings: `parseHttpResponse`,
//! `parse_http_response`, `ParseHTTPResponse`, `parse-http-response`. An instruction
//! written in prose says "parse http response". For lexical retrieval to connect them,
//! every identifier is emitted twice over:
//!
//! - **whole**: the identifier's parts joined and lower-cased (`parsehttpresponse`), so
//!   every spelling of the same name shares one exact, rare (high-idf) term;
//! - **parts**: the pieces split at `_`, `-`, lower-to-upper case changes, the end of an
//!   acronym (`HTTPResponse` -> `http`, `response`) and letter/digit changes, each
//!   lower-cased.
//!
//! A word of a single part is emitted once. Words longer than [`MAX_WORD_BYTES`] are
//! dropped: they are data (base64, hashes, minified code), not names, and would only
//! bloat the term dictionary.
//!
//! Chinese, Japanese and Korean text has no spaces between words (or, in Korean, words
//! that carry their particles): a run of their characters is emitted as its overlapping
//! pairs of characters (`退款到账户` -> `退款`, `款到`, `到账`, `账户`; a lone character
//! as itself), as Lucene's CJK analyzer does, so that a question's words match the
//! comment that holds them without a dictionary.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the tokenizer is registered under in the tantivy index.
pub(crate) const CODE_TOKENIZER: &str = "aptix_code";

/// Words longer than this many bytes are not indexed.
pub(crate) const MAX_WORD_BYTES: usize = 128;

/// The tokenizer; stateless, so cloning it for every indexing thread is free.
#[derive(Clone, Copy, Default)]
pub(crate) struct CodeTokenizer;

/// Produces the tokens of one text lazily, one word at a time, reusing one token's
/// buffer: indexing allocates nothing per token.
pub(crate) struct CodeTokenStream<'a> {
    text: &'a str,
    /// Where the scan for the next word resumes.
    offset: usize,
    /// Byte range of the current word in `text`.
    word: (usize, usize),
    /// Parts of the current word, relative to its start.
    parts: Vec<(usize, usize)>,
    /// The next part to emit; `parts.len()` when the word is done.
    next_part: usize,
    position: usize,
    current: Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        CodeTokenStream {
            text,
            offset: 0,
            word: (0, 0),
            parts: Vec::new(),
            next_part: 0,
            position: 0,
            current: Token::default(),
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        if self.next_part < self.parts.len() {
            let (from, to) = self.parts.get(self.next_part).copied().unwrap_or_default();
            self.next_part += 1;
            let start = self.word.0;
            self.emit(start + from, start + to, |text, out| {
                push_lowercase(out, text);
            });
            return true;
        }
        while let Some((start, end)) = next_word(self.text, &mut self.offset) {
            let Some(word) = self.text.get(start..end) else {
                continue;
            };
            if word.chars().next().is_some_and(is_cjk) {
                // Overlapping pairs of characters, emitted as parts with no whole.
                self.parts.clear();
                cjk_pairs(word, &mut self.parts);
                self.word = (start, end);
                self.next_part = 0;
                return self.advance();
            }
            if word.len() > MAX_WORD_BYTES {
                continue;
            }
            self.parts.clear();
            split_word(word, &mut self.parts);
            if self.parts.is_empty() {
                continue;
            }
            self.word = (start, end);
            // A single-part word is emitted once, as itself; otherwise the parts follow
            // the joined whole.
            self.next_part = if self.parts.len() > 1 { 0 } else { 1 };
            let parts = std::mem::take(&mut self.parts);
            self.emit(start, end, |_, out| {
                for &(from, to) in &parts {
                    if let Some(part) = word.get(from..to) {
                        push_lowercase(out, part);
                    }
                }
            });
            self.parts = parts;
            return true;
        }
        false
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

impl CodeTokenStream<'_> {
    fn emit(&mut self, from: usize, to: usize, fill: impl FnOnce(&str, &mut String)) {
        let token = &mut self.current;
        token.offset_from = from;
        token.offset_to = to;
        token.position = self.position;
        token.position_length = 1;
        token.text.clear();
        fill(self.text.get(from..to).unwrap_or_default(), &mut token.text);
        self.position += 1;
    }
}

/// The terms of `text`, in order, as the index sees them (whole words and their parts).
pub(crate) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut tokenizer = CodeTokenizer;
    let mut stream = tokenizer.token_stream(text);
    while stream.advance() {
        out.push(stream.current.text.clone());
    }
    out
}

/// The words of `text` as the index sees them: for each, its whole term first, then its
/// parts when it has more than one.
pub(crate) fn word_tokens(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut tokenizer = CodeTokenizer;
    let mut stream = tokenizer.token_stream(text);
    let mut word = (usize::MAX, usize::MAX);
    while stream.advance() {
        let token = &stream.current;
        // A part lies inside the span of the whole emitted just before it.
        let inside = token.offset_from >= word.0 && token.offset_to <= word.1;
        match out.last_mut() {
            Some(last) if inside && (token.offset_from, token.offset_to) != word => {
                last.push(token.text.clone());
            }
            _ => {
                word = (token.offset_from, token.offset_to);
                out.push(vec![token.text.clone()]);
            }
        }
    }
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The char at byte `index` of `text`, if `index` is a char boundary inside it.
fn char_at(text: &str, index: usize) -> Option<char> {
    text.get(index..)?.chars().next()
}

/// Whether `c` is written without spaces between words: Han ideographs (with their
/// extensions and compatibility forms), Hiragana, Katakana (with the half-width forms)
/// and Hangul syllables.
fn is_cjk(c: char) -> bool {
    // Letters only: the ranges hold a few punctuation marks (`・`, `゠`).
    c.is_alphanumeric()
        && matches!(
            c,
            '\u{3040}'..='\u{30ff}'
                | '\u{31f0}'..='\u{31ff}'
                | '\u{3400}'..='\u{4dbf}'
                | '\u{4e00}'..='\u{9fff}'
                | '\u{ac00}'..='\u{d7af}'
                | '\u{f900}'..='\u{faff}'
                | '\u{ff66}'..='\u{ff9f}'
                | '\u{20000}'..='\u{2fa1f}'
        )
}

/// The byte ranges of the overlapping pairs of characters of a run of CJK characters
/// (the one character of a run of one).
fn cjk_pairs(run: &str, parts: &mut Vec<(usize, usize)>) {
    let starts: Vec<usize> = run
        .char_indices()
        .map(|(index, _)| index)
        .chain(std::iter::once(run.len()))
        .collect();
    if starts.len() <= 2 {
        parts.push((0, run.len()));
        return;
    }
    parts.extend(starts.windows(3).filter_map(|window| match window {
        [from, _, to] => Some((*from, *to)),
        _ => None,
    }));
}

/// Finds the next word at or after `*offset` and moves `*offset` past it. A word is a
/// run of word characters, with single `-` joining word characters (kebab case); a run
/// of CJK characters is a word of its own, whatever is next to it.
fn next_word(text: &str, offset: &mut usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    // Skip to the start of a word; ASCII bytes are classified without decoding.
    let start = loop {
        let &byte = bytes.get(*offset)?;
        if byte.is_ascii() {
            if byte.is_ascii_alphanumeric() || byte == b'_' {
                break *offset;
            }
            *offset += 1;
        } else {
            let c = char_at(text, *offset)?;
            if is_word_char(c) {
                break *offset;
            }
            *offset += c.len_utf8();
        }
    };
    if char_at(text, start).is_some_and(is_cjk) {
        let run: usize = text
            .get(start..)?
            .chars()
            .take_while(|&c| is_cjk(c))
            .map(char::len_utf8)
            .sum();
        *offset = start + run;
        return Some((start, start + run));
    }
    let mut end = start;
    loop {
        match bytes.get(end) {
            Some(&byte) if byte.is_ascii_alphanumeric() || byte == b'_' => end += 1,
            Some(b'-') => match char_at(text, end + 1) {
                Some(next) if end > start && next.is_alphanumeric() => end += 1,
                _ => break,
            },
            Some(&byte) if !byte.is_ascii() => match char_at(text, end) {
                Some(c) if is_word_char(c) && !is_cjk(c) => end += c.len_utf8(),
                _ => break,
            },
            _ => break,
        }
    }
    *offset = end;
    Some((start, end))
}

fn push_lowercase(out: &mut String, text: &str) {
    if text.is_ascii() {
        // Copying then lower-casing in place is a memcpy and a byte loop, where pushing
        // char by char re-checks capacity and encodes every char.
        let start = out.len();
        out.push_str(text);
        if let Some(pushed) = out.get_mut(start..) {
            pushed.make_ascii_lowercase();
        }
    } else {
        out.extend(text.chars().flat_map(char::to_lowercase));
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    Lower,
    Digit,
    Separator,
    Other,
}

fn class(c: char) -> Class {
    if c == '_' || c == '-' {
        Class::Separator
    } else if c.is_ascii_lowercase() {
        Class::Lower
    } else if c.is_ascii_uppercase() {
        Class::Upper
    } else if c.is_ascii_digit() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else if c.is_lowercase() {
        Class::Lower
    } else if c.is_numeric() {
        Class::Digit
    } else {
        Class::Other
    }
}

/// Splits one word into byte ranges of its parts, in one pass with one char of
/// lookahead and no allocation.
fn split_word(word: &str, parts: &mut Vec<(usize, usize)>) {
    let mut part_start: Option<usize> = None;
    let mut previous: Option<Class> = None;
    let mut chars = word.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        let current = class(c);
        if current == Class::Separator {
            if let Some(from) = part_start.take() {
                parts.push((from, index));
            }
            previous = None;
            continue;
        }
        let next = chars.peek().map(|&(_, n)| class(n));
        if let Some(from) = part_start {
            let boundary = match (previous, current) {
                (Some(Class::Lower), Class::Upper) => true,
                // The last capital of an acronym starts the next part: `HTTPResponse`.
                (Some(Class::Upper), Class::Upper) => next == Some(Class::Lower),
                (Some(Class::Digit), Class::Upper | Class::Lower) => true,
                (Some(Class::Upper | Class::Lower), Class::Digit) => true,
                _ => false,
            };
            if boundary {
                parts.push((from, index));
                part_start = Some(index);
            }
        } else {
            part_start = Some(index);
        }
        previous = Some(current);
    }
    if let Some(from) = part_start {
        parts.push((from, word.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &[&str]) {
        assert_eq!(tokens(text), expected, "tokens of {text:?}");
    }

    #[test]
    fn identifiers_are_indexed_whole_and_split() {
        check(
            "parseHTTPResponse2",
            &["parsehttpresponse2", "parse", "http", "response", "2"],
        );
        check(
            "parse_http_response",
            &["parsehttpresponse", "parse", "http", "response"],
        );
        check(
            "ParseHttpResponse",
            &["parsehttpresponse", "parse", "http", "response"],
        );
        check(
            "parse-http-response",
            &["parsehttpresponse", "parse", "http", "response"],
        );
        check("parse http response", &["parse", "http", "response"]);
        check("__init__", &["init"]);
        check("x - y", &["x", "y"]);
        check("utf8Decoder", &["utf8decoder", "utf", "8", "decoder"]);
        check("IOError", &["ioerror", "io", "error"]);
    }

    #[test]
    fn non_ascii_words_are_lower_cased() {
        check("Größe straße", &["größe", "straße"]);
        check("ÄrgerNis", &["ärgernis", "ärger", "nis"]);
    }

    #[test]
    fn cjk_runs_are_overlapping_pairs_of_characters() {
        check(
            "# 当用户取消订单时退款",
            &[
                "当用", "用户", "户取", "取消", "消订", "订单", "单时", "时退", "退款",
            ],
        );
        // A question's words are pairs found in the comment's.
        check("退款？", &["退款"]);
        check("用户ID", &["用户", "id"]);
        check("refund退款", &["refund", "退款"]);
        check("支", &["支"]);
        check("ユーザー登録", &["ユー", "ーザ", "ザー", "ー登", "登録"]);
        // A long comment is not data: its pairs are kept.
        let long = "退款".repeat(100);
        assert_eq!(tokens(&long).len(), 199);
    }

    #[test]
    fn data_blobs_are_dropped() {
        let blob = "a".repeat(MAX_WORD_BYTES + 1);
        check(&format!("keep {blob} this"), &["keep", "this"]);
    }

    #[test]
    fn the_stream_yields_every_token_with_offsets() {
        let mut tokenizer = CodeTokenizer;
        let mut stream = tokenizer.token_stream("fooBar baz");
        let mut seen = Vec::new();
        while let Some(token) = stream.next() {
            seen.push((token.text.clone(), token.offset_from, token.offset_to));
        }
        assert_eq!(
            seen,
            vec![
                ("foobar".to_owned(), 0, 6),
                ("foo".to_owned(), 0, 3),
                ("bar".to_owned(), 3, 6),
                ("baz".to_owned(), 7, 10),
            ]
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics_and_offsets_are_char_boundaries(text in "\\PC{0,64}") {
            let mut tokenizer = CodeTokenizer;
            let mut stream = tokenizer.token_stream(&text);
            while let Some(token) = stream.next() {
                proptest::prop_assert!(text.get(token.offset_from..token.offset_to).is_some());
                proptest::prop_assert!(!token.text.is_empty());
            }
        }
    }
}

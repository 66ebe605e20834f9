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

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the tokenizer is registered under in the tantivy index.
pub(crate) const CODE_TOKENIZER: &str = "aptix_code";

/// Words longer than this many bytes are not indexed.
pub(crate) const MAX_WORD_BYTES: usize = 128;

/// The tokenizer; stateless, so cloning it for every indexing thread is free.
#[derive(Clone, Copy, Default)]
pub(crate) struct CodeTokenizer;

/// Iterates the tokens [`CodeTokenizer`] produced for one text.
pub(crate) struct CodeTokenStream {
    /// The tokens not yet yielded, last first, so that advancing is a `pop`.
    pending: Vec<Token>,
    current: Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream {
        let mut pending = Vec::new();
        let mut position = 0;
        for_each_token(text, |from, to, token_text| {
            pending.push(Token {
                offset_from: from,
                offset_to: to,
                position,
                text: token_text.to_owned(),
                position_length: 1,
            });
            position += 1;
        });
        pending.reverse();
        CodeTokenStream {
            pending,
            current: Token::default(),
        }
    }
}

impl TokenStream for CodeTokenStream {
    fn advance(&mut self) -> bool {
        match self.pending.pop() {
            Some(token) => {
                self.current = token;
                true
            }
            None => false,
        }
    }

    fn token(&self) -> &Token {
        &self.current
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.current
    }
}

/// The terms of `text`, in order, as the index sees them (whole words and their parts).
pub(crate) fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |_, _, token| out.push(token.to_owned()));
    out
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Calls `emit(byte_from, byte_to, term)` for every term of `text`.
fn for_each_token(text: &str, mut emit: impl FnMut(usize, usize, &str)) {
    let mut parts: Vec<(usize, usize)> = Vec::new();
    let mut joined = String::new();
    let mut part_text = String::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if !is_word_char(c) {
            chars.next();
            continue;
        }
        // A word: word characters, with single `-` joining word characters (kebab case).
        let mut end = start;
        while let Some(&(index, c)) = chars.peek() {
            if is_word_char(c) {
                end = index + c.len_utf8();
                chars.next();
            } else if c == '-' && end == index {
                let mut lookahead = chars.clone();
                lookahead.next();
                match lookahead.peek() {
                    Some(&(_, next)) if next.is_alphanumeric() => {
                        chars.next();
                    }
                    _ => break,
                }
            } else {
                break;
            }
        }
        let Some(word) = text.get(start..end) else {
            continue;
        };
        if word.len() > MAX_WORD_BYTES {
            continue;
        }
        parts.clear();
        split_word(word, &mut parts);
        if parts.is_empty() {
            continue;
        }
        joined.clear();
        for &(from, to) in &parts {
            if let Some(part) = word.get(from..to) {
                push_lowercase(&mut joined, part);
            }
        }
        emit(start, end, &joined);
        if parts.len() > 1 {
            for &(from, to) in &parts {
                if let Some(part) = word.get(from..to) {
                    part_text.clear();
                    push_lowercase(&mut part_text, part);
                    emit(start + from, start + to, &part_text);
                }
            }
        }
    }
}

fn push_lowercase(out: &mut String, text: &str) {
    if text.is_ascii() {
        out.extend(text.chars().map(|c| c.to_ascii_lowercase()));
    } else {
        out.extend(text.chars().flat_map(char::to_lowercase));
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Upper,
    Lower,
    Digit,
    Other,
}

fn class(c: char) -> Class {
    if c.is_uppercase() {
        Class::Upper
    } else if c.is_lowercase() {
        Class::Lower
    } else if c.is_numeric() {
        Class::Digit
    } else {
        Class::Other
    }
}

/// Splits one word into byte ranges of its parts.
fn split_word(word: &str, parts: &mut Vec<(usize, usize)>) {
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    let mut part_start: Option<usize> = None;
    for (i, &(index, c)) in chars.iter().enumerate() {
        if c == '_' || c == '-' {
            if let Some(from) = part_start.take() {
                parts.push((from, index));
            }
            continue;
        }
        let Some(from) = part_start else {
            part_start = Some(index);
            continue;
        };
        let previous = chars.get(i.wrapping_sub(1)).map(|&(_, p)| class(p));
        let next = chars.get(i + 1).map(|&(_, n)| class(n));
        let current = class(c);
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

//! A one-pass reader for the common delta event, ahead of `serde_json`.
//!
//! Deltas are nearly every byte of a stream, and even a borrowing `serde_json` decode of
//! one costs more than framing it. This reader accepts a strict subset of JSON: one
//! object whose members are strings, non-negative integers, `null`, booleans, or empty
//! arrays and objects; keys without escapes; no known key twice. OpenAI's own layout is
//! read first as a template, without looking keys up. On anything else it
//! returns `None` and the caller decodes the payload with `serde_json` as before. So it
//! can only be faster, never different: what it accepts, it reads exactly as the serde
//! path reads it (a unit test checks the two against each other on generated input).

use std::borrow::Cow;

use super::decode::FastDelta;

/// Reads a delta event payload, or `None` to leave it to `serde_json`: first as laid out
/// by OpenAI, then member by member in any order.
#[cfg(test)]
pub(crate) fn scan_delta(data: &str) -> Option<FastDelta<'_>> {
    scan_openai_layout(data).or_else(|| scan_members(data))
}

/// [`scan_delta`] for a payload already known to start with `{"type":"<delta type>"`,
/// `type_end` bytes long: the template goes on from there without reading the type again.
/// The caller guarantees that the type is a plain JSON string (no escapes, no control
/// characters), as the four delta type names are.
///
/// `memo` carries the last item id read from one call to the next: the deltas of one
/// item all repeat its id, so a repeat is matched by comparing bytes instead of being
/// read character by character again.
pub(crate) fn scan_delta_after_type<'a>(
    data: &'a str,
    type_end: usize,
    memo: &mut ScanMemo,
) -> Option<FastDelta<'a>> {
    let mut template = || {
        let event_type = data.get(TYPE_PREFIX.len()..type_end.checked_sub(1)?)?;
        let mut scanner = Scanner {
            text: data,
            at: type_end,
        };
        layout_after_type(&mut scanner, Cow::Borrowed(event_type), Some(memo))
    };
    template().or_else(|| scan_members(data))
}

/// What the reader remembers between events: the last item id it read, when it had no
/// escapes.
#[derive(Debug, Default)]
pub(crate) struct ScanMemo {
    item_id: String,
}

impl ScanMemo {
    /// The item id at the scanner, read by comparing it with the remembered one
    /// (already checked to be a plain JSON string, so an exact byte match is one too)
    /// or else read and remembered.
    fn item_id<'a>(&mut self, scanner: &mut Scanner<'a>) -> Option<Cow<'a, str>> {
        let rest = scanner.rest();
        let length = self.item_id.len();
        if !self.item_id.is_empty()
            && rest.first() == Some(&b'"')
            && rest.get(1..=length) == Some(self.item_id.as_bytes())
            && rest.get(length + 1) == Some(&b'"')
        {
            let id = scanner.text.get(scanner.at + 1..scanner.at + 1 + length)?;
            scanner.at += length + 2;
            return Some(Cow::Borrowed(id));
        }
        let id = scanner.string()?;
        if let Cow::Borrowed(plain) = id {
            self.item_id.clear();
            self.item_id.push_str(plain);
        }
        Some(id)
    }
}

/// How OpenAI starts every event.
pub(crate) const TYPE_PREFIX: &[u8; 9] = b"{\"type\":\"";

/// OpenAI's own layout of a delta, read as a template: its members in its order, no
/// whitespace, so that no key is looked up at all; only the values are read. Anything
/// else (another order, spacing, a `null`, an unknown member) is left to
/// [`scan_members`].
///
/// `{"type":"…","sequence_number":N,"item_id":"…","output_index":N,` then
/// `"content_index":N,` or `"summary_index":N,` or neither, then `"delta":"…"`, then
/// optionally `,"logprobs":[]` and `,"obfuscation":"…"`, then `}`.
#[cfg(test)]
fn scan_openai_layout(data: &str) -> Option<FastDelta<'_>> {
    let mut scanner = Scanner { text: data, at: 0 };
    if !scanner.literal(b"{\"type\":") {
        return None;
    }
    let event_type = scanner.string()?;
    layout_after_type(&mut scanner, event_type, None)
}

/// The template after the `type` member.
fn layout_after_type<'a>(
    scanner: &mut Scanner<'a>,
    event_type: Cow<'a, str>,
    memo: Option<&mut ScanMemo>,
) -> Option<FastDelta<'a>> {
    if !scanner.literal(b",\"sequence_number\":") {
        return None;
    }
    let sequence_number = scanner.count()?;
    if !scanner.literal(b",\"item_id\":") {
        return None;
    }
    let item_id = match memo {
        Some(memo) => memo.item_id(scanner)?,
        None => scanner.string()?,
    };
    if !scanner.literal(b",\"output_index\":") {
        return None;
    }
    let output_index = scanner.count()?;
    let (content_index, summary_index) = if scanner.literal(b",\"content_index\":") {
        (Some(scanner.count()?), None)
    } else if scanner.literal(b",\"summary_index\":") {
        (None, Some(scanner.count()?))
    } else {
        (None, None)
    };
    if !scanner.literal(b",\"delta\":") {
        return None;
    }
    let delta = scanner.string()?;
    scanner.literal(b",\"logprobs\":[]");
    if scanner.literal(b",\"obfuscation\":") {
        scanner.string()?;
    }
    if !scanner.literal(b"}") || scanner.at != scanner.text.len() {
        return None;
    }
    Some(FastDelta {
        event_type,
        sequence_number: Some(sequence_number),
        item_id: Some(item_id),
        output_index,
        content_index,
        summary_index,
        delta: Some(delta),
        kind: None,
    })
}

/// Reads a delta member by member, in any order and with any spacing.
fn scan_members(data: &str) -> Option<FastDelta<'_>> {
    let mut scanner = Scanner { text: data, at: 0 };
    let mut fields = Fields::default();
    scanner.whitespace();
    scanner.expect(b'{')?;
    scanner.whitespace();
    if scanner.peek() == Some(b'}') {
        scanner.at += 1;
    } else {
        loop {
            fields.member(&mut scanner)?;
            scanner.whitespace();
            match scanner.next()? {
                b',' => scanner.whitespace(),
                b'}' => break,
                _ => return None,
            }
        }
    }
    scanner.whitespace();
    if scanner.at != data.len() {
        return None;
    }
    Some(FastDelta {
        event_type: fields.event_type?,
        sequence_number: fields.sequence_number.flatten(),
        item_id: fields.item_id.flatten(),
        output_index: fields.output_index?,
        content_index: fields.content_index.flatten(),
        summary_index: fields.summary_index.flatten(),
        delta: fields.delta.flatten(),
        kind: None,
    })
}

/// The members read so far; the outer `Option` says whether the key was seen, so that a
/// second one fails as serde's "duplicate field" does.
#[derive(Default)]
struct Fields<'a> {
    event_type: Option<Cow<'a, str>>,
    sequence_number: Option<Option<u64>>,
    item_id: Option<Option<Cow<'a, str>>>,
    output_index: Option<u64>,
    content_index: Option<Option<u64>>,
    summary_index: Option<Option<u64>>,
    delta: Option<Option<Cow<'a, str>>>,
}

impl<'a> Fields<'a> {
    /// Reads one member, key, colon and value.
    ///
    /// Known keys are matched by comparing fixed-size arrays in place (a few word
    /// compares), in the order OpenAI writes them, as one chain of direct branches: the
    /// same keys come in the same order in every delta, so the branches predict well,
    /// where a scanned key and a `match` on it cost two unpredictable indirect jumps.
    /// `logprobs` and `obfuscation`, in every OpenAI delta, are skipped the same way.
    fn member(&mut self, scanner: &mut Scanner<'a>) -> Option<()> {
        scanner.expect(b'"')?;
        let rest = scanner.rest();
        if rest.first_chunk() == Some(b"type\"") {
            scanner.value_after(5)?;
            set(&mut self.event_type, scanner.string()?)
        } else if rest.first_chunk() == Some(b"sequence_number\"") {
            scanner.value_after(16)?;
            set(&mut self.sequence_number, scanner.optional_count()?)
        } else if rest.first_chunk() == Some(b"item_id\"") {
            scanner.value_after(8)?;
            set(&mut self.item_id, scanner.optional_string()?)
        } else if rest.first_chunk() == Some(b"output_index\"") {
            scanner.value_after(13)?;
            set(&mut self.output_index, scanner.count()?)
        } else if rest.first_chunk() == Some(b"content_index\"") {
            scanner.value_after(14)?;
            set(&mut self.content_index, scanner.optional_count()?)
        } else if rest.first_chunk() == Some(b"delta\"") {
            scanner.value_after(6)?;
            set(&mut self.delta, scanner.optional_string()?)
        } else if rest.first_chunk() == Some(b"summary_index\"") {
            scanner.value_after(14)?;
            set(&mut self.summary_index, scanner.optional_count()?)
        } else {
            if rest.first_chunk() == Some(b"logprobs\"") {
                scanner.at += 9;
            } else if rest.first_chunk() == Some(b"obfuscation\"") {
                scanner.at += 12;
            } else {
                // Any other key, which must have no escapes.
                scanner.plain_run()?;
                scanner.expect(b'"')?;
            }
            scanner.whitespace();
            scanner.expect(b':')?;
            scanner.whitespace();
            scanner.skip_value()
        }
    }
}

/// Sets a member once; a second time is `None`.
#[inline]
fn set<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

struct Scanner<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Scanner<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    #[inline]
    fn next(&mut self) -> Option<u8> {
        let byte = self.peek()?;
        self.at += 1;
        Some(byte)
    }

    #[inline]
    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    #[inline]
    fn whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The bytes not read yet.
    #[inline]
    fn rest(&self) -> &'a [u8] {
        self.text.as_bytes().get(self.at..).unwrap_or_default()
    }

    /// Skips a key of `length` bytes (closing quote included) and the colon after it.
    #[inline]
    fn value_after(&mut self, length: usize) -> Option<()> {
        self.at += length;
        self.whitespace();
        self.expect(b':')?;
        self.whitespace();
        Some(())
    }

    #[inline]
    fn optional_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.literal(b"null") {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// A string, borrowed when it has no escapes.
    #[inline]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.expect(b'"')?;
        let plain = self.plain_run()?;
        if self.next()? == b'"' {
            return Some(Cow::Borrowed(plain));
        }
        let mut owned = plain.to_owned();
        loop {
            self.escape(&mut owned)?;
            owned.push_str(self.plain_run()?);
            if self.next()? == b'"' {
                return Some(Cow::Owned(owned));
            }
        }
    }

    /// The characters up to the next quote or backslash, which is left unread. A control
    /// character must be escaped in JSON and serde rejects it, so it is `None` here.
    ///
    /// Eight bytes at a time ([`special_byte`]) rather than `memchr`: the strings of a
    /// delta are a few bytes long, too short for a vectorised search to pay for its setup,
    /// and three conditions are checked at once.
    #[inline]
    fn plain_run(&mut self) -> Option<&'a str> {
        let rest = self.text.as_bytes().get(self.at..)?;
        let length = special_byte(rest)?;
        if rest.get(length).is_some_and(|&byte| byte < 0x20) {
            return None;
        }
        let run = self.text.get(self.at..self.at + length)?;
        self.at += length;
        Some(run)
    }

    /// The escape after a backslash. Surrogates (`\ud83d`) are left to serde, which
    /// pairs them.
    fn escape(&mut self, out: &mut String) -> Option<()> {
        let c = match self.next()? {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hex = self.text.get(self.at..self.at + 4)?;
                if !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
                    return None;
                }
                self.at += 4;
                char::from_u32(u32::from_str_radix(hex, 16).ok()?)?
            }
            _ => return None,
        };
        out.push(c);
        Some(())
    }

    #[inline]
    fn optional_count(&mut self) -> Option<Option<u64>> {
        if self.literal(b"null") {
            return Some(None);
        }
        self.count().map(Some)
    }

    /// A non-negative integer that fits `u64`; a fraction or exponent is `None`, because
    /// serde refuses a float for an integer field.
    #[inline]
    fn count(&mut self) -> Option<u64> {
        let start = self.at;
        let mut value: u64 = 0;
        while let Some(digit) = self.peek().filter(u8::is_ascii_digit) {
            value = value
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
            self.at += 1;
        }
        let digits = self.at - start;
        let leading_zero = self.text.as_bytes().get(start) == Some(&b'0');
        if digits == 0 || (digits > 1 && leading_zero) {
            return None;
        }
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(value)
    }

    /// Reads `word` if it comes next. A fixed-size array, so the compare is a few
    /// inline word compares rather than a call to `memcmp`.
    #[inline]
    fn literal<const N: usize>(&mut self, word: &[u8; N]) -> bool {
        let found = self.rest().first_chunk::<N>() == Some(word);
        if found {
            self.at += N;
        }
        found
    }

    /// Skips a value of a member nobody reads: the simple kinds only.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'-' => {
                self.at += 1;
                self.count().map(drop)
            }
            b'0'..=b'9' => self.count().map(drop),
            b'[' | b'{' => {
                let close = if self.next()? == b'[' { b']' } else { b'}' };
                self.whitespace();
                self.expect(close)
            }
            _ if self.literal(b"null") || self.literal(b"true") || self.literal(b"false") => {
                Some(())
            }
            _ => None,
        }
    }
}

/// The position of the first `"`, `\\` or control character.
///
/// Word at a time (SWAR): for each byte of a little-endian `u64`, `(x - 0x01) & !x & 0x80`
/// flags a zero byte (`x - 0x20` flags a byte below `0x20`). A borrow can flag a byte
/// *after* a real match, never before one, so the lowest flagged byte is exact; bytes of
/// 0x80 and above (UTF-8 continuations) are never flagged.
#[inline]
fn special_byte(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const QUOTE: u64 = ONES * b'"' as u64;
    const BACKSLASH: u64 = ONES * b'\\' as u64;
    const SPACE: u64 = ONES * 0x20;
    let mut words = bytes.chunks_exact(8);
    let mut offset = 0;
    for word in &mut words {
        let word = u64::from_le_bytes(word.try_into().ok()?);
        let quote = word ^ QUOTE;
        let backslash = word ^ BACKSLASH;
        let flagged = (quote.wrapping_sub(ONES) & !quote
            | backslash.wrapping_sub(ONES) & !backslash
            | word.wrapping_sub(SPACE) & !word)
            & HIGH;
        if flagged != 0 {
            return Some(offset + flagged.trailing_zeros() as usize / 8);
        }
        offset += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&byte| byte == b'"' || byte == b'\\' || byte < 0x20)
        .map(|position| offset + position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What serde reads, as the reader must read it.
    fn serde(data: &str) -> Option<FastDelta<'_>> {
        serde_json::from_str(data).ok()
    }

    /// Both readers, on their own and together, read what serde reads or nothing.
    fn check(data: &str) {
        // Where a plain `type` member ends (no escapes, no control characters, as the
        // caller guarantees), for the reader that starts after it.
        let type_end = data
            .strip_prefix("{\"type\":\"")
            .and_then(|rest| rest.find(['"', '\\']).map(|end| (rest, end)))
            .filter(|(rest, end)| {
                rest.as_bytes().get(*end) == Some(&b'"')
                    && rest.bytes().take(*end).all(|byte| byte >= 0x20)
            })
            .map(|(_, end)| TYPE_PREFIX.len() + end + 1);
        let mut memo = ScanMemo::default();
        let after_type =
            type_end.and_then(|type_end| scan_delta_after_type(data, type_end, &mut memo));
        // Again, with the item id remembered from the first read.
        let remembered =
            type_end.and_then(|type_end| scan_delta_after_type(data, type_end, &mut memo));
        // And with a different id remembered, which must not match.
        let mut other = ScanMemo {
            item_id: "msg_".to_owned(),
        };
        let other_memo =
            type_end.and_then(|type_end| scan_delta_after_type(data, type_end, &mut other));
        for scanned in [
            scan_delta(data),
            scan_members(data),
            scan_openai_layout(data),
            after_type,
            remembered,
            other_memo,
        ]
        .into_iter()
        .flatten()
        {
            assert_eq!(Some(&scanned), serde(data).as_ref(), "{data}");
        }
    }

    proptest! {
        #[test]
        fn special_byte_finds_the_first_one(bytes in prop::collection::vec(
            prop_oneof![Just(b'"'), Just(b'\\'), 0u8..0x20, 0x20u8..=0xff, Just(0x80u8), Just(0xffu8)],
            0..40,
        )) {
            let expected = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
            prop_assert_eq!(special_byte(&bytes), expected);
        }
    }

    #[test]
    fn reads_the_recorded_delta() {
        let data = r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello","logprobs":[],"obfuscation":"fnaZDlQxOXx"}"#;
        assert!(
            scan_openai_layout(data).is_some(),
            "the template reads OpenAI's layout"
        );
        assert_eq!(scan_openai_layout(data), scan_members(data));
        assert_eq!(
            scan_delta_after_type(data, 37, &mut ScanMemo::default()),
            scan_members(data)
        );
        let scanned = scan_delta(data).unwrap();
        assert_eq!(scanned.delta.as_deref(), Some("Hello"));
        assert!(matches!(scanned.delta, Some(Cow::Borrowed(_))));
        check(data);
    }

    #[test]
    fn leaves_what_it_does_not_know_to_serde() {
        for data in [
            r#"{"type":"x","output_index":0,"logprobs":[{"token":"a"}]}"#,
            r#"{"type":"x","output_index":1.0}"#,
            r#"{"type":"x","output_index":0,"output_index":1}"#,
            r#"{"t\u0079pe":"x","output_index":0}"#,
            r#"{"type":"x","output_index":0,"delta":"\ud83d\ude00"}"#,
            "{\"type\":\"x\",\"output_index\":0,\"delta\":\"a\u{1}b\"}",
            r#"{"type":"x","output_index":0} x"#,
            r#"{"type":"x","output_index":-1}"#,
            r#"{"type":"x","output_index":01}"#,
        ] {
            assert!(scan_delta(data).is_none(), "{data}");
        }
    }

    /// Generated payloads near the accepted subset: members in any order, duplicated or
    /// missing, odd spacing, escapes, numbers of every form.
    fn payload() -> impl Strategy<Value = String> {
        let value = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            Just("[]".to_owned()),
            Just("[ ]".to_owned()),
            Just("{}".to_owned()),
            Just("[1]".to_owned()),
            any::<u64>().prop_map(|n| n.to_string()),
            Just("18446744073709551616".to_owned()),
            Just("-0".to_owned()),
            Just("1e3".to_owned()),
            Just("2.0".to_owned()),
            Just("007".to_owned()),
            any::<String>().prop_map(|text| serde_json::to_string(&text).unwrap()),
            "[a-z\\\\\"/ ]{0,6}".prop_map(|text| format!("\"{text}\"")),
            Just(r#""\u00e9\n\t\"\\\/\b\f\r""#.to_owned()),
            Just(r#""\ud83d\ude00""#.to_owned()),
            Just(r#""\x""#.to_owned()),
        ];
        let key = prop_oneof![
            Just("type"),
            Just("sequence_number"),
            Just("item_id"),
            Just("output_index"),
            Just("content_index"),
            Just("summary_index"),
            Just("delta"),
            Just("obfuscation"),
            Just("logprobs"),
        ];
        let space = prop_oneof![Just(""), Just(" "), Just("\n\t"), Just("\r ")];
        // `type` and `output_index` are usually there, so that many payloads are read.
        let required = (
            prop::option::weighted(
                0.9,
                Just(r#""type":"response.output_text.delta""#.to_owned()),
            ),
            prop::option::weighted(
                0.9,
                any::<u64>().prop_map(|n| format!(r#""output_index":{n}"#)),
            ),
        )
            .prop_map(|(event_type, index)| {
                event_type.into_iter().chain(index).collect::<Vec<_>>()
            });
        (
            required,
            prop::collection::vec((key, space.clone(), value), 0..4),
            any::<prop::sample::Index>(),
            space.clone(),
            space,
        )
            .prop_map(|(required, members, at, inner, outer)| {
                let mut members: Vec<String> = members
                    .into_iter()
                    .map(|(key, space, value)| format!("\"{key}\"{space}:{space}{value}"))
                    .collect();
                for member in required {
                    members.insert(at.index(members.len() + 1), member);
                }
                format!("{outer}{{{inner}{}{inner}}}{outer}", members.join(","))
            })
    }

    /// How many of 1000 generated payloads `read` accepts, so that the agreement tests
    /// are known to compare something.
    fn read_count<S: Strategy<Value = String>>(strategy: S, read: fn(&str) -> bool) -> usize {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        (0..1000)
            .filter(|_| read(&strategy.new_tree(&mut runner).unwrap().current()))
            .count()
    }

    #[test]
    fn the_generated_payloads_are_often_read() {
        let members = read_count(payload(), |data| scan_members(data).is_some());
        assert!(members > 100, "only {members} of 1000 payloads were read");
        let layout = read_count(openai_layout(), |data| scan_openai_layout(data).is_some());
        assert!(layout > 100, "only {layout} of 1000 layouts were read");
    }

    /// Payloads in OpenAI's layout, with values of every kind, valid or not, so that the
    /// template reader is checked as thoroughly as the general one.
    fn openai_layout() -> impl Strategy<Value = String> {
        let text = prop_oneof![
            16 => any::<String>().prop_map(|text| serde_json::to_string(&text).unwrap()),
            4 => "[a-z\\\\\"/ ]{0,6}".prop_map(|text| format!("\"{text}\"")),
            2 => Just(r#""\u00e9\n\"""#.to_owned()),
            1 => Just(r#""\ud83d\ude00""#.to_owned()),
            1 => Just("\"a\u{1}\"".to_owned()),
            1 => Just("null".to_owned()),
            1 => Just("7".to_owned()),
        ];
        let number = prop_oneof![
            20 => any::<u64>().prop_map(|n| n.to_string()),
            1 => Just("01".to_owned()),
            1 => Just("1.5".to_owned()),
            1 => Just("-1".to_owned()),
            1 => Just("null".to_owned()),
            1 => Just("18446744073709551616".to_owned()),
        ];
        let index = prop_oneof![
            Just(String::new()),
            number
                .clone()
                .prop_map(|n| format!(r#","content_index":{n}"#)),
            number
                .clone()
                .prop_map(|n| format!(r#","summary_index":{n}"#)),
        ];
        let tail = prop_oneof![
            Just(String::new()),
            Just(r#","logprobs":[]"#.to_owned()),
            text.clone()
                .prop_map(|t| format!(r#","logprobs":[],"obfuscation":{t}"#)),
            text.clone().prop_map(|t| format!(r#","obfuscation":{t}"#)),
            Just(r#","logprobs":[{"a":1}]"#.to_owned()),
        ];
        (text.clone(), number.clone(), text.clone(), number, index, text, tail).prop_map(
            |(kind, sequence, item, output, index, delta, tail)| {
                format!(
                    r#"{{"type":{kind},"sequence_number":{sequence},"item_id":{item},"output_index":{output}{index},"delta":{delta}{tail}}}"#
                )
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 2048,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn the_layout_reader_agrees_with_serde(data in openai_layout()) {
            if let Some(scanned) = scan_openai_layout(&data) {
                prop_assert_eq!(Some(scanned), serde(&data));
            }
            check(&data);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 2048,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn agrees_with_serde_whenever_it_answers(data in payload()) {
            check(&data);
        }

        #[test]
        fn agrees_with_serde_on_the_well_formed_shape(
            sequence_number in any::<u64>(),
            output_index in any::<u64>(),
            delta in any::<String>(),
        ) {
            let data = serde_json::json!({
                "type": "response.output_text.delta", "sequence_number": sequence_number,
                "item_id": "msg_1", "output_index": output_index, "content_index": 0,
                "delta": delta, "logprobs": [], "obfuscation": "abc",
            })
            .to_string();
            let scanned = scan_delta(&data);
            prop_assert!(scanned.is_some(), "{}", data);
            check(&data);
        }
    }
}

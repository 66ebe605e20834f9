//! JSON text to a [`Value`], refusing an object that names a member twice.
//!
//! `serde_json` keeps the last of two same-named members without a word, so
//! `{"sessionId":"a","sessionId":"b"}` would run on session `b` while a proxy or a log
//! that reads the first saw `a`. RFC 8259 leaves such objects' meaning to each parser;
//! the request's one parse ([`AgentExecuteRequest::from_json_slice`]) refuses them
//! instead, naming the member and where it is.
//!
//! [`AgentExecuteRequest::from_json_slice`]: super::AgentExecuteRequest::from_json_slice

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a body did not parse.
#[derive(Debug)]
pub(crate) enum StrictError {
    /// Not JSON at all (or nested too deep).
    NotJson(serde_json::Error),
    /// An object names `member` twice; `path` is where, as violations write it
    /// (`toolResults[0].toolCallId`), ending with the member.
    Duplicate { path: String, member: String },
}

/// Parses `bytes` as [`serde_json::from_slice`] does, refusing duplicate members.
pub(crate) fn parse(bytes: &[u8]) -> Result<Value, StrictError> {
    let found = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let parsed = Strict { found: &found }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    match (parsed, found.into_inner()) {
        (Ok(value), _) => Ok(value),
        (
            Err(_),
            Some(Found {
                mut segments,
                member,
            }),
        ) => {
            segments.reverse();
            let mut path = String::new();
            for segment in segments {
                match segment {
                    Segment::Index(index) => {
                        path.push('[');
                        path.push_str(&index.to_string());
                        path.push(']');
                    }
                    Segment::Key(key) => {
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(&key);
                    }
                }
            }
            Err(StrictError::Duplicate { path, member })
        }
        (Err(error), None) => Err(StrictError::NotJson(error)),
    }
}

/// A duplicate found, with the way out to it, innermost first.
struct Found {
    segments: Vec<Segment>,
    member: String,
}

enum Segment {
    Key(String),
    Index(usize),
}

/// Decodes one value; on a duplicate member it records it in `found` and fails, and
/// each enclosing level adds its key or index on the way out.
#[derive(Clone, Copy)]
struct Strict<'a> {
    found: &'a RefCell<Option<Found>>,
}

impl Strict<'_> {
    /// Adds `segment` to a recorded duplicate's path as the error passes through.
    fn through<T, E>(
        self,
        result: Result<T, E>,
        segment: impl FnOnce() -> Segment,
    ) -> Result<T, E> {
        if result.is_err()
            && let Some(found) = self.found.borrow_mut().as_mut()
        {
            found.segments.push(segment());
        }
        result
    }
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Value, E> {
        Ok(Number::from_f64(value).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        loop {
            let index = items.len();
            match self.through(seq.next_element_seed(self), || Segment::Index(index))? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                *self.found.borrow_mut() = Some(Found {
                    segments: vec![Segment::Key(key.clone())],
                    member: key.clone(),
                });
                return Err(de::Error::custom(format_args!(
                    "the member {key:?} is given twice"
                )));
            }
            let value = self.through(map.next_value_seed(self), || Segment::Key(key.clone()))?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn duplicate(text: &str) -> Option<(String, String)> {
        match parse(text.as_bytes()) {
            Err(StrictError::Duplicate { path, member }) => Some((path, member)),
            _ => None,
        }
    }

    #[test]
    fn values_parse_as_serde_json_parses_them() {
        for text in [
            r#"{"a":[1,-2,3.5,1e400,18446744073709551615,-9223372036854775808],"b":{"c":null,"d":true},"e":"\u00e9\n"}"#,
            "[]",
            "{}",
            "\"x\"",
            "0",
            " [ {\"a\" : 1} , [ ] ] ",
        ] {
            let strict = parse(text.as_bytes()).ok();
            let lax = serde_json::from_str::<Value>(text).ok();
            assert_eq!(strict, lax, "{text}");
        }
        for text in ["", "{", "[1,]", "{\"a\":1}x", "\u{feff}{}", "nul"] {
            assert!(
                matches!(parse(text.as_bytes()), Err(StrictError::NotJson(_))),
                "{text}"
            );
        }
    }

    #[test]
    fn a_member_given_twice_is_named_with_its_path() {
        assert_eq!(
            duplicate(r#"{"sessionId":"a","sessionId":"b"}"#),
            Some(("sessionId".into(), "sessionId".into()))
        );
        // Escapes are read first: the same member however it is spelled.
        assert_eq!(
            duplicate(r#"{"sessionId":"a","\u0073essionId":"b"}"#),
            Some(("sessionId".into(), "sessionId".into()))
        );
        assert_eq!(
            duplicate(r#"{"toolResults":[{"x":1},{"toolCallId":"c","toolCallId":"d"}]}"#),
            Some(("toolResults[1].toolCallId".into(), "toolCallId".into()))
        );
        assert_eq!(
            duplicate(r#"[[{"a":{"b":1,"b":2}}]]"#),
            Some(("[0][0].a.b".into(), "b".into()))
        );
        // Same names in different objects are fine.
        assert!(parse(br#"{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}"#).is_ok());
    }
}

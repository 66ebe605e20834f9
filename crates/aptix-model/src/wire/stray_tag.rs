//! Decoding an event's payload straight from its text, refusing a stray `type`.
//!
//! [`StreamEvent::from_json`](super::StreamEvent::from_json) reads the leading `type`
//! of an event without scanning the rest, then decodes the payload struct from the whole
//! text. The payload structs ignore keys they do not know, `type` among them, so an
//! event that says `type` twice would decode as its first type, where the enum's own
//! decoding (which reads every key) says something else. [`decode_without_tag`] makes
//! a top-level `type` key in the payload an error, so such an event falls back to the
//! enum's decoding and both decodings keep giving the same event. Keys of nested
//! objects are not looked at: only the payload's own keys pass through the guard.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// `T` decoded from `data`, or `None` when it does not decode or names `type` more than
/// once at its top level.
pub(crate) fn decode_without_tag<'de, T: de::Deserialize<'de>>(data: &'de str) -> Option<T> {
    let mut deserializer = serde_json::Deserializer::from_str(data);
    let value = T::deserialize(Guarded(&mut deserializer)).ok()?;
    deserializer.end().ok()?;
    Some(value)
}

/// A deserializer whose structs and maps refuse a second `type` key.
struct Guarded<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Guarded<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(GuardedVisitor(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0
            .deserialize_struct(name, fields, GuardedVisitor(visitor))
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_map(GuardedVisitor(visitor))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct enum
        identifier ignored_any
    }
}

/// Passes a map on with its keys guarded; anything else is refused (a payload is an
/// object).
struct GuardedVisitor<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for GuardedVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(GuardedMap { map, typed: false })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(seq)
    }
}

/// The payload's map, remembering whether it has given a `type` key.
struct GuardedMap<A> {
    map: A,
    typed: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for GuardedMap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.map.next_key_seed(GuardedKey {
            seed,
            typed: &mut self.typed,
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

struct GuardedKey<'a, K> {
    seed: K,
    typed: &'a mut bool,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for GuardedKey<'_, K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K::Value, D::Error> {
        self.seed.deserialize(KeyDeserializer {
            deserializer,
            typed: self.typed,
        })
    }
}

/// A key's deserializer: every way of reading it goes through [`KeyVisitor`].
struct KeyDeserializer<'a, D> {
    deserializer: D,
    typed: &'a mut bool,
}

impl<'a, D> KeyDeserializer<'a, D> {
    /// The inner deserializer, and `visitor` behind the guard.
    fn guard<V>(self, visitor: V) -> (D, KeyVisitor<'a, V>) {
        let visitor = KeyVisitor {
            visitor,
            typed: self.typed,
        };
        (self.deserializer, visitor)
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeyDeserializer<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (deserializer, visitor) = self.guard(visitor);
        deserializer.deserialize_any(visitor)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (deserializer, visitor) = self.guard(visitor);
        deserializer.deserialize_identifier(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (deserializer, visitor) = self.guard(visitor);
        deserializer.deserialize_str(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (deserializer, visitor) = self.guard(visitor);
        deserializer.deserialize_string(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        ignored_any
    }
}

/// Refuses a second key `type`, passes every other key on.
struct KeyVisitor<'a, V> {
    visitor: V,
    typed: &'a mut bool,
}

impl<V> KeyVisitor<'_, V> {
    /// `Err` when `key` is `type` and the map gave one already.
    fn check<E: de::Error>(&mut self, key: &[u8]) -> Result<(), E> {
        if key == b"type" {
            if *self.typed {
                return Err(E::custom("a second `type` in the event"));
            }
            *self.typed = true;
        }
        Ok(())
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for KeyVisitor<'_, V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_str<E: de::Error>(mut self, key: &str) -> Result<V::Value, E> {
        self.check(key.as_bytes())?;
        self.visitor.visit_str(key)
    }

    fn visit_borrowed_str<E: de::Error>(mut self, key: &'de str) -> Result<V::Value, E> {
        self.check(key.as_bytes())?;
        self.visitor.visit_borrowed_str(key)
    }

    fn visit_string<E: de::Error>(mut self, key: String) -> Result<V::Value, E> {
        self.check(key.as_bytes())?;
        self.visitor.visit_string(key)
    }

    fn visit_bytes<E: de::Error>(mut self, key: &[u8]) -> Result<V::Value, E> {
        self.check(key)?;
        self.visitor.visit_bytes(key)
    }

    fn visit_borrowed_bytes<E: de::Error>(mut self, key: &'de [u8]) -> Result<V::Value, E> {
        self.check(key)?;
        self.visitor.visit_borrowed_bytes(key)
    }

    fn visit_byte_buf<E: de::Error>(mut self, key: Vec<u8>) -> Result<V::Value, E> {
        self.check(&key)?;
        self.visitor.visit_byte_buf(key)
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<V::Value, E> {
        self.visitor.visit_u64(index)
    }
}

#[cfg(test)]
mod tests {
    use super::decode_without_tag;
    use crate::wire::TextDeltaEvent;

    #[test]
    fn one_type_decodes_and_a_second_one_is_refused() {
        let once = r#"{"type":"response.output_text.delta","output_index":0,"delta":"hi"}"#;
        let decoded = decode_without_tag::<TextDeltaEvent>(once);
        assert_eq!(decoded.map(|event| event.delta), Some("hi".to_owned()));
        let twice = r#"{"type":"a","delta":"hi","output_index":0,"type":"b"}"#;
        assert!(decode_without_tag::<TextDeltaEvent>(twice).is_none());
        // Nested `type` keys are the payload's values, not its keys.
        let nested = r#"{"type":"a","delta":"hi","output_index":0,"x":{"type":1,"type":2}}"#;
        assert!(decode_without_tag::<TextDeltaEvent>(nested).is_some());
        // Trailing text is an error, as for `serde_json::from_str`.
        assert!(decode_without_tag::<TextDeltaEvent>(&format!("{once} x")).is_none());
    }
}

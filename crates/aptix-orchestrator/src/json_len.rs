//! The length of a value's compact JSON (`serde_json::to_vec(value).len()`), counted
//! without writing it.
//!
//! The compaction check bounds a request's tokens by its JSON's bytes on every turn
//! (`Orchestrator::estimate_bound`), and a turn's request carries the whole `[CONTEXT]`
//! block: ~25 KB for 20 chunks. Encoding that only to count it cost as much as sending
//! it (serde_json's escaper looks at one byte at a time). Here a string's escaped length
//! is summed with comparisons the compiler vectorises, and everything else is counted
//! as serde_json writes it. The result is the same number (`tests` check it against
//! serde_json on generated values).

use serde::Serialize;
use serde::ser::{self, Impossible};

/// `serde_json::to_vec(value)?.len()`, computed without encoding. A value serde_json
/// cannot encode (a map key that is not a string or a number) is measured by encoding
/// it, so that the error is serde_json's; such a value gives `u64::MAX`.
pub(crate) fn json_length<T: Serialize + ?Sized>(value: &T) -> u64 {
    match value.serialize(Length) {
        Ok(length) => length,
        Err(Unsupported) => encoded_length(value),
    }
}

/// The length by encoding into a counting writer: the reference, and the fallback.
fn encoded_length<T: Serialize + ?Sized>(value: &T) -> u64 {
    struct Counter(u64);
    impl std::io::Write for Counter {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(bytes.len() as u64);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        // Counting too much is the safe side of a bound.
        Err(_) => u64::MAX,
    }
}

/// The quoted, escaped length of `text` as serde_json writes it: `"` and `\` and the
/// five short control escapes (`\b \t \n \f \r`) take two bytes, other bytes below 0x20
/// take six (`\u00XX`), everything else (UTF-8 included) is written as it is.
fn string_length(text: &str) -> u64 {
    // A control byte adds 5 (`\u00XX`), a short control escape gives 4 of them back,
    // and `"` or `\` adds 1. Counted in 16 `u8` lanes that the compiler turns into
    // vector compares, over blocks short enough that no lane passes 255.
    const LANES: usize = 16;
    let counts = |lane: &[u8], control: &mut [u8], short: &mut [u8], quote: &mut [u8]| {
        for (i, &byte) in lane.iter().enumerate() {
            control[i] += u8::from(byte < 0x20);
            short[i] += u8::from(matches!(byte, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d));
            quote[i] += u8::from(matches!(byte, b'"' | b'\\'));
        }
    };
    let mut extra = 0u64;
    for block in text.as_bytes().chunks(255 * LANES) {
        let (mut control, mut short, mut quote) = ([0u8; LANES], [0u8; LANES], [0u8; LANES]);
        let mut lanes = block.chunks_exact(LANES);
        for lane in &mut lanes {
            counts(lane, &mut control, &mut short, &mut quote);
        }
        counts(lanes.remainder(), &mut control, &mut short, &mut quote);
        let sum = |lanes: [u8; LANES]| lanes.iter().map(|&n| u64::from(n)).sum::<u64>();
        extra += 5 * sum(control) - 4 * sum(short) + sum(quote);
    }
    text.len() as u64 + 2 + extra
}

/// Decimal digits of `n`, with the sign.
fn integer_length(n: i128) -> u64 {
    let sign = u64::from(n < 0);
    let mut magnitude = n.unsigned_abs();
    let mut digits = 1;
    while magnitude >= 10 {
        magnitude /= 10;
        digits += 1;
    }
    sign + digits
}

/// Floats as serde_json writes them (`null` when not finite): rare in requests, so
/// written and measured.
fn float_length(value: f64, single: bool) -> u64 {
    let text = if single {
        serde_json::to_string(&(value as f32))
    } else {
        serde_json::to_string(&value)
    };
    text.map_or(4, |text| text.len() as u64)
}

/// A value this counter does not measure: the caller falls back to encoding.
#[derive(Debug)]
struct Unsupported;

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not measured without encoding")
    }
}

impl std::error::Error for Unsupported {}

impl ser::Error for Unsupported {
    fn custom<T: std::fmt::Display>(_message: T) -> Self {
        Unsupported
    }
}

/// The name serde_json gives a `RawValue`, which it writes verbatim.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

#[derive(Clone, Copy)]
struct Length;

/// An array or object being counted: the bytes so far, and whether an element was seen
/// (each element after the first adds a comma).
struct Compound {
    length: u64,
    first: bool,
    /// Bytes after the closing bracket: a variant's outer `}`.
    close: u64,
}

impl Compound {
    fn open(length: u64, close: u64) -> Compound {
        Compound {
            length,
            first: true,
            close,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.length += u64::from(!self.first) + value.serialize(Length)?;
        self.first = false;
        Ok(())
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Unsupported> {
        self.length += u64::from(!self.first) + string_length(key) + 1 + value.serialize(Length)?;
        self.first = false;
        Ok(())
    }

    fn end(self) -> Result<u64, Unsupported> {
        // The closing bracket.
        Ok(self.length + 1 + self.close)
    }
}

impl ser::Serializer for Length {
    type Ok = u64;
    type Error = Unsupported;
    type SerializeSeq = Compound;
    type SerializeTuple = Compound;
    type SerializeTupleStruct = Compound;
    type SerializeTupleVariant = Compound;
    type SerializeMap = Compound;
    type SerializeStruct = Compound;
    type SerializeStructVariant = Compound;

    fn serialize_bool(self, value: bool) -> Result<u64, Unsupported> {
        Ok(if value { 4 } else { 5 })
    }
    fn serialize_i8(self, value: i8) -> Result<u64, Unsupported> {
        Ok(integer_length(value.into()))
    }
    fn serialize_i16(self, value: i16) -> Result<u64, Unsupported> {
        Ok(integer_length(value.into()))
    }
    fn serialize_i32(self, value: i32) -> Result<u64, Unsupported> {
        Ok(integer_length(value.into()))
    }
    fn serialize_i64(self, value: i64) -> Result<u64, Unsupported> {
        Ok(integer_length(value.into()))
    }
    fn serialize_i128(self, value: i128) -> Result<u64, Unsupported> {
        Ok(integer_length(value))
    }
    fn serialize_u8(self, value: u8) -> Result<u64, Unsupported> {
        Ok(integer_length(value.into()))
    }
    fn serialize_u16(self, value: u16) -> Result<u64, Unsupported> {
        Ok(integer_length(value.into()))
    }
    fn serialize_u32(self, value: u32) -> Result<u64, Unsupported> {
        Ok(integer_length(value.into()))
    }
    fn serialize_u64(self, value: u64) -> Result<u64, Unsupported> {
        Ok(integer_length(value.into()))
    }
    fn serialize_u128(self, value: u128) -> Result<u64, Unsupported> {
        // Past i128: 39 digits.
        Ok(i128::try_from(value).map_or(39, integer_length))
    }
    fn serialize_f32(self, value: f32) -> Result<u64, Unsupported> {
        Ok(float_length(value.into(), true))
    }
    fn serialize_f64(self, value: f64) -> Result<u64, Unsupported> {
        Ok(float_length(value, false))
    }
    fn serialize_char(self, value: char) -> Result<u64, Unsupported> {
        Ok(string_length(value.encode_utf8(&mut [0; 4])))
    }
    fn serialize_str(self, value: &str) -> Result<u64, Unsupported> {
        Ok(string_length(value))
    }
    fn serialize_bytes(self, value: &[u8]) -> Result<u64, Unsupported> {
        // An array of numbers.
        let digits: u64 = value.iter().map(|&b| integer_length(b.into())).sum();
        Ok(2 + digits + value.len().saturating_sub(1) as u64)
    }
    fn serialize_none(self) -> Result<u64, Unsupported> {
        Ok(4)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<u64, Unsupported> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<u64, Unsupported> {
        Ok(4)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<u64, Unsupported> {
        Ok(4)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<u64, Unsupported> {
        Ok(string_length(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<u64, Unsupported> {
        if name == RAW_VALUE_TOKEN {
            // Written verbatim, not as a string: measure it the reference way.
            return Err(Unsupported);
        }
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<u64, Unsupported> {
        // {"variant":value}
        Ok(string_length(variant) + 3 + value.serialize(self)?)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound, Unsupported> {
        Ok(Compound::open(1, 0))
    }
    fn serialize_tuple(self, _len: usize) -> Result<Compound, Unsupported> {
        Ok(Compound::open(1, 0))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound, Unsupported> {
        Ok(Compound::open(1, 0))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound, Unsupported> {
        // {"variant":[...]}
        Ok(Compound::open(string_length(variant) + 3, 1))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound, Unsupported> {
        Ok(Compound::open(1, 0))
    }
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Compound, Unsupported> {
        if name == RAW_VALUE_TOKEN {
            return Err(Unsupported);
        }
        Ok(Compound::open(1, 0))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound, Unsupported> {
        // {"variant":{...}}
        Ok(Compound::open(string_length(variant) + 3, 1))
    }
}

/// Arrays: each element after the first adds a comma.
macro_rules! sequence {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for Compound {
            type Ok = u64;
            type Error = Unsupported;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
                self.element(value)
            }
            fn end(self) -> Result<u64, Unsupported> {
                Compound::end(self)
            }
        }
    )*};
}

sequence!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// Objects with named fields: `"key":value`, comma-separated.
macro_rules! object {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound {
            type Ok = u64;
            type Error = Unsupported;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Unsupported> {
                self.field(key, value)
            }
            fn end(self) -> Result<u64, Unsupported> {
                Compound::end(self)
            }
        }
    )*};
}

object!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound {
    type Ok = u64;
    type Error = Unsupported;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Unsupported> {
        // serde_json writes string keys as strings and numbers and booleans quoted;
        // anything else is its error, measured by the fallback.
        self.length += u64::from(!self.first) + key.serialize(MapKey)? + 1;
        self.first = false;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Unsupported> {
        self.length += value.serialize(Length)?;
        Ok(())
    }
    fn end(self) -> Result<u64, Unsupported> {
        Compound::end(self)
    }
}

/// Scalars a map key does not measure: serde_json quotes numbers and refuses the rest,
/// and the fallback says which.
macro_rules! refuse_scalars {
    ($($method:ident: $type:ty),*) => {$(
        fn $method(self, _value: $type) -> Result<u64, Unsupported> {
            Err(Unsupported)
        }
    )*};
}

/// A map key: only strings are measured here; numbers and the rest go to the fallback.
struct MapKey;

impl ser::Serializer for MapKey {
    type Ok = u64;
    type Error = Unsupported;
    type SerializeSeq = Impossible<u64, Unsupported>;
    type SerializeTuple = Impossible<u64, Unsupported>;
    type SerializeTupleStruct = Impossible<u64, Unsupported>;
    type SerializeTupleVariant = Impossible<u64, Unsupported>;
    type SerializeMap = Impossible<u64, Unsupported>;
    type SerializeStruct = Impossible<u64, Unsupported>;
    type SerializeStructVariant = Impossible<u64, Unsupported>;

    fn serialize_str(self, value: &str) -> Result<u64, Unsupported> {
        Ok(string_length(value))
    }
    fn serialize_char(self, value: char) -> Result<u64, Unsupported> {
        Ok(string_length(value.encode_utf8(&mut [0; 4])))
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<u64, Unsupported> {
        Ok(string_length(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<u64, Unsupported> {
        value.serialize(self)
    }
    refuse_scalars!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_bytes: &[u8]
    );
    fn serialize_none(self) -> Result<u64, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<u64, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit(self) -> Result<u64, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<u64, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _value: &T,
    ) -> Result<u64, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Unsupported> {
        Err(Unsupported)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Unsupported> {
        Err(Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn reference<T: Serialize + ?Sized>(value: &T) -> u64 {
        serde_json::to_vec(value).unwrap().len() as u64
    }

    /// Strings with every kind of byte the escaper treats differently, and long runs
    /// that cross the 255-byte blocks.
    fn text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("\"".to_owned()),
            Just("\\".to_owned()),
            (0u8..0x20).prop_map(|b| char::from(b).to_string()),
            Just("\u{7f}".to_owned()),
            Just("é日🦀".to_owned()),
            "[a-z ]{0,300}",
        ];
        prop::collection::vec(piece, 0..12).prop_map(|pieces| pieces.concat())
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((text(), inner), 0..8)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn a_string_is_as_long_as_serde_json_writes_it(text in text()) {
            prop_assert_eq!(string_length(&text), reference(&text));
        }

        #[test]
        fn a_value_is_as_long_as_serde_json_writes_it(value in value()) {
            prop_assert_eq!(json_length(&value), reference(&value));
        }
    }

    #[test]
    fn every_byte_escapes_as_serde_json_escapes_it() {
        for byte in 0u8..0x80 {
            let text = char::from(byte).to_string();
            assert_eq!(string_length(&text), reference(&text), "byte {byte:#x}");
        }
        // 255 control bytes in one block: the per-block sums must not overflow.
        let controls = "\u{1}".repeat(255) + &"\n".repeat(255) + &"\"".repeat(600);
        assert_eq!(string_length(&controls), reference(&controls));
    }

    #[test]
    fn request_items_are_as_long_as_serde_json_writes_them() {
        use aptix_model::wire::{InputItem, Response};
        let response: Response = serde_json::from_value(json!({
            "id": "resp_1", "object": "response", "created_at": 1, "status": "completed",
            "model": "m",
            "output": [
                {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "text": "say \"hi\"\n\tthere",
                              "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read",
                 "arguments": "{\"path\":\"src/a.rs\"}", "status": "completed"},
                {"type": "reasoning", "id": "rs_1", "summary": [],
                 "encrypted_content": "gAAAA=="},
                {"type": "web_search_call", "id": "ws_1", "status": "completed",
                 "action": {"type": "search", "query": "x", "score": 0.5}}
            ]
        }))
        .unwrap();
        let items: Vec<InputItem> = response
            .output
            .into_iter()
            .map(|item| item.into_input_item())
            .collect();
        assert_eq!(items.len(), 4);
        for item in &items {
            assert_eq!(json_length(item), reference(item), "{item:?}");
        }
        let user: InputItem = serde_json::from_value(json!({
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "[CONTEXT]\n\n=== CHUNK 1 ===\n\u{0}"},
                        {"type": "input_image", "image_url": "data:image/png;base64,AAAA",
                         "detail": "auto"}]
        }))
        .unwrap();
        assert_eq!(json_length(&user), reference(&user));
    }

    #[test]
    fn a_map_with_number_keys_falls_back_to_encoding() {
        let map: std::collections::BTreeMap<u32, &str> = [(1, "a"), (20, "b")].into();
        assert_eq!(json_length(&map), reference(&map));
    }
}

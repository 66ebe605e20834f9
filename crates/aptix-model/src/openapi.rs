//! Helpers for the OpenAPI schemas of the contract types (feature `openapi`).
//!
//! Each type's schema lives next to the type: derived with `utoipa::ToSchema` where serde
//! is derived, written by hand (with these helpers) where serde is. The hand-written ones
//! take their descriptions from the types' doc comments, captured by the macros that
//! declare the types, so a description cannot drift from the rustdoc.

use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, ObjectBuilder, Schema, SchemaType, Type,
};

/// The text of a doc comment as `utoipa`'s derive writes one: trailing whitespace cut,
/// the common indentation of the non-empty lines removed, lines joined with `\n`.
pub(crate) fn doc_text(lines: &[&str]) -> String {
    let lines: Vec<&str> = lines.iter().map(|line| line.trim_end()).collect();
    let indent = lines
        .iter()
        .filter(|line| !line.is_empty())
        .map(|line| line.len() - line.trim_start_matches(' ').len())
        .min()
        .unwrap_or(0);
    lines
        .iter()
        .map(|line| line.get(indent..).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A checked text of the request: a string that is not blank (at least one character
/// that is not whitespace) and at most `max_bytes` bytes of UTF-8.
///
/// `maxLength` counts characters, not bytes, so it is set to `max_bytes`: every text
/// within the byte limit passes, and the description states the exact limit.
pub(crate) fn checked_text(doc: &[&str], max_bytes: usize) -> RefOr<Schema> {
    let description = format!(
        "{}\n\nNot empty or only whitespace; at most {max_bytes} bytes of UTF-8.",
        doc_text(doc)
    );
    ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some(description))
        .min_length(Some(1))
        .max_length(Some(max_bytes))
        .pattern(Some(r"\S"))
        .into()
}

/// An open string enum: one of the known values, or any other string, which a newer
/// server may send and a client should show as it is rather than fail on.
///
/// The schema is a string with `anyOf` the known values and any string, so that code
/// generators see the known values and validators accept the others. `known` pairs each
/// value with its variant's doc comment.
pub(crate) fn open_enum(doc: &[&str], known: &[(&str, &[&str])]) -> RefOr<Schema> {
    let mut description = doc_text(doc);
    description.push_str("\n\nKnown values:");
    for (_, variant_doc) in known {
        description.push_str("\n- ");
        description.push_str(&doc_text(variant_doc).replace('\n', " "));
    }
    description.push_str(
        "\n\nAny other string may appear: a value this version of Aptix does not know, \
         kept as sent.",
    );
    let values = ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(known.iter().map(|(value, _)| *value)));
    let others = ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some("A value this version of Aptix does not know."));
    AnyOfBuilder::new()
        .schema_type(SchemaType::new(Type::String))
        .description(Some(description))
        .item(values)
        .item(others)
        .into()
}

/// The request validator's rule for fields an object does not have, applied to the
/// derived schema of a request object: a field the contract does not know is a
/// violation unless its value is `null`, which is read as absent like every `null`
/// (`additionalProperties: {"type": "null"}`). Derived schemas cannot say this: serde's
/// `deny_unknown_fields` is the only way `utoipa` writes `additionalProperties`, and the
/// request is read by the validator, not by a serde derive.
pub(crate) fn unknown_fields_must_be_null(schema: RefOr<Schema>) -> RefOr<Schema> {
    match schema {
        RefOr::T(Schema::Object(mut object))
            if object.schema_type == SchemaType::new(Type::Object) =>
        {
            object.additional_properties = Some(Box::new(AdditionalProperties::RefOr(RefOr::T(
                Schema::Object(ObjectBuilder::new().schema_type(Type::Null).build()),
            ))));
            RefOr::T(Schema::Object(object))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_text_is_formatted_as_the_derive_formats_it() {
        assert_eq!(
            doc_text(&[" One line.", "", " - a list  ", "   indented"]),
            "One line.\n\n- a list\n  indented"
        );
        assert_eq!(doc_text(&[]), "");
    }
}

//! The `Response` object: what `POST /v1/responses` returns, and what the terminal
//! stream events carry.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::open_enum::ResponseStatus;
use super::output::OutputItem;
use super::serde_util::{null_as_default, string_or_number};
use super::usage::Usage;
use crate::open_enum::open_string_enum;

/// A response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Response {
    /// `resp_...`: the next request's `previous_response_id`.
    pub id: String,
    /// Always `response`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<serde_json::Number>,
    /// Lifecycle status; there is no `finish_reason`, this and
    /// [`incomplete_details`](Self::incomplete_details) replace it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ResponseStatus>,
    /// Why a `failed` response failed (an HTTP 200 can carry this).
    #[serde(default)]
    pub error: Option<ResponseError>,
    /// Why an `incomplete` response stopped.
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    /// The model that answered (a dated snapshot name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Output items in order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub output: Vec<OutputItem>,
    /// Token usage; `null` while in progress and on failure.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The response this one continued (`null` on the wire when none, and so here).
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// Every other field (`tools`, `text`, `reasoning`, `billing`, ...), kept so that
    /// re-encoding loses nothing.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// Decoded by hand, not derived: serde decodes a struct with a `flatten` field by first
/// copying the whole object into a tree of its own, then decoding the fields from that
/// tree. A response carries the whole answer, so that was a second pass over every byte
/// of it (and in a stream, of every event that carries the response). This visitor
/// decodes each known field in place and keeps the others, as the derive did: a missing
/// `id` and a known field given twice are errors, `null` reads as absent, and an
/// `output` of `null` is empty.
impl<'de> Deserialize<'de> for Response {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ResponseVisitor)
    }
}

struct ResponseVisitor;

/// A key of a response object: a known field, named without allocating, or another.
enum Field {
    Id,
    Object,
    CreatedAt,
    Status,
    Error,
    IncompleteDetails,
    Model,
    Output,
    Usage,
    PreviousResponseId,
    Other(String),
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Field, E> {
        Ok(match name {
            "id" => Field::Id,
            "object" => Field::Object,
            "created_at" => Field::CreatedAt,
            "status" => Field::Status,
            "error" => Field::Error,
            "incomplete_details" => Field::IncompleteDetails,
            "model" => Field::Model,
            "output" => Field::Output,
            "usage" => Field::Usage,
            "previous_response_id" => Field::PreviousResponseId,
            other => Field::Other(other.to_owned()),
        })
    }

    fn visit_string<E: de::Error>(self, name: String) -> Result<Field, E> {
        match self.visit_str::<E>(&name)? {
            Field::Other(_) => Ok(Field::Other(name)),
            known => Ok(known),
        }
    }
}

/// Stores a known field's value, refusing a second one.
fn once<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    slot: &mut Option<T>,
    name: &'static str,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

impl<'de> Visitor<'de> for ResponseVisitor {
    type Value = Response;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a response object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Response, A::Error> {
        let mut id: Option<String> = None;
        let mut object: Option<Option<String>> = None;
        let mut created_at: Option<Option<serde_json::Number>> = None;
        let mut status: Option<Option<ResponseStatus>> = None;
        let mut error: Option<Option<ResponseError>> = None;
        let mut incomplete_details: Option<Option<IncompleteDetails>> = None;
        let mut model: Option<Option<String>> = None;
        let mut output: Option<Option<Vec<OutputItem>>> = None;
        let mut usage: Option<Option<Usage>> = None;
        let mut previous_response_id: Option<Option<String>> = None;
        let mut extra = BTreeMap::new();
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Id => once(&mut id, "id", &mut map)?,
                Field::Object => once(&mut object, "object", &mut map)?,
                Field::CreatedAt => once(&mut created_at, "created_at", &mut map)?,
                Field::Status => once(&mut status, "status", &mut map)?,
                Field::Error => once(&mut error, "error", &mut map)?,
                Field::IncompleteDetails => {
                    once(&mut incomplete_details, "incomplete_details", &mut map)?;
                }
                Field::Model => once(&mut model, "model", &mut map)?,
                Field::Output => once(&mut output, "output", &mut map)?,
                Field::Usage => once(&mut usage, "usage", &mut map)?,
                Field::PreviousResponseId => {
                    once(&mut previous_response_id, "previous_response_id", &mut map)?;
                }
                Field::Other(name) => {
                    let value: Value = map.next_value()?;
                    extra.insert(name, value);
                }
            }
        }
        Ok(Response {
            id: id.ok_or_else(|| de::Error::missing_field("id"))?,
            object: object.flatten(),
            created_at: created_at.flatten(),
            status: status.flatten(),
            error: error.flatten(),
            incomplete_details: incomplete_details.flatten(),
            model: model.flatten(),
            output: output.flatten().unwrap_or_default(),
            usage: usage.flatten(),
            previous_response_id: previous_response_id.flatten(),
            extra,
        })
    }
}

impl Response {
    /// An empty response with only an id, for builders and tests.
    pub fn with_id(id: impl Into<String>) -> Response {
        Response {
            id: id.into(),
            object: Some("response".into()),
            created_at: None,
            status: None,
            error: None,
            incomplete_details: None,
            model: None,
            output: Vec::new(),
            usage: None,
            previous_response_id: None,
            extra: BTreeMap::new(),
        }
    }
}

/// `error` of a failed response: `{code, message}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseError {
    /// `server_error`, `rate_limit_exceeded`, `insufficient_quota`, ... (the spec's
    /// closed list is not what the wire sends, so this is text).
    #[serde(default, deserialize_with = "string_or_number")]
    pub code: Option<String>,
    /// A sentence for humans.
    #[serde(default, deserialize_with = "null_as_default")]
    pub message: String,
}

/// `incomplete_details`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncompleteDetails {
    /// Why the response stopped early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<IncompleteReason>,
}

open_string_enum! {
    /// Why a response is `incomplete`.
    pub enum IncompleteReason {
        /// `max_output_tokens` was reached.
        MaxOutputTokens = "max_output_tokens",
        /// The content filter stopped it.
        ContentFilter = "content_filter",
    }
}

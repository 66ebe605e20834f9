//! The `Response` object: what `POST /v1/responses` returns, and what the terminal
//! stream events carry.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::open_enum::ResponseStatus;
use super::output::OutputItem;
use super::serde_util::{null_as_default, string_or_number};
use super::usage::Usage;
use crate::open_enum::open_string_enum;

/// A response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

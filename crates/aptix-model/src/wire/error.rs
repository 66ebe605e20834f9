//! Error bodies: the non-2xx `{"error":{...}}` body.
//!
//! `param` and `code` are often `null`; `code` is a string on OpenAI and a number on
//! some compatible servers, so it is kept as text either way.

use serde::{Deserialize, Serialize};

use super::serde_util::{null_as_default, string_or_number};

/// A non-2xx reply body: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ApiError,
}

/// An API error, as in error bodies and (nested) in-stream `error` events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// A sentence for humans.
    #[serde(default, deserialize_with = "null_as_default")]
    pub message: String,
    /// The error class (`invalid_request_error`, `server_error`, `insufficient_quota`, ...).
    #[serde(
        rename = "type",
        default,
        deserialize_with = "string_or_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<String>,
    /// The request parameter at fault.
    #[serde(
        default,
        deserialize_with = "string_or_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub param: Option<String>,
    /// A machine code (`invalid_api_key`, `rate_limit_exceeded`, `insufficient_quota`, ...).
    #[serde(
        default,
        deserialize_with = "string_or_number",
        skip_serializing_if = "Option::is_none"
    )]
    pub code: Option<String>,
}

impl ApiError {
    /// What an error envelope's `errorCode` takes from this error: its `code`, else its
    /// `type` (`kind`), skipping empty ones; `None` when it has neither.
    pub fn code_or_type(&self) -> Option<&str> {
        [&self.code, &self.kind]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .find(|text| !text.is_empty())
    }
}

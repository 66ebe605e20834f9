//! Content parts of messages.
//!
//! Input messages carry `input_text`, `input_image` and `input_file` parts; assistant
//! messages (in output, and in replayed history) carry `output_text` and `refusal`
//! parts. The API rejects a `text` part (the seeds' conceptual name) and rejects an
//! `input_text` part inside an assistant message, so one enum serves both directions
//! and the builders choose the right part for the role.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::serde_util::null_as_default;

/// One part of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    /// Text written by the user, system or developer.
    InputText {
        /// The text.
        text: String,
    },
    /// An image given to the model.
    InputImage(InputImage),
    /// A file given to the model.
    InputFile(InputFile),
    /// Text written by the model.
    OutputText(OutputText),
    /// The model declined to answer; this is not answer text.
    Refusal(Refusal),
    /// A part type this version does not know, or a known one of unexpected shape, kept
    /// as received.
    #[serde(untagged)]
    Other(Value),
}

impl ContentPart {
    /// An `input_text` part.
    pub fn input_text(text: impl Into<String>) -> ContentPart {
        ContentPart::InputText { text: text.into() }
    }

    /// An `output_text` part without annotations, for replaying assistant history.
    pub fn output_text(text: impl Into<String>) -> ContentPart {
        ContentPart::OutputText(OutputText {
            text: text.into(),
            annotations: Some(Vec::new()),
            logprobs: None,
        })
    }
}

/// An `input_image` part: a URL (including `data:` URLs) or an uploaded file id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputImage {
    /// `https:` or `data:image/...;base64,` URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<String>,
    /// An uploaded file's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// `low`, `high` or `auto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// An `input_file` part: inline data, a URL or an uploaded file id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputFile {
    /// An uploaded file's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// The file's content as a `data:` URL or base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_data: Option<String>,
    /// A URL the API fetches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_url: Option<String>,
    /// The file's name, which tells the model its type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
}

/// An `output_text` part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputText {
    /// The text.
    pub text: String,
    /// Citations and file paths; kept raw because Aptix does not interpret them yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Vec<Value>>,
    /// Token log-probabilities when requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<Value>>,
}

/// A `refusal` part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    /// Why the model declined.
    #[serde(default, deserialize_with = "null_as_default")]
    pub refusal: String,
}

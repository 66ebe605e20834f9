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

impl InputImage {
    /// An image sent inline: its bytes, base64-encoded, in a `data:` URL of its media
    /// type, with `detail` `auto` (OpenAI's default, which the spec lists among an input
    /// image's required members, so a server checking the schema strictly takes it).
    ///
    /// ```
    /// use aptix_model::wire::InputImage;
    ///
    /// let image = InputImage::inline("image/png", "iVBORw0KGgo=");
    /// assert_eq!(image.image_url.as_deref(), Some("data:image/png;base64,iVBORw0KGgo="));
    /// assert_eq!(image.inline_data(), Some(("image/png", "iVBORw0KGgo=")));
    /// ```
    pub fn inline(media_type: &str, base64: &str) -> InputImage {
        InputImage {
            image_url: Some(data_url(media_type, base64)),
            file_id: None,
            detail: Some("auto".to_owned()),
        }
    }

    /// The media type and base64 bytes of an image sent inline ([`InputImage::inline`]);
    /// `None` for an image given by a web URL or a file id.
    pub fn inline_data(&self) -> Option<(&str, &str)> {
        let (media_type, base64) = self
            .image_url
            .as_deref()?
            .strip_prefix("data:")?
            .split_once(";base64,")?;
        Some((media_type, base64))
    }
}

/// The `data:` URL of base64-encoded bytes, as inline images and files are sent.
fn data_url(media_type: &str, base64: &str) -> String {
    format!("data:{media_type};base64,{base64}")
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

impl InputFile {
    /// A file sent inline under `filename`: its bytes, base64-encoded, in a `data:` URL
    /// of its media type.
    pub fn inline(filename: &str, media_type: &str, base64: &str) -> InputFile {
        InputFile {
            file_id: None,
            file_data: Some(data_url(media_type, base64)),
            file_url: None,
            filename: Some(filename.to_owned()),
        }
    }
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

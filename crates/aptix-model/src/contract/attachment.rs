//! File and image inputs of a user turn (AGN-034 section 4.2).
//!
//! The JSON shape and the rules are documented on [`FileInput`].

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::limits::MAX_MEDIA_TYPE_BYTES;
use super::path::RelativePath;
use super::violation::{Problem, Violation, ViolationCode};

/// A file input: a reference to a workspace file, or its content inline.
///
/// Every input names a workspace-relative `path`. It is either a **reference** (no
/// content: the server reads the file from the workspace it indexes) or an **inline
/// attachment**: a file as UTF-8 text (`content`) or as base64 (`contentBase64`), an
/// image as base64 only. `mediaType` is optional; when it is absent, consumers infer it
/// from the path's extension.
///
/// ```json
/// "files":  [{"path": "src/lib.rs"},
///            {"path": "notes/bug.md", "content": "it crashes when ..."},
///            {"path": "spec.pdf", "contentBase64": "JVBERi0x", "mediaType": "application/pdf"}],
/// "images": [{"path": "screenshots/error.png", "contentBase64": "iVBORw0K", "mediaType": "image/png"}]
/// ```
///
/// Base64 is the standard alphabet with `=` padding and no whitespace or `data:` prefix,
/// because it is passed on as the payload of a `data:` URL without being decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInput {
    /// Where the file is (or would be) in the workspace. A path ending in
    /// `#L<start>-<end>` (GitHub's form: `src/a.rs#L12-20`) names a selection: the text
    /// is those lines of the file, and is shown to the model at their numbers.
    pub path: RelativePath,
    /// Whether and how the content travels with the request.
    pub source: FileSource,
    /// The file's media type, when the client knows it.
    pub media_type: Option<MediaType>,
}

/// How a [`FileInput`]'s content is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileSource {
    /// No content: the server reads the path from the workspace.
    Reference,
    /// Inline UTF-8 text (`content`); may be empty, as files may be.
    Text(String),
    /// Inline bytes as base64 (`contentBase64`).
    Base64(Base64Data),
}

/// An image input: a reference to a workspace image, or its bytes inline. The rules are
/// those of a [`FileInput`], except that an image has no text `content`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageInput {
    /// Where the image is (or would be) in the workspace; a pasted screenshot gets a
    /// made-up name such as `clipboard.png`.
    pub path: RelativePath,
    /// Whether the bytes travel with the request.
    pub source: ImageSource,
    /// The image's media type (`image/...`), when the client knows it.
    pub media_type: Option<MediaType>,
}

/// How an [`ImageInput`]'s bytes are given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    /// No bytes: the server reads the path from the workspace.
    Reference,
    /// Inline bytes as base64 (`contentBase64`); never empty in a valid request.
    Base64(Base64Data),
}

impl FileInput {
    /// Bytes of inline content as sent (0 for a reference), for the size limits.
    pub fn inline_len(&self) -> usize {
        match &self.source {
            FileSource::Reference => 0,
            FileSource::Text(text) => text.len(),
            FileSource::Base64(data) => data.as_str().len(),
        }
    }
}

impl ImageInput {
    /// Bytes of inline base64 as sent (0 for a reference), for the size limits.
    pub fn inline_len(&self) -> usize {
        match &self.source {
            ImageSource::Reference => 0,
            ImageSource::Base64(data) => data.as_str().len(),
        }
    }
}

/// A file input: a workspace file named by `path`, either a reference (no content: the
/// server reads the file from the workspace it indexes) or inline, as UTF-8 text
/// (`content`) or as base64 (`contentBase64`), never both. When `mediaType` is absent,
/// consumers infer it from the path's extension.
// The JSON shape of a `FileInput`, whose source picks the content field that is set; the
// doc comments above and on the fields are its schema's descriptions.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
struct FileInputJson<'a> {
    /// Where the file is (or would be) in the workspace. A path ending in
    /// `#L<start>-<end>` (GitHub's form: `src/a.rs#L12-20`) names a selection: the text
    /// is those lines of the file, and is shown to the model at their numbers.
    path: &'a RelativePath,
    /// The file's content as UTF-8 text; may be empty, as files may be. At most 20 MiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
    /// The file's bytes as base64; at most 20 MiB of base64 text.
    #[serde(skip_serializing_if = "Option::is_none")]
    content_base64: Option<&'a Base64Data>,
    /// The file's media type, when the client knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    media_type: Option<&'a MediaType>,
}

/// An image input: a workspace image named by `path`, either a reference (no bytes: the
/// server reads the image from the workspace) or inline as base64 (`contentBase64`). An
/// image has no text `content`.
// The JSON shape of an `ImageInput`; its doc comments are its schema's descriptions.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
struct ImageInputJson<'a> {
    /// Where the image is (or would be) in the workspace; a pasted screenshot gets a
    /// made-up name such as `clipboard.png`.
    path: &'a RelativePath,
    /// The image's bytes as standard padded base64, not empty (leave the field out to
    /// refer to the path); at most 20 MiB of base64 text.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            value_type = Option<String>,
            min_length = 1,
            pattern = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"
        )
    )]
    content_base64: Option<&'a Base64Data>,
    /// The image's media type, `image/...` in any case, when the client knows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "openapi",
        schema(
            value_type = Option<String>,
            max_length = 255,
            pattern = "^[Ii][Mm][Aa][Gg][Ee]/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$"
        )
    )]
    media_type: Option<&'a MediaType>,
}

impl Serialize for FileInput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (content, content_base64) = match &self.source {
            FileSource::Reference => (None, None),
            FileSource::Text(text) => (Some(text.as_str()), None),
            FileSource::Base64(data) => (None, Some(data)),
        };
        FileInputJson {
            path: &self.path,
            content,
            content_base64,
            media_type: self.media_type.as_ref(),
        }
        .serialize(serializer)
    }
}

impl Serialize for ImageInput {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let content_base64 = match &self.source {
            ImageSource::Reference => None,
            ImageSource::Base64(data) => Some(data),
        };
        ImageInputJson {
            path: &self.path,
            content_base64,
            media_type: self.media_type.as_ref(),
        }
        .serialize(serializer)
    }
}

// The schema of the JSON shape `FileInputJson`, which is what a `FileInput` serialises to.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for FileInput {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <FileInputJson<'_> as utoipa::PartialSchema>::schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for FileInput {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("FileInput")
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <FileInputJson<'_> as utoipa::ToSchema>::schemas(schemas);
    }
}

// The schema of the JSON shape `ImageInputJson`, which is what an `ImageInput`
// serialises to.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for ImageInput {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <ImageInputJson<'_> as utoipa::PartialSchema>::schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for ImageInput {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ImageInput")
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <ImageInputJson<'_> as utoipa::ToSchema>::schemas(schemas);
    }
}

/// Checked standard base64 text (`A-Z a-z 0-9 + /`, `=` padding, length a multiple of 4),
/// without whitespace or a `data:` prefix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(pattern = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$")
)]
pub struct Base64Data(String);

impl Base64Data {
    /// Checks and wraps base64 text.
    pub fn new(text: impl Into<String>) -> Result<Self, Violation> {
        let text = text.into();
        check_base64(&text).map_err(|problem| problem.at("contentBase64"))?;
        Ok(Base64Data(text))
    }

    /// The base64 text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it encodes no bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Checks standard padded base64 without decoding it.
pub(crate) fn check_base64(text: &str) -> Result<(), Problem> {
    let invalid = |message: String| Err(Problem::new(ViolationCode::InvalidBase64, message));
    if text.starts_with("data:") {
        return invalid(
            "contentBase64 holds a data: URL; send only the base64 text and put the media type in mediaType"
                .to_owned(),
        );
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return invalid(format!(
            "contentBase64 is {} characters long; padded base64 is a multiple of 4",
            bytes.len()
        ));
    }
    let padding_starts = bytes.len() - bytes.iter().rev().take_while(|&&b| b == b'=').count();
    if bytes.len() - padding_starts > 2 {
        return invalid("contentBase64 ends in more than two '=' padding characters".to_owned());
    }
    if let Some(position) = bytes
        .iter()
        .take(padding_starts)
        .position(|&b| !(b.is_ascii_alphanumeric() || b == b'+' || b == b'/'))
    {
        return invalid(format!(
            "contentBase64 has a character outside the standard base64 alphabet at byte {position} \
             (whitespace, '-', '_' and '=' before the end are not allowed)"
        ));
    }
    Ok(())
}

/// A checked `type/subtype` media type such as `image/png`, without parameters, at most
/// 255 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(pattern = "^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$")
)]
pub struct MediaType(String);

impl MediaType {
    /// Checks and wraps a media type.
    pub fn new(text: impl Into<String>) -> Result<Self, Violation> {
        let text = text.into();
        check_media_type(&text).map_err(|problem| problem.at("mediaType"))?;
        Ok(MediaType(text))
    }

    /// The media type of an image the Responses API reads (PNG, JPEG, GIF, WebP), by
    /// its file name's extension, in any case: what a client that sends an image by
    /// its path alone means.
    ///
    /// ```
    /// use aptix_model::contract::MediaType;
    ///
    /// assert_eq!(MediaType::of_image("shots/Error.PNG"), Some("image/png"));
    /// assert_eq!(MediaType::of_image("notes.txt"), None);
    /// ```
    pub fn of_image(path: &str) -> Option<&'static str> {
        let (_, extension) = path.rsplit_once('.')?;
        Some(match extension.to_ascii_lowercase().as_str() {
            "png" => "image/png",
            "jpg" | "jpeg" => "image/jpeg",
            "gif" => "image/gif",
            "webp" => "image/webp",
            _ => return None,
        })
    }

    /// The image media type its first bytes say (`image/png`, `image/jpeg`,
    /// `image/gif`, `image/webp`), for what a file holds whatever its name; `None` for
    /// anything else.
    ///
    /// ```
    /// use aptix_model::contract::MediaType;
    ///
    /// assert_eq!(MediaType::of_image_bytes(b"\x89PNG\r\n\x1a\n"), Some("image/png"));
    /// assert_eq!(MediaType::of_image_bytes(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
    /// assert_eq!(MediaType::of_image_bytes(b"not an image"), None);
    /// ```
    pub fn of_image_bytes(bytes: &[u8]) -> Option<&'static str> {
        if bytes.starts_with(b"\x89PNG") {
            Some("image/png")
        } else if bytes.starts_with(b"\xff\xd8\xff") {
            Some("image/jpeg")
        } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
            Some("image/gif")
        } else if bytes.len() >= 12
            && bytes.starts_with(b"RIFF")
            && bytes.get(8..12) == Some(b"WEBP")
        {
            Some("image/webp")
        } else {
            None
        }
    }

    /// The media type as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the top-level type is `image` (in any case).
    pub fn is_image(&self) -> bool {
        is_image_media_type(&self.0)
    }
}

pub(crate) fn is_image_media_type(text: &str) -> bool {
    text.split_once('/')
        .is_some_and(|(kind, _)| kind.eq_ignore_ascii_case("image"))
}

/// Checks RFC 6838 `type/subtype` syntax (restricted-name characters on both sides).
pub(crate) fn check_media_type(text: &str) -> Result<(), Problem> {
    if text.len() > MAX_MEDIA_TYPE_BYTES {
        return Err(Problem::new(
            ViolationCode::TooLarge,
            format!(
                "mediaType is {} bytes; the limit is {MAX_MEDIA_TYPE_BYTES} bytes",
                text.len()
            ),
        ));
    }
    let restricted_name = |name: &str| {
        name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "!#$&-^_.+".contains(c))
    };
    match text.split_once('/') {
        Some((kind, subtype)) if restricted_name(kind) && restricted_name(subtype) => Ok(()),
        _ => Err(Problem::new(
            ViolationCode::InvalidMediaType,
            "mediaType must look like type/subtype, such as image/png or text/plain, without parameters",
        )),
    }
}

/// Serde for the checked newtypes: a plain JSON string, checked when decoded.
macro_rules! string_serde {
    ($name:ident) => {
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                $name::new(text).map_err(serde::de::Error::custom)
            }
        }
    };
}

string_serde!(Base64Data);
string_serde!(MediaType);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_standard_and_padded() {
        for good in ["", "AA==", "AAA=", "AAAA", "ab+/09Zz", "iVBORw0KGgo="] {
            assert!(Base64Data::new(good).is_ok(), "{good:?}");
        }
        for bad in [
            "A",
            "AA=",
            "A===",
            "AA=A",
            "AA AA==",
            "AA\nA",
            "ab-_",
            "data:image/png;base64,AAAA",
            "ÅÅ==",
        ] {
            let violation = Base64Data::new(bad).unwrap_err();
            assert_eq!(violation.code, ViolationCode::InvalidBase64, "{bad:?}");
        }
    }

    #[test]
    fn media_types_are_type_slash_subtype() {
        for good in [
            "image/png",
            "text/plain",
            "application/vnd.ms-excel",
            "IMAGE/JPEG",
        ] {
            assert!(MediaType::new(good).is_ok(), "{good:?}");
        }
        for bad in [
            "png",
            "image/",
            "/png",
            "text/plain; charset=utf-8",
            "a/b/c",
            "ima ge/x",
        ] {
            assert_eq!(
                MediaType::new(bad).unwrap_err().code,
                ViolationCode::InvalidMediaType,
                "{bad:?}"
            );
        }
        assert!(MediaType::new("IMAGE/JPEG").unwrap().is_image());
        assert!(!MediaType::new("text/plain").unwrap().is_image());
    }

    #[test]
    fn inputs_serialise_one_content_field() {
        let file = FileInput {
            path: RelativePath::new("a.md").unwrap(),
            source: FileSource::Text(String::new()),
            media_type: None,
        };
        assert_eq!(
            serde_json::to_value(&file).unwrap(),
            serde_json::json!({"path": "a.md", "content": ""})
        );
        let image = ImageInput {
            path: RelativePath::new("x.png").unwrap(),
            source: ImageSource::Base64(Base64Data::new("AAAA").unwrap()),
            media_type: Some(MediaType::new("image/png").unwrap()),
        };
        assert_eq!(
            serde_json::to_value(&image).unwrap(),
            serde_json::json!({"path": "x.png", "contentBase64": "AAAA", "mediaType": "image/png"})
        );
    }
}

//! The fields of a user turn (AGN-034 sections 2.1 and 4): instruction, file and image
//! inputs, RAG scope, workspace hints and the streaming preference.

use serde_json::Value;

use super::fields::{Fields, Shape, Stranger, no_strangers, read_object};
use super::{
    Checked, Checker, array, boolean, child, count_at_most, each, object, required, string, text,
};
use crate::contract::attachment::{
    Base64Data, FileInput, FileSource, ImageInput, ImageSource, MediaType, is_image_media_type,
};
use crate::contract::limits::{
    MAX_FILE_INPUTS, MAX_HINT_BYTES, MAX_IMAGE_INPUTS, MAX_INLINE_ATTACHMENT_BYTES,
    MAX_SCOPE_CONDITIONS, MAX_SCOPE_KEY_BYTES, MAX_SCOPE_VALUE_BYTES, MAX_SCOPE_VALUES,
    MAX_TOTAL_INLINE_BYTES,
};
use crate::contract::path::RelativePath;
use crate::contract::request::{RagScope, UserTurnRequest, WorkspaceHints};
use crate::contract::scope::{ScopeCondition, ScopeOperator};
use crate::contract::text::{Instruction, SessionId, TurnId, check_size, check_text};
use crate::contract::violation::ViolationCode;

/// A user turn's fields other than the ids.
pub(super) struct UserTurnParts {
    instruction: Option<Instruction>,
    files: Vec<FileInput>,
    images: Vec<ImageInput>,
    rag_scope: Option<RagScope>,
    hints: Option<WorkspaceHints>,
    stream: bool,
}

impl UserTurnParts {
    pub(super) fn with_ids(self, session_id: SessionId, turn_id: TurnId) -> UserTurnRequest {
        UserTurnRequest {
            session_id,
            turn_id,
            instruction: self.instruction,
            files: self.files,
            images: self.images,
            rag_scope: self.rag_scope,
            hints: self.hints,
            stream: self.stream,
        }
    }
}

pub(super) fn check(checker: &mut Checker, fields: &Fields<'_>) -> Checked<UserTurnParts> {
    let instruction = fields
        .get("instruction")
        .map(|value| text(checker, "instruction", value, Instruction::new))
        .transpose();
    let files = match fields.get("files") {
        Some(value) => check_files(checker, value),
        None => Ok(Vec::new()),
    };
    let images = match fields.get("images") {
        Some(value) => check_images(checker, value),
        None => Ok(Vec::new()),
    };
    if checker.inline_bytes > MAX_TOTAL_INLINE_BYTES {
        checker.at(
            "",
            ViolationCode::TooLarge,
            format!(
                "inline attachments total {} bytes; the limit is {MAX_TOTAL_INLINE_BYTES} bytes, \
                 so send some files as references (path only)",
                checker.inline_bytes
            ),
        );
    }
    let rag_scope = fields
        .get("ragScope")
        .map(|value| check_rag_scope(checker, value))
        .transpose();
    let hints = fields
        .get("hints")
        .map(|value| check_hints(checker, value))
        .transpose();
    let stream = fields
        .get("stream")
        .map(|value| boolean(checker, "stream", "stream", value))
        .transpose();

    // AGN-034 section 2.1: at least one input. A field that is present but malformed
    // already has its own violation, so only a request that tried nothing gets this one.
    let tried = |name: &str| {
        fields
            .get(name)
            .is_some_and(|value| value.as_array().is_none_or(|items| !items.is_empty()))
    };
    if !tried("instruction") && !tried("files") && !tried("images") {
        checker.at(
            "instruction",
            ViolationCode::MissingInput,
            "a user turn needs an instruction or at least one file or image input",
        );
    }

    Ok(UserTurnParts {
        instruction: instruction?,
        files: files?,
        images: images?,
        rag_scope: rag_scope?,
        hints: hints?,
        stream: stream?.unwrap_or(false),
    })
}

pub(super) const FILE: Shape = Shape {
    what: "a file input",
    fields: &["path", "content", "contentBase64", "mediaType"],
    stranger: no_strangers,
};

pub(super) const IMAGE: Shape = Shape {
    what: "an image input",
    fields: &["path", "contentBase64", "mediaType"],
    stranger: image_stranger,
};

fn image_stranger(key: &str) -> Option<Stranger> {
    (key == "content" || key == "Content").then(|| Stranger {
        name: "content",
        code: ViolationCode::UnknownField,
        message: "unknown field content in an image input; images carry bytes, so send them \
                  base64-encoded in contentBase64"
            .to_owned(),
    })
}

fn check_files(checker: &mut Checker, value: &Value) -> Checked<Vec<FileInput>> {
    let items = array(checker, "files", "files", value)?;
    count_at_most(checker, "files", items, MAX_FILE_INPUTS)?;
    each(checker, "files", items, check_file)
}

fn check_images(checker: &mut Checker, value: &Value) -> Checked<Vec<ImageInput>> {
    let items = array(checker, "images", "images", value)?;
    count_at_most(checker, "images", items, MAX_IMAGE_INPUTS)?;
    each(checker, "images", items, check_image)
}

fn check_file(checker: &mut Checker, path: &str, value: &Value) -> Checked<FileInput> {
    let object = object(checker, path, "each file input", value)?;
    let fields = read_object(checker, object, path, &FILE);
    let relative_path = check_path(checker, path, &fields);
    let content = fields
        .get("content")
        .map(|value| inline_text(checker, &child(path, "content"), value))
        .transpose();
    let base64 = fields
        .get("contentBase64")
        .map(|value| inline_base64(checker, &child(path, "contentBase64"), value))
        .transpose();
    let media_type = check_media_type(checker, path, &fields, false);
    if fields.get("content").is_some() && fields.get("contentBase64").is_some() {
        checker.at(
            path,
            ViolationCode::ConflictingContent,
            "a file input carries content (text) or contentBase64 (bytes), not both",
        );
    }
    let source = match (content?, base64?) {
        (None, None) => FileSource::Reference,
        (Some(text), None) => FileSource::Text(text),
        (None, Some(data)) => FileSource::Base64(data),
        (Some(_), Some(_)) => return Err(super::Reported),
    };
    Ok(FileInput {
        path: relative_path?,
        source,
        media_type: media_type?,
    })
}

fn check_image(checker: &mut Checker, path: &str, value: &Value) -> Checked<ImageInput> {
    let object = object(checker, path, "each image input", value)?;
    let fields = read_object(checker, object, path, &IMAGE);
    let relative_path = check_path(checker, path, &fields);
    let base64_path = child(path, "contentBase64");
    let base64 = fields
        .get("contentBase64")
        .map(|value| inline_base64(checker, &base64_path, value))
        .transpose()
        .and_then(|data| match data {
            Some(data) if data.is_empty() => Err(checker.at(
                &base64_path,
                ViolationCode::Empty,
                "contentBase64 of an image must not be empty; leave it out to refer to the path",
            )),
            data => Ok(data),
        });
    let media_type = check_media_type(checker, path, &fields, true);
    Ok(ImageInput {
        path: relative_path?,
        source: base64?.map_or(ImageSource::Reference, ImageSource::Base64),
        media_type: media_type?,
    })
}

fn check_path(checker: &mut Checker, parent: &str, fields: &Fields<'_>) -> Checked<RelativePath> {
    let path = child(parent, "path");
    let value = required(checker, &path, fields.get("path"))?;
    text(checker, &path, value, RelativePath::new)
}

fn inline_text(checker: &mut Checker, path: &str, value: &Value) -> Checked<String> {
    let text = string(checker, path, "content", value)?;
    checker.inline_bytes = checker.inline_bytes.saturating_add(text.len());
    check_size("content", text.len(), MAX_INLINE_ATTACHMENT_BYTES)
        .map_err(|problem| checker.problem(path, problem))?;
    Ok(text.to_owned())
}

fn inline_base64(checker: &mut Checker, path: &str, value: &Value) -> Checked<Base64Data> {
    let encoded = string(checker, path, "contentBase64", value)?;
    checker.inline_bytes = checker.inline_bytes.saturating_add(encoded.len());
    check_size("contentBase64", encoded.len(), MAX_INLINE_ATTACHMENT_BYTES)
        .map_err(|problem| checker.problem(path, problem))?;
    text(checker, path, value, Base64Data::new)
}

fn check_media_type(
    checker: &mut Checker,
    parent: &str,
    fields: &Fields<'_>,
    image: bool,
) -> Checked<Option<MediaType>> {
    let Some(value) = fields.get("mediaType") else {
        return Ok(None);
    };
    let path = child(parent, "mediaType");
    let media_type = text(checker, &path, value, MediaType::new)?;
    if image && !is_image_media_type(media_type.as_str()) {
        return Err(checker.at(
            &path,
            ViolationCode::InvalidMediaType,
            format!(
                "mediaType of an image must be image/..., not {}",
                media_type.as_str()
            ),
        ));
    }
    Ok(Some(media_type))
}

pub(super) const RAG_SCOPE: Shape = Shape {
    what: "ragScope",
    fields: &["conditions"],
    stranger: no_strangers,
};

pub(super) const CONDITION: Shape = Shape {
    what: "a scope condition",
    fields: &["key", "operator", "values"],
    stranger: no_strangers,
};

fn check_rag_scope(checker: &mut Checker, value: &Value) -> Checked<RagScope> {
    let object = object(checker, "ragScope", "ragScope", value)?;
    let fields = read_object(checker, object, "ragScope", &RAG_SCOPE);
    let Some(conditions) = fields.get("conditions") else {
        return Ok(RagScope::default());
    };
    let path = "ragScope.conditions";
    let items = array(checker, path, "conditions", conditions)?;
    count_at_most(checker, path, items, MAX_SCOPE_CONDITIONS)?;
    let conditions = each(checker, path, items, check_condition)?;
    Ok(RagScope { conditions })
}

fn check_condition(checker: &mut Checker, path: &str, value: &Value) -> Checked<ScopeCondition> {
    let object = object(checker, path, "each scope condition", value)?;
    let fields = read_object(checker, object, path, &CONDITION);

    let key_path = child(path, "key");
    let key = required(checker, &key_path, fields.get("key"))
        .and_then(|value| string(checker, &key_path, "key", value))
        .and_then(|key| {
            check_text("key", key, MAX_SCOPE_KEY_BYTES)
                .map(|()| key.to_owned())
                .map_err(|problem| checker.problem(&key_path, problem))
        });

    let operator_path = child(path, "operator");
    let operator = required(checker, &operator_path, fields.get("operator"))
        .and_then(|value| string(checker, &operator_path, "operator", value))
        .and_then(|text| {
            ScopeOperator::parse(text).ok_or_else(|| {
                checker.at(
                    &operator_path,
                    ViolationCode::UnknownOperator,
                    format!("operator {text:?} is not one of ==, !=, contains, does_not_contain"),
                )
            })
        });

    let values_path = child(path, "values");
    let values = required(checker, &values_path, fields.get("values"))
        .and_then(|value| array(checker, &values_path, "values", value))
        .and_then(|items| {
            if items.is_empty() {
                return Err(checker.at(
                    &values_path,
                    ViolationCode::Empty,
                    "values must list at least one value to compare with",
                ));
            }
            count_at_most(checker, &values_path, items, MAX_SCOPE_VALUES)?;
            each(checker, &values_path, items, check_scope_value)
        });

    Ok(ScopeCondition {
        key: key?,
        operator: operator?,
        values: values?,
    })
}

fn check_scope_value(checker: &mut Checker, path: &str, value: &Value) -> Checked<String> {
    let text = string(checker, path, "each scope value", value)?;
    check_size("a scope value", text.len(), MAX_SCOPE_VALUE_BYTES)
        .map_err(|problem| checker.problem(path, problem))?;
    Ok(text.to_owned())
}

pub(super) const HINTS: Shape = Shape {
    what: "hints",
    fields: &["workspaceId", "repository", "language"],
    stranger: no_strangers,
};

fn check_hints(checker: &mut Checker, value: &Value) -> Checked<WorkspaceHints> {
    let object = object(checker, "hints", "hints", value)?;
    let fields = read_object(checker, object, "hints", &HINTS);
    let mut hint = |name: &str| -> Checked<Option<String>> {
        let Some(value) = fields.get(name) else {
            return Ok(None);
        };
        let path = child("hints", name);
        let text = string(checker, &path, name, value)?;
        check_text(name, text, MAX_HINT_BYTES)
            .map_err(|problem| checker.problem(&path, problem))?;
        Ok(Some(text.to_owned()))
    };
    let workspace_id = hint("workspaceId");
    let repository = hint("repository");
    let language = hint("language");
    Ok(WorkspaceHints {
        workspace_id: workspace_id?,
        repository: repository?,
        language: language?,
    })
}

//! An ACP prompt as an AGN-034 user turn.
//!
//! Text blocks are the instruction, in order. A `resource_link` to a file is read (from
//! the editor when it serves files, so an unsaved buffer is what the model sees, else
//! from disk) and attached as a text file; an embedded `resource` is attached as it
//! came (text as text, an image blob as an image, any other blob as a base64 file); an
//! `image` block is attached as an image. Where a resource stood in the text, the
//! instruction names its path, so "explain @lib.rs" still reads as a sentence. The
//! orchestrator validates the turn like any client's.

use std::path::{Component, Path, PathBuf};

use agent_client_protocol::Error as RpcError;
use agent_client_protocol::v1::schema::{
    ContentBlock, EmbeddedResourceResource, ImageContent, ResourceLink,
};
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::contract::limits::MAX_INLINE_ATTACHMENT_BYTES;
use serde_json::{Value, json};

use crate::error::invalid_params;
use crate::tools::EditorReader;

/// What the blocks of one prompt add up to.
#[derive(Debug, Default)]
struct Turn {
    instruction: String,
    files: Vec<Value>,
    images: Vec<Value>,
}

/// The AGN-034 user turn for `blocks`.
pub(crate) async fn user_turn(
    session_id: &str,
    turn_id: &str,
    blocks: Vec<ContentBlock>,
    cwd: &Path,
    editor: Option<&EditorReader>,
) -> Result<AgentExecuteRequest, RpcError> {
    let mut turn = Turn::default();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => turn.instruction.push_str(&text.text),
            ContentBlock::ResourceLink(link) => link_file(&mut turn, &link, cwd, editor).await?,
            ContentBlock::Resource(resource) => match resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    let path = shown_path(&contents.uri, cwd, "resource.txt");
                    mention(&mut turn, &path);
                    turn.files
                        .push(json!({"path": path, "content": contents.text}));
                }
                EmbeddedResourceResource::BlobResourceContents(contents) => {
                    let path = shown_path(&contents.uri, cwd, "resource.bin");
                    mention(&mut turn, &path);
                    let media_type = contents
                        .mime_type
                        .unwrap_or_else(|| "application/octet-stream".to_owned());
                    let entry = json!({"path": path, "contentBase64": contents.blob, "mediaType": media_type});
                    if media_type.starts_with("image/") {
                        turn.images.push(entry);
                    } else {
                        turn.files.push(entry);
                    }
                }
                _ => return Err(invalid_params("an embedded resource of an unknown kind")),
            },
            ContentBlock::Image(image) => image_block(&mut turn, image, cwd),
            ContentBlock::Audio(_) => {
                return Err(invalid_params(
                    "audio is not supported (promptCapabilities.audio is false)",
                ));
            }
            _ => return Err(invalid_params("a content block of an unknown type")),
        }
    }
    let mut request = json!({"sessionId": session_id, "turnId": turn_id});
    if !turn.instruction.trim().is_empty() {
        request["instruction"] = Value::String(turn.instruction);
    }
    if !turn.files.is_empty() {
        request["files"] = Value::Array(turn.files);
    }
    if !turn.images.is_empty() {
        request["images"] = Value::Array(turn.images);
    }
    AgentExecuteRequest::from_json_value(&request)
        .map_err(|rejection| invalid_params(format!("the prompt is not a valid turn: {rejection}")))
}

/// Names an attachment in the instruction, where it stood among the text blocks.
fn mention(turn: &mut Turn, path: &str) {
    turn.instruction.push('`');
    turn.instruction.push_str(path);
    turn.instruction.push('`');
}

fn image_block(turn: &mut Turn, image: ImageContent, cwd: &Path) {
    let extension = image
        .mime_type
        .strip_prefix("image/")
        .map(|subtype| if subtype == "jpeg" { "jpg" } else { subtype })
        .unwrap_or("png");
    let fallback = format!("image-{}.{extension}", turn.images.len() + 1);
    let path = image
        .uri
        .as_deref()
        .map_or_else(|| fallback.clone(), |uri| shown_path(uri, cwd, &fallback));
    turn.images.push(json!({
        "path": path,
        "contentBase64": image.data,
        "mediaType": image.mime_type,
    }));
}

/// A `resource_link`: a `file:` link is read and attached; any other is named in the
/// instruction only (Aptix fetches nothing from the network).
async fn link_file(
    turn: &mut Turn,
    link: &ResourceLink,
    cwd: &Path,
    editor: Option<&EditorReader>,
) -> Result<(), RpcError> {
    let Some(absolute) = file_path(&link.uri) else {
        turn.instruction
            .push_str(&format!("[{}]({})", link.name, link.uri));
        return Ok(());
    };
    let path = shown_path(&link.uri, cwd, &link.name);
    mention(turn, &path);
    let text = match editor {
        Some(editor) => editor.read_text(&absolute).await.map_err(|message| {
            invalid_params(format!(
                "could not read the linked file {}: {message}",
                absolute.display()
            ))
        })?,
        None => read_from_disk(&absolute).await?,
    };
    if text.len() > MAX_INLINE_ATTACHMENT_BYTES {
        return Err(invalid_params(format!(
            "the linked file {} is larger than the {} MiB an attachment may be",
            absolute.display(),
            MAX_INLINE_ATTACHMENT_BYTES / (1024 * 1024)
        )));
    }
    turn.files.push(json!({"path": path, "content": text}));
    Ok(())
}

async fn read_from_disk(absolute: &Path) -> Result<String, RpcError> {
    let unreadable = |error: &dyn std::fmt::Display| {
        invalid_params(format!(
            "could not read the linked file {}: {error}",
            absolute.display()
        ))
    };
    let metadata = tokio::fs::metadata(absolute)
        .await
        .map_err(|error| unreadable(&error))?;
    if metadata.len() > u64::try_from(MAX_INLINE_ATTACHMENT_BYTES).unwrap_or(u64::MAX) {
        return Err(invalid_params(format!(
            "the linked file {} is larger than the {} MiB an attachment may be",
            absolute.display(),
            MAX_INLINE_ATTACHMENT_BYTES / (1024 * 1024)
        )));
    }
    let bytes = tokio::fs::read(absolute)
        .await
        .map_err(|error| unreadable(&error))?;
    String::from_utf8(bytes).map_err(|_| {
        invalid_params(format!(
            "the linked file {} is not UTF-8 text; attach an image as an image block",
            absolute.display()
        ))
    })
}

/// The local path of a `file:` URI (percent-escapes decoded, any `#fragment` or
/// `?query` dropped); `None` for any other scheme or a relative path.
fn file_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file://localhost/path` and `file:///path` name the same file.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let end = rest.find(['#', '?']).unwrap_or(rest.len());
    let decoded = percent_decode(rest.get(..end)?)?;
    let path = PathBuf::from(decoded);
    path.is_absolute().then_some(path)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        if byte == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(byte);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The path an attachment is shown under (AGN-034 paths are relative): relative to the
/// workspace when the URI names a file inside it, else its file name, else `fallback`.
fn shown_path(uri: &str, cwd: &Path, fallback: &str) -> String {
    let Some(absolute) = file_path(uri) else {
        return last_segment(uri).unwrap_or_else(|| fallback.to_owned());
    };
    let relative = absolute.strip_prefix(cwd).ok().filter(|relative| {
        !relative.as_os_str().is_empty()
            && relative
                .components()
                .all(|part| matches!(part, Component::Normal(_)))
    });
    match relative {
        Some(relative) => relative
            .components()
            .map(|part| part.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/"),
        None => absolute
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_else(|| fallback.to_owned()),
    }
}

/// The last path segment of a URI that is not a file link, when it looks like a name.
fn last_segment(uri: &str) -> Option<String> {
    let end = uri.find(['#', '?']).unwrap_or(uri.len());
    let segment = uri.get(..end)?.rsplit('/').next()?;
    let name = percent_decode(segment)?;
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['\\', ':'])
        && !name.starts_with('.');
    plain.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        BlobResourceContents, EmbeddedResource, TextContent, TextResourceContents,
    };

    fn run(blocks: Vec<ContentBlock>, cwd: &Path) -> Result<Value, RpcError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(user_turn("s-1", "t-1", blocks, cwd, None))
            .map(|request| serde_json::to_value(&request).unwrap())
    }

    #[test]
    fn text_links_and_resources_become_the_instruction_and_attachments() {
        let dir = tempfile_dir();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "pub fn main() {}\n").unwrap();
        let link = format!("file://{}", dir.join("src/lib.rs").display());
        let request = run(
            vec![
                ContentBlock::Text(TextContent::new("Explain ")),
                ContentBlock::ResourceLink(ResourceLink::new("lib.rs", link)),
                ContentBlock::Text(TextContent::new(" and ")),
                ContentBlock::Resource(EmbeddedResource::new(
                    EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                        "unsaved text",
                        format!("file://{}", dir.join("notes%20v2.md").display()),
                    )),
                )),
                ContentBlock::Resource(EmbeddedResource::new(
                    EmbeddedResourceResource::BlobResourceContents(
                        BlobResourceContents::new("iVBORw0K", "file:///elsewhere/shot.png")
                            .mime_type("image/png".to_owned()),
                    ),
                )),
            ],
            &dir,
        )
        .unwrap();
        assert_eq!(
            request["instruction"],
            "Explain `src/lib.rs` and `notes v2.md``shot.png`"
        );
        assert_eq!(request["files"][0]["path"], "src/lib.rs");
        assert_eq!(request["files"][0]["content"], "pub fn main() {}\n");
        assert_eq!(request["files"][1]["content"], "unsaved text");
        assert_eq!(request["images"][0]["path"], "shot.png");
        assert_eq!(request["images"][0]["mediaType"], "image/png");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn audio_and_unreadable_links_are_refused_with_a_reason() {
        let dir = tempfile_dir();
        let error = run(
            vec![ContentBlock::ResourceLink(ResourceLink::new(
                "gone.rs",
                format!("file://{}", dir.join("gone.rs").display()),
            ))],
            &dir,
        )
        .unwrap_err();
        assert!(
            error.message.contains("could not read the linked file"),
            "{error:?}"
        );
        let error = run(vec![ContentBlock::Text(TextContent::new("   "))], &dir).unwrap_err();
        assert!(error.message.contains("not a valid turn"), "{error:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_absolute_file_uris_are_paths() {
        assert_eq!(
            file_path("file:///a/b%20c.rs#L3"),
            Some(PathBuf::from("/a/b c.rs"))
        );
        assert_eq!(file_path("file://localhost/x"), Some(PathBuf::from("/x")));
        assert_eq!(file_path("https://example.invalid/x"), None);
        assert_eq!(file_path("file://relative"), None);
        assert_eq!(
            shown_path("https://h/a/b.md?x", Path::new("/w"), "f"),
            "b.md"
        );
        assert_eq!(shown_path("zed://", Path::new("/w"), "f"), "f");
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "aptix-acp-prompt-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

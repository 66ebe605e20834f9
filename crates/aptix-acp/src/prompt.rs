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
    /// The instruction ends with a mention or a link (text that follows is spaced).
    after_mention: bool,
    files: Vec<Value>,
    images: Vec<Value>,
    /// Each attachment's shown path and the URI it came from.
    uris: Vec<(String, String)>,
    /// What the user is told about their links (one not attached, and why): a link that
    /// cannot be attached is named in the question, not a reason to refuse the prompt.
    notes: Vec<String>,
}

impl Turn {
    /// The name an attachment from `uri` is already attached under (one file, or one
    /// selection, given twice): it is mentioned again, not sent twice.
    fn attached(&self, uri: &str) -> Option<String> {
        self.uris
            .iter()
            .find(|(_, from)| from == uri)
            .map(|(shown, _)| shown.clone())
    }

    /// `path`, or when an attachment of another file is shown under it already (two
    /// `lib.rs` of two folders outside the workspace), the same with the folders of its
    /// own file before it (`b/lib.rs`), else a number: two attachments under one name
    /// were taken for one, and the second left out.
    fn unique(&mut self, path: String, uri: &str) -> String {
        let taken = |turn: &Turn, candidate: &str| {
            turn.files
                .iter()
                .chain(&turn.images)
                .any(|entry| entry["path"].as_str() == Some(candidate))
        };
        let mut chosen = path.clone();
        if taken(self, &path) {
            let (name, lines) = match path.rsplit_once("#L") {
                Some((name, lines)) => (name.to_owned(), format!("#L{lines}")),
                None => (path.clone(), String::new()),
            };
            // The file's own path, from its last part back: each candidate ends with
            // the shown name's parts, so no folder is put in twice.
            let parts: Vec<String> = file_path(uri)
                .map(|absolute| {
                    absolute
                        .components()
                        .filter_map(|part| match part {
                            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let shown_parts = name.split('/').count();
            let longer = (shown_parts + 1..=parts.len())
                .map(|count| format!("{}{lines}", parts[parts.len() - count..].join("/")))
                .find(|candidate| !taken(self, candidate));
            chosen = longer
                .or_else(|| {
                    (2..)
                        .map(|n| format!("{n}-{name}{lines}"))
                        .find(|candidate| !taken(self, candidate))
                })
                .unwrap_or(path);
        }
        self.uris.push((chosen.clone(), uri.to_owned()));
        chosen
    }
}

/// The AGN-034 user turn for `blocks`, and what the user is told about their links.
pub(crate) async fn user_turn(
    session_id: &str,
    turn_id: &str,
    blocks: Vec<ContentBlock>,
    cwd: &Path,
    editor: Option<&EditorReader>,
) -> Result<(AgentExecuteRequest, Vec<String>), RpcError> {
    let mut turn = Turn::default();
    for block in blocks {
        match block {
            ContentBlock::Text(text) => turn.text(&text.text),
            ContentBlock::ResourceLink(link) => link_file(&mut turn, &link, cwd, editor).await?,
            ContentBlock::Resource(resource) => match resource.resource {
                EmbeddedResourceResource::TextResourceContents(contents) => {
                    // An editor's selection: its lines, and where they start.
                    let path = format!(
                        "{}{}",
                        shown_path(&contents.uri, cwd, "resource.txt"),
                        lines_of(&contents.uri)
                            .map_or_else(String::new, |(a, b)| format!("#L{a}-{b}"))
                    );
                    if let Some(shown) = turn.attached(&contents.uri) {
                        mention(&mut turn, &shown);
                        continue;
                    }
                    let path = turn.unique(path, &contents.uri);
                    mention(&mut turn, &path);
                    turn.files
                        .push(json!({"path": path, "content": contents.text}));
                }
                EmbeddedResourceResource::BlobResourceContents(contents) => {
                    let path = shown_path(&contents.uri, cwd, "resource.bin");
                    if let Some(shown) = turn.attached(&contents.uri) {
                        mention(&mut turn, &shown);
                        continue;
                    }
                    let path = turn.unique(path, &contents.uri);
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
    // The one limit an editor's user meets by pasting (a long log): said in their terms.
    let limit = aptix_model::contract::limits::MAX_INSTRUCTION_BYTES;
    if turn.instruction.len() > limit {
        return Err(invalid_params(format!(
            "the prompt's text is {} KiB, over the {} KiB a prompt's text may hold: attach a \
             long text as a file (mention it, or add it as context) rather than pasting it",
            turn.instruction.len().div_ceil(1024),
            limit / 1024
        )));
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
        .map(|request| (request, turn.notes))
        .map_err(|rejection| invalid_params(format!("the prompt is not a valid turn: {rejection}")))
}

/// Names an attachment in the instruction, where it stood among the text blocks.
fn mention(turn: &mut Turn, path: &str) {
    turn.mention(&format!("`{path}`"));
}

impl Turn {
    /// A text block: joined to text as it is (a client may split one message into
    /// blocks anywhere), spaced from a mention before it.
    fn text(&mut self, text: &str) {
        if self.after_mention {
            spaced(&mut self.instruction, text);
        } else {
            self.instruction.push_str(text);
        }
        self.after_mention = false;
    }

    /// A mention or a link, spaced from what it follows.
    fn mention(&mut self, shown: &str) {
        spaced(&mut self.instruction, shown);
        self.after_mention = true;
    }
}

/// `piece` after the instruction so far, with a space between a mention and the text
/// around it when neither side has one: an editor may send the blocks of `explain`, a
/// link, `please` without them. None before closing punctuation or a quote, after an
/// opening bracket or quote, nor beside text written without spaces (Chinese,
/// Japanese).
fn spaced(instruction: &mut String, piece: &str) {
    let unspaced = |c: char| matches!(c, '\u{3000}'..='\u{30FF}' | '\u{3400}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}' | '\u{FF00}'..='\u{FFEF}');
    let open_end = instruction
        .chars()
        .next_back()
        .is_some_and(|last| !last.is_whitespace() && !"([{\"'/-".contains(last) && !unspaced(last));
    let open_start = piece.chars().next().is_some_and(|first| {
        !first.is_whitespace() && !".,;:!?)]}\"'/-…".contains(first) && !unspaced(first)
    });
    if open_end && open_start {
        instruction.push(' ');
    }
    instruction.push_str(piece);
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
/// instruction only (Aptix fetches nothing from the network). A file link that cannot be
/// attached (a folder, a file that is not text, one whose name says it holds secrets,
/// lines past its end, a file that does not read) is named in the question and told
/// to the user as a note; the prompt goes on.
async fn link_file(
    turn: &mut Turn,
    link: &ResourceLink,
    cwd: &Path,
    editor: Option<&EditorReader>,
) -> Result<(), RpcError> {
    let Some(absolute) = file_path(&link.uri) else {
        turn.mention(&format!("[{}]({})", link.name, link.uri));
        return Ok(());
    };
    let file = shown_path(&link.uri, cwd, &link.name);
    let range = lines_of(&link.uri);
    let path = match range {
        Some((first, last)) => format!("{file}#L{first}-{last}"),
        None => file.clone(),
    };
    if let Some(shown) = turn.attached(&link.uri) {
        // The same file (or lines) linked again: named again, sent once.
        mention(turn, &shown);
        return Ok(());
    }
    let path = turn.unique(path, &link.uri);
    mention(turn, &path);
    let mut not_attached = |why: String| {
        turn.notes.push(format!(
            "`{path}` is named in the question but not attached: {why}"
        ));
    };
    // The rule the index and the tools follow, on the path the file is shown under (in
    // the workspace, every folder of it; outside, its name).
    if aptix_index::is_secret_path(&file) {
        not_attached(
            "its name says it may hold secrets (keys, tokens, credentials), which Aptix never sends"
                .to_owned(),
        );
        return Ok(());
    }
    if absolute.is_dir() {
        not_attached("it is a folder (the model can list it with list_files)".to_owned());
        return Ok(());
    }
    let read = match editor {
        Some(editor) => editor
            .read_text(&absolute)
            .await
            .map_err(|message| format!("the editor could not read it: {message}")),
        None => read_from_disk(&absolute).await,
    };
    let text = match read {
        Ok(text) if text.len() > MAX_INLINE_ATTACHMENT_BYTES => {
            not_attached(format!(
                "it is larger than the {} MiB an attachment may be",
                MAX_INLINE_ATTACHMENT_BYTES / (1024 * 1024)
            ));
            return Ok(());
        }
        Ok(text) => text,
        Err(why) => {
            not_attached(why);
            return Ok(());
        }
    };
    // A link to lines (`file:///…/lib.rs#L10-20`, a symbol's @-mention) attaches those
    // lines, shown at their numbers; a link to a file, the whole file.
    let text = match range {
        Some((first, last)) => {
            let total = text.lines().count();
            if usize::try_from(first).is_ok_and(|first| first > total) {
                not_attached(format!(
                    "the file has {total} lines, none of them {first} or after"
                ));
                return Ok(());
            }
            text.lines()
                .skip(usize::try_from(first - 1).unwrap_or(usize::MAX))
                .take(usize::try_from(last - first + 1).unwrap_or(usize::MAX))
                .collect::<Vec<_>>()
                .join("\n")
        }
        None => text,
    };
    if absolute.strip_prefix(cwd).is_err() {
        turn.notes.push(format!(
            "`{}` is outside the workspace: attached as `{path}`",
            absolute.display()
        ));
    }
    turn.files.push(json!({"path": path, "content": text}));
    Ok(())
}

/// The lines a `file:` URI's fragment names, as editors write them: `#L10`, `#L10-20`,
/// `#L10:20` (Zed), `#L10-L20` (GitHub); `None` for any other URI or a range that is
/// not one (`#L0`, `#L9-3`).
fn lines_of(uri: &str) -> Option<(u32, u32)> {
    let (_, fragment) = uri.split_once('#')?;
    let lines = fragment.strip_prefix('L')?;
    let (first, last) = match lines.split_once(['-', ':']) {
        Some((first, last)) => (first, last.strip_prefix('L').unwrap_or(last)),
        None => (lines, lines),
    };
    let first: u32 = first.parse().ok()?;
    let last: u32 = last.parse().ok()?;
    (first >= 1 && last >= first).then_some((first, last))
}

/// The text of the file at `absolute`, or why it cannot be attached.
async fn read_from_disk(absolute: &Path) -> Result<String, String> {
    let metadata = tokio::fs::metadata(absolute)
        .await
        .map_err(|error| format!("it could not be read ({error})"))?;
    if metadata.len() > u64::try_from(MAX_INLINE_ATTACHMENT_BYTES).unwrap_or(u64::MAX) {
        return Err(format!(
            "it is larger than the {} MiB an attachment may be",
            MAX_INLINE_ATTACHMENT_BYTES / (1024 * 1024)
        ));
    }
    let bytes = tokio::fs::read(absolute)
        .await
        .map_err(|error| format!("it could not be read ({error})"))?;
    aptix_index::file_text(&bytes)
        .map(std::borrow::Cow::into_owned)
        .ok_or_else(|| "it is not text (attach an image as an image block)".to_owned())
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
        run_noted(blocks, cwd).map(|(request, _)| request)
    }

    /// The turn's request, and what the user is told about their links.
    fn run_noted(blocks: Vec<ContentBlock>, cwd: &Path) -> Result<(Value, Vec<String>), RpcError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime
            .block_on(user_turn("s-1", "t-1", blocks, cwd, None))
            .map(|(request, notes)| (serde_json::to_value(&request).unwrap(), notes))
    }

    #[test]
    fn text_links_and_resources_become_the_instruction_and_attachments() {
        let (_dir, dir) = tempfile_dir();
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
            "Explain `src/lib.rs` and `notes v2.md` `shot.png`"
        );
        assert_eq!(request["files"][0]["path"], "src/lib.rs");
        assert_eq!(request["files"][0]["content"], "pub fn main() {}\n");
        assert_eq!(request["files"][1]["content"], "unsaved text");
        assert_eq!(request["images"][0]["path"], "shot.png");
        assert_eq!(request["images"][0]["mediaType"], "image/png");
    }

    #[test]
    fn blocks_sent_without_spaces_around_a_mention_are_words_apart() {
        let (_dir, dir) = tempfile_dir();
        std::fs::write(dir.join("a.rs"), "fn a() {}\n").unwrap();
        let link = format!("file://{}", dir.join("a.rs").display());
        let text = |text: &str| ContentBlock::Text(TextContent::new(text));
        let request = run(
            vec![
                text("explain"),
                ContentBlock::ResourceLink(ResourceLink::new("a.rs", link.clone())),
                text("and"),
                ContentBlock::ResourceLink(ResourceLink::new("a", "https://example.com/a")),
                text(", then ("),
                ContentBlock::ResourceLink(ResourceLink::new("a.rs", link)),
                text(")."),
            ],
            &dir,
        )
        .unwrap();
        assert_eq!(
            request["instruction"],
            "explain `a.rs` and [a](https://example.com/a), then (`a.rs`)."
        );
        // Text split into blocks anywhere is joined as sent; quotes, possessives and
        // text written without spaces keep their mention close.
        let request = run(
            vec![
                text("expl"),
                text("ain \""),
                ContentBlock::ResourceLink(ResourceLink::new("a", "https://example.com/a")),
                text("\" and "),
                ContentBlock::ResourceLink(ResourceLink::new("a", "https://example.com/a")),
                text("'s parts; 解释"),
                ContentBlock::ResourceLink(ResourceLink::new("a", "https://example.com/a")),
                text("的"),
            ],
            &dir,
        )
        .unwrap();
        assert_eq!(
            request["instruction"],
            "explain \"[a](https://example.com/a)\" and [a](https://example.com/a)'s parts; 解释[a](https://example.com/a)的"
        );
    }

    #[test]
    fn links_that_cannot_be_attached_are_named_and_told_and_empty_prompts_refused() {
        let (_dir, dir) = tempfile_dir();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join(".env"), "SECRET=shh\n").unwrap();
        std::fs::write(dir.join("blob.bin"), [0xff, 0xfe, 0x00]).unwrap();
        std::fs::write(dir.join("five.txt"), "1\n2\n3\n4\n5\n").unwrap();
        let (_outside, outside) = tempfile_dir();
        std::fs::write(outside.join("notes.md"), "outside text\n").unwrap();
        let link = |path: PathBuf, fragment: &str| {
            ContentBlock::ResourceLink(ResourceLink::new(
                "link",
                format!("file://{}{fragment}", path.display()),
            ))
        };
        let (request, notes) = run_noted(
            vec![
                ContentBlock::Text(TextContent::new("Look at")),
                link(dir.join("gone.rs"), ""),
                link(dir.join("src"), ""),
                link(dir.join(".env"), ""),
                link(dir.join("blob.bin"), ""),
                link(dir.join("five.txt"), "#L100"),
                link(outside.join("notes.md"), ""),
            ],
            &dir,
        )
        .unwrap();
        let told = |path: &str, why: &str| {
            assert!(
                notes.iter().any(|note| note.starts_with(&format!(
                    "`{path}` is named in the question but not attached: "
                )) && note.contains(why)),
                "{path}: {notes:#?}"
            );
        };
        told("gone.rs", "could not be read");
        told("src", "folder");
        told(".env", "may hold secrets");
        told("blob.bin", "not text");
        told("five.txt#L100-100", "the file has 5 lines");
        assert!(
            notes
                .iter()
                .any(|note| note.contains("is outside the workspace: attached as `notes.md`")),
            "{notes:#?}"
        );
        // Every link is named where it stood; only the one that reads is attached.
        let instruction = request["instruction"].as_str().unwrap();
        for named in [
            "`gone.rs`",
            "`src`",
            "`.env`",
            "`blob.bin`",
            "`five.txt#L100-100`",
            "`notes.md`",
        ] {
            assert!(instruction.contains(named), "{named}: {instruction}");
        }
        assert_eq!(request["files"].as_array().unwrap().len(), 1, "{request:#}");
        assert_eq!(request["files"][0]["content"], "outside text\n");
        assert!(!request.to_string().contains("SECRET=shh"));
        let error = run(vec![ContentBlock::Text(TextContent::new("   "))], &dir).unwrap_err();
        assert!(error.message.contains("not a valid turn"), "{error:?}");
        // Pasted text over the instruction's limit: said in the user's terms.
        let pasted = "log line\n".repeat(200_000);
        let error = run(vec![ContentBlock::Text(TextContent::new(pasted))], &dir).unwrap_err();
        assert!(
            error
                .message
                .starts_with("the prompt's text is 1758 KiB, over the 1024 KiB"),
            "{error:?}"
        );
        assert!(
            error.message.contains("attach a long text as a file"),
            "{error:?}"
        );
        let _ = std::fs::remove_dir_all(&outside);
    }

    #[test]
    fn selections_keep_their_lines_and_two_files_of_one_name_stay_two() {
        // Found by a review: two selections of one file were taken for one (the second
        // left out), two lib.rs of two folders likewise, and a selection's lines were
        // shown as 1-2.
        let (_dir, dir) = tempfile_dir();
        let five = dir.join("five.txt");
        std::fs::write(&five, "line1\nline2\nline3\nline4\nline5\n").unwrap();
        for folder in ["a", "b"] {
            std::fs::create_dir_all(dir.join("out").join(folder)).unwrap();
            std::fs::write(dir.join("out").join(folder).join("lib.rs"), folder).unwrap();
        }
        let workspace = dir.join("ws");
        std::fs::create_dir_all(&workspace).unwrap();
        let selection = |uri: String, text: &str| {
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    text, uri,
                )),
            ))
        };
        let five_uri = format!("file://{}", five.display());
        let request = run(
            vec![
                ContentBlock::Text(TextContent::new("Compare")),
                selection(format!("{five_uri}#L3:4"), "line3\nline4"),
                selection(format!("{five_uri}#L5"), "line5"),
                ContentBlock::ResourceLink(ResourceLink::new(
                    "lib.rs",
                    format!("file://{}", dir.join("out/a/lib.rs").display()),
                )),
                ContentBlock::ResourceLink(ResourceLink::new(
                    "lib.rs",
                    format!("file://{}", dir.join("out/b/lib.rs").display()),
                )),
                ContentBlock::ResourceLink(ResourceLink::new(
                    "five.txt",
                    format!("{five_uri}#L2-L2"),
                )),
            ],
            &workspace,
        )
        .unwrap();
        let paths: Vec<&str> = request["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|file| file["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                "five.txt#L3-4",
                "five.txt#L5-5",
                "lib.rs",
                "b/lib.rs",
                "five.txt#L2-2"
            ]
        );
        assert_eq!(request["files"][3]["content"], "b");
        // A link to lines attaches those lines.
        assert_eq!(request["files"][4]["content"], "line2");
        assert_eq!(
            request["instruction"],
            "Compare `five.txt#L3-4` `five.txt#L5-5` `lib.rs` `b/lib.rs` `five.txt#L2-2`"
        );
        assert_eq!(lines_of("file:///x#L9-3"), None);
        assert_eq!(lines_of("file:///x#L0"), None);
        assert_eq!(lines_of("file:///x#heading"), None);
    }

    #[test]
    fn one_file_given_twice_is_sent_once_under_its_own_path() {
        // It was sent twice, the second time as `src/src/lib.rs`, a path that does not
        // exist (found in review).
        let (_dir, dir) = tempfile_dir();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/lib.rs"), "pub fn f() {}\n").unwrap();
        let link = || {
            ContentBlock::ResourceLink(ResourceLink::new(
                "lib.rs",
                format!("file://{}", dir.join("src/lib.rs").display()),
            ))
        };
        let request = run(
            vec![
                ContentBlock::Text(TextContent::new("Compare")),
                link(),
                ContentBlock::Text(TextContent::new(" with")),
                link(),
            ],
            &dir,
        )
        .unwrap();
        assert_eq!(request["files"].as_array().unwrap().len(), 1, "{request}");
        assert_eq!(request["files"][0]["path"], "src/lib.rs");
        assert_eq!(
            request["instruction"],
            "Compare `src/lib.rs` with `src/lib.rs`"
        );
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

    /// A directory removed when the guard drops, even when the test fails before its end.
    fn tempfile_dir() -> (tempfile::TempDir, PathBuf) {
        let guard = tempfile::Builder::new()
            .prefix("aptix-acp-prompt")
            .tempdir()
            .unwrap();
        let dir = guard.path().to_path_buf();
        (guard, dir)
    }
}

//! A user turn's file and image inputs (AGN-034 section 4.2), turned into what the
//! model can read: inline text files become AGN-002 chunks in the `[CONTEXT]` block,
//! binary files and images become `input_file` / `input_image` parts of the user
//! message. References (a path without content) are read through the configured
//! [`ReferenceReader`] (the orchestrator itself does no file I/O: a front end gives it
//! one over its workspace); without one, or when one cannot be read, each is a warning.

use std::borrow::Cow;

use aptix_model::contract::{
    Base64Data, FileInput, FileSource, ImageInput, ImageSource, MediaType,
};
use aptix_model::wire::{ContentPart, InputFile, InputImage};
use aptix_rag::{Chunk, ChunkId, LineSpan, ScoredChunk, language_for_path};
use async_trait::async_trait;

/// What a [`ReferenceReader`] found at a workspace path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReferencedFile {
    /// UTF-8 text, with what has the shape of a credential already redacted.
    Text(String),
    /// Anything else (an image, a PDF): its bytes.
    Bytes(Vec<u8>),
}

/// Reads the workspace files a user turn names by reference: a file or image input with
/// a path and no content (AGN-034 section 4.2: inputs "may be references or inline
/// attachments"). A front end that has a workspace gives one to
/// [`OrchestratorBuilder::reference_reader`](crate::OrchestratorBuilder::reference_reader);
/// it keeps to the workspace's rules (inside it, not ignored, not a secret).
#[async_trait]
pub trait ReferenceReader: Send + Sync {
    /// The file at `path` (workspace-relative, `/`-separated, as the client sent it), or
    /// why it cannot be read, in words for the turn's warning ("no such file", "may
    /// hold secrets").
    async fn read_reference(&self, path: &str) -> Result<ReferencedFile, String>;
}

/// The inputs of a turn with their references read: each becomes inline text (a
/// `#Lstart-end` selection cut to those lines) or bytes; one that cannot be read is
/// left out with a warning. Without a reader, or without references, the inputs as
/// they came (`prepare_inputs` warns of the references).
pub(crate) async fn read_references<'a>(
    reader: Option<&dyn ReferenceReader>,
    files: &'a [FileInput],
    images: &'a [ImageInput],
    warnings: &mut Vec<String>,
) -> (Cow<'a, [FileInput]>, Cow<'a, [ImageInput]>) {
    let Some(reader) = reader else {
        return (Cow::Borrowed(files), Cow::Borrowed(images));
    };
    let files = if files
        .iter()
        .any(|f| matches!(f.source, FileSource::Reference))
    {
        let mut read = Vec::with_capacity(files.len());
        for file in files {
            if !matches!(file.source, FileSource::Reference) {
                read.push(file.clone());
                continue;
            }
            let path = file.path.as_str();
            let (name, first, last) = selection_range(path);
            if (first, last) == (1, None) && is_bad_selection(path) {
                warnings.push(format!(
                    "file reference {path} was not read: its `#L` part is not a line range \
                     (lines count from 1: `#L12` or `#L12-20`, the end not before the start)"
                ));
                continue;
            }
            match reader.read_reference(name).await {
                Ok(ReferencedFile::Text(text)) => {
                    let text = if (first, last) == (1, None) {
                        text
                    } else {
                        let lines = text.split_inclusive('\n').count();
                        if usize::try_from(first).unwrap_or(usize::MAX) > lines {
                            // An empty chunk labelled with lines the file does not have
                            // would tell the model nothing, and the user less.
                            warnings.push(format!(
                                "file reference {path} was not used: {name} has {lines} line{}",
                                if lines == 1 { "" } else { "s" }
                            ));
                            continue;
                        }
                        lines_of(&text, first, last)
                    };
                    read.push(FileInput {
                        source: FileSource::Text(text),
                        ..file.clone()
                    });
                }
                Ok(ReferencedFile::Bytes(bytes)) => {
                    let media = file
                        .media_type
                        .clone()
                        .or_else(|| media_type_of(name).and_then(|m| MediaType::new(m).ok()));
                    match Base64Data::new(encode(&bytes)) {
                        Ok(data) => read.push(FileInput {
                            source: FileSource::Base64(data),
                            media_type: media,
                            ..file.clone()
                        }),
                        Err(error) => warnings.push(format!(
                            "file reference {path} was not used: {}",
                            error.message
                        )),
                    }
                }
                Err(why) => warnings.push(format!("file reference {path} was not read: {why}")),
            }
        }
        Cow::Owned(read)
    } else {
        Cow::Borrowed(files)
    };
    let images = if images
        .iter()
        .any(|i| matches!(i.source, ImageSource::Reference))
    {
        let mut read = Vec::with_capacity(images.len());
        for image in images {
            if !matches!(image.source, ImageSource::Reference) {
                read.push(image.clone());
                continue;
            }
            let path = image.path.as_str();
            let media = image
                .media_type
                .clone()
                .or_else(|| MediaType::of_image(path).and_then(|m| MediaType::new(m).ok()));
            let Some(media) = media else {
                warnings.push(format!(
                    "image reference {path} was not read: not a PNG, JPEG, GIF or WebP file by its name; send its mediaType"
                ));
                continue;
            };
            let bytes = match reader.read_reference(path).await {
                Ok(ReferencedFile::Bytes(bytes)) => bytes,
                Ok(ReferencedFile::Text(_)) => {
                    warnings.push(format!(
                        "image reference {path} was not read: it is text, not an image"
                    ));
                    continue;
                }
                Err(why) => {
                    warnings.push(format!("image reference {path} was not read: {why}"));
                    continue;
                }
            };
            match Base64Data::new(encode(&bytes)) {
                Ok(data) => read.push(ImageInput {
                    source: ImageSource::Base64(data),
                    media_type: Some(media),
                    ..image.clone()
                }),
                Err(error) => warnings.push(format!(
                    "image reference {path} was not used: {}",
                    error.message
                )),
            }
        }
        Cow::Owned(read)
    } else {
        Cow::Borrowed(images)
    };
    (files, images)
}

fn encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Lines `first..=last` (from 1; `None`: to the end) of `text`.
fn lines_of(text: &str, first: u32, last: Option<u32>) -> String {
    let skip = usize::try_from(first.saturating_sub(1)).unwrap_or(usize::MAX);
    let take = last.map_or(usize::MAX, |last| {
        usize::try_from(last.saturating_sub(first) + 1).unwrap_or(usize::MAX)
    });
    let mut out = String::new();
    for line in text.split_inclusive('\n').skip(skip).take(take) {
        out.push_str(line);
    }
    out
}

/// The media type of a binary file by its name's extension, where the Responses API
/// reads it (PDFs) or it is an image.
fn media_type_of(path: &str) -> Option<&'static str> {
    if path.to_ascii_lowercase().ends_with(".pdf") {
        return Some("application/pdf");
    }
    MediaType::of_image(path)
}

/// What the inputs contribute to the request.
#[derive(Debug, Default)]
pub(crate) struct PreparedInputs {
    /// Inline text files, as chunks shown before retrieved ones.
    pub chunks: Vec<ScoredChunk>,
    /// Parts appended to the user message.
    pub parts: Vec<ContentPart>,
    /// Inputs that could not be used, and why.
    pub warnings: Vec<String>,
}

/// A file input's path and the line its text starts at: `src/a.rs#L12-20` (GitHub's
/// form, which an editor's selection is sent as) is lines 12 on of `src/a.rs`; any other
/// path is the whole file, from line 1. The end is the text's own.
fn selection(path: &str) -> (&str, u32) {
    let (file, first, _) = selection_range(path);
    (file, first)
}

/// A path's file and the lines it selects: `src/a.rs#L12-20` is lines 12 to 20 of
/// `src/a.rs`, `src/a.rs#L7` line 7; any other path is the whole file (`1`, `None`).
fn selection_range(path: &str) -> (&str, u32, Option<u32>) {
    path.rsplit_once("#L")
        .and_then(|(file, lines)| {
            let (start, end) = lines.split_once('-').unwrap_or((lines, lines));
            let start: u32 = start.parse().ok().filter(|start| *start >= 1)?;
            // One that is not a line number after the start makes this no selection.
            let end = end.parse::<u32>().ok().filter(|end| *end >= start)?;
            (!file.is_empty()).then_some((file, start, Some(end)))
        })
        .unwrap_or((path, 1, None))
}

/// Whether `path` ends in what is meant as a line selection but is not one
/// (`#L0-1`, `#L3-1`, `#L-2`): `#L` and digits and dashes only.
fn is_bad_selection(path: &str) -> bool {
    path.rsplit_once("#L").is_some_and(|(file, lines)| {
        !file.is_empty()
            && !lines.is_empty()
            && lines.bytes().all(|b| b.is_ascii_digit() || b == b'-')
    })
}

pub(crate) fn prepare_inputs(files: &[FileInput], images: &[ImageInput]) -> PreparedInputs {
    let mut prepared = PreparedInputs::default();
    for file in files {
        let path = file.path.as_str();
        match &file.source {
            FileSource::Text(text) => {
                let normalised = text.replace("\r\n", "\n");
                let content = normalised.strip_suffix('\n').unwrap_or(&normalised);
                let lines = u32::try_from(content.lines().count().max(1)).unwrap_or(u32::MAX);
                let (file, first) = selection(path);
                match LineSpan::new(first, first.saturating_add(lines - 1)) {
                    Ok(span) => prepared.chunks.push(ScoredChunk {
                        chunk: Chunk {
                            id: ChunkId::new(format!("input:{path}")),
                            path: file.to_owned(),
                            lines: span,
                            language: language_for_path(file).to_owned(),
                            content: content.to_owned(),
                            metadata: Default::default(),
                        },
                        score: f32::MAX,
                    }),
                    Err(error) => prepared
                        .warnings
                        .push(format!("file input {path} was not used: {error}")),
                }
            }
            FileSource::Base64(data) => {
                let media = file
                    .media_type
                    .as_ref()
                    .map_or("application/octet-stream", |m| m.as_str());
                prepared
                    .parts
                    .push(ContentPart::InputFile(InputFile::inline(
                        path,
                        media,
                        data.as_str(),
                    )));
            }
            FileSource::Reference => prepared.warnings.push(format!(
                "file reference {path} was not resolved: send its content inline"
            )),
        }
    }
    for image in images {
        let path = image.path.as_str();
        match &image.source {
            ImageSource::Base64(data) => {
                let media = image
                    .media_type
                    .as_ref()
                    .map_or("image/png", |m| m.as_str());
                prepared
                    .parts
                    .push(ContentPart::InputImage(InputImage::inline(
                        media,
                        data.as_str(),
                    )));
            }
            ImageSource::Reference => prepared.warnings.push(format!(
                "image reference {path} was not resolved: send its content inline"
            )),
        }
    }
    prepared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selection_is_read_off_its_path() {
        assert_eq!(selection("src/a.rs#L12-20"), ("src/a.rs", 12));
        assert_eq!(selection("src/a.rs#L7"), ("src/a.rs", 7));
        for whole in [
            "src/a.rs",
            "src/a.rs#L0-3",
            "src/a.rs#Lx",
            "#L3",
            "notes#Lunch.md",
        ] {
            assert_eq!(selection(whole), (whole, 1), "{whole}");
        }
    }

    struct Workspace;

    #[async_trait]
    impl ReferenceReader for Workspace {
        async fn read_reference(&self, path: &str) -> Result<ReferencedFile, String> {
            match path {
                "src/a.rs" => Ok(ReferencedFile::Text("one\ntwo\nthree\nfour\n".to_owned())),
                "docs/spec.pdf" | "shot.png" => Ok(ReferencedFile::Bytes(vec![0, 159, 146, 150])),
                "notes.txt" => Ok(ReferencedFile::Text("words".to_owned())),
                _ => Err("no such file".to_owned()),
            }
        }
    }

    fn file(path: &str) -> FileInput {
        FileInput {
            path: aptix_model::contract::RelativePath::new(path).unwrap(),
            source: FileSource::Reference,
            media_type: None,
        }
    }

    fn image(path: &str) -> ImageInput {
        ImageInput {
            path: aptix_model::contract::RelativePath::new(path).unwrap(),
            source: ImageSource::Reference,
            media_type: None,
        }
    }

    #[tokio::test]
    async fn references_are_read_through_the_reader_and_what_cannot_be_is_said() {
        let files = [
            file("src/a.rs"),
            file("src/a.rs#L2-3"),
            file("docs/spec.pdf"),
            file("gone.rs"),
        ];
        let images = [image("shot.png"), image("notes.txt"), image("gone.png")];
        let mut warnings = Vec::new();
        let (read_files, read_images) =
            read_references(Some(&Workspace), &files, &images, &mut warnings).await;
        let sources: Vec<&FileSource> = read_files.iter().map(|f| &f.source).collect();
        assert_eq!(
            sources,
            [
                &FileSource::Text("one\ntwo\nthree\nfour\n".to_owned()),
                &FileSource::Text("two\nthree\n".to_owned()),
                &FileSource::Base64(Base64Data::new("AJ+Slg==").unwrap()),
            ]
        );
        assert_eq!(
            read_files[2].media_type.as_ref().map(MediaType::as_str),
            Some("application/pdf")
        );
        assert_eq!(read_images.len(), 1);
        assert_eq!(
            read_images[0].media_type.as_ref().map(MediaType::as_str),
            Some("image/png")
        );
        assert_eq!(
            warnings,
            [
                "file reference gone.rs was not read: no such file",
                "image reference notes.txt was not read: not a PNG, JPEG, GIF or WebP file by its name; send its mediaType",
                "image reference gone.png was not read: no such file",
            ]
        );
        // The selection keeps its lines' numbers in the chunk.
        let prepared = prepare_inputs(&read_files, &read_images);
        let chunk = &prepared.chunks[1].chunk;
        assert_eq!(
            (chunk.path.as_str(), chunk.lines.start(), chunk.lines.end()),
            ("src/a.rs", 2, 3)
        );
        assert_eq!(prepared.parts.len(), 2);
        assert!(prepared.warnings.is_empty(), "{:?}", prepared.warnings);

        // Without a reader, the inputs as they came; prepare_inputs says why.
        let mut warnings = Vec::new();
        let (same, _) = read_references(None, &files, &images, &mut warnings).await;
        assert!(matches!(same, Cow::Borrowed(_)));
        assert!(warnings.is_empty());
    }

    #[tokio::test]
    async fn a_selection_past_the_end_or_not_a_range_is_said_not_sent_empty() {
        let files = [
            file("src/a.rs#L9-99"),
            file("src/a.rs#L0-1"),
            file("src/a.rs#L3-1"),
            file("src/a.rs#L3-99"),
        ];
        let mut warnings = Vec::new();
        let (read_files, _) = read_references(Some(&Workspace), &files, &[], &mut warnings).await;
        // Past its end, the rest of the file is what there is.
        let sources: Vec<&FileSource> = read_files.iter().map(|f| &f.source).collect();
        assert_eq!(sources, [&FileSource::Text("three\nfour\n".to_owned())]);
        assert_eq!(
            warnings,
            [
                "file reference src/a.rs#L9-99 was not used: src/a.rs has 4 lines",
                "file reference src/a.rs#L0-1 was not read: its `#L` part is not a line range (lines count from 1: `#L12` or `#L12-20`, the end not before the start)",
                "file reference src/a.rs#L3-1 was not read: its `#L` part is not a line range (lines count from 1: `#L12` or `#L12-20`, the end not before the start)",
            ]
        );
    }
}

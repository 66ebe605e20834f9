//! A user turn's file and image inputs (AGN-034 section 4.2), turned into what the
//! model can read: inline text files become AGN-002 chunks in the `[CONTEXT]` block,
//! binary files and images become `input_file` / `input_image` parts of the user
//! message. References (a path without content) are not resolved by the orchestrator,
//! which does no file I/O; they are reported as warnings.

use aptix_model::contract::{FileInput, FileSource, ImageInput, ImageSource};
use aptix_model::wire::{ContentPart, InputFile, InputImage};
use aptix_rag::{Chunk, ChunkId, LineSpan, ScoredChunk, language_for_path};

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
    path.rsplit_once("#L")
        .and_then(|(file, lines)| {
            let (start, end) = lines.split_once('-').unwrap_or((lines, lines));
            let start: u32 = start.parse().ok().filter(|start| *start >= 1)?;
            // The end is the text's own; one that is not a line number after the start
            // makes this no selection.
            end.parse::<u32>().ok().filter(|end| *end >= start)?;
            (!file.is_empty()).then_some((file, start))
        })
        .unwrap_or((path, 1))
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
                prepared.parts.push(ContentPart::InputFile(InputFile {
                    file_id: None,
                    file_data: Some(format!("data:{media};base64,{}", data.as_str())),
                    file_url: None,
                    filename: Some(path.to_owned()),
                }));
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
                prepared.parts.push(ContentPart::InputImage(InputImage {
                    image_url: Some(format!("data:{media};base64,{}", data.as_str())),
                    file_id: None,
                    detail: None,
                }));
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
    use super::selection;

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
}

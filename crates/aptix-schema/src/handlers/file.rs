//! The `file` handler: a file or code reference with its content inline,
//! `{"type":"file","path":"src/lib.rs","content":"...","lines":{"start":3,"end":5}}`,
//! rendered as an AGN-002 `[CONTEXT]` block of one chunk, with the message's role.
//!
//! The handler never reads the file: the content travels in the message, so the
//! Request stays a pure function of its input. `lines` defaults to the whole content
//! (`1` to its line count), `language` to the tag `aptix_rag::language_for_path` gives
//! the path, `id` to `path:start-end`.

use aptix_rag::{Chunk, ChunkId, LineSpan, language_for_path, render_context_block};

use super::check_fields;
use crate::context::CustomContent;
use crate::handler::{ContentHandler, HandlerContext, HandlerError};

/// Renders an inline file reference as a `[CONTEXT]` chunk.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FileHandler;

impl FileHandler {
    /// The content type it handles.
    pub(crate) const TYPE: &'static str = "file";
}

impl ContentHandler for FileHandler {
    fn handle(
        &self,
        content: &CustomContent,
        cx: &mut HandlerContext<'_>,
    ) -> Result<(), HandlerError> {
        let chunk = chunk_of(content)?;
        let block = render_context_block(&[chunk])
            .ok_or_else(|| HandlerError::new("the chunk rendered no context block"))?;
        cx.push_text_as_is(block.trim_end_matches('\n'));
        Ok(())
    }
}

/// The chunk a file reference describes.
fn chunk_of(content: &CustomContent) -> Result<Chunk, HandlerError> {
    check_fields(content, &["path", "content", "lines", "language", "id"])?;
    let path: String = content.required_field("path")?;
    if path.trim().is_empty() {
        return Err(HandlerError::new("field \"path\" is blank"));
    }
    let text: String = content.required_field("content")?;
    let lines = match content.field::<LineSpan>("lines")? {
        Some(lines) => lines,
        None => whole(&text)?,
    };
    let language = content
        .field::<String>("language")?
        .filter(|language| !language.trim().is_empty())
        .unwrap_or_else(|| language_for_path(&path).to_owned());
    let id = content
        .field::<String>("id")?
        .filter(|id| !id.trim().is_empty())
        .unwrap_or_else(|| format!("{path}:{lines}"));
    Ok(Chunk {
        id: ChunkId::new(id),
        path,
        lines,
        language,
        content: text,
        metadata: Default::default(),
    })
}

/// The span of the whole content: line 1 to its last line (1 for empty content).
fn whole(text: &str) -> Result<LineSpan, HandlerError> {
    let count = u32::try_from(text.lines().count().max(1))
        .map_err(|_| HandlerError::new("the content has more lines than a span can hold"))?;
    LineSpan::new(1, count).map_err(|error| HandlerError::new(error.to_string()))
}

//! The unit of retrieved context.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::RagError;

/// A stable chunk identifier: the same content at the same path always gets the same id.
///
/// It is what AGN-002's `Id:` line shows and what the envelope's `Sources` refer to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ChunkId(String);

impl ChunkId {
    /// Wraps an id. Ids are opaque; producers choose their own scheme.
    pub fn new(id: impl Into<String>) -> ChunkId {
        ChunkId(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ChunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A 1-based, inclusive span of lines: `start <= end`, `start >= 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "RawLineSpan", into = "RawLineSpan")]
pub struct LineSpan {
    start: u32,
    end: u32,
}

#[derive(Serialize, Deserialize)]
struct RawLineSpan {
    start: u32,
    end: u32,
}

impl TryFrom<RawLineSpan> for LineSpan {
    type Error = RagError;
    fn try_from(raw: RawLineSpan) -> Result<LineSpan, RagError> {
        LineSpan::new(raw.start, raw.end)
    }
}

impl From<LineSpan> for RawLineSpan {
    fn from(span: LineSpan) -> RawLineSpan {
        RawLineSpan {
            start: span.start,
            end: span.end,
        }
    }
}

impl LineSpan {
    /// A span from `start` to `end`, both 1-based and inclusive.
    pub fn new(start: u32, end: u32) -> Result<LineSpan, RagError> {
        if start == 0 || end < start {
            return Err(RagError::InvalidLineSpan { start, end });
        }
        Ok(LineSpan { start, end })
    }

    /// The first line, 1-based.
    pub fn start(self) -> u32 {
        self.start
    }

    /// The last line, 1-based and inclusive.
    pub fn end(self) -> u32 {
        self.end
    }

    /// How many lines the span covers.
    pub fn len(self) -> u32 {
        self.end - self.start + 1
    }

    /// Always false: a span covers at least one line.
    pub fn is_empty(self) -> bool {
        false
    }

    /// Whether the two spans share at least one line.
    pub fn overlaps(self, other: LineSpan) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

impl fmt::Display for LineSpan {
    /// AGN-002's `Lines:` form, `start-end`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.start, self.end)
    }
}

/// A span of a workspace file, ready to be shown to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Stable identifier.
    pub id: ChunkId,
    /// Path relative to the workspace root, with `/` separators.
    pub path: String,
    /// The lines of the file this chunk holds.
    pub lines: LineSpan,
    /// AGN-002 language tag (`rust`, `csharp`, `typescript`, ..., `text`).
    pub language: String,
    /// The text of those lines, without a trailing newline.
    pub content: String,
    /// Further metadata that scope conditions filter on (`repo`, `extension`, `symbol`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

impl Chunk {
    /// The chunk's value for a scope-condition key: `path`, `language` and `id` come
    /// from the fields, anything else from [`metadata`](Self::metadata).
    pub fn metadata_value(&self, key: &str) -> Option<&str> {
        match key {
            "path" => Some(&self.path),
            "language" => Some(&self.language),
            "id" => Some(self.id.as_str()),
            other => self.metadata.get(other).map(String::as_str),
        }
    }
}

impl AsRef<Chunk> for Chunk {
    fn as_ref(&self) -> &Chunk {
        self
    }
}

/// A chunk with the retriever's relevance score (higher is better).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredChunk {
    /// The chunk.
    pub chunk: Chunk,
    /// Relevance; only comparable within one retrieval.
    pub score: f32,
}

/// Lets rendering take ranked chunks as they come out of retrieval and packing.
impl AsRef<Chunk> for ScoredChunk {
    fn as_ref(&self) -> &Chunk {
        &self.chunk
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_spans_are_one_based_and_inclusive() {
        let span = LineSpan::new(40, 85).unwrap();
        assert_eq!(span.to_string(), "40-85");
        assert_eq!(span.len(), 46);
        assert!(LineSpan::new(0, 3).is_err());
        assert!(LineSpan::new(5, 4).is_err());
        assert!(LineSpan::new(7, 7).is_ok());
    }

    #[test]
    fn line_span_json_is_checked() {
        let err = serde_json::from_str::<LineSpan>(r#"{"start":9,"end":2}"#).unwrap_err();
        assert!(err.to_string().contains("9"), "{err}");
        let ok: LineSpan = serde_json::from_str(r#"{"start":2,"end":9}"#).unwrap();
        assert_eq!(ok, LineSpan::new(2, 9).unwrap());
    }

    #[test]
    fn overlap_is_symmetric_and_inclusive() {
        let a = LineSpan::new(1, 10).unwrap();
        let b = LineSpan::new(10, 20).unwrap();
        let c = LineSpan::new(11, 20).unwrap();
        assert!(a.overlaps(b) && b.overlaps(a));
        assert!(!a.overlaps(c) && !c.overlaps(a));
    }
}

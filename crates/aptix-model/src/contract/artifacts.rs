//! What the envelope points at besides the model's words: the retrieved chunks it used
//! ([`SourceRef`]) and files produced for patching ([`FileBundle`]).

use serde::{Deserialize, Serialize};

use super::path::RelativePath;

/// A retrieved chunk that was put into the model's context (AGN-004 section 2.8): the
/// same chunk id, path and lines as the AGN-002 `[CONTEXT]` block showed the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SourceRef {
    /// The chunk's stable id.
    pub chunk_id: String,
    /// The file, relative to the workspace root, with `/` separators.
    pub path: String,
    /// The first line of the chunk, 1-based.
    pub line_start: u32,
    /// The last line of the chunk, 1-based and inclusive.
    pub line_end: u32,
    /// The AGN-002 language tag (`rust`, `typescript`, ..., `text`).
    pub language: String,
    /// The retriever's relevance score, comparable only within one retrieval; `null` when
    /// the retriever has none. Finite when present (JSON has no NaN).
    // Always written, `null` included.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub score: Option<f64>,
}

/// Files produced for later patching phases (AGN-004 section 2.8), e.g. by a code
/// generation tool. Paths are checked [`RelativePath`]s, so a client writing a bundle
/// into the workspace cannot be made to write outside it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FileBundle {
    /// The files, in the order they should be applied.
    // Always written; only decoding defaults it.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    #[serde(default)]
    pub files: Vec<BundleFile>,
}

/// One file of a [`FileBundle`]: its full new content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BundleFile {
    /// Where the file goes, relative to the workspace root.
    pub path: RelativePath,
    /// The file's complete UTF-8 content.
    pub content: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bundle_paths_are_checked_when_decoded() {
        let ok: FileBundle =
            serde_json::from_value(json!({"files": [{"path": "src/a.rs", "content": "x"}]}))
                .unwrap();
        assert_eq!(ok.files[0].path.as_str(), "src/a.rs");
        let escape = serde_json::from_value::<FileBundle>(
            json!({"files": [{"path": "../../etc/passwd", "content": "x"}]}),
        );
        assert!(escape.is_err());
    }
}

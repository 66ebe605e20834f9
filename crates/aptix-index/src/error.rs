//! The one error type of `aptix-index`.

use std::path::PathBuf;

/// Errors of opening, refreshing and searching a workspace index.
///
/// Soft problems are not errors: a file that cannot be read or is binary becomes a
/// [`SkippedFile`](crate::SkippedFile) in the refresh statistics, an unknown scope key a
/// warning in the search results.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexError {
    /// The workspace root does not exist or is not a directory.
    #[error("workspace root {path} is not a directory")]
    NotADirectory {
        /// The root that was given.
        path: PathBuf,
    },
    /// Creating or reading a file or folder of the index failed.
    #[error("i/o error at {path}")]
    Io {
        /// The file or folder involved.
        path: PathBuf,
        /// What went wrong underneath.
        #[source]
        source: std::io::Error,
    },
    /// The tantivy index under `.aptix/` failed (corrupt files, a full disk, ...).
    #[error("index store error in {path}")]
    Store {
        /// The index folder.
        path: PathBuf,
        /// What tantivy reported.
        #[source]
        source: tantivy::TantivyError,
    },
    /// Another process (or another refresh in this one) holds the index writer lock.
    #[error("index at {path} is being refreshed by another process")]
    Locked {
        /// The index folder.
        path: PathBuf,
    },
    /// The progress observer asked to stop; the previously committed index is unchanged.
    #[error("refresh cancelled after {files_done} files; the previous index is unchanged")]
    Cancelled {
        /// Files processed before the cancellation was seen.
        files_done: u64,
    },
    /// The o200k token counter used for packing could not be built (a broken build).
    #[error("token counter unavailable")]
    TokenCounter {
        /// What aptix-rag reported.
        #[source]
        source: aptix_rag::RagError,
    },
    /// A configuration value is out of range.
    #[error("invalid index configuration: {field} {reason}")]
    InvalidConfig {
        /// The field of [`IndexConfig`](crate::IndexConfig).
        field: &'static str,
        /// Why it is rejected.
        reason: &'static str,
    },
}

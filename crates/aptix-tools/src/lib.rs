//! Aptix's built-in read-only server tools, which let the model look further than the
//! retrieved context: [`SearchCode`] (the workspace index), [`ReadFile`] (a line range
//! of a file, with line numbers) and [`ListFiles`] (the files below a folder).
//!
//! Each is an [`aptix_orchestrator::ServerTool`] with a usage text for the AGN-005
//! tool-usage block; [`builtin_tools`] makes all three for one workspace.
//!
//! **Confinement.** Every path argument goes through [`Workspace::confine`]: relative
//! to the workspace only (no absolute path, no `..`), not ignored by the index's rules
//! (`.gitignore`, `.aptixignore`, hidden and build folders), not secret-looking (`.env*`,
//! `*.pem`, `*.key`, `id_rsa*`, `.npmrc`, credentials files, ...), and, after symbolic
//! links are resolved, still inside the workspace. Binary files (a NUL byte, invalid
//! UTF-8) are refused. A refusal is a [`ToolError`], whose text the model reads.
//!
//! **Readers.** [`ReadFile`] reads through a [`FileReader`]; [`DiskReader`] is the
//! default. An editor can plug in one that serves its unsaved buffers.
//!
//! **References.** [`ReferenceFiles`] reads the files a user turn names without their
//! content, under the same rules and through the same reader, for
//! [`aptix_orchestrator::OrchestratorBuilder::reference_reader`].
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod confine;
mod list;
mod read;
mod search;

use std::sync::Arc;

use aptix_index::WorkspaceIndex;
use aptix_orchestrator::ServerTool;

pub use confine::{Confined, Workspace};
pub use list::ListFiles;
pub use read::{DiskReader, FileReader, ReadFile, ReferenceFiles};
pub use search::SearchCode;

/// The names of the built-in tools, in the order [`builtin_tools`] returns them.
pub const TOOL_NAMES: [&str; 3] = ["search_code", "read_file", "list_files"];

/// Why a tool call was refused or failed; its text is what the model is told.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments are not the JSON the tool's schema describes.
    #[error("invalid arguments: {0}")]
    Arguments(String),
    /// The path leaves the workspace (absolute, `..`, or a link pointing outside).
    #[error(
        "{path}: outside the workspace; give a path relative to the workspace root, without `..`"
    )]
    Outside {
        /// The path as given.
        path: String,
    },
    /// The index's rules leave the path out.
    #[error(
        "{path}: ignored by the workspace's rules (.gitignore, .aptixignore, hidden or build folders)"
    )]
    Ignored {
        /// The path as given.
        path: String,
    },
    /// The path looks like it holds secrets.
    #[error("{path}: may hold secrets (keys, tokens, credentials) and is never read")]
    Secret {
        /// The path as given.
        path: String,
    },
    /// Nothing at the path.
    #[error("{path}: no such file or folder in the workspace")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// A folder where a file was expected, or the reverse.
    #[error("{path}: {expected}")]
    WrongType {
        /// The path as given.
        path: String,
        /// What was expected, e.g. "is a folder; use list_files".
        expected: &'static str,
    },
    /// A file that is not text.
    #[error("{path}: a binary file (not text); it cannot be read as text")]
    Binary {
        /// The path as given.
        path: String,
    },
    /// A file too large to read at all.
    #[error("{path}: {bytes} bytes, more than the {limit} bytes a tool reads")]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// Reading failed.
    #[error("{path}: could not be read: {message}")]
    Io {
        /// The path as given.
        path: String,
        /// What the reader reported.
        message: String,
    },
    /// The index could not be searched.
    #[error("the search failed: {0}")]
    Search(String),
}

/// The three built-in tools for the workspace of `index`, reading files from disk.
pub fn builtin_tools(index: WorkspaceIndex) -> Vec<Arc<dyn ServerTool>> {
    builtin_tools_with_reader(index, Arc::new(DiskReader))
}

/// The three built-in tools for the workspace of `index`, with `read_file` reading
/// through `reader` (an editor's buffers, say) instead of the disk. Confinement is the
/// same: `reader` is only asked for paths that passed [`Workspace::confine`].
pub fn builtin_tools_with_reader(
    index: WorkspaceIndex,
    reader: Arc<dyn FileReader>,
) -> Vec<Arc<dyn ServerTool>> {
    let workspace = Workspace::new(index.files());
    vec![
        Arc::new(SearchCode::new(index)),
        Arc::new(ReadFile::new(workspace.clone(), reader)),
        Arc::new(ListFiles::new(workspace)),
    ]
}

/// Decodes a tool's arguments, naming what is wrong for the model.
pub(crate) fn arguments<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, ToolError> {
    let json = if json.trim().is_empty() { "{}" } else { json };
    serde_json::from_str(json).map_err(|error| ToolError::Arguments(error.to_string()))
}

/// A value as the tool's JSON result text.
pub(crate) fn result(value: &serde_json::Value) -> Result<String, String> {
    serde_json::to_string(value).map_err(|error| error.to_string())
}

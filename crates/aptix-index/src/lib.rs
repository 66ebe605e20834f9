//! The Aptix workspace index: code-aware chunks of a workspace in an embedded lexical
//! index under `.aptix/`, served through the [`aptix_rag::Retriever`] trait.
//!
//! **Architecture invariant:** reads the workspace and writes only inside its `.aptix/`
//! folder; never touches the network.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod chunker;
mod config;
mod error;
mod index;
mod language;
mod manifest;
mod progress;
mod refresh;
mod retriever;
mod search;
mod store;
mod tokenizer;
mod walk;

pub use chunker::chunk_file;
pub use config::{ChunkingConfig, DEFAULT_EXCLUDED_DIRS, IndexConfig};
pub use error::IndexError;
pub use index::{APTIX_DIR, WorkspaceIndex};
pub use progress::{FileOutcome, IndexProgress, IndexStats, NoProgress, SkipReason, SkippedFile};
pub use search::{SearchQuery, SearchResults};
pub use walk::APTIX_IGNORE_FILE;

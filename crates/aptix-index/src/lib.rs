//! The Aptix workspace index: code-aware chunks of a workspace in an embedded lexical
//! index under `.aptix/`, served through the [`aptix_rag::Retriever`] trait.
//!
//! **Architecture invariant:** reads the workspace and writes only inside its `.aptix/`
//! folder; never touches the network.
//!
//! # Principal types
//!
//! - [`WorkspaceIndex`]: [`open`](WorkspaceIndex::open) a workspace with an
//!   [`IndexConfig`], [`refresh`](WorkspaceIndex::refresh) it (reporting to an
//!   [`IndexProgress`], returning [`IndexStats`]), ask whether it
//!   [`is_stale`](WorkspaceIndex::is_stale), [`search`](WorkspaceIndex::search) it with a
//!   [`SearchQuery`]. It implements [`aptix_rag::Retriever`], which is how the
//!   orchestrator uses it.
//! - [`chunk_file`]: the chunker alone, a pure function, for other stores.
//! - [`IndexError`]: the one error type; soft problems (a binary file, an unknown scope
//!   key) are values: [`SkippedFile`] in the stats, warnings in [`SearchResults`].
//!
//! # Design decisions
//!
//! **Lexical retrieval first.** Developers' instructions name identifiers, files and
//! error messages; BM25 over code-aware tokens finds those exactly, needs no model, no
//! GPU and no network, indexes a few hundred megabytes of source per minute on two cores
//! and answers in milliseconds. Embeddings can be added later behind the same
//! [`Retriever`](aptix_rag::Retriever) seam.
//!
//! **A code tokenizer.** Identifiers are indexed whole (parts joined and lower-cased,
//! so `parseHttpResponse`, `parse_http_response` and `ParseHTTPResponse` share the term
//! `parsehttpresponse`) and split into their parts (`parse`, `http`, `response`), so
//! prose finds code and every spelling finds every other. Queries go through the same
//! tokenizer.
//!
//! **Syntax-aware chunks.** With a tree-sitter grammar (each behind a `lang-*`
//! feature) a file is cut at definitions: a function, class or `impl` that fits the
//! size limits is one chunk; a larger one is split at its children (a class into its
//! methods, its header and closing brace attached to them); small neighbours are
//! merged; comments and attributes travel with the definition after them. Files without
//! a grammar, files that mostly fail to parse and very large files are cut into line
//! windows (no overlap: overlapping chunks would spend the token budget twice), ending
//! at blank lines where possible. Every chunk is whole lines, its text exactly those
//! lines, its id the blake3 of path, span and text.
//!
//! **Incremental and crash-safe.** The manifest (per file: content hash, size,
//! modification time, chunk count) is stored as documents of the same tantivy index,
//! so one atomic commit publishes chunks and manifest together; an interrupted refresh
//! leaves the previous commit intact. A refresh opens only files whose size or time
//! changed, re-chunks only those whose hash changed, and deletes the chunks of files
//! that disappeared. The commit payload records a fingerprint of the configuration and
//! format; when it differs the index is rebuilt.
//!
//! **Scope inside the query.** AGN-034 conditions become boolean clauses of the same
//! tantivy query (see `docs/index.md`), so filtering never starves the top-k; unknown
//! keys are warnings and are ignored, as scope is advisory.
//!
//! **On disk:** `<workspace>/.aptix/.gitignore` (`*`) and `<workspace>/.aptix/index/`
//! (tantivy segments and `meta.json`).
//!
//! # Example
//!
//! ```
//! use aptix_index::{IndexConfig, NoProgress, SearchQuery, WorkspaceIndex};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let workspace = tempfile::tempdir()?;
//! std::fs::create_dir(workspace.path().join("src"))?;
//! std::fs::write(
//!     workspace.path().join("src/http.rs"),
//!     "pub fn parse_http_response(body: &str) -> Option<u16> {\n    body.get(9..12)?.parse().ok()\n}\n",
//! )?;
//!
//! let index = WorkspaceIndex::open(workspace.path(), IndexConfig::default())?;
//! let stats = index.refresh(&NoProgress)?;
//! assert_eq!(stats.files_indexed, 1);
//!
//! let results = index.search(&SearchQuery::new("where do we parseHttpResponse?"))?;
//! let best = &results.hits[0].chunk;
//! assert_eq!(best.path, "src/http.rs");
//! assert_eq!(best.lines.to_string(), "1-3");
//! # Ok(())
//! # }
//! ```
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod chunker;
mod config;
mod error;
mod files;
mod index;
mod kind;
mod language;
mod manifest;
mod progress;
mod query;
mod rank;
mod refresh;
mod retriever;
mod search;
mod secret;
mod store;
mod tokenizer;
mod walk;

pub use chunker::chunk_file;
pub use config::{ChunkingConfig, IndexConfig};
pub use error::IndexError;
pub use files::{FileListing, WorkspaceFiles};
pub use index::{APTIX_DIR, WorkspaceIndex, ensure_aptix_dir};
pub use kind::{FileKind, classify};
pub use progress::{FileOutcome, IndexProgress, IndexStats, NoProgress, SkipReason, SkippedFile};
pub use refresh::file_text;
pub use search::{HitMatch, SearchQuery, SearchResults, scope_problem};
pub use secret::{REDACTED, is_secret_path, redact_secrets};

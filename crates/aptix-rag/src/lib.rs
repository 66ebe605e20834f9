//! Aptix retrieval contracts and the AGN-002 `[CONTEXT]` block.
//!
//! This crate owns what retrieved code *is* and how it reaches the model:
//!
//! - [`Chunk`]: a span of a workspace file with a stable id, relative path, 1-based
//!   inclusive [`LineSpan`], language tag and filterable metadata.
//! - [`Retriever`]: the seam between the orchestrator and any store of chunks
//!   (the embedded `aptix-index`, or a server-backed one). It takes a
//!   [`RetrievalQuery`] (instruction, AGN-034 scope conditions, token budget) and
//!   returns ranked chunks.
//!
//! **Architecture invariant:** `aptix-rag` formats and ranks chunks that are already
//! loaded. It never opens files, never touches the network, and needs no async runtime
//! (the [`Retriever`] trait is async so that implementations may do I/O; this crate
//! never drives it).
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod chunk;
mod error;
mod language;
mod pack;
mod render;
mod retriever;
mod select;
mod tokens;

pub use chunk::{Chunk, ChunkId, LineSpan, ScoredChunk};
pub use error::RagError;
pub use language::{UNKNOWN_LANGUAGE, language_for_path};
pub use pack::{Packed, pack};
pub use render::{render_context_block, render_context_block_into};
pub use retriever::{Retrieval, RetrievalQuery, Retriever};
pub use select::{chunk_matches, dedupe_overlapping};
pub use tokens::TokenCounter;

//! Aptix retrieval contracts and the AGN-002 `[CONTEXT]` block.
//!
//! This crate owns what retrieved code *is* and how it reaches the model:
//!
//! - [`Chunk`]: a span of a workspace file with a stable [`ChunkId`], relative path,
//!   1-based inclusive [`LineSpan`], language tag and filterable metadata;
//!   [`ScoredChunk`] adds the retriever's relevance score.
//! - [`language_for_path`]: the AGN-002 language tag of a file (`csharp`, `tsx`,
//!   `bash`, ..., `text`).
//! - [`Retriever`]: the seam between the orchestrator and any store of chunks
//!   (the embedded `aptix-index`, or a server-backed one). It takes a
//!   [`RetrievalQuery`] (instruction, AGN-034 scope conditions, token budget) and
//!   returns a [`Retrieval`] of ranked chunks. Whatever a retriever returns,
//!   [`select_context`] decides what reaches the model: the one home of the scope,
//!   overlap ([`dedupe_overlapping`]), chunk-count and budget ([`pack`]) rules, with
//!   the user's attachments counted against the same budget.
//! - [`render_context_block`]: the exact `[CONTEXT]` text AGN-002 specifies, counted by
//!   [`TokenCounter`] (o200k_base) when packing.
//!
//! **Architecture invariant:** `aptix-rag` formats and ranks chunks that are already
//! loaded. It never opens files, never touches the network, and needs no async runtime
//! (the [`Retriever`] trait is async so that implementations may do I/O; this crate
//! never drives it).
//!
//! # Design decisions
//!
//! - **Chunk content is untrusted.** Workspace files include Markdown with its own
//!   fences, fixtures and text written to confuse a model. The renderer makes every
//!   code fence longer than any backtick run in its content, turns every line end into
//!   `\n`, and escapes line breaks and control characters in the `Id:`, `Path:` and
//!   `Language:` values, so nothing inside a chunk can close it early or forge a
//!   `=== CHUNK N ===` header. Property tests read renderings of arbitrary chunks back
//!   with a CommonMark-faithful parser and recover exactly the chunks given.
//! - **Budgets are exact.** [`pack`] prices each chunk by counting its rendered section
//!   with the same tokenizer the model uses, so the block the model receives fits the
//!   budget, not an estimate of it. Packing is greedy in rank order and skips chunks
//!   that do not fit, so a large chunk never starves smaller, lower-ranked ones.
//! - **One shape per section.** Each chunk's section ends with its closing fence and a
//!   blank line, the last one included, so a block is its header plus identical
//!   sections, costs add up, and what follows the block is already separated from it.
//! - **No I/O, no panics on input.** Every function here is a pure function of its
//!   arguments; malformed input yields a value or a [`RagError`], never a panic.
//!
//! The exact format is written down in `docs/context-block.md`.
//!
//! # Example
//!
//! ```
//! use aptix_rag::{
//!     Chunk, ChunkId, LineSpan, ScoredChunk, TokenCounter, language_for_path, pack,
//!     render_context_block,
//! };
//!
//! let path = "docs/usage.md";
//! let retrieved = vec![ScoredChunk {
//!     chunk: Chunk {
//!         id: ChunkId::new("ctx_1"),
//!         path: path.into(),
//!         lines: LineSpan::new(3, 5)?,
//!         language: language_for_path(path).into(),
//!         content: "Run it with:\n```bash\naptix ask \"hello\"\n```".into(),
//!         metadata: Default::default(),
//!     },
//!     score: 0.9,
//! }];
//!
//! let packed = pack(retrieved, 1_000, &TokenCounter::o200k()?);
//! assert!(packed.dropped.is_empty());
//!
//! let block = render_context_block(&packed.kept).expect("one chunk was kept");
//! assert_eq!(
//!     block,
//!     "[CONTEXT]\n\n\
//!      === CHUNK 1 ===\n\
//!      Id: ctx_1\n\
//!      Path: docs/usage.md\n\
//!      Lines: 3-5\n\
//!      Language: markdown\n\
//!      ````markdown\n\
//!      Run it with:\n```bash\naptix ask \"hello\"\n```\n\
//!      ````\n\n"
//! );
//! # Ok::<(), aptix_rag::RagError>(())
//! ```
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
// Text escaping shared with `aptix-request`'s blocks; not part of the API.
#[doc(hidden)]
pub mod text;
mod tokens;

pub use chunk::{Chunk, ChunkId, LineSpan, ScoredChunk};
pub use error::RagError;
pub use language::language_for_path;
pub use pack::{Packed, cut_to_tokens, pack, select_context};
pub use render::{render_context_block, render_context_block_into};
pub use retriever::{Retrieval, RetrievalQuery, Retriever};
pub use select::dedupe_overlapping;
pub use tokens::TokenCounter;

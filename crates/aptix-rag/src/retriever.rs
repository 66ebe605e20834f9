//! The seam between the orchestrator and any store of chunks.

use aptix_model::contract::ScopeCondition;
use async_trait::async_trait;

use crate::{RagError, ScoredChunk};

/// What to retrieve: an instruction, AGN-034 scope conditions and a token budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetrievalQuery {
    /// The text to search for (usually the user's instruction).
    pub text: String,
    /// Conditions over chunk metadata, ANDed.
    pub scope: Vec<ScopeCondition>,
    /// The most tokens (o200k) the returned chunks' rendered context may use.
    pub token_budget: usize,
    /// The most chunks to consider before packing.
    pub max_chunks: usize,
}

/// What a retriever found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retrieval {
    /// The chunks to show, best first, already packed to the budget.
    pub chunks: Vec<ScoredChunk>,
    /// Soft problems the caller should surface, e.g. a scope key the store does not know.
    pub warnings: Vec<String>,
    /// How many chunks the retriever found and left out itself, to keep
    /// [`chunks`](Self::chunks) within the query's token budget or chunk count. Not a
    /// warning of its own: the orchestrator packs again (with the user's attachments
    /// first) and says once, in one count, how many chunks the turn left out.
    pub left_out: usize,
}

/// Finds ranked chunks for a query. Implementations: the embedded workspace index
/// (`aptix-index`), server-backed stores, and fakes in tests.
#[async_trait]
pub trait Retriever: Send + Sync {
    /// Retrieves chunks for `query`, best first, within its budget.
    async fn retrieve(&self, query: &RetrievalQuery) -> Result<Retrieval, RagError>;
}

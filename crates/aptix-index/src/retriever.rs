//! [`aptix_rag::Retriever`] for the workspace index: search, drop overlapping chunks,
//! pack to the token budget.

use aptix_rag::{RagError, Retrieval, RetrievalQuery, Retriever, ScoredChunk};
use async_trait::async_trait;

use crate::search::SearchQuery;
use crate::{IndexError, WorkspaceIndex};

/// How many more hits than `max_chunks` are fetched, so that dropping overlapping
/// chunks still leaves enough to fill the budget.
const OVERFETCH: usize = 2;

impl WorkspaceIndex {
    /// The blocking body of [`Retriever::retrieve`]: search, de-duplicate, pack.
    pub fn retrieve_blocking(&self, query: &RetrievalQuery) -> Result<Retrieval, IndexError> {
        let search = SearchQuery {
            text: query.text.clone(),
            scope: query.scope.clone(),
            limit: query.max_chunks.max(1).saturating_mul(OVERFETCH),
        };
        let results = self.search(&search)?;
        let mut ranked = dedupe(results.hits);
        ranked.truncate(query.max_chunks);
        let chunks = pack(ranked, query.token_budget);
        Ok(Retrieval {
            chunks,
            warnings: results.warnings,
        })
    }
}

#[async_trait]
impl Retriever for WorkspaceIndex {
    /// Runs the search on tokio's blocking pool when called inside a tokio runtime, and
    /// inline otherwise (a search takes milliseconds, see `docs/index.md`), so that any
    /// executor can drive it.
    async fn retrieve(&self, query: &RetrievalQuery) -> Result<Retrieval, RagError> {
        let wrap = |error: IndexError| RagError::Retriever {
            retriever: "aptix-index",
            source: Box::new(error),
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let index = self.clone();
                let query = query.clone();
                handle
                    .spawn_blocking(move || index.retrieve_blocking(&query))
                    .await
                    .map_err(|join| RagError::Retriever {
                        retriever: "aptix-index",
                        source: Box::new(join),
                    })?
                    .map_err(wrap)
            }
            Err(_) => self.retrieve_blocking(query).map_err(wrap),
        }
    }
}

/// Drops every chunk that overlaps a better-ranked chunk of the same file.
///
/// The one call site of de-duplication: it becomes `aptix_rag::dedupe_overlapping`
/// once that lands.
fn dedupe(ranked: Vec<ScoredChunk>) -> Vec<ScoredChunk> {
    let mut kept: Vec<ScoredChunk> = Vec::with_capacity(ranked.len());
    for candidate in ranked {
        let overlaps = kept.iter().any(|k| {
            k.chunk.path == candidate.chunk.path && k.chunk.lines.overlaps(candidate.chunk.lines)
        });
        if !overlaps {
            kept.push(candidate);
        }
    }
    kept
}

/// Keeps chunks, best first, while their estimated rendered size fits `budget` tokens.
///
/// The one call site of packing: it becomes `aptix_rag::pack` with the o200k
/// `TokenCounter` once that lands. Until then a token is estimated as 4 bytes, plus
/// 40 tokens of AGN-002 header per chunk.
fn pack(ranked: Vec<ScoredChunk>, budget: usize) -> Vec<ScoredChunk> {
    let mut used = 0usize;
    let mut kept = Vec::new();
    for scored in ranked {
        let cost = scored.chunk.content.len().div_ceil(4) + 40;
        if used + cost <= budget {
            used += cost;
            kept.push(scored);
        }
    }
    kept
}

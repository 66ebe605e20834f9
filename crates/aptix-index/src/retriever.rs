//! [`aptix_rag::Retriever`] for the workspace index: search, then
//! `aptix_rag::select_context` (overlaps, chunk count, the o200k token budget), the rule
//! the orchestrator applies to every retriever's answer.

use aptix_rag::{RagError, Retrieval, RetrievalQuery, Retriever, TokenCounter, select_context};
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
        let mut results = self.search(&search)?;
        crate::rank::drop_past_the_cap_but_code(&mut results.hits);
        let counter =
            TokenCounter::o200k().map_err(|source| IndexError::TokenCounter { source })?;
        let packed = select_context(Vec::new(), results.hits, query, &counter);
        // Hits past `max_chunks` were fetched as spares for overlaps (`past_max_chunks`
        // is no news); those the token budget left out are news for the caller, who says so with what it leaves out
        // itself (one warning, one count).
        // A question none of whose words is in the code ("thanks", "hello") retrieves
        // nothing, which is no news in a conversation; `aptix search` still says it.
        let mut warnings = results.warnings;
        warnings.retain(|warning| !crate::search::is_no_terms_warning(warning));
        Ok(Retrieval {
            chunks: packed.kept,
            warnings,
            left_out: packed.dropped.len(),
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

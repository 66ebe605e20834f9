//! The one error type of `aptix-rag`.

/// Errors of chunk construction, context rendering, packing and retrieval.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RagError {
    /// A line span was not 1-based with `start <= end`.
    #[error("invalid line span {start}-{end}: lines are 1-based and start must not exceed end")]
    InvalidLineSpan {
        /// The first line given.
        start: u32,
        /// The last line given.
        end: u32,
    },
    /// A retriever implementation failed (I/O, a corrupt index, a lost server).
    #[error("retriever {retriever} failed")]
    Retriever {
        /// Which retriever, for the log.
        retriever: &'static str,
        /// What went wrong underneath.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The tokenizer's bundled vocabulary could not be loaded (a broken build).
    #[error("cannot load the {encoding} tokenizer")]
    Tokenizer {
        /// Which encoding, e.g. `o200k_base`.
        encoding: &'static str,
        /// What went wrong underneath.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
}

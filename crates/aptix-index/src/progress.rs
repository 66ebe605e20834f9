//! What a refresh reports: the [`IndexProgress`] observer (the seam for the CLI's
//! progress bar and for cancellation) and the final [`IndexStats`].

use std::fmt;
use std::time::Duration;

/// Why a file was not chunked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SkipReason {
    /// A NUL byte in the first 8 KiB: not text.
    Binary,
    /// Larger than [`IndexConfig::max_file_bytes`](crate::IndexConfig::max_file_bytes).
    TooLarge {
        /// The file's size.
        bytes: u64,
        /// The configured limit.
        limit: u64,
    },
    /// A line longer than [`IndexConfig::max_line_bytes`](crate::IndexConfig::max_line_bytes):
    /// minified or generated code, useless as context.
    LongLine {
        /// The longest line's length.
        bytes: usize,
        /// The configured limit.
        limit: usize,
    },
    /// The file could not be read (permissions, vanished during the walk).
    Unreadable {
        /// The I/O error, as text.
        message: String,
    },
    /// The path is not valid UTF-8, so it cannot be shown as a chunk path.
    NonUtf8Path,
    /// Its name (or a folder's above it) looks like it holds secrets: a key, a
    /// certificate, an `.env` file, credentials ([`is_secret_path`](crate::is_secret_path)).
    /// Its text is never sent to a model.
    MayHoldSecrets,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Binary => f.write_str("binary"),
            SkipReason::TooLarge { bytes, limit } => {
                write!(f, "too large ({bytes} bytes, limit {limit})")
            }
            SkipReason::LongLine { bytes, limit } => {
                write!(f, "line too long ({bytes} bytes, limit {limit})")
            }
            SkipReason::Unreadable { message } => write!(f, "unreadable: {message}"),
            SkipReason::NonUtf8Path => f.write_str("path is not utf-8"),
            SkipReason::MayHoldSecrets => {
                f.write_str("may hold secrets (keys, tokens, credentials)")
            }
        }
    }
}

/// A file the refresh did not chunk, or a folder it did not enter, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// Relative path, `/`-separated (lossy for non-UTF-8 names); a folder's ends in `/`
    /// (one that may hold secrets, whose files are not listed one by one).
    pub path: String,
    /// Why.
    pub reason: SkipReason,
}

/// What happened to one file in a refresh.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileOutcome {
    /// New or changed content, chunked into this many chunks.
    Indexed {
        /// Chunks stored for the file.
        chunks: usize,
    },
    /// Same content as already indexed (size and time, or hash, unchanged).
    Unchanged,
    /// Not chunked.
    Skipped(SkipReason),
}

/// Observes a refresh. Every method has a no-op default; implementations may be
/// called from several threads at once.
///
/// The CLI drives its progress bar from it; returning true from
/// [`is_cancelled`](Self::is_cancelled) (e.g. after Ctrl-C) stops the refresh before
/// its commit, leaving the previous index untouched.
pub trait IndexProgress: Send + Sync {
    /// The walk finished: this many files will be looked at.
    fn files_found(&self, _total: u64) {}
    /// A file is being read and chunked.
    fn file_started(&self, _path: &str) {}
    /// A file is done; `bytes` is its size.
    fn file_done(&self, _path: &str, _outcome: &FileOutcome, _bytes: u64) {}
    /// All files are done; the index is being committed.
    fn committing(&self) {}
    /// Polled between files: true stops the refresh without committing.
    fn is_cancelled(&self) -> bool {
        false
    }
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl IndexProgress for NoProgress {}

/// What a refresh did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexStats {
    /// Files the walk found (after ignore rules), skipped ones included, and the secret
    /// folders it did not enter (each counted once, as listed in `skipped`).
    pub files_seen: u64,
    /// Files chunked in this refresh (new or changed content).
    pub files_indexed: u64,
    /// Files whose content was already indexed.
    pub files_unchanged: u64,
    /// Files that were indexed before and are gone (or now ignored).
    pub files_deleted: u64,
    /// Files not chunked, with the reason.
    pub skipped: Vec<SkippedFile>,
    /// Bytes of the files chunked in this refresh.
    pub bytes_indexed: u64,
    /// Lines of the files chunked in this refresh.
    pub lines_indexed: u64,
    /// Chunks written in this refresh.
    pub chunks_added: u64,
    /// Chunks removed (of changed and deleted files).
    pub chunks_removed: u64,
    /// Chunks in the index after the refresh.
    pub chunks_total: u64,
    /// Whether the index was built from scratch (first run, or the configuration or
    /// format changed).
    pub rebuilt: bool,
    /// Wall time of the refresh.
    pub elapsed: Duration,
}

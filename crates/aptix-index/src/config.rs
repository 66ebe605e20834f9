//! What an index is built with: walking limits, chunk sizes, writer resources.

use crate::IndexError;
use crate::kind::FileKind;

/// Folder names skipped wherever they appear in the workspace, besides hidden entries
/// and whatever `.gitignore`, `.ignore` and `.aptixignore` exclude.
///
/// They hold build outputs, dependencies or tool state, never the user's own source:
/// `target` (Cargo), `node_modules`, `dist`, `build`, `out` (JavaScript and general
/// build output), `obj` (.NET), `__pycache__`, `.venv`, `venv` (Python),
/// `.git`, `.hg`, `.svn` and `.aptix` (this index). Hidden folders are skipped anyway;
/// they are listed so the list stays right when hidden files are turned on. `bin` is
/// deliberately absent: .NET writes build output there, but Cargo keeps source in
/// `src/bin/` (and .NET's output is mostly binary, which is skipped anyway).
pub(crate) const DEFAULT_EXCLUDED_DIRS: &[&str] = &[
    "target",
    "node_modules",
    "dist",
    "build",
    "out",
    "obj",
    "__pycache__",
    ".venv",
    "venv",
    ".git",
    ".hg",
    ".svn",
    ".aptix",
];

/// How files are cut into chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkingConfig {
    /// Chunks shorter than this many lines are merged with a neighbour when the result
    /// still fits the maximum. Default 5.
    pub min_lines: usize,
    /// A syntax node longer than this many lines is split at its children. Default 120.
    pub max_lines: usize,
    /// A chunk larger than this many bytes is split too (long lines). Default 8 KiB.
    pub max_bytes: usize,
    /// Window length, in lines, for files without a grammar and for nodes without
    /// children to split at. Default 60.
    pub window_lines: usize,
    /// Files larger than this are cut into line windows without being parsed. Parsing
    /// dominates indexing time (tree-sitter parses about 5 MB/s per core here) and
    /// files this large are mostly generated: bindings, tables. Default 256 KiB.
    pub max_syntax_bytes: usize,
}

impl Default for ChunkingConfig {
    fn default() -> ChunkingConfig {
        ChunkingConfig {
            min_lines: 5,
            max_lines: 120,
            max_bytes: 8 * 1024,
            window_lines: 60,
            max_syntax_bytes: 256 * 1024,
        }
    }
}

/// Everything an index is opened with. `Default` suits most workspaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexConfig {
    /// The `repo` metadata value of every chunk; `None` takes the workspace folder's name.
    pub repo_name: Option<String>,
    /// Files larger than this are skipped and reported. Default 1 MiB.
    pub max_file_bytes: u64,
    /// Files with a line longer than this are skipped as minified or generated.
    /// Default 16 KiB.
    pub max_line_bytes: usize,
    /// Folder names skipped anywhere in the tree. Default: build output and tool folders
    /// (`target`, `node_modules`, `dist`, `build`, `out`, `obj`, `__pycache__`, `.venv`,
    /// `venv`) and version-control and Aptix folders (`.git`, `.hg`, `.svn`, `.aptix`).
    pub excluded_dirs: Vec<String>,
    /// Whether hidden files and folders (names starting with `.`) are indexed.
    /// Default false.
    pub include_hidden: bool,
    /// Kinds of file (see [`FileKind`]) that are not indexed at all, as if ignored.
    /// Default [`FileKind::SKIPPED_BY_DEFAULT`]: lockfiles, generated and vendored files.
    pub skipped_kinds: Vec<FileKind>,
    /// Chunk sizes.
    pub chunking: ChunkingConfig,
    /// Threads reading and chunking files; 0 means one per core. Default 0.
    pub threads: usize,
    /// Threads of the tantivy writer (1 or 2 on small machines). Default 1.
    pub writer_threads: usize,
    /// Memory budget of the tantivy writer, in bytes, shared by its threads; at least
    /// 15 MB per writer thread (tantivy's floor). Default 64 MB.
    pub writer_heap_bytes: usize,
    /// Files that hold secrets under names the built-in rules cannot know (`aptix
    /// serve`'s bearer tokens file, when it lies in the workspace), by absolute path:
    /// like the files [`is_secret_path`](crate::is_secret_path) names, they are never
    /// indexed, searched, listed or read by a tool. Not part of what makes an index
    /// rebuild: an index that holds one of them gives none of its text. Default none.
    pub secret_files: Vec<std::path::PathBuf>,
}

impl Default for IndexConfig {
    fn default() -> IndexConfig {
        IndexConfig {
            repo_name: None,
            max_file_bytes: 1024 * 1024,
            max_line_bytes: 16 * 1024,
            excluded_dirs: DEFAULT_EXCLUDED_DIRS
                .iter()
                .map(|d| (*d).to_owned())
                .collect(),
            include_hidden: false,
            skipped_kinds: FileKind::SKIPPED_BY_DEFAULT.to_vec(),
            chunking: ChunkingConfig::default(),
            threads: 0,
            writer_threads: 1,
            writer_heap_bytes: 64 * 1024 * 1024,
            secret_files: Vec::new(),
        }
    }
}

/// tantivy refuses writer heaps below this per thread.
const MIN_HEAP_PER_THREAD: usize = 15_000_000;

impl IndexConfig {
    /// Whether the file or folder at `relative` (`/`-separated, below the canonical
    /// workspace `root`) may hold secrets: its name says so ([`is_secret_path`]), or it
    /// is one of the [`secret_files`](Self::secret_files). The one rule the walk, the
    /// search and the tools ask.
    ///
    /// [`is_secret_path`]: crate::is_secret_path
    pub(crate) fn holds_secrets(&self, root: &std::path::Path, relative: &str) -> bool {
        crate::is_secret_path(relative)
            || (!self.secret_files.is_empty()
                && self
                    .secret_files
                    .iter()
                    .any(|file| *file == root.join(relative)))
    }

    pub(crate) fn validate(&self) -> Result<(), IndexError> {
        let invalid = |field, reason| Err(IndexError::InvalidConfig { field, reason });
        let chunking = &self.chunking;
        if chunking.max_lines == 0 || chunking.window_lines == 0 || chunking.max_bytes == 0 {
            return invalid("chunking", "sizes must be positive");
        }
        if chunking.min_lines > chunking.max_lines {
            return invalid("chunking.min_lines", "must not exceed max_lines");
        }
        if self.writer_threads == 0 || self.writer_threads > 8 {
            return invalid("writer_threads", "must be between 1 and 8");
        }
        if self.writer_heap_bytes < MIN_HEAP_PER_THREAD * self.writer_threads {
            return invalid(
                "writer_heap_bytes",
                "must be at least 15 MB per writer thread",
            );
        }
        Ok(())
    }

    /// The reading threads to use.
    pub(crate) fn reader_threads(&self) -> usize {
        if self.threads > 0 {
            return self.threads;
        }
        std::thread::available_parallelism().map_or(2, |n| n.get())
    }

    /// A digest of every setting that changes what is stored: a different fingerprint
    /// makes the next refresh rebuild the index from scratch.
    pub(crate) fn fingerprint(&self, repo: &str) -> String {
        let c = &self.chunking;
        let mut hasher = blake3::Hasher::new();
        let text = format!(
            "format={FORMAT_VERSION};repo={repo};max_file={};max_line={};excluded={:?};hidden={};skipped_kinds={:?};chunking={},{},{},{},{};grammars={:?}",
            self.max_file_bytes,
            self.max_line_bytes,
            self.excluded_dirs,
            self.include_hidden,
            self.skipped_kinds,
            c.min_lines,
            c.max_lines,
            c.max_bytes,
            c.window_lines,
            c.max_syntax_bytes,
            crate::language::enabled_grammars(),
        );
        hasher.update(text.as_bytes());
        hasher.finalize().to_hex().chars().take(16).collect()
    }
}

/// Bumped whenever the schema, the tokenizer, the chunker or the redaction of secrets
/// changes what is stored (4: credential-shaped text is redacted; 5: a key block stops
/// where its key text does; 6: keys in comments, URL passwords, JSON web tokens; 7: CJK
/// text as pairs of characters).
pub(crate) const FORMAT_VERSION: u32 = 7;

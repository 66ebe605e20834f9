//! [`WorkspaceIndex`]: one workspace's index under `<root>/.aptix/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use aptix_rag::Chunk;
use tantivy::collector::DocSetCollector;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

use crate::manifest::{self, FileRecord, Payload};
use crate::progress::{IndexProgress, IndexStats};
use crate::search::{self, CorpusStats, SearchQuery, SearchResults};
use crate::store::{self, Fields};
use crate::{IndexConfig, IndexError, refresh, walk};

/// The folder, inside the workspace, that holds everything this crate writes.
pub const APTIX_DIR: &str = ".aptix";

/// Creates `<workspace>/.aptix/` when missing, with a `.gitignore` that keeps it out of
/// version control, and returns it: the one place the folder is made, whether the index
/// or the session store needs it first. A file of that name is said to be one.
pub fn ensure_aptix_dir(workspace: &Path) -> Result<PathBuf, IndexError> {
    let dir = workspace.join(APTIX_DIR);
    if dir.exists() && !dir.is_dir() {
        return Err(IndexError::Io {
            path: dir,
            source: std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a file is in the way: Aptix keeps the workspace's index and sessions in a \
                 folder of this name (move the file)",
            ),
        });
    }
    std::fs::create_dir_all(&dir).map_err(|source| IndexError::Io {
        path: dir.clone(),
        source,
    })?;
    let gitignore = dir.join(".gitignore");
    if !gitignore.exists() {
        std::fs::write(
            &gitignore,
            "# Aptix state (sessions, index): local to this machine.\n*\n",
        )
        .map_err(|source| IndexError::Io {
            path: gitignore,
            source,
        })?;
    }
    Ok(dir)
}

/// The index of one workspace: open it, [`refresh`](Self::refresh) it, search it.
///
/// Cloning is cheap and clones share the index. Searches may run while a refresh is
/// under way; they see the last committed state until the refresh commits.
#[derive(Clone)]
pub struct WorkspaceIndex {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for WorkspaceIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceIndex")
            .field("root", &self.inner.root)
            .field("repo", &self.inner.repo)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub(crate) root: PathBuf,
    pub(crate) index_dir: PathBuf,
    pub(crate) config: IndexConfig,
    pub(crate) repo: String,
    pub(crate) fingerprint: String,
    pub(crate) index: Index,
    pub(crate) fields: Fields,
    pub(crate) reader: IndexReader,
    /// Serialises refreshes within this process (tantivy's lock covers other processes).
    refresh_lock: Mutex<()>,
    /// BM25 statistics of the last searcher generation searched.
    stats_cache: Mutex<Option<(u64, Arc<CorpusStats>)>>,
}

impl WorkspaceIndex {
    /// Opens the index of the workspace at `root`, creating `<root>/.aptix/` (with a
    /// `.gitignore` that keeps it out of version control) when absent.
    ///
    /// Opening does not index anything: call [`refresh`](Self::refresh).
    pub fn open(root: impl AsRef<Path>, config: IndexConfig) -> Result<WorkspaceIndex, IndexError> {
        config.validate()?;
        let root = crate::files::canonical_root(root.as_ref())?;
        let index_dir = ensure_aptix_dir(&root)?.join("index");
        std::fs::create_dir_all(&index_dir).map_err(|source| IndexError::Io {
            path: index_dir.clone(),
            source,
        })?;
        let (index, fields) = store::open_or_create(&index_dir)?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|source| IndexError::Store {
                path: index_dir.clone(),
                source,
            })?;
        let repo = config.repo_name.clone().unwrap_or_else(|| {
            root.file_name()
                .map(|name| name.to_string_lossy().into_owned())
                .unwrap_or_else(|| "workspace".to_owned())
        });
        let fingerprint = config.fingerprint(&repo);
        Ok(WorkspaceIndex {
            inner: Arc::new(Inner {
                root,
                index_dir,
                config,
                repo,
                fingerprint,
                index,
                fields,
                reader,
                refresh_lock: Mutex::new(()),
                stats_cache: Mutex::new(None),
            }),
        })
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// The workspace's files under the rules this index was built with, for listing and
    /// reading them one at a time.
    pub fn files(&self) -> crate::WorkspaceFiles {
        crate::WorkspaceFiles::from_parts(self.inner.root.clone(), self.inner.config.clone())
    }

    /// The `repo` metadata value of this workspace's chunks.
    pub fn repo(&self) -> &str {
        &self.inner.repo
    }

    /// Brings the index up to date with the workspace: new and changed files are
    /// chunked, removed ones dropped, unchanged ones (same size and modification
    /// time, or same content hash) left alone. Everything is published in one atomic
    /// commit at the end; an error or a cancellation before it leaves the previous
    /// index as it was.
    pub fn refresh(&self, progress: &dyn IndexProgress) -> Result<IndexStats, IndexError> {
        let _guard = self
            .inner
            .refresh_lock
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        refresh::refresh(&self.inner, progress)
    }

    /// Whether a refresh would change anything, judged cheaply: a walk comparing file
    /// sizes and modification times with the manifest, reading no file.
    pub fn is_stale(&self) -> Result<bool, IndexError> {
        if self.inner.committed_fingerprint()? != Some(self.inner.fingerprint.clone()) {
            return Ok(true);
        }
        let manifest = self.inner.manifest()?;
        let walk = walk::walk(
            &self.inner.root,
            &self.inner.config,
            self.inner.config.reader_threads(),
        );
        if walk.candidates.len() != manifest.len() {
            return Ok(true);
        }
        Ok(walk.candidates.iter().any(|candidate| {
            manifest.get(&candidate.path).is_none_or(|record| {
                record.size != candidate.size || record.mtime_ns != candidate.mtime_ns
            })
        }))
    }

    /// Searches the committed index: BM25 over the code-tokenized query, with the scope
    /// conditions applied inside the query.
    pub fn search(&self, query: &SearchQuery) -> Result<SearchResults, IndexError> {
        search::search(&self.inner, query)
    }
}

impl WorkspaceIndex {
    /// The committed chunks of one file (relative, `/`-separated path), in line order;
    /// empty for a file the index does not hold.
    pub fn file_chunks(&self, path: &str) -> Result<Vec<Chunk>, IndexError> {
        let inner = &self.inner;
        inner.reader.reload().map_err(|e| inner.store_error(e))?;
        let searcher = inner.reader.searcher();
        let query = BooleanQuery::new(vec![
            (Occur::Must, term_query(inner.fields.path, path)),
            (
                Occur::Must,
                term_query(inner.fields.kind, store::KIND_CHUNK),
            ),
        ]);
        let addresses = searcher
            .search(&query, &DocSetCollector)
            .map_err(|e| inner.store_error(e))?;
        let mut chunks = Vec::with_capacity(addresses.len());
        for address in addresses {
            let doc: TantivyDocument = searcher.doc(address).map_err(|e| inner.store_error(e))?;
            chunks.extend(store::chunk_from_document(&inner.fields, &doc));
        }
        chunks.sort_by_key(|chunk| chunk.lines);
        Ok(chunks)
    }
}

fn term_query(field: tantivy::schema::Field, value: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    ))
}

impl Inner {
    pub(crate) fn store_error(&self, source: tantivy::TantivyError) -> IndexError {
        IndexError::Store {
            path: self.index_dir.clone(),
            source,
        }
    }

    /// The fingerprint the committed index was built with; `None` before the first commit.
    pub(crate) fn committed_fingerprint(&self) -> Result<Option<String>, IndexError> {
        let metas = self.index.load_metas().map_err(|e| self.store_error(e))?;
        Ok(Payload::parse(metas.payload.as_deref()).map(|payload| payload.fingerprint))
    }

    pub(crate) fn manifest(&self) -> Result<HashMap<String, FileRecord>, IndexError> {
        self.reader.reload().map_err(|e| self.store_error(e))?;
        manifest::load(&self.reader.searcher(), &self.fields).map_err(|e| self.store_error(e))
    }

    /// The live-document statistics of `searcher`'s generation, computed once per
    /// generation.
    pub(crate) fn corpus_stats(
        &self,
        searcher: &tantivy::Searcher,
    ) -> tantivy::Result<Arc<CorpusStats>> {
        let generation = searcher.generation().generation_id();
        if let Ok(cache) = self.stats_cache.lock()
            && let Some((cached, stats)) = cache.as_ref()
            && *cached == generation
        {
            return Ok(Arc::clone(stats));
        }
        let stats = Arc::new(CorpusStats::compute(searcher, &self.fields)?);
        if let Ok(mut cache) = self.stats_cache.lock() {
            *cache = Some((generation, Arc::clone(&stats)));
        }
        Ok(stats)
    }

    pub(crate) fn count_chunks(&self) -> Result<u64, IndexError> {
        refresh::count_chunks(self).map_err(|e| self.store_error(e))
    }
}

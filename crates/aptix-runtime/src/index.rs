//! The workspace index as a turn uses it: opened, refreshed when stale, the retriever
//! of `[CONTEXT]`, and the built-in read-only tools over it.

use std::path::Path;
use std::sync::Arc;

use aptix_index::{IndexConfig, IndexProgress, IndexStats, NoProgress, WorkspaceIndex};
use aptix_orchestrator::{ReferenceReader, ServerTool};
use aptix_rag::Retriever;
use aptix_tools::FileReader;

use crate::settings::Settings;
use crate::{APTIX_DIR, Error};
use aptix_model::error_chain as chain;

/// What the runtime has to tell a person while it wires a workspace, for the front end
/// to show (on stderr, in a log, as an editor's notice). The runtime itself writes
/// nothing; by default everything goes to `tracing`.
pub trait Reporter: Send + Sync {
    /// Worth knowing: the index is built for the first time, which takes a while.
    fn note(&self, message: &str) {
        tracing::info!("{message}");
    }

    /// Something failed that the work goes on without: the index could not be opened
    /// (no retrieved context) or refreshed (used as it is).
    fn warn(&self, message: &str) {
        tracing::warn!("{message}");
    }

    /// An observer of one index refresh (files found, files done), dropped when the
    /// refresh ends: a progress bar, say.
    fn indexing(&self) -> Box<dyn IndexProgress + '_> {
        Box::new(NoProgress)
    }
}

/// Opens the index of `workspace`, creating it when missing (it lives under `.aptix/`),
/// with `secret_files` kept out of it.
pub(crate) fn open_index(
    workspace: &Path,
    secret_files: &[std::path::PathBuf],
) -> Result<WorkspaceIndex, Error> {
    let config = IndexConfig {
        secret_files: secret_files.to_vec(),
        ..IndexConfig::default()
    };
    WorkspaceIndex::open(workspace, config).map_err(|source| Error::Index {
        action: "open the index of",
        path: workspace.to_path_buf(),
        source: Box::new(source),
    })
}

/// Refreshes `index`: only files whose content changed are read and chunked again, and
/// everything is published in one commit (an interrupted refresh leaves the previous
/// index intact). Progress goes to the reporter's [`Reporter::indexing`].
pub fn refresh_index(index: &WorkspaceIndex, reporter: &dyn Reporter) -> Result<IndexStats, Error> {
    let progress = reporter.indexing();
    let result = index.refresh(progress.as_ref());
    drop(progress);
    result.map_err(|source| Error::Index {
        action: "index",
        path: index.root().to_path_buf(),
        source: Box::new(source),
    })
}

/// Refreshes `index` when it is stale (or cannot tell); a failed refresh is a warning,
/// and the index is used as it is.
fn refresh_if_stale(
    workspace: &Path,
    index: &WorkspaceIndex,
    first: bool,
    reporter: &dyn Reporter,
) {
    match index.is_stale() {
        Ok(false) => {}
        Ok(true) | Err(_) => {
            if first {
                reporter.note(&format!(
                    "indexing {} for the first time (`aptix index` does this ahead of time)",
                    workspace.display()
                ));
            }
            match refresh_index(index, reporter) {
                Ok(stats) => tracing::info!(
                    files_indexed = stats.files_indexed,
                    files_unchanged = stats.files_unchanged,
                    files_removed = stats.files_deleted,
                    chunks = stats.chunks_total,
                    "index refreshed in {:.1?}",
                    stats.elapsed
                ),
                Err(error) => {
                    reporter.warn(&format!("{}; using the index as it is", chain(&error)));
                }
            }
        }
    }
}

/// The workspace's index, opened once into `opened` and shared by every turn made from
/// it after (a front end serving many sessions on one workspace, such as `aptix acp`,
/// holds one index, not one per session); refreshed when stale each time.
/// `secret_files` are kept out of it and of the tools.
pub(crate) fn shared_index(
    workspace: &Path,
    secret_files: &[std::path::PathBuf],
    opened: &std::sync::Mutex<Option<WorkspaceIndex>>,
    reporter: &dyn Reporter,
) -> Result<WorkspaceIndex, Error> {
    let mut opened = opened
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    match &*opened {
        Some(index) => {
            refresh_if_stale(workspace, index, false, reporter);
            Ok(index.clone())
        }
        None => {
            // Opened (created when missing) and refreshed first when stale: a first
            // build is noted, and a refresh that fails is a warning, the index used as
            // it is.
            let first = !exists(workspace);
            let index = open_index(workspace, secret_files)?;
            refresh_if_stale(workspace, &index, first, reporter);
            *opened = Some(index.clone());
            Ok(index)
        }
    }
}

/// Whether `workspace` has an index already (without creating one).
fn exists(workspace: &Path) -> bool {
    workspace
        .join(APTIX_DIR)
        .join("index")
        .join("meta.json")
        .is_file()
}

/// What the workspace index gives a turn.
pub(crate) struct IndexParts {
    /// The retriever of `[CONTEXT]`, when there is an index.
    pub(crate) retriever: Option<Arc<dyn Retriever>>,
    /// The built-in server tools the settings offer.
    pub(crate) tools: Vec<Arc<dyn ServerTool>>,
    /// The reader of the files a user turn names by reference, under the tools' rules.
    pub(crate) references: Option<Arc<dyn ReferenceReader>>,
}

/// The index of `workspace` for a turn: retrieval is advisory, so an index that cannot
/// be opened is a warning and turns go on without context. The built-in tools are those
/// the settings offer, with `read_file` reading through `reader` when one is given (an
/// editor's buffers) and the disk otherwise; so are the files a turn names by reference,
/// whether or not the index opened.
pub(crate) fn turn_parts(
    workspace: &Path,
    secret_files: &[std::path::PathBuf],
    settings: &Settings,
    opened: &std::sync::Mutex<Option<WorkspaceIndex>>,
    reader: Option<Arc<dyn FileReader>>,
    reporter: &dyn Reporter,
) -> IndexParts {
    let files = IndexConfig {
        secret_files: secret_files.to_vec(),
        ..IndexConfig::default()
    };
    let references = aptix_index::WorkspaceFiles::new(workspace, files)
        .ok()
        .map(|files| {
            let reader = reader
                .clone()
                .unwrap_or_else(|| Arc::new(aptix_tools::DiskReader));
            Arc::new(aptix_tools::ReferenceFiles::new(
                aptix_tools::Workspace::new(files),
                reader,
            )) as Arc<dyn ReferenceReader>
        });
    let index = match shared_index(workspace, secret_files, opened, reporter) {
        Ok(index) => index,
        Err(error) => {
            reporter.warn(&format!(
                "{}; asking without retrieved context",
                chain(&error)
            ));
            return IndexParts {
                retriever: None,
                tools: Vec::new(),
                references,
            };
        }
    };
    let tools = if aptix_tools::TOOL_NAMES
        .iter()
        .any(|name| settings.offers_tool(name))
    {
        let all = match reader {
            Some(reader) => aptix_tools::builtin_tools_with_reader(index.clone(), reader),
            None => aptix_tools::builtin_tools(index.clone()),
        };
        all.into_iter()
            .filter(|tool| settings.offers_tool(tool.name()))
            .collect()
    } else {
        Vec::new()
    };
    IndexParts {
        retriever: Some(Arc::new(FreshIndex::new(index)) as Arc<dyn Retriever>),
        tools,
        references,
    }
}

/// The workspace index as the retriever of a front end that lives long (an editor's
/// session in `aptix acp`, `aptix serve`): before a turn retrieves, the index is
/// refreshed when the workspace changed since it was last looked at, so that a file
/// the user saved after the session opened is found, and found as it is now. The look
/// (a walk of the workspace comparing sizes and times) is taken at most once per ten of
/// its own durations, and by one turn at a time (the others use the index as it is), so
/// that a large workspace under many turns costs a tenth of a core at most. A refresh
/// that fails is logged and the index used as it is.
struct FreshIndex {
    index: WorkspaceIndex,
    looked: std::sync::Mutex<Looked>,
    looking: std::sync::atomic::AtomicBool,
}

/// When the workspace was last compared with the index, and how long that took.
struct Looked {
    at: std::time::Instant,
    took: std::time::Duration,
}

/// The least time between two looks, however quick they are.
const LOOK_AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

impl FreshIndex {
    /// Over an index just opened fresh.
    fn new(index: WorkspaceIndex) -> FreshIndex {
        FreshIndex {
            index,
            looked: std::sync::Mutex::new(Looked {
                at: std::time::Instant::now(),
                took: std::time::Duration::ZERO,
            }),
            looking: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Refreshes the index when it is due for a look and the workspace changed.
    async fn refresh_when_due(&self) {
        use std::sync::atomic::Ordering;
        {
            let looked = self
                .looked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if looked.at.elapsed() < (looked.took * 10).max(LOOK_AT_MOST_EVERY) {
                return;
            }
        }
        if self.looking.swap(true, Ordering::AcqRel) {
            return;
        }
        // Given back however the look ends (a turn dropped mid-look included).
        struct Looking<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for Looking<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _looking = Looking(&self.looking);
        let started = std::time::Instant::now();
        // The same look and refresh as a session's opening (`refresh_if_stale`), told
        // to the log: no one is waiting on a progress bar mid-session.
        struct Logged;
        impl Reporter for Logged {}
        let index = self.index.clone();
        let look = move || refresh_if_stale(index.root(), &index, false, &Logged);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let _ = handle.spawn_blocking(look).await;
            }
            Err(_) => look(),
        }
        let mut looked = self
            .looked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *looked = Looked {
            at: std::time::Instant::now(),
            took: started.elapsed(),
        };
    }
}

#[async_trait::async_trait]
impl Retriever for FreshIndex {
    async fn retrieve(
        &self,
        query: &aptix_rag::RetrievalQuery,
    ) -> Result<aptix_rag::Retrieval, aptix_rag::RagError> {
        self.refresh_when_due().await;
        self.index.retrieve(query).await
    }
}

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
    // What the opening says is kept, so that the turn's own look (`FreshIndex`) does
    // not say the same failure again: a one-shot `aptix ask` whose refresh found the
    // index locked printed the warning twice, once here and once from the turn.
    let opening = Repeats::after(reporter, None);
    let index = match shared_index(workspace, secret_files, opened, &opening) {
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
    let said = opening.into_last();
    IndexParts {
        retriever: Some(
            Arc::new(FreshIndex::new(index, Arc::new(Logged), said)) as Arc<dyn Retriever>
        ),
        tools,
        references,
    }
}

/// A reporter that passes everything on to `to`, except a warning that is the one said
/// last (`previous`): a failure that persists from one look at the workspace to the
/// next (a lock another process holds, an unreadable folder) is said once, and again
/// only once it changed or cleared in between. The repeat goes to the debug log.
struct Repeats<'a> {
    to: &'a dyn Reporter,
    previous: Option<String>,
    /// The last warning of this look, said or repeated.
    last: std::sync::Mutex<Option<String>>,
}

impl<'a> Repeats<'a> {
    /// Passing on to `to`, `previous` being the warning said last.
    fn after(to: &'a dyn Reporter, previous: Option<String>) -> Repeats<'a> {
        Repeats {
            to,
            previous,
            last: std::sync::Mutex::new(None),
        }
    }

    /// The last warning of this look (`None` when it had none: the failure cleared).
    fn into_last(self) -> Option<String> {
        self.last
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Reporter for Repeats<'_> {
    fn note(&self, message: &str) {
        self.to.note(message);
    }

    fn warn(&self, message: &str) {
        if self.previous.as_deref() == Some(message) {
            tracing::debug!("{message} (as at the last look)");
        } else {
            self.to.warn(message);
        }
        *self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(message.to_owned());
    }

    fn indexing(&self) -> Box<dyn IndexProgress + '_> {
        self.to.indexing()
    }
}

/// The log, as the reporter of the looks a long-lived front end's turns take: no one is
/// waiting on a progress bar mid-session.
struct Logged;

impl Reporter for Logged {}

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
    /// Where the looks report, and the warning said last (see [`Repeats`]).
    log: Arc<dyn Reporter>,
    said: Arc<std::sync::Mutex<Option<String>>>,
}

/// When the workspace was last compared with the index, and how long that took.
struct Looked {
    at: std::time::Instant,
    took: std::time::Duration,
}

/// The least time between two looks, however quick they are.
const LOOK_AT_MOST_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

impl FreshIndex {
    /// Over an index just opened fresh, the opening's look having said `said` last;
    /// the looks report to `log`.
    fn new(index: WorkspaceIndex, log: Arc<dyn Reporter>, said: Option<String>) -> FreshIndex {
        FreshIndex {
            index,
            looked: std::sync::Mutex::new(Looked {
                at: std::time::Instant::now(),
                took: std::time::Duration::ZERO,
            }),
            looking: std::sync::atomic::AtomicBool::new(false),
            log,
            said: Arc::new(std::sync::Mutex::new(said)),
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
        // to the log, a failure the last look said already not said again.
        let index = self.index.clone();
        let log = Arc::clone(&self.log);
        let said = Arc::clone(&self.said);
        let look = move || {
            let mut said = said
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let repeats = Repeats::after(log.as_ref(), said.take());
            refresh_if_stale(index.root(), &index, false, &repeats);
            *said = repeats.into_last();
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The warnings said, in order.
    #[derive(Default)]
    struct Record(std::sync::Mutex<Vec<String>>);

    impl Reporter for Record {
        fn warn(&self, message: &str) {
            self.0.lock().unwrap().push(message.to_owned());
        }
    }

    impl Record {
        fn said(&self) -> Vec<String> {
            self.0.lock().unwrap().clone()
        }
    }

    /// Makes the next `refresh_when_due` look, however recent the last look was.
    fn due(fresh: &FreshIndex) {
        let mut looked = fresh.looked.lock().unwrap();
        looked.at = std::time::Instant::now()
            .checked_sub(std::time::Duration::from_secs(5))
            .unwrap();
    }

    /// Holds the index's writer lock, as another `aptix index` refreshing it does.
    fn hold_writer_lock(workspace: &Path) -> std::fs::File {
        let lock = std::fs::File::open(
            workspace
                .join(APTIX_DIR)
                .join("index")
                .join(".tantivy-writer.lock"),
        )
        .unwrap();
        lock.try_lock().unwrap();
        lock
    }

    #[tokio::test]
    async fn a_failure_that_persists_from_look_to_look_is_said_once() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path();
        std::fs::write(workspace.join("a.rs"), "fn a() {}\n").unwrap();
        let index = open_index(workspace, &[]).unwrap();
        refresh_index(&index, &Logged).unwrap();
        std::fs::write(workspace.join("b.rs"), "fn b() {}\n").unwrap();
        let lock = hold_writer_lock(workspace);

        // The opening says it (as `aptix ask` shows it on stderr)...
        let record = Arc::new(Record::default());
        let opening = Repeats::after(record.as_ref(), None);
        refresh_if_stale(workspace, &index, false, &opening);
        let said = opening.into_last();
        assert_eq!(record.said().len(), 1, "{:?}", record.said());
        assert!(
            record.said()[0].contains("being refreshed by another process"),
            "{:?}",
            record.said()
        );

        // ...and the turn's look, finding the same, does not say it again.
        let fresh = FreshIndex::new(index, Arc::clone(&record) as Arc<dyn Reporter>, said);
        due(&fresh);
        fresh.refresh_when_due().await;
        assert_eq!(record.said().len(), 1, "{:?}", record.said());

        // Once it cleared (the refresh went through), a new failure is said again.
        drop(lock);
        due(&fresh);
        fresh.refresh_when_due().await;
        assert_eq!(record.said().len(), 1, "{:?}", record.said());
        assert_eq!(*fresh.said.lock().unwrap(), None);
        std::fs::write(workspace.join("c.rs"), "fn c() {}\n").unwrap();
        let _lock = hold_writer_lock(workspace);
        due(&fresh);
        fresh.refresh_when_due().await;
        assert_eq!(record.said().len(), 2, "{:?}", record.said());
        assert_eq!(record.said()[0], record.said()[1]);
    }
}

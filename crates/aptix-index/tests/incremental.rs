//! Refreshes touch only what changed, and an interrupted refresh changes nothing.
// The fixture covers every grammar; without them chunks are line windows.
#![cfg(all(
    feature = "lang-rust",
    feature = "lang-python",
    feature = "lang-typescript",
    feature = "lang-javascript",
    feature = "lang-go",
    feature = "lang-java",
    feature = "lang-csharp"
))]

mod common;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use aptix_index::{
    FileOutcome, IndexConfig, IndexError, IndexProgress, NoProgress, SearchQuery, WorkspaceIndex,
};
use aptix_rag::ChunkId;
use common::*;

/// Every chunk id of the index, by path.
fn ids(index: &WorkspaceIndex) -> BTreeMap<String, Vec<ChunkId>> {
    SOURCES
        .iter()
        .map(|(path, _)| {
            let ids = index
                .file_chunks(path)
                .unwrap()
                .into_iter()
                .map(|c| c.id)
                .collect();
            ((*path).to_owned(), ids)
        })
        .collect()
}

/// Records outcomes; cancels once `cancel_after` files were written, if set.
#[derive(Default)]
struct Recorder {
    found: AtomicU64,
    done: Mutex<Vec<(String, FileOutcome)>>,
    committed: AtomicU64,
    cancel_after: Option<usize>,
}

impl IndexProgress for Recorder {
    fn files_found(&self, total: u64) {
        self.found.store(total, Ordering::SeqCst);
    }
    fn file_done(&self, path: &str, outcome: &FileOutcome, _bytes: u64) {
        self.done
            .lock()
            .unwrap()
            .push((path.to_owned(), outcome.clone()));
    }
    fn committing(&self) {
        self.committed.fetch_add(1, Ordering::SeqCst);
    }
    fn is_cancelled(&self) -> bool {
        self.cancel_after
            .is_some_and(|limit| self.done.lock().unwrap().len() >= limit)
    }
}

#[test]
fn an_unchanged_workspace_is_not_stale_and_refreshes_to_nothing() {
    let workspace = workspace();
    let index = WorkspaceIndex::open(workspace.path(), IndexConfig::default()).unwrap();
    assert!(index.is_stale().unwrap(), "never indexed");
    let first = index.refresh(&NoProgress).unwrap();
    assert!(first.rebuilt);
    assert!(!index.is_stale().unwrap());
    let recorder = Recorder::default();
    let second = index.refresh(&recorder).unwrap();
    assert!(!second.rebuilt);
    assert_eq!(second.files_indexed, 0);
    assert_eq!(second.files_unchanged, SOURCES.len() as u64);
    assert_eq!(second.chunks_added + second.chunks_removed, 0);
    assert_eq!(second.chunks_total, first.chunks_total);
    assert_eq!(recorder.found.load(Ordering::SeqCst), SOURCES.len() as u64);
    assert_eq!(recorder.done.lock().unwrap().len(), SOURCES.len());
    assert_eq!(
        recorder.committed.load(Ordering::SeqCst),
        0,
        "nothing to commit"
    );
}

#[test]
fn editing_one_file_changes_only_its_chunks() {
    let workspace = workspace();
    let index = indexed(workspace.path(), IndexConfig::default());
    let before = ids(&index);
    let edited = PYTHON.replace("return int(code)", "return int(code.strip())");
    write(workspace.path(), "py/invoice.py", &edited);
    assert!(index.is_stale().unwrap());

    let recorder = Recorder::default();
    let stats = index.refresh(&recorder).unwrap();
    assert_eq!(stats.files_indexed, 1, "{stats:#?}");
    assert_eq!(stats.files_unchanged, SOURCES.len() as u64 - 1);
    assert_eq!(stats.bytes_indexed, edited.len() as u64);
    let after = ids(&index);
    for (path, ids) in &before {
        if path == "py/invoice.py" {
            assert_ne!(&after[path], ids);
            // Only the edited method's chunk got a new id.
            let changed = ids.iter().filter(|id| !after[path].contains(id)).count();
            assert_eq!(changed, 1);
        } else {
            assert_eq!(&after[path], ids, "{path}");
        }
    }
    let done = recorder.done.lock().unwrap();
    let indexed: Vec<_> = done
        .iter()
        .filter(|(_, outcome)| matches!(outcome, FileOutcome::Indexed { .. }))
        .collect();
    assert_eq!(indexed.len(), 1);
    assert_eq!(indexed[0].0, "py/invoice.py");
    let hits = index.search(&SearchQuery::new("strip")).unwrap().hits;
    assert_eq!(hits[0].chunk.path, "py/invoice.py");
}

#[test]
fn a_touched_file_with_the_same_content_is_not_rechunked() {
    let workspace = workspace();
    let index = indexed(workspace.path(), IndexConfig::default());
    let before = ids(&index);
    let file = std::fs::File::options()
        .write(true)
        .open(workspace.path().join("go/invoice.go"))
        .unwrap();
    file.set_modified(SystemTime::now() + Duration::from_secs(60))
        .unwrap();
    assert!(index.is_stale().unwrap());
    let stats = index.refresh(&NoProgress).unwrap();
    assert_eq!(stats.files_indexed, 0);
    assert_eq!(stats.files_unchanged, SOURCES.len() as u64);
    assert_eq!(ids(&index), before);
    // The new time is remembered: the next check reads nothing.
    assert!(!index.is_stale().unwrap());
}

#[test]
fn a_deleted_file_loses_its_chunks() {
    let workspace = workspace();
    let index = indexed(workspace.path(), IndexConfig::default());
    let java_chunks = index.file_chunks("java/InvoiceManager.java").unwrap().len() as u64;
    assert!(java_chunks > 0);
    assert!(
        !index
            .search(&SearchQuery::new("println"))
            .unwrap()
            .hits
            .is_empty()
    );
    std::fs::remove_file(workspace.path().join("java/InvoiceManager.java")).unwrap();
    assert!(index.is_stale().unwrap());
    let stats = index.refresh(&NoProgress).unwrap();
    assert_eq!(stats.files_deleted, 1);
    assert_eq!(stats.chunks_removed, java_chunks);
    assert!(
        index
            .file_chunks("java/InvoiceManager.java")
            .unwrap()
            .is_empty()
    );
    assert!(
        index
            .search(&SearchQuery::new("println"))
            .unwrap()
            .hits
            .is_empty()
    );
    // A file that becomes ignored counts as deleted too.
    write(workspace.path(), ".aptixignore", "secret/\ngo/\n");
    let stats = index.refresh(&NoProgress).unwrap();
    assert_eq!(stats.files_deleted, 1);
    assert!(index.file_chunks("go/invoice.go").unwrap().is_empty());
}

#[test]
fn an_interrupted_refresh_leaves_the_old_index_searchable() {
    let workspace = workspace();
    let index = indexed(workspace.path(), IndexConfig::default());
    let before = ids(&index);
    let hits_before = index
        .search(&SearchQuery::new("helper total"))
        .unwrap()
        .hits;
    // Every source changes; the refresh is stopped after some files were written to
    // the (uncommitted) index.
    for (path, content) in SOURCES {
        write(
            workspace.path(),
            path,
            &format!("{content}\n// interrupted_marker\n"),
        );
    }
    let recorder = Recorder {
        cancel_after: Some(3),
        ..Recorder::default()
    };
    let error = index.refresh(&recorder).unwrap_err();
    assert!(matches!(error, IndexError::Cancelled { .. }), "{error}");
    assert!(recorder.done.lock().unwrap().len() >= 3);
    assert_eq!(recorder.committed.load(Ordering::SeqCst), 0);

    // The old index is intact, in this handle and in a freshly opened one.
    assert_eq!(ids(&index), before);
    assert!(
        index
            .search(&SearchQuery::new("interrupted_marker"))
            .unwrap()
            .hits
            .is_empty()
    );
    let hits_after = index
        .search(&SearchQuery::new("helper total"))
        .unwrap()
        .hits;
    assert_eq!(hits_after, hits_before);
    let reopened = WorkspaceIndex::open(workspace.path(), IndexConfig::default()).unwrap();
    assert_eq!(ids(&reopened), before);
    drop(reopened);

    // The next refresh completes the work.
    assert!(index.is_stale().unwrap());
    let stats = index.refresh(&NoProgress).unwrap();
    assert_eq!(stats.files_indexed, SOURCES.len() as u64);
    assert!(
        !index
            .search(&SearchQuery::new("interrupted_marker"))
            .unwrap()
            .hits
            .is_empty()
    );
}

#[test]
fn a_changed_configuration_rebuilds_from_scratch() {
    let workspace = workspace();
    drop(indexed(workspace.path(), IndexConfig::default()));
    let config = IndexConfig {
        repo_name: Some("renamed".into()),
        ..IndexConfig::default()
    };
    let index = WorkspaceIndex::open(workspace.path(), config).unwrap();
    assert!(index.is_stale().unwrap());
    let stats = index.refresh(&NoProgress).unwrap();
    assert!(stats.rebuilt);
    assert_eq!(stats.files_indexed, SOURCES.len() as u64);
    let chunk = &index.file_chunks("web/legacy.js").unwrap()[0];
    assert_eq!(chunk.metadata["repo"], "renamed");
}

#[test]
fn a_second_writer_is_refused_while_one_is_refreshing() {
    let workspace = workspace();
    let index = indexed(workspace.path(), IndexConfig::default());
    write(workspace.path(), "web/legacy.js", "function changed() {}\n");
    let other = WorkspaceIndex::open(workspace.path(), IndexConfig::default()).unwrap();
    struct Nested<'a>(&'a WorkspaceIndex, Mutex<Option<Result<(), String>>>);
    impl IndexProgress for Nested<'_> {
        fn file_started(&self, _path: &str) {
            let mut seen = self.1.lock().unwrap();
            if seen.is_none() {
                *seen = Some(
                    self.0
                        .refresh(&NoProgress)
                        .map(|_| ())
                        .map_err(|e| format!("{e:?}")),
                );
            }
        }
    }
    let nested = Nested(&other, Mutex::new(None));
    index.refresh(&nested).unwrap();
    let outcome = nested.1.lock().unwrap().clone().unwrap();
    assert!(outcome.unwrap_err().starts_with("Locked"));
}

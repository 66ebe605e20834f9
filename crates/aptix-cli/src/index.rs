//! `aptix index`: builds or refreshes the workspace index (`aptix-index`) under
//! `<workspace>/.aptix/index/`, with a progress bar on stderr and a summary on stdout.
//!
//! The same refresh runs before every turn retrieves (`aptix_runtime::Workspace::index`),
//! when the index is stale, so an explicit `aptix index` is only needed to pay the cost
//! up front. A refresh is incremental (only changed files are read again) and publishes
//! everything in one commit: an interrupted run leaves the previous index intact.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aptix_index::{FileOutcome, IndexProgress, IndexStats};
use aptix_runtime::{Env, SettingsLayer, Workspace};
use indicatif::{HumanBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::exit::SUCCESS;
use crate::output::{StderrReporter, note, print_line};
use crate::workspace;

/// Runs `aptix index`; returns the exit code.
pub(crate) fn run(path: Option<&Path>, env: Env<'_>) -> Result<u8, anyhow::Error> {
    let workspace = workspace::resolve(path)?;
    // A folder inside a project gets an index of its own, which the project's commands
    // do not use: say so, for someone who meant the project.
    if path.is_some() {
        let enclosing = aptix_runtime::find_workspace(&workspace);
        if enclosing != workspace {
            note(format_args!(
                "{} is inside the workspace {}, whose commands use that workspace's index; this indexes {} alone (run `aptix index` in {} for the workspace)",
                workspace.display(),
                enclosing.display(),
                workspace.display(),
                enclosing.display()
            ));
        }
    }
    // Loaded with its settings, which may name files the index must never hold
    // (`aptix serve`'s tokens file).
    let index = Workspace::load(&workspace, &SettingsLayer::default(), env)?.open_index()?;
    // Another process refreshing the same index (an `ask` indexing on first use, an
    // editor's agent): waited for, as cargo waits for its build folder, rather than
    // failed; Ctrl-C ends the wait.
    let mut told = false;
    let stats = loop {
        match aptix_runtime::refresh_index(&index, &StderrReporter) {
            Err(aptix_runtime::Error::Index { source, .. })
                if matches!(*source, aptix_index::IndexError::Locked { .. }) =>
            {
                if !told {
                    note(format_args!(
                        "waiting for another process that is refreshing the index of {}",
                        workspace.display()
                    ));
                    told = true;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            other => break other?,
        }
    };
    print_line(&summary(&stats))?;
    for skipped in &stats.skipped {
        tracing::info!(path = ?skipped.path, reason = %skipped.reason, "skipped");
    }
    Ok(SUCCESS)
}

/// An [`IndexProgress`] that drives an `indicatif` bar: files done of files found,
/// bytes read, chunks made, and the rate. The bar is cleared when it is dropped, at the
/// end of the refresh.
pub(crate) struct BarProgress {
    bar: ProgressBar,
    started: Instant,
    bytes: AtomicU64,
    chunks: AtomicU64,
}

impl Drop for BarProgress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

impl BarProgress {
    pub(crate) fn new() -> BarProgress {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{spinner} indexing: {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message("walking the workspace");
        bar.enable_steady_tick(Duration::from_millis(120));
        BarProgress {
            bar,
            started: Instant::now(),
            bytes: AtomicU64::new(0),
            chunks: AtomicU64::new(0),
        }
    }

    fn message(&self) -> String {
        let bytes = self.bytes.load(Ordering::Relaxed);
        let chunks = self.chunks.load(Ordering::Relaxed);
        let seconds = self.started.elapsed().as_secs_f64().max(0.001);
        // Whole bytes per second are precise enough for a rate shown while it changes.
        let rate = (bytes as f64 / seconds) as u64;
        format!(
            "{} · {chunks} chunks · {}/s",
            HumanBytes(bytes),
            HumanBytes(rate)
        )
    }
}

impl IndexProgress for BarProgress {
    fn files_found(&self, total: u64) {
        self.bar.set_length(total);
        self.bar.set_style(
            ProgressStyle::with_template(
                "{spinner} indexing [{bar:30}] {pos}/{len} files · {msg} · eta {eta}",
            )
            .map(|style| style.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        self.bar.set_message(self.message());
    }

    fn file_done(&self, _path: &str, outcome: &FileOutcome, bytes: u64) {
        if let FileOutcome::Indexed { chunks } = outcome {
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
            self.chunks.fetch_add(
                u64::try_from(*chunks).unwrap_or(u64::MAX),
                Ordering::Relaxed,
            );
        }
        self.bar.inc(1);
        self.bar.set_message(self.message());
    }

    fn committing(&self) {
        self.bar.set_message("committing");
    }
}

/// The closing summary of a refresh.
fn summary(stats: &IndexStats) -> String {
    let seconds = stats.elapsed.as_secs_f64().max(0.001);
    let rate = (stats.bytes_indexed as f64 / seconds) as u64;
    let mut text = format!(
        "indexed {} ({}, {}) into {} in {:.1?} ({}/s); {} unchanged, {} removed, {} skipped; {} in the index",
        count(stats.files_indexed, "file"),
        HumanBytes(stats.bytes_indexed),
        count(stats.lines_indexed, "line"),
        count(stats.chunks_added, "chunk"),
        stats.elapsed,
        HumanBytes(rate),
        stats.files_unchanged,
        stats.files_deleted,
        stats.skipped.len(),
        count(stats.chunks_total, "chunk"),
    );
    if stats.rebuilt {
        text.push_str(" (built from scratch)");
    }
    text
}

/// `1 file`, `2 files`.
fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

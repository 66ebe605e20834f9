//! Finding the files to index: ripgrep's `ignore` walker with `.gitignore`, `.ignore`
//! and `.aptixignore` honoured even outside a git repository.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{WalkBuilder, WalkState};

use crate::IndexConfig;
use crate::progress::{SkipReason, SkippedFile};
use crate::secret::is_secret_path;

/// The workspace's own ignore file, in `.gitignore` syntax.
pub(crate) const APTIX_IGNORE_FILE: &str = ".aptixignore";

/// A file the walk found, before it is read.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// Relative to the workspace root, `/`-separated.
    pub(crate) path: String,
    pub(crate) absolute: PathBuf,
    pub(crate) size: u64,
    pub(crate) mtime_ns: u64,
}

/// The walk's result, sorted by path.
#[derive(Debug, Default)]
pub(crate) struct Walk {
    pub(crate) candidates: Vec<Candidate>,
    pub(crate) skipped: Vec<SkippedFile>,
}

/// Walks `root` on `threads` threads.
pub(crate) fn walk(root: &Path, config: &IndexConfig, threads: usize) -> Walk {
    let pruned: Pruned = Arc::default();
    let mut builder = builder(root, root, config, Some(Arc::clone(&pruned)));
    builder.threads(threads);
    let found = Mutex::new(Walk::default());
    builder.build_parallel().run(|| {
        Box::new(|entry| {
            let outcome = match entry {
                Ok(entry) => examine(root, &entry, config),
                Err(error) => Some(Err(SkippedFile {
                    path: error_path(root, &error),
                    reason: SkipReason::Unreadable {
                        message: error.to_string(),
                    },
                })),
            };
            if let Some(outcome) = outcome
                && let Ok(mut found) = found.lock()
            {
                match outcome {
                    Ok(candidate) => found.candidates.push(candidate),
                    Err(skipped) => found.skipped.push(skipped),
                }
            }
            WalkState::Continue
        })
    });
    let mut walk = found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut pruned = pruned
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    walk.skipped.append(&mut pruned);
    walk.candidates.sort_by(|a, b| a.path.cmp(&b.path));
    walk.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    walk
}

/// A walker from `start` (the workspace `root` or a folder below it) with the index's
/// rules: hidden entries (unless configured), `.gitignore`, `.ignore` and
/// `.aptixignore` (in `start` and its parents), the excluded folders below `start`
/// ([`ExcludedFolders`]), and folders whose name looks like it holds secrets (`.ssh`,
/// `.aws`, `secrets`), each of which is added to `pruned` when given (as `path/`), so
/// that `aptix index -v` says why nothing in it is searched. Symbolic links are not
/// followed.
pub(crate) fn builder(
    root: &Path,
    start: &Path,
    config: &IndexConfig,
    pruned: Option<Pruned>,
) -> WalkBuilder {
    let excluded = ExcludedFolders::new(root, config);
    let owned_root = root.to_path_buf();
    let mut builder = WalkBuilder::new(start);
    builder
        .hidden(!config.include_hidden)
        .follow_links(false)
        // Ignore files apply whether or not the workspace is a git repository...
        .require_git(false)
        .git_ignore(true)
        .git_exclude(true)
        // ...but the user's global git excludes do not: the index should be the same
        // for everyone who indexes the same tree.
        .git_global(false)
        .ignore(true)
        .parents(true)
        .add_custom_ignore_filename(APTIX_IGNORE_FILE)
        .filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if !is_dir || entry.depth() == 0 {
                return true;
            }
            if excluded.skips(entry.path()) {
                return false;
            }
            if !entry.file_name().to_str().is_some_and(is_secret_path) {
                return true;
            }
            if let Some(pruned) = &pruned
                && let Some(path) = entry
                    .path()
                    .strip_prefix(&owned_root)
                    .ok()
                    .and_then(relative_path)
                && let Ok(mut pruned) = pruned.lock()
            {
                pruned.push(SkippedFile {
                    path: format!("{path}/"),
                    reason: SkipReason::MayHoldSecrets,
                });
            }
            false
        });
    builder
}

/// The secret folders a walk did not enter.
pub(crate) type Pruned = Arc<Mutex<Vec<SkippedFile>>>;

/// Folder names that are build output beside a project's manifest (or at the root),
/// and often source elsewhere: pip's `operations/build`, a `dist` module, an `out`
/// package.
const BUILD_OUTPUT_DIRS: &[&str] = &["build", "dist", "out", "obj"];

/// Files that make a folder a project's root, whose `build`, `dist`, `out` or `obj`
/// folder is its build output.
const MANIFESTS: &[&str] = &[
    "package.json",
    "Cargo.toml",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "settings.gradle",
    "settings.gradle.kts",
    "CMakeLists.txt",
    "Makefile",
    "meson.build",
    "composer.json",
    "Gemfile",
    "build.sbt",
    "Package.swift",
    "pubspec.yaml",
    "mix.exs",
    "tsconfig.json",
    "angular.json",
    "deno.json",
];

/// The rule for folders skipped by name ([`IndexConfig::excluded_dirs`]), in one place
/// for the walk and the tools' [`WorkspaceFiles::is_ignored`](crate::WorkspaceFiles):
/// a configured name is skipped wherever it appears, except that `build`, `dist`,
/// `out` and `obj` are skipped only at the workspace root or beside a project manifest
/// (`package.json`, `Cargo.toml`, `pyproject.toml`, a `.csproj`, ...), where they are
/// build output; and a folder the root `.aptixignore` names with `!` (`!pkg/build/`) is
/// never skipped by name.
pub(crate) struct ExcludedFolders {
    root: PathBuf,
    names: Vec<String>,
    kept: Option<Gitignore>,
}

impl ExcludedFolders {
    pub(crate) fn new(root: &Path, config: &IndexConfig) -> ExcludedFolders {
        let mut kept = GitignoreBuilder::new(root);
        let kept = (kept.add(root.join(APTIX_IGNORE_FILE)).is_none())
            .then(|| kept.build().ok())
            .flatten()
            .filter(|kept| kept.num_whitelists() > 0);
        ExcludedFolders {
            root: root.to_owned(),
            names: config.excluded_dirs.clone(),
            kept,
        }
    }

    /// Whether the folder `dir` (a path below the root) is skipped by its name.
    pub(crate) fn skips(&self, dir: &Path) -> bool {
        let Some(name) = dir.file_name().and_then(|name| name.to_str()) else {
            return false;
        };
        if !self.names.iter().any(|excluded| excluded == name) {
            return false;
        }
        if self
            .kept
            .as_ref()
            .is_some_and(|kept| kept.matched(dir, true).is_whitelist())
        {
            return false;
        }
        if BUILD_OUTPUT_DIRS.contains(&name) {
            return dir
                .parent()
                .is_none_or(|parent| parent == self.root.as_path() || is_project_root(parent));
        }
        true
    }
}

/// Whether `dir` holds a project manifest.
fn is_project_root(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return false;
        };
        MANIFESTS.contains(&name)
            || [".csproj", ".fsproj", ".vbproj", ".sln"]
                .iter()
                .any(|extension| name.ends_with(extension))
    })
}

/// A regular file becomes a candidate (or a skip, when too large); anything else
/// (folders, symlinks, sockets) is passed over.
fn examine(
    root: &Path,
    entry: &ignore::DirEntry,
    config: &IndexConfig,
) -> Option<Result<Candidate, SkippedFile>> {
    if !entry.file_type().is_some_and(|t| t.is_file()) {
        return None;
    }
    let relative = entry.path().strip_prefix(root).ok()?;
    let Some(path) = relative_path(relative) else {
        return Some(Err(SkippedFile {
            path: relative.to_string_lossy().replace('\\', "/"),
            reason: SkipReason::NonUtf8Path,
        }));
    };
    if !config.skipped_kinds.is_empty()
        && config.skipped_kinds.contains(&crate::kind::classify(&path))
    {
        return None;
    }
    // A secret folder is never entered (see `builder`); a secret file is listed as
    // skipped, so `aptix index -v` says why it is not searched.
    if config.holds_secrets(root, &path) {
        return Some(Err(SkippedFile {
            path,
            reason: SkipReason::MayHoldSecrets,
        }));
    }
    let metadata = match entry.metadata() {
        Ok(metadata) => metadata,
        Err(error) => {
            return Some(Err(SkippedFile {
                path,
                reason: SkipReason::Unreadable {
                    message: error.to_string(),
                },
            }));
        }
    };
    if metadata.len() > config.max_file_bytes {
        return Some(Err(SkippedFile {
            path,
            reason: SkipReason::TooLarge {
                bytes: metadata.len(),
                limit: config.max_file_bytes,
            },
        }));
    }
    let mtime_ns = metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |since| {
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        });
    Some(Ok(Candidate {
        path,
        absolute: entry.path().to_owned(),
        size: metadata.len(),
        mtime_ns,
    }))
}

/// `a/b/c.rs` from a relative path, or `None` when a component is not UTF-8.
pub(crate) fn relative_path(relative: &Path) -> Option<String> {
    let mut out = String::new();
    for component in relative.components() {
        let part = component.as_os_str().to_str()?;
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part);
    }
    (!out.is_empty()).then_some(out)
}

/// The path a walk error is about, relative to the root like every reported path.
fn error_path(root: &Path, error: &ignore::Error) -> String {
    match error {
        ignore::Error::WithPath { path, .. } => {
            let relative = path.strip_prefix(root).unwrap_or(path);
            relative.to_string_lossy().replace('\\', "/")
        }
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(root, err)
        }
        _ => String::new(),
    }
}

//! The workspace's files as the index sees them, for tools that list and read files:
//! the same ignore rules as the walk that builds the index, asked about one path or one
//! folder at a time.

use std::path::{Path, PathBuf};

use crate::walk::{ExcludedFolders, builder, relative_path};
use crate::{IndexConfig, IndexError};

/// The files of one workspace under the index's rules: hidden entries (unless
/// [`IndexConfig::include_hidden`]), `.gitignore`, `.ignore` and `.aptixignore`, and the
/// excluded folder names ([`IndexConfig::excluded_dirs`]). Kinds skipped by the index
/// (lockfiles, generated files) are not excluded here: they are legitimate reading.
#[derive(Debug, Clone)]
pub struct WorkspaceFiles {
    root: PathBuf,
    config: IndexConfig,
}

/// Files found by [`WorkspaceFiles::list`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileListing {
    /// Paths relative to the workspace root, `/`-separated, sorted.
    pub files: Vec<String>,
    /// Whether more files matched than were kept.
    pub truncated: bool,
}

/// A workspace root as every part of the index takes it: an existing directory, made
/// canonical (so that confinement checks compare real paths).
pub(crate) fn canonical_root(root: &Path) -> Result<PathBuf, IndexError> {
    if !root.is_dir() {
        return Err(IndexError::NotADirectory {
            path: root.to_owned(),
        });
    }
    root.canonicalize().map_err(|source| IndexError::Io {
        path: root.to_owned(),
        source,
    })
}

impl WorkspaceFiles {
    /// The files of the workspace at `root` (made canonical, so that confinement checks
    /// compare real paths).
    pub fn new(root: impl AsRef<Path>, config: IndexConfig) -> Result<WorkspaceFiles, IndexError> {
        let root = canonical_root(root.as_ref())?;
        Ok(WorkspaceFiles { root, config })
    }

    /// From a root that is already canonical.
    pub(crate) fn from_parts(root: PathBuf, config: IndexConfig) -> WorkspaceFiles {
        WorkspaceFiles { root, config }
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `relative` (a file or folder below the root, `/`-separated) may hold
    /// secrets, so that no tool may read or list it: its name says so
    /// ([`is_secret_path`](crate::is_secret_path)), or it is one of the configured
    /// [`IndexConfig::secret_files`].
    pub fn holds_secrets(&self, relative: &str) -> bool {
        self.config.holds_secrets(&self.root, relative)
    }

    /// Whether the index's rules leave out `relative` (a file or folder below the root,
    /// `/`-separated). The root itself (`""`) is never ignored. The path is not checked
    /// for `..` or links: confine it first.
    pub fn is_ignored(&self, relative: &str) -> bool {
        let parts: Vec<&str> = relative
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .collect();
        let Some((name, parents)) = parts.split_last() else {
            return false;
        };
        for part in &parts {
            if part.starts_with('.') && !self.config.include_hidden {
                return true;
            }
        }
        let excluded = ExcludedFolders::new(&self.root, &self.config);
        let mut folder = self.root.clone();
        for part in parents {
            folder.push(part);
            if excluded.skips(&folder) {
                return true;
            }
        }
        let parent = parents
            .iter()
            .fold(self.root.clone(), |dir, part| dir.join(part));
        if parents.iter().enumerate().any(|(depth, _)| {
            // A parent folder ignored by the rules of its own parent hides everything below.
            let above = parents
                .get(..depth)
                .unwrap_or_default()
                .iter()
                .fold(self.root.clone(), |dir, part| dir.join(part));
            parents
                .get(depth)
                .is_some_and(|folder| !self.listed_in(&above, folder))
        }) {
            return true;
        }
        let path = parent.join(name);
        if path.is_dir() && excluded.skips(&path) {
            return true;
        }
        !self.listed_in(&parent, name)
    }

    /// Whether a one-level walk of `dir` yields the entry `name`.
    fn listed_in(&self, dir: &Path, name: &str) -> bool {
        let mut walk = builder(&self.root, dir, &self.config, None);
        walk.max_depth(Some(1));
        walk.build().flatten().any(|entry| {
            entry.depth() == 1 && entry.file_name().to_str().is_some_and(|n| n == name)
        })
    }

    /// The files below the folder `dir` (`""` for the root), recursively, under the
    /// index's rules, sorted by path; only those `keep` accepts, at most `max`.
    /// Symbolic links are not followed and not listed.
    pub fn list(&self, dir: &str, keep: &dyn Fn(&str) -> bool, max: usize) -> FileListing {
        let start = if dir.is_empty() || dir == "." {
            self.root.clone()
        } else {
            self.root.join(dir)
        };
        let mut walk = builder(&self.root, &start, &self.config, None);
        walk.sort_by_file_name(|a, b| a.cmp(b));
        let mut listing = FileListing::default();
        for entry in walk.build().flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Some(path) = entry
                .path()
                .strip_prefix(&self.root)
                .ok()
                .and_then(relative_path)
            else {
                continue;
            };
            if !keep(&path) {
                continue;
            }
            if listing.files.len() == max {
                listing.truncated = true;
                break;
            }
            listing.files.push(path);
        }
        listing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(".aptixignore", "secret/\n*.log\n");
        write(".gitignore", "/generated.rs\n");
        write("src/lib.rs", "pub fn a() {}\n");
        write("src/deep/mod.rs", "pub fn b() {}\n");
        write("secret/plan.txt", "x\n");
        write("run.log", "x\n");
        write("generated.rs", "x\n");
        write("target/debug/out.rs", "x\n");
        write(".hidden/file.rs", "x\n");
        dir
    }

    #[test]
    fn the_index_rules_decide_what_is_ignored() {
        let dir = workspace();
        let files = WorkspaceFiles::new(dir.path(), IndexConfig::default()).unwrap();
        assert!(!files.is_ignored("src/lib.rs"));
        assert!(!files.is_ignored("src/deep/mod.rs"));
        assert!(!files.is_ignored("src"));
        assert!(!files.is_ignored(""));
        assert!(files.is_ignored("secret/plan.txt"));
        assert!(files.is_ignored("secret"));
        assert!(files.is_ignored("run.log"));
        assert!(files.is_ignored("generated.rs"));
        assert!(files.is_ignored("target/debug/out.rs"));
        assert!(files.is_ignored(".hidden/file.rs"));
        assert!(files.is_ignored(".aptixignore"));
    }

    #[test]
    fn listing_follows_the_rules_and_the_cap() {
        let dir = workspace();
        let files = WorkspaceFiles::new(dir.path(), IndexConfig::default()).unwrap();
        let all = files.list("", &|_| true, 100);
        assert_eq!(all.files, ["src/deep/mod.rs", "src/lib.rs"]);
        assert!(!all.truncated);
        let capped = files.list("src", &|_| true, 1);
        assert_eq!(capped.files, ["src/deep/mod.rs"]);
        assert!(capped.truncated);
        let kept = files.list("", &|path| path.ends_with("lib.rs"), 100);
        assert_eq!(kept.files, ["src/lib.rs"]);
    }
}

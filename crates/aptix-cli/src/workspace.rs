//! Which folder is the workspace: where `aptix.toml`, the index and the sessions live.
//!
//! `--workspace DIR` (or `aptix index PATH`) names it. Otherwise it is the nearest
//! folder, from the current one upwards, that holds `aptix.toml`, `.aptix/` or `.git`,
//! the way git finds its repository; with none of them it is the current folder.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::config::WORKSPACE_FILE;
use crate::exit::usage;
use crate::session::APTIX_DIR;

/// The entries that mark a workspace root, checked in each folder going up.
const MARKERS: &[&str] = &[WORKSPACE_FILE, APTIX_DIR, ".git"];

/// The workspace: `explicit` when given (it must be a folder), else found from the
/// current folder.
pub(crate) fn resolve(explicit: Option<&Path>) -> Result<PathBuf, anyhow::Error> {
    if let Some(dir) = explicit {
        if !dir.is_dir() {
            return Err(usage(format!(
                "workspace {} is not a folder",
                dir.display()
            )));
        }
        return std::path::absolute(dir)
            .with_context(|| format!("could not resolve the workspace {}", dir.display()));
    }
    let current = std::env::current_dir().context("could not read the current folder")?;
    Ok(find_from(&current))
}

/// The nearest folder from `start` upwards holding a marker, else `start`.
fn find_from(start: &Path) -> PathBuf {
    start
        .ancestors()
        .find(|dir| MARKERS.iter().any(|marker| dir.join(marker).exists()))
        .unwrap_or(start)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_marked_folder_up_is_the_workspace() {
        let root = tempfile::tempdir().unwrap();
        let nested = root.path().join("a/b/c");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(root.path().join("a").join(WORKSPACE_FILE), "").unwrap();
        assert_eq!(find_from(&nested), root.path().join("a"));
        std::fs::create_dir(root.path().join("a/b/.git")).unwrap();
        assert_eq!(find_from(&nested), root.path().join("a/b"));
    }

    #[test]
    fn an_explicit_workspace_must_be_a_folder() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("nope");
        let error = resolve(Some(&missing)).unwrap_err();
        assert!(format!("{error}").contains("is not a folder"));
        assert_eq!(resolve(Some(root.path())).unwrap(), root.path());
    }
}

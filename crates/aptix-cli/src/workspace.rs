//! Which folder is the workspace: where `aptix.toml`, the index and the sessions live.
//!
//! `--workspace DIR` (or `aptix index PATH`) names it. Otherwise it is the nearest
//! folder, from the current one upwards, that holds `aptix.toml` or `.git`, the way git
//! finds its repository; else the nearest that holds an index (`.aptix/`); else the
//! current folder (`aptix_runtime::find_workspace`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::exit::usage;

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
    Ok(aptix_runtime::find_workspace(&current))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_workspace_must_be_a_folder() {
        let root = tempfile::tempdir().unwrap();
        let missing = root.path().join("nope");
        let error = resolve(Some(&missing)).unwrap_err();
        assert!(format!("{error}").contains("is not a folder"));
        assert_eq!(resolve(Some(root.path())).unwrap(), root.path());
    }
}

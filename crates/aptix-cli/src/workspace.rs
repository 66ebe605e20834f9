//! Which folder is the workspace: where `aptix.toml`, the index and the sessions live.
//!
//! `--workspace DIR` (or `aptix index PATH`) names it. Otherwise it is the nearest
//! folder, from the current one upwards, that holds `aptix.toml` or `.git`, the way git
//! finds its repository; else the nearest that holds an index (`.aptix/`); else the
//! current folder. The rules are `aptix_runtime::resolve_workspace`'s.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

/// The workspace: `explicit` when given, else found from the current folder, never
/// the home folder or `/` by default (`aptix_runtime::resolve_workspace`).
pub(crate) fn resolve(explicit: Option<&Path>) -> Result<PathBuf, anyhow::Error> {
    let current = std::env::current_dir().context("could not read the current folder")?;
    Ok(aptix_runtime::resolve_workspace(
        explicit,
        &current,
        &aptix_runtime::process_env,
    )?)
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
        assert_eq!(crate::exit::code_of(&error), crate::exit::USAGE);
        assert_eq!(resolve(Some(root.path())).unwrap(), root.path());
    }
}

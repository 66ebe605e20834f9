//! Which folder is the workspace: where `aptix.toml`, the index and the sessions live.
//!
//! `--workspace DIR` (or `aptix index PATH`) names it. Otherwise it is the nearest
//! folder, from the current one upwards, that holds `aptix.toml` or `.git`, the way git
//! finds its repository; else the nearest that holds an index (`.aptix/`); else the
//! current folder (`aptix_runtime::find_workspace`).

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::exit::usage;

/// The workspace: `explicit` when given (it must be a folder; a leading `~/` is the
/// home folder, as an editor's `args` are not expanded by a shell), else found from the
/// current folder. Found, it is never the home folder or `/` by default: without a
/// project there (`aptix.toml`, `.git`, an index), the first ask would index every file
/// under it and send what it found as context.
pub(crate) fn resolve(explicit: Option<&Path>) -> Result<PathBuf, anyhow::Error> {
    let home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    if let Some(dir) = explicit {
        let expanded;
        let dir = match (dir.strip_prefix("~"), &home) {
            (Ok(rest), Some(home)) => {
                expanded = home.join(rest);
                expanded.as_path()
            }
            _ => dir,
        };
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
    let found = aptix_runtime::find_workspace(&current);
    if let Some(why) = too_wide(&found) {
        // A home folder that is a git repository (dotfiles) does not make every folder
        // under it one workspace: an index nearer the current folder does.
        if let Some(indexed) = current
            .ancestors()
            .take_while(|dir| *dir != found)
            .find(|dir| dir.join(aptix_index::APTIX_DIR).is_dir())
        {
            return Ok(indexed.to_path_buf());
        }
        return Err(usage(format!(
            "{why}: run aptix in a project folder, pass --workspace DIR, or create \
             aptix.toml there to mean it"
        )));
    }
    Ok(found)
}

/// Why `dir` is too wide to be a workspace found by default (or an editor's folder):
/// the home folder or `/` with no project marked in it, whose first ask would index
/// every file under it and send what it found as context.
pub(crate) fn too_wide(dir: &Path) -> Option<String> {
    let home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    let wide = dir.parent().is_none() || home.as_deref() == Some(dir);
    // Only an aptix.toml there says the folder is meant: a `.git` of dotfiles, or an
    // index an older aptix left there, does not.
    (wide && !aptix_runtime::has_workspace_file(dir)).then(|| {
        format!(
            "{} holds no aptix.toml, and is too wide a workspace",
            dir.display()
        )
    })
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

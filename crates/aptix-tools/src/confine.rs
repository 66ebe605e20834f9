//! Keeping every path inside the workspace, out of ignored and secret files.

use std::path::{Path, PathBuf};

use aptix_index::WorkspaceFiles;

use crate::ToolError;

/// A workspace the tools may look into: its files under the index's rules.
#[derive(Debug, Clone)]
pub struct Workspace {
    files: WorkspaceFiles,
}

/// A path that passed [`Workspace::confine`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    /// Relative to the workspace root, `/`-separated, `""` for the root.
    pub relative: String,
    /// The real (canonical) path, inside the workspace.
    pub absolute: PathBuf,
}

impl Workspace {
    /// The workspace of `files`.
    pub fn new(files: WorkspaceFiles) -> Workspace {
        Workspace { files }
    }

    /// The workspace's files.
    pub fn files(&self) -> &WorkspaceFiles {
        &self.files
    }

    /// Checks a path the model gave: relative, no `..`, not ignored, not secret, and
    /// inside the workspace once links are resolved (the resolved path is checked
    /// again). `""` and `.` are the root.
    pub fn confine(&self, path: &str) -> Result<Confined, ToolError> {
        let shown = || path.to_owned();
        if path.contains('\0') {
            return Err(ToolError::Arguments(format!("{path:?}: a path has no NUL")));
        }
        let mut unified = path.trim().replace('\\', "/");
        if unified.starts_with('/') {
            // An absolute path inside the workspace (as the locations shown to an editor
            // are written, which a model then repeats) names the same file as its path
            // from the root; the checks below apply to that.
            match within_root(self.files.root(), &unified) {
                Some(rest) => unified = rest,
                None => return Err(ToolError::Outside { path: shown() }),
            }
        }
        let bytes = unified.as_bytes();
        let drive = bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic();
        if unified.starts_with('~') || drive {
            return Err(ToolError::Outside { path: shown() });
        }
        let mut parts = Vec::new();
        for part in unified.split('/') {
            match part {
                "" | "." => {}
                ".." => return Err(ToolError::Outside { path: shown() }),
                part => parts.push(part),
            }
        }
        let relative = parts.join("/");
        let root = self.files.root();
        if self.files.holds_secrets(&relative) {
            return Err(ToolError::Secret { path: shown() });
        }
        if root.join(&relative).symlink_metadata().is_err() {
            return Err(ToolError::NotFound { path: shown() });
        }
        self.check_rules(&relative, path)?;
        let absolute = match root.join(&relative).canonicalize() {
            Ok(absolute) => absolute,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                // A dangling link is found by its own metadata: say it points away.
                return Err(if root.join(&relative).symlink_metadata().is_ok() {
                    ToolError::Outside { path: shown() }
                } else {
                    ToolError::NotFound { path: shown() }
                });
            }
            Err(error) => {
                return Err(ToolError::Io {
                    path: shown(),
                    message: error.to_string(),
                });
            }
        };
        let Some(real) = relative_to(root, &absolute) else {
            return Err(ToolError::Outside { path: shown() });
        };
        if real != relative {
            // A link inside the workspace: where it points must pass the rules too.
            self.check_rules(&real, path)?;
        }
        Ok(Confined { relative, absolute })
    }

    fn check_rules(&self, relative: &str, shown: &str) -> Result<(), ToolError> {
        if self.files.holds_secrets(relative) {
            return Err(ToolError::Secret {
                path: shown.to_owned(),
            });
        }
        if self.files.is_ignored(relative) {
            return Err(ToolError::Ignored {
                path: shown.to_owned(),
            });
        }
        Ok(())
    }
}

/// `absolute` relative to `root`, `/`-separated, or `None` when it is not below it.
fn relative_to(root: &Path, absolute: &Path) -> Option<String> {
    let rest = absolute.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rest.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

/// `path` (absolute, `/`-separated) from `root` on, when it lies under the root as
/// written or as resolved (`/tmp` a link to `/private/tmp`); `None` otherwise. Only
/// whole components are stripped: `/work2` is not under `/work`.
fn within_root(root: &std::path::Path, path: &str) -> Option<String> {
    let path = std::path::Path::new(path);
    let resolved = root.canonicalize().ok();
    std::iter::once(root)
        .chain(resolved.as_deref())
        .find_map(|root| path.strip_prefix(root).ok())
        .map(|rest| rest.to_string_lossy().replace('\\', "/"))
}

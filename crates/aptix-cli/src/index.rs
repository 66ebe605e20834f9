//! `aptix index`: builds or refreshes the workspace index.
//!
//! The embedded index (`aptix-index`) is not part of this build yet, so the command
//! says so and fails instead of pretending; `aptix ask` meanwhile answers without
//! retrieved context.

use std::path::Path;

use crate::exit::FAILURE;
use crate::workspace;

/// Runs `aptix index`; returns the exit code.
pub(crate) fn run(path: Option<&Path>) -> Result<u8, anyhow::Error> {
    let workspace = workspace::resolve(path)?;
    let _ = std::io::Write::write_fmt(
        &mut std::io::stderr().lock(),
        format_args!(
            "error: the workspace index is not built into this aptix yet, so {} was not indexed; \
             `aptix ask` answers without retrieved context\n",
            workspace.display()
        ),
    );
    Ok(FAILURE)
}

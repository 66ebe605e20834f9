//! `aptix inspect`: a captured `/v1/responses` reply (a JSON response body, a JSON
//! error body, or an SSE stream, told apart by content) mapped to the envelope JSON,
//! exactly as the orchestrator would map it, for debugging and for tests.
//!
//! The capture carries no turn, so the envelope has no session, turn or mode, and an
//! error body's HTTP status is unknown. An envelope saved earlier (`aptix ask --json`)
//! is mapped again from the reply it holds, with its own session, turn and mode. The exit code is 0 whenever an envelope was
//! printed, whatever its kind: the command inspects, it does not judge.

use std::path::Path;

use anyhow::Context as _;
use aptix_mapping::{TurnContext, map_capture};

use crate::exit::SUCCESS;
use crate::output::print_json;

/// Runs `aptix inspect`; returns the exit code.
pub(crate) fn run(file: &Path) -> Result<u8, anyhow::Error> {
    let bytes = crate::output::read_file_or_stdin(file)
        .with_context(|| format!("could not read the capture {}", file.display()))?;
    let mapped = map_capture(&bytes, &TurnContext::default());
    print_json(&mapped.envelope)?;
    Ok(SUCCESS)
}

//! `aptix inspect`: a captured `/v1/responses` reply (a JSON response body, a JSON
//! error body, or an SSE stream, told apart by content) mapped to the envelope JSON,
//! exactly as the orchestrator would map it, for debugging and for tests.
//!
//! The capture carries no turn, so the envelope has no session, turn or mode, and an
//! error body's HTTP status is unknown. An envelope saved earlier (`aptix ask --json`)
//! is mapped again from the reply it holds, with its own session, turn and mode. The
//! exit code is 0 whenever an envelope was printed, whatever its kind: the command
//! inspects, it does not judge. A file that is none of these (a README, a config file)
//! is a usage error (exit 2), not an envelope saying the "reply" could not be read.

use std::path::Path;

use anyhow::Context as _;
use aptix_mapping::{TurnContext, is_capture, map_capture};

use crate::exit::{SUCCESS, usage};
use crate::output::print_json;

/// Runs `aptix inspect`; returns the exit code.
pub(crate) fn run(file: &Path) -> Result<u8, anyhow::Error> {
    let bytes = crate::output::read_file_or_stdin(file)
        .with_context(|| format!("could not read the capture {}", file.display()))?;
    if !is_capture(&bytes) {
        let what = if bytes.iter().all(u8::is_ascii_whitespace) {
            "it is empty"
        } else if serde_json::from_slice::<serde_json::Value>(&bytes).is_ok() {
            "it is JSON, but not a reply's object"
        } else {
            "it is neither JSON nor an SSE stream"
        };
        return Err(usage(format!(
            "{} is not a captured reply ({what}): inspect reads a /v1/responses JSON body, \
             a JSON error body ({{\"error\": ...}}), an SSE stream (as `curl -N` saves it) or \
             an envelope saved by `aptix ask --json`",
            shown(file)
        )));
    }
    let mapped = map_capture(&bytes, &TurnContext::default());
    print_json(&mapped.envelope)?;
    Ok(SUCCESS)
}

/// The file as named in messages: standard input for `-`.
fn shown(file: &Path) -> String {
    if file == Path::new("-") {
        "standard input".to_owned()
    } else {
        file.display().to_string()
    }
}

//! The request body one turn would send from a workspace, wired exactly as `aptix ask
//! --dry-run` wires it: the workspace's settings (its `aptix.toml`, the user's file,
//! `APTIX_*` variables), its index refreshed as the retriever, and the built-in tools
//! it offers. Needs no key and no network, and writes no session.
//!
//! ```sh
//! cargo run -p aptix-runtime --example dry_run -- [WORKSPACE] [INSTRUCTION]
//! ```
//!
//! Without arguments it makes a small workspace in a temporary folder.

use aptix_model::contract::AgentExecuteRequest;
use aptix_runtime::{Reporter, SettingsLayer, Workspace, process_env, resolve_workspace};

/// Notes and warnings on stderr; no progress bar.
struct Stderr;

impl Reporter for Stderr {
    fn note(&self, message: &str) {
        eprintln!("note: {message}");
    }

    fn warn(&self, message: &str) {
        eprintln!("warning: {message}");
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let scratch;
    let root = match args.next() {
        Some(dir) => resolve_workspace(None, std::path::Path::new(&dir), &process_env)?,
        None => {
            scratch = tempfile::tempdir()?;
            std::fs::create_dir(scratch.path().join("src"))?;
            std::fs::write(
                scratch.path().join("src/store.rs"),
                "/// Commits a turn to the session store.\npub fn commit_turn() {}\n",
            )?;
            scratch.path().to_path_buf()
        }
    };
    let instruction = args
        .next()
        .unwrap_or_else(|| "Where is a turn committed?".to_owned());

    let workspace = Workspace::load(&root, &SettingsLayer::default(), &process_env)?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let orchestrator = runtime.block_on(workspace.dry_run_orchestrator(&Stderr))?;
    let request = AgentExecuteRequest::from_json_value(&serde_json::json!({
        "sessionId": aptix_orchestrator::new_session_id(),
        "turnId": aptix_orchestrator::new_turn_id(),
        "instruction": instruction,
    }))?;
    let body = runtime.block_on(orchestrator.dry_run(&request))?;
    let sent = workspace.wire_request(body, true)?;
    eprintln!("POST {}", sent.endpoint);
    println!("{}", serde_json::to_string_pretty(&sent.body)?);
    Ok(())
}

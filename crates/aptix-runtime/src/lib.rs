//! Aptix's wiring, shared by every front end (`aptix ask`, `aptix serve`, `aptix acp`):
//! settings in, a running [`Orchestrator`](aptix_orchestrator::Orchestrator) out.
//!
//! Each rule of how settings become a running turn lives here once:
//!
//! | what | where |
//! |---|---|
//! | the layered settings: flags over `APTIX_*` variables over `<workspace>/aptix.toml` over the user's `config.toml`, each value checked and its error naming its source | [`Settings::load`], [`SettingsLayer`], [`ServeLayer`] |
//! | which provider and API (`/v1/responses` or the Chat Completions bridge), timeouts, retries, the key from the environment only | [`Workspace::provider`] |
//! | which session store the `store` URL names (the workspace's SQLite file, another one, PostgreSQL), `.aptix/` created with its `.gitignore` | [`Workspace::open_store`], [`StoreLocation`] |
//! | the configured mode and model applied to a continued session | the store [`Workspace::open_store`] returns |
//! | the workspace index refreshed as the retriever, and the built-in tools the settings offer (`tools`, `disabled_tools`) | [`Workspace::orchestrator`], [`Workspace::index`] |
//! | the tools a service's clients run, declared in a JSON file (`client_tools`): its format, and what every turn would be refused for refused once | [`read_client_tools`], [`Workspace::orchestrator_with`], [`FrontEndTools`] |
//! | the orchestrator's configuration (lease TTL, compaction, stream recovery, system prompt) | [`Settings::orchestrator_config`] |
//! | a dry run: a stand-in provider with the real one's capabilities, a store that writes nothing, the body exactly as it would be sent | [`Workspace::dry_run_orchestrator`], [`Workspace::wire_request`] |
//!
//! A front end keeps what is its own: reading argv, the terminal (progress bars, notes
//! on stderr, through a [`Reporter`]), its output and exit codes, and its own protocol
//! (HTTP, ACP).
//!
//! # Where the cut is
//!
//! The front ends hand the runtime a plain [`Settings`] value (or the flags' layer and
//! an environment lookup to build one with), never a command line. The settings
//! *tables* live here too, because reading `aptix.toml` and `APTIX_*` is shared by every
//! front end; each key is declared once, with its type, its help text and its flag, and
//! from that one declaration come the serde struct for the files, the environment
//! reader, the layering and, behind the `clap` feature that only the `aptix` command
//! turns on, the `clap::Args` the command flattens into its subcommands. So there is no
//! second list of keys to keep in step with the first, and without the feature this
//! crate does not depend on clap at all.
//!
//! # Errors
//!
//! One [`Error`]. [`Error::is_config`] tells a setting the person must change (a bad
//! value, an unknown key, a missing API key: the `aptix` command's exit code 2) from a
//! failure of the machine (a file that cannot be written, a database that cannot be
//! reached).
//!
//! # Features
//!
//! `sqlite` (default): sessions in a SQLite file, the default store. `postgres`:
//! `store = "postgres://…"`. `clap`: the settings tables as command-line flags.
//!
//! # Example
//!
//! A dry run of one turn in a workspace, settings from a lookup instead of the process
//! environment: the request body as it would be sent, with no key and no network.
//!
//! ```
//! use aptix_model::contract::AgentExecuteRequest;
//! use aptix_runtime::{Reporter, SettingsLayer, Workspace};
//!
//! struct Quiet;
//! impl Reporter for Quiet {}
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = std::env::temp_dir().join(format!("aptix-runtime-doc-{}", std::process::id()));
//! std::fs::create_dir_all(root.join("src"))?;
//! std::fs::write(root.join("src/lib.rs"), "/// Commits a turn.\npub fn commit() {}\n")?;
//!
//! let env = |name: &str| match name {
//!     "APTIX_MODEL" => Some("gpt-test".to_owned()),
//!     "APTIX_DISABLED_TOOLS" => Some("read_file".to_owned()),
//!     _ => None,
//! };
//! let workspace = Workspace::load(&root, &SettingsLayer::default(), &env)?;
//!
//! let runtime = tokio::runtime::Builder::new_current_thread()
//!     .enable_all()
//!     .build()?;
//! let orchestrator = runtime.block_on(workspace.dry_run_orchestrator(&Quiet))?;
//! let request = AgentExecuteRequest::from_json_value(&serde_json::json!({
//!     "sessionId": "s-doc", "turnId": "t-doc", "instruction": "Where is a turn committed?"
//! }))?;
//! let body = runtime.block_on(orchestrator.dry_run(&request))?;
//! let sent = workspace.wire_request(body, true)?;
//!
//! assert_eq!(sent.endpoint, "https://api.openai.com/v1/responses");
//! assert_eq!(sent.body["model"], "gpt-test");
//! let tools: Vec<&str> = sent.body["tools"]
//!     .as_array()
//!     .into_iter()
//!     .flatten()
//!     .filter_map(|tool| tool["name"].as_str())
//!     .collect();
//! assert_eq!(tools, ["search_code", "list_files"]);
//! # std::fs::remove_dir_all(&root)?;
//! # Ok(())
//! # }
//! ```
//!
//! `examples/dry_run.rs` does the same for a folder given on the command line.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod client_tools;
mod error;
mod index;
mod provider;
mod settings;
mod store;
mod workspace;

/// The folder under the workspace that Aptix owns (sessions, index).
use aptix_index::APTIX_DIR;

pub use client_tools::read_client_tools;
pub use error::Error;
pub use index::{Reporter, refresh_index};
pub use provider::WireRequest;
pub use settings::{
    ApiKind, ByteSize, Env, HumanDuration, ListenAddr, SchemaStrategy, ServeLayer, Settings,
    SettingsLayer, StoreUrl, configured_log_format, misspelt_variables, process_env,
};
pub use store::StoreLocation;
pub use workspace::{
    FrontEndTools, Workspace, find_workspace, resolve_workspace, workspace_too_wide,
};

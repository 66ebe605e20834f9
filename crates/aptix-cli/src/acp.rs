//! `aptix acp`: Aptix as an Agent Client Protocol agent on stdin/stdout, for editors
//! (`aptix-acp`), wired from the same settings, session store and workspace index as
//! `aptix ask`, so a session started in the editor is continued by `aptix ask
//! --session` and the reverse.
//!
//! Each ACP session's workspace is the editor's folder (`cwd` of `session/new`) unless
//! `--workspace` pins one: its `aptix.toml`, its `.aptix/` store and index. Stdout
//! carries only ACP messages; notes, warnings, logs and the index's progress go to
//! stderr. See docs/acp.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use aptix_acp::{AcpAgent, AcpError, OpenedWorkspace, WorkspaceOpener};
use aptix_orchestrator::SessionStore;
use aptix_tools::FileReader;
use clap::Args;
use tokio::runtime::Runtime;

use crate::ask::{fresh_index, index_parts, provider};
use crate::config::{Layer, Settings, process_env};
use crate::exit::SUCCESS;
use crate::session::{ConfiguredStore, new_session_id, new_turn_id, open_store};
use crate::workspace;

/// `aptix acp`.
#[derive(Debug, Args)]
pub(crate) struct AcpArgs {
    /// Use this workspace for every session instead of the folder the editor opens
    /// each session in (its `cwd`)
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// Settings that override the environment and the config files, as for `aptix ask`.
    #[command(flatten)]
    pub(crate) settings: Layer,
}

/// Runs `aptix acp` until the editor closes stdin; returns the exit code.
pub(crate) fn run(args: &AcpArgs, runtime: &Runtime) -> Result<u8, anyhow::Error> {
    let pinned = match &args.workspace {
        Some(dir) => Some(workspace::resolve(Some(dir))?),
        None => None,
    };
    let opener = CliWorkspaces {
        pinned,
        layer: args.settings.clone(),
    };
    tracing::info!("serving ACP on stdio");
    runtime.block_on(AcpAgent::new(Arc::new(opener)).serve_stdio())?;
    Ok(SUCCESS)
}

/// Opens a session's workspace as `aptix ask` does.
struct CliWorkspaces {
    pinned: Option<PathBuf>,
    layer: Layer,
}

impl CliWorkspaces {
    fn open_workspace(
        &self,
        root: &Path,
        reader: Option<Arc<dyn FileReader>>,
    ) -> Result<OpenedWorkspace, anyhow::Error> {
        let settings = Settings::load(root, &self.layer, &process_env)?;
        // No key is not a reason to refuse the session: each prompt says how to set one.
        let provider = provider(&settings, &process_env).map_err(|error| format!("{error:#}"));
        // `open` runs on a blocking thread of the runtime (the ACP agent's
        // `spawn_blocking`), where waiting on the store's async open is allowed.
        let store: Arc<dyn SessionStore> = Arc::new(ConfiguredStore::new(
            tokio::runtime::Handle::current().block_on(open_store(root, &settings))?,
            settings.clone(),
        ));
        let parts = index_parts(fresh_index(root), settings.tools(), reader);
        Ok(OpenedWorkspace {
            root: root.to_path_buf(),
            provider,
            store,
            config: settings.orchestrator_config(),
            retriever: parts.retriever,
            tools: parts.tools,
        })
    }
}

impl WorkspaceOpener for CliWorkspaces {
    fn open(
        &self,
        cwd: &Path,
        reader: Option<Arc<dyn FileReader>>,
    ) -> Result<OpenedWorkspace, AcpError> {
        let root = self.pinned.clone().unwrap_or_else(|| cwd.to_path_buf());
        self.open_workspace(&root, reader)
            .map_err(|error| AcpError::Workspace {
                path: root.clone(),
                reason: format!("{error:#}"),
            })
    }

    fn new_session_id(&self) -> String {
        new_session_id()
    }

    fn new_turn_id(&self) -> String {
        new_turn_id()
    }
}

//! `aptix acp`: Aptix as an Agent Client Protocol agent on stdin/stdout, for editors
//! (`aptix-acp`), each session's workspace wired by `aptix-runtime` exactly as `aptix
//! ask` wires one (settings, session store, workspace index, tools), so a session
//! started in the editor is continued by `aptix ask --session` and the reverse.
//!
//! Each ACP session's workspace is the editor's folder (`cwd` of `session/new`) unless
//! `--workspace` pins one: its `aptix.toml`, its `.aptix/` store and index. The
//! sessions of one workspace share its store, index and provider (opened by the first
//! session, kept while the settings stay the same): an editor opens a session per
//! thread, and each used to hold a copy of them. Stdout
//! carries only ACP messages; notes, warnings, logs and the index's progress go to
//! stderr. See docs/acp.md.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use aptix_acp::{AcpAgent, AcpError, OpenedWorkspace, WorkspaceOpener};
use aptix_client::ResponsesProvider;
use aptix_orchestrator::ServerTool;
use aptix_runtime::{FrontEndTools, HumanDuration, SettingsLayer, Workspace, process_env};
use aptix_tools::FileReader;
use clap::Args;
use tokio::runtime::Runtime;

use crate::exit::SUCCESS;
use crate::output::StderrReporter;
use crate::workspace;

/// `aptix acp`.
#[derive(Debug, Args)]
// Only `ask --schema` asks for a shape: the setting is read (a config file may set it
// for `ask`), but the flag is not offered here.
#[command(mut_arg("schema_strategy", |arg| arg.hide(true)))]
pub(crate) struct AcpArgs {
    /// Use this workspace for every session instead of the folder the editor opens
    /// each session in (its `cwd`)
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// The longest one call of an editor's MCP server tool may take; a server that has
    /// not answered by then is told to cancel, and the model that the call failed
    /// [default: 5m] [env: APTIX_MCP_TOOL_TIMEOUT]
    #[arg(long, value_name = "DURATION")]
    pub(crate) mcp_tool_timeout: Option<HumanDuration>,

    /// How long each of the editor's MCP servers has to start and list its tools;
    /// `session/new` waits for them, and one not ready by then is stopped and the
    /// session opened without its tools [default: 60s] [env: APTIX_MCP_STARTUP_TIMEOUT]
    #[arg(long, value_name = "DURATION")]
    pub(crate) mcp_startup_timeout: Option<HumanDuration>,

    /// Settings that override the environment and the config files, as for `aptix ask`.
    #[command(flatten)]
    pub(crate) settings: SettingsLayer,
    /// Do not offer the model the built-in tools (search_code, read_file, list_files);
    /// the same as `--tools=false`
    #[arg(long, conflicts_with = "tools")]
    pub(crate) no_tools: bool,
}

/// Runs `aptix acp` until the editor closes stdin (exit 0) or a signal arrives (130 or
/// 143); returns the exit code.
pub(crate) fn run(args: &AcpArgs, runtime: &Runtime) -> Result<u8, anyhow::Error> {
    let pinned = match &args.workspace {
        Some(dir) => Some(workspace::resolve(Some(dir))?),
        None => None,
    };
    let opener = CliWorkspaces {
        pinned,
        flags: crate::cli::turn_flags(&args.settings, args.no_tools),
        opened: Mutex::default(),
    };
    tracing::info!("serving ACP on stdio");
    // A signal ends the agent as the editor closing stdin does: its sessions' MCP
    // servers are stopped first. The exit code then says which signal.
    let signal = Mutex::new(None);
    let stop = async {
        let which = crate::signals::next_signal().await;
        *signal
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(which);
    };
    let mut agent = AcpAgent::new(Arc::new(opener));
    if let Some(HumanDuration(timeout)) = duration(args.mcp_tool_timeout, "APTIX_MCP_TOOL_TIMEOUT")?
    {
        agent = agent.mcp_tool_timeout(timeout);
    }
    if let Some(HumanDuration(timeout)) =
        duration(args.mcp_startup_timeout, "APTIX_MCP_STARTUP_TIMEOUT")?
    {
        agent = agent.mcp_startup_timeout(timeout);
    }
    runtime.block_on(agent.serve_stdio_until(stop))?;
    let signal = *signal
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(signal.map_or(SUCCESS, |signal| {
        tracing::info!(signal = signal.name(), "ended by a signal");
        signal.exit_code()
    }))
}

/// A duration given by its flag, else by the variable `var`; a variable that does not
/// read (or is zero) is a usage error naming it.
fn duration(
    flag: Option<HumanDuration>,
    var: &str,
) -> Result<Option<HumanDuration>, anyhow::Error> {
    if flag.is_some() {
        return Ok(flag);
    }
    let Some(text) = process_env(var).filter(|text| !text.trim().is_empty()) else {
        return Ok(None);
    };
    text.trim()
        .parse::<HumanDuration>()
        .map(Some)
        .map_err(|error| crate::exit::usage(format!("{var} {text:?}: {error}")))
}

/// Opens a session's workspace through the runtime.
struct CliWorkspaces {
    pinned: Option<PathBuf>,
    flags: SettingsLayer,
    /// Each workspace opened, with its provider (or why there is none), by root: the
    /// sessions on it share them while its settings stay the same.
    opened: Mutex<HashMap<PathBuf, OpenWorkspace>>,
}

/// A workspace and its provider, or why it has none (in words for the editor).
type OpenWorkspace = (Workspace, Result<Arc<dyn ResponsesProvider>, String>);

impl CliWorkspaces {
    /// The workspace at `root` with its settings as they are now (a session opened
    /// after `aptix.toml` changed takes the change), and its provider: the ones
    /// already open when the settings are the same.
    fn workspace(&self, root: &Path) -> Result<OpenWorkspace, aptix_runtime::Error> {
        let loaded = Workspace::load(root, &self.flags, &process_env)?;
        let mut opened = self
            .opened
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(open) = opened.get(root)
            && open.0.settings() == loaded.settings()
        {
            return Ok(open.clone());
        }
        // No key is not a reason to refuse the session: each prompt says how to set one.
        let provider = loaded
            .provider(&process_env)
            .map_err(|error| shown(&error.into()));
        let open = (loaded, provider);
        opened.insert(root.to_path_buf(), open.clone());
        Ok(open)
    }

    fn open_workspace(
        &self,
        root: &Path,
        reader: Option<Arc<dyn FileReader>>,
        server_tools: Vec<Arc<dyn ServerTool>>,
    ) -> Result<OpenedWorkspace, aptix_runtime::Error> {
        let (workspace, provider) = self.workspace(root)?;
        // `open` runs on a blocking thread of the runtime (the ACP agent's
        // `spawn_blocking`), where waiting on the runtime's async work is allowed.
        let handle = tokio::runtime::Handle::current();
        let (orchestrator, store) = match provider {
            Ok(provider) => {
                let tools = FrontEndTools {
                    reader,
                    server_tools,
                    ..FrontEndTools::default()
                };
                let orchestrator = handle.block_on(workspace.orchestrator_with(
                    provider,
                    &StderrReporter,
                    tools,
                ))?;
                let store = Arc::clone(orchestrator.store());
                (Ok(orchestrator), store)
            }
            Err(reason) => (Err(reason), handle.block_on(workspace.open_store())?),
        };
        Ok(OpenedWorkspace {
            root: root.to_path_buf(),
            orchestrator,
            store,
        })
    }
}

/// An error and its causes, as the editor shows them.
fn shown(error: &anyhow::Error) -> String {
    format!("{error:#}")
}

impl CliWorkspaces {
    /// The workspace folder for an editor's `cwd`: the pinned one, else `cwd` when it is
    /// a folder a workspace may be (not the home folder or `/`).
    fn root_for(&self, cwd: &Path) -> Result<PathBuf, AcpError> {
        let root = self.pinned.clone().unwrap_or_else(|| cwd.to_path_buf());
        if self.pinned.is_none()
            && let Some(why) = aptix_runtime::workspace_too_wide(&root, &aptix_runtime::process_env)
        {
            return Err(AcpError::NotAWorkspace {
                path: root,
                reason: format!(
                    "{why}: open a project folder, or start `aptix acp --workspace DIR`"
                ),
            });
        }
        Ok(root)
    }
}

impl WorkspaceOpener for CliWorkspaces {
    fn open(
        &self,
        cwd: &Path,
        reader: Option<Arc<dyn FileReader>>,
        server_tools: Vec<Arc<dyn ServerTool>>,
    ) -> Result<OpenedWorkspace, AcpError> {
        let root = self.root_for(cwd)?;
        self.open_workspace(&root, reader, server_tools)
            .map_err(|error| AcpError::Workspace {
                path: root.clone(),
                reason: shown(&error.into()),
            })
    }

    fn sessions_of(
        &self,
        cwd: &Path,
    ) -> Result<(PathBuf, Arc<dyn aptix_orchestrator::SessionStore>), AcpError> {
        let root = self.root_for(cwd)?;
        let failed = |error: aptix_runtime::Error| AcpError::Workspace {
            path: root.clone(),
            reason: shown(&error.into()),
        };
        let (workspace, _provider) = self.workspace(&root).map_err(failed)?;
        // An editor lists sessions as it opens a folder: listing a folder never used
        // makes no store in it. Called on a blocking thread of the runtime, as `open` is.
        let store = tokio::runtime::Handle::current()
            .block_on(workspace.existing_store())
            .map_err(failed)?;
        Ok((root, store))
    }

    fn can_prompt(&self, cwd: &Path) -> Result<(), String> {
        let root = self.root_for(cwd).map_err(|error| error.to_string())?;
        match self.workspace(&root) {
            Ok((_, provider)) => provider.map(drop),
            // `open` reports it.
            Err(error) => Err(shown(&error.into())),
        }
    }

    fn new_session_id(&self) -> String {
        aptix_orchestrator::new_session_id()
    }

    fn made_session_id(&self, id: &str) -> bool {
        aptix_orchestrator::is_made_session_id(id)
    }

    fn new_turn_id(&self) -> String {
        aptix_orchestrator::new_turn_id()
    }
}

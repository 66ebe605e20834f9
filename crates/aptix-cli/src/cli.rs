//! The command line as clap parses it: every command, flag and argument.
//!
//! Only parsing lives here. The settings flags are `aptix_runtime`'s tables
//! (`SettingsLayer`, `ServeLayer`), flattened into the commands: each key is declared
//! once there, with its config key, variable, flag and help, and what a flag means
//! beyond its type (precedence over the environment and the config files, validation
//! that names the flag) is the runtime's too. Each command's behaviour is in its own
//! module.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand};

const AFTER_HELP: &str = "\
Settings come from, highest first: flags, environment (APTIX_*, OPENAI_BASE_URL),
<workspace>/aptix.toml, $XDG_CONFIG_HOME/aptix/config.toml (~/.config/aptix/config.toml),
built-in defaults. The API key is read only from OPENAI_API_KEY.

Exit codes: 0 success, 1 the model or the provider failed (error envelope) or another
runtime failure, 2 bad usage or configuration (including a missing API key), 3 the
answer is incomplete (output token limit, content filter, or the turn's bound on model
calls), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).

See docs/cli.md for every flag, config key and environment variable.";

/// Aptix turns one instruction into one well-formed `/v1/responses` call, with code from
/// your workspace as context, and maps the answer into a typed envelope.
#[derive(Debug, Parser)]
#[command(name = "aptix", version = env!("APTIX_VERSION"), after_help = AFTER_HELP)]
pub(crate) struct Cli {
    /// More log output on stderr: -v info, -vv debug, -vvv trace (RUST_LOG, when set,
    /// replaces these levels)
    #[arg(short, long, action = ArgAction::Count, global = true)]
    pub(crate) verbose: u8,

    /// Log lines as `text` (the default) or `json` (one object per line, for log
    /// collectors) [config: log_format, env: APTIX_LOG_FORMAT]
    #[arg(long, value_enum, global = true, value_name = "FORMAT")]
    pub(crate) log_format: Option<LogFormat>,

    /// The command to run.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line: time, level, target, message, fields and the spans
    /// (a served request's `request_id`, `method`, `path`).
    Json,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Ask one question (one user turn) against the configured provider; the answer is
    /// streamed to stdout
    Ask(Box<AskArgs>),
    /// Build or refresh the workspace index (kept in .aptix/ in the workspace)
    Index(IndexArgs),
    /// Search the workspace index: the ranked chunks and files a question retrieves, with
    /// scores and the terms each matched
    Search(SearchArgs),
    /// Map a captured /v1/responses body, error body or SSE stream (or a saved envelope's
    /// reply) to the envelope JSON
    Inspect(InspectArgs),
    /// Serve the orchestrator over HTTP (POST /v1/agent/execute, JSON or server-sent
    /// events) for editors, scripts and teams; see docs/serve.md
    Serve(Box<crate::serve::ServeArgs>),
    /// Run as an Agent Client Protocol agent on stdin/stdout, for editors (Zed,
    /// JetBrains, Neovim); see docs/acp.md
    Acp(Box<crate::acp::AcpArgs>),
    /// List the workspace's stored sessions, newest first (`show ID` and `delete ID` for
    /// one); continue one with `aptix ask --session ID`
    Sessions(SessionsArgs),
    /// Print the completion script for a shell, e.g. `aptix completions bash >
    /// ~/.local/share/bash-completion/completions/aptix`
    Completions {
        /// The shell
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

impl Command {
    /// The workspace the command names (`--workspace`, `aptix index PATH`, `aptix
    /// serve`'s `APTIX_WORKSPACE`), if it names one.
    pub(crate) fn workspace(&self) -> Option<PathBuf> {
        match self {
            Command::Ask(args) => args.workspace.clone(),
            Command::Index(args) => args.folder().map(std::path::Path::to_path_buf),
            Command::Search(args) => args.workspace.clone(),
            Command::Serve(args) => {
                crate::serve::named_workspace(args, &aptix_runtime::process_env)
            }
            Command::Acp(args) => args.workspace.clone(),
            Command::Sessions(args) => args.workspace.clone(),
            Command::Inspect(_) | Command::Completions { .. } => None,
        }
    }
}

/// `aptix sessions`.
#[derive(Debug, Args)]
pub(crate) struct SessionsArgs {
    /// Show or delete one session; without, list them
    #[command(subcommand)]
    pub(crate) action: Option<SessionsAction>,

    /// The workspace [default: as for `aptix ask --workspace`]
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) workspace: Option<PathBuf>,

    /// Where sessions are kept, as for `aptix ask --store` [default: the workspace's
    /// setting, else .aptix/sessions.db]
    #[arg(long, value_name = "URL", global = true)]
    pub(crate) store: Option<aptix_runtime::StoreUrl>,

    /// Print JSON instead of text (`show`: what GET /v1/sessions/{id} answers)
    #[arg(long, global = true)]
    pub(crate) json: bool,

    /// The most sessions to list, 1 to 1000
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) limit: u16,
}

/// What `aptix sessions` does to one session.
#[derive(Debug, Subcommand)]
pub(crate) enum SessionsAction {
    /// Show a session: mode, model, turns and tokens, pending tool calls, recent turns
    Show {
        /// The session's id
        id: String,
    },
    /// Delete a session with its stored turns (refused while a turn runs on it)
    Delete {
        /// The session's id
        id: String,
    },
}

/// `aptix ask`.
#[derive(Debug, Args)]
pub(crate) struct AskArgs {
    /// The instruction, in Markdown; `-` reads it from stdin
    pub(crate) instruction: String,

    /// The workspace: where aptix.toml, the index and the sessions live [default: the
    /// nearest folder up from here holding aptix.toml or .git, else one holding .aptix,
    /// else the current folder]
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// Continue this session (its id is printed on stderr by every ask); a new session
    /// is started when absent
    #[arg(long, value_name = "ID")]
    pub(crate) session: Option<String>,

    /// Continue the workspace's most recently used session (`aptix sessions` lists
    /// them)
    #[arg(short = 'c', long = "continue", conflicts_with = "session")]
    pub(crate) continue_last: bool,

    /// Settings that override the environment and the config files.
    #[command(flatten)]
    pub(crate) settings: aptix_runtime::SettingsLayer,

    /// Ask for the whole answer at once instead of a stream
    #[arg(long)]
    pub(crate) no_stream: bool,

    /// Attach a text file to the turn, sent as context with its path (repeatable)
    #[arg(long = "file", value_name = "PATH")]
    pub(crate) files: Vec<PathBuf>,

    /// Attach an image (PNG, JPEG, GIF or WebP), sent inline (repeatable)
    #[arg(long = "image", value_name = "PATH")]
    pub(crate) images: Vec<PathBuf>,

    /// Limit retrieved context to chunks matching `KEY OP VALUE[,VALUE...]`, e.g.
    /// 'path contains crates/' or 'kind == source' (repeatable; all must hold)
    #[arg(long = "scope", value_name = "CONDITION")]
    pub(crate) scopes: Vec<String>,

    /// Do not offer the model the built-in tools (search_code, read_file, list_files);
    /// the same as `--tools=false`
    #[arg(long, conflicts_with = "tools")]
    pub(crate) no_tools: bool,

    /// Print the final envelope as JSON on stdout instead of the answer text
    #[arg(long, conflicts_with = "dry_run")]
    pub(crate) json: bool,

    /// Print the exact request body that would be sent (pretty JSON) and send nothing;
    /// needs no key and no network
    #[arg(long)]
    pub(crate) dry_run: bool,

    /// Answer with JSON valid against this JSON Schema file (`-`: stdin) and print it
    /// (a self-contained schema Request: no session, no attachments, no scope, no
    /// tools, no mode or extra system prompt, not streamed nor in the background; those
    /// flags are refused with it)
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "session", "continue_last", "files", "images", "scopes", "no_tools", "tools", "mode", "system_prompt",
        "background",
    ])]
    pub(crate) schema: Option<PathBuf>,
}

/// `aptix index`.
#[derive(Debug, Args)]
pub(crate) struct IndexArgs {
    /// The workspace to index [default: as for `aptix ask --workspace`]
    #[arg(value_name = "PATH")]
    pub(crate) path: Option<PathBuf>,

    /// The workspace to index, as the other commands name it (the same as PATH)
    #[arg(long, value_name = "DIR", conflicts_with = "path")]
    pub(crate) workspace: Option<PathBuf>,
}

impl IndexArgs {
    /// The folder named to index, by PATH or `--workspace`.
    pub(crate) fn folder(&self) -> Option<&std::path::Path> {
        self.path.as_deref().or(self.workspace.as_deref())
    }
}

/// `aptix search`.
#[derive(Debug, Args)]
pub(crate) struct SearchArgs {
    /// The question or identifiers to search for (`-` reads it from stdin)
    pub(crate) query: String,

    /// The workspace [default: as for `aptix ask --workspace`]
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// Print JSON (chunks, files, query terms) instead of text
    #[arg(long)]
    pub(crate) json: bool,

    /// The most chunks to show, 1 to 1000
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub(crate) limit: u16,

    /// A scope condition `KEY OP VALUE[,VALUE...]` (OP: ==, !=, contains,
    /// does_not_contain; keys: path, language, repo, extension, symbol, id, kind), e.g.
    /// `--scope "kind == source"`; repeat to AND several
    #[arg(long, value_name = "CONDITION")]
    pub(crate) scope: Vec<String>,
}

/// `aptix inspect`.
#[derive(Debug, Args)]
pub(crate) struct InspectArgs {
    /// A captured reply body (JSON response, JSON error body or SSE stream), or an
    /// envelope saved from `aptix ask --json`; `-` reads stdin
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
}

/// The settings a front end runs turns with: its flags, with `--no-tools` read as
/// `--tools=false` (the one home of that rule for `ask`, `serve` and `acp`).
pub(crate) fn turn_flags(
    settings: &aptix_runtime::SettingsLayer,
    no_tools: bool,
) -> aptix_runtime::SettingsLayer {
    let mut flags = settings.clone();
    if no_tools {
        flags.tools = Some(false);
    }
    flags
}

//! `aptix serve`: the orchestrator as an HTTP service (`aptix-server`), wired by
//! `aptix-runtime` exactly as `aptix ask` is (the same settings, session store and
//! workspace index), so a session started by one is continued by the other. This front
//! end adds the service's own settings, its bearer tokens, metrics and signals.
//!
//! It listens on `127.0.0.1:8787` by default and refuses a non-loopback address unless
//! bearer tokens are configured (`--tokens-file`, or `APTIX_SERVE_TOKENS`). Ctrl-C or
//! SIGTERM stops accepting, lets the turns in flight finish within the grace period and
//! exits 0.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use aptix_runtime::{Env, HumanDuration, ServeLayer, SettingsLayer, Workspace};
use aptix_server::{Metrics, SHORT_TOKEN, ServerConfig, TimedProvider, Tokens, router, serve};
use clap::Args;
use tokio::runtime::Runtime;

use crate::exit::{FAILURE, SUCCESS, usage};
use crate::output::{StderrReporter, note, warn};
use crate::workspace;

/// `aptix serve`. Each of its own settings is also a key in the config files and an
/// `APTIX_<KEY>` variable (`aptix_runtime::ServeLayer`).
#[derive(Debug, Args)]
// Only `ask --schema` asks for a shape: the setting is read (a config file may set it
// for `ask`), but the flag is not offered here.
#[command(mut_arg("schema_strategy", |arg| arg.hide(true)))]
pub(crate) struct ServeArgs {
    /// The workspace whose settings, sessions and index the service uses [default: as
    /// for `aptix ask`] [env: APTIX_WORKSPACE]
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// The service's own settings.
    #[command(flatten)]
    pub(crate) serve: ServeLayer,

    /// Settings that override the environment and the config files, as for `aptix ask`.
    #[command(flatten)]
    pub(crate) settings: SettingsLayer,
    /// Do not offer the model the built-in tools (search_code, read_file, list_files);
    /// the same as `--tools=false`
    #[arg(long, conflicts_with = "tools")]
    pub(crate) no_tools: bool,
}

/// `aptix serve`'s own settings, every layer applied, defaults filled in. The service's
/// limits and timeouts default to `ServerConfig::default()`'s: one home for them.
struct Serving {
    listen: SocketAddr,
    tokens_file: Option<PathBuf>,
    client_tools: Option<PathBuf>,
    shutdown_grace: std::time::Duration,
    /// Limits and timeouts; tokens and metrics are filled in by `run`.
    config: ServerConfig,
}

impl Serving {
    fn load(args: &ServeArgs, workspace: &Path, env: Env<'_>) -> Result<Serving, anyhow::Error> {
        let layer = ServeLayer::load(workspace, &args.serve, env)?;
        let defaults = ServerConfig::default();
        let duration = |set: Option<HumanDuration>, default| set.map_or(default, |d| d.0);
        let config = ServerConfig {
            max_concurrent_turns: layer
                .max_concurrent_turns
                .unwrap_or(defaults.max_concurrent_turns),
            body_limit: layer.body_limit.map_or(defaults.body_limit, |size| size.0),
            turn_timeout: duration(layer.turn_timeout, defaults.turn_timeout),
            header_read_timeout: duration(layer.header_timeout, defaults.header_read_timeout),
            body_read_timeout: duration(layer.body_timeout, defaults.body_read_timeout),
            ..defaults
        };
        // A body limit of zero is refused as the size is read.
        if config.max_concurrent_turns == 0 {
            return Err(usage(
                "max_concurrent_turns (--max-concurrent-turns) must be at least 1",
            ));
        }
        Ok(Serving {
            listen: layer
                .listen
                .map_or(SocketAddr::from(([127, 0, 0, 1], 8787)), |listen| listen.0),
            tokens_file: layer.tokens_file,
            client_tools: layer.client_tools,
            shutdown_grace: duration(layer.shutdown_grace, std::time::Duration::from_secs(30)),
            config,
        })
    }
}

/// The workspace `--workspace` names, else `APTIX_WORKSPACE`: a service is often
/// configured by its environment alone (a container, a unit file).
pub(crate) fn named_workspace(args: &ServeArgs, env: Env<'_>) -> Option<PathBuf> {
    args.workspace.clone().or_else(|| {
        env("APTIX_WORKSPACE")
            .filter(|dir| !dir.trim().is_empty())
            .map(PathBuf::from)
    })
}

/// Runs `aptix serve` until a signal; returns the exit code.
pub(crate) fn run(args: &ServeArgs, env: Env<'_>, runtime: &Runtime) -> Result<u8, anyhow::Error> {
    steady_page_faults();
    let root = workspace::resolve(named_workspace(args, env).as_deref())?;
    let workspace = Workspace::load(
        &root,
        &crate::cli::turn_flags(&args.settings, args.no_tools),
        env,
    )?;
    let serving = Serving::load(args, &root, env)?;
    let tokens = tokens(serving.tokens_file.as_deref(), env)?;
    // The tokens file may lie in the workspace (`--tokens-file tokens.txt`): the index
    // and the model's tools never see it.
    let workspace = match &serving.tokens_file {
        Some(file) => workspace.with_secret_file(file),
        None => workspace,
    };
    if tokens.is_empty() && !serving.listen.ip().is_loopback() {
        return Err(usage(format!(
            "refusing to listen on {} without bearer tokens: anyone who can reach it could run \
             turns with your provider key; pass --tokens-file FILE (or set APTIX_SERVE_TOKENS), \
             or listen on 127.0.0.1",
            serving.listen
        )));
    }
    // Provider calls are timed into the service's metrics (provider latency, and each
    // turn's orchestration overhead: its time minus the time waiting on the provider).
    let metrics = Metrics::new();
    let provider = Arc::new(TimedProvider::new(
        workspace.provider(env)?,
        metrics.clone(),
    ));
    let client_tools = match &serving.client_tools {
        Some(path) => aptix_runtime::read_client_tools(path)?,
        None => Vec::new(),
    };
    let client_tool_count = client_tools.len();
    let tools = aptix_runtime::FrontEndTools {
        client_tools,
        ..aptix_runtime::FrontEndTools::default()
    };
    let orchestrator =
        runtime.block_on(workspace.orchestrator_with(provider, &StderrReporter, tools))?;
    let config = ServerConfig {
        tokens,
        metrics,
        ..serving.config
    };
    let authenticated = !config.tokens.is_empty();
    let stop_turns = config.stop_turns.clone();
    let sessions = workspace.store_location()?.shown();
    let grace = serving.shutdown_grace;
    let listen = serving.listen;
    let header_timeout = config.header_read_timeout;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("could not listen on {listen}"))?;
        let address = listener.local_addr().unwrap_or(listen);
        note(format_args!(
            "serving workspace {} on http://{address} ({}; sessions in {sessions}{}); Ctrl-C stops",
            root.display(),
            if authenticated {
                "bearer tokens required"
            } else {
                "no tokens: loopback only"
            },
            match client_tool_count {
                0 => String::new(),
                1 => "; 1 client tool".to_owned(),
                n => format!("; {n} client tools"),
            }
        ));
        let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(Arc::new(orchestrator), config);
        let mut served = tokio::spawn(serve(listener, app, header_timeout, async move {
            let _ = stopped.await;
        }));
        tokio::select! {
            finished = &mut served => {
                finished
                    .context("the server stopped")?
                    .context("the server failed")?;
                return Ok(SUCCESS);
            }
            () = shutdown_signal() => {}
        }
        note(format_args!(
            "stopping: no new requests; turns in flight have {} to finish (Ctrl-C or SIGTERM again stops them now)",
            aptix_client::human_duration(grace)
        ));
        let _ = stopping.send(());
        let why = tokio::select! {
            finished = tokio::time::timeout(grace, &mut served) => match finished {
                Ok(finished) => {
                    finished
                        .context("the server stopped")?
                        .context("the server failed")?;
                    return Ok(SUCCESS);
                }
                Err(_) => "the grace period ran out",
            },
            () = shutdown_signal() => "asked again",
        };
        // The turns still running end now, each telling its client (`503 shutting_down`,
        // or a streamed turn's `event: error`), their sessions released; the server then
        // has a moment to send those answers before the process exits.
        stop_turns.stop();
        if tokio::time::timeout(STOPPED_TURNS_FLUSH, &mut served)
            .await
            .is_err()
        {
            warn("some connections were still open when the service exited");
        }
        let stopped = stop_turns.stopped();
        note(format_args!(
            "{why}: {stopped} turn{} still running {} stopped; {} told `503 shutting_down`, and nothing of {} was stored",
            if stopped == 1 { "" } else { "s" },
            if stopped == 1 { "was" } else { "were" },
            if stopped == 1 { "its client was" } else { "their clients were" },
            if stopped == 1 { "it" } else { "them" },
        ));
        Ok::<u8, anyhow::Error>(if stopped == 0 { SUCCESS } else { FAILURE })
    })
}

/// How long a service whose turns were stopped waits for their answers to go out.
const STOPPED_TURNS_FLUSH: std::time::Duration = std::time::Duration::from_secs(5);

/// Turns transparent huge pages off for this process (Linux; elsewhere there is nothing
/// to do).
///
/// The allocator asks the kernel for huge pages, and the first touch of a fresh 2 MiB page
/// zeroes all of it while the thread waits. On the 2-core test machine that took 5 to
/// 10 ms, once for every 2 MiB the process grew: while the session store filled, every
/// turn on that core waited, and `cargo xtask serve-bench` measured a streamed p99 of 5 to
/// 8 ms in those windows, against under 2 ms with huge pages off (and no less
/// throughput). Servers whose tail latency matters advise the same (Redis, MongoDB).
fn steady_page_faults() {
    #[cfg(target_os = "linux")]
    if let Err(error) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!(%error, "could not turn transparent huge pages off");
    }
}

/// The configured bearer tokens: the file's and `APTIX_SERVE_TOKENS`'s, together (an
/// operator may keep one set in a mounted file and another in the environment; before,
/// the variable was ignored without a word when a file was given). The format is
/// `Tokens`'s; a token that could never match is refused, naming its line or item but
/// never its text. A variable that holds only commas and blanks is refused too, as an
/// empty file is: it would leave the service without tokens while its operator meant it
/// to have some. (An empty variable counts as unset, as every variable does.)
fn tokens(file: Option<&Path>, env: Env<'_>) -> Result<Tokens, anyhow::Error> {
    let mut tokens = Tokens::default();
    if let Some(path) = file {
        // A tokens file that cannot be read is a setting to fix, as an empty one is.
        let text = std::fs::read_to_string(path).map_err(|error| {
            usage(format!(
                "could not read the tokens file {}: {error}",
                path.display()
            ))
        })?;
        let listed = Tokens::from_lines(&text)
            .map_err(|error| usage(format!("the tokens file {}: {error}", path.display())))?;
        if listed.is_empty() {
            return Err(usage(format!(
                "the tokens file {} holds no token",
                path.display()
            )));
        }
        tokens = tokens.union(listed);
    }
    if let Some(list) = env("APTIX_SERVE_TOKENS") {
        let listed = Tokens::from_comma_list(&list)
            .map_err(|error| usage(format!("APTIX_SERVE_TOKENS: {error}")))?;
        if listed.is_empty() {
            return Err(usage(
                "APTIX_SERVE_TOKENS is set but holds no token: set it to comma-separated \
                 tokens, or unset it to serve loopback only without tokens",
            ));
        }
        tokens = tokens.union(listed);
    }
    let short = tokens.short();
    if short > 0 {
        warn(&format!(
            "{short} bearer token{} shorter than {SHORT_TOKEN} characters, easy to guess: \
             use long random ones (for example `openssl rand -hex 32`)",
            if short == 1 { " is" } else { "s are" }
        ));
    }
    Ok(tokens)
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    crate::signals::next_signal().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &[u8]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        file
    }

    fn env_of(value: Option<&'static str>) -> impl Fn(&str) -> Option<String> {
        move |name: &str| (name == "APTIX_SERVE_TOKENS").then(|| value.map(str::to_owned))?
    }

    #[test]
    fn the_files_tokens_and_the_variables_are_served_together() {
        // An editor's byte order mark, a comment after a token, and a blank line.
        let listed = file(
            b"\xEF\xBB\xBFtok-from-file-0001 # the laptop\n\n# a comment\ntok-from-file-0002\n",
        );
        let env = env_of(Some("tok-from-env-00003, ,"));
        let tokens = tokens(Some(listed.path()), &env).unwrap();
        assert_eq!(tokens.len(), 3);
        for token in [
            "tok-from-file-0001",
            "tok-from-file-0002",
            "tok-from-env-00003",
        ] {
            assert!(tokens.accepts(token), "{token}");
        }
        assert!(!tokens.accepts("tok-from-file-0001 # the laptop"));
    }

    #[test]
    fn a_line_no_client_could_send_is_refused_by_its_number_not_its_text() {
        let listed = file(b"good-token-000001\nsecret with spaces\n");
        let error = tokens(Some(listed.path()), &env_of(None))
            .unwrap_err()
            .to_string();
        assert!(error.contains("line 2 is not a bearer token"), "{error}");
        assert!(
            error.contains(&listed.path().display().to_string()),
            "{error}"
        );
        assert!(!error.contains("secret"), "{error}");
        let error = tokens(None, &env_of(Some("fine-token-00001,two words")))
            .unwrap_err()
            .to_string();
        assert!(error.contains("APTIX_SERVE_TOKENS: item 2"), "{error}");
        assert!(!error.contains("words"), "{error}");
        // Punctuation is a token's to hold: it worked before, and clients send it.
        let listed = file(b"p@ss!w0rd:\"long\"-enough\n");
        assert!(
            tokens(Some(listed.path()), &env_of(None))
                .unwrap()
                .accepts("p@ss!w0rd:\"long\"-enough")
        );
    }

    #[test]
    fn a_set_variable_or_a_file_without_a_token_is_refused() {
        let error = tokens(None, &env_of(Some(" , ,"))).unwrap_err().to_string();
        assert!(
            error.contains("APTIX_SERVE_TOKENS is set but holds no token"),
            "{error}"
        );
        let listed = file(b"# only a comment\n\n");
        let error = tokens(Some(listed.path()), &env_of(None))
            .unwrap_err()
            .to_string();
        assert!(error.contains("holds no token"), "{error}");
        // Unset, and no file: no tokens (the service then serves loopback only).
        assert!(tokens(None, &env_of(None)).unwrap().is_empty());
    }
}

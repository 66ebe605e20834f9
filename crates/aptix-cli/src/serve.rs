//! `aptix serve`: the orchestrator as an HTTP service (`aptix-server`), wired from the
//! same settings, session store and workspace index as `aptix ask`, so a session
//! started by one is continued by the other.
//!
//! It listens on `127.0.0.1:8787` by default and refuses a non-loopback address unless
//! bearer tokens are configured (`--tokens-file`, or `APTIX_SERVE_TOKENS`). Ctrl-C or
//! SIGTERM stops accepting, lets the turns in flight finish within the grace period and
//! exits 0.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context as _;
use aptix_orchestrator::{Orchestrator, SessionStore};
use aptix_server::{Metrics, ServerConfig, TimedProvider, Tokens, router, serve};
use clap::Args;
use tokio::runtime::Runtime;

use crate::ask::{fresh_index, provider, with_index};
use crate::config::{Env, HumanDuration, Layer, Settings};
use crate::exit::{SUCCESS, usage};
use crate::output::{note, warn};
use crate::session::{ConfiguredStore, StoreLocation, open_store};
use crate::workspace;

/// `aptix serve`.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on; a non-loopback address needs bearer tokens
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub(crate) listen: SocketAddr,

    /// The workspace whose settings, sessions and index the service uses [default: as
    /// for `aptix ask`]
    #[arg(long, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,

    /// Bearer tokens, one per line (`#` comments and blank lines ignored); also
    /// APTIX_SERVE_TOKENS (comma-separated). With tokens, /v1/* needs `Authorization:
    /// Bearer`
    #[arg(long, value_name = "FILE")]
    pub(crate) tokens_file: Option<PathBuf>,

    /// Turns running at once across all sessions; more are answered 503
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub(crate) max_concurrent_turns: usize,

    /// The largest request body in bytes; larger is 413
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024)]
    pub(crate) body_limit: usize,

    /// The longest a turn may run (e.g. 10m); longer is 504
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub(crate) turn_timeout: HumanDuration,

    /// How long turns in flight may take to finish after Ctrl-C or SIGTERM
    #[arg(long, value_name = "DURATION", default_value = "30s")]
    pub(crate) shutdown_grace: HumanDuration,

    /// Settings that override the environment and the config files, as for `aptix ask`.
    #[command(flatten)]
    pub(crate) settings: Layer,
}

/// Runs `aptix serve` until a signal; returns the exit code.
pub(crate) fn run(args: &ServeArgs, env: Env<'_>, runtime: &Runtime) -> Result<u8, anyhow::Error> {
    let workspace = workspace::resolve(args.workspace.as_deref())?;
    let settings = Settings::load(&workspace, &args.settings, env)?;
    let tokens = tokens(args.tokens_file.as_deref(), env)?;
    if tokens.is_empty() && !args.listen.ip().is_loopback() {
        return Err(usage(format!(
            "refusing to listen on {} without bearer tokens: anyone who can reach it could run \
             turns with your provider key; pass --tokens-file FILE (or set APTIX_SERVE_TOKENS), \
             or listen on 127.0.0.1",
            args.listen
        )));
    }
    // Provider calls are timed into the service's metrics (provider latency, and each
    // turn's orchestration overhead: its time minus the time waiting on the provider).
    let metrics = Metrics::new();
    let provider: Arc<dyn aptix_client::ResponsesProvider> = Arc::new(TimedProvider::new(
        provider(&settings, env)?,
        metrics.clone(),
    ));
    let store: Arc<dyn SessionStore> = Arc::new(ConfiguredStore::new(
        runtime.block_on(open_store(&workspace, &settings))?,
        settings.clone(),
    ));
    let builder = Orchestrator::builder(provider, store).config(settings.orchestrator_config());
    // The workspace index is the retriever, and the built-in read-only tools (search_code,
    // read_file, list_files) are offered unless the `tools` setting turns them off.
    let builder = with_index(builder, fresh_index(&workspace), settings.tools());
    let orchestrator = builder.build().map_err(|error| usage(error.to_string()))?;
    let config = ServerConfig {
        tokens,
        body_limit: args.body_limit,
        max_concurrent_turns: args.max_concurrent_turns,
        turn_timeout: args.turn_timeout.0,
        metrics,
        ..ServerConfig::default()
    };
    let authenticated = !config.tokens.is_empty();
    let sessions = StoreLocation::of(&workspace, &settings)?.shown();
    let grace = args.shutdown_grace.0;
    let listen = args.listen;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("could not listen on {listen}"))?;
        let address = listener.local_addr().unwrap_or(listen);
        note(format_args!(
            "serving workspace {} on http://{address} ({}; sessions in {sessions}); Ctrl-C stops",
            workspace.display(),
            if authenticated {
                "bearer tokens required"
            } else {
                "no tokens: loopback only"
            }
        ));
        let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = router(Arc::new(orchestrator), config);
        let mut served = tokio::spawn(serve(listener, app, async move {
            let _ = stopped.await;
        }));
        tokio::select! {
            finished = &mut served => {
                return finished
                    .context("the server stopped")?
                    .context("the server failed");
            }
            () = shutdown_signal() => {}
        }
        note(format_args!(
            "stopping: no new requests; turns in flight have {} s to finish",
            grace.as_secs()
        ));
        let _ = stopping.send(());
        match tokio::time::timeout(grace, &mut served).await {
            Ok(finished) => finished
                .context("the server stopped")?
                .context("the server failed")?,
            Err(_) => warn("the grace period ended with turns still running; they were stopped"),
        }
        Ok::<(), anyhow::Error>(())
    })?;
    Ok(SUCCESS)
}

/// The configured bearer tokens: the file's, else `APTIX_SERVE_TOKENS`.
fn tokens(file: Option<&Path>, env: Env<'_>) -> Result<Tokens, anyhow::Error> {
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("could not read the tokens file {}", path.display()))?;
        let tokens = Tokens::from_lines(&text);
        if tokens.is_empty() {
            return Err(usage(format!(
                "the tokens file {} holds no token",
                path.display()
            )));
        }
        return Ok(tokens);
    }
    Ok(env("APTIX_SERVE_TOKENS")
        .map(|list| Tokens::from_comma_list(&list))
        .unwrap_or_default())
}

/// Ctrl-C, or SIGTERM on Unix.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}

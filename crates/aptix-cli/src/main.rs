//! The `aptix` command: `ask` one turn, `index` a workspace, `search` it, `inspect` a
//! captured reply, `serve` over HTTP, `acp` for editors.
//!
//! This crate is a front end: it reads argv and writes to the terminal (results on
//! stdout, notes, progress and errors on stderr), and maps failures to exit codes. The
//! wiring (settings from the files and the environment, the provider, the session
//! store, the workspace index, the orchestrator) is `aptix-runtime`'s, shared with
//! every front end; `ask`, `serve` and `acp` are thin layers over it. It is the only
//! crate that reads argv and the only one that uses `anyhow`. Exit codes are in
//! [`exit`]; `docs/cli.md` is the user's reference.

mod acp;
mod ask;
mod cli;
mod exit;
mod index;
mod inspect;
mod output;
mod schema;
mod search;
mod serve;
mod sessions;
mod signals;
mod workspace;

use std::io::IsTerminal as _;
use std::process::ExitCode;

use clap::Parser as _;
use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, Command, LogFormat};

/// mimalloc instead of the system allocator: `aptix serve` allocates on every request,
/// and under load glibc's malloc and free took a fifth of its CPU (`cargo xtask
/// serve-bench`, docs/benchmarks.md). Libraries leave the choice to their users.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    // `aptix ask` tells a request sent again as a note of its own.
    let notes_retries = matches!(cli.command, Command::Ask(_));
    let format = match cli.log_format {
        Some(format) => Ok(Some(format)),
        None => configured_log_format(&cli),
    };
    let logging = format.and_then(|format| init_logging(cli.verbose, format, notes_retries));
    if let Err(message) = logging {
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr().lock(),
            format_args!("error: {message}\n"),
        );
        return ExitCode::from(exit::USAGE);
    }
    warn_of_misspelt_variables();
    let code = match run(&cli) {
        Ok(code) => code,
        Err(error) if output::is_broken_pipe(&error) => exit::SUCCESS,
        Err(error) => {
            output::error(format_args!("{error:#}"));
            exit::code_of(&error)
        }
    };
    ExitCode::from(code)
}

/// A command line that does not parse: clap's own message and exit code, except that
/// with JSON logs asked for on the command line or in `APTIX_LOG_FORMAT` the error is
/// a JSON record too (a collector reading stderr finds nothing but JSON lines). Help
/// and version go out as clap writes them.
fn usage_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let json = || {
        let args: Vec<String> = std::env::args().collect();
        args.iter()
            .any(|arg| arg.eq_ignore_ascii_case("--log-format=json"))
            || args
                .windows(2)
                .any(|pair| pair[0] == "--log-format" && pair[1].eq_ignore_ascii_case("json"))
            || std::env::var("APTIX_LOG_FORMAT")
                .is_ok_and(|format| format.trim().eq_ignore_ascii_case("json"))
    };
    let shown = matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if shown || !json() {
        error.exit();
    }
    output::notes_as_json();
    let rendered = error.render().to_string();
    output::error(format_args!(
        "{}",
        rendered.trim().trim_start_matches("error: ")
    ));
    ExitCode::from(exit::USAGE)
}

/// A warning for each `APTIX_*` variable that is not one but is close to one
/// (`APTIX_MODLE`): the settings read variables by name, so a typo would otherwise
/// leave the default in force without a word. Names that are not UTF-8 cannot be ours.
fn warn_of_misspelt_variables() {
    let names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .collect();
    for (name, meant) in aptix_runtime::misspelt_variables(names.iter().map(String::as_str)) {
        output::warn(&format!(
            "{name} is not an Aptix variable and is ignored; did you mean {meant}?"
        ));
    }
}

fn run(cli: &Cli) -> Result<u8, anyhow::Error> {
    match &cli.command {
        Command::Ask(args) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            ask::run(args, &aptix_runtime::process_env, &runtime)
        }
        Command::Index(args) => index::run(args.folder(), &aptix_runtime::process_env),
        Command::Search(args) => search::run(args, &aptix_runtime::process_env),
        Command::Inspect(args) => inspect::run(&args.file),
        Command::Serve(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            serve::run(args, &aptix_runtime::process_env, &runtime)
        }
        Command::Acp(args) => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            acp::run(args, &runtime)
        }
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut command, "aptix", &mut script);
            // Through the one printer, which takes a closed pipe as the end.
            output::print_line(String::from_utf8_lossy(&script).trim_end())?;
            Ok(exit::SUCCESS)
        }
        Command::Sessions(args) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            sessions::run(args, &aptix_runtime::process_env, &runtime)
        }
    }
}

/// The log format `APTIX_LOG_FORMAT` or, under it, the config files of the command's
/// workspace set (`log_format`), when `--log-format` is not given.
fn configured_log_format(cli: &Cli) -> Result<Option<LogFormat>, String> {
    let named = |value: &str, what: &str| match value.trim().to_ascii_lowercase().as_str() {
        "text" => Ok(Some(LogFormat::Text)),
        "json" => Ok(Some(LogFormat::Json)),
        _ => Err(format!("{what} is {value:?}; it must be text or json")),
    };
    if let Some(value) = aptix_runtime::process_env("APTIX_LOG_FORMAT") {
        return named(&value, "APTIX_LOG_FORMAT");
    }
    let workspace = match cli.command.workspace() {
        Some(dir) => dir,
        None => match std::env::current_dir() {
            Ok(current) => aptix_runtime::find_workspace(&current),
            Err(_) => return Ok(None),
        },
    };
    match aptix_runtime::configured_log_format(&workspace, &aptix_runtime::process_env) {
        Ok(Some(value)) => named(&value, "log_format"),
        Ok(None) => Ok(None),
        Err(error) => Err(error.to_string()),
    }
}

/// Logs go to stderr: `RUST_LOG` when set, else warnings (but the HTTP client's notice
/// of a request sent again where the command notes it itself), and with `-v` info, `-vv`
/// debug from the Aptix crates, `-vvv` trace from everything; as text, or as JSON lines
/// with `--log-format json`, `APTIX_LOG_FORMAT=json` or `log_format = "json"` in a
/// config file.
fn init_logging(verbose: u8, format: Option<LogFormat>, notes_retries: bool) -> Result<(), String> {
    let format = format.unwrap_or(LogFormat::Text);
    // A filter that does not parse is said, not dropped without a word: whoever set it
    // is looking for logs it would not give.
    let mut unread = None;
    let filter = std::env::var("RUST_LOG")
        .ok()
        .filter(|value| !value.trim().is_empty())
        .and_then(|value| {
            EnvFilter::try_new(&value)
                .map_err(|error| {
                    unread = Some(format!(
                        "RUST_LOG {value:?} is not a log filter ({error}); using the default levels"
                    ))
                })
                .ok()
        })
        .unwrap_or_else(|| {
            let aptix = [
                "aptix",
                "aptix_cli",
                "aptix_client",
                "aptix_orchestrator",
                "aptix_runtime",
                "aptix_server",
                "aptix_acp",
            ];
            let directives = match verbose {
                // Where a request sent again is a note of the command's own (`aptix:
                // rate limited (429); sending the request again in 2s ...`), the client's
                // log line of it is for `-v`.
                // The MCP library's own errors quote an editor's server url whole (a
                // token in its query): `aptix acp` says what failed itself, with the url
                // shown safely, so the library's lines are for `-vvv`.
                0 if notes_retries => "warn,rmcp=off,aptix_client::transport=error".to_owned(),
                0 => "warn,rmcp=off".to_owned(),
                1 | 2 => {
                    let level = if verbose == 1 { "info" } else { "debug" };
                    let crates: Vec<String> =
                        aptix.iter().map(|name| format!("{name}={level}")).collect();
                    format!("warn,rmcp=off,{}", crates.join(","))
                }
                _ => "trace".to_owned(),
            };
            EnvFilter::new(directives)
        });
    // Whatever a library logs (at `-vvv`, each message it handles), without the key.
    let redactor = std::env::var("OPENAI_API_KEY")
        .ok()
        .filter(|key| !key.trim().is_empty())
        .map(|key| std::sync::Arc::new(aptix_client::Redactor::new(key.trim())));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(output::ScrubbedLogs {
            inner: std::io::stderr,
            redactor,
        });
    let _ = match format {
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).try_init(),
        LogFormat::Json => {
            output::notes_as_json();
            logs.json().with_ansi(false).try_init()
        }
    };
    if let Some(warning) = unread {
        output::warn(&warning);
    }
    Ok(())
}

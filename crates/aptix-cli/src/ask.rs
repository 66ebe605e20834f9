//! `aptix ask`: one user turn through the orchestrator, answer text streamed to stdout.
//!
//! The wiring: settings ([`crate::config`]) pick the provider (`/v1/responses` or the
//! Chat Completions bridge) and the orchestrator configuration; sessions come from the
//! workspace's SQLite store ([`crate::session`]); the workspace index is the retriever,
//! refreshed first when stale (built on the first `ask` in a workspace). `--dry-run`
//! swaps the provider for one that is never called and the store for a read-only view,
//! so it needs no key and no network and writes no session; it refreshes the index like
//! a real ask (the index is a cache of the workspace, not user data), so the body it
//! prints is exactly the one that would be sent.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use aptix_client::chat::{ChatOptions, to_chat_request};
use aptix_client::{
    Capabilities, ChatCompletionsProvider, ClientError, DEFAULT_BASE_URL, FakeProvider,
    OpenAiConfigBuilder, OpenAiProvider, ResponsesProvider,
};
use aptix_index::WorkspaceIndex;
use aptix_mapping::StreamDelta;
use aptix_model::contract::{AgentExecuteRequest, AgentExecuteResponse, FinishReason, Kind};
use aptix_orchestrator::{Orchestrator, OrchestratorBuilder, OrchestratorError, SessionStore};
use aptix_rag::Retriever;
use base64::Engine as _;
use serde_json::json;
use tokio::runtime::Runtime;

use crate::cli::{ApiKind, AskArgs};
use crate::config::{Env, Settings, user_config_path};
use crate::exit::{FAILURE, SUCCESS, TRUNCATED, usage};
use crate::output::{AnswerPrinter, note, print_json, warn};
use crate::session::{
    ConfiguredStore, new_session_id, new_turn_id, open_store, open_store_for_dry_run,
};
use crate::{index, workspace};

/// The AGN-034 user turn: the instruction, the attached files and images (`--file`,
/// `--image`, read here and sent inline, paths relative to the workspace when inside
/// it) and the retrieval scope (`--scope`). The orchestrator validates it like any
/// client's request.
fn turn_json(
    session_id: &str,
    instruction: &str,
    args: &AskArgs,
    workspace: &Path,
) -> Result<serde_json::Value, anyhow::Error> {
    let mut turn = json!({
        "sessionId": session_id,
        "turnId": new_turn_id(),
        "instruction": instruction,
    });
    if !args.files.is_empty() {
        let mut files = Vec::new();
        for path in &args.files {
            let bytes = std::fs::read(path)
                .with_context(|| format!("could not read --file {}", path.display()))?;
            let text = String::from_utf8(bytes).map_err(|_| {
                usage(format!(
                    "--file {} is not UTF-8 text; attach images with --image",
                    path.display()
                ))
            })?;
            files.push(json!({"path": shown_path(path, workspace), "content": text}));
        }
        turn["files"] = json!(files);
    }
    if !args.images.is_empty() {
        let mut images = Vec::new();
        for path in &args.images {
            let media_type = image_media_type(path).ok_or_else(|| {
                usage(format!(
                    "--image {} is not a PNG, JPEG, GIF or WebP file (by its extension)",
                    path.display()
                ))
            })?;
            let bytes = std::fs::read(path)
                .with_context(|| format!("could not read --image {}", path.display()))?;
            images.push(json!({
                "path": shown_path(path, workspace),
                "contentBase64": base64::engine::general_purpose::STANDARD.encode(bytes),
                "mediaType": media_type,
            }));
        }
        turn["images"] = json!(images);
    }
    if !args.scopes.is_empty() {
        let conditions = args
            .scopes
            .iter()
            .map(|text| crate::search::parse_scope(text))
            .collect::<Result<Vec<_>, _>>()?;
        turn["ragScope"] = json!({ "conditions": conditions });
    }
    Ok(turn)
}

/// The path an attachment is shown under: relative to the workspace when inside it
/// (AGN-034 paths are relative), else its file name.
fn shown_path(path: &Path, workspace: &Path) -> String {
    let absolute = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let root = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let relative = absolute
        .strip_prefix(&root)
        .ok()
        .map(Path::to_path_buf)
        .or_else(|| absolute.file_name().map(std::path::PathBuf::from))
        .unwrap_or_else(|| path.to_path_buf());
    relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn image_media_type(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match extension.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        _ => return None,
    })
}

/// Runs `aptix ask`; returns the exit code.
pub(crate) fn run(args: &AskArgs, env: Env<'_>, runtime: &Runtime) -> Result<u8, anyhow::Error> {
    let instruction = read_instruction(&args.instruction)?;
    let workspace = workspace::resolve(args.workspace.as_deref())?;
    let settings = Settings::load(&workspace, &args.settings, env)?;
    tracing::debug!(
        workspace = %workspace.display(),
        files = ?settings.files,
        settings = ?settings.configured,
        "settings in force"
    );
    let session_id = args.session.clone().unwrap_or_else(new_session_id);
    let request = AgentExecuteRequest::from_json_value(&turn_json(
        &session_id,
        &instruction,
        args,
        &workspace,
    )?)
    .map_err(|rejection| usage(format!("the turn is not a valid request: {rejection}")))?;

    if let Some(path) = &args.schema {
        let request =
            crate::schema::request(&settings, crate::schema::read_schema(path)?, &instruction);
        if args.dry_run {
            return crate::schema::dry_run(request, capabilities(&settings), settings.api());
        }
        let provider = provider(&settings, env)?;
        return crate::schema::run(provider.as_ref(), request, args.json, runtime);
    }

    if settings.configured.background == Some(true) && settings.api() == ApiKind::Chat {
        return Err(usage(
            "background mode needs the responses api (a server that stores responses); it cannot be used with --api chat",
        ));
    }
    if args.dry_run {
        return dry_run(args, &request, &workspace, &settings, runtime);
    }

    let provider = provider(&settings, env)?;
    let store: Arc<dyn SessionStore> = Arc::new(ConfiguredStore::new(
        runtime.block_on(open_store(&workspace, &settings))?,
        settings.clone(),
    ));
    let mut builder =
        Orchestrator::builder(provider, Arc::clone(&store)).config(settings.orchestrator_config());
    builder = with_index(builder, fresh_index(&workspace), tools(args, &settings));
    let orchestrator = builder.build().map_err(|error| usage(error.to_string()))?;

    let existed = runtime
        .block_on(store.load(&session_id))
        .context("could not read the session")?
        .is_some();
    if existed {
        note(format_args!("session {session_id} (continued)"));
    } else {
        note(format_args!(
            "session {session_id} (new); continue it with --session {session_id}"
        ));
    }

    let mut printer = AnswerPrinter::new();
    let show_text = !args.json;
    let outcome = {
        let mut sink = |delta: &StreamDelta| {
            if show_text {
                printer.delta(delta);
            } else {
                // With --json, stdout is the envelope; a retry is still news on stderr.
                AnswerPrinter::note_retry(delta);
            }
        };
        let turn = async {
            if args.no_stream {
                orchestrator.execute(request).await
            } else {
                orchestrator.execute_streaming(request, &mut sink).await
            }
        };
        runtime.block_on(until_signal(turn))
    };
    let result = match outcome {
        Ok(result) => result,
        Err(signal) => {
            // The turn's future is dropped: nothing was stored. Give the session back
            // now rather than leave it locked until the lease expires.
            let _ = printer.finish();
            if let Err(error) = runtime.block_on(orchestrator.release_session(&session_id)) {
                warn(&format!("could not release the session: {error}"));
            }
            note(format_args!(
                "interrupted by {}; the turn was not saved and session {session_id} is free",
                signal.name()
            ));
            return Ok(signal.exit_code());
        }
    };
    let envelope = result.map_err(turn_error)?;
    report(&envelope, args.json, printer)
}

/// A signal that ends `aptix ask` early.
#[derive(Debug, Clone, Copy)]
enum Interrupted {
    /// Ctrl-C.
    Int,
    /// `kill`, a service manager stopping us.
    Term,
}

impl Interrupted {
    fn name(self) -> &'static str {
        match self {
            Interrupted::Int => "SIGINT",
            Interrupted::Term => "SIGTERM",
        }
    }

    /// 128 + the signal number, as shells report a process killed by it.
    fn exit_code(self) -> u8 {
        match self {
            Interrupted::Int => 130,
            Interrupted::Term => 143,
        }
    }
}

/// Runs `work` until it finishes or SIGINT/SIGTERM arrives (then `work` is dropped).
async fn until_signal<T>(work: impl std::future::Future<Output = T>) -> Result<T, Interrupted> {
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        result = work => Ok(result),
        Ok(()) = tokio::signal::ctrl_c() => Err(Interrupted::Int),
        () = terminate => Err(Interrupted::Term),
    }
}

/// The workspace index for a real turn, refreshed first when stale. Retrieval is
/// advisory: an index that cannot be opened is a warning and the turn goes on without
/// context; one that cannot be refreshed is used as it is.
pub(crate) fn fresh_index(workspace: &Path) -> Option<WorkspaceIndex> {
    let first = !index::exists(workspace);
    let index = match index::open(workspace) {
        Ok(index) => index,
        Err(error) => {
            warn(&format!("{error:#}; asking without retrieved context"));
            return None;
        }
    };
    match index.is_stale() {
        Ok(false) => {}
        Ok(true) | Err(_) => {
            if first {
                note(format_args!(
                    "indexing {} for the first time (`aptix index` does this ahead of time)",
                    workspace.display()
                ));
            }
            match index::refresh(&index) {
                Ok(stats) => tracing::info!("{}", index::summary(&stats)),
                Err(error) => warn(&format!("{error:#}; using the index as it is")),
            }
        }
    }
    Some(index)
}

/// The orchestrator's retriever and, unless turned off, the built-in read-only tools
/// over the same index.
pub(crate) fn with_index(
    mut builder: OrchestratorBuilder,
    index: Option<WorkspaceIndex>,
    tools: bool,
) -> OrchestratorBuilder {
    let parts = index_parts(index, tools, None);
    for tool in parts.tools {
        builder = builder.server_tool(tool);
    }
    if let Some(retriever) = parts.retriever {
        builder = builder.retriever(retriever);
    }
    builder
}

/// What the workspace index gives a turn: the retriever, and the built-in tools when
/// they are offered, with `read_file` reading through `reader` when one is given (an
/// editor's buffers) and the disk otherwise. Every front end (ask, serve, acp) wires the
/// index through here.
pub(crate) fn index_parts(
    index: Option<WorkspaceIndex>,
    tools: bool,
    reader: Option<Arc<dyn aptix_tools::FileReader>>,
) -> IndexParts {
    let Some(index) = index else {
        return IndexParts {
            retriever: None,
            tools: Vec::new(),
        };
    };
    let tools = match (tools, reader) {
        (false, _) => Vec::new(),
        (true, Some(reader)) => aptix_tools::builtin_tools_with_reader(index.clone(), reader),
        (true, None) => aptix_tools::builtin_tools(index.clone()),
    };
    IndexParts {
        retriever: Some(Arc::new(index) as Arc<dyn Retriever>),
        tools,
    }
}

/// [`index_parts`]: what the index gives a turn.
pub(crate) struct IndexParts {
    /// The retriever of `[CONTEXT]`, when there is an index.
    pub(crate) retriever: Option<Arc<dyn Retriever>>,
    /// The built-in server tools, when offered.
    pub(crate) tools: Vec<Arc<dyn aptix_orchestrator::ServerTool>>,
}

/// Whether the built-in tools are offered: `--no-tools` over the settings.
fn tools(args: &AskArgs, settings: &Settings) -> bool {
    !args.no_tools && settings.tools()
}

/// The instruction: the argument, or stdin for `-`.
fn read_instruction(argument: &str) -> Result<String, anyhow::Error> {
    let text = if argument == "-" {
        // The newline that ends piped text is not part of the instruction.
        std::io::read_to_string(std::io::stdin())
            .context("could not read the instruction from stdin")?
            .trim_end()
            .to_owned()
    } else {
        argument.to_owned()
    };
    if text.trim().is_empty() {
        return Err(usage("the instruction is empty"));
    }
    Ok(text)
}

/// What the provider reports about itself, as the real provider would: the dry run's
/// stand-in must make the orchestrator build the same body.
fn capabilities(settings: &Settings) -> Capabilities {
    match (settings.api(), settings.stateless()) {
        (ApiKind::Chat, _) => Capabilities::chat_completions(),
        (ApiKind::Responses, true) => Capabilities::stateless_responses(),
        (ApiKind::Responses, false) => Capabilities::openai_responses(),
    }
}

/// The HTTP provider the settings describe. The key, organization and project come
/// from the environment only.
pub(crate) fn provider(
    settings: &Settings,
    env: Env<'_>,
) -> Result<Arc<dyn ResponsesProvider>, anyhow::Error> {
    let mut builder = OpenAiConfigBuilder::from_lookup(|name| match name {
        // The base URL is a setting with its own precedence, applied below.
        "OPENAI_BASE_URL" => None,
        other => env(other),
    })
    .capabilities(capabilities(settings));
    if let Some(url) = settings.base_url() {
        builder = builder.base_url(url);
    }
    builder = settings.apply_client_settings(builder);
    let config = builder
        .build()
        .map_err(|error| provider_config_error(&error, settings, env))?;
    tracing::debug!(
        base_url = %config.base_url(),
        api = ?settings.api(),
        has_api_key = config.has_api_key(),
        "provider"
    );
    let built: Result<Arc<dyn ResponsesProvider>, ClientError> = match settings.api() {
        ApiKind::Responses => OpenAiProvider::new(config).map(|p| Arc::new(p) as _),
        ApiKind::Chat => ChatCompletionsProvider::new(config).map(|p| Arc::new(p) as _),
    };
    built.map_err(|error| provider_config_error(&error, settings, env))
}

/// A provider configuration failure as a usage error; a missing key says how to set one.
fn provider_config_error(error: &ClientError, settings: &Settings, env: Env<'_>) -> anyhow::Error {
    match error {
        ClientError::Config { field, .. } if field == "api_key" => {
            let base = settings.base_url().unwrap_or(DEFAULT_BASE_URL);
            let user_file = user_config_path(env).map_or_else(
                || "~/.config/aptix/config.toml".to_owned(),
                |path| path.display().to_string(),
            );
            let lines = [
                format!("no api key for {base}"),
                "  set OPENAI_API_KEY to your key (it is read only from the environment), or"
                    .to_owned(),
                format!(
                    "  point aptix at a server that needs none with --base-url, OPENAI_BASE_URL, \
                     or base_url in aptix.toml or {user_file} (e.g. http://127.0.0.1:8080/v1 for llama-server)"
                ),
                "  `aptix ask --dry-run` shows the request without a key".to_owned(),
            ];
            usage(lines.join("\n"))
        }
        ClientError::Config { field, reason } => {
            usage(format!("invalid provider setting {field}: {reason}"))
        }
        other => anyhow::anyhow!("could not set up the provider: {other}"),
    }
}

/// `--dry-run`: the exact first body, printed, nothing sent or stored.
fn dry_run(
    args: &AskArgs,
    request: &AgentExecuteRequest,
    workspace: &Path,
    settings: &Settings,
    runtime: &Runtime,
) -> Result<u8, anyhow::Error> {
    let provider = Arc::new(FakeProvider::new().with_capabilities(capabilities(settings)));
    let store = Arc::new(ConfiguredStore::new(
        runtime.block_on(open_store_for_dry_run(workspace, settings))?,
        settings.clone(),
    ));
    let mut builder = Orchestrator::builder(provider, store).config(settings.orchestrator_config());
    // The same refreshed index as a real ask: a dry run shows exactly what would be sent.
    builder = with_index(builder, fresh_index(workspace), tools(args, settings));
    let orchestrator = builder.build().map_err(|error| usage(error.to_string()))?;
    let mut body = runtime
        .block_on(orchestrator.dry_run(request))
        .map_err(turn_error)?;
    let stream = !args.no_stream;
    // The providers decide `stream` by the call they make; show it as it will be sent.
    body.stream = stream.then_some(true);
    // Streamed calls go out in background mode when configured (the orchestrator adds
    // it as it sends them), so show it as it will be sent.
    if stream && settings.orchestrator_config().background {
        body.extra
            .insert("background".to_owned(), serde_json::Value::Bool(true));
        body.store = Some(true);
    }
    let base = settings.base_url().unwrap_or(DEFAULT_BASE_URL);
    let endpoint = format!(
        "{}/{}",
        base.trim_end_matches('/'),
        settings.api().endpoint()
    );
    note(format_args!("dry run, nothing sent: POST {endpoint}"));
    match settings.api() {
        ApiKind::Responses => print_json(&body)?,
        ApiKind::Chat => {
            let chat =
                to_chat_request(&body, &ChatOptions::default(), stream).map_err(|error| {
                    anyhow::anyhow!(
                        "the chat completions bridge cannot carry this request: {error}"
                    )
                })?;
            print_json(&chat)?;
        }
    }
    Ok(SUCCESS)
}

/// An orchestrator error: the caller's fault (exit 2) or a runtime failure (exit 1).
fn turn_error(error: OrchestratorError) -> anyhow::Error {
    match error {
        OrchestratorError::InvalidRequest(_) | OrchestratorError::Config(_) => {
            usage(error.to_string())
        }
        OrchestratorError::SessionBusy { .. } => anyhow::Error::new(error)
            .context("another aptix ask is using this session; wait for it to finish"),
        other => anyhow::Error::new(other).context("the turn failed"),
    }
}

/// Prints the outcome and picks the exit code: 1 for an error envelope, 3 for an
/// answer cut short (max output tokens, content filter), else 0.
fn report(
    envelope: &AgentExecuteResponse,
    json: bool,
    mut printer: AnswerPrinter,
) -> Result<u8, anyhow::Error> {
    let text_shown = printer.wrote();
    let warnings: Vec<&String> = envelope
        .warnings
        .iter()
        .filter(|warning| !printer.already_noted(warning))
        .collect();
    if json {
        print_json(envelope)?;
    } else {
        if !printer.wrote() {
            if let Some(text) = envelope.text.as_deref().filter(|t| !t.is_empty()) {
                printer.whole(text);
            } else if let Some(refusal) = &envelope.refusal {
                printer.whole(refusal);
            }
        }
        printer.finish()?;
    }
    for warning in warnings {
        warn(warning);
    }
    for call in &envelope.tool_calls {
        warn(&format!(
            "the model asked for tool {} (call {}), which aptix ask does not run",
            call.name, call.call_id
        ));
    }
    let usage = &envelope.usage;
    tracing::info!(
        kind = %envelope.kind,
        finish_reason = ?envelope.finish_reason,
        response_id = ?envelope.response_continuation_id,
        request_id = ?envelope.request_id,
        input_tokens = usage.prompt_tokens,
        cached_tokens = usage.cached_tokens,
        output_tokens = usage.completion_tokens,
        reasoning_tokens = usage.reasoning_tokens,
        "turn finished"
    );
    for source in &envelope.sources {
        tracing::info!(
            "context: {}:{}-{}",
            source.path,
            source.line_start,
            source.line_end
        );
    }
    match envelope.kind {
        Kind::Error => {
            let code = envelope.error_code.as_deref().unwrap_or("error");
            let message = envelope
                .error_message
                .as_deref()
                .unwrap_or("the provider reported an error");
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr().lock(),
                format_args!("error: {message} ({code})\n"),
            );
            if code == "invalid_api_key" {
                note(format_args!("check OPENAI_API_KEY"));
            }
            if code == "insufficient_quota" {
                note(format_args!(
                    "out of quota: the account's credit or plan limit is used up; retrying will not help until billing is fixed"
                ));
            }
            if text_shown {
                note(format_args!("the answer text above is incomplete"));
            }
            Ok(FAILURE)
        }
        _ if envelope.finish_reason == Some(FinishReason::Length) => {
            let limit = envelope_limit(envelope);
            warn(&format!(
                "the answer is incomplete: it reached the output token limit{limit}; raise --max-output-tokens (or max_output_tokens) and ask again"
            ));
            Ok(TRUNCATED)
        }
        _ if envelope.finish_reason == Some(FinishReason::ContentFilter) => {
            warn("the answer is incomplete: the provider's content filter stopped it");
            Ok(TRUNCATED)
        }
        Kind::Empty if !json => {
            warn("the model returned no answer text");
            Ok(SUCCESS)
        }
        _ => Ok(SUCCESS),
    }
}

/// " (N tokens)" when the envelope's usage says how many were generated.
fn envelope_limit(envelope: &AgentExecuteResponse) -> String {
    match envelope.usage.completion_tokens {
        0 => String::new(),
        tokens => format!(" ({tokens} tokens)"),
    }
}

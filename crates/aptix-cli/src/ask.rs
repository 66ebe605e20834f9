//! `aptix ask`: one user turn through the orchestrator, answer text streamed to stdout.
//!
//! The wiring is `aptix-runtime`'s, the same for `aptix serve` and `aptix acp`: the
//! settings pick the provider (`/v1/responses` or the Chat Completions bridge) and the
//! orchestrator configuration; sessions come from the configured store; the workspace
//! index is the retriever, refreshed first when stale (built on the first `ask` in a
//! workspace). This front end reads the instruction and attachments, prints the answer
//! and picks the exit code. `--dry-run` runs the runtime's dry-run orchestrator (a
//! provider that is never called, a store that writes nothing), so it needs no key and
//! no network and writes no session; it refreshes the index like a real ask (the index
//! is a cache of the workspace, not user data), so the body it prints is exactly the one
//! that would be sent.

use std::path::Path;

use anyhow::Context as _;
use aptix_mapping::StreamDelta;
use aptix_model::contract::{
    AgentExecuteRequest, AgentExecuteResponse, FinishReason, Kind, MediaType,
};
use aptix_orchestrator::OrchestratorError;
use aptix_orchestrator::{new_session_id, new_turn_id};
use aptix_runtime::{Env, Workspace};
use base64::Engine as _;
use serde_json::json;
use tokio::runtime::Runtime;

use crate::cli::AskArgs;
use crate::exit::{FAILURE, SUCCESS, TRUNCATED, usage};
use crate::output::{AnswerPrinter, StderrReporter, note, print_json, warn, without_key};
use crate::workspace;

/// The AGN-034 user turn: the instruction, the attached files and images (`--file`,
/// `--image`, read here and sent inline, paths relative to the workspace when inside
/// it) and the retrieval scope (`--scope`). The orchestrator validates it like any
/// client's request.
///
/// Secrets stay out of what is sent and stored: a file whose name says it may hold them
/// (`.env*`, keys, credentials: the index's rule) is refused, an attached text has what
/// has the shape of a credential redacted (as the index and `read_file` do), and the
/// API key `key` is taken out of the attachments (the caller takes it out of the
/// instruction).
fn turn_json(
    session_id: &str,
    instruction: &str,
    args: &AskArgs,
    workspace: &Path,
    key: Option<&str>,
) -> Result<serde_json::Value, anyhow::Error> {
    let mut turn = json!({
        "sessionId": session_id,
        "turnId": new_turn_id(),
        "instruction": instruction,
    });
    if !args.files.is_empty() {
        let mut files = Vec::new();
        for path in &args.files {
            let shown = shown_path(path, workspace);
            if aptix_index::is_secret_path(&shown) {
                return Err(usage(format!(
                    "--file {}: its name says it may hold secrets (keys, tokens, credentials), which Aptix never sends; put what the model needs in the question or another file",
                    path.display()
                )));
            }
            let bytes = read_attached("--file", path)?;
            let text = aptix_index::file_text(&bytes).ok_or_else(|| {
                usage(format!(
                    "--file {} is not text (a binary file); attach images with --image",
                    path.display()
                ))
            })?;
            let text = without_key(&aptix_index::redact_secrets(&text), key);
            files.push(json!({"path": shown, "content": text}));
        }
        turn["files"] = json!(files);
    }
    if !args.images.is_empty() {
        let mut images = Vec::new();
        for path in &args.images {
            let bytes = read_attached("--image", path)?;
            // Sent inline as base64, a third larger: said in the file's own size.
            let limit = aptix_model::contract::limits::MAX_INLINE_ATTACHMENT_BYTES;
            if bytes.len().div_ceil(3) * 4 > limit {
                return Err(usage(format!(
                    "--image {} is {:.1} MiB; an image may be at most {} MiB ({} MiB once \
                     encoded to be sent)",
                    path.display(),
                    // Rounded up: a file just over the limit is not shown at it.
                    (bytes.len() as f64 / (1024.0 * 1024.0) * 10.0).ceil() / 10.0,
                    limit / 4 * 3 / (1024 * 1024),
                    limit / (1024 * 1024)
                )));
            }
            // What the file holds decides, whatever its name: a JPEG named `.png` goes
            // as a JPEG, a screenshot without an extension goes, and a file that is no
            // image is refused here, not by the API with a 400.
            let media_type = MediaType::of_image_bytes(&bytes).ok_or_else(|| {
                usage(format!(
                    "--image {} does not hold a PNG, JPEG, GIF or WebP image (its first bytes are not one)",
                    path.display()
                ))
            })?;
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

/// The bytes of a file given with `flag`: a path that names no regular file, or that
/// does not resolve (a link loop, a folder without permission), is the caller's mistake
/// (exit 2, as for any bad flag value); a file that then cannot be read is an I/O
/// failure (exit 1).
fn read_attached(flag: &str, path: &Path) -> Result<Vec<u8>, anyhow::Error> {
    let what = match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_file() => None,
        Ok(metadata) if metadata.is_dir() => Some("is a folder, not a file".to_owned()),
        Ok(_) => Some("is not a regular file (a named pipe, a socket or a device)".to_owned()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            Some("names no file".to_owned())
        }
        // A link loop, a folder without permission: said as the system says it.
        Err(error) => Some(format!("cannot be read: {error}")),
    };
    if let Some(what) = what {
        return Err(usage(format!("{flag} {} {what}", path.display())));
    }
    std::fs::read(path).with_context(|| format!("could not read {flag} {}", path.display()))
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

/// Runs `aptix ask`; returns the exit code.
pub(crate) fn run(args: &AskArgs, env: Env<'_>, runtime: &Runtime) -> Result<u8, anyhow::Error> {
    if args.instruction == "-" && args.schema.as_deref() == Some(std::path::Path::new("-")) {
        return Err(usage(
            "the instruction and the schema cannot both be read from stdin: give one of them as a file or an argument",
        ));
    }
    // A key pasted into the question would otherwise be sent, and stored with the
    // session.
    let key = env("OPENAI_API_KEY");
    let instruction = without_key(
        &crate::output::text_argument(&args.instruction, "instruction")?,
        key.as_deref(),
    );
    let root = match workspace::resolve(args.workspace.as_deref()) {
        // A schema request reads nothing of the workspace (no index, no session): the
        // folder only gives its settings, so one too wide to index (the home folder)
        // will do.
        Err(_) if args.schema.is_some() && args.workspace.is_none() => {
            aptix_runtime::find_workspace(
                &std::env::current_dir().context("could not read the current folder")?,
            )
        }
        resolved => resolved?,
    };
    let flags = crate::cli::turn_flags(&args.settings, args.no_tools);
    let workspace = Workspace::load(&root, &flags, env)?;
    tracing::debug!(
        workspace = %root.display(),
        files = ?workspace.settings().files(),
        settings = ?workspace.settings().configured(),
        "settings in force"
    );
    let session_id = match &args.session {
        Some(id) => id.clone(),
        None if args.continue_last => latest_session(&workspace, runtime)?,
        None => new_session_id(),
    };
    let request = AgentExecuteRequest::from_json_value(&turn_json(
        &session_id,
        &instruction,
        args,
        &root,
        key.as_deref(),
    )?)
    .map_err(|rejection| usage(format!("the turn is not a valid request: {rejection}")))?;

    if let Some(path) = &args.schema {
        // The flags are refused with --schema; the same settings from a file or the
        // environment are said to be unused rather than dropped without a word.
        let configured = workspace.settings().configured();
        for (set, key) in [
            (configured.system_prompt.is_some(), "system_prompt"),
            (configured.mode.is_some(), "mode"),
            (
                configured.context_token_budget.is_some(),
                "context_token_budget",
            ),
            (configured.background == Some(true), "background"),
        ] {
            if set {
                warn(&format!(
                    "{key} (from aptix.toml or the environment) is not used by a schema request"
                ));
            }
        }
        let request = crate::schema::request(
            workspace.settings(),
            crate::schema::read_schema(path)?,
            &instruction,
        );
        if args.dry_run {
            return crate::schema::dry_run(request, &workspace);
        }
        let provider = workspace.provider(env)?;
        return crate::schema::run(
            provider.as_ref(),
            request,
            workspace.settings(),
            args.json,
            runtime,
        );
    }

    if args.dry_run {
        return dry_run(args, &request, &workspace, runtime);
    }

    let provider = workspace.provider(env)?;
    let orchestrator = runtime.block_on(workspace.orchestrator(provider, None, &StderrReporter))?;

    let existed = runtime
        .block_on(orchestrator.store().load(&session_id))
        .context("could not read the session")?
        .is_some();
    if existed {
        note(format_args!("session {session_id} (continued)"));
    } else if runtime
        .block_on(orchestrator.session_busy(&session_id))
        .is_none()
    {
        // (A session whose first turn runs elsewhere is not called new: the turn says
        // who holds it.)
        note(format_args!(
            "session {session_id} (new); continue it with --session {} (or -c)",
            crate::output::shell_word(session_id.as_str())
        ));
    }

    // Kept to settle the turn if a signal stops it.
    let asked = request.clone();
    let mut printer = AnswerPrinter::new();
    let show_text = !args.json;
    let outcome = {
        let mut sink = |delta: &StreamDelta| {
            if show_text {
                printer.delta(delta);
            } else {
                // With --json, stdout is the envelope; a retry is still news on stderr.
                AnswerPrinter::note_retry(delta, false);
            }
        };
        let turn = async {
            if args.no_stream {
                orchestrator.execute(request).await
            } else {
                orchestrator.execute_streaming(request, &mut sink).await
            }
        };
        // A request sent again (a 429, a 5xx, a lost connection) is told as a note,
        // as a cut stream is (the client's own log line is for `-v`).
        let turn = aptix_client::observe_retries(crate::output::note_request_retry, turn);
        runtime.block_on(crate::signals::until_signal(turn))
    };
    let result = match outcome {
        Ok(result) => result,
        Err(signal) => {
            // The turn's future is dropped. A commit it had begun runs to its end: the
            // turn is then saved after all, and said so. The session is given back now
            // rather than left locked until the lease expires.
            let _ = printer.finish();
            let saved = match runtime.block_on(orchestrator.settle_dropped_turn(&asked)) {
                Ok(stored) => stored.is_some(),
                Err(error) => {
                    warn(&format!("could not release the session: {error}"));
                    false
                }
            };
            if saved {
                remember_session(&root, &session_id);
            }
            let outcome = if saved {
                format!("the turn had ended and was saved, and session {session_id} is free")
            } else if existed {
                format!("the turn was not saved, and session {session_id} is free")
            } else {
                // Its first turn not saved: no session was made to be free.
                format!("the turn was not saved, so session {session_id} was not started")
            };
            note(format_args!("interrupted by {}; {outcome}", signal.name()));
            return Ok(signal.exit_code());
        }
    };
    let envelope = result.map_err(turn_error)?;
    let code = report(&envelope, args.json, printer)?;
    // A failed first turn stores nothing: the id printed above names no session yet.
    let started = existed
        || !matches!(
            runtime.block_on(orchestrator.store().load(&session_id)),
            Ok(None)
        );
    if started {
        remember_session(&root, &session_id);
    } else {
        note(format_args!(
            "nothing was saved, so session {session_id} was not started"
        ));
    }
    Ok(code)
}

/// The file in the workspace's `.aptix/` naming the session `aptix ask` used last
/// there, for `--continue` on a store other clients share.
const LAST_SESSION_FILE: &str = "last-session";

/// Notes `session_id` as the one `aptix ask` used last in `root`. Best effort: a
/// folder that cannot be written loses only `--continue`'s memory, said at `-v`.
fn remember_session(root: &Path, session_id: &str) {
    let written = aptix_index::ensure_aptix_dir(root)
        .map_err(|error| error.to_string())
        .and_then(|dir| {
            // Written aside and renamed into place: a reader never sees half an id.
            let path = dir.join(LAST_SESSION_FILE);
            let aside = dir.join(format!("{LAST_SESSION_FILE}.{}", std::process::id()));
            std::fs::write(&aside, format!("{session_id}\n"))
                .and_then(|()| std::fs::rename(&aside, &path))
                .map_err(|error| {
                    let _ = std::fs::remove_file(&aside);
                    format!("{}: {error}", path.display())
                })
        });
    if let Err(error) = written {
        tracing::info!("could not note the session for --continue: {error}");
    }
}

/// The session `aptix ask` used last in `root`, if it noted one.
fn remembered_session(root: &Path) -> Option<String> {
    let text =
        std::fs::read_to_string(root.join(aptix_index::APTIX_DIR).join(LAST_SESSION_FILE)).ok()?;
    let id = text.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// `--continue`: the workspace's most recently used session, or a usage error when it
/// has none (the store is not made for the asking). On a PostgreSQL store, which other
/// clients share (replicas of `aptix serve`, teammates), the newest session may be
/// anyone's: the one `aptix ask` used last in this workspace is continued instead.
fn latest_session(workspace: &Workspace, runtime: &Runtime) -> Result<String, anyhow::Error> {
    let location = workspace.store_location()?;
    let shown = location.shown();
    if matches!(location, aptix_runtime::StoreLocation::Postgres(_)) {
        let Some(id) = remembered_session(workspace.root()) else {
            return Err(usage(format!(
                "--continue: aptix ask has not used a session in this workspace to continue \
                 ({shown} is shared, and its newest session may be another client's); pass \
                 --session ID (aptix sessions lists them) or ask without it to start one"
            )));
        };
        let store = runtime.block_on(workspace.existing_store())?;
        let found = runtime
            .block_on(store.load(&id))
            .context("--continue: could not read the session")?;
        if found.is_none() {
            return Err(usage(format!(
                "--continue: session {id}, the last one aptix ask used here, is no longer in \
                 {shown}; pass --session ID (aptix sessions lists them) or ask without it to \
                 start one"
            )));
        }
        return Ok(id);
    }
    let location = shown;
    let none = || {
        usage(format!(
            "--continue: no session to continue in {location}; ask without it to start one"
        ))
    };
    let store = runtime.block_on(workspace.existing_store())?;
    let page = runtime
        .block_on(store.list_sessions(1, None))
        .context("--continue: could not list the sessions")?;
    page.sessions
        .into_iter()
        .next()
        .map(|latest| latest.session_id)
        .ok_or_else(none)
}

/// `--dry-run`: the exact first body, printed, nothing sent or stored.
fn dry_run(
    args: &AskArgs,
    request: &AgentExecuteRequest,
    workspace: &Workspace,
    runtime: &Runtime,
) -> Result<u8, anyhow::Error> {
    let orchestrator = runtime.block_on(workspace.dry_run_orchestrator(&StderrReporter))?;
    let (body, warnings) = runtime
        .block_on(orchestrator.dry_run_warned(request))
        .map_err(turn_error)?;
    for warning in &warnings {
        warn(warning);
    }
    let sent = workspace.wire_request(body, !args.no_stream)?;
    note(format_args!(
        "dry run, nothing sent: POST {}",
        sent.endpoint
    ));
    print_json(&sent.body)?;
    Ok(SUCCESS)
}

/// An orchestrator error: the caller's fault (exit 2) or a runtime failure (exit 1).
fn turn_error(error: OrchestratorError) -> anyhow::Error {
    match error {
        OrchestratorError::InvalidRequest(_) | OrchestratorError::Config(_) => {
            usage(error.to_string())
        }
        OrchestratorError::SessionBusy { .. } => anyhow::Error::new(error)
            .context(
                "another Aptix process (aptix ask, aptix serve or an editor's aptix acp) is running a turn on this session; wait for it to finish",
            ),
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
        // What the stream printed is checked against the answer: the rest of it, or the
        // whole answer when the deltas did not spell it, is printed too.
        if let Some(answer) = envelope
            .text
            .as_deref()
            .filter(|text| !text.is_empty())
            .or(envelope.refusal.as_deref())
        {
            printer.settle(answer);
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
            crate::output::error(format_args!("{message} ({code})"));
            crate::output::note_for_error_code(code, message);
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
        _ if aptix_orchestrator::stopped_at_model_call_bound(envelope) => {
            // The orchestrator's warning says where it stopped; this says what next.
            note(format_args!(
                "the answer is not done: the model still wanted tools when the turn reached its bound on model calls; ask again with --session {} to go on",
                envelope
                    .conversation_id
                    .as_deref()
                    .map_or("ID".into(), crate::output::shell_word)
            ));
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

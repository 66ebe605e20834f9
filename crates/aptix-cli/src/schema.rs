//! `aptix ask --schema FILE`: the schema-constrained Request (seed 003). The instruction
//! is the context's one user message, the file's JSON Schema shapes the answer, and the
//! provider's capabilities pick the strategy (native `json_schema`, the
//! `generate_response` tool, or JSON mode). The validated solution is printed as JSON on
//! stdout; `--json` prints it with usage and the attempts; `--dry-run` prints the first
//! request body and sends nothing. No session is used: a schema Request is
//! self-contained.

use std::path::Path;

use aptix_client::ResponsesProvider;
use aptix_runtime::{Settings, Workspace};
use aptix_schema::{
    HandlerRegistry, SchemaError, SchemaRequest, SolveOptions, StopReason, prepare, schema_support,
    solve_value_with,
};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::exit::{FAILURE, SUCCESS, TRUNCATED, usage};
use crate::output::{note, print_json, warn};

/// Reads a JSON Schema file, naming the file in every error. A file that cannot be read
/// is a usage error (exit 2), as a bad `--file` is.
pub(crate) fn read_schema(path: &Path) -> Result<Value, anyhow::Error> {
    let read = crate::output::read_file_or_stdin(path).and_then(|bytes| {
        String::from_utf8(bytes)
            .map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
    });
    let text = read.map_err(|error| {
        usage(format!(
            "could not read the schema file {}: {error}",
            path.display()
        ))
    })?;
    // A byte-order mark, as some Windows editors write one, is not JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let schema: Value = serde_json::from_str(text).map_err(|error| {
        usage(format!(
            "the schema file {} is not JSON: {error}",
            path.display()
        ))
    })?;
    if !schema.is_object() {
        return Err(usage(format!(
            "the schema file {} must hold a JSON Schema object",
            path.display()
        )));
    }
    Ok(schema)
}

/// The schema Request for `instruction` under the configured model settings.
pub(crate) fn request(settings: &Settings, schema: Value, instruction: &str) -> SchemaRequest {
    let model = settings.orchestrator_config().model;
    let mut request = SchemaRequest::new(model.model, schema).user(instruction);
    request.config.temperature = model.temperature;
    request.config.max_output_tokens = model.max_output_tokens;
    request.config.reasoning_effort = model.reasoning_effort;
    request
}

/// `--dry-run --schema`: the first attempt's body for the strategy the configured
/// provider's capabilities select, as that provider would send it.
pub(crate) fn dry_run(request: SchemaRequest, workspace: &Workspace) -> Result<u8, anyhow::Error> {
    let prepared = prepare(
        request,
        &HandlerRegistry::default(),
        &schema_support(&workspace.capabilities()),
        workspace.settings().schema_strategy(),
    )
    .map_err(unusable)?;
    note(format_args!(
        "dry run, nothing sent: strategy {}",
        prepared.strategy().as_str()
    ));
    let sent = workspace.wire_request(prepared.body().clone(), false)?;
    print_json(&sent.body)?;
    Ok(SUCCESS)
}

/// Solves the request and prints the solution.
pub(crate) fn run(
    provider: &dyn ResponsesProvider,
    request: SchemaRequest,
    settings: &Settings,
    json: bool,
    runtime: &Runtime,
) -> Result<u8, anyhow::Error> {
    let options = SolveOptions {
        strategy: settings.schema_strategy(),
        ..SolveOptions::default()
    };
    // A request sent again is told as a note, as `aptix ask` tells it.
    let solving = aptix_client::observe_retries(
        crate::output::note_request_retry,
        solve_value_with(provider, request, &options),
    );
    // Ctrl-C or SIGTERM stops the solving (nothing is stored: a schema request has no
    // session), with the exit code of the signal, as `aptix ask` does.
    let solved = match runtime.block_on(crate::signals::until_signal(solving)) {
        Ok(solved) => solved,
        Err(signal) => {
            note(format_args!(
                "interrupted by {}; nothing was printed",
                signal.name()
            ));
            return Ok(signal.exit_code());
        }
    };
    match solved {
        Ok(solution) => {
            tracing::info!(
                strategy = solution.strategy.as_str(),
                attempts = solution.attempts,
                response_id = %solution.response_id,
                input_tokens = solution.usage.prompt_tokens,
                output_tokens = solution.usage.completion_tokens,
                "schema request solved"
            );
            for refused in &solution.refused_strategies {
                warn(&format!(
                    "the server refused the {} strategy ({}); the answer was asked for the next way",
                    refused.strategy.as_str(),
                    refused.reason
                ));
            }
            for removed in &solution.removed_keywords {
                tracing::info!(
                    pointer = %removed.pointer,
                    keyword = %removed.keyword,
                    "not sent to the model (strict mode has no such keyword); the answer was validated against it"
                );
            }
            for failure in &solution.failures {
                warn(&format!(
                    "attempt {} was rejected and asked again: {}",
                    failure.attempt,
                    failure.errors().join("; ")
                ));
            }
            if json {
                print_json(&json!({
                    "solution": solution.value,
                    "strategy": solution.strategy.as_str(),
                    "attempts": solution.attempts,
                    "usage": solution.usage,
                    "responseId": solution.response_id,
                    "refusedStrategies": solution
                        .refused_strategies
                        .iter()
                        .map(|refused| refused.strategy.as_str())
                        .collect::<Vec<_>>(),
                    "removedKeywords": solution
                        .removed_keywords
                        .iter()
                        .map(|removed| json!({"pointer": removed.pointer, "keyword": removed.keyword}))
                        .collect::<Vec<_>>(),
                }))?;
            } else {
                print_json(&solution.value)?;
            }
            Ok(SUCCESS)
        }
        // A request that could not be built (nothing was sent: no attempt is in its
        // log) is the caller's to fix, exit 2, as in a dry run; a provider that failed
        // or attempts that ran out are failures.
        Err(error)
            if error.log().is_none() && !matches!(error, SchemaError::Deserialize { .. }) =>
        {
            Err(unusable(error))
        }
        Err(error) => failed(error, json),
    }
}

/// Why a schema Request could not be built, as a usage error (exit 2): the one rule of
/// the dry run and the real run.
fn unusable(error: SchemaError) -> anyhow::Error {
    match error {
        SchemaError::InvalidSchema { .. }
        | SchemaError::NotStrict { .. }
        | SchemaError::InvalidSchemaName { .. } => {
            usage(format!("the schema cannot be used: {error}"))
        }
        error => usage(format!("the schema request cannot be built: {error}")),
    }
}

/// A schema Request that gave no solution: the error on stderr, then what to do about
/// it; with `--json`, an object saying why on stdout
/// (`{"solution": null, "error": {"code", "message"}, "attempts", "usage",
/// "refusedStrategies"}`); what to do about it on stderr; exit 3 for an answer the
/// output limit or a content filter cut short, else 1.
fn failed(error: SchemaError, json: bool) -> Result<u8, anyhow::Error> {
    let code = match &error {
        SchemaError::Provider { source, .. } => source.code(),
        SchemaError::Stopped { reason, .. } => match reason {
            StopReason::Incomplete { .. } => "incomplete".to_owned(),
            StopReason::Refused { .. } => "refusal".to_owned(),
            StopReason::Failed { code, .. } => {
                code.clone().unwrap_or_else(|| "response_failed".to_owned())
            }
            _ => "stopped".to_owned(),
        },
        SchemaError::Exhausted { .. } => "no_valid_answer".to_owned(),
        _ => "schema_error".to_owned(),
    };
    // A provider that failed gave no answer to judge; the others gave no valid one.
    let error = match &error {
        SchemaError::Provider { .. } => {
            anyhow::Error::new(error).context("the schema request failed")
        }
        _ => anyhow::Error::new(error).context("no valid solution"),
    };
    let schema_error = error.downcast_ref::<SchemaError>();
    if json {
        let log = schema_error.and_then(SchemaError::log);
        print_json(&json!({
            "solution": null,
            "error": {"code": code, "message": format!("{error:#}")},
            "attempts": log.map_or(0, |log| log.attempts),
            "usage": log.map(|log| &log.usage),
            "refusedStrategies": log
                .map(|log| log.refused_strategies.iter().map(|refused| refused.strategy.as_str()).collect::<Vec<_>>())
                .unwrap_or_default(),
        }))?;
    }
    // The error first, then what to do about it, as `aptix ask` prints them.
    crate::output::error(format_args!("{error:#}"));
    crate::output::note_for_error_code(&code, &format!("{error:#}"));
    // What `ask` says of the same reply (a 404 naming no model: the base URL is wrong),
    // by the mapping's one rule for error bodies.
    if let Some(SchemaError::Provider {
        source: aptix_client::ClientError::Status {
            status, raw_body, ..
        },
        ..
    }) = schema_error
    {
        let body = raw_body.as_deref().unwrap_or_default().as_bytes();
        let turn = aptix_mapping::TurnContext::new("", "");
        for warning in aptix_mapping::map_error_body(*status, body, &turn).warnings {
            if matches!(warning, aptix_mapping::MappingWarning::NoSuchEndpoint) {
                crate::output::warn(&warning.to_string());
            }
        }
    }
    if let Some(SchemaError::Exhausted { .. }) = schema_error {
        crate::output::note(format_args!(
            "the model's answers never matched the schema: a model that follows instructions more closely, or another --schema-strategy (native_schema, tool_call, json_object, prompt_only; schema_strategy in aptix.toml), may do better"
        ));
    }
    if let Some(SchemaError::Stopped {
        reason: StopReason::Incomplete { reason },
        ..
    }) = schema_error
    {
        let why = match reason.as_deref() {
            Some("content_filter") => "the provider's content filter stopped it".to_owned(),
            _ => "it reached the output token limit; raise --max-output-tokens (or max_output_tokens) and ask again".to_owned(),
        };
        warn(&format!(
            "the answer is incomplete, so it is no solution: {why}"
        ));
        return Ok(TRUNCATED);
    }
    Ok(FAILURE)
}

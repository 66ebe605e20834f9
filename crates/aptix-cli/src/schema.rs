//! `aptix ask --schema FILE`: the schema-constrained Request (seed 003). The instruction
//! is the context's one user message, the file's JSON Schema shapes the answer, and the
//! provider's capabilities pick the strategy (native `json_schema`, the
//! `generate_response` tool, or JSON mode). The validated solution is printed as JSON on
//! stdout; `--json` prints it with usage and the attempts; `--dry-run` prints the first
//! request body and sends nothing. No session is used: a schema Request is
//! self-contained.

use std::path::Path;

use anyhow::Context as _;
use aptix_client::ResponsesProvider;
use aptix_runtime::{Settings, Workspace};
use aptix_schema::{
    HandlerRegistry, SchemaError, SchemaRequest, prepare, schema_support, solve_value,
};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::exit::{SUCCESS, usage};
use crate::output::{note, print_json, warn};

/// Reads a JSON Schema file, naming the file in every error.
pub(crate) fn read_schema(path: &Path) -> Result<Value, anyhow::Error> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("could not read the schema file {}", path.display()))?;
    let schema: Value = serde_json::from_str(&text).map_err(|error| {
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
        None,
    )
    .map_err(|error| usage(format!("the schema request cannot be built: {error}")))?;
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
    json: bool,
    runtime: &Runtime,
) -> Result<u8, anyhow::Error> {
    // A request sent again is told as a note, as `aptix ask` tells it.
    let solving = aptix_client::observe_retries(
        crate::output::note_request_retry,
        solve_value(provider, request),
    );
    match runtime.block_on(solving) {
        Ok(solution) => {
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
                }))?;
            } else {
                print_json(&solution.value)?;
            }
            Ok(SUCCESS)
        }
        // An error, with its causes, as every command prints one: a schema that cannot
        // be used is the caller's to fix (exit 2, as in a dry run); a provider that
        // failed or attempts that ran out are failures (exit 1).
        Err(
            error @ (SchemaError::InvalidSchema { .. }
            | SchemaError::NotStrict { .. }
            | SchemaError::InvalidSchemaName { .. }),
        ) => Err(usage(format!("the schema cannot be used: {error}"))),
        Err(error) => Err(anyhow::Error::new(error).context("no valid solution")),
    }
}

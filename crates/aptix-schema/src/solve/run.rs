//! The attempt loop: send, add up usage, judge the reply, re-ask with the errors until
//! an answer is accepted, the Request is stopped, or the attempts run out.

use aptix_client::{ClientError, ResponsesProvider};
use aptix_model::contract::LlmUsage;
use aptix_model::wire::Usage;

use super::log::AttemptLog;
use super::support::schema_support;
use super::{Solution, SolveOptions};
use crate::answer::Verdict;
use crate::context::SchemaRequest;
use crate::error::SchemaError;
use crate::plan::prepare;
use crate::strategy::{SchemaSupport, Strategy};

/// Prepares `request` and runs its attempts; see [`solve_value_with`](super::solve_value_with).
pub(super) async fn run(
    provider: &dyn ResponsesProvider,
    request: SchemaRequest,
    options: &SolveOptions,
) -> Result<Solution, SchemaError> {
    let mut support = options
        .support
        .unwrap_or_else(|| schema_support(&provider.capabilities()));
    // Kept to prepare again with less support if the server refuses the strategy chosen.
    let original = options.strategy.is_none().then(|| request.clone());
    let mut prepared = prepare(request, &options.handlers, &support, options.strategy)?;
    let mut strategy = prepared.strategy();
    let max_attempts = options.max_attempts.max(1);
    let mut log = AttemptLog::default();
    let mut attempt = 0;
    while attempt < max_attempts {
        attempt += 1;
        log.attempts = attempt;
        tracing::debug!(
            attempt,
            strategy = strategy.as_str(),
            "sending schema request"
        );
        let reply = match provider.create(prepared.body()).await {
            Ok(reply) => reply,
            // A server that refuses the way the answer's shape was asked for (a
            // structured-output format or tools it does not have, which its advertised
            // capabilities did not say) is asked again the next way, from the start:
            // the strategy was chosen, not the caller's.
            Err(source)
                if original.is_some()
                    && attempt == 1
                    && refuses_strategy(&source, strategy)
                    && withdraw(&mut support, strategy) =>
            {
                let request = original.clone().unwrap_or_else(|| unreachable!());
                let next = prepare(request, &options.handlers, &support, None)?;
                tracing::warn!(
                    refused = strategy.as_str(),
                    next = next.strategy().as_str(),
                    error = %source,
                    "the server refused the schema request's strategy; asking the next way"
                );
                log.refused_strategies.push(strategy);
                prepared = next;
                strategy = prepared.strategy();
                attempt = 0;
                continue;
            }
            Err(source) => {
                return Err(SchemaError::Provider {
                    attempt,
                    source,
                    log: Box::new(log),
                });
            }
        };
        add_usage(&mut log.usage, reply.response.usage.as_ref());
        match prepared.evaluate(&reply.response, attempt) {
            Verdict::Accepted(value) => {
                return Ok(Solution {
                    value,
                    usage: log.usage,
                    attempts: attempt,
                    failures: log.failures,
                    strategy,
                    refused_strategies: log.refused_strategies,
                    response_id: reply.response.id,
                    removed_keywords: prepared.removed_keywords().to_vec(),
                });
            }
            Verdict::Stopped(reason) => {
                tracing::debug!(attempt, %reason, "schema request stopped");
                return Err(SchemaError::Stopped {
                    attempt,
                    reason,
                    log: Box::new(log),
                });
            }
            Verdict::Rejected(failure) => {
                tracing::debug!(attempt, errors = ?failure.errors(), "schema answer rejected");
                if attempt < max_attempts {
                    prepared.reask(&failure);
                }
                log.failures.push(failure);
            }
        }
    }
    Err(SchemaError::Exhausted { log: Box::new(log) })
}

/// Adds one response's usage to the total; a missing `usage` adds nothing.
fn add_usage(total: &mut LlmUsage, usage: Option<&Usage>) {
    if let Some(usage) = usage {
        total.add(&LlmUsage::from(usage));
    }
}

/// Whether `error` is the server refusing what `strategy` sends: a 400 (or 422) whose
/// error names the structured-output format (`text.format`, `response_format`,
/// `json_schema`, `json_object`) or, for the tool strategy, tools or `tool_choice`.
fn refuses_strategy(error: &ClientError, strategy: Strategy) -> bool {
    let ClientError::Status {
        status: 400 | 422,
        api_error,
        raw_body,
        ..
    } = error
    else {
        return false;
    };
    let said = match api_error.as_deref() {
        Some(api) => format!(
            "{} {} {}",
            api.message,
            api.param.as_deref().unwrap_or_default(),
            api.code.as_deref().unwrap_or_default()
        ),
        None => raw_body.clone().unwrap_or_default(),
    }
    .to_ascii_lowercase();
    let names = |words: &[&str]| words.iter().any(|word| said.contains(word));
    match strategy {
        Strategy::NativeSchema => names(&[
            "json_schema",
            "response_format",
            "text.format",
            "structured output",
            "strict",
        ]),
        Strategy::ToolCall => names(&["tool", "function"]),
        Strategy::JsonObject => names(&["json_object", "response_format", "text.format"]),
        Strategy::PromptOnly => false,
    }
}

/// Takes from `support` what `strategy` needs, so that the next choice is another
/// strategy; `false` when there is none left to try.
fn withdraw(support: &mut SchemaSupport, strategy: Strategy) -> bool {
    match strategy {
        Strategy::NativeSchema => support.native_json_schema = false,
        Strategy::ToolCall => {
            support.function_tools = false;
            support.strict_tools = false;
        }
        Strategy::JsonObject => support.json_object = false,
        Strategy::PromptOnly => return false,
    }
    true
}

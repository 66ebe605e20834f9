//! The attempt loop: send, add up usage, judge the reply, re-ask with the errors until
//! an answer is accepted, the Request is stopped, or the attempts run out.

use aptix_client::ResponsesProvider;
use aptix_model::contract::LlmUsage;
use aptix_model::wire::Usage;

use super::log::AttemptLog;
use super::support::schema_support;
use super::{Solution, SolveOptions};
use crate::answer::Verdict;
use crate::context::SchemaRequest;
use crate::error::SchemaError;
use crate::plan::prepare;

/// Prepares `request` and runs its attempts; see [`solve_value_with`](super::solve_value_with).
pub(super) async fn run(
    provider: &dyn ResponsesProvider,
    request: SchemaRequest,
    options: &SolveOptions,
) -> Result<Solution, SchemaError> {
    let support = options
        .support
        .unwrap_or_else(|| schema_support(&provider.capabilities()));
    let mut prepared = prepare(request, &options.handlers, &support, options.strategy)?;
    let strategy = prepared.strategy();
    let max_attempts = options.max_attempts.max(1);
    let mut log = AttemptLog::default();
    for attempt in 1..=max_attempts {
        log.attempts = attempt;
        tracing::debug!(
            attempt,
            strategy = strategy.as_str(),
            "sending schema request"
        );
        let reply = match provider.create(prepared.body()).await {
            Ok(reply) => reply,
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

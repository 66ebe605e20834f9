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
            // the strategy was chosen, not the caller's. When there is no next way (the
            // request's own tools need the tools refused), the refusal is the error.
            Err(source) => {
                let fallback = match &original {
                    Some(request) if attempt == 1 && refuses_strategy(&source, strategy) => {
                        let mut less = support;
                        withdraw(&mut less, strategy)
                            .then(|| prepare(request.clone(), &options.handlers, &less, None).ok())
                            .flatten()
                            .map(|next| (less, next))
                    }
                    _ => None,
                };
                let Some((less, next)) = fallback else {
                    return Err(SchemaError::Provider {
                        attempt,
                        source,
                        log: Box::new(log),
                    });
                };
                tracing::debug!(
                    refused = strategy.as_str(),
                    next = next.strategy().as_str(),
                    error = %source,
                    "the server refused the schema request's strategy; asking the next way"
                );
                log.refused_strategies.push(crate::RefusedStrategy {
                    strategy,
                    reason: source.to_string(),
                });
                support = less;
                prepared = next;
                strategy = prepared.strategy();
                attempt = 0;
                continue;
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
                tracing::info!(attempt, errors = ?failure.errors(), "schema answer rejected");
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

/// Whether `error` is the server refusing what `strategy` sends: a 400 (or 422) with
/// an API error whose `param` is what the strategy sets (`text.format`,
/// `response_format`; `tools`, `tool_choice`), or, without a `param`, whose message
/// names it as a word (`json_schema`, `response_format`, `text.format`, "structured
/// output"; `tools`, `tool_choice`, "function calling"; `json_object`). Never an error
/// whose code says it is about something else (the model, the context length, the key,
/// quota or rate).
fn refuses_strategy(error: &ClientError, strategy: Strategy) -> bool {
    let ClientError::Status {
        status: 400 | 422,
        api_error: Some(api),
        ..
    } = error
    else {
        return false;
    };
    const ELSEWHERE: &[&str] = &[
        "model_not_found",
        "context_length_exceeded",
        "invalid_api_key",
        "insufficient_quota",
        "rate_limit_exceeded",
    ];
    if api
        .code
        .as_deref()
        .is_some_and(|code| ELSEWHERE.contains(&code))
    {
        return false;
    }
    let (params, words): (&[&str], &[&str]) = match strategy {
        Strategy::NativeSchema => (
            &["text.format", "response_format"],
            &[
                "json_schema",
                "response_format",
                "text.format",
                "structured output",
                "structured outputs",
            ],
        ),
        Strategy::ToolCall => (
            &["tools", "tool_choice"],
            &["tools", "tool_choice", "function calling"],
        ),
        Strategy::JsonObject => (
            &["text.format", "response_format"],
            &["json_object", "response_format", "text.format"],
        ),
        Strategy::PromptOnly => return false,
    };
    match api.param.as_deref().filter(|param| !param.is_empty()) {
        Some(param) => params.iter().any(|prefix| {
            param == *prefix
                || param
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        }),
        None => {
            let message = api.message.to_ascii_lowercase();
            words.iter().any(|word| names_word(&message, word))
        }
    }
}

/// Whether `text` holds `word` with no letter, digit or `_` against either end.
fn names_word(text: &str, word: &str) -> bool {
    let joins = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    text.match_indices(word).any(|(at, _)| {
        !joins(text[..at].chars().next_back()) && !joins(text[at + word.len()..].chars().next())
    })
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

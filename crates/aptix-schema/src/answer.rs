//! Reading a reply: [`Prepared::evaluate`] turns a wire `Response` into a [`Verdict`]:
//! an accepted solution, a rejected attempt (fed back to the model), or a reason to
//! stop asking.
//!
//! The order of the checks is the order of what they mean: a failed response, a
//! refusal and a truncated response end the Request (asking again would not help, or
//! would be asking the model to override its refusal); ordinary tool calls end it too
//! (the caller has to run them). Only then is the answer read: from the first
//! `generate_response` call's arguments (tool strategy) or from the message text (the
//! others), parsed as JSON (JSON-mode replies may wrap it in a fenced block) and
//! validated against the schema, with every violation reported.

use std::fmt;

use aptix_model::wire::{ContentPart, FunctionCall, OutputItem, Response, ResponseStatus};
use serde_json::Value;

use super::plan::Prepared;
use super::strategy::{GENERATE_RESPONSE, Strategy};

/// The most schema violations recorded for one attempt.
pub(crate) const MAX_VIOLATIONS: usize = 50;

/// The most further violations counted (not kept) for one attempt.
const MAX_COUNTED: usize = 10_000;

/// What a reply means for the Request.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A JSON value that satisfies the schema.
    Accepted(Value),
    /// No usable answer; the failure is fed back to the model.
    Rejected(AttemptFailure),
    /// Asking again would not help.
    Stopped(StopReason),
}

/// Why a Request stopped before an accepted answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StopReason {
    /// The response failed (`status: "failed"`).
    #[error("the response failed ({}): {message}", code.as_deref().unwrap_or("no code"))]
    Failed {
        /// The error's code.
        code: Option<String>,
        /// The error's message.
        message: String,
    },
    /// The model refused to answer.
    #[error("the model refused to answer: {refusal}")]
    Refused {
        /// The refusal text.
        refusal: String,
    },
    /// The response stopped early (`status: "incomplete"`), so its JSON is cut short.
    #[error("the response is incomplete ({})", reason.as_deref().unwrap_or("no reason given"))]
    Incomplete {
        /// `incomplete_details.reason` (`max_output_tokens`, `content_filter`).
        reason: Option<String>,
    },
    /// The model called ordinary tools instead of answering; the caller runs them.
    #[error("the model called {} tools instead of answering", calls.len())]
    ToolCalls {
        /// The calls, in order.
        calls: Vec<FunctionCall>,
    },
}

/// One attempt whose reply was not an acceptable answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptFailure {
    /// The attempt's 1-based number.
    pub attempt: u32,
    /// What was wrong.
    pub problem: AttemptProblem,
    /// What the model replied, replayed when re-asking.
    pub reply: Reply,
}

impl AttemptFailure {
    /// Each error as one line: one per violation, else one for the problem.
    pub fn errors(&self) -> Vec<String> {
        match &self.problem {
            AttemptProblem::Invalid { violations, .. } => {
                violations.iter().map(ToString::to_string).collect()
            }
            other => vec![other.to_string()],
        }
    }
}

impl fmt::Display for AttemptFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "attempt {}: {}", self.attempt, self.problem)
    }
}

/// What was wrong with an attempt's reply.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AttemptProblem {
    /// The reply held no answer where the strategy expects one.
    NoAnswer {
        /// What was expected (`a call of generate_response`, `a JSON answer`).
        expected: String,
    },
    /// The answer is not JSON.
    NotJson {
        /// What the JSON parser reported.
        message: String,
    },
    /// The answer is JSON that breaks the schema.
    Invalid {
        /// The violations found, at most 50.
        violations: Vec<Violation>,
        /// How many more there are beyond those listed (counted up to 10,000).
        unlisted: usize,
    },
}

impl fmt::Display for AttemptProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttemptProblem::NoAnswer { expected } => {
                write!(f, "the reply holds no answer: expected {expected}")
            }
            AttemptProblem::NotJson { message } => {
                write!(f, "the answer is not valid JSON: {message}")
            }
            AttemptProblem::Invalid {
                violations,
                unlisted,
            } => match violations.len() + unlisted {
                1 => f.write_str("the answer breaks the schema in 1 place"),
                count => write!(f, "the answer breaks the schema in {count} places"),
            },
        }
    }
}

/// One place where an answer breaks the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the answer, `""` for the whole answer.
    pub instance_path: String,
    /// What the validator reported.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The empty pointer is the whole document; `/` would be the member named "".
        if self.instance_path.is_empty() {
            write!(f, "at the root: {}", self.message)
        } else {
            write!(f, "at {}: {}", self.instance_path, self.message)
        }
    }
}

/// What the model replied in a rejected attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Message text.
    Text(String),
    /// A `generate_response` call.
    Call(FunctionCall),
    /// Nothing usable.
    Nothing,
}

impl Prepared {
    /// Judges the reply to attempt number `attempt` (1-based).
    pub fn evaluate(&self, response: &Response, attempt: u32) -> Verdict {
        if let Some(stop) = stop_reason(response) {
            return Verdict::Stopped(stop);
        }
        let calls: Vec<&FunctionCall> = response
            .output
            .iter()
            .filter_map(|item| match item {
                OutputItem::FunctionCall(call) => Some(call),
                _ => None,
            })
            .collect();
        let answer_call = (self.strategy == Strategy::ToolCall)
            .then(|| calls.iter().find(|call| call.name == GENERATE_RESPONSE))
            .flatten();
        let reject = |problem, reply| {
            Verdict::Rejected(AttemptFailure {
                attempt,
                problem,
                reply,
            })
        };
        let (reply, parsed) = if let Some(call) = answer_call {
            let parsed = serde_json::from_str::<Value>(&call.arguments);
            (
                Reply::Call((*call).clone()),
                parsed.map_err(|error| error.to_string()),
            )
        } else if !calls.is_empty() {
            return Verdict::Stopped(StopReason::ToolCalls {
                calls: calls.into_iter().cloned().collect(),
            });
        } else {
            let text = message_text(response);
            // A server that ignores the forced tool choice answers in text, as a
            // JSON-mode model does: JSON there is read as the call's arguments would be.
            let text_answers_for_the_call =
                self.strategy == Strategy::ToolCall && parse_lenient(&text).is_ok();
            let expected = if self.strategy == Strategy::ToolCall && !text_answers_for_the_call {
                Some(format!("a call of {GENERATE_RESPONSE}"))
            } else if text.trim().is_empty() {
                Some("a JSON answer".to_owned())
            } else {
                None
            };
            if let Some(expected) = expected {
                let reply = if text.trim().is_empty() {
                    Reply::Nothing
                } else {
                    Reply::Text(text)
                };
                return reject(AttemptProblem::NoAnswer { expected }, reply);
            }
            // Leniently for every strategy: a server that ignores the native format
            // (a Chat Completions server, say) answers as a JSON-mode model does.
            let parsed = parse_lenient(&text);
            (Reply::Text(text), parsed)
        };
        let mut value = match parsed {
            Ok(value) => value,
            Err(message) => return reject(AttemptProblem::NotJson { message }, reply),
        };
        // Strict mode spells an absent optional member `null`, and JSON-mode models often
        // do: read such members as absent, so the answer is judged by the caller's rules
        // and the solution is one the caller's schema accepts.
        crate::absent::drop_absent_nulls(&mut value, &self.validation_schema);
        let mut errors = self.validator.iter_errors(&value);
        let violations: Vec<Violation> = errors
            .by_ref()
            .take(MAX_VIOLATIONS)
            .map(|error| Violation {
                instance_path: error.instance_path().to_string(),
                message: error.to_string(),
            })
            .collect();
        // Counted, not kept, up to a bound on the work: the re-ask says how many it
        // does not list.
        let unlisted = errors.take(MAX_COUNTED).count();
        if violations.is_empty() {
            Verdict::Accepted(value)
        } else {
            reject(
                AttemptProblem::Invalid {
                    violations,
                    unlisted,
                },
                reply,
            )
        }
    }
}

/// A reason to stop that the response itself carries.
fn stop_reason(response: &Response) -> Option<StopReason> {
    match &response.status {
        Some(ResponseStatus::Failed) => {
            let error = response.error.clone().unwrap_or_default();
            return Some(StopReason::Failed {
                code: error.code,
                message: error.message,
            });
        }
        Some(ResponseStatus::Incomplete) => {
            return Some(StopReason::Incomplete {
                reason: response
                    .incomplete_details
                    .as_ref()
                    .and_then(|details| details.reason.as_ref())
                    .map(|reason| reason.as_str().to_owned()),
            });
        }
        _ => {}
    }
    let refusals: Vec<&str> = message_parts(response)
        .filter_map(|part| match part {
            ContentPart::Refusal(refusal) => Some(refusal.refusal.as_str()),
            _ => None,
        })
        .collect();
    (!refusals.is_empty()).then(|| StopReason::Refused {
        refusal: refusals.join("\n\n"),
    })
}

fn message_parts(response: &Response) -> impl Iterator<Item = &ContentPart> {
    response.output.iter().flat_map(|item| match item {
        OutputItem::Message(message) => message.content.as_slice(),
        _ => &[],
    })
}

/// Every `output_text` of every message, concatenated: a JSON answer split across
/// parts is one document again.
fn message_text(response: &Response) -> String {
    message_parts(response)
        .filter_map(|part| match part {
            ContentPart::OutputText(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect()
}

/// JSON from a text reply (every text strategy's: a server that ignores the native
/// format answers as a JSON-mode model does, and small local models wrap their JSON in
/// words): the whole text; else the first fenced code block (```` ```json ```` or a
/// bare fence) that holds JSON, a `bash` block before it notwithstanding; else the
/// first object or array written inside the prose (`Sure! {...} Let me know.`). The
/// error says what a caller expects to hear: the whole text's JSON error when it looked
/// like JSON, else that no JSON was found and how the reply begins.
pub(crate) fn parse_lenient(text: &str) -> Result<Value, String> {
    let trimmed = text.trim();
    let whole = serde_json::from_str::<Value>(trimmed);
    match whole {
        Ok(value) => Ok(value),
        Err(error) => fenced_blocks(text)
            .find_map(|inner| serde_json::from_str::<Value>(inner).ok())
            .or_else(|| embedded_json(text))
            .ok_or_else(|| {
                if trimmed.starts_with(['{', '[', '"']) {
                    error.to_string()
                } else {
                    let start: String = trimmed.chars().take(60).collect();
                    format!("no JSON object or array in the reply, which begins {start:?}")
                }
            }),
    }
}

/// The contents of the fenced code blocks, in order: each from the line after an
/// opening run of three or more backticks to the next line that is a run at least as
/// long.
fn fenced_blocks(text: &str) -> impl Iterator<Item = &str> {
    let mut offset = 0;
    let mut opening: Option<(usize, usize)> = None;
    let mut blocks = Vec::new();
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        let ticks = trimmed.bytes().take_while(|&byte| byte == b'`').count();
        match opening {
            None if ticks >= 3 => opening = Some((ticks, offset + line.len())),
            Some((open, start)) if ticks >= open && ticks == trimmed.len() => {
                blocks.extend(text.get(start..offset));
                opening = None;
            }
            _ => {}
        }
        offset += line.len();
    }
    blocks.into_iter()
}

/// How many `{` or `[` of a reply's prose are tried as the start of its JSON.
const EMBEDDED_TRIES: usize = 32;

/// The first JSON object or array that starts at a `{` or `[` of `text` and parses
/// there, whatever follows it.
fn embedded_json(text: &str) -> Option<Value> {
    text.match_indices(['{', '['])
        .take(EMBEDDED_TRIES)
        .find_map(|(at, _)| {
            let rest = text.get(at..)?;
            let value = serde_json::Deserializer::from_str(rest)
                .into_iter::<Value>()
                .next()?
                .ok()?;
            (value.is_object() || value.is_array()).then_some(value)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_mode_tolerates_one_fenced_block() {
        let cases = [
            ("{\"a\":1}", Some(serde_json::json!({"a": 1}))),
            ("  {\"a\":1}\n", Some(serde_json::json!({"a": 1}))),
            (
                "Here:\n```json\n{\"a\":1}\n```\nDone.",
                Some(serde_json::json!({"a": 1})),
            ),
            ("```\n[1,2]\n```", Some(serde_json::json!([1, 2]))),
            (
                "````json\n{\"s\":\"```\"}\n````",
                Some(serde_json::json!({"s": "```"})),
            ),
            ("```json\n{\"a\":\n", None),
            ("no json here", None),
            // Small models wrap their JSON in words, or put it after another block.
            (
                "Sure! {\"a\": 1} Let me know.",
                Some(serde_json::json!({"a": 1})),
            ),
            (
                "Run:\n```bash\nls\n```\nThen:\n```json\n{\"a\": 2}\n```\n",
                Some(serde_json::json!({"a": 2})),
            ),
            (
                "The set {x | x > 1} and [1, 2]",
                Some(serde_json::json!([1, 2])),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_lenient(text).ok(), expected, "text {text:?}");
        }
        // Prose without JSON is told as such, not as a parser's column number.
        let error = parse_lenient("Paris is the capital.").unwrap_err();
        assert!(
            error.starts_with("no JSON object or array in the reply, which begins \"Paris"),
            "{error}"
        );
    }
}

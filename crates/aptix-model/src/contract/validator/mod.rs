//! The AGN-034 request validator: any JSON value in, a typed request or every violation out.
//!
//! The walk never stops at the first problem. Each field is checked on its own and reports
//! into one [`Checker`]; a field whose value is unusable yields [`Reported`] so that the
//! typed request is simply not built, while its siblings are still checked. Only the known
//! fields of the contract are visited, at a fixed depth, so the walk is bounded whatever
//! the input; the one place arbitrary JSON is kept (an inline `resultJson`) is measured
//! without recursion before it is serialised.

mod fields;
mod server_owned;
mod tool_results;
mod user_turn;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use self::fields::{Shape, read_object};
use super::limits::MAX_VIOLATIONS;
use super::request::{AgentExecuteRequest, ToolContinuationRequest};
use super::text::{SessionId, TurnId};
use super::violation::{Problem, RequestRejection, Violation, ViolationCode};

/// Checks a decoded JSON value against every rule of AGN-034 sections 2 to 5.
///
/// Returns the typed request, or a rejection listing every violation found, each with
/// its canonical camelCase field path. Total: never panics, whatever `value` holds.
///
/// ```
/// use aptix_model::contract::{AgentExecuteRequest, ViolationCode, validate};
/// use serde_json::json;
///
/// let ok = validate(&json!({"sessionId": "s1", "turnId": "t1", "instruction": "explain main"}));
/// assert!(matches!(ok, Ok(AgentExecuteRequest::UserTurn(_))));
///
/// let rejection = validate(&json!({"SessionId": 5, "turnId": "t1", "mode": "codegen"})).unwrap_err();
/// assert!(rejection.has("sessionId", ViolationCode::WrongType));
/// assert!(rejection.has("mode", ViolationCode::ServerOwned));
/// assert!(rejection.has("instruction", ViolationCode::MissingInput));
/// ```
pub fn validate(value: &Value) -> Result<AgentExecuteRequest, RequestRejection> {
    let mut checker = Checker::default();
    let request = check_request(&mut checker, value);
    checker.finish(request)
}

/// Every object shape the validator checks (for the schema tests, which need every
/// field name).
#[cfg(all(test, feature = "openapi"))]
const SHAPES: &[&Shape] = &[
    &REQUEST,
    &user_turn::FILE,
    &user_turn::IMAGE,
    &user_turn::RAG_SCOPE,
    &user_turn::CONDITION,
    &user_turn::HINTS,
    &tool_results::TOOL_RESULT,
];

/// The request's own fields, in the order they are checked.
const REQUEST: Shape = Shape {
    what: "the request",
    fields: &[
        "sessionId",
        "turnId",
        "instruction",
        "files",
        "images",
        "ragScope",
        "hints",
        "stream",
        "toolResults",
    ],
    stranger: server_owned::top_level_stranger,
};

/// Fields only a user turn may carry (AGN-034 section 2.2 forbids them on a continuation).
const USER_TURN_ONLY: &[&str] = &[
    "instruction",
    "files",
    "images",
    "ragScope",
    "hints",
    "stream",
];

fn check_request(checker: &mut Checker, value: &Value) -> Checked<AgentExecuteRequest> {
    let object = object(checker, "", "the request", value)?;
    let fields = read_object(checker, object, "", &REQUEST);
    let session_id = required(checker, "sessionId", fields.get("sessionId"))
        .and_then(|value| text(checker, "sessionId", value, SessionId::new));
    let turn_id = required(checker, "turnId", fields.get("turnId"))
        .and_then(|value| text(checker, "turnId", value, TurnId::new));

    // AGN-034 section 3: the scenario is decided by field presence, not a discriminator.
    if let Some(tool_results) = fields.get("toolResults") {
        for &name in USER_TURN_ONLY {
            if fields.get(name).is_some() {
                checker.at(
                    name,
                    ViolationCode::NotAllowedOnToolContinuation,
                    not_on_continuation(name),
                );
            }
        }
        let tool_results = tool_results::check(checker, tool_results);
        Ok(AgentExecuteRequest::ToolContinuation(
            ToolContinuationRequest {
                session_id: session_id?,
                turn_id: turn_id?,
                tool_results: tool_results?,
            },
        ))
    } else {
        let user_turn = user_turn::check(checker, &fields);
        Ok(AgentExecuteRequest::UserTurn(
            user_turn?.with_ids(session_id?, turn_id?),
        ))
    }
}

fn not_on_continuation(name: &str) -> String {
    if name == "stream" {
        "stream is not allowed on a tool continuation (a request with toolResults): \
         its reply is delivered the way the turn's user request asked"
            .to_owned()
    } else {
        format!(
            "{name} is not allowed on a tool continuation (a request with toolResults), which \
             carries only sessionId, turnId and toolResults; send new input as a new user turn"
        )
    }
}

/// Marks a value that could not be built because a violation was reported for it.
#[derive(Debug)]
pub(super) struct Reported;

/// The outcome of checking one value.
pub(super) type Checked<T> = Result<T, Reported>;

/// Collects violations, up to [`MAX_VIOLATIONS`].
#[derive(Default)]
pub(super) struct Checker {
    violations: Vec<Violation>,
    left_out: usize,
    /// Bytes of inline attachments seen so far, valid or not, for the total limit.
    pub(super) inline_bytes: usize,
}

impl Checker {
    /// Records a violation.
    pub(super) fn report(&mut self, violation: Violation) -> Reported {
        self.report_with(|| violation)
    }

    /// Records the violation `violation` builds, built only while the list has room: a
    /// body of a hundred thousand unknown fields costs a count for each past the cap,
    /// not a message and a suggestion.
    pub(super) fn report_with(&mut self, violation: impl FnOnce() -> Violation) -> Reported {
        if self.violations.len() < MAX_VIOLATIONS {
            self.violations.push(violation());
        } else {
            self.left_out += 1;
        }
        Reported
    }

    /// Records a violation at `path`.
    pub(super) fn at(
        &mut self,
        path: &str,
        code: ViolationCode,
        message: impl Into<String>,
    ) -> Reported {
        self.report(Violation::new(path, code, message))
    }

    /// Records a value check's problem at `path`.
    pub(super) fn problem(&mut self, path: &str, problem: Problem) -> Reported {
        self.report(problem.at(path))
    }

    /// The request when nothing was reported; every violation otherwise.
    fn finish<T>(mut self, value: Checked<T>) -> Result<T, RequestRejection> {
        if self.left_out > 0 {
            let message = format!(
                "{} more violations were found and left out; fix the ones listed first",
                self.left_out
            );
            self.violations.push(Violation::new(
                "",
                ViolationCode::TooManyViolations,
                message,
            ));
        }
        match value {
            Ok(value) if self.violations.is_empty() => Ok(value),
            _ => Err(RequestRejection::new(self.violations)),
        }
    }
}

/// `parent.name`, or `name` at the top level.
pub(super) fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() {
        name.to_owned()
    } else {
        format!("{parent}.{name}")
    }
}

/// `parent[index]`.
pub(super) fn item(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// The JSON type of a value, as a message says it.
pub(super) use crate::json_kind as type_name;

fn wrong_type(
    checker: &mut Checker,
    path: &str,
    what: &str,
    expected: &str,
    value: &Value,
) -> Reported {
    checker.at(
        path,
        ViolationCode::WrongType,
        format!("{what} must be {expected}, not {}", type_name(value)),
    )
}

/// A required field's value, or a `missing` violation.
pub(super) fn required<'a>(
    checker: &mut Checker,
    path: &str,
    value: Option<&'a Value>,
) -> Checked<&'a Value> {
    let name = path.rsplit('.').next().unwrap_or(path);
    value.ok_or_else(|| checker.at(path, ViolationCode::Missing, format!("{name} is required")))
}

/// `value` as a string, or a `wrong_type` violation naming `what`.
pub(super) fn string<'a>(
    checker: &mut Checker,
    path: &str,
    what: &str,
    value: &'a Value,
) -> Checked<&'a str> {
    value
        .as_str()
        .ok_or_else(|| wrong_type(checker, path, what, "a string", value))
}

/// `value` as an array, or a `wrong_type` violation naming `what`.
pub(super) fn array<'a>(
    checker: &mut Checker,
    path: &str,
    what: &str,
    value: &'a Value,
) -> Checked<&'a Vec<Value>> {
    value
        .as_array()
        .ok_or_else(|| wrong_type(checker, path, what, "an array", value))
}

/// `value` as an object, or a `wrong_type` violation naming `what`.
pub(super) fn object<'a>(
    checker: &mut Checker,
    path: &str,
    what: &str,
    value: &'a Value,
) -> Checked<&'a Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| wrong_type(checker, path, what, "an object", value))
}

/// `value` as a boolean, or a `wrong_type` violation naming `what`.
pub(super) fn boolean(
    checker: &mut Checker,
    path: &str,
    what: &str,
    value: &Value,
) -> Checked<bool> {
    value
        .as_bool()
        .ok_or_else(|| wrong_type(checker, path, what, "true or false", value))
}

/// A string field run through a checked newtype's constructor, whose violation is moved
/// to the field's full path: the constructors and the walker share one set of rules.
pub(super) fn text<T>(
    checker: &mut Checker,
    path: &str,
    value: &Value,
    make: impl FnOnce(String) -> Result<T, Violation>,
) -> Checked<T> {
    let name = path.rsplit('.').next().unwrap_or(path);
    let text = string(checker, path, name, value)?;
    make(text.to_owned()).map_err(|violation| relocate(checker, path, violation))
}

/// Reports a constructor's violation at the field's full path.
pub(super) fn relocate(checker: &mut Checker, path: &str, violation: Violation) -> Reported {
    checker.report(Violation {
        path: path.to_owned(),
        ..violation
    })
}

/// Checks every entry of an array, so that each bad entry is reported, then gives the
/// entries only if all of them were usable.
pub(super) fn each<T>(
    checker: &mut Checker,
    path: &str,
    items: &[Value],
    mut check: impl FnMut(&mut Checker, &str, &Value) -> Checked<T>,
) -> Checked<Vec<T>> {
    let checked: Vec<Checked<T>> = items
        .iter()
        .enumerate()
        .map(|(index, value)| check(checker, &item(path, index), value))
        .collect();
    checked.into_iter().collect()
}

/// Checks an array's entry count against its limit.
pub(super) fn count_at_most(
    checker: &mut Checker,
    path: &str,
    items: &[Value],
    max: usize,
) -> Checked<()> {
    if items.len() > max {
        return Err(checker.at(
            path,
            ViolationCode::TooLarge,
            format!("{path} has {} entries; the limit is {max}", items.len()),
        ));
    }
    Ok(())
}

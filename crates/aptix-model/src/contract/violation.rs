//! Violations of the AGN-034 request contract, and the rejection that lists them all.
//!
//! A rejected request is a normal outcome, not a fault of the server, so these are plain
//! data: they serialise to JSON and the server can return them to the client as they are.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What kind of rule a [`Violation`] broke: stable, machine-readable, `snake_case` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ViolationCode {
    /// The body is not JSON (or not UTF-8, or larger than the request limit allows to parse).
    InvalidJson,
    /// A value has the wrong JSON type: `sessionId: 5`, a request that is not an object.
    WrongType,
    /// A required field is absent or `null`.
    Missing,
    /// A text is empty or only whitespace, or a list that needs entries has none.
    Empty,
    /// A field is given twice: once in camelCase and once in PascalCase, or twice by
    /// the same name in one object (anywhere in the body, `resultJson` included).
    DuplicateField,
    /// A field the contract does not have: usually a typo, never silently ignored.
    UnknownField,
    /// A field carrying server-owned state: mode, model, continuation or correlation ids.
    ServerOwned,
    /// A user-turn field (instruction, inputs, hints, scope, stream) on a tool continuation.
    NotAllowedOnToolContinuation,
    /// A user turn with neither an instruction nor a file or image input.
    MissingInput,
    /// Two tool results answer the same `toolCallId`.
    DuplicateToolCallId,
    /// A tool result carries both `resultJson` and `errorMessage`.
    ConflictingOutcome,
    /// A tool result carries neither `resultJson` nor `errorMessage`.
    MissingOutcome,
    /// A number outside its range: a negative or fractional `executionMs`.
    InvalidNumber,
    /// A path that is not relative to the workspace: absolute, `..`, a drive letter, empty.
    InvalidPath,
    /// An id (`sessionId`, `turnId`, `toolCallId`) holding a control character (NUL, a
    /// line break, a tab): ids go into logs, URL paths and databases as they are.
    InvalidId,
    /// An attachment carries both inline text `content` and `contentBase64`.
    ConflictingContent,
    /// `contentBase64` is not standard padded base64.
    InvalidBase64,
    /// `mediaType` is not a `type/subtype` media type (or not `image/...` on an image).
    InvalidMediaType,
    /// A scope condition `operator` other than `==`, `!=`, `contains`, `does_not_contain`.
    UnknownOperator,
    /// `resultJson` is a string that does not hold JSON, or an inline value nested too deep.
    InvalidResultJson,
    /// A text, attachment or list beyond the limits in [`limits`](super::limits).
    TooLarge,
    /// More violations than [`MAX_VIOLATIONS`](super::limits::MAX_VIOLATIONS) were found;
    /// the rest were left out.
    TooManyViolations,
}

impl ViolationCode {
    /// The code's `snake_case` spelling, as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationCode::InvalidJson => "invalid_json",
            ViolationCode::WrongType => "wrong_type",
            ViolationCode::Missing => "missing",
            ViolationCode::Empty => "empty",
            ViolationCode::DuplicateField => "duplicate_field",
            ViolationCode::UnknownField => "unknown_field",
            ViolationCode::ServerOwned => "server_owned",
            ViolationCode::NotAllowedOnToolContinuation => "not_allowed_on_tool_continuation",
            ViolationCode::MissingInput => "missing_input",
            ViolationCode::DuplicateToolCallId => "duplicate_tool_call_id",
            ViolationCode::ConflictingOutcome => "conflicting_outcome",
            ViolationCode::MissingOutcome => "missing_outcome",
            ViolationCode::InvalidNumber => "invalid_number",
            ViolationCode::InvalidPath => "invalid_path",
            ViolationCode::InvalidId => "invalid_id",
            ViolationCode::ConflictingContent => "conflicting_content",
            ViolationCode::InvalidBase64 => "invalid_base64",
            ViolationCode::InvalidMediaType => "invalid_media_type",
            ViolationCode::UnknownOperator => "unknown_operator",
            ViolationCode::InvalidResultJson => "invalid_result_json",
            ViolationCode::TooLarge => "too_large",
            ViolationCode::TooManyViolations => "too_many_violations",
        }
    }
}

impl fmt::Display for ViolationCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so that width and alignment (`{:<30}`) work in tables.
        f.pad(self.as_str())
    }
}

/// One broken rule: where, what kind, and a sentence for the client developer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Violation {
    /// The field, in canonical camelCase whatever casing the client sent:
    /// `toolResults[1].toolCallId`, `ragScope.conditions[0].values`. Unknown fields keep
    /// the name the client sent. Empty for the request as a whole.
    pub path: String,
    /// The rule that was broken.
    pub code: ViolationCode,
    /// What is wrong and how to fix it, lowercase and without a trailing period.
    pub message: String,
}

impl Violation {
    /// A violation at `path`.
    pub fn new(path: impl Into<String>, code: ViolationCode, message: impl Into<String>) -> Self {
        Violation {
            path: path.into(),
            code,
            message: message.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl std::error::Error for Violation {}

/// Why a request was refused: every violation found, in the order the fields were checked.
///
/// Never empty. Serialises as `{"violations": [{"path", "code", "message"}, ...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "RejectionJson")]
pub struct RequestRejection {
    violations: Vec<Violation>,
}

/// The JSON form, decoded through [`RequestRejection::new`] so an empty list cannot
/// sneak in through serde.
#[derive(Deserialize)]
struct RejectionJson {
    violations: Vec<Violation>,
}

/// A conversion that cannot fail has no violations to report: this lets code accept
/// anything that converts into a [`ValidatedRequest`](super::ValidatedRequest), the
/// validated request itself included.
impl From<std::convert::Infallible> for RequestRejection {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<RejectionJson> for RequestRejection {
    fn from(json: RejectionJson) -> Self {
        RequestRejection::new(json.violations)
    }
}

impl RequestRejection {
    /// A rejection listing `violations`. An empty list still rejects, with one generic
    /// violation, so that a rejection always says something.
    pub fn new(mut violations: Vec<Violation>) -> Self {
        if violations.is_empty() {
            violations.push(Violation::new(
                "",
                ViolationCode::WrongType,
                "the request could not be read as an agent execute request",
            ));
        }
        RequestRejection { violations }
    }

    /// The violations, in the order the fields were checked.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The violations, by value.
    pub fn into_violations(self) -> Vec<Violation> {
        self.violations
    }

    /// Whether some violation with `code` is at `path` (canonical camelCase, as in
    /// [`Violation::path`]).
    pub fn has(&self, path: &str, code: ViolationCode) -> bool {
        self.violations
            .iter()
            .any(|violation| violation.path == path && violation.code == code)
    }
}

/// How many violations a rejection's message names; all of them are in
/// [`RequestRejection::violations`].
const SHOWN_IN_MESSAGE: usize = 10;

impl fmt::Display for RequestRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let count = self.violations.len();
        let noun = if count == 1 {
            "violation"
        } else {
            "violations"
        };
        write!(f, "request rejected with {count} {noun}")?;
        // The first few say what is wrong; a body with hundreds of faults (a generated
        // one, a fuzzer's) would otherwise repeat its whole list in one line, as large
        // as the list itself where a service sends both.
        for (index, violation) in self.violations.iter().take(SHOWN_IN_MESSAGE).enumerate() {
            let separator = if index == 0 { ": " } else { "; " };
            write!(f, "{separator}{violation}")?;
        }
        if count > SHOWN_IN_MESSAGE {
            write!(f, "; and {} more", count - SHOWN_IN_MESSAGE)?;
        }
        Ok(())
    }
}

impl std::error::Error for RequestRejection {}

impl From<Violation> for RequestRejection {
    fn from(violation: Violation) -> Self {
        RequestRejection::new(vec![violation])
    }
}

/// A broken rule not yet tied to a field path: what the value checks return, so that the
/// same check serves the public constructors and the request walker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub(crate) code: ViolationCode,
    pub(crate) message: String,
}

impl Problem {
    pub(crate) fn new(code: ViolationCode, message: impl Into<String>) -> Self {
        Problem {
            code,
            message: message.into(),
        }
    }

    /// Ties the problem to the field at `path`.
    pub(crate) fn at(self, path: impl Into<String>) -> Violation {
        Violation::new(path, self.code, self.message)
    }
}

#[cfg(test)]
mod message_tests {
    use super::*;

    #[test]
    fn a_rejection_names_its_first_violations_and_counts_the_rest() {
        let rejection = RequestRejection::new(
            (0..25)
                .map(|n| {
                    Violation::new(
                        format!("field{n:02}"),
                        ViolationCode::UnknownField,
                        "unknown field",
                    )
                })
                .collect(),
        );
        let message = rejection.to_string();
        assert!(
            message.starts_with("request rejected with 25 violations: "),
            "{message}"
        );
        assert!(message.contains("field09"), "{message}");
        assert!(!message.contains("field10"), "{message}");
        assert!(message.ends_with("; and 15 more"), "{message}");
        assert_eq!(rejection.violations().len(), 25, "all of them are kept");
    }
}

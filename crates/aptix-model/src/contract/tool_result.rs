//! Tool results of a tool continuation (AGN-034 section 5).
//!
//! Each result answers one tool call by its `toolCallId`, says how long the tool ran
//! (`executionMs`, a whole number of milliseconds), and carries exactly one outcome:
//! `resultJson` or `errorMessage`.
//!

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::limits::{MAX_RESULT_JSON_DEPTH, MAX_TOOL_OUTPUT_BYTES};
use super::text::{ToolCallId, ToolErrorMessage, check_size};
use super::violation::{Problem, Violation, ViolationCode};

/// One tool result of a tool continuation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    /// The tool call this answers.
    pub tool_call_id: ToolCallId,
    /// How long the tool ran, in milliseconds.
    pub execution_ms: u64,
    /// What the tool produced, or why it failed.
    pub outcome: ToolOutcome,
}

/// Exactly one of a tool's result or its error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolOutcome {
    /// The tool succeeded (`resultJson`).
    Result(ResultJson),
    /// The tool failed (`errorMessage`).
    Error(ToolErrorMessage),
}

/// The result of one client tool call: the call it answers, how long the tool ran, and
/// exactly one of `resultJson` (the tool succeeded) or `errorMessage` (it failed).
// The JSON shape of a `ToolResult`: the outcome enum picks which field is set. The doc
// comments above and on the fields are its schema's descriptions.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
struct ToolResultJson<'a> {
    /// The tool call this answers (`call_...`), as the envelope's `toolCalls` gave it.
    tool_call_id: &'a ToolCallId,
    /// How long the tool ran: a whole number of milliseconds (`12.0` counts as `12`).
    execution_ms: u64,
    /// What the tool returned, when it succeeded.
    // `ResultJson` is any JSON value, `null` (absent) included, so it is not wrapped in a
    // `oneOf` with `null` as an `Option` would be: both branches would match a `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    result_json: Option<&'a ResultJson>,
    /// Why the tool failed, shown to the model as the tool's output.
    #[serde(skip_serializing_if = "Option::is_none")]
    error_message: Option<&'a ToolErrorMessage>,
}

// The schema of the JSON shape `ToolResultJson`, which is what a `ToolResult` serialises
// to.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for ToolResult {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <ToolResultJson<'_> as utoipa::PartialSchema>::schema()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for ToolResult {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("ToolResult")
    }

    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <ToolResultJson<'_> as utoipa::ToSchema>::schemas(schemas);
    }
}

impl Serialize for ToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (result_json, error_message) = match &self.outcome {
            ToolOutcome::Result(result) => (Some(result), None),
            ToolOutcome::Error(message) => (None, Some(message)),
        };
        ToolResultJson {
            tool_call_id: &self.tool_call_id,
            execution_ms: self.execution_ms,
            result_json,
            error_message,
        }
        .serialize(serializer)
    }
}

/// JSON text a tool returned: always parses as JSON, at most 8 MiB.
///
/// A client sends a **string holding JSON text** (`"resultJson": "{\"rows\": 3}"`), which
/// must parse as JSON, or the JSON **value inline** (`"resultJson": {"rows": 3}`), which is
/// kept as its compact text. A string is always read as JSON text, never as a JSON string
/// value, so a tool whose result is the string `ok` sends `"\"ok\""`, and one whose result
/// is `null` sends `"null"` (a `null` field means "absent", as everywhere in the contract).
/// Either way the validated value is text, because the Responses API takes a tool's output
/// as a string (`function_call_output.output`); encoding writes that text as a string.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "openapi",
    derive(utoipa::ToSchema),
    schema(value_type = Value)
)]
pub struct ResultJson(String);

impl ResultJson {
    /// Checks that `text` is JSON and wraps it unchanged, so the tool's exact output
    /// (key order, spacing) reaches the model.
    pub fn new(text: impl Into<String>) -> Result<Self, Violation> {
        let text = text.into();
        check_result_json_text(&text).map_err(|problem| problem.at("resultJson"))?;
        Ok(ResultJson(text))
    }

    /// The compact JSON text of `value`.
    pub fn from_value(value: &Value) -> Result<Self, Violation> {
        result_json_of_value(value)
            .map(ResultJson)
            .map_err(|problem| problem.at("resultJson"))
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The JSON text, by value.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The text parsed into a JSON value. Fails only for text nested deeper than
    /// `serde_json` parses into a value (128 levels).
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.0)
    }
}

/// Checks a `resultJson` string: within the size limit and JSON text.
fn check_result_json_text(text: &str) -> Result<(), Problem> {
    check_size("resultJson", text.len(), MAX_TOOL_OUTPUT_BYTES)?;
    // `IgnoredAny` checks the syntax without building a value (and without recursing, so
    // deep text cannot exhaust the stack).
    serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(|error| {
        Problem::new(
            ViolationCode::InvalidResultJson,
            format!(
                "resultJson is a string but does not hold JSON text ({error}); \
                 send JSON text such as \"{{\\\"ok\\\":true}}\", or the JSON value itself inline"
            ),
        )
    })?;
    Ok(())
}

/// Serialises an inline `resultJson` value after checking its depth.
fn result_json_of_value(value: &Value) -> Result<String, Problem> {
    if nesting_exceeds(value, MAX_RESULT_JSON_DEPTH) {
        return Err(Problem::new(
            ViolationCode::InvalidResultJson,
            format!(
                "resultJson nests arrays and objects deeper than {MAX_RESULT_JSON_DEPTH} levels"
            ),
        ));
    }
    // Sorted, so the model reads the same text whatever serde_json's features.
    let text = serde_json::to_string(&crate::canonical::sorted(value)).map_err(|error| {
        Problem::new(
            ViolationCode::InvalidResultJson,
            format!("resultJson could not be written as JSON text ({error})"),
        )
    })?;
    check_size("resultJson", text.len(), MAX_TOOL_OUTPUT_BYTES)?;
    Ok(text)
}

/// Whether arrays and objects nest more than `limit` levels, measured without recursion.
fn nesting_exceeds(value: &Value, limit: usize) -> bool {
    let mut pending = vec![(value, 0_usize)];
    while let Some((value, depth)) = pending.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(fields) => Box::new(fields.values()),
            _ => continue,
        };
        if depth + 1 > limit {
            return true;
        }
        pending.extend(children.map(|child| (child, depth + 1)));
    }
    false
}

impl fmt::Display for ResultJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for ResultJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ResultJson {
    /// Accepts both forms: a string holding JSON text, or an inline JSON value.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => ResultJson::new(text),
            value => ResultJson::from_value(&value),
        }
        .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested_arrays(depth: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..depth {
            value = Value::Array(vec![value]);
        }
        value
    }

    #[test]
    fn strings_must_hold_json_text() {
        assert_eq!(
            ResultJson::new("{\"a\": 1}").unwrap().as_str(),
            "{\"a\": 1}"
        );
        assert_eq!(
            ResultJson::new("\"ok\"").unwrap().to_value().unwrap(),
            json!("ok")
        );
        for bad in ["", "  ", "ok", "{", "{\"a\":1} trailing", "nul"] {
            let violation = ResultJson::new(bad).unwrap_err();
            assert_eq!(
                (violation.path.as_str(), violation.code),
                ("resultJson", ViolationCode::InvalidResultJson),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn inline_values_become_compact_text() {
        let result = ResultJson::from_value(&json!({"rows": [1, 2], "ok": true})).unwrap();
        assert_eq!(result.as_str(), r#"{"ok":true,"rows":[1,2]}"#);
        let decoded: ResultJson = serde_json::from_value(json!([1, "two"])).unwrap();
        assert_eq!(decoded.as_str(), r#"[1,"two"]"#);
        let decoded: ResultJson = serde_json::from_value(json!("[1]")).unwrap();
        assert_eq!(decoded.as_str(), "[1]");
    }

    #[test]
    fn inline_depth_is_bounded_without_recursion() {
        assert!(ResultJson::from_value(&nested_arrays(MAX_RESULT_JSON_DEPTH)).is_ok());
        let deep = ResultJson::from_value(&nested_arrays(MAX_RESULT_JSON_DEPTH + 1));
        assert_eq!(deep.unwrap_err().code, ViolationCode::InvalidResultJson);
    }
}

//! Tool results as this crate takes them, and their `function_call_output` items.
//!
//! [`ToolOutput`] is this crate's own type rather than the public request contract's
//! tool result (AGN-034), so that request construction does not change when the public
//! contract does; the orchestrator converts one into the other.

use aptix_model::wire::{FunctionCallOutput, InputItem};

use crate::error::RequestError;

/// The longest `call_id` the API accepts (`FunctionCallOutputItemParam.call_id`).
pub(crate) const MAX_CALL_ID_CHARS: usize = 64;
/// The longest string `output` the API accepts for one `function_call_output` (10 MiB).
pub const MAX_OUTPUT_BYTES: usize = 10 * 1024 * 1024;

/// The result of one executed tool call, answering the model's `function_call` with the
/// same `call_id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The `call_id` (`call_...`) of the `function_call` this answers.
    pub call_id: String,
    /// The tool's name, when known; shown in the `[TOOL_RESULTS]` block only.
    pub tool_name: Option<String>,
    /// How long the tool ran, when measured; shown in the `[TOOL_RESULTS]` block only.
    pub execution_ms: Option<u64>,
    /// What the tool produced.
    pub outcome: ToolReply,
}

/// What a tool call produced: exactly one of a result or an error (AGN-034 section 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolReply {
    /// The tool succeeded; its result as JSON text. It must parse as JSON, and is sent
    /// to the model exactly as given.
    Result(String),
    /// The tool failed; a message for the model saying why.
    Error(String),
}

impl ToolOutput {
    /// A successful call with its JSON result text.
    pub fn result(call_id: impl Into<String>, result_json: impl Into<String>) -> ToolOutput {
        ToolOutput {
            call_id: call_id.into(),
            tool_name: None,
            execution_ms: None,
            outcome: ToolReply::Result(result_json.into()),
        }
    }

    /// A failed call with its error message.
    pub fn error(call_id: impl Into<String>, message: impl Into<String>) -> ToolOutput {
        ToolOutput {
            call_id: call_id.into(),
            tool_name: None,
            execution_ms: None,
            outcome: ToolReply::Error(message.into()),
        }
    }

    /// Sets the tool's name.
    #[must_use]
    pub fn with_tool_name(mut self, name: impl Into<String>) -> ToolOutput {
        self.tool_name = Some(name.into());
        self
    }

    /// Sets the execution time in milliseconds.
    #[must_use]
    pub fn with_execution_ms(mut self, execution_ms: u64) -> ToolOutput {
        self.execution_ms = Some(execution_ms);
        self
    }

    /// The string sent as the `function_call_output`'s `output`: the result JSON as
    /// given, or for an error the JSON object `{"error":"<message>"}`.
    ///
    /// An error is a JSON object rather than a bare sentence so that every output the
    /// model sees is JSON and an error is recognisable by its one `error` key without
    /// reading prose.
    pub fn output_text(&self) -> String {
        match &self.outcome {
            ToolReply::Result(json) => json.clone(),
            ToolReply::Error(message) => serde_json::json!({ "error": message }).to_string(),
        }
    }

    /// This result as a `function_call_output` input item (not validated; `build()`
    /// checks every result first).
    pub fn to_input_item(&self) -> InputItem {
        InputItem::FunctionCallOutput(FunctionCallOutput::text(
            self.call_id.clone(),
            self.output_text(),
        ))
    }
}

impl ToolReply {
    /// The reply that an `output` string written by [`ToolOutput::output_text`] stands
    /// for, for a reader of a stored history: a JSON object whose one key is `error`,
    /// holding a string, is an error; anything else is a result.
    ///
    /// ```
    /// use aptix_request::{ToolOutput, ToolReply};
    ///
    /// let failed = ToolOutput::error("call_1", "no such file").output_text();
    /// assert_eq!(ToolReply::from_output_text(&failed), ToolReply::Error("no such file".into()));
    /// assert_eq!(ToolReply::from_output_text("[1]"), ToolReply::Result("[1]".into()));
    /// ```
    pub fn from_output_text(text: &str) -> ToolReply {
        if let Ok(serde_json::Value::Object(object)) = serde_json::from_str(text)
            && object.len() == 1
            && let Some(serde_json::Value::String(message)) = object.get("error")
        {
            return ToolReply::Error(message.clone());
        }
        ToolReply::Result(text.to_owned())
    }
}

/// Checks every result: a usable call id, no call answered twice, result JSON that
/// parses, a non-blank error message, and an output within the API's size limit.
pub(crate) fn check_tool_outputs(outputs: &[ToolOutput]) -> Result<(), RequestError> {
    let mut seen = std::collections::HashSet::with_capacity(outputs.len());
    for (index, output) in outputs.iter().enumerate() {
        check_call_id(index, &output.call_id)?;
        if !seen.insert(output.call_id.as_str()) {
            return Err(RequestError::DuplicateToolResult {
                call_id: output.call_id.clone(),
            });
        }
        let bytes = match &output.outcome {
            ToolReply::Result(json) => {
                check_result_json(&output.call_id, json)?;
                json.len()
            }
            ToolReply::Error(message) => {
                if crate::text::is_blank(message) {
                    return Err(RequestError::BlankToolError {
                        call_id: output.call_id.clone(),
                    });
                }
                // The wrapper object adds a few bytes and escapes; measure what is sent.
                output.output_text().len()
            }
        };
        if bytes > MAX_OUTPUT_BYTES {
            return Err(RequestError::ToolOutputTooLarge {
                call_id: output.call_id.clone(),
                bytes,
                max: MAX_OUTPUT_BYTES,
            });
        }
    }
    Ok(())
}

fn check_call_id(index: usize, call_id: &str) -> Result<(), RequestError> {
    let reason = if call_id.is_empty() {
        Some("it is empty")
    } else if call_id.chars().count() > MAX_CALL_ID_CHARS {
        Some("it is longer than 64 characters")
    } else if call_id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Some("it holds whitespace or control characters")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(RequestError::InvalidCallId {
            index,
            call_id: call_id.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

fn check_result_json(call_id: &str, json: &str) -> Result<(), RequestError> {
    // IgnoredAny checks the syntax without building a tree: results can be megabytes.
    serde_json::from_str::<serde::de::IgnoredAny>(json)
        .map(drop)
        .map_err(|error| RequestError::MalformedToolResult {
            call_id: call_id.to_owned(),
            line: error.line(),
            column: error.column(),
            message: error.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(outputs: &[ToolOutput], expected: Result<(), RequestError>) {
        assert_eq!(check_tool_outputs(outputs), expected, "{outputs:?}");
    }

    #[test]
    fn valid_results_pass() {
        check(
            &[
                ToolOutput::result("call_1", r#"{"ok":true}"#),
                ToolOutput::error("call_2", "timed out"),
                ToolOutput::result("call_3", "42"),
            ],
            Ok(()),
        );
    }

    #[test]
    fn malformed_json_names_the_call() {
        let outcome = check_tool_outputs(&[ToolOutput::result("call_9", "{\"a\":")]);
        assert!(
            matches!(&outcome, Err(RequestError::MalformedToolResult { call_id, .. }) if call_id == "call_9"),
            "{outcome:?}"
        );
        let outcome = check_tool_outputs(&[ToolOutput::result("call_8", "")]);
        assert!(
            matches!(&outcome, Err(RequestError::MalformedToolResult { call_id, .. }) if call_id == "call_8"),
            "{outcome:?}"
        );
    }

    #[test]
    fn call_ids_are_checked() {
        for (call_id, reason) in [
            ("", "it is empty"),
            ("call 1", "it holds whitespace or control characters"),
            ("call\n1", "it holds whitespace or control characters"),
        ] {
            check(
                &[
                    ToolOutput::result("call_0", "1"),
                    ToolOutput::result(call_id, "1"),
                ],
                Err(RequestError::InvalidCallId {
                    index: 1,
                    call_id: call_id.to_owned(),
                    reason,
                }),
            );
        }
        let long = "c".repeat(65);
        check(
            &[ToolOutput::result(long.clone(), "1")],
            Err(RequestError::InvalidCallId {
                index: 0,
                call_id: long,
                reason: "it is longer than 64 characters",
            }),
        );
    }

    #[test]
    fn duplicates_and_blank_errors_are_rejected() {
        check(
            &[
                ToolOutput::result("call_1", "1"),
                ToolOutput::error("call_1", "x"),
            ],
            Err(RequestError::DuplicateToolResult {
                call_id: "call_1".into(),
            }),
        );
        check(
            &[ToolOutput::error("call_1", " \n")],
            Err(RequestError::BlankToolError {
                call_id: "call_1".into(),
            }),
        );
    }

    #[test]
    fn errors_become_json_objects() {
        let output = ToolOutput::error("call_1", "file \"a\" not found");
        assert_eq!(output.output_text(), r#"{"error":"file \"a\" not found"}"#);
    }
}

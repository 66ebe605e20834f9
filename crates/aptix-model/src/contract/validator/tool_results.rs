//! The `toolResults` of a tool continuation (AGN-034 section 5).
//!
//! Only the request's own consistency is checked here: each result is well formed and no
//! tool call is answered twice. Whether the results answer exactly the calls the session
//! is waiting for, in order, needs the stored session and is the orchestrator's check.

use std::collections::HashMap;

use serde_json::Value;

use super::fields::{Shape, no_strangers, read_object};
use super::{
    Checked, Checker, Reported, array, child, count_at_most, item, object, relocate, required, text,
};
use crate::contract::limits::MAX_TOOL_RESULTS;
use crate::contract::text::{ToolCallId, ToolErrorMessage};
use crate::contract::tool_result::{ResultJson, ToolOutcome, ToolResult};
use crate::contract::violation::ViolationCode;

pub(super) const TOOL_RESULT: Shape = Shape {
    what: "a tool result",
    fields: &["toolCallId", "executionMs", "resultJson", "errorMessage"],
    stranger: no_strangers,
};

pub(super) fn check(checker: &mut Checker, value: &Value) -> Checked<Vec<ToolResult>> {
    let items = array(checker, "toolResults", "toolResults", value)?;
    if items.is_empty() {
        return Err(checker.at(
            "toolResults",
            ViolationCode::Empty,
            "toolResults must hold at least one result; a request without tool results is a \
             user turn, so leave the field out",
        ));
    }
    count_at_most(checker, "toolResults", items, MAX_TOOL_RESULTS)?;

    // The first index answering each call id, to name it when a later result repeats it.
    let mut first_index: HashMap<String, usize> = HashMap::new();
    let checked: Vec<Checked<ToolResult>> = items
        .iter()
        .enumerate()
        .map(|(index, value)| check_one(checker, index, value, &mut first_index))
        .collect();
    checked.into_iter().collect()
}

fn check_one(
    checker: &mut Checker,
    index: usize,
    value: &Value,
    first_index: &mut HashMap<String, usize>,
) -> Checked<ToolResult> {
    let path = &item("toolResults", index);
    let object = object(checker, path, "each tool result", value)?;
    let fields = read_object(checker, object, path, &TOOL_RESULT);

    // Uniqueness is checked as soon as the id is known, so a repeated id is reported even
    // when other fields of either result are broken.
    let id_path = child(path, "toolCallId");
    let tool_call_id = required(checker, &id_path, fields.get("toolCallId"))
        .and_then(|value| text(checker, &id_path, value, ToolCallId::new))
        .and_then(|id| match first_index.get(id.as_str()) {
            Some(first) => Err(checker.at(
                &id_path,
                ViolationCode::DuplicateToolCallId,
                format!(
                    "toolCallId {:?} is already answered by toolResults[{first}]; \
                     send one result per tool call",
                    id.as_str()
                ),
            )),
            None => {
                first_index.insert(id.as_str().to_owned(), index);
                Ok(id)
            }
        });

    let ms_path = child(path, "executionMs");
    let execution_ms = required(checker, &ms_path, fields.get("executionMs"))
        .and_then(|value| milliseconds(checker, &ms_path, value));

    let result_path = child(path, "resultJson");
    let result = fields
        .get("resultJson")
        .map(|value| result_json(checker, &result_path, value))
        .transpose();

    let error_path = child(path, "errorMessage");
    let error = fields
        .get("errorMessage")
        .map(|value| text(checker, &error_path, value, ToolErrorMessage::new))
        .transpose();

    let outcome = match (fields.get("resultJson"), fields.get("errorMessage")) {
        (Some(_), Some(_)) => Err(checker.at(
            path,
            ViolationCode::ConflictingOutcome,
            "a tool result carries resultJson (the tool succeeded) or errorMessage (it failed), \
             not both",
        )),
        (None, None) => Err(checker.at(
            path,
            ViolationCode::MissingOutcome,
            "a tool result needs resultJson (the tool succeeded) or errorMessage (it failed)",
        )),
        (Some(_), None) => {
            result.and_then(|result| result.map(ToolOutcome::Result).ok_or(Reported))
        }
        (None, Some(_)) => error.and_then(|error| error.map(ToolOutcome::Error).ok_or(Reported)),
    };

    Ok(ToolResult {
        tool_call_id: tool_call_id?,
        execution_ms: execution_ms?,
        outcome: outcome?,
    })
}

/// `executionMs`: a whole, non-negative number of milliseconds. A float with no fraction
/// (`12.0`, as some serialisers write whole numbers) is accepted as that whole number.
fn milliseconds(checker: &mut Checker, path: &str, value: &Value) -> Checked<u64> {
    let Value::Number(number) = value else {
        return Err(checker.at(
            path,
            ViolationCode::WrongType,
            format!(
                "executionMs must be a number of milliseconds, not {}",
                super::type_name(value)
            ),
        ));
    };
    if let Some(ms) = number.as_u64() {
        return Ok(ms);
    }
    let invalid = |checker: &mut Checker, message: String| {
        Err(checker.at(path, ViolationCode::InvalidNumber, message))
    };
    match number.as_f64() {
        Some(ms) if ms < 0.0 => invalid(
            checker,
            format!("executionMs must not be negative, got {number}"),
        ),
        // 2^64 is the first whole float that does not fit in a u64.
        Some(ms) if ms.fract() == 0.0 && ms < 18_446_744_073_709_551_616.0 => Ok(ms as u64),
        Some(ms) if ms.fract() == 0.0 => {
            invalid(checker, format!("executionMs {number} is too large"))
        }
        _ => invalid(
            checker,
            format!("executionMs must be a whole number of milliseconds, got {number}"),
        ),
    }
}

/// `resultJson`: a string holding JSON text, or an inline JSON value (see the
/// `tool_result` module docs).
fn result_json(checker: &mut Checker, path: &str, value: &Value) -> Checked<ResultJson> {
    let made = match value {
        Value::String(text) => ResultJson::new(text.as_str()),
        value => ResultJson::from_value(value),
    };
    made.map_err(|violation| relocate(checker, path, violation))
}

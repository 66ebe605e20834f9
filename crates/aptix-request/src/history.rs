//! Pairing rules of replayed history, checked before a stateless request is sent.
//!
//! A provider without stored state sees the whole conversation in `input` and rejects
//! it when a call is unanswered (`No tool output found for function call ...`), when an
//! output answers nothing, or when a `reasoning` item is not followed by the item it
//! preceded. These checks catch each case here, naming the call id, instead of as a 400.

use std::collections::HashMap;

use aptix_model::wire::InputItem;
use serde_json::Value;

use crate::error::RequestError;

/// What an item means for call pairing.
enum Pairing<'a> {
    Call(&'a str),
    Output(&'a str),
    Neither,
}

fn pairing(item: &InputItem) -> Pairing<'_> {
    match item {
        InputItem::FunctionCall(call) => Pairing::Call(&call.call_id),
        InputItem::FunctionCallOutput(output) => Pairing::Output(&output.call_id),
        // Items kept raw (custom tool calls replayed by `OutputItem::to_input_item`, or a
        // call of unexpected shape) pair by the same rule when they carry a call id.
        InputItem::Other(raw) => {
            let call_id = raw.get("call_id").and_then(Value::as_str);
            match (raw.get("type").and_then(Value::as_str), call_id) {
                (Some("function_call" | "custom_tool_call"), Some(id)) => Pairing::Call(id),
                (Some("function_call_output" | "custom_tool_call_output"), Some(id)) => {
                    Pairing::Output(id)
                }
                _ => Pairing::Neither,
            }
        }
        _ => Pairing::Neither,
    }
}

/// Checks `history` followed by `new_items`: every call has exactly one output after it,
/// every output answers an earlier call, no call id is used by two calls, and the
/// history does not end with a `reasoning` item.
pub(crate) fn check_pairing(
    history: &[InputItem],
    new_items: &[InputItem],
) -> Result<(), RequestError> {
    if let Some(index) = history
        .len()
        .checked_sub(1)
        .filter(|&last| matches!(history.get(last), Some(InputItem::Reasoning(_))))
    {
        return Err(RequestError::TrailingReasoningItem { index });
    }
    // For each call id: whether its call has been answered yet, in order of first use.
    let mut answered: HashMap<&str, bool> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (index, item) in history.iter().chain(new_items).enumerate() {
        match pairing(item) {
            Pairing::Call(call_id) => {
                if answered.insert(call_id, false).is_some() {
                    return Err(RequestError::DuplicateFunctionCall {
                        call_id: call_id.to_owned(),
                    });
                }
                order.push(call_id);
            }
            Pairing::Output(call_id) => match answered.get_mut(call_id) {
                None => {
                    return Err(RequestError::OrphanFunctionCallOutput {
                        call_id: call_id.to_owned(),
                        index,
                    });
                }
                Some(true) => {
                    return Err(RequestError::DuplicateFunctionCallOutput {
                        call_id: call_id.to_owned(),
                    });
                }
                Some(done) => *done = true,
            },
            Pairing::Neither => {}
        }
    }
    match order
        .into_iter()
        .find(|call_id| answered.get(call_id) == Some(&false))
    {
        Some(call_id) => Err(RequestError::MissingFunctionCallOutput {
            call_id: call_id.to_owned(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use aptix_model::wire::{
        ContentPart, FunctionCall, FunctionCallOutput, InputMessage, ReasoningItem, Role,
    };

    use super::*;

    fn call(id: &str) -> InputItem {
        InputItem::FunctionCall(FunctionCall {
            id: None,
            call_id: id.into(),
            name: "f".into(),
            arguments: "{}".into(),
            status: None,
        })
    }

    fn output(id: &str) -> InputItem {
        InputItem::FunctionCallOutput(FunctionCallOutput::text(id, "{}"))
    }

    fn reasoning() -> InputItem {
        InputItem::Reasoning(ReasoningItem {
            id: Some("rs_1".into()),
            summary: Vec::new(),
            content: None,
            encrypted_content: None,
            status: None,
        })
    }

    fn user() -> InputItem {
        InputItem::Message(InputMessage::new(
            Role::User,
            vec![ContentPart::input_text("hi")],
        ))
    }

    fn custom(kind: &str, id: &str) -> InputItem {
        InputItem::Other(serde_json::json!({"type": kind, "call_id": id}))
    }

    fn check(history: &[InputItem], new_items: &[InputItem], expected: Result<(), RequestError>) {
        assert_eq!(
            check_pairing(history, new_items),
            expected,
            "{history:?} + {new_items:?}"
        );
    }

    #[test]
    fn paired_calls_pass() {
        check(&[user(), reasoning(), call("a")], &[output("a")], Ok(()));
        check(
            &[user(), call("a"), output("a"), call("b")],
            &[output("b")],
            Ok(()),
        );
        check(
            &[
                custom("custom_tool_call", "c"),
                custom("custom_tool_call_output", "c"),
            ],
            &[],
            Ok(()),
        );
        check(&[], &[], Ok(()));
    }

    #[test]
    fn pairing_errors_name_the_call() {
        check(
            &[user(), call("a"), call("b")],
            &[output("a")],
            Err(RequestError::MissingFunctionCallOutput {
                call_id: "b".into(),
            }),
        );
        check(
            &[user()],
            &[output("z")],
            Err(RequestError::OrphanFunctionCallOutput {
                call_id: "z".into(),
                index: 1,
            }),
        );
        check(
            &[output("a"), call("a")],
            &[],
            Err(RequestError::OrphanFunctionCallOutput {
                call_id: "a".into(),
                index: 0,
            }),
        );
        check(
            &[call("a"), output("a")],
            &[output("a")],
            Err(RequestError::DuplicateFunctionCallOutput {
                call_id: "a".into(),
            }),
        );
        check(
            &[call("a"), output("a"), call("a")],
            &[output("a")],
            Err(RequestError::DuplicateFunctionCall {
                call_id: "a".into(),
            }),
        );
        check(
            &[custom("custom_tool_call", "c")],
            &[],
            Err(RequestError::MissingFunctionCallOutput {
                call_id: "c".into(),
            }),
        );
    }

    #[test]
    fn reasoning_must_not_end_the_history() {
        check(
            &[user(), reasoning()],
            &[],
            Err(RequestError::TrailingReasoningItem { index: 1 }),
        );
    }
}

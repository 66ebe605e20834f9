//! Pairing rules of replayed history: repaired at the send boundary, then checked
//! before a stateless request is sent.
//!
//! A provider without stored state sees the whole conversation in `input` and rejects
//! it when a call is unanswered (`No tool output found for function call ...`), when an
//! output answers nothing, or when a `reasoning` item is not followed by the item it
//! preceded. [`normalize_history`] repairs a history however it was built (a turn cut
//! short, an edited or compacted session, a store written by an older version), saying
//! what it changed; the builder's check then catches what is left, naming the call id,
//! instead of a 400 from the provider.

use std::collections::{HashMap, HashSet};

use aptix_model::wire::{FunctionCallOutput, InputItem};
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

/// The `function_call_output` text given to a call that was never answered.
pub const ABORTED_OUTPUT: &str = "aborted: this call was never answered";

/// One change [`normalize_history`] made.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistoryRepair {
    /// A call had no output: an output saying it was aborted was added right after it.
    AbortedCall {
        /// The call.
        call_id: String,
    },
    /// An output answered no earlier call and was dropped.
    DroppedOrphanOutput {
        /// The call id it named.
        call_id: String,
    },
    /// A second output for an already answered call was dropped (the first is kept).
    DroppedDuplicateOutput {
        /// The call id.
        call_id: String,
    },
    /// A second call with an id already used was dropped (the first is kept).
    DroppedDuplicateCall {
        /// The call id.
        call_id: String,
    },
    /// A `reasoning` item with nothing after it was dropped.
    DroppedTrailingReasoning,
}

impl std::fmt::Display for HistoryRepair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HistoryRepair::AbortedCall { call_id } => {
                write!(
                    f,
                    "call {call_id} was never answered; it is sent as aborted"
                )
            }
            HistoryRepair::DroppedOrphanOutput { call_id } => {
                write!(f, "an output for unknown call {call_id} was dropped")
            }
            HistoryRepair::DroppedDuplicateOutput { call_id } => {
                write!(f, "a second output for call {call_id} was dropped")
            }
            HistoryRepair::DroppedDuplicateCall { call_id } => {
                write!(f, "a second call with id {call_id} was dropped")
            }
            HistoryRepair::DroppedTrailingReasoning => {
                f.write_str("a reasoning item with nothing after it was dropped")
            }
        }
    }
}

/// Repairs a replayed history so that the request built from it pairs every call with
/// exactly one output, whatever built the history: the one normalisation at the send
/// boundary. `answered_next` are the call ids the request's new tool outputs answer
/// (they follow the history), so those calls are not aborted.
///
/// - a call with an id already used is dropped (the first call is kept);
/// - an output that answers no earlier call, or a call already answered, is dropped;
/// - a call that nothing answers gets an output right after it saying it was aborted
///   ([`ABORTED_OUTPUT`]), as the API requires an output for every call;
/// - a `reasoning` item at the end is dropped: it must be followed by the item it
///   preceded.
///
/// Everything else is kept, in order. The result passes the builder's pairing check
/// with any new outputs that answer its open calls, and normalising it again changes
/// nothing.
///
/// ```
/// use aptix_model::wire::{FunctionCall, InputItem};
/// use aptix_request::{HistoryRepair, normalize_history};
///
/// let call = InputItem::FunctionCall(FunctionCall {
///     id: None,
///     call_id: "call_1".into(),
///     name: "read_file".into(),
///     arguments: "{}".into(),
///     status: None,
/// });
/// let (items, repairs) = normalize_history(vec![call], &[]);
/// assert_eq!(items.len(), 2);
/// assert_eq!(repairs, [HistoryRepair::AbortedCall { call_id: "call_1".into() }]);
/// ```
pub fn normalize_history(
    history: Vec<InputItem>,
    answered_next: &[&str],
) -> (Vec<InputItem>, Vec<HistoryRepair>) {
    let mut repairs = Vec::new();
    let mut kept: Vec<InputItem> = Vec::with_capacity(history.len());
    let mut calls: HashSet<String> = HashSet::new();
    let mut answered: HashSet<String> = HashSet::new();
    for item in history {
        let keep = match pairing(&item) {
            Pairing::Call(call_id) if calls.contains(call_id) => {
                repairs.push(HistoryRepair::DroppedDuplicateCall {
                    call_id: call_id.to_owned(),
                });
                false
            }
            Pairing::Call(call_id) => {
                calls.insert(call_id.to_owned());
                true
            }
            Pairing::Output(call_id) if !calls.contains(call_id) => {
                repairs.push(HistoryRepair::DroppedOrphanOutput {
                    call_id: call_id.to_owned(),
                });
                false
            }
            Pairing::Output(call_id) if answered.contains(call_id) => {
                repairs.push(HistoryRepair::DroppedDuplicateOutput {
                    call_id: call_id.to_owned(),
                });
                false
            }
            Pairing::Output(call_id) => {
                answered.insert(call_id.to_owned());
                true
            }
            Pairing::Neither => true,
        };
        if keep {
            kept.push(item);
        }
    }
    let mut out = Vec::with_capacity(kept.len());
    for item in kept {
        let aborted = match pairing(&item) {
            Pairing::Call(call_id)
                if !answered.contains(call_id) && !answered_next.contains(&call_id) =>
            {
                Some(call_id.to_owned())
            }
            _ => None,
        };
        let custom = matches!(&item, InputItem::Other(_));
        out.push(item);
        if let Some(call_id) = aborted {
            out.push(aborted_output(&call_id, custom));
            repairs.push(HistoryRepair::AbortedCall { call_id });
        }
    }
    while matches!(out.last(), Some(InputItem::Reasoning(_))) {
        out.pop();
        repairs.push(HistoryRepair::DroppedTrailingReasoning);
    }
    (out, repairs)
}

/// The latest index at or before `at` where `history` can be cut in two without
/// breaking a pairing rule, for a caller that replaces the part before the cut (a
/// compaction keeps the part after it verbatim): no call before the cut has its output
/// after it, and the item just before the cut is not a `reasoning` item (which must be
/// followed by the item it preceded). 0 (nothing before the cut) always qualifies; an
/// `at` past the end is the end.
///
/// ```
/// use aptix_model::wire::{FunctionCall, FunctionCallOutput, InputItem};
/// use aptix_request::safe_split;
///
/// let call = InputItem::FunctionCall(FunctionCall {
///     id: None,
///     call_id: "call_1".into(),
///     name: "read_file".into(),
///     arguments: "{}".into(),
///     status: None,
/// });
/// let output = InputItem::FunctionCallOutput(FunctionCallOutput::text("call_1", "{}"));
/// // Cutting between the call and its output would leave the output orphaned.
/// assert_eq!(safe_split(&[call.clone(), output.clone()], 1), 0);
/// assert_eq!(safe_split(&[call, output], 2), 2);
/// ```
pub fn safe_split(history: &[InputItem], at: usize) -> usize {
    let at = at.min(history.len());
    // spans[i]: how many call/output pairs a cut at i would separate.
    let mut delta = vec![0i64; history.len() + 2];
    let mut calls: HashMap<&str, usize> = HashMap::new();
    for (index, item) in history.iter().enumerate() {
        match pairing(item) {
            Pairing::Call(call_id) => {
                calls.entry(call_id).or_insert(index);
            }
            Pairing::Output(call_id) => {
                if let Some(&call) = calls.get(call_id) {
                    delta[call + 1] += 1;
                    delta[index + 1] -= 1;
                }
            }
            Pairing::Neither => {}
        }
    }
    let mut spans = Vec::with_capacity(history.len() + 1);
    let mut open = 0i64;
    for step in delta.iter().take(history.len() + 1) {
        open += step;
        spans.push(open);
    }
    (0..=at)
        .rev()
        .find(|&cut| {
            spans.get(cut).copied().unwrap_or(0) == 0
                && !(cut > 0 && matches!(history.get(cut - 1), Some(InputItem::Reasoning(_))))
        })
        .unwrap_or(0)
}

/// The output that closes an unanswered call, of the call's own kind.
fn aborted_output(call_id: &str, custom: bool) -> InputItem {
    if custom {
        InputItem::Other(serde_json::json!({
            "type": "custom_tool_call_output",
            "call_id": call_id,
            "output": ABORTED_OUTPUT,
        }))
    } else {
        InputItem::FunctionCallOutput(FunctionCallOutput::text(call_id, ABORTED_OUTPUT))
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
mod normalize_tests {
    use aptix_model::wire::ReasoningItem;
    use proptest::prelude::*;

    use super::tests::{call, output, user};
    use super::*;

    fn reasoning() -> InputItem {
        InputItem::Reasoning(ReasoningItem {
            id: None,
            summary: Vec::new(),
            content: None,
            encrypted_content: Some("opaque".into()),
            status: None,
        })
    }

    #[test]
    fn each_kind_of_break_is_repaired_and_named() {
        let history = vec![
            user(),
            output("ghost"),
            call("a"),
            call("a"),
            output("a"),
            output("a"),
            call("b"),
            user(),
            call("c"),
            reasoning(),
        ];
        let (items, repairs) = normalize_history(history, &["c"]);
        assert_eq!(
            repairs,
            [
                HistoryRepair::DroppedOrphanOutput {
                    call_id: "ghost".into()
                },
                HistoryRepair::DroppedDuplicateCall {
                    call_id: "a".into()
                },
                HistoryRepair::DroppedDuplicateOutput {
                    call_id: "a".into()
                },
                HistoryRepair::AbortedCall {
                    call_id: "b".into()
                },
                HistoryRepair::DroppedTrailingReasoning,
            ]
        );
        let aborted = InputItem::FunctionCallOutput(FunctionCallOutput::text("b", ABORTED_OUTPUT));
        assert_eq!(
            items,
            [
                user(),
                call("a"),
                output("a"),
                call("b"),
                aborted,
                user(),
                call("c")
            ]
        );
        assert_eq!(check_pairing(&items, &[output("c")]), Ok(()));
    }

    #[test]
    fn a_valid_history_is_left_alone() {
        let history = vec![user(), reasoning(), call("a"), output("a"), user()];
        let (items, repairs) = normalize_history(history.clone(), &[]);
        assert_eq!(items, history);
        assert!(repairs.is_empty());
    }

    fn item() -> impl Strategy<Value = InputItem> {
        let id = prop::sample::select(vec!["a", "b", "c", "d"]);
        prop_oneof![
            Just(user()),
            Just(reasoning()),
            id.clone().prop_map(call),
            id.prop_map(output),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever the history, what is sent pairs every call with one output, keeps
        /// no dangling reasoning, adds only aborted outputs, keeps the order of what it
        /// keeps, and is a fixed point.
        #[test]
        fn any_broken_history_becomes_a_valid_one(
            history in prop::collection::vec(item(), 0..24),
        ) {
            let (items, _) = normalize_history(history.clone(), &[]);
            prop_assert_eq!(check_pairing(&items, &[]), Ok(()));
            prop_assert!(!matches!(items.last(), Some(InputItem::Reasoning(_))));
            let added: Vec<&InputItem> = items
                .iter()
                .filter(|item| !history.contains(item))
                .collect();
            prop_assert!(added.iter().all(|item| matches!(
                item,
                InputItem::FunctionCallOutput(output) if output.output == aptix_model::wire::FunctionOutput::Text(ABORTED_OUTPUT.into())
            )));
            let original: Vec<&InputItem> = items
                .iter()
                .filter(|item| history.contains(item) && !added.contains(item))
                .collect();
            let mut cursor = history.iter();
            for item in original {
                prop_assert!(cursor.any(|candidate| candidate == item), "order changed");
            }
            let (again, repairs) = normalize_history(items.clone(), &[]);
            prop_assert_eq!(again, items);
            prop_assert!(repairs.is_empty());
        }
    }
}

#[cfg(test)]
mod tests {
    use aptix_model::wire::{
        ContentPart, FunctionCall, FunctionCallOutput, InputMessage, ReasoningItem, Role,
    };

    use super::*;

    pub(super) fn call(id: &str) -> InputItem {
        InputItem::FunctionCall(FunctionCall {
            id: None,
            call_id: id.into(),
            name: "f".into(),
            arguments: "{}".into(),
            status: None,
        })
    }

    pub(super) fn output(id: &str) -> InputItem {
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

    pub(super) fn user() -> InputItem {
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

    #[test]
    fn a_split_never_separates_a_call_from_its_output_or_a_reasoning_item_from_its_next() {
        // 0 user, 1 reasoning, 2 call a, 3 call b, 4 output a, 5 output b, 6 user,
        // 7 custom call c, 8 custom output c, 9 user
        let history = [
            user(),
            reasoning(),
            call("a"),
            call("b"),
            output("a"),
            output("b"),
            user(),
            custom("custom_tool_call", "c"),
            custom("custom_tool_call_output", "c"),
            user(),
        ];
        let cuts: Vec<usize> = (0..=history.len())
            .map(|at| safe_split(&history, at))
            .collect();
        assert_eq!(cuts, [0, 1, 1, 1, 1, 1, 6, 7, 7, 9, 10]);
        for at in 0..=history.len() {
            let cut = safe_split(&history, at);
            let (head, tail) = history.split_at(cut);
            // Each half pairs on its own: nothing to repair in either.
            assert_eq!(normalize_history(head.to_vec(), &[]).1, [], "head at {cut}");
            assert_eq!(normalize_history(tail.to_vec(), &[]).1, [], "tail at {cut}");
        }
        assert_eq!(safe_split(&history, 99), history.len());
        assert_eq!(safe_split(&[], 5), 0);
    }
}

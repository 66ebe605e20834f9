//! A tool continuation must answer exactly the pending client calls: the same ids in
//! the same order, one result each. Anything else is a hard fault (AGN-034 section 5)
//! reported with what differs, before anything is changed.

use aptix_model::contract::ToolResult;

use crate::OrchestratorError;
use crate::session::PendingToolCalls;

/// Checks `results` against `pending`, naming the first difference precisely.
pub(crate) fn check_tool_results(
    pending: &PendingToolCalls,
    results: &[ToolResult],
) -> Result<(), OrchestratorError> {
    let expected = pending.call_ids();
    let received: Vec<String> = results
        .iter()
        .map(|result| result.tool_call_id.as_str().to_owned())
        .collect();
    if expected == received {
        return Ok(());
    }
    let mismatch = describe(&expected, &received);
    Err(OrchestratorError::ToolResultsMismatch {
        turn_id: pending.turn_id.clone(),
        mismatch,
        expected,
        received,
    })
}

fn describe(expected: &[String], received: &[String]) -> String {
    let missing: Vec<&String> = expected
        .iter()
        .filter(|id| !received.contains(id))
        .collect();
    let extra: Vec<&String> = received
        .iter()
        .filter(|id| !expected.contains(id))
        .collect();
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("missing results for {}", list(&missing)));
    }
    if !extra.is_empty() {
        parts.push(format!(
            "results for calls that are not pending: {}",
            list(&extra)
        ));
    }
    if parts.is_empty() {
        if expected.len() != received.len() {
            parts.push(format!(
                "{} results for {} pending calls (an id is answered twice)",
                received.len(),
                expected.len()
            ));
        } else if let Some(position) = expected.iter().zip(received).position(|(a, b)| a != b) {
            parts.push(format!(
                "results are out of order: position {position} answers {} but the pending call there is {}",
                received.get(position).map_or("nothing", String::as_str),
                expected.get(position).map_or("nothing", String::as_str),
            ));
        }
    }
    parts.join("; ")
}

fn list(ids: &[&String]) -> String {
    ids.iter()
        .map(|id| id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use aptix_model::contract::{ResultJson, ToolCallId, ToolOutcome, ToolResult};

    use super::*;
    use crate::session::PendingCall;

    fn pending(ids: &[&str]) -> PendingToolCalls {
        PendingToolCalls {
            turn_id: "t1".into(),
            response_id: "resp_1".into(),
            client_calls: ids
                .iter()
                .map(|id| PendingCall {
                    call_id: (*id).into(),
                    name: "read_file".into(),
                    arguments_json: "{}".into(),
                })
                .collect(),
            server_outputs: Vec::new(),
        }
    }

    fn results(ids: &[&str]) -> Vec<ToolResult> {
        ids.iter()
            .map(|id| ToolResult {
                tool_call_id: ToolCallId::new(*id).unwrap(),
                execution_ms: 1,
                outcome: ToolOutcome::Result(ResultJson::new("{}").unwrap()),
            })
            .collect()
    }

    fn check(pending_ids: &[&str], result_ids: &[&str], expected: Option<&str>) {
        let outcome = check_tool_results(&pending(pending_ids), &results(result_ids));
        match (outcome, expected) {
            (Ok(()), None) => {}
            (Err(OrchestratorError::ToolResultsMismatch { mismatch, .. }), Some(want)) => {
                assert_eq!(mismatch, want)
            }
            (other, want) => panic!("expected {want:?}, got {other:?}"),
        }
    }

    #[test]
    fn exact_answers_pass_and_every_difference_is_named() {
        check(&["a", "b"], &["a", "b"], None);
        check(
            &["a", "b"],
            &["b", "a"],
            Some("results are out of order: position 0 answers b but the pending call there is a"),
        );
        check(&["a", "b"], &["a"], Some("missing results for b"));
        check(
            &["a"],
            &["a", "c"],
            Some("results for calls that are not pending: c"),
        );
        check(
            &["a", "b"],
            &["a", "c"],
            Some("missing results for b; results for calls that are not pending: c"),
        );
        check(
            &["a"],
            &["a", "a"],
            Some("2 results for 1 pending calls (an id is answered twice)"),
        );
    }
}

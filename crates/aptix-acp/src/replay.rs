//! A stored session as the updates `session/load` replays: each user instruction, and
//! each image sent inline with it, as `user_message_chunk`, the model's answers as
//! `agent_message_chunk`, reasoning summaries as `agent_thought_chunk`, and each tool
//! call as `tool_call` with its outcome as `tool_call_update` (`completed` or `failed`).
//!
//! The history is the orchestrator's replayable conversation (`SessionState::history`);
//! what a stored user message says is read back with `aptix_request::instruction_of`,
//! the inverse of the rule that wrote it, and a tool output's success or failure with
//! `ToolReply::from_output_text`. System messages and the context blocks retrieved for
//! a turn are not part of what the user saw, and are not replayed.
//!
//! Each call gets its editor id by the rule of a live turn ([`CallIds`]), so a server
//! that reused a call id does not merge two calls into one card here either.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, ImageContent, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use aptix_model::wire::{
    ContentPart, FunctionOutput, InputItem, InputMessage, MessageContent, Role, SummaryPart,
};
use aptix_orchestrator::SessionState;
use aptix_request::{ToolReply, instruction_of};

use crate::call_ids::CallIds;
use crate::present;

fn chunk(text: String) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

/// The updates that show a stored session in an editor, in order: its conversation
/// (compactions undone), then the outcome of the calls whose results wait for the next
/// turn (a turn stopped at its bound of model calls keeps them in `pending`), so that
/// no call is left showing as running. The calls' editor ids are given by `ids`, which
/// the session's later turns go on with.
pub(crate) fn updates(session: &SessionState, cwd: &Path, ids: &mut CallIds) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    let mut calls: Vec<Call> = Vec::new();
    for item in &session.conversation() {
        match item {
            InputItem::Message(message) | InputItem::EasyMessage(message) => {
                message_updates(message, &mut updates);
            }
            InputItem::FunctionCall(call) => {
                let arguments = present::arguments(&call.arguments);
                let shown = ids.start(&call.call_id);
                calls.push(Call {
                    call_id: call.call_id.clone(),
                    shown: shown.clone(),
                    name: call.name.clone(),
                    answered: false,
                });
                updates.push(SessionUpdate::ToolCall(
                    ToolCall::new(shown, present::title(&call.name, &arguments))
                        .kind(present::kind(&call.name))
                        .status(ToolCallStatus::Pending)
                        .locations(present::locations_of_arguments(cwd, &call.name, &arguments))
                        .raw_input(arguments),
                ));
            }
            InputItem::FunctionCallOutput(output) => {
                let text = match &output.output {
                    FunctionOutput::Text(text) => text.clone(),
                    FunctionOutput::Parts(parts) => {
                        serde_json::Value::Array(parts.clone()).to_string()
                    }
                };
                let (shown, name) = answer(&mut calls, ids, &output.call_id);
                let fields = outcome(cwd, &name, ToolReply::from_output_text(&text));
                updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    shown, fields,
                )));
            }
            InputItem::Reasoning(reasoning) => {
                for part in &reasoning.summary {
                    if let SummaryPart::SummaryText { text } = part
                        && !text.is_empty()
                    {
                        updates.push(SessionUpdate::AgentThoughtChunk(chunk(text.clone())));
                    }
                }
            }
            _ => {}
        }
    }
    if let Some(pending) = &session.pending {
        for done in &pending.server_outputs {
            let (shown, name) = answer(&mut calls, ids, &done.call_id);
            let reply = match &done.outcome {
                Ok(result) => ToolReply::Result(result.clone()),
                Err(reason) => ToolReply::Error(reason.clone()),
            };
            updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                shown,
                outcome(cwd, &name, reply),
            )));
        }
    }
    for call in calls {
        if !call.answered {
            updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                call.shown,
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Failed)
                    .content(vec![ToolCallContent::from("not run".to_owned())]),
            )));
        }
    }
    updates
}

/// A call of the replayed history.
struct Call {
    /// The model's id.
    call_id: String,
    /// The editor's.
    shown: String,
    name: String,
    /// An output answered it.
    answered: bool,
}

/// Marks the latest call the model named `call_id` answered; its editor id and its
/// tool's name.
fn answer(calls: &mut [Call], ids: &CallIds, call_id: &str) -> (String, String) {
    match calls.iter_mut().rev().find(|call| call.call_id == call_id) {
        Some(call) => {
            call.answered = true;
            (call.shown.clone(), call.name.clone())
        }
        None => (ids.latest(call_id), String::new()),
    }
}

/// A call's outcome as its last update shows it.
fn outcome(cwd: &Path, name: &str, reply: ToolReply) -> ToolCallUpdateFields {
    match &reply {
        ToolReply::Result(result) => present::finished(cwd, name, Ok(result)),
        ToolReply::Error(message) => present::finished(cwd, name, Err(message)),
    }
}

fn message_updates(message: &InputMessage, updates: &mut Vec<SessionUpdate>) {
    match message.role {
        Role::User => {
            // A tool continuation's message carries no instruction: nothing the user said.
            let Some(instruction) = instruction_of(message) else {
                return;
            };
            updates.push(SessionUpdate::UserMessageChunk(chunk(
                instruction.to_owned(),
            )));
            // The images the user attached, as the editor sent them.
            if let MessageContent::Parts(parts) = &message.content {
                for part in parts {
                    if let ContentPart::InputImage(image) = part
                        && let Some((media_type, base64)) = image.inline_data()
                    {
                        updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                            ContentBlock::Image(ImageContent::new(base64, media_type)),
                        )));
                    }
                }
            }
        }
        Role::Assistant => {
            let texts: Vec<String> = match &message.content {
                MessageContent::Text(text) => vec![text.clone()],
                MessageContent::Parts(parts) => parts
                    .iter()
                    .filter_map(|part| match part {
                        ContentPart::OutputText(text) => Some(text.text.clone()),
                        ContentPart::Refusal(refusal) => Some(refusal.refusal.clone()),
                        _ => None,
                    })
                    .collect(),
            };
            for text in texts.into_iter().filter(|text| !text.is_empty()) {
                updates.push(SessionUpdate::AgentMessageChunk(chunk(text)));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aptix_model::wire::{FunctionCall, FunctionCallOutput};
    use serde_json::json;

    #[test]
    fn a_history_replays_as_the_user_saw_it() {
        let history = vec![
            InputItem::Message(InputMessage::new(
                Role::System,
                vec![ContentPart::input_text("rules")],
            )),
            InputItem::Message(InputMessage::new(
                Role::User,
                vec![
                    ContentPart::input_text("[MODE: QA]\n\n[INSTRUCTION]\nWhere is main?"),
                    ContentPart::input_text("[CONTEXT]..."),
                ],
            )),
            InputItem::FunctionCall(
                serde_json::from_value::<FunctionCall>(json!({
                    "type": "function_call", "call_id": "call_1", "name": "read_file",
                    "arguments": "{\"path\":\"src/main.rs\"}"
                }))
                .unwrap(),
            ),
            InputItem::FunctionCallOutput(FunctionCallOutput::text(
                "call_1",
                "{\"error\":\"no such file\"}",
            )),
            InputItem::Message(InputMessage::new(
                Role::Assistant,
                vec![ContentPart::output_text("In src/main.rs.")],
            )),
        ];
        let mut session = SessionState::new("s", "QA", Default::default());
        session.history = history;
        let updates = updates(&session, Path::new("/w"), &mut CallIds::default());
        let json: Vec<serde_json::Value> = updates
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        assert_eq!(json.len(), 4, "{json:#?}");
        assert_eq!(json[0]["sessionUpdate"], "user_message_chunk");
        assert_eq!(json[0]["content"]["text"], "Where is main?");
        assert_eq!(json[1]["sessionUpdate"], "tool_call");
        assert_eq!(json[1]["kind"], "read");
        assert_eq!(json[1]["locations"][0]["path"], "/w/src/main.rs");
        assert_eq!(json[2]["sessionUpdate"], "tool_call_update");
        assert_eq!(json[2]["status"], "failed");
        assert_eq!(
            json[2]["rawOutput"],
            json!({"error": "no such file"}),
            "{json:#?}"
        );
        assert_eq!(json[3]["sessionUpdate"], "agent_message_chunk");
        assert_eq!(json[3]["content"]["text"], "In src/main.rs.");
    }

    #[test]
    fn the_images_a_user_sent_are_replayed_after_the_instruction() {
        let mut session = SessionState::new("s", "QA", Default::default());
        session.history = vec![InputItem::Message(InputMessage::new(
            Role::User,
            vec![
                ContentPart::input_text("[MODE: QA]\n\n[INSTRUCTION]\nWhat is in this picture?"),
                ContentPart::InputImage(aptix_model::wire::InputImage::inline(
                    "image/jpeg",
                    "/9j/4AAQ",
                )),
                // One given by a web URL has no bytes to show: not replayed.
                ContentPart::InputImage(aptix_model::wire::InputImage {
                    image_url: Some("https://example.com/a.png".into()),
                    file_id: None,
                    detail: None,
                }),
            ],
        ))];
        let json: Vec<serde_json::Value> =
            updates(&session, Path::new("/w"), &mut CallIds::default())
                .iter()
                .map(|u| serde_json::to_value(u).unwrap())
                .collect();
        assert_eq!(json.len(), 2, "{json:#?}");
        assert_eq!(json[0]["content"]["text"], "What is in this picture?");
        assert_eq!(json[1]["sessionUpdate"], "user_message_chunk");
        assert_eq!(json[1]["content"]["type"], "image");
        assert_eq!(json[1]["content"]["data"], "/9j/4AAQ");
        assert_eq!(json[1]["content"]["mimeType"], "image/jpeg");
    }

    #[test]
    fn calls_whose_results_wait_for_the_next_turn_are_shown_finished() {
        // A turn stopped at its bound of model calls: the calls ran, their results are
        // kept in `pending` for the next turn, not in the history.
        let call = |id: &str| {
            InputItem::FunctionCall(
                serde_json::from_value::<FunctionCall>(json!({
                    "type": "function_call", "call_id": id, "name": "search_code",
                    "arguments": "{\"query\":\"main\"}"
                }))
                .unwrap(),
            )
        };
        let mut session = SessionState::new("s", "QA", Default::default());
        session.history = vec![call("call_1"), call("call_2"), call("call_3")];
        session.pending = Some(aptix_orchestrator::PendingToolCalls {
            turn_id: "t1".into(),
            response_id: "resp_1".into(),
            client_calls: Vec::new(),
            server_outputs: vec![
                aptix_orchestrator::CompletedCall {
                    call_id: "call_1".into(),
                    name: "search_code".into(),
                    execution_ms: 3,
                    outcome: Ok("{\"hits\":[]}".into()),
                },
                aptix_orchestrator::CompletedCall {
                    call_id: "call_2".into(),
                    name: "search_code".into(),
                    execution_ms: 0,
                    outcome: Err("there is no tool named \"x\"".into()),
                },
            ],
        });
        let json: Vec<serde_json::Value> =
            updates(&session, Path::new("/w"), &mut CallIds::default())
                .iter()
                .map(|u| serde_json::to_value(u).unwrap())
                .collect();
        let last = |id: &str| {
            json.iter()
                .rev()
                .find(|u| u["toolCallId"] == id)
                .cloned()
                .unwrap()
        };
        assert_eq!(last("call_1")["status"], "completed", "{json:#?}");
        // The output an editor expands, as the live card had it.
        assert_eq!(
            last("call_1")["rawOutput"],
            json!({"hits": []}),
            "{json:#?}"
        );
        assert_eq!(last("call_2")["status"], "failed", "{json:#?}");
        assert_eq!(
            last("call_2")["rawOutput"],
            json!({"error": "there is no tool named \"x\""})
        );
        assert_eq!(
            last("call_2")["content"][0]["content"]["text"],
            "there is no tool named \"x\""
        );
        // No output anywhere: closed, not left running.
        assert_eq!(last("call_3")["sessionUpdate"], "tool_call_update");
        assert_eq!(last("call_3")["status"], "failed");
    }

    #[test]
    fn a_call_id_the_server_reused_replays_as_two_calls() {
        // A local server that numbers each reply's calls from call_0.
        let call = |name: &str| {
            InputItem::FunctionCall(
                serde_json::from_value::<FunctionCall>(json!({
                    "type": "function_call", "call_id": "call_0", "name": name,
                    "arguments": "{\"query\":\"main\",\"path\":\"src/main.rs\"}"
                }))
                .unwrap(),
            )
        };
        let output =
            |text: &str| InputItem::FunctionCallOutput(FunctionCallOutput::text("call_0", text));
        let mut session = SessionState::new("s", "QA", Default::default());
        session.history = vec![
            call("search_code"),
            output("{\"hits\":[]}"),
            call("read_file"),
            output("{\"error\":\"no such file\"}"),
        ];
        let mut ids = CallIds::default();
        let json: Vec<serde_json::Value> = updates(&session, Path::new("/w"), &mut ids)
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let shown: Vec<(&str, &str)> = json
            .iter()
            .map(|u| {
                (
                    u["toolCallId"].as_str().unwrap(),
                    // A `tool_call` without a status is `pending` (the default).
                    u["status"].as_str().unwrap_or("pending"),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                ("call_0", "pending"),
                ("call_0", "completed"),
                ("call_0#2", "pending"),
                ("call_0#2", "failed"),
            ],
            "{json:#?}"
        );
        // The session's next turn goes on from there.
        assert_eq!(ids.start("call_0"), "call_0#3");
    }
}

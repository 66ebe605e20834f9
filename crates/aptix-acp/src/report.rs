//! A turn as the editor sees it while it runs: the orchestrator's stream deltas and the
//! server tool runs, as `session/update` notifications.
//!
//! - answer text: `agent_message_chunk` (a refusal too: it is the model's answer in
//!   words);
//! - reasoning summaries: `agent_thought_chunk`;
//! - a tool call: `tool_call` (pending) when the model starts it, a `tool_call_update`
//!   with the arguments, title and locations when its arguments are complete,
//!   `in_progress` when it runs (an MCP server's tool: once the user allowed it, not
//!   while they are asked), and `completed` or `failed` with a summary and the files
//!   it touched when it is done.
//!
//! What the turn warns of (an attachment cut to fit, context left out, a session
//! compacted, a tool the model called that the mode lacks) is told among the thoughts
//! too, each warning once: a compaction as it happens, the rest as the turn ends.
//!
//! A model call that is retried (a request that failed before its reply, a stream cut
//! mid-answer) is told as a line among the thoughts, before the wait. A stream that is
//! cut and sent again from its start repeats text the editor already shows: the
//! repeated part is skipped, and an answer that departs from it is shown anew, whole
//! ([`aptix_mapping::ShownAnswer`]). A tool call the cut attempt had begun is closed as
//! not run.

use std::path::PathBuf;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionNotification, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use aptix_mapping::{AnswerText, ShownAnswer, StreamDelta};
use aptix_model::contract::AgentExecuteResponse;

use crate::call_ids::CallIds;
use crate::present;
use crate::tools::lock;

/// One tool call of the turn.
#[derive(Debug)]
struct Call {
    /// The model's id of the call.
    call_id: String,
    /// The editor's (see [`CallIds`]).
    shown: String,
    /// Its last update is sent (completed, failed, or cancelled).
    finished: bool,
}

/// A retry as the editor shows it, on a line of its own among the thoughts: a person
/// waiting on a rate limit sees why nothing comes, and for how long.
fn retry_notice(
    attempt: u32,
    max_attempts: u32,
    wait_ms: u64,
    reason: &str,
    resumed: bool,
) -> String {
    let seconds = wait_ms as f64 / 1000.0;
    let what = if resumed {
        "resuming the answer"
    } else {
        "sending the request again"
    };
    format!("\n[{reason}: {what} in {seconds:.1} s, attempt {attempt} of {max_attempts}]\n")
}

/// Said among the thoughts where a model call sent again answers differently from the
/// text shown for it, which follows in full.
const RESTARTED_NOTICE: &str =
    "\n[the new answer differs from the text shown above; it follows in full]\n";

/// Said among the thoughts where the streamed text is not the final answer, which
/// follows in full.
const SETTLED_NOTICE: &str =
    "\n[the streamed text differs from the final answer; it follows in full]\n";

/// Sends one turn's updates to the editor.
pub(crate) struct TurnReporter {
    connection: ConnectionTo<Client>,
    session_id: String,
    cwd: PathBuf,
    calls: Vec<Call>,
    /// The session's editor ids of calls, which this turn's calls add to.
    ids: std::sync::Arc<std::sync::Mutex<CallIds>>,
    /// What of the answer is shown (a model call sent again repeats its text).
    shown: ShownAnswer,
    /// Whether any answer text was shown.
    any_text: bool,
    /// Whether a notification failed to go out (logged once).
    send_failed: bool,
    /// The warnings already told (a compaction is told as it happens, and is among
    /// the envelope's warnings at the end too).
    warned: Vec<String>,
}

impl TurnReporter {
    pub(crate) fn new(
        connection: ConnectionTo<Client>,
        session_id: String,
        cwd: PathBuf,
        ids: std::sync::Arc<std::sync::Mutex<CallIds>>,
    ) -> Self {
        TurnReporter {
            connection,
            session_id,
            cwd,
            calls: Vec::new(),
            ids,
            shown: ShownAnswer::new(),
            any_text: false,
            send_failed: false,
            warned: Vec::new(),
        }
    }

    fn send(&mut self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.session_id.clone(), update);
        if let Err(error) = self.connection.send_notification(notification)
            && !self.send_failed
        {
            self.send_failed = true;
            tracing::warn!(session = %self.session_id, %error, "could not send a session update");
        }
    }

    fn text(&mut self, text: String) {
        if !text.is_empty() {
            self.any_text = true;
            self.send(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                ContentBlock::Text(TextContent::new(text)),
            )));
        }
    }

    /// One delta of the turn's stream.
    pub(crate) fn delta(&mut self, delta: &StreamDelta) {
        match self.shown.delta(delta) {
            Some(AnswerText::More(text)) => self.text(text),
            Some(AnswerText::Restarted(text)) => {
                // The model answered differently this time: the editor shows the new
                // answer apart, never the old one's beginning joined to its end.
                self.thought(RESTARTED_NOTICE.to_owned());
                self.text(format!("\n\n{text}"));
            }
            None => {}
        }
        match delta {
            StreamDelta::ReasoningSummaryDelta { text, .. } if !text.is_empty() => {
                self.thought(text.clone());
            }
            StreamDelta::ToolCallStarted { call_id, name, .. } => {
                self.start_call(call_id, name);
            }
            // An MCP tool's call may first be put to the user: it stays `pending` until
            // it goes ahead, which its tool tells the editor itself.
            StreamDelta::ToolRunning { name, .. } if crate::mcp::is_mcp_tool(name) => {}
            StreamDelta::ToolRunning { call_id, .. } => self.tool_running(call_id),
            StreamDelta::ToolFinished {
                call_id,
                name,
                ok,
                output,
                ..
            } => self.tool_finished(call_id, name, *ok, output),
            StreamDelta::ToolCallDone {
                call_id,
                name,
                arguments_json,
                ..
            } => {
                // Started unless a call of that id is open (a provider that answered
                // at once starts none; a server that reuses ids starts another).
                if !self
                    .calls
                    .iter()
                    .any(|call| &call.call_id == call_id && !call.finished)
                {
                    self.start_call(call_id, name);
                }
                let arguments = present::arguments(arguments_json);
                let fields = ToolCallUpdateFields::new()
                    .title(present::title(name, &arguments))
                    .locations(present::locations_of_arguments(&self.cwd, name, &arguments))
                    .raw_input(arguments);
                self.update_call(call_id, fields);
            }
            StreamDelta::Retrying {
                cause,
                attempt,
                max_attempts,
                wait_ms,
                reason,
                events,
                resumed,
            } => {
                tracing::info!(session = %self.session_id, ?cause, %reason, attempt, max_attempts, wait_ms, events, resumed, "retrying the model call");
                if !resumed {
                    // The model call starts again from its beginning: a call it had
                    // begun is not run (the new answer makes its own).
                    self.close_open_calls(&format!("not run: {reason}; the request is sent again"));
                }
                self.thought(retry_notice(
                    *attempt,
                    *max_attempts,
                    *wait_ms,
                    reason,
                    *resumed,
                ));
            }
            StreamDelta::Compacted { message, .. } => self.warn(message),
            StreamDelta::Error { code, message } => {
                tracing::warn!(session = %self.session_id, %code, %message, "the stream reported an error");
            }
            _ => {}
        }
    }

    /// A warning of the turn, on a line of its own among the thoughts, once.
    pub(crate) fn warn(&mut self, warning: &str) {
        if !self.warned.iter().any(|told| told == warning) {
            self.warned.push(warning.to_owned());
            self.thought(format!("\n[warning: {warning}]\n"));
        }
    }

    fn thought(&mut self, text: String) {
        self.send(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
            ContentBlock::Text(TextContent::new(text)),
        )));
    }

    /// The editor's id of the latest call of this turn the model named `call_id`, or
    /// of the session's when the turn has none.
    pub(crate) fn shown_id(&self, call_id: &str) -> String {
        match self.calls.iter().rev().find(|call| call.call_id == call_id) {
            Some(call) => call.shown.clone(),
            None => lock(&self.ids).latest(call_id),
        }
    }

    fn start_call(&mut self, call_id: &str, name: &str) {
        let shown = lock(&self.ids).start(call_id);
        self.calls.push(Call {
            call_id: call_id.to_owned(),
            shown: shown.clone(),
            finished: false,
        });
        let call = ToolCall::new(shown, present::title(name, &serde_json::Value::Null))
            .kind(present::kind(name))
            .status(ToolCallStatus::Pending);
        self.send(SessionUpdate::ToolCall(call));
    }

    /// Updates the latest call the model named `call_id`.
    fn update_call(&mut self, call_id: &str, fields: ToolCallUpdateFields) {
        let shown = self.shown_id(call_id);
        self.update_shown(shown, fields);
    }

    /// Updates the call the editor knows as `shown`.
    fn update_shown(&mut self, shown: String, fields: ToolCallUpdateFields) {
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            shown, fields,
        )));
    }

    /// A server tool began to run for the call `call_id`.
    fn tool_running(&mut self, call_id: &str) {
        if !self.calls.iter().any(|call| call.call_id == call_id) {
            return;
        }
        self.update_call(
            call_id,
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        );
    }

    /// A server tool finished: `completed` with a summary and the files it touched, or
    /// `failed` with the reason the model is told.
    fn tool_finished(&mut self, call_id: &str, name: &str, ok: bool, output: &str) {
        let Some(call) = self
            .calls
            .iter_mut()
            .rev()
            .find(|call| call.call_id == call_id)
        else {
            return;
        };
        call.finished = true;
        let shown = call.shown.clone();
        let result = if ok { Ok(output) } else { Err(output) };
        let fields = present::finished(&self.cwd, name, result);
        self.update_shown(shown, fields);
    }

    /// The turn ended: its answer is shown where no delta carried it (a provider that
    /// answered at once) or the deltas did not spell it, and any call still open is
    /// closed.
    pub(crate) fn finish(&mut self, envelope: &AgentExecuteResponse) {
        let answer = envelope
            .text
            .as_deref()
            .filter(|text| !text.is_empty())
            .or(envelope.refusal.as_deref());
        if let Some(answer) = answer {
            // What streamed is checked against the answer: its rest, or the whole
            // answer apart when the deltas did not spell it.
            match self.shown.settle(answer) {
                None => {}
                Some(AnswerText::More(rest)) => self.text(rest),
                Some(AnswerText::Restarted(whole)) => {
                    self.thought(SETTLED_NOTICE.to_owned());
                    let apart = if self.any_text { "\n\n" } else { "" };
                    self.text(format!("{apart}{whole}"));
                }
            }
        }
        for warning in &envelope.warnings {
            // The refusal was shown as the answer: where the envelope keeps it is no
            // news to the user.
            if warning.ends_with(aptix_mapping::MappingWarning::REFUSAL_FIELD) {
                continue;
            }
            self.warn(warning);
        }
        // A call the orchestrator refused is reported with its reason as it finishes;
        // one still open here was left for the next turn (the turn stopped at its
        // bound of model calls, or the call is the client's to run).
        self.close_open_calls("not run in this turn");
    }

    /// The turn was cancelled: every call that has not finished is marked failed, so
    /// the editor shows no call running forever.
    pub(crate) fn cancel_open_calls(&mut self) {
        self.close_open_calls("cancelled");
    }

    fn close_open_calls(&mut self, why: &str) {
        let open: Vec<String> = self
            .calls
            .iter_mut()
            .filter(|call| !call.finished)
            .map(|call| {
                call.finished = true;
                call.shown.clone()
            })
            .collect();
        for shown in open {
            self.update_shown(
                shown,
                ToolCallUpdateFields::new()
                    .status(ToolCallStatus::Failed)
                    .content(vec![ToolCallContent::from(why.to_owned())]),
            );
        }
    }
}

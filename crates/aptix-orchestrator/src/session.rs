//! Server-owned session state (AGN-034): what a client never sends and the orchestrator
//! keeps between turns.

use aptix_model::contract::{
    AgentExecuteRequest, AgentExecuteResponse, FileInput, ImageInput, Instruction, LlmUsage,
    RagScope, SessionId, TurnId, UserTurnRequest, WorkspaceHints,
};
use aptix_model::wire::{InputItem, Role};
use serde::{Deserialize, Serialize};

/// Everything the server remembers about one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionState {
    /// The client's `sessionId`.
    pub session_id: String,
    /// The agent mode (`QA`, `CODE_EDIT`, ...): server-owned since AGN-034.
    pub mode: String,
    /// Model and sampling settings for this session.
    pub model: ModelSettings,
    /// The last provider response id: the next call's `previous_response_id` when the
    /// provider keeps state.
    pub last_response_id: Option<String>,
    /// Client tool calls the session waits for, if the last turn ended with some.
    pub pending: Option<PendingToolCalls>,
    /// The replayable conversation, for providers that keep no state: input items in
    /// order (system message, user messages, output items, tool outputs). Kept for
    /// stateful providers too: a compaction starts a new chain from it.
    pub history: Vec<InputItem>,
    /// The size of the context as of the last reply, for estimating the next request;
    /// `None` before the first reply, after a compaction, or for a session stored by an
    /// older version (the next request is then counted whole).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
    /// Every compaction of this session, oldest first. The items each replaced, and
    /// those it put in their place, are kept apart by the stores of this crate and read
    /// only by
    /// [`SessionStore::load_full`](crate::SessionStore::load_full): a turn loads and
    /// commits the session, and a long one compacted many times would otherwise carry
    /// everything ever said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<CompactionRecord>,
    /// The turns committed in this session and the tokens they used (zero for a
    /// session stored by an older version, which counted none).
    #[serde(default)]
    pub totals: SessionTotals,
    /// The ids of the retrieved chunks the conversation holds already: sent in an
    /// earlier turn's `[CONTEXT]`, and not compacted away since. A later turn does not
    /// send them again (a follow-up question retrieves much of what the first did;
    /// sent again, it cost thousands of tokens a turn). Oldest first, at most
    /// [`MAX_CONTEXT_SENT`](Self::MAX_CONTEXT_SENT).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_sent: Vec<String>,
}

/// What a session's committed turns add up to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionTotals {
    /// Turns committed: user turns and tool continuations, each once however often it
    /// was retried. A turn that failed is not stored and not counted.
    pub turns: u64,
    /// The tokens of those turns, summed from their envelopes' usage.
    pub usage: LlmUsage,
}

impl SessionTotals {
    /// Counts one committed turn's envelope.
    pub(crate) fn add_turn(&mut self, envelope: &AgentExecuteResponse) {
        self.turns = self.turns.saturating_add(1);
        self.usage.add(&envelope.usage);
    }
}

/// How many tokens the conversation held as of the last reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUsage {
    /// The last reply's `input_tokens` plus `output_tokens`: what the next request
    /// carries before anything is added.
    pub tokens: u64,
    /// How many items of [`SessionState::history`] those tokens cover (the history's
    /// length right after the reply was recorded).
    pub covered_items: usize,
}

/// Why a session was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CompactionReason {
    /// The next request was estimated above the compaction threshold.
    Threshold,
    /// The provider answered `context_length_exceeded`.
    Overflow,
}

impl CompactionReason {
    /// The reason's stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionReason::Threshold => "threshold",
            CompactionReason::Overflow => "overflow",
        }
    }
}

/// How a session was compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CompactionMethod {
    /// The provider's `/responses/compact` endpoint.
    Endpoint,
    /// A model call that wrote a handover note.
    Summary,
}

impl CompactionMethod {
    /// The method's stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionMethod::Endpoint => "endpoint",
            CompactionMethod::Summary => "summary",
        }
    }
}

/// One compaction: what was replaced, by what, when and how much it saved. The stored
/// turn envelopes are never touched; the replaced items themselves are kept too (see
/// [`replaced`](Self::replaced)).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// The turn during which it happened.
    pub turn_id: String,
    /// When, in milliseconds since the Unix epoch.
    pub at_unix_ms: u64,
    /// Why.
    pub reason: CompactionReason,
    /// How.
    pub method: CompactionMethod,
    /// The estimated tokens of the request before.
    pub tokens_before: u64,
    /// The estimated tokens of the request after.
    pub tokens_after: u64,
    /// The history items replaced, as they were. Empty in a session read by
    /// [`SessionStore::load`](crate::SessionStore::load) from a store that keeps them
    /// apart (every store of this crate);
    /// [`SessionStore::load_full`](crate::SessionStore::load_full) reads them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<InputItem>,
    /// The items put in their place (the handover note or the provider's compacted
    /// items), which begin the history after its leading system messages. Kept apart
    /// and read back like [`replaced`](Self::replaced).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replacement: Vec<InputItem>,
    /// How many recent items were kept verbatim after them.
    pub kept_items: usize,
}

/// The instruction a history item carries, when it is a user turn's message.
fn instruction_in(item: &InputItem) -> Option<&str> {
    match item {
        InputItem::Message(message) | InputItem::EasyMessage(message)
            if message.role == Role::User =>
        {
            aptix_request::instruction_of(message)
        }
        _ => None,
    }
}

impl SessionState {
    /// What the session's last user turn asked, as its stored message holds it (the
    /// `[INSTRUCTION]` of the seed's user message); `None` before any user turn, or when
    /// compaction replaced it.
    pub fn last_instruction(&self) -> Option<&str> {
        self.history.iter().rev().find_map(instruction_in)
    }

    /// What the session's first user turn in its history asked: a title for it (an
    /// editor's list of threads). After a compaction replaced the first turns, the
    /// earliest one kept.
    pub fn first_instruction(&self) -> Option<&str> {
        self.history.iter().find_map(instruction_in)
    }

    /// A new session in `mode` with `model`.
    pub fn new(
        session_id: impl Into<String>,
        mode: impl Into<String>,
        model: ModelSettings,
    ) -> Self {
        SessionState {
            session_id: session_id.into(),
            mode: mode.into(),
            model,
            last_response_id: None,
            pending: None,
            history: Vec::new(),
            context: None,
            compactions: Vec::new(),
            totals: SessionTotals::default(),
            context_sent: Vec::new(),
        }
    }

    /// The most chunk ids [`context_sent`](Self::context_sent) keeps; the oldest go
    /// first (such a chunk is sent again if retrieved again).
    pub const MAX_CONTEXT_SENT: usize = 1024;

    /// Notes chunks a request carries in its `[CONTEXT]`.
    pub(crate) fn sent_context<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) {
        for id in ids {
            if !self.context_sent.iter().any(|known| known == id) {
                self.context_sent.push(id.to_owned());
            }
        }
        let over = self
            .context_sent
            .len()
            .saturating_sub(Self::MAX_CONTEXT_SENT);
        self.context_sent.drain(..over);
    }

    /// The conversation as it happened: [`history`](Self::history) with every
    /// compaction undone (each record's replacement put back to the items it replaced,
    /// latest first), for showing a session to a person (an editor's `session/load`).
    /// The model is sent `history`; this is what the user saw. Unwinding stops at a
    /// record whose replacement is no longer where it was put. Read the session with
    /// [`SessionStore::load_full`](crate::SessionStore::load_full) for this: a session
    /// read by `load` has no replaced items to put back.
    pub fn conversation(&self) -> Vec<InputItem> {
        let mut items = self.history.clone();
        for record in self.compactions.iter().rev() {
            let lead = items
                .iter()
                .take_while(|item| is_system_message(item))
                .count();
            let end = lead + record.replacement.len();
            if items.get(lead..end) != Some(record.replacement.as_slice()) {
                break;
            }
            items.splice(lead..end, record.replaced.iter().cloned());
        }
        items
    }
}

/// What a store keeps of a compaction record apart from the session it loads every
/// turn: the items it replaced and the items it put in their place (which, once a later
/// compaction replaces them in turn, are among that one's replaced items too).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct KeptApart {
    #[serde(default)]
    pub(crate) replaced: Vec<InputItem>,
    #[serde(default)]
    pub(crate) replacement: Vec<InputItem>,
}

/// [`KeptApart`] by the record's index in [`SessionState::compactions`].
pub(crate) type KeptApartItems = Vec<(usize, KeptApart)>;

impl SessionState {
    /// Takes the items out of the records that still hold them (those made since the
    /// session was loaded, and those of a session stored before they were kept apart),
    /// for a store to keep them apart.
    pub(crate) fn take_kept_apart(&mut self) -> KeptApartItems {
        self.compactions
            .iter_mut()
            .enumerate()
            .filter(|(_, record)| !record.replaced.is_empty() || !record.replacement.is_empty())
            .map(|(index, record)| {
                let kept = KeptApart {
                    replaced: std::mem::take(&mut record.replaced),
                    replacement: std::mem::take(&mut record.replacement),
                };
                (index, kept)
            })
            .collect()
    }

    /// Puts back items kept apart, into the records that have none.
    pub(crate) fn restore_kept_apart(&mut self, kept: KeptApartItems) {
        for (index, items) in kept {
            if let Some(record) = self.compactions.get_mut(index) {
                if record.replaced.is_empty() {
                    record.replaced = items.replaced;
                }
                if record.replacement.is_empty() {
                    record.replacement = items.replacement;
                }
            }
        }
    }
}

/// A system or developer message: the instructions that lead a history, never compacted.
pub(crate) fn is_system_message(item: &InputItem) -> bool {
    matches!(item, InputItem::Message(m) | InputItem::EasyMessage(m)
        if matches!(m.role, Role::System | Role::Developer))
}

/// Model settings that the orchestrator supplies to the request builder.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelSettings {
    /// The model id.
    pub model: String,
    /// Sampling temperature; unset for reasoning models, which reject it.
    pub temperature: Option<f64>,
    /// Upper bound on generated tokens.
    pub max_output_tokens: Option<u64>,
    /// Reasoning effort (`low`, `medium`, `high`, ...).
    pub reasoning_effort: Option<String>,
}

/// Client tool calls that ended a turn, waiting for the client's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingToolCalls {
    /// The turn that asked for them; the continuation must carry the same `turnId`.
    pub turn_id: String,
    /// The response whose output holds the calls (the continuation's
    /// `previous_response_id`).
    pub response_id: String,
    /// The client calls, in the order the model made them.
    pub client_calls: Vec<PendingCall>,
    /// Outputs of server tools called in the same response, sent together with the
    /// client's results so that every call of the response is answered at once.
    pub server_outputs: Vec<CompletedCall>,
}

/// A tool call that has been answered but not yet sent to the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedCall {
    /// The model's `call_id`.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// How long it ran.
    pub execution_ms: u64,
    /// The result as JSON text, or why the call failed.
    pub outcome: Result<String, String>,
}

impl PendingToolCalls {
    /// The pending client call ids, in order.
    pub fn call_ids(&self) -> Vec<String> {
        self.client_calls
            .iter()
            .map(|call| call.call_id.clone())
            .collect()
    }
}

/// One pending client tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The model's `call_id`.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments exactly as the model emitted them.
    pub arguments_json: String,
}

/// Which kind of request a stored turn answered: a repeated request is only the same
/// request if its scenario is the same too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    /// A user turn.
    UserTurn,
    /// A tool continuation.
    ToolContinuation,
}

impl Scenario {
    /// The scenario's stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::UserTurn => "user_turn",
            Scenario::ToolContinuation => "tool_continuation",
        }
    }
}

/// The key of a stored turn result: session, turn and scenario.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TurnKey {
    /// The session.
    pub session_id: String,
    /// The client's `turnId`.
    pub turn_id: String,
    /// User turn or tool continuation.
    pub scenario: Scenario,
}

impl TurnKey {
    /// The key `request`'s result is stored under.
    pub fn of(request: &AgentExecuteRequest) -> TurnKey {
        TurnKey {
            session_id: request.session_id().as_str().to_owned(),
            turn_id: request.turn_id().as_str().to_owned(),
            scenario: if request.is_tool_continuation() {
                Scenario::ToolContinuation
            } else {
                Scenario::UserTurn
            },
        }
    }
}

/// A turn's result as stored, so that a retried identical request returns it instead of
/// calling the model twice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTurn {
    /// The client's `turnId`.
    pub turn_id: String,
    /// User turn or tool continuation.
    pub scenario: Scenario,
    /// The envelope returned.
    pub envelope: AgentExecuteResponse,
    /// What the request that ran the turn asked, as a digest: a retry sends the same
    /// request and gets [`envelope`](Self::envelope) back, while a different request
    /// under the same key is refused
    /// ([`OrchestratorError::TurnReused`](crate::OrchestratorError::TurnReused)).
    /// `None` for a turn stored before digests were kept, which answers any request
    /// under its key. A store keeps it as given and returns it from
    /// [`stored_turn`](crate::SessionStore::stored_turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
}

/// The digest of what `request` asks, kept with its stored turn
/// ([`StoredTurn::request_digest`]): every field but `stream`, which says how the answer
/// is delivered and which a retry may change. The canonical JSON encoding is hashed with
/// BLAKE3; the `v1:` prefix names that recipe, so that a later recipe does not take a
/// retry for a new request.
pub(crate) fn request_digest(request: &AgentExecuteRequest) -> Option<String> {
    /// A user turn without `stream`; the fields are taken by an exhaustive pattern so
    /// that a field added to the request cannot be left out of the digest unnoticed.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct AskedTurn<'a> {
        session_id: &'a SessionId,
        turn_id: &'a TurnId,
        instruction: &'a Option<Instruction>,
        files: &'a [FileInput],
        images: &'a [ImageInput],
        rag_scope: &'a Option<RagScope>,
        hints: &'a Option<WorkspaceHints>,
    }
    let mut hasher = blake3::Hasher::new();
    // serde_json writes token by token; the hasher takes whole blocks best.
    let mut buffered = std::io::BufWriter::with_capacity(4096, &mut hasher);
    let written = match request {
        AgentExecuteRequest::UserTurn(turn) => {
            let UserTurnRequest {
                session_id,
                turn_id,
                instruction,
                files,
                images,
                rag_scope,
                hints,
                stream: _,
            } = turn;
            serde_json::to_writer(
                &mut buffered,
                &AskedTurn {
                    session_id,
                    turn_id,
                    instruction,
                    files,
                    images,
                    rag_scope,
                    hints,
                },
            )
        }
        AgentExecuteRequest::ToolContinuation(continuation) => {
            serde_json::to_writer(&mut buffered, continuation)
        }
    };
    let flushed = std::io::Write::flush(&mut buffered);
    drop(buffered);
    (written.is_ok() && flushed.is_ok())
        .then(|| format!("{DIGEST_RECIPE}{}", hasher.finalize().to_hex()))
}

/// The prefix of [`request_digest`]'s digests.
const DIGEST_RECIPE: &str = "v1:";

/// Whether a request whose digest is `asked` reuses the key of a stored turn run by
/// another request (`stored`). A digest of an unknown recipe, or none, is no evidence.
pub(crate) fn is_reused(stored: Option<&str>, asked: Option<&str>) -> bool {
    match (stored, asked) {
        (Some(stored), Some(asked)) => stored.starts_with(DIGEST_RECIPE) && stored != asked,
        _ => false,
    }
}

/// A value with the store version it was read at, for optimistic concurrency.
#[derive(Debug, Clone, PartialEq)]
pub struct Versioned<T> {
    /// The value.
    pub value: T,
    /// The version; every commit increments it.
    pub version: u64,
}

#[cfg(test)]
mod tests {
    use aptix_model::wire::{ContentPart, InputMessage};

    use super::*;

    fn message(role: Role, text: &str) -> InputItem {
        InputItem::Message(InputMessage::new(role, vec![ContentPart::input_text(text)]))
    }

    fn record(replaced: Vec<InputItem>, replacement: Vec<InputItem>) -> CompactionRecord {
        CompactionRecord {
            turn_id: "t".into(),
            at_unix_ms: 0,
            reason: CompactionReason::Threshold,
            method: CompactionMethod::Summary,
            tokens_before: 0,
            tokens_after: 0,
            kept_items: 0,
            replaced,
            replacement,
        }
    }

    #[test]
    fn a_retry_has_its_requests_digest_whatever_its_spelling_or_stream_and_another_request_not() {
        let digest = |body: &str| {
            request_digest(&AgentExecuteRequest::from_json_slice(body.as_bytes()).unwrap()).unwrap()
        };
        let asked = digest(r#"{"sessionId": "s", "turnId": "t", "instruction": "Why?"}"#);
        assert!(asked.starts_with(DIGEST_RECIPE), "{asked}");
        for retry in [
            r#"{"instruction": "Why?", "turnId": "t", "sessionId": "s"}"#,
            r#"{"SessionId": "s", "TurnId": "t", "Instruction": "Why?", "stream": true}"#,
            r#"{"sessionId": "s", "turnId": "t", "instruction": "Why?", "hints": null}"#,
        ] {
            assert_eq!(digest(retry), asked, "{retry}");
        }
        for other in [
            r#"{"sessionId": "s", "turnId": "t", "instruction": "Why not?"}"#,
            r#"{"sessionId": "s", "turnId": "t", "instruction": "Why?", "hints": {"language": "rust"}}"#,
            r#"{"sessionId": "s2", "turnId": "t", "instruction": "Why?"}"#,
        ] {
            assert_ne!(digest(other), asked, "{other}");
        }
        assert!(is_reused(
            Some(&asked),
            Some(&digest(
                r#"{"sessionId": "s", "turnId": "t", "instruction": "No"}"#
            ))
        ));
        assert!(!is_reused(Some(&asked), Some(&asked)));
        // No digest, or one of another recipe, is no evidence.
        assert!(!is_reused(None, Some(&asked)));
        assert!(!is_reused(Some("v0:abc"), Some(&asked)));
    }

    #[test]
    fn the_last_instruction_is_the_last_thing_the_user_asked_not_a_tool_round() {
        let mut state = SessionState::new("s", "QA", ModelSettings::default());
        assert_eq!(state.last_instruction(), None);
        state.history = vec![
            message(Role::System, "rules"),
            message(Role::User, "[MODE: QA]\n\n[INSTRUCTION]\nWhere is main?"),
            message(Role::Assistant, "In src/main.rs."),
            message(Role::User, "[MODE: QA]\n\n[INSTRUCTION]\nAnd the tests?"),
            message(Role::Assistant, "Let me look."),
            // A tool continuation's message: results, no instruction.
            InputItem::Message(InputMessage::new(
                Role::User,
                vec![
                    ContentPart::input_text("[MODE: QA]\n\n[INSTRUCTION]\n"),
                    ContentPart::input_text("[TOOL_RESULTS]\n..."),
                ],
            )),
        ];
        assert_eq!(state.last_instruction(), Some("And the tests?"));
        assert_eq!(state.first_instruction(), Some("Where is main?"));
    }

    #[test]
    fn the_conversation_undoes_every_compaction_latest_first() {
        let system = message(Role::System, "rules");
        let (a, b, c, d) = (
            message(Role::User, "a"),
            message(Role::Assistant, "b"),
            message(Role::User, "c"),
            message(Role::Assistant, "d"),
        );
        let (first, second) = (message(Role::User, "note 1"), message(Role::User, "note 2"));
        let mut state = SessionState::new("s", "QA", ModelSettings::default());
        // [system, a, b, c, d] -> [system, note 1, c, d] -> [system, note 2, d]
        state.history = vec![system.clone(), second.clone(), d.clone()];
        state.compactions = vec![
            record(vec![a.clone(), b.clone()], vec![first.clone()]),
            record(vec![first, c.clone()], vec![second]),
        ];
        assert_eq!(state.conversation(), vec![system, a, b, c, d.clone()]);

        // A history that no longer holds the replacement where it was put is shown as
        // it is rather than rebuilt wrongly.
        state.history = vec![d.clone()];
        assert_eq!(state.conversation(), vec![d]);
    }
}

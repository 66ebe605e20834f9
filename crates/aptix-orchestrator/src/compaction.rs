//! Long sessions: the context budget and compaction.
//!
//! Before each model call the request's size is estimated: the last reply's
//! `input_tokens + output_tokens` (what the conversation held then) plus the o200k
//! count of every item added since, or the whole body counted when no reply is known.
//! Above `compact_threshold` of the context window the session is compacted first, and
//! a `context_length_exceeded` answer compacts once and retries once (`turn.rs`).
//!
//! Compacting replaces the older part of the history and keeps the most recent items
//! verbatim, cut where [`safe_split`] allows (never between a call and its output, nor
//! after a reasoning item). The older part becomes the provider's compacted items
//! (`/responses/compact`, when [`Capabilities::compact_endpoint`] says it has one) or
//! a handover note written by one ordinary model call. The leading system messages stay
//! first. The request then replays the new history without `previous_response_id`: for
//! a stateful provider the chain starts again from the compacted items, and the reply
//! starts the new chain.
//!
//! [`Capabilities::compact_endpoint`]: aptix_client::Capabilities::compact_endpoint

use std::sync::atomic::Ordering;
use std::time::{SystemTime, UNIX_EPOCH};

use aptix_mapping::{TurnContext, map_response};
use aptix_model::contract::{AgentExecuteResponse, LlmUsage};
use aptix_model::wire::{
    CompactRequest, ContentPart, CreateResponseRequest, FunctionOutput, Input, InputItem,
    InputMessage, MessageContent, Role, Tool,
};
use aptix_rag::TokenCounter;
use aptix_request::{normalize_history, safe_split};
use serde::Serialize;

use crate::OrchestratorError;
use crate::json_len::json_length;
use crate::orchestrator::Orchestrator;
use crate::session::{
    CompactionMethod, CompactionReason, CompactionRecord, ContextUsage, SessionState,
    is_system_message,
};

/// The share of the context window kept verbatim after a compaction (the most recent
/// items); the rest of the history is summarised.
const KEEP_RECENT_SHARE: f64 = 0.25;

/// The longest text of one item in the transcript a summary is written from; longer
/// texts keep their start and end.
const TRANSCRIPT_ITEM_CHARS: usize = 4_000;

/// Error codes with which providers say a request is longer than the model's context:
/// OpenAI's, and llama.cpp's `llama-server` error type.
const OVERFLOW_CODES: &[&str] = &["context_length_exceeded", "exceed_context_size_error"];

/// The instructions of the summary call.
const SUMMARY_PROMPT: &str = "You are compacting a long coding session so that it can go on within the model's context window. Write a handover note for the assistant who continues it: the user's goals and constraints, decisions made and why, files and code touched (exact paths, names and commands), tool results that still matter, open questions and the next steps. Be specific and complete but brief; do not address the user; answer with the note only.";

/// What begins the handover note in the history.
const HANDOVER_HEADING: &str =
    "[HANDOVER NOTE] The earlier part of this conversation was compacted. Summary of it:";

/// A request's body and how many of its leading input items replay the history.
pub(crate) struct Body {
    pub(crate) request: CreateResponseRequest,
    /// Leading input items that are the (normalised) history; the rest are new.
    pub(crate) replayed: usize,
}

/// The call ids the tool outputs among `items` answer: the new items of a request,
/// which follow the history they are normalised with.
pub(crate) fn answered_calls(items: &[InputItem]) -> Vec<&str> {
    items
        .iter()
        .filter_map(|item| match item {
            InputItem::FunctionCallOutput(output) => Some(output.call_id.as_str()),
            _ => None,
        })
        .collect()
}

/// Whether a failed call's envelope says the context was too long.
pub(crate) fn is_context_overflow(envelope: &AgentExecuteResponse) -> bool {
    envelope
        .error_code
        .as_deref()
        .is_some_and(|code| OVERFLOW_CODES.contains(&code))
}

/// The failed envelope of a request still too long, saying so.
pub(crate) fn still_too_long(
    mut envelope: AgentExecuteResponse,
    why: &str,
) -> AgentExecuteResponse {
    let message = envelope.error_message.take().unwrap_or_default();
    envelope.error_message = Some(format!(
        "the context is too long for the model {why}: {message}"
    ));
    envelope
}

/// How every compaction [`notice`] begins.
const COMPACTED: &str = "the session was compacted: ";

/// What a failed turn says instead of its compaction [`notice`]s.
const NOT_KEPT: &str = "the session was compacted for this turn, but the turn failed: the compaction was not kept, and the session is as it was before the turn";

/// The notice of a compaction, for the envelope's warnings and the stream's
/// `Compacted` delta.
pub(crate) fn notice(record: &CompactionRecord, window: u64) -> String {
    let why = match record.reason {
        CompactionReason::Threshold => "the next request would have been",
        CompactionReason::Overflow => "the provider said the context was too long at",
    };
    let how = match record.method {
        CompactionMethod::Endpoint => "the provider's compaction",
        CompactionMethod::Summary => "a summary written by the model",
    };
    format!(
        "{COMPACTED}{why} about {} tokens of a {window}-token context window; {} older item(s) were replaced by {how}, {} recent item(s) kept, about {} tokens now",
        record.tokens_before,
        record.replaced.len(),
        record.kept_items,
        record.tokens_after
    )
}

/// The warnings of a turn that failed. Nothing of it is stored, its compaction included:
/// a notice that the session was compacted would be wrong, and gives way to one saying
/// the compaction was not kept (a streaming caller was told of it as it happened).
pub(crate) fn unkept_compactions(warnings: &mut Vec<String>) {
    let mut said = false;
    warnings.retain_mut(|warning| {
        if !warning.starts_with(COMPACTED) {
            return true;
        }
        if said {
            return false;
        }
        said = true;
        NOT_KEPT.clone_into(warning);
        true
    });
}

/// The context window an overflow error's message names, as servers word it:
/// OpenAI's "maximum context length is 128000 tokens", llama.cpp's "available context
/// size (8192 tokens)", "exceeds the context window of this model (9947 > 8192)" (the
/// number after `>`). `None` when it names none (or only a number too small to be a
/// window). A number that is the request's size instead is still an upper bound of the
/// window, the request having overflowed it.
pub(crate) fn window_in_message(message: &str) -> Option<u64> {
    const ANCHORS: &[&str] = &[
        "maximum context length is",
        "context window of this model",
        "available context size",
        "context length of",
        "context window of",
        "context size of",
    ];
    let lower = message.to_ascii_lowercase();
    ANCHORS.iter().find_map(|anchor| {
        let after = lower.get(lower.find(anchor)? + anchor.len()..)?;
        let clause = after.split(['.', ';', ',']).next().unwrap_or_default();
        // "(9947 > 8192)": the limit is what the size was compared with.
        let clause = clause.rsplit_once('>').map_or(clause, |(_, limit)| limit);
        let digits: String = clause
            .chars()
            .skip_while(|c| !c.is_ascii_digit())
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<u64>().ok().filter(|window| *window >= 256)
    })
}

impl Orchestrator {
    /// The context window of the session's model: the configured (or known) one, or
    /// the smaller one an overflow of this model showed this process (a window
    /// configured too high otherwise cost a failed call before every compaction).
    pub(crate) fn context_window(&self, state: &SessionState) -> u64 {
        let configured = self.config.context_window(&state.model.model);
        let learned = self
            .learned_windows
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&state.model.model)
            .copied();
        learned.map_or(configured, |learned| learned.min(configured))
    }

    /// Keeps what an overflow error says of the model's window, when it says less than
    /// what is assumed.
    pub(crate) fn learn_window(&self, state: &SessionState, failed: &AgentExecuteResponse) {
        let Some(window) = failed.error_message.as_deref().and_then(window_in_message) else {
            return;
        };
        if window < self.context_window(state) {
            tracing::info!(
                model = %state.model.model,
                window,
                "the provider's overflow names a smaller context window than assumed; compacting against it from now on"
            );
            self.learned_windows
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert(state.model.model.clone(), window);
        }
    }

    /// The token count past which the session is compacted before a request.
    pub(crate) fn compact_at(&self, state: &SessionState) -> u64 {
        // Exact enough: windows are far below 2^53.
        (self.context_window(state) as f64 * self.config.compact_threshold) as u64
    }

    /// The tokens `body` will carry: the last reply's count plus what was added since,
    /// or the whole body when no reply is known.
    pub(crate) fn estimate(
        &self,
        state: &SessionState,
        body: &Body,
    ) -> Result<u64, OrchestratorError> {
        let counter = TokenCounter::o200k().map_err(OrchestratorError::Context)?;
        Ok(measure(state, body, &|text| count(&counter, text)))
    }

    /// An upper bound of [`estimate`](Self::estimate) that tokenizes nothing: an o200k
    /// token covers at least one byte, so a text has at most as many tokens as bytes.
    /// A turn far below the threshold (nearly every turn) is cleared with this alone.
    pub(crate) fn estimate_bound(&self, state: &SessionState, body: &Body) -> u64 {
        measure_with(
            state,
            body,
            &|text| u64::try_from(text.len()).unwrap_or(u64::MAX),
            &|json| json_length(&json),
        )
    }

    /// Compacts the session for `body`: the history is replaced (older items summarised,
    /// recent ones kept), the record pushed, and `body` rebuilt to replay the new
    /// history followed by its new items. `Err` says why nothing was compacted; the
    /// session and body are then unchanged. The compaction call's usage is added to
    /// `usage`.
    pub(crate) async fn compact(
        &self,
        state: &mut SessionState,
        body: &mut Body,
        turn_id: &str,
        reason: CompactionReason,
        usage: &mut LlmUsage,
    ) -> Result<CompactionRecord, String> {
        let tokens_before = self.estimate(state, body).map_err(|e| e.to_string())?;
        let counter = TokenCounter::o200k().map_err(|e| e.to_string())?;
        let items = body.request.input.items();
        let new_items: Vec<InputItem> = if body.request.previous_response_id.is_some() {
            items.to_vec()
        } else {
            items.get(body.replayed..).unwrap_or_default().to_vec()
        };
        let answered = answered_calls(&new_items);
        let (history, _) = normalize_history(state.history.clone(), &answered);
        let lead = history
            .iter()
            .take_while(|item| is_system_message(item))
            .count();
        // Keep the most recent items that fit the share, cut where the rules allow. A
        // request the provider found too long shows its real window is below that
        // request's size, whatever the configured one says.
        let window = match reason {
            CompactionReason::Threshold => self.context_window(state),
            CompactionReason::Overflow => self.context_window(state).min(tokens_before),
        };
        let keep_budget = (window as f64 * KEEP_RECENT_SHARE) as u64;
        let mut kept_tokens = 0u64;
        let mut wanted = history.len();
        while wanted > lead {
            let next = count_json(&|text| count(&counter, text), &history[wanted - 1]);
            if kept_tokens.saturating_add(next) > keep_budget {
                break;
            }
            kept_tokens += next;
            wanted -= 1;
        }
        // The whole conversation fits the share: what makes the request long is this
        // turn's own input (a large attachment). Compacting the older exchanges may still
        // make it fit; the latest one stays as it was (compacting everything kept no
        // recent item at all, against the rule above).
        let all_fit = wanted == lead;
        let mut cut = if all_fit {
            let latest = history
                .iter()
                .rposition(|item| {
                    // Where the user's latest turn began: its instruction (the message
                    // of a tool round's results says none).
                    matches!(item, InputItem::Message(m) | InputItem::EasyMessage(m)
                        if aptix_request::instruction_of(m).is_some())
                })
                .unwrap_or(lead);
            safe_split(&history, latest)
        } else {
            safe_split(&history, wanted)
        };
        if cut <= lead && !all_fit {
            // The recent items alone are over the share: keep only what must stay.
            cut = safe_split(&history, history.len());
        }
        if cut <= lead {
            return Err(if all_fit {
                "the conversation is one exchange, short enough to keep whole: what makes the request long is this turn's own input".into()
            } else {
                "there is no older part of the conversation left to compact".into()
            });
        }
        let head = &history[lead..cut];
        let by_endpoint = if self.provider.capabilities().compact_endpoint
            && !self.compact_endpoint_missing.load(Ordering::Relaxed)
        {
            self.compact_by_endpoint(state, &history[..cut], usage)
                .await
        } else {
            None
        };
        let (method, replacement) = if let Some(items) = by_endpoint {
            (CompactionMethod::Endpoint, items)
        } else {
            let note = self.summarise(state, head, turn_id, usage).await?;
            let message = InputMessage::new(
                Role::User,
                vec![ContentPart::input_text(format!(
                    "{HANDOVER_HEADING}\n\n{note}"
                ))],
            );
            (CompactionMethod::Summary, vec![InputItem::Message(message)])
        };
        let replaced = head.to_vec();
        let kept_items = history.len() - cut;
        // An overflow's compaction that does not make the request smaller is undone.
        let before = (reason == CompactionReason::Overflow).then(|| {
            (
                state.history.clone(),
                state.last_response_id.clone(),
                state.context,
                body.request.input.clone(),
                body.request.previous_response_id.clone(),
                body.replayed,
            )
        });
        let mut compacted = Vec::with_capacity(lead + replacement.len() + kept_items);
        compacted.extend_from_slice(&history[..lead]);
        compacted.extend(replacement.iter().cloned());
        compacted.extend_from_slice(&history[cut..]);
        let (compacted, _) = normalize_history(compacted, &answered);
        let replayed = compacted.len();
        let mut input = compacted.clone();
        input.extend(new_items);
        body.request.input = Input::Items(input);
        body.request.previous_response_id = None;
        body.replayed = replayed;
        state.history = compacted;
        // A stateful provider's chain starts again from the compacted history.
        state.last_response_id = None;
        state.context = None;
        // The code earlier turns were sent may be summarised away: sent again when
        // retrieved again.
        let context_sent = std::mem::take(&mut state.context_sent);
        let tokens_after = self.estimate(state, body).map_err(|e| e.to_string())?;
        if let Some(before) = before
            && tokens_after >= tokens_before
        {
            state.context_sent = context_sent;
            // Sending it would overflow again, on this turn and every later one.
            (
                state.history,
                state.last_response_id,
                state.context,
                body.request.input,
                body.request.previous_response_id,
                body.replayed,
            ) = before;
            return Err(format!(
                "compacting would not make the request smaller (about {tokens_before} tokens before, {tokens_after} after): what must stay is too long for the model"
            ));
        }
        let record = CompactionRecord {
            turn_id: turn_id.to_owned(),
            at_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |since| {
                    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
                }),
            reason,
            method,
            tokens_before,
            tokens_after,
            replaced,
            replacement,
            kept_items,
        };
        state.compactions.push(record.clone());
        Ok(record)
    }

    /// The provider's compaction of `items`, or `None` (logged) when it failed: the
    /// handover note written by the model replaces it then. A provider that has no
    /// compaction route at all (`404`, `405`, `501`: a server that speaks
    /// `/v1/responses` but not `/responses/compact`) is not asked again.
    async fn compact_by_endpoint(
        &self,
        state: &SessionState,
        items: &[InputItem],
        usage: &mut LlmUsage,
    ) -> Option<Vec<InputItem>> {
        let reply = match self
            .provider
            .compact(&CompactRequest {
                model: state.model.model.clone(),
                input: Some(Input::Items(items.to_vec())),
                ..CompactRequest::default()
            })
            .await
        {
            Ok(reply) => reply,
            Err(error) => {
                if let aptix_client::ClientError::Status {
                    status: 404 | 405 | 501,
                    ..
                } = error
                {
                    self.compact_endpoint_missing.store(true, Ordering::Relaxed);
                }
                // `info`: the fallback is the turn's own business (its compaction notice
                // says how the session was compacted); a server without the route is the
                // common case, not something to warn every user of.
                tracing::info!(%error, "the provider's compaction failed; a summary written by the model is used instead");
                return None;
            }
        };
        if let Some(spent) = &reply.usage {
            usage.add(&LlmUsage::from(spent));
        }
        let items: Vec<InputItem> = reply
            .output
            .into_iter()
            .filter(|item| !is_system_message(item))
            .collect();
        if items.is_empty() {
            tracing::warn!(
                "the provider's compaction returned no items; a summary written by the model is used instead"
            );
            return None;
        }
        Some(items)
    }

    /// One model call that writes the handover note for `head`.
    async fn summarise(
        &self,
        state: &SessionState,
        head: &[InputItem],
        turn_id: &str,
        usage: &mut LlmUsage,
    ) -> Result<String, String> {
        let request = CreateResponseRequest {
            model: state.model.model.clone(),
            input: Input::Items(vec![
                InputItem::Message(InputMessage::new(
                    Role::System,
                    vec![ContentPart::input_text(SUMMARY_PROMPT)],
                )),
                InputItem::Message(InputMessage::new(
                    Role::User,
                    vec![ContentPart::input_text(transcript(head))],
                )),
            ]),
            max_output_tokens: state.model.max_output_tokens,
            ..CreateResponseRequest::default()
        };
        let reply = self
            .provider
            .create(&request)
            .await
            .map_err(|error| format!("the summary call failed: {error}"))?;
        let context = TurnContext::new(state.session_id.clone(), turn_id.to_owned());
        let envelope = map_response(&reply.response, reply.raw_json, &context).envelope;
        usage.add(&envelope.usage);
        match envelope.text {
            Some(text) if !text.trim().is_empty() && envelope.error_code.is_none() => Ok(text),
            _ => Err(format!(
                "the summary call wrote no note{}",
                envelope
                    .error_message
                    .map(|message| format!(": {message}"))
                    .unwrap_or_default()
            )),
        }
    }
}

/// Records the size of the context after a reply: `input_tokens + output_tokens`
/// covering the history as it now is. Unknown when the reply has no usage.
pub(crate) fn remember_usage(state: &mut SessionState, usage: Option<&aptix_model::wire::Usage>) {
    state.context = usage
        .filter(|usage| usage.input_tokens > 0)
        .map(|usage| ContextUsage {
            tokens: usage.input_tokens.saturating_add(usage.output_tokens),
            covered_items: state.history.len(),
        });
}

fn count(counter: &TokenCounter, text: &str) -> u64 {
    u64::try_from(counter.count(text)).unwrap_or(u64::MAX)
}

/// An item's tokens: its JSON counted as text (a few tokens over what the model sees
/// for the field names, which errs on the safe side).
/// The tokens `body` will carry, each text measured by `tokens`: the last reply's count
/// plus what was added since, or the whole body when no reply is known.
fn measure(state: &SessionState, body: &Body, tokens: &dyn Fn(&str) -> u64) -> u64 {
    measure_with(state, body, tokens, &|json| count_json(tokens, &json))
}

/// What the request carries as JSON: an input item, or the tool definitions.
#[derive(Serialize)]
#[serde(untagged)]
enum Json<'a> {
    Item(&'a InputItem),
    Tools(&'a [Tool]),
}

/// [`measure`] with texts measured by `tokens` and JSON (items, tools) by `json_tokens`.
fn measure_with(
    state: &SessionState,
    body: &Body,
    tokens: &dyn Fn(&str) -> u64,
    json_tokens: &dyn Fn(Json<'_>) -> u64,
) -> u64 {
    let request = &body.request;
    let overhead = || {
        // What a request carries besides its input: instructions and tool definitions.
        let tools = request
            .tools
            .as_deref()
            .map_or(0, |tools| json_tokens(Json::Tools(tools)));
        let instructions = request.instructions.as_deref().map_or(0, tokens);
        tools.saturating_add(instructions)
    };
    let items = match &request.input {
        Input::Text(text) => return tokens(text).saturating_add(overhead()),
        Input::Items(items) => items,
    };
    let (base, skip) = match state.context {
        // Chained: the server holds what the last reply counted; the body is new.
        Some(known) if request.previous_response_id.is_some() => (known.tokens, 0),
        // Replayed: the first `covered_items` are what the last reply counted.
        Some(known) if body.replayed > 0 => (known.tokens, known.covered_items.min(body.replayed)),
        _ => (overhead(), 0),
    };
    let added: u64 = items
        .iter()
        .skip(skip)
        .map(|item| json_tokens(Json::Item(item)))
        .sum();
    base.saturating_add(added)
}

/// The tokens of `value` as the request carries it: its JSON, counted by `tokens`.
fn count_json<T: Serialize + ?Sized>(tokens: &dyn Fn(&str) -> u64, value: &T) -> u64 {
    serde_json::to_string(value).map_or(0, |json| tokens(&json))
}

/// The older items as a plain transcript for the summary call: any provider reads it,
/// and no pairing or reasoning rule applies to it. Reasoning items (opaque) are left
/// out; long texts keep their start and end.
fn transcript(items: &[InputItem]) -> String {
    let mut out = String::from("The conversation so far:\n");
    for item in items {
        let line = match item {
            InputItem::Message(message) | InputItem::EasyMessage(message) => {
                format!(
                    "{}: {}",
                    message.role.as_str(),
                    clip(&message_text(&message.content))
                )
            }
            InputItem::FunctionCall(call) => format!(
                "assistant called tool {} (call {}) with {}",
                call.name,
                call.call_id,
                clip(&call.arguments)
            ),
            InputItem::FunctionCallOutput(output) => {
                let text = match &output.output {
                    FunctionOutput::Text(text) => text.clone(),
                    FunctionOutput::Parts(parts) => {
                        serde_json::to_string(parts).unwrap_or_default()
                    }
                };
                format!("tool result (call {}): {}", output.call_id, clip(&text))
            }
            InputItem::Reasoning(_) | InputItem::ItemReference { .. } => continue,
            InputItem::Other(raw) => format!("item: {}", clip(&raw.to_string())),
        };
        out.push('\n');
        out.push_str(&line);
    }
    out
}

fn message_text(content: &MessageContent) -> String {
    match content {
        MessageContent::Text(text) => text.clone(),
        MessageContent::Parts(parts) => parts
            .iter()
            .map(|part| match part {
                ContentPart::InputText { text } => text.clone(),
                ContentPart::OutputText(text) => text.text.clone(),
                ContentPart::Refusal(refusal) => format!("(refused) {}", refusal.refusal),
                ContentPart::InputImage(_) => "(an image)".to_owned(),
                ContentPart::InputFile(_) => "(a file)".to_owned(),
                ContentPart::Other(raw) => raw.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// `text` within [`TRANSCRIPT_ITEM_CHARS`]: its start and end around an ellipsis.
fn clip(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= TRANSCRIPT_ITEM_CHARS {
        return text.to_owned();
    }
    let half = TRANSCRIPT_ITEM_CHARS / 2;
    let start: String = text.chars().take(half).collect();
    let end: String = text.chars().skip(chars - half).collect();
    format!("{start} […{} characters left out…] {end}", chars - 2 * half)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_keep_their_start_and_end() {
        let text = format!("{}{}", "a".repeat(5_000), "b".repeat(5_000));
        let clipped = clip(&text);
        assert!(clipped.starts_with(&"a".repeat(2_000)));
        assert!(clipped.ends_with(&"b".repeat(2_000)));
        assert!(clipped.contains("6000 characters left out"));
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn an_overflow_message_names_the_window_as_servers_word_it() {
        for (message, window) in [
            (
                "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
                Some(128_000),
            ),
            (
                "the request exceeds the available context size (8192 tokens), try increasing it",
                Some(8_192),
            ),
            (
                "Your input exceeds the context window of this model (9947 > 8192). Please adjust your input and try again.",
                Some(8_192),
            ),
            ("Your input exceeds the context window of this model.", None),
            ("prompt is too long", None),
            ("maximum context length is 12 tokens", None),
        ] {
            assert_eq!(window_in_message(message), window, "{message}");
        }
    }

    #[test]
    fn a_text_never_has_more_tokens_than_bytes() {
        // What `estimate_bound` rests on: an o200k token covers at least one byte.
        let counter = TokenCounter::o200k().unwrap();
        for text in [
            "fn main() { println!(\"hello\"); }",
            "    \n\n\t\t  \r\n",
            "日本語のテキストと中文文本",
            "🦀🦀🦀 emoji 👩‍👩‍👧",
            "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"[]\"}",
            "ab\u{0}cd\u{7f}\u{80}\u{10ffff}",
        ] {
            assert!(count(&counter, text) <= text.len() as u64, "{text:?}");
        }
    }

    #[test]
    fn overflow_codes_are_recognised() {
        let mut envelope = AgentExecuteResponse::new(aptix_model::contract::Kind::Error);
        envelope.error_code = Some("context_length_exceeded".into());
        assert!(is_context_overflow(&envelope));
        envelope.error_code = Some("exceed_context_size_error".into());
        assert!(is_context_overflow(&envelope));
        envelope.error_code = Some("rate_limit_exceeded".into());
        assert!(!is_context_overflow(&envelope));
    }
}

//! [`StreamFold`], the fold itself; its rules are in the type's docs.

use aptix_model::wire::{ApiError, Response, ResponseStatus, StreamEvent};

use super::anomalies::Anomalies;
use super::decode::{Decoded, DeltaKind, DeltaParts, decode};
use super::delta::{StreamDelta, call_done, call_started};
use super::folded::{FoldedStream, differing_indexes};
use super::state::{Orphan, OutputState};
use crate::error::MappingError;
use crate::map::{finish_reason, stream_error_code};
use crate::warning::MappingWarning;
use aptix_sse::SseEvent;

/// Folds stream events into the final response.
///
/// Feed events in arrival order with [`apply`](Self::apply) (typed events) or
/// [`apply_sse`](Self::apply_sse) (SSE events as the decoder gives them: faster for
/// deltas, and keeps the final response's JSON text for `rawResponseJson`). Each call
/// returns the [`StreamDelta`] the event carried, if any. [`finish`](Self::finish) at
/// the end of the body gives the [`FoldedStream`] or says why there is none.
///
/// # Rules
///
/// - State is keyed by `output_index` (reasoning items usually come first).
/// - `output_item.added` creates the item: a function call's `name` and `call_id` come
///   from here, because `function_call_arguments.done` carries no `name` on the wire and
///   deltas carry only the item id.
/// - Deltas append; `.done` events set the full value; `output_item.done` replaces the
///   item. A delta for an index with no item starts a message there (some compatible
///   servers skip `output_item.added`); any other event the fold cannot place is an
///   orphan, counted and reported once.
/// - The terminal event (`response.completed`, `.incomplete`, `.failed`) carries the full
///   final response, and that is the result, as sent. The items built from the events
///   are kept next to it and compared with it: a difference is a warning (events were
///   lost), and when the final response has an empty `output` the built items fill it.
/// - An `error` event is recorded and passed on as [`StreamDelta::Error`], and folding
///   goes on, because OpenAI follows it with `response.failed`. A stream that ends after
///   an `error` event without a terminal event is [`MappingError::StreamFailed`]; one that
///   ends without either is [`MappingError::StreamEndedEarly`], never a success with
///   partial text.
/// - `sequence_number`s must increase. An event whose number is not above the previous
///   one (a repeat or a reordering) is skipped, so a duplicating proxy cannot double the
///   text; a terminal event is never skipped. Gaps are reported. Events after
///   the terminal event are ignored. Each kind of anomaly is one warning with a count.
/// - Unknown event types (annotations, hosted tool progress, new events) are ignored
///   without a warning, because their effect is in `output_item.done` and the final
///   response; their names are listed in [`FoldedStream::ignored_event_types`]. A payload
///   that is not JSON, or a known event of unexpected shape, is a warning.
/// - Of the start events (`response.created`, `.queued`, `.in_progress`) the fold reads
///   the response's id and model only. [`apply_sse`](Self::apply_sse) skips the rest of
///   their response unread (the terminal event carries it again, and is read whole), so
///   there a start event is of unexpected shape only when those are.
///
/// # Example
///
/// ```
/// use aptix_mapping::{StreamDelta, StreamFold};
/// use aptix_model::wire::StreamEvent;
///
/// let events = [
///     r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
///     r#"{"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}"#,
///     r#"{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi"}"#,
///     r#"{"type":"response.completed","sequence_number":3,"response":{"id":"resp_1","status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hi"}]}]}}"#,
/// ];
/// let mut fold = StreamFold::new();
/// let mut printed = String::new();
/// for data in events {
///     let event = StreamEvent::from_json(data)?;
///     if let Some(StreamDelta::TextDelta { text, .. }) = fold.apply(event) {
///         printed.push_str(&text);
///     }
/// }
/// let folded = fold.finish()?;
/// assert_eq!(printed, "Hi");
/// assert_eq!(folded.response.id, "resp_1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct StreamFold {
    output: OutputState,
    response_id: Option<String>,
    started: bool,
    terminal: Option<Terminal>,
    stream_error: Option<(ApiError, Option<u64>)>,
    events: u64,
    last_sequence_number: Option<u64>,
    anomalies: Anomalies,
    ignored_event_types: Vec<String>,
    /// The final event came but could not be decoded: its type and why. The stream has
    /// ended as far as the fold goes (sending it again would get the same bytes).
    undecodable_final: Option<(String, String)>,
}

/// The final response and, when it came as SSE text, its JSON exactly as sent.
#[derive(Debug)]
struct Terminal {
    response: Response,
    raw: Option<String>,
}

/// The `type` of an event payload whose whole does not decode, when that much reads.
fn payload_type(data: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Typed<'a> {
        #[serde(rename = "type", borrow)]
        kind: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<Typed<'_>>(data)
        .ok()
        .map(|typed| typed.kind.into_owned())
}

impl StreamFold {
    /// An empty fold, for one stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one typed event.
    pub fn apply(&mut self, event: StreamEvent) -> Option<StreamDelta> {
        self.apply_event(event, None)
    }

    /// Folds one SSE event as a connection or a saved body delivers it: its `data` is
    /// decoded here, and a terminal event's `response` text is kept for
    /// `rawResponseJson`. A payload that is not a JSON event is counted and reported as
    /// a warning; a `[DONE]` payload (sent by some compatible servers) is ignored.
    ///
    /// This is the path every stream takes, from the network (`aptix ask`, the
    /// orchestrator) or from a file (`aptix inspect`).
    pub fn apply_sse(&mut self, event: &SseEvent) -> Option<StreamDelta> {
        let data = event.data.as_str();
        // Checked only when the payload cannot be an event, to keep it off the hot path.
        if !data.starts_with('{') && matches!(data.trim(), "[DONE]" | "") {
            return None;
        }
        match decode(data) {
            Ok(Decoded::Started(started)) => {
                if !self.admit(started.sequence_number, false) {
                    return None;
                }
                let response = started.response;
                self.started(&response.id, response.model.as_deref())
            }
            Ok(Decoded::Delta {
                kind,
                sequence_number,
                parts,
            }) => {
                if !self.admit(sequence_number, false) {
                    return None;
                }
                self.delta(kind, parts)
            }
            Ok(Decoded::Event {
                event,
                raw_response,
            }) => self.apply_event(event, raw_response),
            Err(reason) => {
                let event_type = event.event_type();
                if self.terminal.is_none() && self.undecodable_final.is_none() {
                    // The SSE `event:` line names it, or (for a server that sends none)
                    // the payload's own `type`, when that much of it reads.
                    let final_type = Some(event_type)
                        .filter(|kind| StreamEvent::is_terminal_type(kind))
                        .map(str::to_owned)
                        .or_else(|| {
                            payload_type(data).filter(|kind| StreamEvent::is_terminal_type(kind))
                        });
                    if let Some(final_type) = final_type {
                        self.undecodable_final = Some((final_type, reason.clone()));
                    }
                }
                self.note_undecodable(|| format!("`{event_type}` event: {reason}"));
                None
            }
        }
    }

    /// Records an event that never reached the fold (the SSE decoder dropped it).
    pub(crate) fn note_undecodable(&mut self, reason: impl FnOnce() -> String) {
        self.events += 1;
        if self.terminal.is_some() {
            self.anomalies.after_final();
        } else {
            self.anomalies.undecodable(reason);
        }
    }

    /// Whether the terminal event has arrived; later events are ignored.
    /// A final event that came but could not be decoded ends the stream too:
    /// [`finish`](Self::finish) then says why.
    pub fn is_finished(&self) -> bool {
        self.terminal.is_some() || self.undecodable_final.is_some()
    }

    /// The response id, once `response.created` (or `.queued`, `.in_progress`) named
    /// it: what a caller resumes a background response's stream with.
    pub fn response_id(&self) -> Option<&str> {
        self.response_id.as_deref()
    }

    /// The highest `sequence_number` seen so far.
    pub fn last_sequence_number(&self) -> Option<u64> {
        self.last_sequence_number
    }

    /// The answer text streamed so far (the `output_text` of the message items, joined
    /// as the envelope joins them), for a stream given up before its final event:
    /// `None` when none came.
    pub fn partial_text(&self) -> Option<String> {
        crate::map::items::extract(&self.output.to_items()).text
    }

    /// Ends the stream.
    ///
    /// # Errors
    ///
    /// [`MappingError::StreamFailed`] when an `error` event came and no terminal event
    /// followed; [`MappingError::StreamEndedEarly`] when neither came. Either maps to an
    /// envelope with [`map_mapping_error`](crate::map_mapping_error).
    pub fn finish(self) -> Result<FoldedStream, MappingError> {
        // Read before the fold is taken apart: a stream without its final response
        // keeps what it streamed in its error.
        let partial_text = self
            .terminal
            .is_none()
            .then(|| self.partial_text())
            .flatten();
        let mut warnings = self.anomalies.into_warnings();
        let Some(Terminal { mut response, raw }) = self.terminal else {
            return Err(match self.stream_error {
                Some((error, sequence_number)) => MappingError::StreamFailed {
                    error: Box::new(error),
                    sequence_number,
                    response_id: self.response_id,
                    partial_text,
                },
                None => match self.undecodable_final {
                    Some((event_type, reason)) => MappingError::UndecodableFinalEvent {
                        event_type,
                        reason,
                        response_id: self.response_id,
                        partial_text,
                    },
                    None => MappingError::StreamEndedEarly {
                        last_sequence_number: self.last_sequence_number,
                        events: self.events,
                        response_id: self.response_id,
                        partial_text,
                    },
                },
            });
        };
        let streamed_output = self.output.to_items();
        let mut raw_response_json = raw;
        if response.output.is_empty() && !streamed_output.is_empty() {
            // A final response without its items (some compatible servers send a bare
            // one) would map to nothing; the streamed items are the next best thing.
            response.output = streamed_output.clone();
            raw_response_json = None;
            warnings.push(MappingWarning::OutputFilledFromStream {
                items: streamed_output.len(),
            });
        } else if self.events > 1 {
            // A stream of its final event alone (a server's whole reply to a streamed
            // request, read as one) streamed nothing to differ from.
            let output_indexes = differing_indexes(&self.output, &response.output);
            if !output_indexes.is_empty() {
                warnings.push(MappingWarning::StreamDiffersFromFinal { output_indexes });
            }
        }
        if let Some((error, _)) = &self.stream_error
            && response.status != Some(ResponseStatus::Failed)
        {
            warnings.push(MappingWarning::StreamErrorBeforeFinal {
                code: Some(stream_error_code(error)),
                message: error.message.clone(),
                final_status: response
                    .status
                    .as_ref()
                    .map_or("no status", ResponseStatus::as_str)
                    .to_owned(),
            });
        }
        Ok(FoldedStream {
            response,
            raw_response_json,
            streamed_output,
            stream_error: self.stream_error.map(|(error, _)| error),
            warnings,
            events: self.events,
            last_sequence_number: self.last_sequence_number,
            ignored_event_types: self.ignored_event_types,
        })
    }

    /// Counts the event and decides whether it is folded: not after the terminal event,
    /// and not when its sequence number is not above the last one, unless `always`.
    fn admit(&mut self, sequence_number: Option<u64>, always: bool) -> bool {
        self.events += 1;
        if self.terminal.is_some() {
            self.anomalies.after_final();
            return false;
        }
        let Some(number) = sequence_number else {
            return true;
        };
        match self.last_sequence_number {
            Some(last) if number <= last => {
                self.anomalies.out_of_order(last, number);
                return always;
            }
            // `number > last` here, so the subtraction cannot underflow.
            Some(last) if number - last > 1 => self.anomalies.gap(number - last - 1, last),
            _ => {}
        }
        self.last_sequence_number = Some(number);
        true
    }

    fn apply_event(&mut self, event: StreamEvent, raw: Option<String>) -> Option<StreamDelta> {
        // The final response is the result whatever its number says; anything else
        // with a stale number is a repeat.
        let always = event.terminal_response().is_some();
        if !self.admit(event.sequence_number(), always) {
            return None;
        }
        match event {
            StreamEvent::Created(event)
            | StreamEvent::InProgress(event)
            | StreamEvent::Queued(event) => {
                self.started(&event.response.id, event.response.model.as_deref())
            }
            StreamEvent::Completed(event)
            | StreamEvent::Incomplete(event)
            | StreamEvent::Failed(event) => Some(self.terminal(*event.response, raw)),
            StreamEvent::OutputItemAdded(event) => {
                let delta = call_started(event.output_index, &event.item);
                self.output.set_item(event.output_index, event.item);
                delta
            }
            StreamEvent::OutputItemDone(event) => {
                let delta = call_done(event.output_index, &event.item);
                self.output.set_item(event.output_index, event.item);
                delta
            }
            StreamEvent::ContentPartAdded(event) | StreamEvent::ContentPartDone(event) => {
                let placed = self.output.set_part(
                    event.output_index,
                    event.content_index,
                    event.item_id.as_deref(),
                    event.part,
                );
                self.placed(placed, "response.content_part", event.output_index, None)
            }
            StreamEvent::OutputTextDelta(event) => self.delta(DeltaKind::Text, event.into()),
            StreamEvent::RefusalDelta(event) => self.delta(DeltaKind::Refusal, event.into()),
            StreamEvent::FunctionCallArgumentsDelta(event) => {
                self.delta(DeltaKind::Arguments, event.into())
            }
            StreamEvent::ReasoningSummaryTextDelta(event) => {
                self.delta(DeltaKind::ReasoningSummary, event.into())
            }
            StreamEvent::OutputTextDone(event) => {
                let index = event.output_index;
                let placed = match event.value() {
                    Some(text) => self.output.set_text(
                        index,
                        event.content_index.unwrap_or(0),
                        event.item_id.as_deref(),
                        text,
                    ),
                    None => Ok(()),
                };
                self.placed(placed, "response.output_text.done", index, None)
            }
            StreamEvent::RefusalDone(event) => {
                let index = event.output_index;
                let placed = match event.value() {
                    Some(text) => self.output.refusal(
                        index,
                        event.content_index.unwrap_or(0),
                        event.item_id.as_deref(),
                        text,
                        true,
                    ),
                    None => Ok(()),
                };
                self.placed(placed, "response.refusal.done", index, None)
            }
            StreamEvent::FunctionCallArgumentsDone(event) => {
                let index = event.output_index;
                let placed = match event.value() {
                    Some(arguments) => {
                        self.output
                            .set_arguments(index, arguments, event.name.as_deref())
                    }
                    None => Ok(()),
                };
                self.placed(placed, "response.function_call_arguments.done", index, None)
            }
            StreamEvent::ReasoningSummaryPartAdded(event)
            | StreamEvent::ReasoningSummaryPartDone(event) => {
                let placed = self.output.set_summary_part(
                    event.output_index,
                    event.summary_index,
                    event.part,
                );
                self.placed(
                    placed,
                    "response.reasoning_summary_part",
                    event.output_index,
                    None,
                )
            }
            StreamEvent::ReasoningSummaryTextDone(event) => {
                let index = event.output_index;
                let placed = match event.value() {
                    Some(text) => self.output.summary_text(
                        index,
                        event.summary_index.unwrap_or(0),
                        text,
                        true,
                    ),
                    None => Ok(()),
                };
                self.placed(placed, "response.reasoning_summary_text.done", index, None)
            }
            StreamEvent::Error(event) => {
                let error = event.api_error();
                let delta = StreamDelta::Error {
                    code: stream_error_code(&error),
                    message: error.message.clone(),
                };
                // The first error is the cause; later ones are usually its echoes.
                if self.stream_error.is_none() {
                    self.stream_error = Some((error, event.sequence_number));
                }
                Some(delta)
            }
            StreamEvent::Other(raw) => {
                let event_type = raw.get("type").and_then(serde_json::Value::as_str);
                if let Some(final_type) =
                    event_type.filter(|kind| StreamEvent::is_terminal_type(kind))
                    && self.terminal.is_none()
                    && self.undecodable_final.is_none()
                {
                    // A final event of unexpected shape: why its response does not
                    // decode (the one place this is worked out, off the hot path).
                    let reason = match raw.get("response") {
                        None => "it has no `response`".to_owned(),
                        Some(response) => serde_json::from_value::<Response>(response.clone())
                            .err()
                            .map_or_else(
                                || "it is not of the expected shape".to_owned(),
                                |error| format!("its response: {error}"),
                            ),
                    };
                    self.undecodable_final = Some((final_type.to_owned(), reason));
                }
                self.other(event_type);
                None
            }
        }
    }

    /// Folds a delta of any of the four kinds and builds the delta to pass on.
    fn delta(&mut self, kind: DeltaKind, parts: DeltaParts<'_>) -> Option<StreamDelta> {
        let DeltaParts {
            output_index,
            content_index,
            summary_index,
            item_id,
            text,
        } = parts;
        let content_index = content_index.unwrap_or(0);
        let item_id = item_id.as_deref();
        // Folded all the same (its part may start with it), but passed on only with text
        // in it: a filter upstream may empty a delta it joined into the one before.
        let empty = text.is_empty();
        let folded = match kind {
            DeltaKind::Text => self
                .output
                .push_text(output_index, content_index, item_id, &text)
                .map(|()| StreamDelta::TextDelta {
                    output_index,
                    content_index,
                    text: text.into_owned(),
                }),
            DeltaKind::Refusal => self
                .output
                .refusal(output_index, content_index, item_id, &text, false)
                .map(|()| StreamDelta::RefusalDelta {
                    output_index,
                    content_index,
                    text: text.into_owned(),
                }),
            DeltaKind::Arguments => self
                .output
                .push_arguments(output_index, &text)
                .map(|call| call.call_id.clone())
                .map(|call_id| StreamDelta::ToolArgumentsDelta {
                    output_index,
                    call_id,
                    delta: text.into_owned(),
                }),
            DeltaKind::ReasoningSummary => {
                let summary_index = summary_index.unwrap_or(0);
                self.output
                    .summary_text(output_index, summary_index, &text, false)
                    .map(|()| StreamDelta::ReasoningSummaryDelta {
                        output_index,
                        summary_index,
                        text: text.into_owned(),
                    })
            }
        };
        match folded {
            Ok(_) if empty => None,
            Ok(delta) => Some(delta),
            Err(Orphan) => {
                self.anomalies.orphan(kind.event_type(), output_index);
                None
            }
        }
    }

    fn placed(
        &mut self,
        placed: Result<(), Orphan>,
        event_type: &str,
        output_index: u64,
        delta: Option<StreamDelta>,
    ) -> Option<StreamDelta> {
        match placed {
            Ok(()) => delta,
            Err(Orphan) => {
                self.anomalies.orphan(event_type, output_index);
                None
            }
        }
    }

    /// The response started (created, queued or in progress): the first such event
    /// names it.
    fn started(&mut self, id: &str, model: Option<&str>) -> Option<StreamDelta> {
        if self.started {
            return None;
        }
        self.started = true;
        self.response_id = Some(id.to_owned());
        Some(StreamDelta::Started {
            response_id: id.to_owned(),
            model: model.map(str::to_owned),
        })
    }

    fn terminal(&mut self, response: Response, raw: Option<String>) -> StreamDelta {
        let calls_tools = response
            .output
            .iter()
            .any(|item| matches!(item.type_name(), Some("function_call" | "custom_tool_call")));
        // The mapping reports this response's warnings; the delta needs only the label.
        let finish_reason = finish_reason(&response, calls_tools, &mut Vec::new());
        let delta = StreamDelta::Done {
            response_id: response.id.clone(),
            status: response
                .status
                .as_ref()
                .map(|status| status.as_str().to_owned()),
            finish_reason,
        };
        self.response_id.get_or_insert_with(|| response.id.clone());
        self.terminal = Some(Terminal { response, raw });
        delta
    }

    fn other(&mut self, event_type: Option<&str>) {
        match event_type {
            None => self
                .anomalies
                .undecodable(|| "an event without a `type`".to_owned()),
            Some(known) if StreamEvent::KNOWN_TYPES.contains(&known) => self
                .anomalies
                .undecodable(|| format!("a `{known}` event of unexpected shape")),
            Some(unknown) => {
                if !self.ignored_event_types.iter().any(|seen| seen == unknown) {
                    self.ignored_event_types.push(unknown.to_owned());
                }
            }
        }
    }
}

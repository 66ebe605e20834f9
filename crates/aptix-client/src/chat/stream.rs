//! A Chat Completions chunk stream translated into Responses stream events.
//!
//! The first chunk opens the response (`response.created`, `response.in_progress`).
//! Text deltas open the message item (`output_item.added`, `content_part.added`) and
//! become `output_text.delta`; refusal deltas likewise become `refusal.delta`; a new
//! tool call index opens a `function_call` item whose `output_item.added` carries its
//! `name` and `call_id`, and its argument fragments become
//! `function_call_arguments.delta`. At `data: [DONE]` every open item is closed in
//! output order (`.done` events with the full values, `output_item.done`) and the
//! terminal `response.completed` or `response.incomplete` carries the folded
//! `Response`, built by the same code as a whole reply.
//!
//! Items are closed at the end rather than when the next one starts, because some
//! servers interleave the fragments of parallel tool calls. A body that ends after a
//! `finish_reason` but without `[DONE]` is finished as if `[DONE]` had come; one that
//! ends before any `finish_reason` gets no terminal event, which the stream fold above
//! (`aptix-mapping`) reports as a stream cut short.

use std::collections::BTreeMap;

use aptix_model::wire::{
    ApiError, ContentPart, ContentPartEvent, ErrorEvent, ItemStatus, OutputItem, OutputItemEvent,
    Refusal, Response, ResponseEvent, ResponseStatus, StreamEvent, TextDeltaEvent, TextDoneEvent,
    Usage,
};
use serde_json::Value;

use super::reply::{
    FoldedItem, ReplyHeader, build_response, call_item, message_item, message_item_id,
    translate_usage,
};
use super::wire::ChatChunk;
use crate::error::{ClientError, json_decode_error};

/// Turns `chat.completion.chunk` data into Responses stream events, one SSE `data`
/// payload at a time. Pure: feed it the payloads in order.
#[derive(Debug, Default)]
pub struct ChatStreamTranslator {
    sequence: u64,
    started: bool,
    done: bool,
    header: ReplyHeader,
    next_output_index: u64,
    message: Option<OpenMessage>,
    /// Tool calls by their chat `index`.
    calls: BTreeMap<u64, OpenCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

#[derive(Debug)]
struct OpenMessage {
    output_index: u64,
    text: Option<Part>,
    refusal: Option<Part>,
    next_content_index: u64,
}

#[derive(Debug)]
struct Part {
    content_index: u64,
    value: String,
}

#[derive(Debug)]
struct OpenCall {
    output_index: u64,
    call_id: String,
    name: String,
    arguments: String,
}

impl ChatStreamTranslator {
    /// A translator at the start of a stream.
    pub fn new() -> ChatStreamTranslator {
        ChatStreamTranslator::default()
    }

    /// Whether the terminal event was produced.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Translates one SSE `data` payload (a chunk, or `[DONE]`). A chunk carrying an
    /// `error` object becomes the Responses API's `error` event, which the stream fold
    /// judges as it judges OpenAI's own; the translator produces nothing after it.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<StreamEvent>, ClientError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            return Ok(self.complete());
        }
        let chunk: ChatChunk = serde_json::from_str(data)
            .map_err(|error| json_decode_error("chat completion chunk", data.as_bytes(), &error))?;
        if let Some(error) = chunk.error {
            self.done = true;
            return Ok(vec![error_event(error, self.sequence)]);
        }
        let mut out = Vec::new();
        if !self.started {
            self.start(&chunk, &mut out);
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(translate_usage) {
            self.usage = Some(usage);
        }
        // Only the first choice, as for whole replies.
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            let delta = choice.delta;
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                self.text_delta(&text, false, &mut out);
            }
            if let Some(refusal) = delta.refusal.filter(|text| !text.is_empty()) {
                self.text_delta(&refusal, true, &mut out);
            }
            for call in delta.tool_calls {
                self.call_delta(call.index, call.id, call.function, &mut out);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(out)
    }

    /// The body ended. Finishes the response if a `finish_reason` arrived (a server
    /// that omits `[DONE]`); otherwise produces nothing and leaves the missing terminal
    /// event to be reported.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        if self.done || self.finish_reason.is_none() {
            return Vec::new();
        }
        self.complete()
    }

    fn next_sequence(&mut self) -> Option<u64> {
        let sequence = self.sequence;
        self.sequence += 1;
        Some(sequence)
    }

    fn start(&mut self, chunk: &ChatChunk, out: &mut Vec<StreamEvent>) {
        self.started = true;
        self.header = ReplyHeader {
            id: chunk.id.clone(),
            created: chunk.created.clone(),
            model: chunk.model.clone(),
        };
        let mut response = Response::with_id(self.header.id.clone());
        response.created_at = self.header.created.clone();
        response.model = self.header.model.clone();
        response.status = Some(ResponseStatus::InProgress);
        out.push(StreamEvent::Created(ResponseEvent {
            sequence_number: self.next_sequence(),
            response: Box::new(response.clone()),
        }));
        out.push(StreamEvent::InProgress(ResponseEvent {
            sequence_number: self.next_sequence(),
            response: Box::new(response),
        }));
    }

    fn text_delta(&mut self, delta: &str, refusal: bool, out: &mut Vec<StreamEvent>) {
        let item_id = message_item_id(&self.header.id);
        if self.message.is_none() {
            let output_index = self.take_output_index();
            let item = message_item(item_id.clone(), "", "", ItemStatus::InProgress);
            let sequence_number = self.next_sequence();
            out.push(StreamEvent::OutputItemAdded(OutputItemEvent {
                sequence_number,
                output_index,
                item: without_content(item),
            }));
            self.message = Some(OpenMessage {
                output_index,
                text: None,
                refusal: None,
                next_content_index: 0,
            });
        }
        let Some(message) = self.message.as_mut() else {
            return;
        };
        let next_content_index = message.next_content_index;
        let slot = if refusal {
            &mut message.refusal
        } else {
            &mut message.text
        };
        let opened = slot.is_none();
        let part = slot.get_or_insert_with(|| Part {
            content_index: next_content_index,
            value: String::new(),
        });
        part.value.push_str(delta);
        let content_index = part.content_index;
        let output_index = message.output_index;
        if opened {
            message.next_content_index += 1;
            let sequence_number = self.next_sequence();
            out.push(StreamEvent::ContentPartAdded(ContentPartEvent {
                sequence_number,
                item_id: Some(item_id.clone()),
                output_index,
                content_index,
                part: empty_part(refusal),
            }));
        }
        let event = TextDeltaEvent {
            sequence_number: self.next_sequence(),
            item_id: Some(item_id),
            output_index,
            content_index: Some(content_index),
            summary_index: None,
            delta: delta.to_owned(),
        };
        out.push(if refusal {
            StreamEvent::RefusalDelta(event)
        } else {
            StreamEvent::OutputTextDelta(event)
        });
    }

    fn call_delta(
        &mut self,
        index: u64,
        id: Option<String>,
        function: super::wire::ChatFunction,
        out: &mut Vec<StreamEvent>,
    ) {
        if !self.calls.contains_key(&index) {
            let output_index = self.take_output_index();
            // A server that sends no id still gets a stable, unique one.
            let call_id = id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{}_{index}", self.header.id));
            let item = call_item(&call_id, &function.name, "", ItemStatus::InProgress);
            let sequence_number = self.next_sequence();
            out.push(StreamEvent::OutputItemAdded(OutputItemEvent {
                sequence_number,
                output_index,
                item,
            }));
            self.calls.insert(
                index,
                OpenCall {
                    output_index,
                    call_id,
                    name: function.name.clone(),
                    arguments: String::new(),
                },
            );
        } else if !function.name.is_empty()
            && let Some(call) = self.calls.get_mut(&index)
            && call.name != function.name
        {
            // Servers that split the name send the rest later; the item's final form
            // (`output_item.done`, the terminal response) has all of it.
            call.name.push_str(&function.name);
        }
        if function.arguments.is_empty() {
            return;
        }
        let sequence_number = self.next_sequence();
        if let Some(call) = self.calls.get_mut(&index) {
            call.arguments.push_str(&function.arguments);
            out.push(StreamEvent::FunctionCallArgumentsDelta(TextDeltaEvent {
                sequence_number,
                item_id: Some(super::reply::call_item_id(&call.call_id)),
                output_index: call.output_index,
                content_index: None,
                summary_index: None,
                delta: function.arguments,
            }));
        }
    }

    fn take_output_index(&mut self) -> u64 {
        let index = self.next_output_index;
        self.next_output_index += 1;
        index
    }

    /// Closes every open item in output order and emits the terminal event.
    fn complete(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if !self.started {
            // `[DONE]` without a chunk: still a well-formed (empty) response.
            self.start(&ChatChunk::default(), &mut out);
        }
        self.done = true;
        let message = self.message.take();
        let calls = std::mem::take(&mut self.calls);
        let mut items: Vec<(u64, FoldedItem)> = Vec::new();
        if let Some(message) = &message {
            let value = |part: &Option<Part>| part.as_ref().map(|p| p.value.clone());
            items.push((
                message.output_index,
                FoldedItem::Message {
                    text: value(&message.text).unwrap_or_default(),
                    refusal: value(&message.refusal).unwrap_or_default(),
                },
            ));
        }
        for call in calls.into_values() {
            items.push((
                call.output_index,
                FoldedItem::Call {
                    call_id: call.call_id,
                    name: call.name,
                    arguments: call.arguments,
                },
            ));
        }
        // Output indexes were handed out 0, 1, 2, ... so after sorting, an item's
        // position in the final response is its output index.
        items.sort_by_key(|(index, _)| *index);
        let response = build_response(
            &self.header,
            items.into_iter().map(|(_, item)| item).collect(),
            self.finish_reason.as_deref(),
            self.usage.take(),
        );
        for (position, item) in response.output.iter().enumerate() {
            let output_index = u64::try_from(position).unwrap_or(u64::MAX);
            match (item, &message) {
                (OutputItem::Message(_), Some(message)) => {
                    self.close_message(message, &mut out);
                }
                (OutputItem::FunctionCall(call), _) => {
                    let sequence_number = self.next_sequence();
                    // The done events carry exactly what the terminal response carries.
                    out.push(StreamEvent::FunctionCallArgumentsDone(TextDoneEvent {
                        sequence_number,
                        item_id: call.id.clone(),
                        output_index,
                        content_index: None,
                        summary_index: None,
                        text: None,
                        refusal: None,
                        arguments: Some(call.arguments.clone()),
                        name: None,
                    }));
                }
                _ => {}
            }
            let sequence_number = self.next_sequence();
            out.push(StreamEvent::OutputItemDone(OutputItemEvent {
                sequence_number,
                output_index,
                item: item.clone(),
            }));
        }
        out.push(StreamEvent::terminal(self.next_sequence(), response));
        out
    }

    /// The `.done` events of the message's parts.
    fn close_message(&mut self, message: &OpenMessage, out: &mut Vec<StreamEvent>) {
        let item_id = message_item_id(&self.header.id);
        let mut parts: Vec<(&Part, bool)> = Vec::new();
        parts.extend(message.text.iter().map(|part| (part, false)));
        parts.extend(message.refusal.iter().map(|part| (part, true)));
        parts.sort_by_key(|(part, _)| part.content_index);
        for (part, refusal) in parts {
            let sequence_number = self.next_sequence();
            out.push(if refusal {
                StreamEvent::RefusalDone(TextDoneEvent {
                    sequence_number,
                    item_id: Some(item_id.clone()),
                    output_index: message.output_index,
                    content_index: Some(part.content_index),
                    summary_index: None,
                    text: None,
                    refusal: Some(part.value.clone()),
                    arguments: None,
                    name: None,
                })
            } else {
                StreamEvent::OutputTextDone(TextDoneEvent {
                    sequence_number,
                    item_id: Some(item_id.clone()),
                    output_index: message.output_index,
                    content_index: Some(part.content_index),
                    summary_index: None,
                    text: Some(part.value.clone()),
                    refusal: None,
                    arguments: None,
                    name: None,
                })
            });
            let sequence_number = self.next_sequence();
            out.push(StreamEvent::ContentPartDone(ContentPartEvent {
                sequence_number,
                item_id: Some(item_id.clone()),
                output_index: message.output_index,
                content_index: part.content_index,
                part: if refusal {
                    ContentPart::Refusal(Refusal {
                        refusal: part.value.clone(),
                    })
                } else {
                    ContentPart::output_text(part.value.clone())
                },
            }));
        }
    }
}

/// The message item as `output_item.added` shows it: no parts yet.
fn without_content(item: OutputItem) -> OutputItem {
    match item {
        OutputItem::Message(mut message) => {
            message.content.clear();
            OutputItem::Message(message)
        }
        other => other,
    }
}

fn empty_part(refusal: bool) -> ContentPart {
    if refusal {
        ContentPart::Refusal(Refusal {
            refusal: String::new(),
        })
    } else {
        ContentPart::output_text("")
    }
}

/// An `error` chunk as an `error` event; the object may be nested or the message alone.
fn error_event(error: Value, sequence: u64) -> StreamEvent {
    let api_error = match &error {
        Value::String(message) => ApiError {
            message: message.clone(),
            ..ApiError::default()
        },
        other => serde_json::from_value(other.clone()).unwrap_or_else(|_| ApiError {
            message: other.to_string(),
            ..ApiError::default()
        }),
    };
    StreamEvent::Error(ErrorEvent {
        sequence_number: Some(sequence),
        error: Some(api_error),
        code: None,
        message: None,
        param: None,
    })
}

//! [`EventStream`]: the server-sent events a provider's `stream` call returns.
//!
//! A provider delivers the reply's events as framed ([`SseEvent`]: the `event` name and
//! the `data` text), not interpreted: what an event means, and when a stream is over or
//! has failed, is decided in one place, `aptix-mapping`'s `StreamFold::apply_sse`, which
//! the orchestrator feeds these events to and which `aptix inspect` feeds a saved body
//! to. So the same bytes give the same envelope on every path.
//!
//! The stream's own rules are only about the connection: an `Err` item (a transport
//! failure, an idle timeout, an undecodable frame) is the last item, and the stream ends
//! when the body ends. A consumer that has what it needs (the fold saw the terminal
//! event) drops the stream, which cancels it and releases the connection.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use aptix_model::wire::{
    ContentPart, OutputItem, OutputItemEvent, Response, ResponseEvent, ResponseStatus, StreamEvent,
    TextDeltaEvent,
};
use aptix_sse::SseEvent;
use futures_core::Stream;

use crate::error::ClientError;
use crate::provider::ReplyMeta;

type BoxedEvents = Pin<Box<dyn Stream<Item = Result<SseEvent, ClientError>> + Send>>;

/// A stream of server-sent events with the metadata of the reply that carries them.
pub struct EventStream {
    meta: ReplyMeta,
    inner: BoxedEvents,
    events_received: u64,
    finished: bool,
}

impl EventStream {
    /// Wraps a source of framed events (a provider that reads `text/event-stream`).
    pub fn new<S>(meta: ReplyMeta, source: S) -> EventStream
    where
        S: Stream<Item = Result<SseEvent, ClientError>> + Send + 'static,
    {
        EventStream {
            meta,
            inner: Box::pin(source),
            events_received: 0,
            finished: false,
        }
    }

    /// A stream of typed events, each framed as the Responses API sends it (`event:`
    /// the type, `data:` the JSON), for providers that build events themselves (a
    /// bridge to another API, a fake, a provider that answers whole replies).
    pub fn from_events(
        meta: ReplyMeta,
        events: impl IntoIterator<Item = Result<StreamEvent, ClientError>>,
    ) -> EventStream {
        let frames: Vec<_> = events
            .into_iter()
            .map(|event| event.map(|event| frame(&event)))
            .collect();
        EventStream::new(meta, futures_util::stream::iter(frames))
    }

    /// A whole response as the stream that would have carried it: `response.created`;
    /// for each output item `response.output_item.added` (its text or arguments still
    /// empty), the whole text of each message part as one `response.output_text.delta`
    /// (`response.refusal.delta` for a refusal), the whole arguments of a function call
    /// as one `response.function_call_arguments.delta`, and `response.output_item.done`
    /// with the item as it is; then the terminal event its status calls for
    /// (`response.completed`, `.incomplete` or `.failed`) with the response. What a
    /// provider that can only answer whole replies streams (the default
    /// [`ResponsesProvider::stream`]): a caller that shows deltas shows the answer, and
    /// the fold sees each item built as the final response holds it.
    ///
    /// [`ResponsesProvider::stream`]: crate::ResponsesProvider::stream
    pub fn from_response(meta: ReplyMeta, response: Response) -> EventStream {
        let mut events = Vec::new();
        let mut sequence = 0u64;
        let mut next = || {
            sequence += 1;
            Some(sequence - 1)
        };
        let mut created = Response::with_id(response.id.clone());
        created.status = Some(ResponseStatus::InProgress);
        created.model = response.model.clone();
        events.push(StreamEvent::Created(ResponseEvent {
            sequence_number: next(),
            response: Box::new(created),
        }));
        for (index, item) in response.output.iter().enumerate() {
            let output_index = index as u64;
            // The item as added (its text or arguments taken out), and what was taken
            // out: each piece with its part index and the event that carries it.
            let mut started = item.clone();
            type Wrap = fn(TextDeltaEvent) -> StreamEvent;
            let mut pieces: Vec<(Option<u64>, String, Wrap)> = Vec::new();
            match &mut started {
                OutputItem::Message(message) => {
                    for (part_index, part) in message.content.iter_mut().enumerate() {
                        let (text, wrap): (&mut String, Wrap) = match part {
                            ContentPart::OutputText(text) => {
                                (&mut text.text, StreamEvent::OutputTextDelta)
                            }
                            ContentPart::Refusal(refusal) => {
                                (&mut refusal.refusal, StreamEvent::RefusalDelta)
                            }
                            _ => continue,
                        };
                        pieces.push((Some(part_index as u64), std::mem::take(text), wrap));
                    }
                }
                OutputItem::FunctionCall(call) => pieces.push((
                    None,
                    std::mem::take(&mut call.arguments),
                    StreamEvent::FunctionCallArgumentsDelta,
                )),
                _ => {}
            }
            events.push(StreamEvent::OutputItemAdded(OutputItemEvent {
                sequence_number: next(),
                output_index,
                item: started,
            }));
            for (content_index, delta, wrap) in pieces {
                if delta.is_empty() {
                    continue;
                }
                events.push(wrap(TextDeltaEvent {
                    sequence_number: next(),
                    item_id: item.id().map(str::to_owned),
                    output_index,
                    content_index,
                    summary_index: None,
                    delta,
                }));
            }
            events.push(StreamEvent::OutputItemDone(OutputItemEvent {
                sequence_number: next(),
                output_index,
                item: item.clone(),
            }));
        }
        events.push(StreamEvent::terminal(next(), response));
        EventStream::from_events(meta, events.into_iter().map(Ok))
    }

    /// The reply's metadata (status, request id, rate limits, attempts).
    pub fn meta(&self) -> &ReplyMeta {
        &self.meta
    }

    /// Events delivered so far.
    pub fn events_received(&self) -> u64 {
        self.events_received
    }

    fn finish(&mut self) {
        self.finished = true;
        // Dropping the source now releases the connection instead of waiting for the
        // caller to drop the stream.
        self.inner = Box::pin(futures_util::stream::empty());
    }
}

/// One typed event as the Responses API frames it.
pub(crate) fn frame(event: &StreamEvent) -> SseEvent {
    SseEvent {
        event: event.type_name().map(str::to_owned),
        // A `StreamEvent` is plain data (strings, numbers, maps with string keys), which
        // serde_json always serialises; the fallback is never taken.
        data: serde_json::to_string(event).unwrap_or_else(|_| "{}".to_owned()),
        ..SseEvent::default()
    }
}

impl Stream for EventStream {
    type Item = Result<SseEvent, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        let item = match this.inner.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        Poll::Ready(match item {
            Some(Ok(event)) => {
                this.events_received += 1;
                Some(Ok(event))
            }
            Some(Err(error)) => {
                this.finish();
                let request_id = this.meta.request_id.clone();
                Some(Err(error.with_request_id(request_id.as_deref())))
            }
            None => {
                this.finish();
                None
            }
        })
    }
}

impl fmt::Debug for EventStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("meta", &self.meta)
            .field("events_received", &self.events_received)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aptix_model::wire::ErrorEvent;
    use futures_util::FutureExt;

    fn created() -> StreamEvent {
        StreamEvent::Created(ResponseEvent {
            sequence_number: Some(0),
            response: Box::new(Response::with_id("resp_1")),
        })
    }

    fn drain(stream: EventStream) -> Vec<Result<SseEvent, ClientError>> {
        futures_util::stream::StreamExt::collect::<Vec<_>>(stream)
            .now_or_never()
            .expect("an iterator-backed stream is always ready")
    }

    #[test]
    fn typed_events_are_framed_as_the_api_sends_them() {
        let out = drain(EventStream::from_events(
            ReplyMeta::synthetic(),
            [Ok(created())],
        ));
        let Ok(event) = &out[0] else {
            panic!("{out:?}")
        };
        assert_eq!(event.event.as_deref(), Some("response.created"));
        assert_eq!(StreamEvent::from_json(&event.data).unwrap(), created());
    }

    #[test]
    fn an_error_event_is_passed_on_for_the_fold_to_judge() {
        let error = StreamEvent::Error(ErrorEvent {
            sequence_number: Some(2),
            error: None,
            code: Some("server_error".into()),
            message: Some("flat shape".into()),
            param: None,
        });
        let out = drain(EventStream::from_events(
            ReplyMeta::synthetic(),
            [Ok(created()), Ok(error), Ok(created())],
        ));
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(Result::is_ok));
    }

    #[test]
    fn an_err_item_is_the_last_and_carries_the_request_id() {
        let meta = ReplyMeta {
            request_id: Some("req_9".into()),
            ..ReplyMeta::synthetic()
        };
        let failure = ClientError::decode("stream event data", b"x", 0, "bad");
        let out = drain(EventStream::from_events(
            meta,
            [Ok(created()), Err(failure), Ok(created())],
        ));
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[1].as_ref().unwrap_err().request_id(),
            Some("req_9"),
            "{out:?}"
        );
    }
}

//! A streamed reply body in, wire events out: bytes flow chunk by chunk through the
//! incremental [`SseDecoder`] of `aptix-mapping` (never buffering the whole body), each
//! event's `data` goes to a [`DataHandler`] that turns it into [`StreamEvent`]s, and a
//! silence longer than the idle timeout ends the stream with a typed timeout.
//!
//! The handler is the only part that differs between the OpenAI provider (`data` is a
//! Responses event) and the Chat Completions bridge (`data` is a chunk to translate).

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use aptix_mapping::{SseDecoder, SseEvent};
use aptix_model::wire::StreamEvent;
use bytes::Bytes;
use futures_core::Stream;
use futures_util::StreamExt;

use crate::error::{ClientError, TimeoutKind, TransportPhase};
use crate::provider::ReplyMeta;
use crate::stream::EventStream;

/// Items a handler produced for one SSE event or for the end of the body.
pub(crate) type Items = Vec<Result<StreamEvent, ClientError>>;

/// Turns SSE events into wire events.
pub(crate) trait DataHandler: Send + 'static {
    /// One SSE event.
    fn on_event(&mut self, event: SseEvent, out: &mut Items);
    /// The body ended (after the decoder's last event).
    fn on_end(&mut self, out: &mut Items);
}

/// The Responses API's events: each `data` is one JSON event.
pub(crate) struct ResponsesEvents;

impl DataHandler for ResponsesEvents {
    fn on_event(&mut self, event: SseEvent, out: &mut Items) {
        let data = event.data.trim();
        // The Responses API sends no `[DONE]`; some compatible servers do anyway.
        if data.is_empty() || data == "[DONE]" {
            return;
        }
        out.push(decode_event(data));
    }

    fn on_end(&mut self, _out: &mut Items) {
        // Nothing to flush: the `EventStream` guard reports a missing terminal event.
    }
}

/// One Responses stream event from its `data`, through `StreamEvent::from_json`. Only
/// on failure is the data parsed again, to find where it stops being JSON.
pub(crate) fn decode_event(data: &str) -> Result<StreamEvent, ClientError> {
    let event = StreamEvent::from_json(data).map_err(|model_error| {
        match serde_json::from_str::<serde::de::IgnoredAny>(data) {
            Err(syntax) => {
                crate::error::json_decode_error("stream event data", data.as_bytes(), &syntax)
            }
            Ok(_) => ClientError::decode(
                "stream event data",
                data.as_bytes(),
                0,
                model_error.to_string(),
            ),
        }
    })?;
    // `from_json` keeps any JSON value as `Other`; an event is always an object, so a
    // bare number or list is garbage, not an unknown event.
    match &event {
        StreamEvent::Other(raw) if !raw.is_object() => Err(ClientError::decode(
            "stream event data",
            data.as_bytes(),
            0,
            "expected a json object",
        )),
        _ => Ok(event),
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, ClientError>> + Send>>;

struct State<H> {
    body: ByteStream,
    decoder: SseDecoder,
    handler: H,
    idle: Option<Duration>,
    pending: VecDeque<Result<StreamEvent, ClientError>>,
    ended: bool,
}

/// The events of a streamed reply.
pub(crate) fn event_stream<H: DataHandler>(
    response: reqwest::Response,
    meta: ReplyMeta,
    idle: Option<Duration>,
    handler: H,
    scrub: impl Fn(&str) -> String + Send + 'static,
) -> EventStream {
    let body = response.bytes_stream().map(move |chunk| {
        chunk.map_err(|error| ClientError::Transport {
            phase: TransportPhase::ReadBody,
            message: scrub(&error.to_string()),
            source: None,
        })
    });
    events_from_bytes(Box::pin(body), meta, idle, handler)
}

/// The events of any byte stream; the HTTP-independent part, tested on its own.
pub(crate) fn events_from_bytes<H: DataHandler>(
    body: ByteStream,
    meta: ReplyMeta,
    idle: Option<Duration>,
    handler: H,
) -> EventStream {
    let state = State {
        body,
        decoder: SseDecoder::new(),
        handler,
        idle,
        pending: VecDeque::new(),
        ended: false,
    };
    let source = futures_util::stream::unfold(state, |mut state| async move {
        loop {
            if let Some(item) = state.pending.pop_front() {
                return Some((item, state));
            }
            if state.ended {
                return None;
            }
            state.read_next().await;
        }
    });
    EventStream::new(meta, source)
}

impl<H: DataHandler> State<H> {
    /// Reads one chunk (or the end, or a failure) and queues what it produced.
    async fn read_next(&mut self) {
        let next = match self.idle {
            Some(after) => match tokio::time::timeout(after, self.body.next()).await {
                Ok(next) => next,
                Err(_) => {
                    self.fail(ClientError::Timeout {
                        kind: TimeoutKind::StreamIdle,
                        after,
                    });
                    return;
                }
            },
            None => self.body.next().await,
        };
        let mut out = Items::new();
        match next {
            Some(Ok(bytes)) => {
                self.decoder.feed(&bytes);
                while let Some(event) = self.decoder.next_event() {
                    self.dispatch(event, &mut out);
                }
            }
            Some(Err(error)) => out.push(Err(error)),
            None => {
                loop {
                    match self.decoder.finish() {
                        Ok(Some(event)) => self.dispatch(Ok(event), &mut out),
                        Ok(None) => break,
                        Err(error) => {
                            self.dispatch(Err(error), &mut out);
                            break;
                        }
                    }
                }
                self.handler.on_end(&mut out);
                self.ended = true;
            }
        }
        self.pending.extend(out);
    }

    fn dispatch(&mut self, event: Result<SseEvent, aptix_mapping::MappingError>, out: &mut Items) {
        match event {
            Ok(event) => self.handler.on_event(event, out),
            Err(error) => out.push(Err(ClientError::Decode {
                what: "server-sent event",
                position: 0,
                message: error.to_string(),
                excerpt: String::new(),
                request_id: None,
            })),
        }
    }

    fn fail(&mut self, error: ClientError) {
        self.pending.push_back(Err(error));
        self.ended = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    fn run(chunks: Vec<&'static [u8]>) -> Vec<Result<StreamEvent, ClientError>> {
        let body = futures_util::stream::iter(
            chunks
                .into_iter()
                .map(|chunk| Ok(Bytes::from_static(chunk))),
        );
        let stream = events_from_bytes(
            Box::pin(body),
            ReplyMeta::synthetic(),
            None,
            ResponsesEvents,
        );
        stream.collect::<Vec<_>>().now_or_never().unwrap()
    }

    #[test]
    fn every_fixture_stream_decodes_the_same_whatever_the_chunking() {
        for name in aptix_testkit::fixture_names(".sse") {
            let bytes: &'static [u8] = aptix_testkit::read_fixture(&name).leak();
            let whole = run(vec![bytes]);
            assert!(!whole.is_empty(), "{name}");
            let whole_text = format!("{whole:?}");
            for size in [1, 2, 3, 7, 64, 4096] {
                let split = run(bytes.chunks(size).collect());
                assert_eq!(
                    format!("{split:?}"),
                    whole_text,
                    "{name} in chunks of {size}"
                );
            }
        }
    }

    #[test]
    fn the_text_fixture_ends_with_its_completed_event() {
        let bytes: &'static [u8] = aptix_testkit::read_fixture("sse_text_deltas.sse").leak();
        let items = run(vec![bytes]);
        let last = items.last().unwrap().as_ref().unwrap();
        assert_eq!(last.type_name(), Some("response.completed"));
        assert!(items.iter().all(Result::is_ok));
    }

    #[test]
    fn bad_data_is_a_decode_error_with_its_position() {
        let items = run(vec![b"data: {\"type\": nope}\n\n"]);
        match &items[0] {
            Err(ClientError::Decode {
                position, excerpt, ..
            }) => {
                // serde_json reports the byte where it noticed: inside the bad token.
                assert!((9..13).contains(position), "{position}");
                assert!(excerpt.contains("nope"));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(items.len(), 1);
    }

    #[test]
    fn data_that_is_json_but_not_an_object_is_a_decode_error() {
        let items = run(vec![b"data: [1, 2]\n\n"]);
        assert!(matches!(
            items[0],
            Err(ClientError::Decode { position: 0, .. })
        ));
    }

    #[test]
    fn a_body_without_a_terminal_event_ends_in_an_error() {
        let items = run(vec![
            b"data: {\"type\":\"response.in_progress\",\"response\":{\"id\":\"r\"}}\n\n",
        ]);
        assert_eq!(items.len(), 2);
        assert!(matches!(
            items[1],
            Err(ClientError::StreamEnded {
                events_received: 1,
                ..
            })
        ));
    }
}

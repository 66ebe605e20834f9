//! A streamed reply body in, framed events out: bytes flow chunk by chunk through the
//! incremental [`SseDecoder`] of `aptix-sse` (never buffering the whole body), each
//! event goes to a [`DataHandler`], and a silence longer than the idle timeout ends the
//! stream with a typed timeout.
//!
//! The handler is the only part that differs between the OpenAI provider (each event is
//! a Responses event, passed on as it came) and the Chat Completions bridge (each event
//! is a chunk to translate into Responses events).

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use aptix_sse::{SseDecoder, SseError, SseEvent};
use bytes::Bytes;
use futures_core::Stream;
use futures_util::StreamExt;

use crate::error::{ClientError, TimeoutKind, TransportPhase};
use crate::provider::ReplyMeta;
use crate::split_secret::DeltaGuard;
use crate::stream::EventStream;

/// Items a handler produced for one SSE event or for the end of the body.
pub(crate) type Items = Vec<Result<SseEvent, ClientError>>;

/// Turns the body's SSE events into Responses events.
pub(crate) trait DataHandler: Send + 'static {
    /// One SSE event.
    fn on_event(&mut self, event: SseEvent, out: &mut Items);
    /// The body ended (after the decoder's last event).
    fn on_end(&mut self, out: &mut Items);
}

/// The Responses API's events, passed on as framed: the stream fold decodes them.
pub(crate) struct ResponsesEvents;

impl DataHandler for ResponsesEvents {
    fn on_event(&mut self, event: SseEvent, out: &mut Items) {
        out.push(Ok(event));
    }

    fn on_end(&mut self, _out: &mut Items) {
        // Nothing to flush: the fold reports a missing terminal event.
    }
}

type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, ClientError>> + Send>>;

/// Removes the key from a server's text: `Some(scrubbed)` when there was something to
/// remove, `None` when the text is clean.
pub(crate) type Scrub = Box<dyn Fn(&str) -> Option<String> + Send>;

struct State<H> {
    body: ByteStream,
    decoder: SseDecoder,
    handler: H,
    idle: Option<Duration>,
    pending: VecDeque<Result<SseEvent, ClientError>>,
    ended: bool,
    scrub: Scrub,
    /// Holds back deltas that may end in the start of the key (see `split_secret`).
    guard: Option<DeltaGuard>,
    /// SSE events framed so far, for the message of a connection lost mid-body.
    events: u64,
}

/// The events of a streamed reply. Every event's `data` and every transport message
/// goes through `scrub` first: a server's in-stream `error` event may echo the key as
/// well as an error body can.
pub(crate) fn event_stream<H: DataHandler>(
    response: reqwest::Response,
    meta: ReplyMeta,
    idle: Option<Duration>,
    handler: H,
    transport: std::sync::Arc<crate::transport::HttpTransport>,
) -> EventStream {
    let describe = std::sync::Arc::clone(&transport);
    let body = response.bytes_stream().map(move |chunk| {
        chunk.map_err(|error| ClientError::Transport {
            phase: TransportPhase::ReadBody,
            message: describe.describe(&error),
            source: None,
        })
    });
    let guard = transport.delta_guard();
    let scrub: Scrub = Box::new(move |text| transport.scrub_if_needed(text));
    events_from_bytes(Box::pin(body), meta, idle, handler, scrub, guard)
}

/// The events of any byte stream; the HTTP-independent part, tested on its own.
pub(crate) fn events_from_bytes<H: DataHandler>(
    body: ByteStream,
    meta: ReplyMeta,
    idle: Option<Duration>,
    handler: H,
    scrub: Scrub,
    guard: Option<DeltaGuard>,
) -> EventStream {
    let state = State {
        body,
        decoder: SseDecoder::new(),
        handler,
        idle,
        pending: VecDeque::new(),
        ended: false,
        scrub,
        guard,
        events: 0,
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
            Some(Err(error)) => out.push(Err(self.lost(error))),
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
        let out = self.guarded(out);
        self.pending.extend(out);
    }

    /// `out` through the guard, when there is one: what is held is let go before an
    /// error and at the end.
    fn guarded(&mut self, out: Items) -> Items {
        let Some(guard) = &mut self.guard else {
            return out;
        };
        let mut guarded = Items::with_capacity(out.len());
        for item in out {
            match item {
                Ok(event) => guard.pass(event, &mut guarded),
                Err(error) => {
                    guard.flush(&mut guarded);
                    guarded.push(Err(error));
                }
            }
        }
        if self.ended {
            guard.flush(&mut guarded);
        }
        guarded
    }

    /// A body that failed mid-read, said as what it is: the connection was lost after
    /// so many events (the HTTP stack's own words, such as "error decoding response
    /// body", follow in parentheses).
    fn lost(&self, error: ClientError) -> ClientError {
        match error {
            ClientError::Transport {
                phase: TransportPhase::ReadBody,
                message,
                source,
            } => ClientError::Transport {
                phase: TransportPhase::ReadBody,
                message: format!(
                    "the connection was lost after {} event(s) ({message})",
                    self.events
                ),
                source,
            },
            other => other,
        }
    }

    fn dispatch(&mut self, event: Result<SseEvent, SseError>, out: &mut Items) {
        match event {
            Ok(mut event) => {
                self.events += 1;
                if let Some(clean) = (self.scrub)(&event.data) {
                    event.data = clean;
                }
                self.handler.on_event(event, out);
            }
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
        if let Some(guard) = &mut self.guard {
            let mut held = Items::new();
            guard.flush(&mut held);
            self.pending.extend(held);
        }
        self.pending.push_back(Err(error));
        self.ended = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    fn run(chunks: Vec<&'static [u8]>) -> Vec<Result<SseEvent, ClientError>> {
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
            Box::new(|_| None),
            None,
        );
        stream.collect::<Vec<_>>().now_or_never().unwrap()
    }

    #[test]
    fn every_fixture_stream_frames_the_same_whatever_the_chunking() {
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
        assert_eq!(last.event_type(), "response.completed");
        assert!(items.iter().all(Result::is_ok));
    }

    #[test]
    fn an_event_over_the_size_limit_is_a_decode_error() {
        let body: &'static [u8] = Box::leak(
            format!(
                "data: {}\n\n",
                "x".repeat(aptix_sse::DEFAULT_MAX_EVENT_SIZE + 1)
            )
            .into_bytes()
            .into_boxed_slice(),
        );
        let items = run(vec![body]);
        assert!(
            matches!(items.last(), Some(Err(ClientError::Decode { .. }))),
            "{:?}",
            items.iter().map(Result::is_ok).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_body_that_just_stops_ends_the_stream_without_a_verdict() {
        let items = run(vec![
            b"data: {\"type\":\"response.in_progress\",\"response\":{\"id\":\"r\"}}\n\n",
        ]);
        assert_eq!(items.len(), 1);
        assert!(items[0].is_ok());
    }
}

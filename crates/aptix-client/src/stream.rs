//! [`EventStream`]: the stream of wire events a provider's `stream` call returns.
//!
//! Every provider's events pass through the same guard here, so the end-of-stream
//! rules hold whoever produced them:
//!
//! - after a terminal event (`response.completed`, `.incomplete`, `.failed`) the stream
//!   ends, even if the server keeps the connection open;
//! - an `error` event becomes an `Err(ClientError::StreamError)` item and the stream
//!   ends right there. The `response.failed` that usually follows repeats the same
//!   error, so ending at the first failure gives callers one rule: the first `Err` is
//!   the last item;
//! - a source that ends without a terminal event yields
//!   `Err(ClientError::StreamEnded)`.
//!
//! Dropping the stream cancels it and releases the connection.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use aptix_model::wire::{Response, StreamEvent};
use futures_core::Stream;
use futures_util::StreamExt;

use crate::error::ClientError;
use crate::provider::ReplyMeta;

type BoxedEvents = Pin<Box<dyn Stream<Item = Result<StreamEvent, ClientError>> + Send>>;

/// A stream of [`StreamEvent`]s with the metadata of the reply that carries them.
pub struct EventStream {
    meta: ReplyMeta,
    inner: BoxedEvents,
    events_received: u64,
    finished: bool,
}

impl EventStream {
    /// Wraps a source of events, applying the end-of-stream rules above.
    pub fn new<S>(meta: ReplyMeta, source: S) -> EventStream
    where
        S: Stream<Item = Result<StreamEvent, ClientError>> + Send + 'static,
    {
        EventStream {
            meta,
            inner: Box::pin(source),
            events_received: 0,
            finished: false,
        }
    }

    /// A stream of the given items, for fakes and tests.
    pub fn from_items(
        meta: ReplyMeta,
        items: impl IntoIterator<Item = Result<StreamEvent, ClientError>>,
    ) -> EventStream {
        let items: Vec<_> = items.into_iter().collect();
        EventStream::new(meta, futures_util::stream::iter(items))
    }

    /// The reply's metadata (status, request id, rate limits, attempts).
    pub fn meta(&self) -> &ReplyMeta {
        &self.meta
    }

    /// Events delivered so far.
    pub fn events_received(&self) -> u64 {
        self.events_received
    }

    /// Drains the stream and returns the terminal event's final response, or the
    /// error that ended it.
    pub async fn final_response(mut self) -> Result<Response, ClientError> {
        while let Some(item) = self.next().await {
            match item? {
                StreamEvent::Completed(event)
                | StreamEvent::Incomplete(event)
                | StreamEvent::Failed(event) => return Ok(*event.response),
                _ => {}
            }
        }
        // The guard turns a source without a terminal event into an `Err` item, so the
        // loop only ends here when the stream was already finished by an earlier call.
        Err(ClientError::StreamEnded {
            events_received: self.events_received,
            request_id: self.meta.request_id.clone(),
        })
    }

    fn finish(&mut self) {
        self.finished = true;
        // Dropping the source now releases the connection instead of waiting for the
        // caller to drop the stream.
        self.inner = Box::pin(futures_util::stream::empty());
    }
}

impl Stream for EventStream {
    type Item = Result<StreamEvent, ClientError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.finished {
            return Poll::Ready(None);
        }
        let item = match this.inner.as_mut().poll_next(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(item) => item,
        };
        let request_id = this.meta.request_id.clone();
        let output = match item {
            Some(Ok(StreamEvent::Error(event))) => {
                this.finish();
                Err(ClientError::StreamError {
                    error: Box::new(event.api_error()),
                    sequence_number: event.sequence_number,
                    request_id,
                })
            }
            Some(Ok(event)) => {
                this.events_received += 1;
                if event.terminal_response().is_some() {
                    this.finish();
                }
                Ok(event)
            }
            Some(Err(error)) => {
                this.finish();
                Err(error.with_request_id(request_id.as_deref()))
            }
            None => {
                this.finish();
                Err(ClientError::StreamEnded {
                    events_received: this.events_received,
                    request_id,
                })
            }
        };
        Poll::Ready(Some(output))
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
    use aptix_model::wire::{ErrorEvent, ResponseEvent};

    fn created() -> StreamEvent {
        StreamEvent::Created(ResponseEvent {
            sequence_number: Some(0),
            response: Box::new(Response::with_id("resp_1")),
        })
    }

    fn completed() -> StreamEvent {
        StreamEvent::Completed(ResponseEvent {
            sequence_number: Some(1),
            response: Box::new(Response::with_id("resp_1")),
        })
    }

    fn drain(stream: EventStream) -> Vec<Result<StreamEvent, ClientError>> {
        futures_util::stream::StreamExt::collect::<Vec<_>>(stream)
            .now_or_never()
            .expect("an iterator-backed stream is always ready")
    }

    use futures_util::FutureExt;

    #[test]
    fn ends_after_the_terminal_event() {
        let items = vec![Ok(created()), Ok(completed()), Ok(created())];
        let out = drain(EventStream::from_items(ReplyMeta::synthetic(), items));
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(Result::is_ok));
    }

    #[test]
    fn a_missing_terminal_event_is_an_error() {
        let meta = ReplyMeta {
            request_id: Some("req_9".into()),
            ..ReplyMeta::synthetic()
        };
        let out = drain(EventStream::from_items(meta, vec![Ok(created())]));
        assert_eq!(out.len(), 2);
        match &out[1] {
            Err(ClientError::StreamEnded {
                events_received,
                request_id,
            }) => {
                assert_eq!(*events_received, 1);
                assert_eq!(request_id.as_deref(), Some("req_9"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn an_error_event_is_the_last_item() {
        let error = StreamEvent::Error(ErrorEvent {
            sequence_number: Some(2),
            error: None,
            code: Some("server_error".into()),
            message: Some("flat shape".into()),
            param: None,
        });
        let items = vec![Ok(created()), Ok(error), Ok(completed())];
        let out = drain(EventStream::from_items(ReplyMeta::synthetic(), items));
        assert_eq!(out.len(), 2);
        let Err(error) = &out[1] else {
            panic!("expected an error")
        };
        assert_eq!(error.code(), Some("server_error"));
        assert!(matches!(
            error,
            ClientError::StreamError {
                sequence_number: Some(2),
                ..
            }
        ));
    }

    #[test]
    fn final_response_returns_the_terminal_object() {
        let items = vec![Ok(created()), Ok(completed())];
        let stream = EventStream::from_items(ReplyMeta::synthetic(), items);
        let response = stream.final_response().now_or_never().unwrap().unwrap();
        assert_eq!(response.id, "resp_1");
    }
}

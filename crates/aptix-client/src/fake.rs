//! [`FakeProvider`]: a scripted, recording provider for testing the layers above,
//! after tower-test's mock service. It needs no network and no runtime, so it is
//! always compiled.
//!
//! Replies are consumed in order, one per call, whichever method is called; every
//! request is recorded with the method that received it. A scripted [`Response`]
//! given to `stream` is played as the events that would have carried it
//! ([`EventStream::from_response`](crate::EventStream::from_response): created, each
//! output item added with its content as one delta and done, then the terminal event
//! its status calls for); a scripted event list given to `create` is drained to its terminal
//! response. An exhausted script is a [`ClientError::Config`] naming the fake, so a
//! test that makes one call too many fails loudly.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use aptix_model::wire::{
    CompactRequest, CompactResponse, CreateResponseRequest, Input, Response, StreamEvent,
};
use async_trait::async_trait;

use crate::error::ClientError;
use crate::provider::{Capabilities, ProviderResponse, ReplyMeta, ResponsesProvider};
use crate::stream::EventStream;

/// Which method received a recorded request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallKind {
    /// [`ResponsesProvider::create`].
    Create,
    /// [`ResponsesProvider::stream`].
    Stream,
    /// [`ResponsesProvider::compact`]: the recorded request carries the compact body's
    /// model, input, `previous_response_id` and instructions.
    Compact,
    /// [`ResponsesProvider::cancel`]: the recorded request carries the response id as
    /// its `previous_response_id`. Answered `Ok` without taking a scripted reply.
    Cancel,
}

/// One request the fake received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    /// The method called.
    pub kind: CallKind,
    /// The request as given.
    pub request: CreateResponseRequest,
}

/// One scripted reply.
#[derive(Debug)]
pub enum FakeReply {
    /// A complete response.
    Response(Box<Response>),
    /// A sequence of stream items (events or errors), ended as the source would end.
    Events(Vec<Result<StreamEvent, ClientError>>),
    /// The call fails with this error.
    Error(ClientError),
    /// A `/responses/compact` reply (for a `compact` call; any other call given it
    /// fails, as does a `compact` call given anything else).
    Compacted(Box<CompactResponse>),
}

/// A provider that answers from a script and records every request.
#[derive(Debug)]
pub struct FakeProvider {
    script: Mutex<VecDeque<FakeReply>>,
    calls: Mutex<Vec<RecordedCall>>,
    capabilities: Capabilities,
    meta: ReplyMeta,
}

impl Default for FakeProvider {
    fn default() -> FakeProvider {
        FakeProvider::new()
    }
}

impl FakeProvider {
    /// An empty script, with [`Capabilities::openai_responses`].
    pub fn new() -> FakeProvider {
        FakeProvider {
            script: Mutex::new(VecDeque::new()),
            calls: Mutex::new(Vec::new()),
            capabilities: Capabilities::openai_responses(),
            meta: ReplyMeta::synthetic(),
        }
    }

    /// The capabilities the fake reports.
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> FakeProvider {
        self.capabilities = capabilities;
        self
    }

    /// The metadata every reply carries (request id, rate limits).
    pub fn with_meta(mut self, meta: ReplyMeta) -> FakeProvider {
        self.meta = meta;
        self
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: FakeReply) -> &FakeProvider {
        lock(&self.script).push_back(reply);
        self
    }

    /// Appends a complete response.
    pub fn push_response(&self, response: Response) -> &FakeProvider {
        self.push(FakeReply::Response(Box::new(response)))
    }

    /// Appends a stream of events.
    pub fn push_events(&self, events: impl IntoIterator<Item = StreamEvent>) -> &FakeProvider {
        self.push(FakeReply::Events(events.into_iter().map(Ok).collect()))
    }

    /// Appends a `/responses/compact` reply.
    pub fn push_compacted(&self, reply: CompactResponse) -> &FakeProvider {
        self.push(FakeReply::Compacted(Box::new(reply)))
    }

    /// Appends a failure.
    pub fn push_error(&self, error: ClientError) -> &FakeProvider {
        self.push(FakeReply::Error(error))
    }

    /// Every request received so far, in order.
    pub fn calls(&self) -> Vec<RecordedCall> {
        lock(&self.calls).clone()
    }

    /// The requests received so far, without the method.
    pub fn requests(&self) -> Vec<CreateResponseRequest> {
        lock(&self.calls)
            .iter()
            .map(|call| call.request.clone())
            .collect()
    }

    /// Replies not yet consumed.
    pub fn remaining(&self) -> usize {
        lock(&self.script).len()
    }

    fn next(
        &self,
        kind: CallKind,
        request: &CreateResponseRequest,
    ) -> Result<FakeReply, ClientError> {
        lock(&self.calls).push(RecordedCall {
            kind,
            request: request.clone(),
        });
        lock(&self.script).pop_front().ok_or_else(|| {
            ClientError::config(
                "fake_provider",
                "the script has no reply left for this call",
            )
        })
    }
}

/// Locks, recovering from a panic in another test thread: the data stays usable.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[async_trait]
impl ResponsesProvider for FakeProvider {
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        let response = match self.next(CallKind::Create, request)? {
            FakeReply::Response(response) => *response,
            FakeReply::Events(items) => terminal_response(items)?,
            FakeReply::Error(error) => return Err(error),
            FakeReply::Compacted(_) => return Err(misplaced("create")),
        };
        Ok(ProviderResponse::new(response, self.meta.clone()))
    }

    async fn stream(&self, request: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        let items = match self.next(CallKind::Stream, request)? {
            FakeReply::Response(response) => {
                return Ok(EventStream::from_response(self.meta.clone(), *response));
            }
            FakeReply::Events(items) => items,
            FakeReply::Error(error) => return Err(error),
            FakeReply::Compacted(_) => return Err(misplaced("stream")),
        };
        Ok(EventStream::from_events(self.meta.clone(), items))
    }

    async fn compact(&self, request: &CompactRequest) -> Result<CompactResponse, ClientError> {
        let recorded = CreateResponseRequest {
            model: request.model.clone(),
            input: request
                .input
                .clone()
                .unwrap_or_else(|| Input::Items(Vec::new())),
            previous_response_id: request.previous_response_id.clone(),
            instructions: request.instructions.clone(),
            ..CreateResponseRequest::default()
        };
        match self.next(CallKind::Compact, &recorded)? {
            FakeReply::Compacted(reply) => Ok(*reply),
            FakeReply::Error(error) => Err(error),
            _ => Err(ClientError::config(
                "fake_provider",
                "compact was called but the script's next reply is not a compact reply",
            )),
        }
    }

    async fn cancel(&self, response_id: &str) -> Result<(), ClientError> {
        lock(&self.calls).push(RecordedCall {
            kind: CallKind::Cancel,
            request: CreateResponseRequest {
                previous_response_id: Some(response_id.to_owned()),
                ..CreateResponseRequest::default()
            },
        });
        Ok(())
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }
}

/// A compact reply scripted where `method` was called.
fn misplaced(method: &str) -> ClientError {
    ClientError::config(
        "fake_provider",
        format!("{method} was called but the script's next reply is a compact reply"),
    )
}

/// The scripted events drained as `create` would see them: the first error, or the
/// terminal event's response.
fn terminal_response(
    items: Vec<Result<StreamEvent, ClientError>>,
) -> Result<Response, ClientError> {
    for item in items {
        match item? {
            StreamEvent::Completed(event)
            | StreamEvent::Incomplete(event)
            | StreamEvent::Failed(event) => return Ok(*event.response),
            _ => {}
        }
    }
    Err(ClientError::config(
        "FakeProvider",
        "the events scripted for create have no terminal event",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aptix_model::wire::{ResponseEvent, ResponseStatus};
    use futures_util::{FutureExt, StreamExt};

    fn request(model: &str) -> CreateResponseRequest {
        CreateResponseRequest {
            model: model.into(),
            ..CreateResponseRequest::default()
        }
    }

    #[test]
    fn replies_in_order_and_records_every_request() {
        let fake = FakeProvider::new();
        fake.push_response(Response::with_id("resp_1"))
            .push_error(ClientError::config("test", "scripted failure"));
        let first = fake.create(&request("a")).now_or_never().unwrap().unwrap();
        assert_eq!(first.response.id, "resp_1");
        assert!(fake.create(&request("b")).now_or_never().unwrap().is_err());
        let exhausted = fake.stream(&request("c")).now_or_never().unwrap();
        assert!(matches!(exhausted, Err(ClientError::Config { .. })));
        let calls = fake.calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[2].kind, CallKind::Stream);
        assert_eq!(fake.requests()[1].model, "b");
        assert_eq!(fake.remaining(), 0);
    }

    #[test]
    fn a_response_streams_as_created_then_terminal() {
        let fake = FakeProvider::new();
        let mut response = Response::with_id("resp_2");
        response.status = Some(ResponseStatus::Incomplete);
        fake.push_response(response);
        let stream = fake.stream(&request("m")).now_or_never().unwrap().unwrap();
        let items: Vec<_> = stream.collect::<Vec<_>>().now_or_never().unwrap();
        let names: Vec<_> = items
            .iter()
            .map(|item| item.as_ref().unwrap().event_type().to_owned())
            .collect();
        assert_eq!(names, ["response.created", "response.incomplete"]);
    }

    #[test]
    fn events_given_to_create_fold_to_the_terminal_response() {
        let fake = FakeProvider::new();
        let terminal = StreamEvent::Completed(ResponseEvent {
            sequence_number: Some(1),
            response: Box::new(Response::with_id("resp_3")),
        });
        fake.push_events([terminal]);
        let reply = fake.create(&request("m")).now_or_never().unwrap().unwrap();
        assert_eq!(reply.response.id, "resp_3");
    }
}

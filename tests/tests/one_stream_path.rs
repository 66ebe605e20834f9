//! One streaming path: the bytes of a stream give the same envelope whether the
//! orchestrator receives them from a provider during a turn (`aptix ask`) or
//! `map_capture` reads them from a saved body (`aptix inspect`).
//!
//! The provider here frames the bytes with `aptix-sse`, as the HTTP provider does with
//! a connection's body (cut into uneven chunks, so framing across chunk boundaries is
//! exercised), and the orchestrator folds the frames with `StreamFold::apply_sse`, the
//! call `map_capture` makes. Every recorded stream is checked, and variants a user
//! meets: a stream cut before its terminal event, an `error` event with nothing after
//! it, an undecodable event in the middle, and a body that keeps going after the
//! terminal event.

use std::sync::Arc;

use aptix_client::{
    Capabilities, ClientError, EventStream, ProviderResponse, ReplyMeta, ResponsesProvider,
};
use aptix_mapping::{StreamDelta, TurnContext, map_capture};
use aptix_model::contract::{AgentExecuteRequest, AgentExecuteResponse};
use aptix_model::wire::CreateResponseRequest;
use aptix_orchestrator::{InMemorySessionStore, Orchestrator, OrchestratorConfig, StreamRecovery};
use aptix_sse::SseDecoder;
use async_trait::async_trait;
use serde_json::json;

/// Streams fixed bytes, framed in chunks of `chunk` bytes.
struct BytesProvider {
    body: Vec<u8>,
    chunk: usize,
}

#[async_trait]
impl ResponsesProvider for BytesProvider {
    async fn create(
        &self,
        _request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        Err(ClientError::config("BytesProvider", "streams only"))
    }

    async fn stream(&self, _request: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        let mut decoder = SseDecoder::new();
        let mut frames = Vec::new();
        for piece in self.body.chunks(self.chunk.max(1)) {
            decoder.feed(piece);
            while let Some(event) = decoder.next_event() {
                frames.push(
                    event.map_err(|error| ClientError::decode("sse", b"", 0, error.to_string())),
                );
            }
        }
        while let Some(event) = decoder
            .finish()
            .map_err(|error| ClientError::decode("sse", b"", 0, error.to_string()))
            .transpose()
        {
            frames.push(event);
        }
        Ok(EventStream::new(
            ReplyMeta::synthetic(),
            futures_util::stream::iter(frames),
        ))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

fn user_turn() -> AgentExecuteRequest {
    AgentExecuteRequest::from_json_value(
        &json!({"sessionId": "s1", "turnId": "t1", "instruction": "Say hello"}),
    )
    .unwrap()
}

/// The envelope of a streamed turn whose one model call answers with `body`.
async fn through_the_orchestrator(body: &[u8], chunk: usize) -> AgentExecuteResponse {
    let provider = Arc::new(BytesProvider {
        body: body.to_vec(),
        chunk,
    });
    // Recovery of cut streams off: this checks the fold's verdict on the bytes, which
    // recovery (tested in aptix-orchestrator's `stream_recovery`) only adds attempts to.
    let config = OrchestratorConfig {
        stream_recovery: StreamRecovery::never(),
        ..OrchestratorConfig::default()
    };
    let orchestrator = Orchestrator::builder(provider, Arc::new(InMemorySessionStore::new()))
        .config(config)
        .build()
        .unwrap();
    let mut sink = |_: &StreamDelta| {};
    orchestrator
        .execute_streaming(user_turn(), &mut sink)
        .await
        .unwrap()
}

/// The parts of an envelope that come from the stream's bytes (the turn adds its own
/// identities, mode and warnings about itself).
fn from_the_bytes(envelope: &AgentExecuteResponse) -> serde_json::Value {
    json!({
        "kind": envelope.kind,
        "text": envelope.text,
        "refusal": envelope.refusal,
        "finishReason": envelope.finish_reason,
        "errorCode": envelope.error_code,
        "errorMessage": envelope.error_message,
        "usage": envelope.usage,
        "responseContinuationId": envelope.response_continuation_id,
        "modelId": envelope.model_id,
        "rawResponseJson": envelope.raw_response_json,
    })
}

async fn assert_same_envelope(label: &str, body: &[u8]) {
    let captured = map_capture(body, &TurnContext::new("s1", "t1")).envelope;
    for chunk in [1, 7, 64, 1 << 20] {
        let streamed = through_the_orchestrator(body, chunk).await;
        assert_eq!(
            from_the_bytes(&streamed),
            from_the_bytes(&captured),
            "{label}, chunks of {chunk}"
        );
    }
}

/// Text-only recordings (a function call would make the orchestrator run its tool loop).
const TEXT_STREAMS: [&str; 2] = [
    "sse_text_deltas.sse",
    "sse_error_event_then_response_failed.sse",
];

#[tokio::test]
async fn recorded_streams_map_the_same_on_both_paths() {
    for name in TEXT_STREAMS {
        assert_same_envelope(name, &aptix_testkit::read_fixture(name)).await;
    }
}

#[tokio::test]
async fn broken_streams_map_the_same_on_both_paths() {
    let text = aptix_testkit::read_fixture_text("sse_text_deltas.sse");
    let cut = text.find("event: response.completed").unwrap();
    assert_same_envelope("cut before the terminal event", &text.as_bytes()[..cut]).await;

    let failed = aptix_testkit::read_fixture_text("sse_error_event_then_response_failed.sse");
    let cut = failed.find("event: response.failed").unwrap();
    assert_same_envelope(
        "an error event and nothing after it",
        &failed.as_bytes()[..cut],
    )
    .await;

    let first_end = text.find("\n\n").unwrap() + 2;
    let garbage = format!(
        "{}event: response.output_text.delta\ndata: {{not json\n\n{}",
        &text[..first_end],
        &text[first_end..]
    );
    assert_same_envelope("an undecodable event in the middle", garbage.as_bytes()).await;

    let trailing = format!(
        "{text}\nevent: response.output_text.delta\ndata: {{\"type\":\"response.output_text.delta\",\"sequence_number\":999,\"output_index\":0,\"content_index\":0,\"delta\":\"late\"}}\n\n"
    );
    assert_same_envelope("events after the terminal one", trailing.as_bytes()).await;
}

#[tokio::test]
async fn the_streamed_error_envelope_names_the_error_event() {
    let failed = aptix_testkit::read_fixture_text("sse_error_event_then_response_failed.sse");
    let cut = failed.find("event: response.failed").unwrap();
    let envelope = through_the_orchestrator(&failed.as_bytes()[..cut], 64).await;
    assert_eq!(envelope.error_code.as_deref(), Some("insufficient_quota"));
    assert!(
        envelope
            .error_message
            .as_deref()
            .is_some_and(|message| message.starts_with("You exceeded your current quota")),
        "{envelope:?}"
    );
}

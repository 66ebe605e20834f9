//! Streams against the in-repo fake server: bodies dribbled byte by byte (events split
//! mid-line and mid-character), a stall past the idle timeout, a connection dropped
//! mid-body, a body without a terminal event. Each ends in the right events or the
//! right typed error, and every test is bounded so none can hang.

use std::time::Duration;

use aptix_client::{ClientError, OpenAiProvider, ResponsesProvider, TimeoutKind, TransportPhase};
use aptix_model::wire::StreamEvent;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::json;

use crate::support::fake_server::{FakeServer, Step, dribble};
use crate::support::{config, request};

/// The bound on every test here: far above what they need, far below a hang.
const BOUND: Duration = Duration::from_secs(20);

/// A short stream whose text is mostly multi-byte UTF-8.
fn utf8_stream() -> (Vec<u8>, String) {
    let text = "Grüße, 世界 🎉";
    let response = |status: &str, output: serde_json::Value| json!({ "id": "resp_utf8", "object": "response", "status": status, "output": output });
    let message = json!([{
        "id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
        "content": [{ "type": "output_text", "text": text, "annotations": [] }]
    }]);
    let events = [
        json!({ "type": "response.created", "sequence_number": 0, "response": response("in_progress", json!([])) }),
        json!({ "type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "delta": "Grüße, " }),
        json!({ "type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "delta": "世界 🎉" }),
        json!({ "type": "response.completed", "sequence_number": 3, "response": response("completed", message) }),
    ];
    let mut body = String::new();
    for event in events {
        body.push_str(&format!(
            "event: {}\ndata: {event}\n\n",
            event["type"].as_str().unwrap()
        ));
    }
    (body.into_bytes(), text.to_owned())
}

fn provider(server: &FakeServer, idle: Duration) -> OpenAiProvider {
    let config = config(server.uri())
        .stream_idle_timeout(Some(idle))
        .build()
        .unwrap();
    OpenAiProvider::new(config).unwrap()
}

async fn collect(provider: &OpenAiProvider) -> Vec<Result<StreamEvent, ClientError>> {
    let run =
        async { crate::support::typed_events(provider.stream(&request()).await.unwrap()).await };
    tokio::time::timeout(BOUND, run)
        .await
        .expect("the stream must end on its own")
}

#[tokio::test]
async fn a_dribbled_body_gives_the_same_events_as_a_whole_one() {
    let (body, text) = utf8_stream();
    let whole_server = FakeServer::start(vec![Step::Send(Bytes::from(body.clone()))]).await;
    let whole = collect(&provider(&whole_server, Duration::from_secs(5))).await;
    assert_eq!(whole.len(), 4);
    let deltas: String = whole
        .iter()
        .filter_map(|item| match item {
            Ok(StreamEvent::OutputTextDelta(delta)) => Some(delta.delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, text);

    for size in [1, 3] {
        let server = FakeServer::start(dribble(&body, size, Duration::from_millis(1))).await;
        let dribbled = collect(&provider(&server, Duration::from_secs(5))).await;
        assert_eq!(
            format!("{dribbled:?}"),
            format!("{whole:?}"),
            "chunks of {size}"
        );
    }
}

#[tokio::test]
async fn a_recorded_fixture_dribbled_in_odd_chunks_decodes_intact() {
    let body = aptix_testkit::read_fixture("sse_function_call_arguments.sse");
    let server = FakeServer::start(dribble(&body, 97, Duration::from_millis(1))).await;
    let items = collect(&provider(&server, Duration::from_secs(5))).await;
    assert!(items.iter().all(Result::is_ok));
    assert_eq!(
        items.last().unwrap().as_ref().unwrap().type_name(),
        Some("response.completed")
    );
}

#[tokio::test]
async fn a_stall_longer_than_the_idle_timeout_is_a_typed_timeout() {
    let (body, _) = utf8_stream();
    // The first event, then silence with the connection held open.
    let first_event_end = body.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let server = FakeServer::start(vec![
        Step::Send(Bytes::copy_from_slice(&body[..first_event_end])),
        Step::Stall,
    ])
    .await;
    let items = collect(&provider(&server, Duration::from_millis(200))).await;
    assert_eq!(items.len(), 2);
    assert_eq!(
        items[0].as_ref().unwrap().type_name(),
        Some("response.created")
    );
    match &items[1] {
        Err(ClientError::Timeout { kind, after }) => {
            assert_eq!(*kind, TimeoutKind::StreamIdle);
            assert_eq!(*after, Duration::from_millis(200));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_stall_before_any_byte_is_a_typed_timeout_too() {
    let server = FakeServer::start(vec![Step::Stall]).await;
    let provider = provider(&server, Duration::from_millis(200));
    let run = async {
        match provider.stream(&request()).await {
            Ok(stream) => stream.collect::<Vec<_>>().await.pop().unwrap().unwrap_err(),
            Err(error) => error,
        }
    };
    let error = tokio::time::timeout(BOUND, run).await.unwrap();
    assert!(
        matches!(
            error,
            ClientError::Timeout {
                kind: TimeoutKind::StreamIdle,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_a_transport_error_and_not_retried() {
    let body = aptix_testkit::read_fixture("sse_text_deltas.sse");
    let server = FakeServer::start(vec![
        Step::Send(Bytes::copy_from_slice(&body[..body.len() / 2])),
        // Let the head and the first half reach the client before the drop; an
        // immediate error makes the server close before it flushed anything.
        Step::Sleep(Duration::from_millis(100)),
        Step::Drop,
    ])
    .await;
    let items = collect(&provider(&server, Duration::from_secs(5))).await;
    let (last, events) = items.split_last().unwrap();
    assert!(!events.is_empty());
    assert!(events.iter().all(Result::is_ok));
    assert!(
        matches!(
            last,
            Err(ClientError::Transport {
                phase: TransportPhase::ReadBody,
                ..
            })
        ),
        "{last:?}"
    );
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn a_body_that_ends_without_a_terminal_event_is_an_error() {
    let body = aptix_testkit::read_fixture("sse_text_deltas.sse");
    let text = String::from_utf8(body).unwrap();
    let cut = text.find("event: response.completed").unwrap();
    let events_before = text[..cut].matches("event: ").count() as u64;
    let server = FakeServer::start(vec![Step::Send(Bytes::from(text[..cut].to_owned()))]).await;
    let provider = provider(&server, Duration::from_secs(5));
    let stream = provider.stream(&request()).await.unwrap();
    assert_eq!(stream.meta().request_id.as_deref(), Some("req_fake_server"));
    let verdict = tokio::time::timeout(BOUND, crate::support::fold(stream))
        .await
        .expect("the stream must end on its own");
    match verdict {
        Err(Err(aptix_mapping::MappingError::StreamEndedEarly { events, .. })) => {
            assert_eq!(events, events_before);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn dropping_the_stream_cancels_it() {
    let (body, _) = utf8_stream();
    let first_event_end = body.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let server = FakeServer::start(vec![
        Step::Send(Bytes::copy_from_slice(&body[..first_event_end])),
        Step::Stall,
    ])
    .await;
    // No idle timeout: only dropping can end this stream.
    let config = config(server.uri())
        .stream_idle_timeout(None)
        .build()
        .unwrap();
    let provider = OpenAiProvider::new(config).unwrap();
    let run = async {
        let mut stream = provider.stream(&request()).await.unwrap();
        let first = stream.next().await.unwrap().unwrap();
        drop(stream);
        first
    };
    let first = tokio::time::timeout(BOUND, run).await.unwrap();
    assert_eq!(first.event_type(), "response.created");
}

//! The Chat Completions bridge over HTTP: the body it sends, whole and streamed
//! replies translated back, errors, and what it refuses to send.

use std::time::Duration;

use aptix_client::{ChatCompletionsProvider, ClientError, ResponsesProvider};
use aptix_model::wire::{OutputItem, StreamEvent};
use bytes::Bytes;

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::fake_server::{FakeServer, Step, dribble};
use crate::support::{TEST_KEY, config, request};

/// A chat SSE body from chunk payloads, ended with `data: [DONE]`.
pub(crate) fn chat_sse(chunks: &[Value]) -> Vec<u8> {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body.into_bytes()
}

/// A chunk of completion `chatcmpl-7`.
pub(crate) fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({
        "id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1758064478,
        "model": "llama-3.1-8b",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason }]
    })
}

fn tool_call_chunks() -> Vec<Value> {
    vec![
        chunk(json!({ "role": "assistant" }), Value::Null),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "id": "call_w1", "type": "function",
                    "function": { "name": "get_weather_at_location", "arguments": "" } }] }),
            Value::Null,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "{\"location\":" } }] }),
            Value::Null,
        ),
        chunk(
            json!({ "tool_calls": [{ "index": 0, "function": { "arguments": "\"Zürich\"}" } }] }),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        json!({ "id": "chatcmpl-7", "object": "chat.completion.chunk", "choices": [],
                "usage": { "prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42 } }),
    ]
}

#[tokio::test]
async fn create_sends_a_chat_request_and_returns_a_responses_response() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header(
            "authorization",
            format!("Bearer {TEST_KEY}").as_str(),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("x-request-id", "req_chat_1")
                .set_body_json(json!({
                    "id": "chatcmpl-7", "object": "chat.completion", "created": 1758064478,
                    "model": "llama-3.1-8b",
                    "choices": [{ "index": 0, "finish_reason": "stop",
                                  "message": { "role": "assistant", "content": "Hello there" } }],
                    "usage": { "prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7 }
                })),
        )
        .expect(1)
        .mount(&server)
        .await;
    let provider = ChatCompletionsProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    assert!(!provider.capabilities().previous_response_id);
    let reply = provider.create(&request()).await.unwrap();
    assert_eq!(reply.meta.request_id.as_deref(), Some("req_chat_1"));
    assert_eq!(reply.response.id, "chatcmpl-7");
    let OutputItem::Message(message) = &reply.response.output[0] else {
        panic!()
    };
    assert_eq!(
        serde_json::to_value(&message.content).unwrap(),
        json!([{ "type": "output_text", "text": "Hello there", "annotations": [] }])
    );
    assert_eq!(reply.response.usage.unwrap().total_tokens, 7);

    let sent: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(
        sent,
        json!({ "model": "gpt-4o-mini", "messages": [{ "role": "user", "content": "Say hello" }] })
    );
}

#[tokio::test]
async fn a_streamed_tool_call_arrives_as_responses_events() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(
            json!({ "stream": true, "stream_options": { "include_usage": true } }),
        ))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(chat_sse(&tool_call_chunks()), "text/event-stream"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let provider = ChatCompletionsProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    let events: Vec<StreamEvent> =
        crate::support::typed_events(provider.stream(&request()).await.unwrap())
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
    let StreamEvent::OutputItemAdded(added) = &events[2] else {
        panic!("{:?}", events[2])
    };
    let OutputItem::FunctionCall(call) = &added.item else {
        panic!()
    };
    assert_eq!(
        (call.name.as_str(), call.call_id.as_str()),
        ("get_weather_at_location", "call_w1")
    );
    let terminal = events.last().unwrap();
    assert_eq!(terminal.type_name(), Some("response.completed"));
    let response = terminal.terminal_response().unwrap();
    let OutputItem::FunctionCall(call) = &response.output[0] else {
        panic!()
    };
    assert_eq!(call.arguments, "{\"location\":\"Zürich\"}");
    assert_eq!(response.usage.as_ref().unwrap().input_tokens, 30);
}

#[tokio::test]
async fn a_dribbled_chat_stream_translates_like_a_whole_one() {
    let body = chat_sse(&tool_call_chunks());
    let whole_server = FakeServer::start(vec![Step::Send(Bytes::from(body.clone()))]).await;
    let dribbled_server = FakeServer::start(dribble(&body, 3, Duration::from_millis(1))).await;
    let mut runs = Vec::new();
    for server in [&whole_server, &dribbled_server] {
        let provider = ChatCompletionsProvider::new(config(server.uri()).build().unwrap()).unwrap();
        let run = async {
            crate::support::typed_events(provider.stream(&request()).await.unwrap()).await
        };
        let items = tokio::time::timeout(Duration::from_secs(20), run)
            .await
            .unwrap();
        runs.push(format!("{items:?}"));
    }
    assert_eq!(runs[0], runs[1]);
    assert!(runs[0].contains("response.completed") || runs[0].contains("Completed"));
}

#[tokio::test]
async fn a_chat_stream_cut_before_its_end_is_an_error() {
    let mut chunks = tool_call_chunks();
    chunks.truncate(3);
    let mut body = String::new();
    for chunk in &chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let server = FakeServer::start(vec![Step::Send(Bytes::from(body))]).await;
    let provider = ChatCompletionsProvider::new(config(server.uri()).build().unwrap()).unwrap();
    let run = async { crate::support::fold(provider.stream(&request()).await.unwrap()).await };
    let verdict = tokio::time::timeout(Duration::from_secs(20), run)
        .await
        .unwrap();
    assert!(
        matches!(
            verdict,
            Err(Err(aptix_mapping::MappingError::StreamEndedEarly { .. }))
        ),
        "{verdict:?}"
    );
}

#[tokio::test]
async fn chat_error_bodies_map_like_responses_ones() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(401).set_body_raw(
            aptix_testkit::read_fixture("error_401_invalid_api_key.json"),
            "application/json",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let provider = ChatCompletionsProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    let error = provider.create(&request()).await.unwrap_err();
    assert_eq!(error.status(), Some(401));
    assert_eq!(error.api_code(), Some("invalid_api_key"));
}

#[tokio::test]
async fn previous_response_id_is_refused_before_sending() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .expect(0)
        .mount(&server)
        .await;
    let provider = ChatCompletionsProvider::new(config(&server.uri()).build().unwrap()).unwrap();
    let mut continuation = request();
    continuation.previous_response_id = Some("resp_1".into());
    for error in [
        provider.create(&continuation).await.unwrap_err(),
        provider.stream(&continuation).await.unwrap_err(),
    ] {
        assert!(
            matches!(error, ClientError::Unsupported { .. }),
            "{error:?}"
        );
    }
}

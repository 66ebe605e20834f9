//! One caller, two providers: code written against `&dyn ResponsesProvider` runs
//! unchanged on the OpenAI provider (against a Responses mock) and on the Chat
//! Completions bridge (against a chat mock), with the same assertions.

use std::sync::Arc;

use aptix_client::{ChatCompletionsProvider, OpenAiProvider, ResponsesProvider};
use aptix_model::wire::{ContentPart, OutputItem, Response, StreamEvent};

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::bridge_http::{chat_sse, chunk};
use crate::support::{config, request};

const PLAIN_TEXT: &str = "I can't provide real-time updates, but you can easily check the current weather in San Francisco using a weather website or app. Typically, San Francisco has cool, foggy summers and mild winters, so it's good to be prepared for variable weather!";
const STREAMED_TEXT: &str = "Hello! How can I assist you today?";

/// What the caller learns from one whole and one streamed answer.
#[derive(Debug, PartialEq)]
struct Answers {
    whole_text: String,
    whole_input_tokens: u64,
    streamed_deltas: String,
    streamed_final_text: String,
    last_event: String,
}

fn text_of(response: &Response) -> String {
    let mut texts = Vec::new();
    for item in &response.output {
        if let OutputItem::Message(message) = item {
            for part in &message.content {
                if let ContentPart::OutputText(text) = part {
                    texts.push(text.text.clone());
                }
            }
        }
    }
    texts.join("\n\n")
}

/// The caller: knows only the trait.
async fn ask(provider: &dyn ResponsesProvider) -> Answers {
    let whole = provider.create(&request()).await.unwrap().response;
    let stream = provider.stream(&request()).await.unwrap();
    let mut deltas = String::new();
    let mut last = None;
    for event in crate::support::typed_events(stream).await {
        let event = event.unwrap();
        if let StreamEvent::OutputTextDelta(delta) = &event {
            deltas.push_str(&delta.delta);
        }
        last = Some(event);
    }
    let last = last.unwrap();
    Answers {
        whole_text: text_of(&whole),
        whole_input_tokens: whole.usage.unwrap().input_tokens,
        streamed_deltas: deltas,
        streamed_final_text: text_of(last.terminal_response().unwrap()),
        last_event: last.type_name().unwrap().to_owned(),
    }
}

async fn responses_server() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .and(body_partial_json(json!({ "stream": true })))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            aptix_testkit::read_fixture("sse_text_deltas.sse"),
            "text/event-stream",
        ))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            aptix_testkit::read_fixture("response_plain_text.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    server
}

async fn chat_server() -> MockServer {
    let server = MockServer::start().await;
    let mut chunks: Vec<Value> = [
        "Hello", "!", " How", " can", " I", " assist", " you", " today", "?",
    ]
    .iter()
    .map(|piece| chunk(json!({ "content": piece }), Value::Null))
    .collect();
    chunks.push(chunk(json!({}), json!("stop")));
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(json!({ "stream": true })))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(chat_sse(&chunks), "text/event-stream"),
        )
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-9", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{ "index": 0, "finish_reason": "stop",
                          "message": { "role": "assistant", "content": PLAIN_TEXT } }],
            "usage": { "prompt_tokens": 14, "completion_tokens": 50, "total_tokens": 64 }
        })))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn the_same_caller_runs_on_either_provider() {
    let responses = responses_server().await;
    let chat = chat_server().await;
    let providers: Vec<Arc<dyn ResponsesProvider>> = vec![
        Arc::new(OpenAiProvider::new(config(&responses.uri()).build().unwrap()).unwrap()),
        Arc::new(ChatCompletionsProvider::new(config(&chat.uri()).build().unwrap()).unwrap()),
    ];
    let expected = Answers {
        whole_text: PLAIN_TEXT.into(),
        whole_input_tokens: 14,
        streamed_deltas: STREAMED_TEXT.into(),
        streamed_final_text: STREAMED_TEXT.into(),
        last_event: "response.completed".into(),
    };
    for provider in &providers {
        assert_eq!(ask(provider.as_ref()).await, expected);
    }
}

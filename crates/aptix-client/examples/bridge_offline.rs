//! Runs offline: shows what the Chat Completions bridge sends for a Responses request
//! with a tool, how a streamed chat tool call comes back as Responses events, and the
//! same caller code driven by the recording fake provider.
//!
//! `cargo run -p aptix-client --example bridge_offline`

use aptix_client::chat::{ChatOptions, ChatStreamTranslator, to_chat_request};
use aptix_client::{FakeProvider, ResponsesProvider};
use aptix_model::wire::{CreateResponseRequest, Response};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let request: CreateResponseRequest = serde_json::from_value(json!({
        "model": "gpt-4o-mini",
        "instructions": "Answer briefly.",
        "input": [
            { "type": "message", "role": "user",
              "content": [{ "type": "input_text", "text": "Weather in Paris?" }] }
        ],
        "tools": [{ "type": "function", "name": "get_weather", "strict": true,
                    "parameters": { "type": "object", "properties": { "city": { "type": "string" } },
                                    "required": ["city"], "additionalProperties": false } }],
        "tool_choice": { "type": "function", "name": "get_weather" },
        "max_output_tokens": 200
    }))?;

    println!("Responses request translated for /v1/chat/completions:");
    let chat = to_chat_request(&request, &ChatOptions::default(), true)?;
    println!("{}\n", serde_json::to_string_pretty(&chat)?);

    println!("A streamed chat tool call, as Responses events:");
    let mut translator = ChatStreamTranslator::new();
    let chunks = [
        json!({ "id": "chatcmpl-1", "model": "m", "choices": [{ "index": 0, "delta": {
            "tool_calls": [{ "index": 0, "id": "call_1", "function": { "name": "get_weather", "arguments": "" } }] } }] }),
        json!({ "id": "chatcmpl-1", "choices": [{ "index": 0, "delta": {
            "tool_calls": [{ "index": 0, "function": { "arguments": "{\"city\":\"Paris\"}" } }] } }] }),
        json!({ "id": "chatcmpl-1", "choices": [{ "index": 0, "delta": {}, "finish_reason": "tool_calls" }] }),
    ];
    let mut events = Vec::new();
    for chunk in &chunks {
        events.extend(translator.push_data(&chunk.to_string())?);
    }
    events.extend(translator.push_data("[DONE]")?);
    for event in &events {
        println!("  {}", event.type_name().unwrap_or("?"));
    }
    if let Some(response) = events.last().and_then(|event| event.terminal_response()) {
        println!(
            "final output: {}\n",
            serde_json::to_string(&response.output)?
        );
    }

    println!("The recording fake provider:");
    let fake = FakeProvider::new();
    fake.push_response(Response::with_id("resp_fake_1"));
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let reply = runtime.block_on(fake.create(&request))?;
    println!(
        "  reply id {}, {} request(s) recorded",
        reply.response.id,
        fake.calls().len()
    );
    Ok(())
}

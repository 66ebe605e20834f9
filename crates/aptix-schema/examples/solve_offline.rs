//! Solves schema-constrained Requests against a scripted provider: a typed answer on
//! the native strategy, then an answer that breaks the schema, is re-asked with its
//! errors, and is accepted the second time, with usage summed over both attempts.
//! Runs offline: `cargo run -p aptix-schema --example solve_offline`.

use aptix_client::{Capabilities, FakeProvider};
use aptix_model::wire::Response;
use aptix_schema::SchemaRequest;
use aptix_schema::{solve, solve_value};
use serde::Deserialize;
use serde_json::json;

/// What the model should say about a city.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
// The fields are only printed, through the derived `Debug`, which the lint ignores.
#[allow(dead_code)]
struct City {
    /// Its name.
    name: String,
    /// Inhabitants, when known.
    population: Option<u64>,
}

fn reply(id: &str, output: serde_json::Value, tokens: u64) -> Result<Response, serde_json::Error> {
    serde_json::from_value(json!({
        "id": id, "status": "completed", "output": output,
        "usage": {"input_tokens": tokens, "output_tokens": tokens / 4, "total_tokens": tokens + tokens / 4}
    }))
}

fn text(text: &str) -> serde_json::Value {
    json!([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}])
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A typed answer: `City`'s schema is derived, normalised for strict mode and sent
    // as `text.format`; the answer comes back as a `City`.
    let provider = FakeProvider::new();
    provider.push_response(reply(
        "resp_1",
        text(r#"{"name": "Paris", "population": null}"#),
        40,
    )?);
    let city: City = solve(
        &provider,
        SchemaRequest::for_type::<City>("gpt-4o-mini").user("The capital of France?"),
    )
    .await?;
    println!("typed: {city:?}");
    println!(
        "sent schema: {}",
        serde_json::to_string(&provider.requests()[0].text)?
    );

    // A provider without native schemas: the tool strategy, and a re-ask.
    let provider = FakeProvider::new().with_capabilities(Capabilities {
        native_json_schema: false,
        ..Capabilities::openai_responses()
    });
    let call = |id: &str, arguments: &str| json!([{"type": "function_call", "call_id": format!("call_{id}"), "name": "generate_response", "arguments": arguments}]);
    provider
        .push_response(reply("resp_2", call("a", r#"{"answer": "four"}"#), 100)?)
        .push_response(reply("resp_3", call("b", r#"{"answer": 4}"#), 120)?);
    let request = SchemaRequest::new(
        "gpt-4o-mini",
        json!({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}),
    )
    .user("What is 2 + 2?");
    let solution = solve_value(&provider, request).await?;
    println!(
        "\nvalue {} by {} after {} attempts; usage {:?}",
        solution.value,
        solution.strategy.as_str(),
        solution.attempts,
        solution.usage
    );
    for failure in &solution.failures {
        println!("rejected {failure}: {:?}", failure.errors());
    }
    let second = serde_json::to_value(&provider.requests()[1].input)?;
    let added: Vec<_> = second.as_array().into_iter().flatten().skip(2).collect();
    println!("re-ask sent: {}", serde_json::to_string_pretty(&added)?);
    Ok(())
}

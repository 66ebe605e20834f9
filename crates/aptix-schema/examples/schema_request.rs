//! Prepares one schema-constrained Request, written as JSON the way the seed shows it
//! (a `state`, a `file` reference and a `require_fields` message among plain ones), for
//! each strategy, prints the exact `/v1/responses` body of each, then judges two
//! canned replies and prints the re-ask that follows the bad one. Runs offline:
//! `cargo run -p aptix-schema --example schema_request`.

use aptix_model::wire::Response;
use aptix_schema::{
    HandlerRegistry, SchemaError, SchemaRequest, SchemaSupport, Strategy, Verdict, prepare,
};
use serde_json::json;

fn request() -> Result<SchemaRequest, serde_json::Error> {
    serde_json::from_value(json!({
        "config": {"model": "gpt-4o-mini", "temperature": 0.2},
        "name": "review",
        "context": [
            {"role": "system", "content": "You review Rust code."},
            {"role": "user", "content": {"type": "state", "label": "pull request", "state": {"number": 42, "files": 1}}},
            {"role": "user", "content": {
                "type": "file", "path": "src/retry.rs", "lines": {"start": 10, "end": 12},
                "content": "pub fn backoff(attempt: u32) -> u64 {\n    2u64.pow(attempt)\n}"
            }},
            {"role": "user", "content": {"type": "require_fields", "fields": ["risk"]}},
            {"role": "user", "content": "Review this function."}
        ],
        "schema": {
            "type": "object",
            "properties": {
                "summary": {"type": "string", "minLength": 10},
                "risk": {"type": "string", "enum": ["low", "medium", "high"]},
                "issues": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["summary"]
        }
    }))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = HandlerRegistry::default();
    for strategy in [
        Strategy::NativeSchema,
        Strategy::ToolCall,
        Strategy::JsonObject,
        Strategy::PromptOnly,
    ] {
        let prepared = prepare(
            request()?,
            &registry,
            &SchemaSupport::full(),
            Some(strategy),
        )?;
        println!("== {} ==", strategy.as_str());
        println!("{}\n", serde_json::to_string_pretty(prepared.body())?);
    }

    let mut prepared = prepare(request()?, &registry, &SchemaSupport::full(), None)?;
    let reply = |id: &str, text: &str| -> Result<Response, serde_json::Error> {
        serde_json::from_value(json!({
            "id": id, "status": "completed",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": text}]}]
        }))
    };
    let bad = reply(
        "resp_1",
        r#"{"summary": "Bad.", "risk": "severe", "issues": null}"#,
    )?;
    match prepared.evaluate(&bad, 1) {
        Verdict::Rejected(failure) => {
            println!("== attempt 1 rejected ==");
            for error in failure.errors() {
                println!("- {error}");
            }
            prepared.reask(&failure);
            let input = serde_json::to_value(&prepared.body().input)?;
            println!("\n== what attempt 2 adds ==");
            for item in input.as_array().into_iter().flatten().skip(4) {
                println!("{}", serde_json::to_string_pretty(item)?);
            }
        }
        other => println!("unexpected verdict: {other:?}"),
    }
    let good = reply(
        "resp_2",
        r#"{"summary": "2^attempt overflows u64 past attempt 63.", "risk": "medium", "issues": ["no cap on attempt"]}"#,
    )?;
    if let Verdict::Accepted(value) = prepared.evaluate(&good, 2) {
        println!(
            "\n== attempt 2 accepted ==\n{}",
            serde_json::to_string_pretty(&value)?
        );
    }

    // An unregistered content type is an error naming it, never stringified.
    let mut unknown = request()?;
    unknown.context.push(serde_json::from_value(
        json!({"role": "user", "content": {"type": "diagram"}}),
    )?);
    if let Err(error @ SchemaError::UnknownContentType { .. }) =
        prepare(unknown, &registry, &SchemaSupport::full(), None)
    {
        println!("\n== unknown content type ==\n{error}");
    }
    Ok(())
}

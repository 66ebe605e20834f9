//! Typed solutions: a Rust type's derived schema is sent normalised, and the validated
//! answer comes back as that type, nullable optionals included.

use aptix_client::{Capabilities, FakeProvider};
use aptix_model::wire::Response;
use aptix_model::wire::Role;
use aptix_schema::{CustomContent, HandlerContext, HandlerError, HandlerRegistry, SchemaRequest};
use aptix_schema::{SchemaError, SolveOptions, solve, solve_typed_with};
use serde::Deserialize;
use serde_json::{Value, json};

/// A city, as the model should describe it.
#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct City {
    /// The city's name.
    name: String,
    /// Inhabitants, when known.
    population: Option<u64>,
    /// Its districts.
    districts: Vec<District>,
    /// What kind of place it is.
    kind: Kind,
    /// How sure the model is.
    #[serde(default)]
    confidence: f64,
}

#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
struct District {
    name: String,
    postcode: Option<String>,
}

#[derive(Debug, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Kind {
    Capital,
    Town,
}

fn reply(output: Value) -> Response {
    serde_json::from_value(json!({"id": "resp_1", "status": "completed", "output": output}))
        .expect("a response")
}

fn answer() -> &'static str {
    r#"{"name":"Paris","population":null,"districts":[{"name":"Marais","postcode":null}],"kind":"capital","confidence":null}"#
}

fn expected() -> City {
    City {
        name: "Paris".into(),
        population: None,
        districts: vec![District {
            name: "Marais".into(),
            postcode: None,
        }],
        kind: Kind::Capital,
        confidence: 0.0,
    }
}

#[tokio::test]
async fn a_typed_solution_comes_back_as_its_type_on_the_native_strategy() {
    let provider = FakeProvider::new();
    provider.push_response(reply(json!([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer()}]}])));
    let request = SchemaRequest::for_type::<City>("gpt-4o-mini").user("Describe Paris.");
    let city: City = solve(&provider, request).await.expect("solves");
    assert_eq!(city, expected());

    let sent = serde_json::to_value(&provider.requests()[0]).expect("serialises");
    let schema = &sent["text"]["format"]["schema"];
    assert_eq!(sent["text"]["format"]["strict"], true);
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(
        schema["required"],
        json!(["name", "districts", "kind", "confidence", "population"])
    );
    assert_eq!(
        schema["properties"]["confidence"]["type"],
        json!(["number", "null"])
    );
    assert!(schema.get("$schema").is_none());
    assert_eq!(schema["$defs"]["District"]["additionalProperties"], false);
}

#[tokio::test]
async fn a_typed_solution_comes_back_as_its_type_on_the_tool_strategy() {
    let provider = FakeProvider::new().with_capabilities(Capabilities {
        native_json_schema: false,
        ..Capabilities::openai_responses()
    });
    provider.push_response(reply(json!([{"type": "function_call", "call_id": "call_1", "name": "generate_response", "arguments": answer()}])));
    let request = SchemaRequest::for_type::<City>("gpt-4o-mini").user("Describe Paris.");
    let typed = solve_typed_with::<City>(&provider, request, &SolveOptions::default())
        .await
        .expect("solves");
    assert_eq!(typed.value, expected());
    assert_eq!(typed.solution.value["population"], Value::Null);
    let sent = serde_json::to_value(&provider.requests()[0]).expect("serialises");
    assert_eq!(sent["tools"][0]["name"], "generate_response");
    assert_eq!(sent["tools"][0]["strict"], true);
}

/// Replaces the schema with one the type cannot read.
fn loosen(_: &CustomContent, cx: &mut HandlerContext<'_>) -> Result<(), HandlerError> {
    *cx.schema_mut() = json!({
        "type": "object",
        "properties": {"name": {"type": "integer"}},
        "required": ["name"]
    });
    Ok(())
}

#[tokio::test]
async fn a_solution_that_does_not_read_as_the_type_is_a_typed_error_keeping_the_value() {
    let provider = FakeProvider::new();
    provider.push_response(reply(json!([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "{\"name\": 5}"}]}])));
    let options = SolveOptions {
        handlers: HandlerRegistry::default().with("loosen", loosen),
        ..SolveOptions::default()
    };
    let request = SchemaRequest::for_type::<City>("gpt-4o-mini")
        .user("Describe Paris.")
        .message(Role::User, CustomContent::new("loosen"));
    let result = solve_typed_with::<City>(&provider, request, &options).await;
    match result {
        Err(error @ SchemaError::Deserialize { .. }) => {
            assert_eq!(error.value(), Some(&json!({"name": 5})));
            assert!(error.log().is_none());
        }
        other => panic!("expected a deserialisation error, got {other:?}"),
    }
}

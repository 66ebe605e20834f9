//! Golden request bodies of the schema-constrained Request: the exact `/v1/responses`
//! JSON of the first attempt for each strategy, with and without ordinary tools. Every
//! body is also checked against the official OpenAPI `CreateResponse` schema.

use aptix_model::wire::FunctionTool;
use aptix_request::RequestError;
use aptix_schema::{HandlerRegistry, SchemaError, SchemaRequest, SchemaSupport, Strategy, prepare};
use aptix_testkit::spec::assert_valid_create_response;
use serde_json::{Value, json};

fn weather_tool() -> FunctionTool {
    FunctionTool {
        name: "get_weather".into(),
        description: Some("Weather at a place".into()),
        parameters: Some(json!({
            "type": "object",
            "properties": {"place": {"type": "string"}},
            "required": ["place"],
            "additionalProperties": false
        })),
        strict: false,
    }
}

fn weather_tool_json() -> Value {
    json!({
        "type": "function",
        "name": "get_weather",
        "description": "Weather at a place",
        "parameters": {
            "type": "object",
            "properties": {"place": {"type": "string"}},
            "required": ["place"],
            "additionalProperties": false
        },
        "strict": false
    })
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "capital": {"type": "string", "minLength": 1},
            "population": {"type": "integer", "minimum": 0}
        },
        "required": ["capital"]
    })
}

/// What the native and strict tool strategies send for [`schema`].
fn strict_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "capital": {"type": "string"},
            "population": {"type": ["integer", "null"], "minimum": 0}
        },
        "required": ["capital", "population"],
        "additionalProperties": false
    })
}

/// The `generate_response` tool as sent.
fn answer_tool(parameters: Value, strict: bool) -> Value {
    json!({
        "type": "function",
        "name": "generate_response",
        "description": "Gives the final answer. The arguments are the answer, shaped by the parameters schema.",
        "parameters": parameters,
        "strict": strict
    })
}

fn request(with_tools: bool) -> SchemaRequest {
    let mut request = SchemaRequest::new("gpt-4o-mini", schema())
        .name("city")
        .system("You are a geography assistant.")
        .user("Capital of France?");
    request.config.temperature = Some(0.2);
    if with_tools {
        request = request.tools([weather_tool()]);
    }
    request
}

fn system(parts: &[&str]) -> Value {
    let parts: Vec<Value> = parts
        .iter()
        .map(|text| json!({"type": "input_text", "text": text}))
        .collect();
    json!({"type": "message", "role": "system", "content": parts})
}

fn user() -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Capital of France?"}]})
}

const PROMPT: &str = "You are a geography assistant.";

const JSON_INSTRUCTION: &str = "Answer with a single JSON value that conforms to the JSON Schema below. Reply with the JSON only: no explanations and no code fences.\n\nJSON Schema:\n{\"properties\":{\"capital\":{\"minLength\":1,\"type\":\"string\"},\"population\":{\"minimum\":0,\"type\":\"integer\"}},\"required\":[\"capital\"],\"type\":\"object\"}";

const TOOL_INSTRUCTION: &str = "Give your final answer by calling the generate_response function exactly once. Its arguments are the answer and must conform to its parameters schema. Do not answer in plain text.";

const TOOL_INSTRUCTION_WITH_TOOLS: &str = "Give your final answer by calling the generate_response function exactly once. Its arguments are the answer and must conform to its parameters schema. Do not answer in plain text. You may call the other tools first when you need what they return.";

/// Prepares [`request`] on `support` (the strategy chosen, or `forced`) and checks the
/// strategy and the exact body.
fn check(
    support: SchemaSupport,
    forced: Option<Strategy>,
    with_tools: bool,
    strategy: Strategy,
    body: Value,
) {
    let prepared = prepare(
        request(with_tools),
        &HandlerRegistry::default(),
        &support,
        forced,
    )
    .expect("prepares");
    assert_eq!(prepared.strategy(), strategy);
    let actual = serde_json::to_value(prepared.body()).expect("serialises");
    assert_valid_create_response(strategy.as_str(), &actual);
    assert_eq!(
        actual,
        body,
        "{}",
        serde_json::to_string_pretty(&actual).unwrap_or_default()
    );
}

#[test]
fn native_schema_without_tools() {
    check(
        SchemaSupport::full(),
        None,
        false,
        Strategy::NativeSchema,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT]), user()],
            "temperature": 0.2,
            "text": {"format": {"type": "json_schema", "name": "city", "schema": strict_schema(), "strict": true}}
        }),
    );
}

#[test]
fn native_schema_with_tools_when_the_provider_combines_them() {
    check(
        SchemaSupport::full(),
        None,
        true,
        Strategy::NativeSchema,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT]), user()],
            "temperature": 0.2,
            "tools": [weather_tool_json()],
            "text": {"format": {"type": "json_schema", "name": "city", "schema": strict_schema(), "strict": true}}
        }),
    );
}

#[test]
fn tool_call_without_tools_forces_generate_response() {
    let support = SchemaSupport {
        native_json_schema: false,
        ..SchemaSupport::full()
    };
    check(
        support,
        None,
        false,
        Strategy::ToolCall,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT, TOOL_INSTRUCTION]), user()],
            "temperature": 0.2,
            "tools": [answer_tool(strict_schema(), true)],
            "tool_choice": {"type": "function", "name": "generate_response"}
        }),
    );
}

#[test]
fn tool_call_with_tools_when_native_output_cannot_combine_with_them() {
    let support = SchemaSupport {
        json_schema_with_tools: false,
        ..SchemaSupport::full()
    };
    check(
        support,
        None,
        true,
        Strategy::ToolCall,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT, TOOL_INSTRUCTION_WITH_TOOLS]), user()],
            "temperature": 0.2,
            "tools": [weather_tool_json(), answer_tool(strict_schema(), true)],
            "tool_choice": "required"
        }),
    );
}

#[test]
fn tool_call_without_strict_tools_sends_the_schema_as_given() {
    let support = SchemaSupport {
        native_json_schema: false,
        strict_tools: false,
        ..SchemaSupport::full()
    };
    check(
        support,
        None,
        false,
        Strategy::ToolCall,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT, TOOL_INSTRUCTION]), user()],
            "temperature": 0.2,
            "tools": [answer_tool(schema(), false)],
            "tool_choice": {"type": "function", "name": "generate_response"}
        }),
    );
}

#[test]
fn json_object_without_tools_injects_the_schema() {
    let support = SchemaSupport {
        json_object: true,
        ..SchemaSupport::default()
    };
    check(
        support,
        None,
        false,
        Strategy::JsonObject,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT, JSON_INSTRUCTION]), user()],
            "temperature": 0.2,
            "text": {"format": {"type": "json_object"}}
        }),
    );
}

#[test]
fn json_object_with_tools_when_forced() {
    check(
        SchemaSupport::full(),
        Some(Strategy::JsonObject),
        true,
        Strategy::JsonObject,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT, JSON_INSTRUCTION]), user()],
            "temperature": 0.2,
            "tools": [weather_tool_json()],
            "text": {"format": {"type": "json_object"}}
        }),
    );
}

#[test]
fn prompt_only_without_tools_sends_no_format() {
    check(
        SchemaSupport::default(),
        None,
        false,
        Strategy::PromptOnly,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT, JSON_INSTRUCTION]), user()],
            "temperature": 0.2
        }),
    );
}

#[test]
fn prompt_only_with_tools_when_forced() {
    check(
        SchemaSupport::full(),
        Some(Strategy::PromptOnly),
        true,
        Strategy::PromptOnly,
        json!({
            "model": "gpt-4o-mini",
            "input": [system(&[PROMPT, JSON_INSTRUCTION]), user()],
            "temperature": 0.2,
            "tools": [weather_tool_json()]
        }),
    );
}

#[test]
fn without_a_system_message_the_instruction_is_a_new_first_message() {
    let request = SchemaRequest::new("m", schema()).user("Capital of France?");
    let prepared = prepare(
        request,
        &HandlerRegistry::default(),
        &SchemaSupport::default(),
        None,
    )
    .expect("prepares");
    let body = serde_json::to_value(prepared.body()).expect("serialises");
    assert_eq!(body["input"], json!([system(&[JSON_INSTRUCTION]), user()]));
}

#[test]
fn json_mode_always_puts_the_word_json_in_an_input_message() {
    for strategy in [Strategy::JsonObject, Strategy::PromptOnly] {
        let prepared = prepare(
            SchemaRequest::new("m", schema()).user("Capital?"),
            &HandlerRegistry::default(),
            &SchemaSupport::full(),
            Some(strategy),
        )
        .expect("prepares");
        let body = serde_json::to_string(&prepared.body().input).expect("serialises");
        assert!(body.to_lowercase().contains("json"));
    }
}

#[test]
fn configuration_and_options_reach_the_body() {
    let mut request = request(false);
    request.config.top_p = Some(0.5);
    request.config.max_output_tokens = Some(256);
    request.config.reasoning_effort = Some("low".into());
    request.config.temperature = None;
    request
        .config
        .options
        .insert("service_tier".into(), json!("flex"));
    let prepared = prepare(
        request,
        &HandlerRegistry::default(),
        &SchemaSupport::full(),
        None,
    )
    .expect("prepares");
    let body = serde_json::to_value(prepared.body()).expect("serialises");
    assert_valid_create_response("configured", &body);
    assert_eq!(body["top_p"], 0.5);
    assert_eq!(body["max_output_tokens"], 256);
    assert_eq!(body["reasoning"], json!({"effort": "low"}));
    assert_eq!(body["service_tier"], "flex");
    assert!(body.get("temperature").is_none());
}

#[test]
fn invalid_configuration_and_tools_are_errors_naming_the_culprit() {
    let with = |change: fn(&mut SchemaRequest)| {
        let mut request = request(false);
        change(&mut request);
        prepare(
            request,
            &HandlerRegistry::default(),
            &SchemaSupport::full(),
            None,
        )
        .err()
    };
    assert_eq!(
        format!("{:?}", with(|r| r.config.model = " ".into())),
        format!("{:?}", Some(SchemaError::Request(RequestError::BlankModel)))
    );
    assert_eq!(
        format!("{:?}", with(|r| r.config.temperature = Some(3.0))),
        format!(
            "{:?}",
            Some(SchemaError::Request(RequestError::InvalidTemperature {
                value: 3.0
            }))
        )
    );
    assert_eq!(
        format!("{:?}", with(|r| r.config.max_output_tokens = Some(8))),
        format!(
            "{:?}",
            Some(SchemaError::Request(
                RequestError::MaxOutputTokensTooSmall {
                    value: 8,
                    minimum: 16
                }
            ))
        )
    );
    assert_eq!(
        format!(
            "{:?}",
            with(|r| {
                r.config.options.insert("input".into(), json!([]));
            })
        ),
        format!(
            "{:?}",
            Some(SchemaError::ReservedOption {
                key: "input".into()
            })
        )
    );
    assert_eq!(
        format!("{:?}", with(|r| r.name = "has space".into())),
        format!(
            "{:?}",
            Some(SchemaError::InvalidSchemaName {
                name: "has space".into()
            })
        )
    );
    assert!(matches!(
        with(|r| r.schema = json!("not a schema")),
        Some(SchemaError::InvalidSchema { .. })
    ));
    // A schema strict mode cannot express is an error naming where when native output
    // is asked for by name ...
    let not_strict = json!({"type": "object", "properties": {"a": {"type": "object"}}});
    let mut forced = request(false);
    forced.schema = not_strict.clone();
    assert!(matches!(
        prepare(forced, &HandlerRegistry::default(), &SchemaSupport::full(), Some(Strategy::NativeSchema)).err(),
        Some(SchemaError::NotStrict { pointer, .. }) if pointer == "/properties/a"
    ));
    // ... and, chosen by the provider's support, asked for without strict mode (the
    // `generate_response` tool, not strict), validated against the whole schema.
    let mut chosen = request(false);
    chosen.schema = not_strict;
    let prepared = prepare(
        chosen,
        &HandlerRegistry::default(),
        &SchemaSupport::full(),
        None,
    )
    .expect("falls back");
    assert_eq!(prepared.strategy(), Strategy::ToolCall);
    let body = serde_json::to_value(prepared.body()).expect("serialises");
    assert_eq!(body["tools"][0]["name"], "generate_response", "{body}");
    assert_ne!(body["tools"][0]["strict"], json!(true), "{body}");
    assert!(matches!(
        with(|r| r.tools.push(FunctionTool {
            name: "generate_response".into(),
            description: None,
            parameters: None,
            strict: true
        })),
        Some(SchemaError::InvalidTool { index: 0, .. })
    ));
    assert!(matches!(
        with(|r| r.tools = vec![weather_tool(), weather_tool()]),
        Some(SchemaError::InvalidTool { index: 1, .. })
    ));
}

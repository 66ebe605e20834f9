//! Solving against scripted providers of each capability profile: the strategy chosen,
//! what is sent for it, and the answer read back; plus a recorded real exchange replayed.

use aptix_client::{Capabilities, FakeProvider};
use aptix_model::wire::{FunctionTool, Response};
use aptix_schema::{SchemaError, SolveOptions, solve_value, solve_value_with};
use aptix_schema::{SchemaRequest, SchemaSupport, StopReason, Strategy};
use serde_json::{Value, json};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"capital": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["capital"]
    })
}

fn request() -> SchemaRequest {
    SchemaRequest::new("gpt-4o-mini", schema())
        .system("You are a geography assistant.")
        .user("Capital of France?")
}

fn weather_tool() -> FunctionTool {
    FunctionTool {
        name: "get_weather".into(),
        description: None,
        parameters: Some(
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
        strict: true,
    }
}

fn response(output: Value) -> Response {
    serde_json::from_value(json!({
        "id": "resp_1", "status": "completed", "output": output,
        "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    }))
    .expect("a response")
}

fn text_reply(text: &str) -> Response {
    response(
        json!([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}]),
    )
}

fn call_reply(name: &str, arguments: &str) -> Response {
    response(
        json!([{"type": "function_call", "call_id": "call_1", "name": name, "arguments": arguments}]),
    )
}

/// The reply each strategy answers with.
fn reply_for(strategy: Strategy) -> Response {
    match strategy {
        Strategy::NativeSchema => text_reply(r#"{"capital":"Paris","population":null}"#),
        Strategy::ToolCall => {
            call_reply("generate_response", r#"{"capital":"Paris","population":2}"#)
        }
        Strategy::JsonObject => text_reply(r#"{"capital":"Paris"}"#),
        Strategy::PromptOnly => text_reply("Here it is:\n```json\n{\"capital\":\"Paris\"}\n```"),
    }
}

/// What identifies a strategy in the body sent.
fn shape(body: &Value) -> (Value, Value) {
    (
        body["text"]["format"]["type"].clone(),
        body["tool_choice"].clone(),
    )
}

#[tokio::test]
async fn each_capability_profile_gets_its_strategy() {
    let no_native = Capabilities {
        native_json_schema: false,
        json_schema_with_tools: false,
        ..Capabilities::openai_responses()
    };
    let no_mix = Capabilities {
        json_schema_with_tools: false,
        ..Capabilities::openai_responses()
    };
    let cases = [
        (
            "openai",
            Capabilities::openai_responses(),
            false,
            Strategy::NativeSchema,
            (json!("json_schema"), Value::Null),
        ),
        (
            "chat bridge",
            Capabilities::chat_completions(),
            false,
            Strategy::NativeSchema,
            (json!("json_schema"), Value::Null),
        ),
        (
            "openai with tools",
            Capabilities::openai_responses(),
            true,
            Strategy::NativeSchema,
            (json!("json_schema"), Value::Null),
        ),
        (
            "tools only",
            no_native,
            false,
            Strategy::ToolCall,
            (
                Value::Null,
                json!({"type": "function", "name": "generate_response"}),
            ),
        ),
        (
            "no schema with tools",
            no_mix,
            true,
            Strategy::ToolCall,
            (Value::Null, json!("required")),
        ),
        (
            "no schema with tools, none sent",
            no_mix,
            false,
            Strategy::NativeSchema,
            (json!("json_schema"), Value::Null),
        ),
        (
            "unknown server",
            Capabilities::default(),
            false,
            Strategy::PromptOnly,
            (Value::Null, Value::Null),
        ),
    ];
    for (label, capabilities, with_tools, strategy, expected_shape) in cases {
        let provider = FakeProvider::new().with_capabilities(capabilities);
        provider.push_response(reply_for(strategy));
        let mut request = request();
        if with_tools {
            request = request.tools([weather_tool()]);
        }
        let solution = solve_value(&provider, request).await.expect(label);
        assert_eq!(solution.strategy, strategy, "{label}");
        assert_eq!(solution.value["capital"], "Paris", "{label}");
        assert_eq!(solution.attempts, 1);
        let sent = serde_json::to_value(&provider.requests()[0]).expect("serialises");
        assert_eq!(shape(&sent), expected_shape, "{label}");
    }
}

#[tokio::test]
async fn a_strategy_or_the_support_can_be_forced_per_call() {
    for strategy in [
        Strategy::NativeSchema,
        Strategy::ToolCall,
        Strategy::JsonObject,
        Strategy::PromptOnly,
    ] {
        let provider = FakeProvider::new().with_capabilities(Capabilities::default());
        provider.push_response(reply_for(strategy));
        let options = SolveOptions {
            strategy: Some(strategy),
            ..SolveOptions::default()
        };
        let solution = solve_value_with(&provider, request(), &options)
            .await
            .expect("solves");
        assert_eq!(solution.strategy, strategy);
    }

    let provider = FakeProvider::new().with_capabilities(Capabilities::default());
    provider.push_response(reply_for(Strategy::JsonObject));
    let options = SolveOptions {
        support: Some(SchemaSupport {
            json_object: true,
            ..SchemaSupport::default()
        }),
        ..SolveOptions::default()
    };
    let solution = solve_value_with(&provider, request(), &options)
        .await
        .expect("solves");
    assert_eq!(solution.strategy, Strategy::JsonObject);
    let sent = serde_json::to_value(&provider.requests()[0]).expect("serialises");
    assert_eq!(sent["text"]["format"], json!({"type": "json_object"}));
}

#[tokio::test]
async fn tools_on_a_provider_without_function_tools_are_refused_before_sending() {
    let provider = FakeProvider::new().with_capabilities(Capabilities::default());
    let result = solve_value(&provider, request().tools([weather_tool()])).await;
    assert!(matches!(
        result,
        Err(SchemaError::ToolsUnsupported { count: 1 })
    ));
    assert!(provider.requests().is_empty());
}

#[tokio::test]
async fn a_call_of_an_ordinary_tool_ends_the_request_with_the_calls() {
    let provider = FakeProvider::new();
    provider.push_response(call_reply("get_weather", "{}"));
    let result = solve_value(&provider, request().tools([weather_tool()])).await;
    match result {
        Err(SchemaError::Stopped {
            attempt: 1,
            reason: StopReason::ToolCalls { calls },
            log,
        }) => {
            assert_eq!(calls[0].name, "get_weather");
            assert_eq!(log.usage.total_tokens, 15);
        }
        other => panic!("expected the tool calls, got {other:?}"),
    }
}

/// The recorded real exchange of `text.format` json_schema: what Aptix sends for the
/// same schema and message is the recorded request with `strict` stated, and the
/// recorded reply is accepted with its usage.
#[tokio::test]
async fn a_recorded_structured_output_exchange_replays() {
    let recorded_request: Value = serde_json::from_str(&aptix_testkit::read_fixture_text(
        "request_structured_output_json_schema.json",
    ))
    .expect("fixture");
    let recorded_response: Response = serde_json::from_str(&aptix_testkit::read_fixture_text(
        "response_structured_output_json_schema.json",
    ))
    .expect("fixture");
    let format = &recorded_request["text"]["format"];
    let request = SchemaRequest::new("gpt-4o-mini", format["schema"].clone())
        .name(format["name"].as_str().expect("a name"))
        .user(
            recorded_request["input"][0]["content"][0]["text"]
                .as_str()
                .expect("a text"),
        );

    let provider = FakeProvider::new();
    provider.push_response(recorded_response);
    let solution = solve_value(&provider, request).await.expect("solves");

    let mut expected = recorded_request.clone();
    expected["text"]["format"]["strict"] = json!(true);
    let sent = serde_json::to_value(&provider.requests()[0]).expect("serialises");
    assert_eq!(sent, expected);
    assert_eq!(
        solution.value,
        json!({"animal_data_list": ["Lion", "Elephant", "Giraffe", "Kangaroo", "Penguin"]})
    );
    assert_eq!(
        (
            solution.usage.prompt_tokens,
            solution.usage.completion_tokens,
            solution.usage.total_tokens
        ),
        (48, 23, 71)
    );
    assert_eq!(
        solution.response_id,
        "resp_061da245a7ef797a0068c9ef386e848196b217d1784fb33d18"
    );
}

#[test]
fn the_solve_future_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let provider = FakeProvider::new();
    let future = solve_value(&provider, request());
    assert_send(&future);
}

/// A 400 as a server that lacks what `param` asks for answers it.
fn refused(message: &str, param: &str) -> aptix_client::ClientError {
    aptix_client::ClientError::Status {
        status: 400,
        api_error: Some(Box::new(aptix_model::wire::ApiError {
            message: message.into(),
            kind: Some("invalid_request_error".into()),
            param: Some(param.into()),
            code: None,
        })),
        raw_body: None,
        request_id: None,
        retry_after: None,
    }
}

#[tokio::test]
async fn a_server_that_refuses_the_chosen_strategy_is_asked_the_next_way() {
    // The capabilities say native structured output; the server says otherwise, then
    // refuses tools too: the answer comes by JSON mode.
    let provider = FakeProvider::new().with_capabilities(Capabilities::openai_responses());
    provider
        .push_error(refused(
            "'text.format' of type 'json_schema' is not supported with this model",
            "text.format",
        ))
        .push_error(refused("tools are not supported by this server", "tools"))
        .push_response(text_reply("```json\n{\"capital\": \"Paris\"}\n```"));
    let solution = solve_value(&provider, request()).await.unwrap();
    assert_eq!(solution.value, json!({"capital": "Paris"}));
    assert_eq!(solution.strategy, Strategy::JsonObject);
    let refused: Vec<Strategy> = solution
        .refused_strategies
        .iter()
        .map(|refused| refused.strategy)
        .collect();
    assert_eq!(refused, [Strategy::NativeSchema, Strategy::ToolCall]);
    // What the server said is kept: a schema too deep for the API is refused this way.
    assert!(
        solution.refused_strategies[0]
            .reason
            .contains("'text.format' of type 'json_schema' is not supported"),
        "{:?}",
        solution.refused_strategies
    );
    assert_eq!(solution.attempts, 1);
    let sent = provider.requests();
    assert_eq!(sent.len(), 3);
    let body = |index: usize| serde_json::to_value(&sent[index]).unwrap();
    assert_eq!(body(0)["text"]["format"]["type"], "json_schema");
    assert_eq!(body(1)["tools"][0]["name"], "generate_response");
    assert_eq!(body(2)["text"]["format"]["type"], "json_object");
    assert!(body(2).get("tools").is_none(), "{}", body(2));
}

#[tokio::test]
async fn a_refusal_of_something_else_or_of_a_strategy_the_caller_chose_is_an_error() {
    // Not about the format: no other way is tried.
    let provider = FakeProvider::new().with_capabilities(Capabilities::openai_responses());
    provider.push_error(refused("The model `gpt-nope` does not exist", "model"));
    let error = solve_value(&provider, request()).await.unwrap_err();
    assert!(matches!(error, SchemaError::Provider { .. }), "{error}");
    assert_eq!(provider.requests().len(), 1);

    // Errors that only mention a strategy's words are not refusals of it: a model's
    // name, a restriction, the context length.
    for (message, param, code) in [
        (
            "Invalid model name passed in model=functionary-small-v3.2",
            Some("model"),
            None,
        ),
        (
            "The model `toolace-8b` does not exist",
            None,
            Some("model_not_found"),
        ),
        (
            "This organization is restricted from strict structured mode",
            None,
            None,
        ),
        (
            "This model's maximum context length is 8192 tokens (300 in the messages, 200 in the functions)",
            None,
            Some("context_length_exceeded"),
        ),
    ] {
        let provider = FakeProvider::new().with_capabilities(Capabilities::openai_responses());
        let mut error = refused(message, param.unwrap_or_default());
        if let aptix_client::ClientError::Status {
            api_error: Some(api),
            ..
        } = &mut error
        {
            api.param = param.map(str::to_owned);
            api.code = code.map(str::to_owned);
        }
        provider.push_error(error);
        let outcome = solve_value(&provider, request()).await;
        assert!(
            matches!(outcome, Err(SchemaError::Provider { .. })),
            "{message}: {outcome:?}"
        );
        assert_eq!(provider.requests().len(), 1, "{message}");
    }

    // A request with tools of its own cannot go on without tools: the refusal of
    // them is the error, with the server's words.
    let provider = FakeProvider::new().with_capabilities(Capabilities::openai_responses());
    provider
        .push_error(refused("json_schema is not supported", "text.format"))
        .push_error(refused("tools are not supported", "tools"));
    let error = solve_value(&provider, request().tools([weather_tool()]))
        .await
        .unwrap_err();
    let SchemaError::Provider { source, log, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(
        source.to_string().contains("tools are not supported"),
        "{source}"
    );
    assert_eq!(log.refused_strategies.len(), 1);
    assert_eq!(log.refused_strategies[0].strategy, Strategy::NativeSchema);
    assert_eq!(provider.requests().len(), 2);

    // The caller's own choice is kept, refused or not.
    let provider = FakeProvider::new().with_capabilities(Capabilities::openai_responses());
    provider.push_error(refused(
        "'text.format' of type 'json_schema' is not supported",
        "text.format",
    ));
    let options = SolveOptions {
        strategy: Some(Strategy::NativeSchema),
        ..SolveOptions::default()
    };
    let error = solve_value_with(&provider, request(), &options)
        .await
        .unwrap_err();
    assert!(matches!(error, SchemaError::Provider { .. }), "{error}");
    assert_eq!(provider.requests().len(), 1);
}

#[tokio::test]
async fn a_native_answer_in_a_fenced_block_is_read() {
    // A server that ignores the native format may answer as a JSON-mode model does.
    let provider = FakeProvider::new().with_capabilities(Capabilities::openai_responses());
    provider.push_response(text_reply(
        "Here it is:\n```json\n{\"capital\": \"Paris\"}\n```",
    ));
    let solution = solve_value(&provider, request()).await.unwrap();
    assert_eq!(solution.strategy, Strategy::NativeSchema);
    assert_eq!(solution.value, json!({"capital": "Paris"}));
}

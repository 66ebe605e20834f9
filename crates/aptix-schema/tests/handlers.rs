//! Content handlers: decoding the seed-shaped context, each built-in handler's effect on
//! the configuration, the schema and the messages, the order of effects, and the
//! errors for unknown types and bad content.

use aptix_model::wire::{ContentPart, InputMessage, MessageContent, Role};
use aptix_schema::{
    Content, CustomContent, HandlerContext, HandlerError, HandlerRegistry, Message, Processed,
    SchemaError, SchemaRequest, process,
};
use serde_json::{Value, json};

/// Decodes a request from JSON and runs it through the built-in handlers.
fn run(request: Value) -> Result<Processed, SchemaError> {
    run_with(request, &HandlerRegistry::default())
}

fn run_with(request: Value, registry: &HandlerRegistry) -> Result<Processed, SchemaError> {
    let request: SchemaRequest = serde_json::from_value(request).expect("decodes");
    process(request, registry)
}

/// A request whose context is `context`, for model `m` and an empty object schema.
fn with_context(context: Value) -> Value {
    json!({
        "config": {"model": "m"},
        "context": context,
        "schema": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    })
}

/// Each message as `role: text` (parts joined), to compare lists at a glance.
fn texts(messages: &[InputMessage]) -> Vec<String> {
    messages
        .iter()
        .map(|message| {
            let text = match &message.content {
                MessageContent::Text(text) => text.clone(),
                MessageContent::Parts(parts) => parts
                    .iter()
                    .map(|part| match part {
                        ContentPart::InputText { text } => text.clone(),
                        ContentPart::OutputText(text) => text.text.clone(),
                        other => format!("{other:?}"),
                    })
                    .collect::<Vec<_>>()
                    .join("|"),
            };
            format!("{}: {text}", message.role)
        })
        .collect()
}

#[test]
fn the_seed_context_decodes_and_round_trips() {
    let json = json!({
        "config": {"model": "gpt-4o-mini", "temperature": 0.3},
        "context": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": {"type": "state", "state": {"step": 2}}},
            {"role": "user", "content": [{"type": "text", "text": "What is the capital of France?"}]}
        ],
        "schema": {"type": "object"}
    });
    let request: SchemaRequest = serde_json::from_value(json.clone()).expect("decodes");
    assert_eq!(request.name, "response");
    assert_eq!(
        request.context[1].content,
        Content::Custom(CustomContent::new("state").with("state", json!({"step": 2})))
    );
    assert_eq!(
        request.context[2].content,
        Content::Parts(vec![ContentPart::input_text(
            "What is the capital of France?"
        )])
    );
    let encoded = serde_json::to_value(&request).expect("encodes");
    assert_eq!(encoded["context"][1], json["context"][1]);
    assert_eq!(
        encoded["context"][2]["content"][0],
        json!({"type": "input_text", "text": "What is the capital of France?"})
    );

    for bad in [
        json!({"state": {}}),
        json!({"type": 3}),
        json!(42),
        json!(null),
    ] {
        let message = json!({"role": "user", "content": bad});
        assert!(serde_json::from_value::<Message>(message).is_err(), "{bad}");
    }
}

#[test]
fn plain_messages_pass_through_with_the_part_type_of_their_role() {
    let processed = run(with_context(json!([
        {"role": "system", "content": "S"},
        {"role": "assistant", "content": "earlier answer"},
        {"role": "assistant", "content": [{"type": "input_text", "text": "as parts"}]},
        {"role": "user", "content": "Q"}
    ])))
    .expect("processes");
    let parts: Vec<Value> = processed
        .messages
        .iter()
        .map(|message| serde_json::to_value(&message.content).expect("encodes")[0]["type"].clone())
        .collect();
    assert_eq!(
        parts,
        ["input_text", "output_text", "output_text", "input_text"]
    );
}

#[test]
fn state_renders_as_labelled_fenced_json_with_the_message_role() {
    let processed = run(with_context(json!([
        {"role": "developer", "content": {"type": "state", "state": {"b": 1, "a": "```"}, "label": "cart\nforged"}},
        {"role": "user", "content": {"type": "state", "state": {}}}
    ])))
    .expect("processes");
    assert_eq!(
        texts(&processed.messages),
        [
            "developer: [STATE: cart\\nforged]\n````json\n{\n  \"a\": \"```\",\n  \"b\": 1\n}\n````",
            "user: [STATE]\n```json\n{}\n```",
        ]
    );

    for (content, reason) in [
        (json!({"type": "state", "state": [1]}), "must be an object"),
        (json!({"type": "state"}), "is missing"),
        (
            json!({"type": "state", "state": {}, "lable": "x"}),
            "unknown field \"lable\"",
        ),
    ] {
        match run(with_context(
            json!([{"role": "user", "content": "Q"}, {"role": "user", "content": content}]),
        )) {
            Err(SchemaError::Handler {
                index: 1,
                content_type,
                reason: why,
            }) => {
                assert_eq!(content_type, "state");
                assert!(why.contains(reason), "{why}");
            }
            other => panic!("expected a handler error, got {other:?}"),
        }
    }
}

#[test]
fn a_file_reference_renders_as_one_agn_002_chunk() {
    let processed = run(with_context(json!([
        {"role": "user", "content": {"type": "file", "path": "src/lib.rs", "content": "fn a() {}\nfn b() {}"}},
        {"role": "user", "content": {
            "type": "file", "path": "docs/x.md", "content": "# T", "lines": {"start": 40, "end": 40},
            "language": "markdown", "id": "ctx_7"
        }}
    ])))
    .expect("processes");
    assert_eq!(
        texts(&processed.messages),
        [
            "user: [CONTEXT]\n\n=== CHUNK 1 ===\nId: src/lib.rs:1-2\nPath: src/lib.rs\nLines: 1-2\nLanguage: rust\n```rust\nfn a() {}\nfn b() {}\n```",
            "user: [CONTEXT]\n\n=== CHUNK 1 ===\nId: ctx_7\nPath: docs/x.md\nLines: 40-40\nLanguage: markdown\n```markdown\n# T\n```",
        ]
    );

    for (content, reason) in [
        (
            json!({"type": "file", "content": "x"}),
            "\"path\" is missing",
        ),
        (
            json!({"type": "file", "path": " ", "content": "x"}),
            "\"path\" is blank",
        ),
        (
            json!({"type": "file", "path": "a.rs"}),
            "\"content\" is missing",
        ),
        (
            json!({"type": "file", "path": "a.rs", "content": "x", "lines": {"start": 0, "end": 2}}),
            "\"lines\" is invalid",
        ),
        (
            json!({"type": "file", "path": "a.rs", "content": "x", "lines": {"start": 5, "end": 2}}),
            "\"lines\" is invalid",
        ),
    ] {
        match run(with_context(json!([{"role": "user", "content": content}]))) {
            Err(SchemaError::Handler {
                index: 0,
                reason: why,
                ..
            }) => {
                assert!(why.contains(reason), "{why} lacks {reason}");
            }
            other => panic!("expected a handler error, got {other:?}"),
        }
    }
}

#[test]
fn require_fields_narrows_the_schema_and_sends_nothing() {
    let mut request = with_context(json!([
        {"role": "user", "content": "Q"},
        {"role": "user", "content": {"type": "require_fields", "fields": ["b", "a"]}},
        {"role": "user", "content": {"type": "require_fields", "fields": ["a", "city"], "at": "/properties/home"}}
    ]));
    request["schema"]["properties"]["home"] =
        json!({"type": "object", "properties": {"city": {"type": "string"}}});
    request["schema"]["required"] = json!(["a"]);
    let processed = run(request.clone()).expect_err("a is not a property of home");
    assert_eq!(
        format!("{:?}", processed),
        format!(
            "{:?}",
            SchemaError::Handler {
                index: 2,
                content_type: "require_fields".into(),
                reason: "at \"/properties/home\": property \"a\" is not declared in \"properties\""
                    .into()
            }
        )
    );

    request["context"][2]["content"]["fields"] = json!(["city"]);
    let processed = run(request).expect("processes");
    assert_eq!(processed.schema["required"], json!(["a", "b"]));
    assert_eq!(
        processed.schema["properties"]["home"]["required"],
        json!(["city"])
    );
    assert_eq!(texts(&processed.messages), ["user: Q"]);

    let missing_target = run(with_context(json!([
        {"role": "user", "content": {"type": "require_fields", "fields": ["a"], "at": "/nowhere"}}
    ])));
    assert!(
        matches!(missing_target, Err(SchemaError::Handler { reason, .. }) if reason.contains("nothing at \"/nowhere\""))
    );
}

#[test]
fn config_changes_settings_and_the_later_message_wins() {
    let processed = run(with_context(json!([
        {"role": "user", "content": {"type": "config", "model": "first", "temperature": 0.5, "options": {"service_tier": "flex", "user": "u"}}},
        {"role": "user", "content": "Q"},
        {"role": "user", "content": {"type": "config", "model": "second", "temperature": null, "max_output_tokens": 64, "options": {"user": null}}}
    ])))
    .expect("processes");
    assert_eq!(processed.config.model, "second");
    assert_eq!(processed.config.temperature, None);
    assert_eq!(processed.config.max_output_tokens, Some(64));
    assert_eq!(
        processed.config.options.into_iter().collect::<Vec<_>>(),
        [("service_tier".to_owned(), json!("flex"))]
    );
    assert_eq!(texts(&processed.messages), ["user: Q"]);

    let typo = run(with_context(
        json!([{"role": "user", "content": {"type": "config", "temprature": 1}}]),
    ));
    assert!(
        matches!(typo, Err(SchemaError::Handler { reason, .. }) if reason.contains("temprature"))
    );
    let wrong_type = run(with_context(
        json!([{"role": "user", "content": {"type": "config", "model": 7}}]),
    ));
    assert!(
        matches!(wrong_type, Err(SchemaError::Handler { reason, .. }) if reason.contains("\"model\" is invalid"))
    );
}

/// A handler that sets the model to its `model` field and says so in a message.
fn model_setter(content: &CustomContent, cx: &mut HandlerContext<'_>) -> Result<(), HandlerError> {
    let model: String = content.required_field("model")?;
    cx.config_mut().model = model.clone();
    cx.push_text_as_is(format!("model {model} at message {}", cx.index()));
    Ok(())
}

#[test]
fn handlers_run_in_message_order_and_the_later_effect_wins() {
    let registry = HandlerRegistry::default().with("model", model_setter);
    for (first, second, expected) in [
        (
            json!({"type": "model", "model": "from-custom"}),
            json!({"type": "config", "model": "from-config"}),
            "from-config",
        ),
        (
            json!({"type": "config", "model": "from-config"}),
            json!({"type": "model", "model": "from-custom"}),
            "from-custom",
        ),
    ] {
        let context = json!([
            {"role": "user", "content": first},
            {"role": "user", "content": second}
        ]);
        let once = run_with(with_context(context.clone()), &registry).expect("processes");
        let twice = run_with(with_context(context), &registry).expect("processes");
        assert_eq!(once.config.model, expected);
        assert_eq!(once, twice, "deterministic");
    }
}

#[test]
fn a_handler_may_add_and_drop_messages_and_sees_only_earlier_ones() {
    let registry = HandlerRegistry::empty().with(
        "reset",
        |content: &CustomContent, cx: &mut HandlerContext<'_>| -> Result<(), HandlerError> {
            let seen = cx.messages().len();
            cx.messages_mut().clear();
            let note: String = content.required_field("note")?;
            cx.push_text(Role::System, format!("{note} (dropped {seen})"));
            cx.push_text(Role::User, "again");
            *cx.schema_mut() = json!({"type": "object", "properties": {}});
            Ok(())
        },
    );
    let processed = run_with(
        with_context(json!([
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"},
            {"role": "user", "content": {"type": "reset", "note": "fresh start"}},
            {"role": "user", "content": "three"}
        ])),
        &registry,
    )
    .expect("processes");
    assert_eq!(
        texts(&processed.messages),
        [
            "system: fresh start (dropped 2)",
            "user: again",
            "user: three"
        ]
    );
    assert_eq!(
        processed.schema,
        json!({"type": "object", "properties": {}})
    );
}

#[test]
fn an_unregistered_type_is_an_error_naming_it_and_its_index() {
    let result = run_with(
        with_context(json!([
            {"role": "user", "content": "Q"},
            {"role": "user", "content": {"type": "state", "state": {}}}
        ])),
        &HandlerRegistry::empty(),
    );
    assert_eq!(
        format!("{result:?}"),
        format!(
            "{:?}",
            Err::<(), _>(SchemaError::UnknownContentType {
                index: 1,
                content_type: "state".into()
            })
        )
    );
    assert_eq!(
        result.err().map(|error| error.to_string()).as_deref(),
        Some("message 1 has content type \"state\", which no handler is registered for")
    );
}

#[test]
fn a_context_that_ends_up_empty_is_an_error() {
    let result = run(with_context(json!([
        {"role": "user", "content": {"type": "config", "model": "x"}}
    ])));
    assert!(
        matches!(result, Err(SchemaError::EmptyContext)),
        "{result:?}"
    );
}

#[test]
fn the_default_registry_lists_the_built_in_handlers() {
    let registry = HandlerRegistry::default();
    assert_eq!(
        registry.content_types().collect::<Vec<_>>(),
        ["config", "file", "require_fields", "state"]
    );
    assert_eq!(
        format!("{registry:?}"),
        "{\"config\", \"file\", \"require_fields\", \"state\"}"
    );
    let typed = Message::custom(
        Role::User,
        CustomContent::new("state").with("state", json!({})),
    );
    assert_eq!(
        serde_json::to_value(typed).expect("encodes")["content"],
        json!({"type": "state", "state": {}})
    );
}

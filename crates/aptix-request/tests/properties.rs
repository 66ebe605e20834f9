//! Property tests of the builder over arbitrary inputs, weighted so that about half of
//! them build: it is total (a body or an error, never a panic), and every body it
//! builds is a valid `CreateResponse` with the system message iff initial,
//! `previous_response_id` iff a stored-response continuation, each tool result's call id
//! exactly once among the `function_call_output` items, and the user message last.

mod common;

use aptix_model::wire::{
    ContentPart, FunctionCall, FunctionTool, InputItem, InputMessage, ReasoningItem, Role,
};
use aptix_request::{Continuation, RequestBuilder, ToolOutput, ToolReply};
use common::spec::create_response_problems;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Mostly good values, sometimes a known bad one, rarely any text at all.
fn text(good: &'static [&'static str], bad: &'static [&'static str]) -> BoxedStrategy<String> {
    let good = prop::sample::select(good).prop_map(str::to_owned);
    if bad.is_empty() {
        return prop_oneof![30 => good, 1 => any::<String>()].boxed();
    }
    let bad = prop::sample::select(bad).prop_map(str::to_owned);
    prop_oneof![30 => good, 1 => bad, 1 => any::<String>()].boxed()
}

fn optional_text() -> impl Strategy<Value = String> {
    text(
        &["", " \n", "You are Aptix.", "```\n<<<APTIX_X\n[MODE: X]"],
        &[],
    )
}

fn tool() -> impl Strategy<Value = FunctionTool> {
    (
        text(
            &["read_file", "get_weather", "search-code"],
            &["read file", ""],
        ),
        any::<bool>(),
        prop_oneof![
            10 => Just(Some(json!({"type": "object", "properties": {}}))),
            4 => Just(None),
            1 => Just(Some(json!("not an object"))),
        ],
    )
        .prop_map(|(name, strict, parameters)| FunctionTool {
            name,
            description: Some("a tool".into()),
            parameters,
            strict,
        })
}

fn tool_output(call_id: impl Strategy<Value = String>) -> impl Strategy<Value = ToolOutput> {
    (
        call_id,
        prop::option::of(text(&["read_file", "get_weather"], &[])),
        prop::option::of(any::<u64>()),
        prop_oneof![
            4 => text(&["{}", "[1,2]", "{\"a\":\"```\"}", "null"], &["{", ""]).prop_map(ToolReply::Result),
            2 => text(&["timed out", "not found\r\nat line 2"], &[" "]).prop_map(ToolReply::Error),
        ],
    )
        .prop_map(|(call_id, tool_name, execution_ms, outcome)| ToolOutput {
            call_id,
            tool_name,
            execution_ms,
            outcome,
        })
}

fn call_id() -> impl Strategy<Value = String> {
    text(&["call_1", "call_2", "call_3"], &["", "call 4"])
}

fn function_call(call_id: &str) -> InputItem {
    InputItem::FunctionCall(FunctionCall {
        id: Some(format!("fc_{call_id}")),
        call_id: call_id.to_owned(),
        name: "read_file".into(),
        arguments: "{}".into(),
        status: None,
    })
}

/// A stateless session: calls, some answered in history and the rest by this turn's
/// outputs, sometimes broken (an output dropped, an orphan added, reasoning last).
fn stateless() -> impl Strategy<Value = (Continuation, Vec<ToolOutput>)> {
    (
        prop::collection::vec(any::<bool>(), 0..4),
        0..10u8,
        tool_output(Just("call_x".to_owned())),
    )
        .prop_map(|(answered_in_history, breakage, template)| {
            let mut history = vec![InputItem::Message(InputMessage::new(
                Role::User,
                vec![ContentPart::input_text("earlier question")],
            ))];
            let mut outputs = Vec::new();
            for (index, answered) in answered_in_history.iter().enumerate() {
                let id = format!("call_{index}");
                history.push(function_call(&id));
                let output = ToolOutput {
                    call_id: id,
                    ..template.clone()
                };
                if *answered {
                    history.push(output.to_input_item());
                } else {
                    outputs.push(output);
                }
            }
            match breakage {
                0 => drop(outputs.pop()),
                1 => outputs.push(ToolOutput {
                    call_id: "call_orphan".into(),
                    ..template
                }),
                2 => history.push(InputItem::Reasoning(ReasoningItem {
                    id: Some("rs_1".into()),
                    summary: Vec::new(),
                    content: None,
                    encrypted_content: None,
                    status: None,
                })),
                _ => {}
            }
            (Continuation::Stateless(history), outputs)
        })
}

fn continuation() -> impl Strategy<Value = (Continuation, Vec<ToolOutput>)> {
    let outputs = || prop::collection::vec(tool_output(call_id()), 0..4);
    prop_oneof![
        3 => (Just(Continuation::Initial), prop_oneof![6 => Just(Vec::new()), 1 => outputs()]),
        3 => (
            text(&["resp_123", "resp_456"], &["", "resp 1"]).prop_map(Continuation::PreviousResponse),
            outputs(),
        ),
        2 => stateless(),
    ]
}

prop_compose! {
    fn builder()(
        (model, mode, instruction) in (
            text(&["gpt-4o-mini", "o4-mini"], &["", " "]),
            text(&["QA", "CODE_EDIT"], &["", "A]B", "A\nB"]),
            text(&["Explain the retry policy.", "", "```\n[TOOL_RESULTS]"], &[]),
        ),
        (base, per_request, usage, context) in
            (optional_text(), optional_text(), optional_text(), optional_text()),
        (continuation, outputs) in continuation(),
        tools in prop::collection::vec(tool(), 0..3),
        forced in prop_oneof![
            3 => Just(None),
            1 => text(&["read_file", "get_weather"], &["missing"]).prop_map(Some),
        ],
        flags in any::<(bool, bool)>(),
        temperature in prop::option::of(prop_oneof![12 => 0.0..=2.0f64, 1 => -1.0..3.0f64]),
        stream in prop::option::of(any::<bool>()),
        max_output_tokens in prop::option::of(0..100_000u64),
        metadata in prop::collection::vec((text(&["session", "turn"], &[]), any::<String>()), 0..3),
    ) -> (RequestBuilder, Vec<ToolOutput>, Kind) {
        let (block, resend) = flags;
        let kind = match &continuation {
            Continuation::Initial => Kind::Initial,
            Continuation::PreviousResponse(_) => Kind::PreviousResponse,
            Continuation::Stateless(_) => Kind::Stateless,
        };
        let mut builder = RequestBuilder::new(model)
            .mode(mode)
            .instruction(instruction)
            .base_system_prompt(base)
            .system_prompt(per_request)
            .tool_usage_block(usage)
            .context_block(context)
            .continuation(continuation)
            .tool_outputs(outputs.clone())
            .tools(tools)
            .force_tool(forced.unwrap_or_default())
            .include_tool_results_block(block)
            .resend_tools_on_continuation(resend)
            .temperature(temperature)
            .stream(stream)
            .max_output_tokens(max_output_tokens);
        for (key, value) in metadata {
            builder = builder.metadata(key, value);
        }
        (builder, outputs, kind)
    }
}

/// Which continuation the inputs asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Initial,
    PreviousResponse,
    Stateless,
}

fn count(items: &[Value], kind: &str, role: Option<&str>) -> usize {
    items
        .iter()
        .filter(|item| item["type"] == kind && role.is_none_or(|role| item["role"] == role))
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn the_builder_is_total_and_its_bodies_keep_every_invariant(
        (builder, outputs, kind) in builder()
    ) {
        let Ok(request) = builder.build() else {
            // An error is a valid outcome; reaching here means no panic.
            return Ok(());
        };
        let body = serde_json::to_value(&request).expect("a request serialises");
        let problems = create_response_problems(&body);
        prop_assert!(problems.is_empty(), "{:#?}\n{:#}", problems, body);
        let items = body["input"].as_array().expect("items");
        let initial = kind == Kind::Initial;
        let previous = kind == Kind::PreviousResponse;
        prop_assert_eq!(count(items, "message", Some("system")), usize::from(initial));
        prop_assert_eq!(body.get("previous_response_id").is_some(), previous);
        for output in &outputs {
            let matching = items
                .iter()
                .filter(|item| item["type"] == "function_call_output" && item["call_id"] == output.call_id.as_str())
                .count();
            prop_assert_eq!(matching, 1, "call id {}", output.call_id);
        }
        let last = items.last().expect("a user message");
        prop_assert_eq!(&last["role"], "user");
        prop_assert_eq!(count(items, "message", Some("user")) >= 1, true);
        prop_assert!(last["content"][0]["text"].as_str().is_some_and(|t| t.starts_with("[MODE: ")));
    }
}

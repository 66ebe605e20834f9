//! The typed server-tool helper: the schema comes from the argument type, good
//! arguments reach the tool decoded, and bad ones go back to the model as the call's
//! error without running the tool.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aptix_client::FakeProvider;
use aptix_model::contract::{AgentExecuteRequest, Kind};
use aptix_model::wire::Response;
use aptix_orchestrator::{
    InMemorySessionStore, Orchestrator, OrchestratorConfig, ServerTool, Typed, TypedTool,
};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct GrepArgs {
    /// The text to look for.
    pattern: String,
    /// At most this many hits.
    max_results: Option<u32>,
}

#[derive(Serialize)]
struct GrepHits {
    hits: Vec<String>,
}

struct Grep {
    runs: AtomicUsize,
}

#[async_trait]
impl TypedTool for Grep {
    const NAME: &'static str = "grep";
    type Args = GrepArgs;
    type Output = GrepHits;
    type Error = String;

    fn description(&self) -> &str {
        "Searches the workspace"
    }

    async fn call(&self, args: GrepArgs) -> Result<GrepHits, String> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if args.pattern.is_empty() {
            return Err("the pattern is empty".into());
        }
        let n = args.max_results.unwrap_or(2) as usize;
        Ok(GrepHits {
            hits: (0..n)
                .map(|i| format!("src/{i}.rs: {}", args.pattern))
                .collect(),
        })
    }
}

fn grep() -> Arc<Typed<Grep>> {
    Arc::new(Typed::new(Grep {
        runs: AtomicUsize::new(0),
    }))
}

fn call_then_answer(arguments: &str) -> Arc<FakeProvider> {
    let provider = Arc::new(FakeProvider::new());
    let call: Response = serde_json::from_value(json!({
        "id": "resp_1", "status": "completed", "model": "m",
        "output": [{"type": "function_call", "call_id": "call_1", "name": "grep",
                    "arguments": arguments}]
    }))
    .unwrap();
    let answer: Response = serde_json::from_value(json!({
        "id": "resp_2", "status": "completed", "model": "m",
        "output": [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "Done."}]}]
    }))
    .unwrap();
    provider.push_response(call).push_response(answer);
    provider
}

/// The `output` of the `function_call_output` item the second request sent.
async fn tool_output_sent(arguments: &str, tool: Arc<Typed<Grep>>) -> String {
    tool_output_sent_with(arguments, tool, OrchestratorConfig::default()).await
}

/// [`tool_output_sent`] by an orchestrator of this configuration.
async fn tool_output_sent_with(
    arguments: &str,
    tool: Arc<Typed<Grep>>,
    config: OrchestratorConfig,
) -> String {
    let provider = call_then_answer(arguments);
    let orchestrator =
        Orchestrator::builder(provider.clone(), Arc::new(InMemorySessionStore::new()))
            .server_tool(tool)
            .config(config)
            .build()
            .unwrap();
    let request = AgentExecuteRequest::from_json_slice(
        br#"{"sessionId": "s1", "turnId": "t1", "instruction": "Find main"}"#,
    )
    .unwrap();
    let envelope = orchestrator.execute(request).await.unwrap();
    assert_eq!(envelope.kind, Kind::Ok);
    let requests = provider.requests();
    assert_eq!(requests.len(), 2);
    let second = serde_json::to_value(&requests[1]).unwrap();
    let item = second["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .unwrap()
        .clone();
    assert_eq!(item["call_id"], "call_1");
    item["output"].as_str().unwrap().to_owned()
}

#[test]
fn the_parameters_schema_is_derived_from_the_argument_type() {
    let tool = grep();
    assert_eq!(tool.name(), "grep");
    let schema = tool.parameters();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["pattern"]["type"], "string");
    assert_eq!(
        schema["properties"]["pattern"]["description"],
        "The text to look for."
    );
    assert_eq!(schema["required"], json!(["pattern"]));
    assert!(schema["properties"]["max_results"].is_object());
    assert!(schema.get("$schema").is_none(), "{schema}");
    // The provider receives it as the function tool's parameters.
    let provider = Arc::new(FakeProvider::new());
    let orchestrator = Orchestrator::builder(provider, Arc::new(InMemorySessionStore::new()))
        .server_tool(tool)
        .build()
        .unwrap();
    let request = AgentExecuteRequest::from_json_slice(
        br#"{"sessionId": "s1", "turnId": "t1", "instruction": "Find main"}"#,
    )
    .unwrap();
    let body = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(orchestrator.dry_run(&request))
        .unwrap();
    let body = serde_json::to_value(&body).unwrap();
    let sent = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "grep")
        .unwrap();
    assert_eq!(sent["parameters"], schema);
}

#[tokio::test]
async fn good_arguments_reach_the_tool_decoded_and_its_output_goes_back_as_json() {
    let tool = grep();
    let output =
        tool_output_sent(r#"{"pattern": "fn main", "max_results": 1}"#, tool.clone()).await;
    assert_eq!(
        serde_json::from_str::<Value>(&output).unwrap(),
        json!({"hits": ["src/0.rs: fn main"]})
    );
    assert_eq!(tool.inner().runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_arguments_come_back_to_the_model_as_a_tool_error_naming_the_fault() {
    let tool = grep();
    let missing = error_text(&tool_output_sent(r#"{"max_results": 3}"#, tool.clone()).await);
    assert!(
        missing.starts_with("invalid arguments for grep: "),
        "{missing}"
    );
    assert!(missing.contains("missing field `pattern`"), "{missing}");

    let wrong_type = error_text(
        &tool_output_sent(r#"{"pattern": "x", "max_results": "ten"}"#, tool.clone()).await,
    );
    assert!(wrong_type.contains("at `max_results`"), "{wrong_type}");
    assert!(
        wrong_type.contains("invalid type: string \"ten\", expected u32"),
        "{wrong_type}"
    );

    let not_json = error_text(&tool_output_sent("{pattern:", tool.clone()).await);
    assert!(
        not_json.starts_with("invalid arguments for grep: "),
        "{not_json}"
    );

    let trailing = error_text(&tool_output_sent(r#"{"pattern": "x"} extra"#, tool.clone()).await);
    assert!(trailing.contains("trailing characters"), "{trailing}");

    assert_eq!(
        tool.inner().runs.load(Ordering::SeqCst),
        0,
        "the tool never ran on bad arguments"
    );
}

#[tokio::test]
async fn no_arguments_at_all_read_as_an_empty_object() {
    let tool = grep();
    for blank in ["", "  \n"] {
        let error = tool.execute(blank).await.unwrap_err();
        assert!(error.contains("missing field `pattern`"), "{error}");
    }
}

#[tokio::test]
async fn a_failed_call_sends_the_tools_error_text() {
    let output = tool_output_sent(r#"{"pattern": ""}"#, grep()).await;
    assert_eq!(error_text(&output), "the pattern is empty");
}

/// The error message of a failed call's output (`{"error": "..."}`).
fn error_text(output: &str) -> String {
    let value: Value = serde_json::from_str(output).unwrap();
    value["error"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_streamed_turn_says_when_a_server_tool_runs_and_how_it_ended() {
    let provider = call_then_answer(r#"{"pattern": "main"}"#);
    let orchestrator = Orchestrator::builder(provider, Arc::new(InMemorySessionStore::new()))
        .server_tool(grep())
        .build()
        .unwrap();
    let request = AgentExecuteRequest::from_json_slice(
        br#"{"sessionId": "s1", "turnId": "t1", "instruction": "Find main"}"#,
    )
    .unwrap();
    let mut seen = Vec::new();
    let mut sink = |delta: &aptix_mapping::StreamDelta| seen.push(delta.clone());
    let envelope = orchestrator
        .execute_streaming(request, &mut sink)
        .await
        .unwrap();
    assert_eq!(envelope.kind, Kind::Ok);
    let tool_events: Vec<_> = seen
        .iter()
        .filter_map(|delta| match delta {
            aptix_mapping::StreamDelta::ToolRunning { call_id, name } => {
                Some(format!("running {call_id} {name}"))
            }
            aptix_mapping::StreamDelta::ToolFinished {
                call_id,
                name,
                ok,
                output,
                ..
            } => {
                assert!(output.contains("main"), "{output}");
                Some(format!("finished {call_id} {name} {ok}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        tool_events,
        ["running call_1 grep", "finished call_1 grep true"]
    );
}

/// A tool whose arguments follow strict mode's rules, and says it is strict.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ExactArgs {
    path: String,
}

struct Exact;

#[async_trait]
impl TypedTool for Exact {
    const NAME: &'static str = "exact";
    type Args = ExactArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> &str {
        "Reads exactly one path"
    }

    fn strict(&self) -> bool {
        true
    }

    async fn call(&self, args: ExactArgs) -> Result<String, String> {
        Ok(args.path)
    }
}

#[tokio::test]
async fn a_typed_tool_that_says_it_is_strict_is_offered_strict() {
    let provider = Arc::new(FakeProvider::new());
    provider.push_response(
        serde_json::from_value::<Response>(json!({
            "id": "resp_1", "status": "completed", "model": "m",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "ok"}]}]
        }))
        .unwrap(),
    );
    let orchestrator = Orchestrator::builder(
        Arc::clone(&provider) as _,
        Arc::new(InMemorySessionStore::new()),
    )
    .server_tool(Arc::new(Typed::new(Exact)))
    .server_tool(grep())
    .build()
    .unwrap();
    let request = AgentExecuteRequest::from_json_value(
        &json!({"sessionId": "s", "turnId": "t", "instruction": "Read it"}),
    )
    .unwrap();
    assert_eq!(orchestrator.execute(request).await.unwrap().kind, Kind::Ok);
    let sent = serde_json::to_value(&provider.calls()[0].request).unwrap();
    let strict_of = |name: &str| {
        sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["strict"].clone())
            .unwrap_or_else(|| panic!("no {name} in {sent}"))
    };
    assert_eq!(strict_of("exact"), json!(true), "{sent}");
    assert_ne!(strict_of("grep"), json!(true), "{sent}");
    assert_eq!(
        Typed::new(Exact).parameters()["additionalProperties"],
        json!(false)
    );
}

/// Strict, with an optional field (and no `deny_unknown_fields`), as users write them.
#[derive(Deserialize, JsonSchema)]
struct SearchArgs {
    pattern: String,
    max_results: Option<u32>,
}

struct StrictSearch;

#[async_trait]
impl TypedTool for StrictSearch {
    const NAME: &'static str = "strict_search";
    type Args = SearchArgs;
    type Output = String;
    type Error = String;

    fn description(&self) -> &str {
        "Searches"
    }

    fn strict(&self) -> bool {
        true
    }

    async fn call(&self, args: SearchArgs) -> Result<String, String> {
        Ok(format!("{} {:?}", args.pattern, args.max_results))
    }
}

/// Strict, with a map field, which strict mode cannot express.
#[derive(Deserialize, JsonSchema)]
struct TaggedArgs {
    tags: std::collections::HashMap<String, String>,
}

struct Tagged;

#[async_trait]
impl TypedTool for Tagged {
    const NAME: &'static str = "tagged";
    type Args = TaggedArgs;
    type Output = usize;
    type Error = String;

    fn description(&self) -> &str {
        "Counts tags"
    }

    fn strict(&self) -> bool {
        true
    }

    async fn call(&self, args: TaggedArgs) -> Result<usize, String> {
        Ok(args.tags.len())
    }
}

#[test]
fn a_strict_tools_schema_is_made_what_strict_mode_accepts() {
    // schemars derives `Option<u32>` as optional, with `format: uint32`: strict mode
    // wants every property required (an optional one nullable), objects closed, and no
    // integer formats. The provider refused the first call otherwise.
    let tool = Typed::new(StrictSearch);
    assert!(tool.strict());
    let parameters = tool.parameters();
    assert_eq!(
        parameters["required"],
        json!(["pattern", "max_results"]),
        "{parameters}"
    );
    assert_eq!(
        parameters["additionalProperties"],
        json!(false),
        "{parameters}"
    );
    let max_results = &parameters["properties"]["max_results"];
    assert!(max_results.get("format").is_none(), "{parameters}");
    assert!(max_results.to_string().contains("null"), "{parameters}");
    // A schema strict mode cannot express is offered as derived, not strict.
    let tool = Typed::new(Tagged);
    assert!(!tool.strict());
    assert!(tool.parameters()["properties"]["tags"].is_object());
}

#[tokio::test]
async fn a_tool_result_too_large_for_the_context_is_cut_saying_so() {
    // A tool of the user's that answers with megabytes (a whole log, a table) would
    // fill the model's window by itself, sent as the output and in [TOOL_RESULTS].
    let output = tool_output_sent(r#"{"pattern": "needle", "max_results": 20000}"#, grep()).await;
    assert!(output.len() < 70 * 1024, "{} bytes sent", output.len());
    assert!(
        output.contains("more bytes of this result were left out"),
        "{}",
        &output[output.len() - 200..]
    );
    // A small window takes less: an eighth of it (the result is sent twice), 4 KiB of
    // an 8k window, where a 12 KB file read whole overflowed it by itself.
    let small = OrchestratorConfig {
        context_window: Some(8_192),
        ..OrchestratorConfig::default()
    };
    let output = tool_output_sent_with(
        r#"{"pattern": "needle", "max_results": 20000}"#,
        grep(),
        small,
    )
    .await;
    // (The cut is of the text; its JSON escaping adds a little.)
    assert!(output.len() < 5 * 1024, "{} bytes sent", output.len());
    assert!(
        output.contains("ask for less at a time"),
        "{}",
        &output[output.len() - 200..]
    );
}

//! The provider's key stays out of what a session stores: a workspace file that holds
//! it reaches a request as retrieved context, an attachment or a tool's output, and the
//! store (a team's PostgreSQL database among them) would otherwise keep it. The HTTP
//! providers also take it out of every body they send; here the provider is scripted,
//! and only its [`Redactor`] is the real one. What a front end is shown of a tool's
//! output is redacted the same way.

use std::sync::Arc;

use aptix_client::{
    Capabilities, ClientError, FakeProvider, ProviderResponse, Redactor, ResponsesProvider,
};
use aptix_model::contract::{AgentExecuteRequest, Kind};
use aptix_model::wire::{CreateResponseRequest, Response};
use aptix_orchestrator::{InMemorySessionStore, Orchestrator, ServerTool, SessionStore};
use async_trait::async_trait;
use serde_json::json;

const KEY: &str = "sk-proxy-5up3rs3cr3t";

/// A scripted provider that holds [`KEY`], as an HTTP provider holds its API key.
struct Keyed {
    inner: Arc<FakeProvider>,
    redactor: Arc<Redactor>,
}

#[async_trait]
impl ResponsesProvider for Keyed {
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        self.inner.create(request).await
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::stateless_responses()
    }

    fn redactor(&self) -> Option<Arc<Redactor>> {
        Some(Arc::clone(&self.redactor))
    }
}

/// A tool that reads a config file of the workspace, key and all.
struct ReadConfig;

#[async_trait]
impl ServerTool for ReadConfig {
    fn name(&self) -> &str {
        "read_config"
    }
    fn description(&self) -> &str {
        "Reads the proxy's config."
    }
    fn parameters(&self) -> serde_json::Value {
        json!({"type": "object", "properties": {}})
    }
    async fn execute(&self, _arguments_json: &str) -> Result<String, String> {
        Ok(json!({"config": format!("[proxy]\nkey = \"{KEY}\"\n")}).to_string())
    }
}

fn response(value: serde_json::Value) -> Response {
    serde_json::from_value(value).unwrap()
}

#[tokio::test]
async fn the_key_in_a_turns_inputs_and_tool_outputs_is_not_stored() {
    let fake = Arc::new(FakeProvider::new());
    fake.push_response(response(json!({
        "id": "resp_1", "status": "completed", "model": "m",
        "output": [{"type": "function_call", "call_id": "call_1", "name": "read_config",
                    "arguments": "{}"}]
    })))
    .push_response(response(json!({
        "id": "resp_2", "status": "completed", "model": "m",
        "output": [{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": "The proxy is configured."}]}]
    })));
    let store = Arc::new(InMemorySessionStore::new());
    let provider = Arc::new(Keyed {
        inner: Arc::clone(&fake),
        redactor: Arc::new(Redactor::new(KEY)),
    });
    let orchestrator = Orchestrator::builder(provider, Arc::clone(&store) as Arc<dyn SessionStore>)
        .server_tool(Arc::new(ReadConfig))
        .build()
        .unwrap();
    // An attachment holding the key, as a file of the workspace would.
    let request = AgentExecuteRequest::from_json_value(&json!({
        "sessionId": "s", "turnId": "t",
        "instruction": "Is the proxy configured?",
        "files": [{"path": "proxy.toml", "content": format!("[proxy]\nkey = \"{KEY}\"\n")}]
    }))
    .unwrap();
    // Streamed, as a front end runs it: the tool's output reaches the sink too.
    let mut finished = Vec::new();
    let mut sink = |delta: &aptix_mapping::StreamDelta| {
        if let aptix_mapping::StreamDelta::ToolFinished { output, .. } = delta {
            finished.push(output.clone());
        }
    };
    let envelope = orchestrator
        .execute_streaming(request, &mut sink)
        .await
        .unwrap();
    assert_eq!(envelope.kind, Kind::Ok, "{envelope:?}");
    // An editor's tool card or a service's `event: tool` shows it without the key.
    assert_eq!(finished.len(), 1);
    assert!(
        !finished[0].contains(KEY) && finished[0].contains("[redacted]"),
        "{finished:?}"
    );
    // The scripted provider got it (a real one sends `[redacted]`): the turn's inputs
    // held it.
    assert!(
        fake.requests()
            .iter()
            .any(|sent| serde_json::to_string(sent).unwrap().contains(KEY))
    );
    let stored =
        serde_json::to_string(&store.load_full("s").await.unwrap().unwrap().value).unwrap();
    assert!(!stored.contains(KEY), "{stored}");
    assert!(stored.contains("[redacted]"), "{stored}");
    // What the turn said is kept apart from the key: the question, and the tool round.
    assert!(stored.contains("Is the proxy configured?"), "{stored}");
    assert!(stored.contains("call_1"), "{stored}");
}

#[test]
fn a_redactor_takes_out_only_its_secret_and_shows_nothing_of_it() {
    let redactor = Redactor::new(KEY);
    assert_eq!(redactor.redact("nothing here"), None);
    assert_eq!(
        redactor.redact(&format!("a {KEY} and {KEY}")).as_deref(),
        Some("a [redacted] and [redacted]")
    );
    assert!(!format!("{redactor:?}").contains(KEY));
}

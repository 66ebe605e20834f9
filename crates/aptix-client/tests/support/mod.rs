//! Test support shared by the HTTP tests: configurations pointed at a local server,
//! fixture helpers and the in-repo streaming fake server.

#![allow(dead_code, unreachable_pub)]

pub mod fake_server;

use aptix_client::{OpenAiConfig, OpenAiConfigBuilder, RetryPolicy};
use aptix_model::wire::{CreateResponseRequest, Input};
use std::time::Duration;

/// Mounts `reply` on `server` for the next POST only, ahead of the mocks of lower
/// `priority` (wiremock tries 1 first): a failure a retry gets past.
pub async fn reply_once(
    server: &wiremock::MockServer,
    reply: wiremock::ResponseTemplate,
    priority: u8,
) {
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .respond_with(reply)
        .up_to_n_times(1)
        .with_priority(priority)
        .mount(server)
        .await;
}

/// A key that must never show up in any output.
pub const TEST_KEY: &str = "sk-test-aptix-7f3c9e21-DO-NOT-LEAK";

/// A configuration for a server at `uri` (`http://127.0.0.1:port`), with the test key
/// and short backoff so real-time tests stay fast.
pub fn config(uri: &str) -> OpenAiConfigBuilder {
    OpenAiConfig::builder()
        .base_url(format!("{uri}/v1"))
        .api_key(TEST_KEY)
        .retry(RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(4),
            ..RetryPolicy::default()
        })
}

/// A configuration for tests on tokio's paused clock. The mock server answers from
/// another thread, and a paused clock jumps to the next timer whenever this runtime is
/// idle, so any timer pending while a reply is in flight would fire early: no request
/// or connect timeout and no pool idle timer, leaving backon's sleep as the only
/// timer, so elapsed time is exactly the waits the policy chose.
pub fn paused_config(uri: &str) -> OpenAiConfigBuilder {
    config(uri)
        .connect_timeout(None)
        .request_timeout(None)
        .stream_idle_timeout(None)
        .pool_idle_timeout(None)
}

/// A small text request.
pub fn request() -> CreateResponseRequest {
    CreateResponseRequest {
        model: "gpt-4o-mini".into(),
        input: Input::Text("Say hello".into()),
        ..CreateResponseRequest::default()
    }
}

/// The headers of a recorded `headers_*.json` fixture.
pub fn fixture_headers(name: &str) -> Vec<(String, String)> {
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&aptix_testkit::read_fixture(name)).unwrap();
    map.into_iter()
        .filter(|(name, _)| {
            // Framing headers describe the recorded body, not the one the mock sends.
            !matches!(
                name.to_ascii_lowercase().as_str(),
                "content-length" | "transfer-encoding" | "connection" | "content-type"
            )
        })
        .map(|(name, value)| (name, value.as_str().unwrap().to_owned()))
        .collect()
}

/// Every event of a stream, decoded into the wire type (an `Err` item stays one).
pub async fn typed_events(
    stream: aptix_client::EventStream,
) -> Vec<Result<aptix_model::wire::StreamEvent, aptix_client::ClientError>> {
    use futures_util::StreamExt;
    stream
        .map(|item| {
            item.map(|event| {
                aptix_model::wire::StreamEvent::from_json(&event.data)
                    .unwrap_or_else(|error| panic!("event data is not an event: {error}"))
            })
        })
        .collect()
        .await
}

/// What a stream folds to, as the orchestrator folds it: `Err(Ok(...))` is a
/// connection problem, `Err(Err(...))` the fold's verdict (a failed or cut stream).
pub async fn fold(
    mut stream: aptix_client::EventStream,
) -> Result<
    aptix_mapping::FoldedStream,
    Result<aptix_client::ClientError, aptix_mapping::MappingError>,
> {
    use futures_util::StreamExt;
    let mut fold = aptix_mapping::StreamFold::new();
    while !fold.is_finished() {
        match stream.next().await {
            Some(Ok(event)) => {
                fold.apply_sse(&event);
            }
            Some(Err(error)) => return Err(Ok(error)),
            None => break,
        }
    }
    fold.finish().map_err(Err)
}

//! A provider that hands over the body it received makes the envelope's
//! `rawResponseJson` byte for byte, without encoding the response again.

use std::sync::Arc;

use aptix_client::{Capabilities, ClientError, ProviderResponse, ReplyMeta, ResponsesProvider};
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::{CreateResponseRequest, Response};
use aptix_orchestrator::{InMemorySessionStore, Orchestrator};
use async_trait::async_trait;

/// Spacing and key order no encoder would produce.
const BODY: &str = r#"{ "status" : "completed", "id":"resp_1",
  "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]}] }"#;

struct WithBody;

#[async_trait]
impl ResponsesProvider for WithBody {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        let response: Response = serde_json::from_str(BODY).unwrap();
        let mut reply = ProviderResponse::new(response, ReplyMeta::synthetic());
        reply.raw_json = Some(BODY.to_owned());
        Ok(reply)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

#[tokio::test]
async fn the_providers_body_is_the_envelopes_raw_response_json() {
    let orchestrator =
        Orchestrator::builder(Arc::new(WithBody), Arc::new(InMemorySessionStore::new()))
            .build()
            .unwrap();
    let request = AgentExecuteRequest::from_json_slice(
        br#"{"sessionId": "s1", "turnId": "t1", "instruction": "Hi"}"#,
    )
    .unwrap();
    let envelope = orchestrator.execute(request).await.unwrap();
    assert_eq!(envelope.text.as_deref(), Some("Hi."));
    assert_eq!(envelope.raw_response_json.as_deref(), Some(BODY));
}

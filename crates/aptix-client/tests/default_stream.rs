//! A provider that implements only `create` still streams: the trait's default `stream`
//! answers with `create` and plays the whole reply as the events that would have carried
//! it (each item added, its text or arguments as one delta, the item done, the terminal
//! event), which the stream fold reads as the same response, deltas included.

use std::sync::atomic::{AtomicUsize, Ordering};

use aptix_client::{Capabilities, ClientError, ProviderResponse, ReplyMeta, ResponsesProvider};
use aptix_mapping::{StreamDelta, StreamFold};
use aptix_model::wire::{CreateResponseRequest, Response, StreamEvent};
use async_trait::async_trait;
use futures_util::StreamExt;

/// Implements `create` and `capabilities` only.
struct CreateOnly {
    calls: AtomicUsize,
}

#[async_trait]
impl ResponsesProvider for CreateOnly {
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let response: Response = serde_json::from_value(serde_json::json!({
            "id": "resp_1", "status": "completed", "model": request.model,
            "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Whole.", "annotations": []}]},
                       {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                        "name": "read_file", "arguments": "{\"path\":\"a.rs\"}"}]
        }))
        .map_err(|error| ClientError::Config {
            field: "script".into(),
            reason: error.to_string(),
        })?;
        Ok(ProviderResponse::new(response, ReplyMeta::synthetic()))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
}

#[tokio::test]
async fn a_provider_implementing_only_create_streams_through_the_default() {
    let provider = CreateOnly {
        calls: AtomicUsize::new(0),
    };
    let request = CreateResponseRequest {
        model: "m".into(),
        ..CreateResponseRequest::default()
    };
    let direct = provider.create(&request).await.unwrap().response;

    let mut stream = provider.stream(&request).await.unwrap();
    let mut types = Vec::new();
    let mut fold = StreamFold::new();
    let mut deltas = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        types.push(
            StreamEvent::from_json(&event.data)
                .unwrap()
                .type_name()
                .unwrap()
                .to_owned(),
        );
        deltas.extend(fold.apply_sse(&event));
    }
    assert_eq!(
        types,
        [
            "response.created",
            "response.output_item.added",
            "response.output_text.delta",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.output_item.done",
            "response.completed",
        ]
    );
    assert_eq!(
        provider.calls.load(Ordering::SeqCst),
        2,
        "stream called create once"
    );
    // What a caller showing deltas shows: the text, and the call with its arguments.
    let text: String = deltas.iter().filter_map(StreamDelta::text).collect();
    assert_eq!(text, "Whole.");
    assert!(deltas.iter().any(|delta| matches!(delta,
        StreamDelta::ToolArgumentsDelta { call_id, delta, .. }
            if call_id == "call_1" && delta == r#"{"path":"a.rs"}"#)));
    let folded = fold.finish().unwrap();
    assert!(folded.warnings.is_empty(), "{:?}", folded.warnings);
    assert_eq!(folded.streamed_output, direct.output);
    assert_eq!(folded.response, direct);
}

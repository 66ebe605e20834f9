//! `POST /v1/responses/compact`: a conversation compacted by the provider.
//!
//! The request names the model and the conversation (its `input` items, or the
//! `previous_response_id` of a stored one); the reply's `output` is the compacted list
//! of items (the kept user messages and an opaque `compaction` item carrying the rest as
//! `encrypted_content`) that replaces the conversation in the next request's `input`.
//! The output items are read as [`InputItem`]s because that is what they become; a
//! `compaction` item, which this version does not model, is kept as received
//! ([`InputItem::Other`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::input::{Input, InputItem};
use super::usage::Usage;

/// The body of `POST /v1/responses/compact` (`CompactResponseMethodPublicBody`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactRequest {
    /// The model id.
    pub model: String,
    /// The conversation to compact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<Input>,
    /// A stored response whose conversation is compacted (instead of, or before,
    /// `input`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_response_id: Option<String>,
    /// A system (developer) message for the compaction pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Every other field, kept as given.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// The reply of `POST /v1/responses/compact` (`CompactResource`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompactResponse {
    /// The compaction's id.
    #[serde(default)]
    pub id: String,
    /// Always `response.compaction`.
    #[serde(default)]
    pub object: String,
    /// The compacted items, in order: the next request's `input` starts with them.
    #[serde(default)]
    pub output: Vec<InputItem>,
    /// When it was made (Unix seconds).
    #[serde(default)]
    pub created_at: u64,
    /// Tokens the compaction pass used.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Fields this version does not know.
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's example reply (`CompactResource.example`) plus an assistant message
    /// as the API returns it.
    #[test]
    fn the_spec_example_decodes_and_keeps_the_compaction_item() {
        let json = r#"{
            "id": "resp_001", "object": "response.compaction", "created_at": 1731459200,
            "output": [
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "Summarize our launch checklist from last week."}]},
                {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                 "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": "Done."}]},
                {"type": "compaction", "id": "cmp_001", "encrypted_content": "encrypted-summary"}
            ],
            "usage": {"input_tokens": 42897, "output_tokens": 12000, "total_tokens": 54912}
        }"#;
        let reply: CompactResponse = serde_json::from_str(json).unwrap();
        assert_eq!(reply.output.len(), 3);
        assert!(matches!(reply.output[0], InputItem::Message(_)));
        assert!(matches!(reply.output[1], InputItem::Message(_)));
        let InputItem::Other(raw) = &reply.output[2] else {
            panic!("the compaction item is kept raw: {:?}", reply.output[2]);
        };
        assert_eq!(raw["encrypted_content"], "encrypted-summary");
        assert_eq!(reply.usage.unwrap().input_tokens, 42897);
        // Sent back as input, the compaction item is the JSON received.
        let again = serde_json::to_value(&reply.output[2]).unwrap();
        assert_eq!(again["type"], "compaction");
        assert_eq!(again["id"], "cmp_001");
    }

    #[test]
    fn a_request_omits_what_is_unset() {
        let request = CompactRequest {
            model: "gpt-5".into(),
            previous_response_id: Some("resp_1".into()),
            ..CompactRequest::default()
        };
        assert_eq!(
            serde_json::to_value(&request).unwrap(),
            serde_json::json!({"model": "gpt-5", "previous_response_id": "resp_1"})
        );
    }
}

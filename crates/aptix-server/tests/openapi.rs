//! `docs/openapi.json` is the document the service generates: this test fails when the
//! two drift. Regenerate with `UPDATE_OPENAPI=1 cargo nextest run -p aptix-server
//! --test openapi` and commit the result.
//!
//! The document says what goes over the wire, and these tests hold it to what serde and
//! the validator do: the envelopes the mapper makes from every recorded reply, and every
//! AGN-034 request in the docs, are valid against its schemas (JSON Schema 2020-12, as
//! OpenAPI 3.1 uses); wrong shapes are not; each schema requires exactly the fields serde
//! always writes. The request's agreement with the validator, rule by rule, is checked by
//! `aptix-model`'s validator tests with its `openapi` feature.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use aptix_mapping::{Mapped, TurnContext, map_capture, map_error_body, map_transport_failure};
use aptix_model::contract::{
    AgentExecuteRequest, AgentExecuteResponse, AgentToolCall, BundleFile, FileBundle, FinishReason,
    Kind, LlmUsage, RateLimitInfo, RelativePath, SourceRef,
};
use aptix_testkit::openapi::Components;
use aptix_testkit::{fixture_names, read_fixture, repository_root};
use serde_json::{Value, json};

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
}

#[test]
fn the_committed_openapi_document_is_the_generated_one() {
    let generated = aptix_server::openapi_json();
    let path = committed_path();
    if std::env::var_os("UPDATE_OPENAPI").is_some_and(|value| value == "1") {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/openapi.json differs from the generated document; regenerate it with \
         `UPDATE_OPENAPI=1 cargo nextest run -p aptix-server --test openapi` and commit it"
    );
}

#[test]
fn every_response_declares_the_headers_it_carries() {
    let document: Value = serde_json::from_str(&aptix_server::openapi_json()).unwrap();
    let mut responses = 0;
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().unwrap() {
                let headers = &response["headers"];
                let place = format!("{method} {path} {status}");
                assert!(headers.get("x-request-id").is_some(), "{place}");
                assert_eq!(
                    headers.get("WWW-Authenticate").is_some(),
                    status == "401",
                    "{place}"
                );
                assert_eq!(
                    headers.get("Retry-After").is_some(),
                    status == "409" || status == "503",
                    "{place}"
                );
                responses += 1;
            }
        }
    }
    assert!(responses > 20, "{responses}");
}

#[test]
fn every_error_code_and_status_is_documented() {
    let document: Value = serde_json::from_str(&aptix_server::openapi_json()).unwrap();
    let codes: Vec<&str> = document["components"]["schemas"]["ErrorCode"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let execute = &document["paths"]["/v1/agent/execute"]["post"]["responses"];
    let mut described = String::new();
    for (status, response) in execute.as_object().unwrap() {
        let description = response["description"].as_str().unwrap();
        described.push_str(description);
        if status != "200" {
            assert_eq!(
                response["content"]["application/json"]["schema"]["$ref"],
                "#/components/schemas/Error",
                "{status}"
            );
        }
    }
    for status in [
        "200", "400", "401", "403", "404", "408", "409", "413", "415", "422", "500", "503", "504",
    ] {
        assert!(execute.get(status).is_some(), "{status} is not documented");
    }
    // Codes of no one route (an unknown path, a method a route does not take) are
    // described once, in the document's own description.
    described.push_str(document["info"]["description"].as_str().unwrap());
    assert_eq!(codes.len(), 19, "{codes:?}");
    for code in codes {
        assert!(
            described.contains(&format!("`{code}`")),
            "{code} is in no response's description, nor the document's"
        );
    }
    assert!(document["components"]["securitySchemes"]["bearer"].is_object());
}

/// The served document's component schemas.
fn components() -> &'static Components {
    static COMPONENTS: OnceLock<Components> = OnceLock::new();
    COMPONENTS.get_or_init(|| {
        let document: Value = serde_json::from_str(&aptix_server::openapi_json()).unwrap();
        Components::new(&document)
    })
}

/// A turn with everything the envelope echoes set: ids, mode, a source with a score and
/// one without, a request id and rate limits (one header missing).
fn full_turn() -> TurnContext {
    TurnContext {
        conversation_id: Some("session-42".into()),
        turn_id: Some("turn-7".into()),
        mode: Some("codegen".into()),
        agent_context_id: Some("agent-ctx-1".into()),
        conversation_context_id: Some("conv-ctx-1".into()),
        sources: vec![
            SourceRef {
                chunk_id: "chunk-1".into(),
                path: "src/weather.rs".into(),
                line_start: 10,
                line_end: 42,
                language: "rust".into(),
                score: Some(0.75),
            },
            SourceRef {
                chunk_id: "chunk-2".into(),
                path: "README.md".into(),
                line_start: 1,
                line_end: 3,
                language: "markdown".into(),
                score: None,
            },
        ],
        request_id: Some("req_123".into()),
        rate_limits: Some(RateLimitInfo {
            limit_requests: Some(500),
            remaining_requests: Some(499),
            reset_requests_ms: Some(120),
            limit_tokens: Some(30_000),
            remaining_tokens: None,
            reset_tokens_ms: Some(1_800),
        }),
    }
}

/// Every envelope the mapper makes from the recorded replies: each fixture through
/// `map_capture` (responses, error bodies, SSE streams), each error body with its status,
/// a response with no output, one with an unknown item (warnings, a finish reason outside
/// the known ones) and a transport failure, each with a full turn and with an empty one (`null`s
/// everywhere), plus one envelope with the fields the mapper never sets (a file bundle,
/// a refusal).
fn envelopes() -> Vec<(String, AgentExecuteResponse)> {
    let mut envelopes = Vec::new();
    for (turn_name, turn) in [("full", full_turn()), ("empty", TurnContext::default())] {
        let mut add = |label: String, mapped: Mapped| {
            envelopes.push((format!("{label} ({turn_name} turn)"), mapped.envelope));
        };
        let names: Vec<String> = fixture_names("")
            .into_iter()
            .filter(|name| {
                name.starts_with("response_")
                    || name.starts_with("error_")
                    || name.ends_with(".sse")
            })
            .collect();
        for name in names {
            let body = read_fixture(&name);
            add(name.clone(), map_capture(&body, &turn));
            if let Some(status) = name
                .strip_prefix("error_")
                .and_then(|rest| rest.split('_').next())
                .and_then(|status| status.parse().ok())
            {
                add(
                    format!("{name} as HTTP {status}"),
                    map_error_body(status, &body, &turn),
                );
            }
        }
        let nothing = br#"{"id":"resp_0","status":"completed","model":"m","output":[]}"#;
        add(
            "a response with no output".into(),
            map_capture(nothing, &turn),
        );
        let unknown =
            br#"{"id":"resp_1","status":"incomplete","output":[{"type":"brand_new_item"}]}"#;
        add(
            "a response with an unknown item".into(),
            map_capture(unknown, &turn),
        );
        add(
            "transport failure".into(),
            map_transport_failure("timeout", "the provider did not answer in 60s", &turn),
        );
    }
    envelopes.push((
        "a bundle and a refusal".into(),
        AgentExecuteResponse {
            kind: Kind::Other("partial".into()),
            finish_reason: Some(FinishReason::Other("cancelled".into())),
            refusal: Some("I can't help with that.".into()),
            file_bundle: Some(FileBundle {
                files: vec![BundleFile {
                    path: RelativePath::new("src/new.rs").unwrap(),
                    content: "fn x() {}".into(),
                }],
            }),
            tool_calls: vec![AgentToolCall {
                call_id: "call_1".into(),
                name: "read_file".into(),
                arguments_json: "{not json".into(),
            }],
            usage: LlmUsage {
                prompt_tokens: u64::MAX,
                ..LlmUsage::default()
            },
            ..AgentExecuteResponse::default()
        },
    ));
    envelopes
}

#[test]
fn envelopes_from_every_recorded_reply_match_the_schema() {
    let envelopes = envelopes();
    for (label, envelope) in &envelopes {
        let value = serde_json::to_value(envelope).unwrap();
        components().assert_valid("AgentExecuteResponse", label, &value);
    }
    // Not vacuous: every known kind and finish reason, tool calls, usage, a rate limit
    // left out and one given, and an error, were among them.
    let seen =
        |test: &dyn Fn(&AgentExecuteResponse) -> bool| envelopes.iter().any(|(_, e)| test(e));
    for kind in Kind::KNOWN {
        assert!(seen(&|e| &e.kind == kind), "no {kind} envelope");
    }
    for reason in [
        FinishReason::Stop,
        FinishReason::Length,
        FinishReason::ToolUse,
        FinishReason::Error,
    ] {
        assert!(
            seen(&|e| e.finish_reason.as_ref() == Some(&reason)),
            "no {reason} envelope"
        );
    }
    assert!(seen(
        &|e| !e.tool_calls.is_empty() && e.usage.total_tokens > 0
    ));
    assert!(seen(&|e| e
        .rate_limits
        .is_some_and(|limits| limits.remaining_tokens.is_none())));
    assert!(seen(
        &|e| e.error_code.is_some() && e.raw_response_json.is_some()
    ));
    assert!(seen(&|e| !e.warnings.is_empty()));
}

/// Every object an envelope holds, with the component that describes it.
fn objects_of(envelope: &Value) -> Vec<(&'static str, &Value)> {
    let mut objects = vec![
        ("AgentExecuteResponse", envelope),
        ("LlmUsage", &envelope["usage"]),
    ];
    let nested = [
        ("rateLimits", "RateLimitInfo"),
        ("fileBundle", "FileBundle"),
    ];
    for (field, component) in nested {
        if envelope[field].is_object() {
            objects.push((component, &envelope[field]));
        }
    }
    for (field, component) in [("sources", "SourceRef"), ("toolCalls", "AgentToolCall")] {
        for item in envelope[field].as_array().unwrap() {
            objects.push((component, item));
        }
    }
    if let Some(files) = envelope["fileBundle"]["files"].as_array() {
        for file in files {
            objects.push(("BundleFile", file));
        }
    }
    objects
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|object| object.keys().cloned().collect())
        .unwrap_or_default()
}

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn envelope_schemas_require_what_serde_always_writes_and_allow_more() {
    let mut checked = BTreeSet::new();
    for (label, envelope) in envelopes() {
        let value = serde_json::to_value(&envelope).unwrap();
        for (component, object) in objects_of(&value) {
            let schema = components().schema(component);
            // serde writes every field, `null` included, so all are required...
            assert_eq!(
                keys(object),
                strings(&schema["required"]),
                "{label}: {component} required"
            );
            assert_eq!(
                keys(object),
                keys(&schema["properties"]),
                "{label}: {component} properties"
            );
            // ...and reads unknown fields without failing (forward compatibility), so the
            // schema does not close the object either.
            assert!(schema.get("additionalProperties").is_none(), "{component}");
            checked.insert(component);
        }
        let mut extended = value.clone();
        extended["aNewerField"] = json!(1);
        assert_eq!(
            serde_json::from_value::<AgentExecuteResponse>(extended.clone()).unwrap(),
            envelope
        );
        components().assert_valid("AgentExecuteResponse", &label, &extended);
    }
    let all = [
        "AgentExecuteResponse",
        "LlmUsage",
        "RateLimitInfo",
        "FileBundle",
        "SourceRef",
        "AgentToolCall",
        "BundleFile",
    ];
    assert_eq!(
        checked,
        all.into_iter().collect(),
        "every object of the envelope was checked"
    );
}

#[test]
fn the_envelope_schema_rejects_wrong_shapes() {
    let valid =
        serde_json::to_value(map_transport_failure("timeout", "no answer", &full_turn()).envelope)
            .unwrap();
    components().assert_valid("AgentExecuteResponse", "the base", &valid);
    let wrong = |label: &str, change: &dyn Fn(&mut Value)| {
        let mut value = valid.clone();
        change(&mut value);
        components().assert_invalid("AgentExecuteResponse", label, &value);
    };
    wrong("a numeric kind", &|v| v["kind"] = json!(3));
    wrong("a null kind", &|v| v["kind"] = Value::Null);
    wrong("no usage", &|v| {
        v.as_object_mut().unwrap().remove("usage");
    });
    wrong("no text, rather than null", &|v| {
        v.as_object_mut().unwrap().remove("text");
    });
    wrong("null tool calls", &|v| v["toolCalls"] = Value::Null);
    wrong("a numeric text", &|v| v["text"] = json!(5));
    wrong("negative tokens", &|v| {
        v["usage"]["promptTokens"] = json!(-1)
    });
    wrong("fractional tokens", &|v| {
        v["usage"]["totalTokens"] = json!(1.5)
    });
    wrong("a tool call without arguments", &|v| {
        v["toolCalls"] = json!([{"callId": "call_1", "name": "f"}]);
    });
    wrong("a numeric finish reason", &|v| v["finishReason"] = json!(1));
    wrong("a rate limit as text", &|v| {
        v["rateLimits"]["limitRequests"] = json!("500")
    });
    wrong("a source without its score", &|v| {
        v["sources"][0].as_object_mut().unwrap().remove("score");
    });
    wrong("an envelope that is a list", &|v| *v = json!([]));
}

/// The AGN-034 requests written in the docs: bodies of `curl -d '...'` and JSON blocks
/// of Markdown files under docs/, and the JSON blocks of `aptix-model`'s contract docs
/// (one of which is a fragment listing inputs, completed with ids), each with its origin.
fn documented_requests() -> Vec<(String, Value)> {
    let root = repository_root();
    let mut sources: Vec<(String, String)> = Vec::new();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "md") {
            sources.push((
                path.display().to_string(),
                std::fs::read_to_string(&path).unwrap(),
            ));
        }
    }
    for file in [
        "crates/aptix-model/src/contract/mod.rs",
        "crates/aptix-model/src/contract/attachment.rs",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        // The doc comments' text, without their `//!` or `///`.
        let docs: String = text
            .lines()
            .filter_map(|line| {
                let line = line.trim_start();
                line.strip_prefix("//!")
                    .or_else(|| line.strip_prefix("///"))
            })
            .map(|line| format!("{}\n", line.strip_prefix(' ').unwrap_or(line)))
            .collect();
        sources.push((file.to_owned(), docs));
    }
    let mut requests = Vec::new();
    for (origin, text) in sources {
        let mut snippets: Vec<String> = text
            .split("-d '")
            .skip(1)
            .filter_map(|rest| rest.split_once('\'').map(|(body, _)| body.to_owned()))
            .collect();
        for block in text.split("```json").skip(1) {
            if let Some((block, _)) = block.split_once("```") {
                snippets.push(block.to_owned());
            }
        }
        for snippet in snippets {
            let trimmed = snippet.trim();
            // A fragment of fields (`"files": [...], "images": [...]`) gets ids around it.
            let text = if trimmed.starts_with('"') {
                format!("{{\"sessionId\": \"s-doc\", \"turnId\": \"t-doc\", {trimmed}}}")
            } else {
                trimmed.to_owned()
            };
            for value in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
                let Ok(value) = value else { continue };
                if value.get("sessionId").is_some() && value.get("turnId").is_some() {
                    requests.push((origin.clone(), value));
                }
            }
        }
    }
    requests
}

#[test]
fn every_request_in_the_docs_is_valid_and_matches_the_schema() {
    let requests = documented_requests();
    let from = |file: &str| {
        requests
            .iter()
            .filter(|(origin, _)| origin.ends_with(file))
            .count()
    };
    assert!(from("serve.md") >= 2, "{requests:?}");
    assert!(from("contract/mod.rs") >= 2, "{requests:?}");
    assert!(from("contract/attachment.rs") >= 1, "{requests:?}");
    for (origin, request) in &requests {
        AgentExecuteRequest::from_json_value(request)
            .unwrap_or_else(|rejection| panic!("{origin}: {request} is rejected: {rejection}"));
        components().assert_valid("AgentExecuteRequest", origin, request);
    }
}

#[test]
fn the_request_schema_accepts_what_the_server_accepts() {
    let accepted = [
        json!({"sessionId": "s", "turnId": "t", "instruction": "hi"}),
        json!({"sessionId": "s", "turnId": "t", "files": [{"path": "a.rs"}], "stream": true}),
        // `null` is absence, for the fields of the contract and for any other name.
        json!({"sessionId": "s", "turnId": "t", "instruction": "hi", "files": null,
               "images": null, "ragScope": null, "hints": null, "stream": null,
               "toolResults": null, "mode": null}),
        json!({"sessionId": "s", "turnId": "t", "instruction": "hi", "ragScope": {},
               "hints": {"language": null}}),
        json!({"sessionId": "s", "turnId": "t", "toolResults": [
            {"toolCallId": "c1", "executionMs": 12.0, "resultJson": {"rows": [1]}},
            {"toolCallId": "c2", "executionMs": 0, "resultJson": "[1]", "errorMessage": null},
            {"toolCallId": "c3", "executionMs": 3, "errorMessage": "boom", "resultJson": null}],
            "instruction": null}),
    ];
    for request in accepted {
        AgentExecuteRequest::from_json_value(&request)
            .unwrap_or_else(|rejection| panic!("{request} is rejected: {rejection}"));
        components().assert_valid("AgentExecuteRequest", "accepted by the server", &request);
        // What the server reads back encodes to a request the schema accepts too.
        let encoded =
            serde_json::to_value(AgentExecuteRequest::from_json_value(&request).unwrap()).unwrap();
        components().assert_valid("AgentExecuteRequest", "encoded", &encoded);
    }
}

#[test]
fn the_request_schema_rejects_wrong_shapes() {
    let rejected = [
        ("no sessionId", json!({"turnId": "t", "instruction": "hi"})),
        (
            "a null sessionId",
            json!({"sessionId": null, "turnId": "t", "instruction": "hi"}),
        ),
        (
            "a numeric sessionId",
            json!({"sessionId": 5, "turnId": "t", "instruction": "hi"}),
        ),
        (
            "an empty turnId",
            json!({"sessionId": "s", "turnId": "", "instruction": "hi"}),
        ),
        (
            "a blank instruction",
            json!({"sessionId": "s", "turnId": "t", "instruction": " \n"}),
        ),
        (
            "an unknown field",
            json!({"sessionId": "s", "turnId": "t", "instruction": "hi", "sesionId": "s"}),
        ),
        (
            "a server-owned field",
            json!({"sessionId": "s", "turnId": "t", "instruction": "hi", "model": "gpt-5"}),
        ),
        (
            "an instruction on a continuation",
            json!({"sessionId": "s", "turnId": "t", "instruction": "hi",
            "toolResults": [{"toolCallId": "c", "executionMs": 1, "resultJson": "{}"}]}),
        ),
        (
            "no tool results",
            json!({"sessionId": "s", "turnId": "t", "toolResults": []}),
        ),
        (
            "a negative duration",
            json!({"sessionId": "s", "turnId": "t",
            "toolResults": [{"toolCallId": "c", "executionMs": -1, "resultJson": "{}"}]}),
        ),
        (
            "a fractional duration",
            json!({"sessionId": "s", "turnId": "t",
            "toolResults": [{"toolCallId": "c", "executionMs": 1.5, "resultJson": "{}"}]}),
        ),
        (
            "a file without a path",
            json!({"sessionId": "s", "turnId": "t", "files": [{"content": "x"}]}),
        ),
        (
            "text content on an image",
            json!({"sessionId": "s", "turnId": "t",
            "images": [{"path": "a.png", "content": "x"}]}),
        ),
        (
            "a text media type on an image",
            json!({"sessionId": "s", "turnId": "t",
            "images": [{"path": "a.png", "mediaType": "text/plain"}]}),
        ),
        (
            "unpadded base64",
            json!({"sessionId": "s", "turnId": "t",
            "files": [{"path": "a.bin", "contentBase64": "AAA"}]}),
        ),
        (
            "an unknown operator",
            json!({"sessionId": "s", "turnId": "t", "instruction": "hi",
            "ragScope": {"conditions": [{"key": "path", "operator": "=~", "values": ["a"]}]}}),
        ),
        (
            "a condition without values",
            json!({"sessionId": "s", "turnId": "t", "instruction": "hi",
            "ragScope": {"conditions": [{"key": "path", "operator": "==", "values": []}]}}),
        ),
        (
            "stream as text",
            json!({"sessionId": "s", "turnId": "t", "instruction": "hi", "stream": "yes"}),
        ),
        ("a request that is a list", json!([])),
    ];
    for (label, request) in rejected {
        assert!(
            AgentExecuteRequest::from_json_value(&request).is_err(),
            "{label}: the server accepts {request}"
        );
        components().assert_invalid("AgentExecuteRequest", label, &request);
    }
}

#[test]
fn every_schema_and_property_is_described() {
    for name in components().names() {
        let schema = components().schema(&name);
        let described = |schema: &Value| {
            schema["description"]
                .as_str()
                .is_some_and(|text| !text.trim().is_empty())
        };
        assert!(described(schema), "{name} has no description");
        for (property, property_schema) in schema["properties"].as_object().into_iter().flatten() {
            let inner = property_schema["oneOf"]
                .as_array()
                .and_then(|items| items.iter().find(|item| item.get("$ref").is_some()));
            assert!(
                described(property_schema) || inner.is_some_and(described),
                "{name}.{property} has no description"
            );
        }
    }
}

#[test]
fn every_streamed_delta_matches_the_schema_given_for_the_event_stream() {
    use aptix_mapping::{RetryCause, StreamDelta, StreamFold};
    // What the fold makes of every recorded stream...
    let mut deltas: Vec<StreamDelta> = Vec::new();
    for name in fixture_names(".sse") {
        let mut fold = StreamFold::new();
        for data in aptix_testkit::read_fixture_text(&name)
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
        {
            if let Ok(event) = aptix_model::wire::StreamEvent::from_json(data) {
                deltas.extend(fold.apply(event));
            }
        }
    }
    // ...and what only the orchestrator sends.
    deltas.extend([
        StreamDelta::Retrying {
            cause: RetryCause::StreamCut,
            attempt: 2,
            max_attempts: 3,
            wait_ms: 250,
            reason: "the stream was cut".to_owned(),
            events: 6,
            resumed: true,
        },
        StreamDelta::ToolRunning {
            call_id: "call_1".to_owned(),
            name: "read_file".to_owned(),
        },
        StreamDelta::ToolFinished {
            call_id: "call_1".to_owned(),
            name: "read_file".to_owned(),
            ok: true,
            output: "{}".to_owned(),
            execution_ms: 3,
        },
        StreamDelta::Compacted {
            reason: "threshold".to_owned(),
            method: "summary".to_owned(),
            tokens_before: 900,
            tokens_after: 100,
            message: "compacted".to_owned(),
        },
    ]);
    let mut kinds = BTreeSet::new();
    for delta in &deltas {
        let value = serde_json::to_value(delta).unwrap();
        kinds.insert(value["type"].as_str().unwrap().to_owned());
        components().assert_valid("StreamDelta", &value.to_string(), &value);
    }
    // Not vacuous: text, tool calls, a stream error and the end were among them.
    for kind in [
        "started",
        "textDelta",
        "toolCallStarted",
        "toolArgumentsDelta",
        "toolCallDone",
        "error",
        "done",
        "retrying",
        "toolFinished",
        "compacted",
    ] {
        assert!(kinds.contains(kind), "no {kind} delta among {kinds:?}");
    }
    // A field in the wrong case is not what the service sends.
    let wrong = json!({"type": "textDelta", "output_index": 0, "content_index": 0, "text": "x"});
    components().assert_invalid("StreamDelta", "snake_case fields", &wrong);
}

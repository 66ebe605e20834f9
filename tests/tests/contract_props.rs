//! Property tests of the AGN-034 request contract and the AGN-004 envelope.
//!
//! - any valid request survives encode then decode unchanged, in camelCase and PascalCase;
//! - the validator is total: arbitrary bytes and arbitrary JSON (deep, odd types in the
//!   known fields) give a request or a rejection, never a panic;
//! - planting k independent violations in an otherwise valid request gets exactly those
//!   k paths and codes reported, all at once;
//! - any valid request and any envelope, encoded, is valid against its schema in the
//!   published OpenAPI document (`docs/openapi.json`).

mod contract_gen;

use aptix_model::contract::{
    AgentExecuteRequest, AgentExecuteResponse, AgentToolCall, FinishReason, Kind, LlmUsage,
    RateLimitInfo, SourceRef, ViolationCode, validate,
};
use std::sync::OnceLock;

use aptix_testkit::openapi::Components;
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use serde_json::{Value, json};

use contract_gen::{deeply_nested, json_value, pascal, request, request_shaped};

/// Renames every object key to PascalCase (the encoded request has no free-form maps).
fn pascal_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| (pascal(&key), pascal_keys(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(pascal_keys).collect()),
        other => other,
    }
}

/// What any input must give: a request that re-validates to itself, or a non-empty
/// rejection whose messages follow the style rules.
fn assert_total(value: &Value) -> Result<(), TestCaseError> {
    match validate(value) {
        Ok(request) => {
            let encoded =
                serde_json::to_value(&request).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(validate(&encoded).ok(), Some(request));
        }
        Err(rejection) => {
            prop_assert!(!rejection.violations().is_empty());
            for violation in rejection.violations() {
                prop_assert!(
                    !violation.message.starts_with(char::is_uppercase),
                    "{}",
                    violation.message
                );
                prop_assert!(!violation.message.ends_with('.'), "{}", violation.message);
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn valid_requests_survive_encode_and_decode(request in request()) {
        let value = serde_json::to_value(&request).unwrap();
        prop_assert_eq!(validate(&value), Ok(request.clone()));
        let bytes = serde_json::to_vec(&request).unwrap();
        prop_assert_eq!(AgentExecuteRequest::from_json_slice(&bytes), Ok(request.clone()));
        prop_assert_eq!(validate(&pascal_keys(value)), Ok(request));
    }

    #[test]
    fn arbitrary_json_never_panics(value in json_value()) {
        assert_total(&value)?;
    }

    #[test]
    fn request_shaped_json_never_panics(value in request_shaped()) {
        assert_total(&value)?;
        let bytes = serde_json::to_vec(&value).unwrap();
        let _ = AgentExecuteRequest::from_json_slice(&bytes);
    }

    #[test]
    fn deep_nesting_never_panics(value in deeply_nested()) {
        assert_total(&value)?;
        let bytes = serde_json::to_vec(&value).unwrap();
        let _ = AgentExecuteRequest::from_json_slice(&bytes);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..256)) {
        let _ = AgentExecuteRequest::from_json_slice(&bytes);
    }

    #[test]
    fn corrupted_valid_bodies_never_panic(
        request in request(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let mut bytes = serde_json::to_vec(&request).unwrap();
        for (index, byte) in edits {
            let position = index.index(bytes.len());
            bytes[position] = byte;
        }
        if let Ok(decoded) = AgentExecuteRequest::from_json_slice(&bytes) {
            prop_assert_eq!(validate(&serde_json::to_value(&decoded).unwrap()), Ok(decoded));
        }
    }

    #[test]
    fn every_planted_violation_is_reported(
        (request, sites, variants) in request().prop_flat_map(|request| {
            let sites = sites(&request);
            let most = sites.len().min(8);
            (Just(request), subsequence(sites, 1..=most), vec(any::<u8>(), 8))
        })
    ) {
        let mut value = serde_json::to_value(&request).unwrap();
        let mut planted: Vec<(String, ViolationCode)> = sites
            .iter()
            .zip(variants)
            .map(|(site, variant)| plant(&mut value, site, variant))
            .collect();
        let rejection = validate(&value).unwrap_err();
        let mut reported: Vec<(String, ViolationCode)> = rejection
            .violations()
            .iter()
            .map(|violation| (violation.path.clone(), violation.code))
            .collect();
        planted.sort();
        reported.sort();
        prop_assert_eq!(reported, planted, "request: {}", value);
    }

    #[test]
    fn envelopes_round_trip(envelope in envelope()) {
        let text = serde_json::to_string(&envelope).unwrap();
        prop_assert_eq!(serde_json::from_str::<AgentExecuteResponse>(&text).unwrap(), envelope);
    }

    #[test]
    fn valid_requests_match_the_published_schema(request in request()) {
        let value = serde_json::to_value(&request).unwrap();
        let errors = published().errors("AgentExecuteRequest", &value);
        prop_assert!(errors.is_empty(), "{}\n{}", value, errors.join("\n"));
    }

    #[test]
    fn envelopes_match_the_published_schema(envelope in envelope()) {
        let value = serde_json::to_value(&envelope).unwrap();
        let errors = published().errors("AgentExecuteResponse", &value);
        prop_assert!(errors.is_empty(), "{}\n{}", value, errors.join("\n"));
    }
}

/// The component schemas of the committed `docs/openapi.json`, which `aptix-server`'s
/// tests keep equal to the document it serves.
fn published() -> &'static Components {
    static COMPONENTS: OnceLock<Components> = OnceLock::new();
    COMPONENTS.get_or_init(|| {
        let path = aptix_testkit::repository_root().join("docs/openapi.json");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("{} is required: {error}", path.display()));
        Components::new(&serde_json::from_str(&text).unwrap())
    })
}

/// A place in a request where one violation can be planted without touching another.
#[derive(Debug, Clone)]
enum Site {
    SessionId,
    TurnId,
    ServerOwned,
    Unknown,
    Instruction { has_inputs: bool },
    Stream,
    Hints,
    File(usize),
    Image(usize),
    Condition(usize),
    UserFieldOnContinuation,
    ToolResult(usize),
}

fn sites(request: &AgentExecuteRequest) -> Vec<Site> {
    let mut sites = vec![
        Site::SessionId,
        Site::TurnId,
        Site::ServerOwned,
        Site::Unknown,
    ];
    match request {
        AgentExecuteRequest::UserTurn(turn) => {
            if turn.instruction.is_some() {
                let has_inputs = !turn.files.is_empty() || !turn.images.is_empty();
                sites.push(Site::Instruction { has_inputs });
            }
            sites.extend([Site::Stream, Site::Hints]);
            sites.extend((0..turn.files.len()).map(Site::File));
            sites.extend((0..turn.images.len()).map(Site::Image));
            sites.extend((0..turn.scope_conditions().len()).map(Site::Condition));
        }
        AgentExecuteRequest::ToolContinuation(continuation) => {
            sites.push(Site::UserFieldOnContinuation);
            sites.extend((0..continuation.tool_results.len()).map(Site::ToolResult));
        }
    }
    sites
}

/// Plants one violation at `site` (its kind picked by `variant`) and says where it is.
fn plant(request: &mut Value, site: &Site, variant: u8) -> (String, ViolationCode) {
    use ViolationCode::*;
    let pick = |count: u8| variant % count;
    let owned = |path: &str, code| (path.to_owned(), code);
    match site {
        Site::SessionId | Site::TurnId => {
            let name = if matches!(site, Site::SessionId) {
                "sessionId"
            } else {
                "turnId"
            };
            let object = request.as_object_mut().unwrap();
            match pick(4) {
                0 => {
                    object.insert(name.into(), json!(5));
                    owned(name, WrongType)
                }
                1 => {
                    object.insert(name.into(), json!(" "));
                    owned(name, Empty)
                }
                2 => {
                    object.remove(name);
                    owned(name, Missing)
                }
                _ => {
                    object.insert(name.into(), json!("x".repeat(300)));
                    owned(name, TooLarge)
                }
            }
        }
        Site::ServerOwned => {
            let (key, name) = [
                ("mode", "mode"),
                ("Model", "model"),
                ("previous_response_id", "previousResponseId"),
                ("systemPrompt", "systemPrompt"),
                ("temperature", "temperature"),
            ][usize::from(pick(5))];
            request[key] = json!("x");
            owned(name, ServerOwned)
        }
        Site::Unknown => {
            request["bogusField"] = json!(1);
            owned("bogusField", UnknownField)
        }
        Site::Instruction { has_inputs } => match pick(if *has_inputs { 2 } else { 3 }) {
            0 => {
                request["instruction"] = json!(42);
                owned("instruction", WrongType)
            }
            1 => {
                request["instruction"] = json!("");
                owned("instruction", Empty)
            }
            _ => {
                request.as_object_mut().unwrap().remove("instruction");
                owned("instruction", MissingInput)
            }
        },
        Site::Stream => {
            request["stream"] = json!("yes");
            owned("stream", WrongType)
        }
        Site::Hints => {
            request["hints"] = json!({"language": 7});
            owned("hints.language", WrongType)
        }
        Site::File(index) => {
            let path = format!("files[{index}]");
            let file = &mut request["files"][*index];
            match pick(5) {
                0 => {
                    file["path"] = json!("/etc/passwd");
                    (format!("{path}.path"), InvalidPath)
                }
                1 => {
                    file["path"] = json!("src/../../x");
                    (format!("{path}.path"), InvalidPath)
                }
                2 => {
                    file["mediaType"] = json!("nope");
                    (format!("{path}.mediaType"), InvalidMediaType)
                }
                3 => {
                    file["bogus"] = json!(true);
                    (format!("{path}.bogus"), UnknownField)
                }
                _ => {
                    file["content"] = json!("x");
                    file["contentBase64"] = json!("AAAA");
                    (path, ConflictingContent)
                }
            }
        }
        Site::Image(index) => {
            let path = format!("images[{index}]");
            let image = &mut request["images"][*index];
            match pick(3) {
                0 => {
                    image["path"] = json!("C:\\x.png");
                    (format!("{path}.path"), InvalidPath)
                }
                1 => {
                    image["contentBase64"] = json!("@@@@");
                    (format!("{path}.contentBase64"), InvalidBase64)
                }
                _ => {
                    image["mediaType"] = json!("text/plain");
                    (format!("{path}.mediaType"), InvalidMediaType)
                }
            }
        }
        Site::Condition(index) => {
            let path = format!("ragScope.conditions[{index}]");
            let condition = &mut request["ragScope"]["conditions"][*index];
            match pick(4) {
                0 => {
                    condition["operator"] = json!("~=");
                    (format!("{path}.operator"), UnknownOperator)
                }
                1 => {
                    condition["values"] = json!([]);
                    (format!("{path}.values"), Empty)
                }
                2 => {
                    condition["key"] = json!("");
                    (format!("{path}.key"), Empty)
                }
                _ => {
                    condition["values"] = json!([1]);
                    (format!("{path}.values[0]"), WrongType)
                }
            }
        }
        Site::UserFieldOnContinuation => {
            let name = [
                "instruction",
                "files",
                "images",
                "ragScope",
                "hints",
                "stream",
            ][usize::from(pick(6))];
            request[name] = if name == "stream" {
                json!(true)
            } else {
                json!("x")
            };
            owned(name, NotAllowedOnToolContinuation)
        }
        Site::ToolResult(index) => {
            let path = format!("toolResults[{index}]");
            let result = request["toolResults"][*index].as_object_mut().unwrap();
            let has_result = result.contains_key("resultJson");
            match pick(7) {
                0 => {
                    result.insert("toolCallId".into(), json!(""));
                    (format!("{path}.toolCallId"), Empty)
                }
                1 => {
                    result.remove("toolCallId");
                    (format!("{path}.toolCallId"), Missing)
                }
                2 => {
                    result.insert("executionMs".into(), json!(-5));
                    (format!("{path}.executionMs"), InvalidNumber)
                }
                3 => {
                    result.insert("executionMs".into(), json!("5"));
                    (format!("{path}.executionMs"), WrongType)
                }
                4 => {
                    let other = if has_result {
                        ("errorMessage", json!("e"))
                    } else {
                        ("resultJson", json!("{}"))
                    };
                    result.insert(other.0.into(), other.1);
                    (path, ConflictingOutcome)
                }
                5 => {
                    result.remove("resultJson");
                    result.remove("errorMessage");
                    (path, MissingOutcome)
                }
                _ => {
                    result.remove("errorMessage");
                    result.insert("resultJson".into(), json!("{oops"));
                    (format!("{path}.resultJson"), InvalidResultJson)
                }
            }
        }
    }
}

fn envelope() -> impl Strategy<Value = AgentExecuteResponse> {
    let text = || option::of("\\PC{0,16}");
    let kind = prop_oneof![
        select(Kind::KNOWN.to_vec()),
        "[a-z]{1,8}".prop_map(Kind::from)
    ];
    let reason = option::of(prop_oneof![
        select(FinishReason::KNOWN.to_vec()),
        "[a-z]{1,8}".prop_map(FinishReason::from)
    ]);
    let usage =
        any::<[u64; 5]>().prop_map(|[prompt, completion, total, cached, reasoning]| LlmUsage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: total,
            cached_tokens: cached,
            reasoning_tokens: reasoning,
        });
    let call =
        ("\\PC{0,8}", "\\PC{0,8}", "\\PC{0,16}").prop_map(|(call_id, name, arguments_json)| {
            AgentToolCall {
                call_id,
                name,
                arguments_json,
            }
        });
    let source = (
        "\\PC{1,8}",
        "[a-z/]{1,12}",
        any::<u32>(),
        any::<u32>(),
        option::of(-1e6f64..1e6),
    )
        .prop_map(|(chunk_id, path, line_start, line_end, score)| SourceRef {
            chunk_id,
            path,
            line_start,
            line_end,
            language: "rust".into(),
            score,
        });
    (
        (kind, text(), text(), text(), text(), text(), text(), text()),
        (
            text(),
            reason,
            usage,
            vec(source, 0..3),
            vec("\\PC{0,8}", 0..3),
        ),
        (text(), text(), text(), vec(call, 0..3), text(), text()),
        option::of((
            option::of(any::<u64>()),
            option::of(any::<u64>()),
            option::of(any::<u64>()),
        )),
    )
        .prop_map(
            |(
                (
                    kind,
                    conversation_id,
                    turn_id,
                    agent_context_id,
                    conversation_context_id,
                    response_continuation_id,
                    mode,
                    model_id,
                ),
                (text, finish_reason, usage, sources, warnings),
                (error_code, error_message, raw_response_json, tool_calls, request_id, refusal),
                limits,
            )| AgentExecuteResponse {
                kind,
                conversation_id,
                turn_id,
                agent_context_id,
                conversation_context_id,
                response_continuation_id,
                mode,
                model_id,
                text,
                finish_reason,
                usage,
                sources,
                file_bundle: None,
                warnings,
                error_code,
                error_message,
                raw_response_json,
                tool_calls,
                request_id,
                refusal,
                rate_limits: limits.map(|(limit, remaining, reset)| RateLimitInfo {
                    limit_requests: limit,
                    remaining_requests: remaining,
                    reset_requests_ms: reset,
                    ..RateLimitInfo::default()
                }),
            },
        )
}

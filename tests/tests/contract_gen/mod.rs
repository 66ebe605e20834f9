//! Generators for the contract property tests: valid AGN-034 requests built through the
//! public constructors, arbitrary JSON aimed at the validator's known fields, and deep
//! nesting.

use aptix_model::contract::{
    AgentExecuteRequest, Base64Data, FileInput, FileSource, ImageInput, ImageSource, Instruction,
    MediaType, RagScope, RelativePath, ResultJson, ScopeCondition, ScopeOperator, SessionId,
    ToolCallId, ToolContinuationRequest, ToolErrorMessage, ToolOutcome, ToolResult, TurnId,
    UserTurnRequest, WorkspaceHints,
};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

/// Every field name of the request's objects, plus server-owned names and near misses, so
/// that arbitrary objects often hit a field the validator looks at.
pub(crate) const KEYS: &[&str] = &[
    "sessionId",
    "turnId",
    "instruction",
    "files",
    "images",
    "ragScope",
    "hints",
    "stream",
    "toolResults",
    "toolCallId",
    "executionMs",
    "resultJson",
    "errorMessage",
    "path",
    "content",
    "contentBase64",
    "mediaType",
    "conditions",
    "key",
    "operator",
    "values",
    "workspaceId",
    "repository",
    "language",
    "mode",
    "model",
    "previous_response_id",
    "context",
    "session_id",
];

/// `sessionId` -> `SessionId`.
pub(crate) fn pascal(name: &str) -> String {
    let mut chars = name.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Standard padded base64, to build valid attachments.
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let byte = |index: usize| u32::from(chunk.get(index).copied().unwrap_or(0));
        let triple = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for sextet in 0..4 {
            if sextet <= chunk.len() {
                let index = (triple >> (18 - 6 * sextet)) & 63;
                out.push(char::from(ALPHABET[index as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn id_text() -> impl Strategy<Value = String> {
    prop_oneof!["[A-Za-z0-9_.:-]{1,24}", "\\PC{1,12}"]
}

fn session_id() -> impl Strategy<Value = SessionId> {
    id_text().prop_filter_map("blank", |text| SessionId::new(text).ok())
}

fn turn_id() -> impl Strategy<Value = TurnId> {
    id_text().prop_filter_map("blank", |text| TurnId::new(text).ok())
}

fn non_blank() -> impl Strategy<Value = String> {
    "[\\PC\n]{0,40}".prop_filter("blank", |text| !text.trim().is_empty())
}

fn relative_path() -> impl Strategy<Value = RelativePath> {
    vec("[A-Za-z0-9_][A-Za-z0-9_. -]{0,8}", 1..4).prop_filter_map("invalid path", |segments| {
        RelativePath::new(segments.join("/")).ok()
    })
}

fn base64_data(min: usize) -> impl Strategy<Value = Base64Data> {
    vec(any::<u8>(), min..24)
        .prop_filter_map("base64", |bytes| Base64Data::new(base64(&bytes)).ok())
}

fn media_type(types: &'static [&'static str]) -> impl Strategy<Value = Option<MediaType>> {
    option::of(select(types).prop_filter_map("media type", |text| MediaType::new(text).ok()))
}

fn file_input() -> impl Strategy<Value = FileInput> {
    let source = prop_oneof![
        Just(FileSource::Reference),
        "[\\PC\n]{0,40}".prop_map(FileSource::Text),
        base64_data(0).prop_map(FileSource::Base64),
    ];
    let types: &'static [&'static str] = &["text/plain", "application/pdf", "text/x-rust"];
    (relative_path(), source, media_type(types)).prop_map(|(path, source, media_type)| FileInput {
        path,
        source,
        media_type,
    })
}

fn image_input() -> impl Strategy<Value = ImageInput> {
    let source = prop_oneof![
        Just(ImageSource::Reference),
        base64_data(1).prop_map(ImageSource::Base64),
    ];
    let types: &'static [&'static str] = &["image/png", "image/jpeg", "IMAGE/WEBP"];
    (relative_path(), source, media_type(types)).prop_map(|(path, source, media_type)| ImageInput {
        path,
        source,
        media_type,
    })
}

fn condition() -> impl Strategy<Value = ScopeCondition> {
    (
        "[a-z_]{1,10}",
        select(ScopeOperator::ALL.to_vec()),
        vec("\\PC{0,10}", 1..4),
    )
        .prop_map(|(key, operator, values)| ScopeCondition {
            key,
            operator,
            values,
        })
}

fn hints() -> impl Strategy<Value = WorkspaceHints> {
    (
        option::of(non_blank()),
        option::of(non_blank()),
        option::of(non_blank()),
    )
        .prop_map(|(workspace_id, repository, language)| WorkspaceHints {
            workspace_id,
            repository,
            language,
        })
}

/// A valid user turn.
pub(crate) fn user_turn() -> impl Strategy<Value = UserTurnRequest> {
    (
        (session_id(), turn_id()),
        option::of(non_blank().prop_filter_map("instruction", |text| Instruction::new(text).ok())),
        vec(file_input(), 0..4),
        vec(image_input(), 0..3),
        option::of(vec(condition(), 0..4).prop_map(|conditions| RagScope { conditions })),
        option::of(hints()),
        any::<bool>(),
    )
        .prop_map(
            |((session_id, turn_id), instruction, files, images, rag_scope, hints, stream)| {
                UserTurnRequest {
                    session_id,
                    turn_id,
                    instruction,
                    files,
                    images,
                    rag_scope,
                    hints,
                    stream,
                }
            },
        )
        .prop_filter("a user turn needs some input", |turn| {
            turn.instruction.is_some() || !turn.files.is_empty() || !turn.images.is_empty()
        })
}

fn outcome() -> impl Strategy<Value = ToolOutcome> {
    prop_oneof![
        json_value().prop_filter_map("json", |value| {
            ResultJson::from_value(&value).ok().map(ToolOutcome::Result)
        }),
        json_value().prop_filter_map("json", |value| {
            let text = serde_json::to_string_pretty(&value).ok()?;
            ResultJson::new(text).ok().map(ToolOutcome::Result)
        }),
        non_blank().prop_filter_map("error", |text| {
            ToolErrorMessage::new(text).ok().map(ToolOutcome::Error)
        }),
    ]
}

/// A valid tool continuation; call ids are made unique by their position.
pub(crate) fn tool_continuation() -> impl Strategy<Value = ToolContinuationRequest> {
    let result = ("[A-Za-z0-9]{0,12}", any::<u64>(), outcome());
    (session_id(), turn_id(), vec(result, 1..5)).prop_filter_map(
        "ids",
        |(session_id, turn_id, results)| {
            let tool_results = results
                .into_iter()
                .enumerate()
                .map(|(index, (suffix, execution_ms, outcome))| {
                    let tool_call_id = ToolCallId::new(format!("call_{index}_{suffix}")).ok()?;
                    Some(ToolResult {
                        tool_call_id,
                        execution_ms,
                        outcome,
                    })
                })
                .collect::<Option<Vec<_>>>()?;
            Some(ToolContinuationRequest {
                session_id,
                turn_id,
                tool_results,
            })
        },
    )
}

/// A valid request of either scenario.
pub(crate) fn request() -> impl Strategy<Value = AgentExecuteRequest> {
    prop_oneof![
        user_turn().prop_map(AgentExecuteRequest::UserTurn),
        tool_continuation().prop_map(AgentExecuteRequest::ToolContinuation),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        "\\PC{0,12}".prop_map(Value::from),
        select(KEYS).prop_map(Value::from),
        select(
            &[
                "",
                " ",
                "../x",
                "/abs",
                "C:\\x",
                "==",
                "contains",
                "{}",
                "AAAA",
                "image/png"
            ][..]
        )
        .prop_map(Value::from),
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => select(KEYS).prop_map(str::to_owned),
        1 => select(KEYS).prop_map(pascal),
        1 => "[a-zA-Z_]{1,10}",
    ]
}

/// Arbitrary JSON whose object keys are mostly the contract's own field names.
pub(crate) fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            btree_map(key(), inner, 0..6).prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// `value` under `depth` levels of arrays or objects.
pub(crate) fn nested(value: Value, depth: usize, in_arrays: bool) -> Value {
    (0..depth).fold(value, |inner, _| {
        if in_arrays {
            Value::Array(vec![inner])
        } else {
            let mut object = Map::new();
            object.insert("resultJson".to_owned(), inner);
            Value::Object(object)
        }
    })
}

/// A request-shaped object: known top-level keys with arbitrary values, or with arrays of
/// objects whose keys are known field names, so the validator's deeper levels are reached.
pub(crate) fn request_shaped() -> impl Strategy<Value = Value> {
    let known_object = || {
        btree_map(key(), json_value(), 0..6)
            .prop_map(|map| Value::Object(map.into_iter().collect()))
    };
    let field_value = prop_oneof![
        json_value(),
        vec(known_object(), 0..4).prop_map(Value::Array),
        vec(known_object(), 0..4).prop_map(|conditions| json!({"conditions": conditions})),
    ];
    btree_map(key(), field_value, 0..8).prop_map(|map| Value::Object(map.into_iter().collect()))
}

/// A deeply nested value placed at one of the request's known fields.
pub(crate) fn deeply_nested() -> impl Strategy<Value = Value> {
    let places: &'static [&'static str] = &[
        "resultJson",
        "instruction",
        "files",
        "toolResults",
        "ragScope",
        "hints",
        "sessionId",
    ];
    (0usize..400, any::<bool>(), select(places)).prop_map(|(depth, in_arrays, place)| {
        let deep = nested(json!(1), depth, in_arrays);
        match place {
            "resultJson" => json!({"sessionId": "s", "turnId": "t", "toolResults": [
                {"toolCallId": "c", "executionMs": 1, "resultJson": deep}
            ]}),
            place => json!({"sessionId": "s", "turnId": "t", place: deep}),
        }
    })
}

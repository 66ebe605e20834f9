//! The rules of a user turn's inputs: instruction, files, images, scope, hints, stream.

use serde_json::{Value, json};

use super::{check, user};
use crate::contract::limits::{
    MAX_FILE_INPUTS, MAX_HINT_BYTES, MAX_IMAGE_INPUTS, MAX_INLINE_ATTACHMENT_BYTES,
    MAX_INSTRUCTION_BYTES, MAX_PATH_BYTES, MAX_SCOPE_CONDITIONS, MAX_SCOPE_KEY_BYTES,
    MAX_SCOPE_VALUE_BYTES, MAX_SCOPE_VALUES,
};
use crate::contract::violation::ViolationCode::*;

#[test]
fn the_instruction_is_non_blank_text_within_its_limit() {
    check(user(json!({"instruction": ""})), &[("instruction", Empty)]);
    check(
        user(json!({"instruction": 5})),
        &[("instruction", WrongType)],
    );
    check(
        user(json!({"instruction": {"text": "x"}})),
        &[("instruction", WrongType)],
    );
    let long = "x".repeat(MAX_INSTRUCTION_BYTES + 1);
    check(
        user(json!({"instruction": long})),
        &[("instruction", TooLarge)],
    );
}

#[test]
fn file_inputs_are_checked() {
    check(user(json!({"files": "a.rs"})), &[("files", WrongType)]);
    check(user(json!({"files": ["a.rs"]})), &[("files[0]", WrongType)]);
    let many: Vec<Value> = (0..=MAX_FILE_INPUTS)
        .map(|_| json!({"path": "a"}))
        .collect();
    check(user(json!({"files": many})), &[("files", TooLarge)]);
    check(
        user(json!({"files": [{"content": "x"}]})),
        &[("files[0].path", Missing)],
    );
    check(
        user(json!({"files": [{"path": 5}]})),
        &[("files[0].path", WrongType)],
    );
    check(
        user(json!({"files": [{"path": "a", "content": 5}]})),
        &[("files[0].content", WrongType)],
    );
    check(
        user(
            json!({"files": [{"path": "a"}, {"path": "b", "content": "x", "contentBase64": "AAAA"}]}),
        ),
        &[("files[1]", ConflictingContent)],
    );
    check(
        user(json!({"files": [{"path": "a", "contentBase64": "A A="}]})),
        &[("files[0].contentBase64", InvalidBase64)],
    );
    check(
        user(json!({"files": [{"path": "a", "mediaType": "pdf"}]})),
        &[("files[0].mediaType", InvalidMediaType)],
    );
    let big = "x".repeat(MAX_INLINE_ATTACHMENT_BYTES + 1);
    check(
        user(json!({"files": [{"path": "a", "content": big}]})),
        &[("files[0].content", TooLarge)],
    );
}

#[test]
fn input_paths_must_be_relative() {
    for path in [
        "",
        "/etc/passwd",
        "../x",
        "a/../../x",
        r"..\x",
        "C:\\x",
        "c:x",
        r"\\srv\s",
        "~/x",
        "file:///x",
        ".",
    ] {
        check(
            user(json!({"files": [{"path": path}]})),
            &[("files[0].path", InvalidPath)],
        );
        check(
            user(json!({"images": [{"path": path}]})),
            &[("images[0].path", InvalidPath)],
        );
    }
}

#[test]
fn image_inputs_are_checked() {
    check(
        user(json!({"images": {"path": "a.png"}})),
        &[("images", WrongType)],
    );
    check(
        user(json!({"images": [{"path": "a.png", "contentBase64": ""}]})),
        &[("images[0].contentBase64", Empty)],
    );
    check(
        user(json!({"images": [{"path": "a.png", "contentBase64": "data:image/png;base64,AAAA"}]})),
        &[("images[0].contentBase64", InvalidBase64)],
    );
    check(
        user(json!({"images": [{"path": "a.txt", "mediaType": "text/plain"}]})),
        &[("images[0].mediaType", InvalidMediaType)],
    );
    check(
        user(json!({"images": [{}]})),
        &[("images[0].path", Missing)],
    );
}

#[test]
fn inline_attachments_have_a_total_limit() {
    let part = "x".repeat(17 * 1024 * 1024);
    let files: Vec<Value> = (0..3)
        .map(|i| json!({"path": format!("f{i}"), "content": part}))
        .collect();
    check(user(json!({"files": files})), &[("", TooLarge)]);
}

#[test]
fn rag_scope_conditions_are_checked() {
    let scope = |condition: Value| user(json!({"ragScope": {"conditions": [condition]}}));
    check(user(json!({"ragScope": []})), &[("ragScope", WrongType)]);
    check(
        user(json!({"ragScope": {"conditions": {}}})),
        &[("ragScope.conditions", WrongType)],
    );
    check(
        scope(json!("path == a")),
        &[("ragScope.conditions[0]", WrongType)],
    );
    check(
        scope(json!({"operator": "==", "values": ["a"]})),
        &[("ragScope.conditions[0].key", Missing)],
    );
    check(
        scope(json!({"key": " ", "operator": "==", "values": ["a"]})),
        &[("ragScope.conditions[0].key", Empty)],
    );
    check(
        scope(json!({"key": "path", "values": ["a"]})),
        &[("ragScope.conditions[0].operator", Missing)],
    );
    check(
        scope(json!({"key": "path", "operator": "=~", "values": ["a"]})),
        &[("ragScope.conditions[0].operator", UnknownOperator)],
    );
    check(
        scope(json!({"key": "path", "operator": "eq", "values": ["a"]})),
        &[("ragScope.conditions[0].operator", UnknownOperator)],
    );
    check(
        scope(json!({"key": "path", "operator": "=="})),
        &[("ragScope.conditions[0].values", Missing)],
    );
    check(
        scope(json!({"key": "path", "operator": "==", "values": []})),
        &[("ragScope.conditions[0].values", Empty)],
    );
    check(
        scope(json!({"key": "path", "operator": "==", "values": "a"})),
        &[("ragScope.conditions[0].values", WrongType)],
    );
    check(
        scope(json!({"key": "path", "operator": "==", "values": ["a", 3]})),
        &[("ragScope.conditions[0].values[1]", WrongType)],
    );
    let many: Vec<Value> = (0..=MAX_SCOPE_CONDITIONS)
        .map(|_| json!({"key": "k", "operator": "==", "values": ["v"]}))
        .collect();
    check(
        user(json!({"ragScope": {"conditions": many}})),
        &[("ragScope.conditions", TooLarge)],
    );
}

#[test]
fn hints_and_stream_are_checked() {
    check(user(json!({"hints": "rust"})), &[("hints", WrongType)]);
    check(
        user(json!({"hints": {"language": 7}})),
        &[("hints.language", WrongType)],
    );
    check(
        user(json!({"hints": {"repository": ""}})),
        &[("hints.repository", Empty)],
    );
    check(user(json!({"stream": "yes"})), &[("stream", WrongType)]);
}

#[test]
fn counts_and_sizes_are_bounded() {
    let x = |bytes: usize| "x".repeat(bytes);
    let images: Vec<Value> = (0..=MAX_IMAGE_INPUTS)
        .map(|_| json!({"path": "a.png"}))
        .collect();
    check(user(json!({"images": images})), &[("images", TooLarge)]);
    let path = x(MAX_PATH_BYTES + 1);
    check(
        user(json!({"files": [{"path": path}]})),
        &[("files[0].path", TooLarge)],
    );
    let condition = |key: String, values: Vec<String>| {
        user(
            json!({"ragScope": {"conditions": [{"key": key, "operator": "==", "values": values}]}}),
        )
    };
    check(
        condition(x(MAX_SCOPE_KEY_BYTES + 1), vec![x(1)]),
        &[("ragScope.conditions[0].key", TooLarge)],
    );
    check(
        condition(x(1), vec![x(1); MAX_SCOPE_VALUES + 1]),
        &[("ragScope.conditions[0].values", TooLarge)],
    );
    check(
        condition(x(1), vec![x(1), x(MAX_SCOPE_VALUE_BYTES + 1)]),
        &[("ragScope.conditions[0].values[1]", TooLarge)],
    );
    check(
        user(json!({"hints": {"workspaceId": x(MAX_HINT_BYTES + 1)}})),
        &[("hints.workspaceId", TooLarge)],
    );
}

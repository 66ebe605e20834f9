//! `parse_tools_json`: every way a `ToolsJson` document can be wrong is an error naming
//! the element and the reason (AGN-003 silently dropped them), and valid documents,
//! including the recorded real tool, come back as the flat function tools sent.

use aptix_model::wire::FunctionTool;
use aptix_request::{RequestError, ToolProblem, parse_tools_json};
use serde_json::json;

/// Parses `tools_json` and compares the outcome.
fn check(tools_json: &str, expected: Result<Vec<FunctionTool>, RequestError>) {
    assert_eq!(parse_tools_json(tools_json), expected, "{tools_json}");
}

fn invalid(index: usize, problem: ToolProblem) -> Result<Vec<FunctionTool>, RequestError> {
    Err(RequestError::InvalidTool { index, problem })
}

fn tool(name: &str, strict: bool) -> FunctionTool {
    FunctionTool {
        name: name.into(),
        description: None,
        parameters: None,
        strict,
    }
}

#[test]
fn the_recorded_tool_parses_unchanged() {
    let recorded: serde_json::Value = serde_json::from_slice(&aptix_testkit::read_fixture(
        "request_function_tool_first_turn.json",
    ))
    .expect("fixture");
    let tools_json = recorded["tools"].to_string();
    let parsed = parse_tools_json(&tools_json).expect("the recorded tool is valid");
    let reencoded: Vec<serde_json::Value> = parsed
        .into_iter()
        .map(|tool| {
            serde_json::to_value(aptix_model::wire::Tool::Function(tool)).expect("serialises")
        })
        .collect();
    assert_eq!(serde_json::Value::Array(reencoded), recorded["tools"]);
}

#[test]
fn valid_documents() {
    check("[]", Ok(Vec::new()));
    check(
        r#"[{"type":"function","name":"a"},{"type":"function","name":"b-2_c","strict":false}]"#,
        Ok(vec![tool("a", true), tool("b-2_c", false)]),
    );
    check(
        r#"[{"type":"function","name":"a","description":null,"parameters":null,"strict":null}]"#,
        Ok(vec![tool("a", true)]),
    );
    check(
        r#"[{"type":"function","name":"a","description":"d","parameters":{"type":"object"}}]"#,
        Ok(vec![FunctionTool {
            name: "a".into(),
            description: Some("d".into()),
            parameters: Some(json!({"type": "object"})),
            strict: true,
        }]),
    );
}

#[test]
fn documents_that_are_not_arrays() {
    assert!(matches!(
        parse_tools_json("[{"),
        Err(RequestError::ToolsJsonSyntax { line: 1, .. })
    ));
    assert!(matches!(
        parse_tools_json(""),
        Err(RequestError::ToolsJsonSyntax { .. })
    ));
    check(
        r#"{"type":"function","name":"a"}"#,
        Err(RequestError::ToolsJsonNotArray { found: "an object" }),
    );
    check(
        "null",
        Err(RequestError::ToolsJsonNotArray { found: "null" }),
    );
}

#[test]
fn elements_that_are_not_flat_function_tools() {
    let ok = r#"{"type":"function","name":"ok"}"#;
    let cases = [
        ("3", ToolProblem::NotAnObject { found: "a number" }),
        (
            r#"{"type":"function","function":{"name":"a","parameters":{}}}"#,
            ToolProblem::ChatCompletionsShape,
        ),
        (r#"{"name":"a"}"#, ToolProblem::MissingType),
        (
            r#"{"type":"web_search"}"#,
            ToolProblem::UnsupportedType {
                type_name: "web_search".into(),
            },
        ),
        (
            r#"{"type":7,"name":"a"}"#,
            ToolProblem::UnsupportedType {
                type_name: "7".into(),
            },
        ),
        (r#"{"type":"function"}"#, ToolProblem::MissingName),
        (r#"{"type":"function","name":5}"#, ToolProblem::MissingName),
        (
            r#"{"type":"function","name":""}"#,
            ToolProblem::InvalidName { name: "".into() },
        ),
        (
            r#"{"type":"function","name":"read file"}"#,
            ToolProblem::InvalidName {
                name: "read file".into(),
            },
        ),
        (
            r#"{"type":"function","name":"lire_fichier_é"}"#,
            ToolProblem::InvalidName {
                name: "lire_fichier_é".into(),
            },
        ),
        (
            r#"{"type":"function","name":"a","description":["x"]}"#,
            ToolProblem::DescriptionNotString,
        ),
        (
            r#"{"type":"function","name":"a","parameters":"{}"}"#,
            ToolProblem::ParametersNotObject { found: "a string" },
        ),
        (
            r#"{"type":"function","name":"a","strict":"true"}"#,
            ToolProblem::StrictNotBoolean,
        ),
        (
            r#"{"type":"function","name":"a","defer_loading":true}"#,
            ToolProblem::UnsupportedField {
                field: "defer_loading".into(),
            },
        ),
    ];
    for (element, problem) in cases {
        check(&format!("[{ok},{element}]"), invalid(1, problem));
    }
    let long = "a".repeat(65);
    check(
        &format!(r#"[{{"type":"function","name":"{long}"}}]"#),
        invalid(0, ToolProblem::InvalidName { name: long.clone() }),
    );
    check(
        &format!(r#"[{{"type":"function","name":"{}"}}]"#, &long[1..]),
        Ok(vec![tool(&long[1..], true)]),
    );
}

#[test]
fn duplicate_names_name_both_elements() {
    check(
        r#"[{"type":"function","name":"a"},{"type":"function","name":"b"},{"type":"function","name":"a"}]"#,
        Err(RequestError::DuplicateToolName {
            index: 2,
            first_index: 0,
            name: "a".into(),
        }),
    );
}

#[test]
fn error_messages_say_which_element_and_why() {
    let error = parse_tools_json(r#"[{"type":"function","function":{"name":"a"}}]"#)
        .expect_err("nested shape");
    let message = error.to_string();
    assert!(
        message.starts_with("tool 0 is invalid: uses the Chat Completions shape"),
        "{message}"
    );
    assert!(!message.ends_with('.'), "{message}");
}

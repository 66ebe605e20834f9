//! Bodies whose input is a list of messages given as is (`RequestBuilder::messages`),
//! with the fields such a caller needs: `top_p`, `tool_choice: "required"` and extra
//! request fields. This is how `aptix-schema` builds its bodies.

mod common;

use aptix_model::wire::ContentPart;
use aptix_model::wire::{InputMessage, Role};
use aptix_request::{RequestBuilder, RequestError, ToolOutput};
use common::{MODEL, RESPONSE_ID, body, build_error, items, tools};
use serde_json::json;

fn conversation() -> Vec<InputMessage> {
    vec![
        InputMessage::new(
            Role::Developer,
            vec![ContentPart::input_text("Answer in JSON.")],
        ),
        InputMessage::new(
            Role::User,
            vec![ContentPart::input_text("The capital of France?")],
        ),
    ]
}

#[test]
fn messages_replace_the_system_and_user_messages() {
    let body = body(
        RequestBuilder::new(MODEL)
            .base_system_prompt("not sent")
            .mode("not sent")
            .instruction("not sent")
            .context_block("not sent")
            .messages(conversation())
            .top_p(0.5)
            .extra_fields([("service_tier".to_owned(), json!("flex"))]),
    );
    let input = items(&body);
    assert_eq!(input.len(), 2);
    assert_eq!(input[0]["role"], "developer");
    assert_eq!(input[1]["content"][0]["text"], "The capital of France?");
    assert!(!body.to_string().contains("not sent"), "{body}");
    assert_eq!(body["top_p"], 0.5);
    assert_eq!(body["service_tier"], "flex");
}

#[test]
fn continuation_items_come_before_the_messages() {
    let body = body(
        RequestBuilder::new(MODEL)
            .previous_response_id(RESPONSE_ID)
            .tool_outputs([ToolOutput::result("call_1", "{}")])
            .messages(conversation()),
    );
    let input = items(&body);
    assert_eq!(input.len(), 3);
    assert_eq!(input[0]["type"], "function_call_output");
    assert_eq!(input[1]["role"], "developer");
}

#[test]
fn a_required_tool_call_needs_tools_and_yields_to_a_forced_one() {
    let required = body(
        RequestBuilder::new(MODEL)
            .messages(conversation())
            .tools(tools())
            .require_tool_call(true),
    );
    assert_eq!(required["tool_choice"], "required");
    let forced_name = tools()[0].name.clone();
    let forced = body(
        RequestBuilder::new(MODEL)
            .messages(conversation())
            .tools(tools())
            .require_tool_call(true)
            .force_tool(forced_name.clone()),
    );
    assert_eq!(forced["tool_choice"]["name"], forced_name.as_str());
    assert_eq!(
        build_error(
            RequestBuilder::new(MODEL)
                .messages(conversation())
                .require_tool_call(true)
        ),
        RequestError::ToolCallRequiredWithoutTools
    );
}

#[test]
fn messages_and_settings_follow_the_builder_rules() {
    assert_eq!(
        build_error(RequestBuilder::new(MODEL).messages(Vec::new())),
        RequestError::EmptyMessages
    );
    assert_eq!(
        build_error(
            RequestBuilder::new(MODEL)
                .messages(conversation())
                .top_p(1.5)
        ),
        RequestError::InvalidTopP { value: 1.5 }
    );
    assert_eq!(
        build_error(
            RequestBuilder::new(MODEL)
                .messages(conversation())
                .max_output_tokens(15)
        ),
        RequestError::MaxOutputTokensTooSmall {
            value: 15,
            minimum: 16
        }
    );
}

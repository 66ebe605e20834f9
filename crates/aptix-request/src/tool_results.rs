//! The `[TOOL_RESULTS]` block of AGN-003 section 5.3: the results of the previous tool
//! calls as readable text in the user message, beside the `function_call_output` items
//! the API requires.
//!
//! The format (also in `docs/request.md`) follows AGN-002's `[CONTEXT]` block so the
//! model reads both the same way:
//!
//! ````text
//! [TOOL_RESULTS]
//!
//! === TOOL RESULT 1 ===
//! CallId: call_1
//! Tool: get_weather
//! Status: ok
//! ExecutionMs: 12
//! ```json
//! {"temperature":22}
//! ```
//!
//! === TOOL RESULT 2 ===
//! CallId: call_2
//! Status: error
//! ```text
//! timed out after 30s
//! ```
//!
//! ````
//!
//! - One section per result, numbered from 1 in the order given, each ending with its
//!   closing fence and one blank line (AGN-002 section 7).
//! - The labels come in this order; `Tool:` and `ExecutionMs:` appear only when known.
//!   Values are written on one line (`\n` and other line breaks escaped), so a tool name
//!   cannot forge a header.
//! - A result is fenced as `json`, exactly as the tool returned it; an error message as
//!   `text`. The fence is longer than any backtick run in the content, so tool output
//!   (untrusted: a file the tool read, a web page) cannot close it and write its own
//!   sections.

use crate::text::{push_fenced, push_single_line};
use crate::tool_output::{ToolOutput, ToolReply};

/// The block's first line, followed by one blank line.
pub(crate) const TOOL_RESULTS_HEADER: &str = "[TOOL_RESULTS]";

/// Renders the `[TOOL_RESULTS]` block for `outputs`, or `None` when there are none.
///
/// Rendering does not validate: a malformed result is shown as given.
/// [`RequestBuilder::build`](crate::RequestBuilder::build) checks every result before
/// it renders them.
///
/// ```
/// use aptix_request::{render_tool_results_block, ToolOutput};
///
/// let block = render_tool_results_block(&[
///     ToolOutput::result("call_1", r#"{"ok":true}"#).with_tool_name("save"),
/// ]);
/// assert_eq!(
///     block.as_deref(),
///     Some("[TOOL_RESULTS]\n\n=== TOOL RESULT 1 ===\nCallId: call_1\nTool: save\n\
///           Status: ok\n```json\n{\"ok\":true}\n```\n\n"),
/// );
/// ```
pub fn render_tool_results_block(outputs: &[ToolOutput]) -> Option<String> {
    if outputs.is_empty() {
        return None;
    }
    let content_len: usize = outputs
        .iter()
        .map(|output| outcome_text(output).len())
        .sum();
    let mut out = String::with_capacity(content_len + 128 * outputs.len() + 32);
    out.push_str(TOOL_RESULTS_HEADER);
    out.push_str("\n\n");
    for (index, output) in outputs.iter().enumerate() {
        push_section(&mut out, index + 1, output);
    }
    Some(out)
}

fn outcome_text(output: &ToolOutput) -> &str {
    match &output.outcome {
        ToolReply::Result(text) | ToolReply::Error(text) => text,
    }
}

fn push_section(out: &mut String, number: usize, output: &ToolOutput) {
    use std::fmt::Write;
    // Writing to a String cannot fail.
    let _ = write!(out, "=== TOOL RESULT {number} ===\nCallId: ");
    push_single_line(out, &output.call_id);
    if let Some(name) = &output.tool_name {
        out.push_str("\nTool: ");
        push_single_line(out, name);
    }
    let (status, tag) = match output.outcome {
        ToolReply::Result(_) => ("ok", "json"),
        ToolReply::Error(_) => ("error", "text"),
    };
    let _ = write!(out, "\nStatus: {status}\n");
    if let Some(ms) = output.execution_ms {
        let _ = writeln!(out, "ExecutionMs: {ms}");
    }
    push_fenced(out, tag, outcome_text(output));
    out.push('\n');
}

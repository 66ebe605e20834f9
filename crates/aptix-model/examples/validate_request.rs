//! Validates an AGN-034 request offline and prints what the server would answer.
//!
//! ```sh
//! cargo run -p aptix-model --example validate_request              # a built-in bad request
//! cargo run -p aptix-model --example validate_request -- req.json  # a request from a file
//! echo '{"sessionId":"s","turnId":"t","instruction":"hi"}' \
//!   | cargo run -p aptix-model --example validate_request -- -     # a request from stdin
//! ```
//!
//! Exits with status 1 when the request is rejected, listing every violation.

use std::io::Read;
use std::process::ExitCode;

use aptix_model::contract::AgentExecuteRequest;

/// A request an AGN-003-era client might send: several rules broken at once.
const SAMPLE: &str = r#"{
  "SessionId": "s-42",
  "turnId": "  ",
  "mode": "codegen",
  "previousResponseId": "resp_123",
  "instruction": "apply the fix",
  "stream": true,
  "toolResults": [
    {"toolCallId": "call_1", "executionMs": 12, "resultJson": "{\"ok\": true}"},
    {"toolCallId": "call_1", "executionMs": -4, "resultJson": "{}", "errorMessage": "timeout"},
    {"ToolCallId": "call_3", "executionMs": 7.5, "result": "done"}
  ]
}"#;

fn main() -> ExitCode {
    let body = match read_body() {
        Ok(body) => body,
        Err(error) => {
            eprintln!("validate_request: {error}");
            return ExitCode::from(2);
        }
    };
    match AgentExecuteRequest::from_json_slice(&body) {
        Ok(request) => {
            let scenario = if request.is_tool_continuation() {
                "tool continuation"
            } else {
                "user turn"
            };
            println!(
                "valid {scenario}: session {}, turn {}",
                request.session_id(),
                request.turn_id()
            );
            match serde_json::to_string_pretty(&request) {
                Ok(canonical) => println!("canonical form:\n{canonical}"),
                Err(error) => eprintln!("validate_request: could not encode: {error}"),
            }
            ExitCode::SUCCESS
        }
        Err(rejection) => {
            println!("rejected, {} violations:", rejection.violations().len());
            for violation in rejection.violations() {
                let path = if violation.path.is_empty() {
                    "(request)"
                } else {
                    &violation.path
                };
                println!("  {path:<28} {:<34} {}", violation.code, violation.message);
            }
            ExitCode::FAILURE
        }
    }
}

/// The body from the file named by the first argument (`-` for stdin), or the sample.
fn read_body() -> std::io::Result<Vec<u8>> {
    match std::env::args_os().nth(1) {
        None => Ok(SAMPLE.as_bytes().to_vec()),
        Some(path) if path == "-" => {
            let mut body = Vec::new();
            std::io::stdin().read_to_end(&mut body)?;
            Ok(body)
        }
        Some(path) => std::fs::read(path),
    }
}

//! Maps a captured `/v1/responses` reply to the AGN-004 envelope and prints it, offline:
//! what `aptix inspect` does.
//!
//! ```sh
//! cargo run -p aptix-mapping --example map_response -- tests/fixtures/responses/response_function_call_single.json
//! cargo run -p aptix-mapping --example map_response -- tests/fixtures/responses/sse_text_deltas.sse
//! curl -s ... | cargo run -p aptix-mapping --example map_response
//! ```
//!
//! The input may be a response body, an error body (`{"error": {...}}`) or an SSE
//! capture; `map_capture` tells them apart. For a stream, the text is also printed as it
//! would have arrived, delta by delta, on stderr. The envelope goes to stdout as JSON.

use std::error::Error;
use std::fs;
use std::io::{self, Read, Write};

use aptix_mapping::{SseBodyFold, TurnContext, map_capture};

fn main() -> Result<(), Box<dyn Error>> {
    let bytes = match std::env::args_os().nth(1) {
        Some(path) => fs::read(path)?,
        None => {
            let mut bytes = Vec::new();
            io::stdin().lock().read_to_end(&mut bytes)?;
            bytes
        }
    };

    // For a stream, show the text as a terminal would have shown it while it arrived.
    if bytes.starts_with(b"event:") || bytes.starts_with(b"data:") {
        let mut folder = SseBodyFold::new();
        let mut stderr = io::stderr().lock();
        for chunk in bytes.chunks(64) {
            for delta in folder.feed(chunk) {
                if let Some(text) = delta.text() {
                    write!(stderr, "{text}")?;
                }
            }
        }
        writeln!(stderr)?;
    }

    let turn = TurnContext::new("example-session", "example-turn");
    let mapped = map_capture(&bytes, &turn);
    for warning in &mapped.warnings {
        eprintln!("warning: {warning}");
    }
    println!("{}", serde_json::to_string_pretty(&mapped.envelope)?);
    Ok(())
}

//! Decodes a captured `text/event-stream` body and prints its events, offline.
//!
//! ```sh
//! cargo run -p aptix-sse --example decode_sse -- tests/fixtures/responses/sse_text_deltas.sse
//! curl -sN ... | cargo run -p aptix-sse --example decode_sse
//! ```
//!
//! The input is read in small pieces and fed as it comes, the way a network body
//! arrives, to show that chunk boundaries do not matter. An event over the size limit
//! is reported on stderr and decoding goes on; the exit status then says so.

use std::error::Error;
use std::fs::File;
use std::io::{self, Read};

use aptix_sse::{SseDecoder, SseEvent};

fn main() -> Result<(), Box<dyn Error>> {
    let mut input: Box<dyn Read> = match std::env::args_os().nth(1) {
        Some(path) => Box::new(File::open(path)?),
        None => Box::new(io::stdin().lock()),
    };

    let mut decoder = SseDecoder::new();
    let mut printed = 0;
    let mut failures = 0;
    let mut chunk = [0u8; 4096];
    loop {
        let read = input.read(&mut chunk)?;
        if read == 0 {
            break;
        }
        decoder.feed(&chunk[..read]);
        while let Some(result) = decoder.next_event() {
            match result {
                Ok(event) => print_event(&mut printed, &event),
                Err(error) => {
                    failures += 1;
                    eprintln!("error: {error}");
                }
            }
        }
    }
    // The last event counts even when the body lost its final blank line.
    while let Some(event) = decoder.finish()? {
        print_event(&mut printed, &event);
    }

    println!("{printed} events");
    if failures > 0 {
        return Err(format!("{failures} events could not be decoded").into());
    }
    Ok(())
}

fn print_event(printed: &mut usize, event: &SseEvent) {
    *printed += 1;
    println!("#{printed} {}", event.event_type());
    if let Some(id) = &event.id {
        println!("  id: {id}");
    }
    if let Some(retry) = event.retry {
        println!("  retry: {retry} ms");
    }
    for line in event.data.lines() {
        println!("  {line}");
    }
}

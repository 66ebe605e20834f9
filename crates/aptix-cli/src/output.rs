//! What the command writes: results on stdout (answer text, envelope JSON, request
//! bodies), everything for a human on stderr (session ids, warnings, errors).
//!
//! Nothing here panics on a closed pipe: `aptix ask ... | head -1` stops writing when
//! `head` exits, the turn still finishes and is stored, and the process exits quietly.

use std::fmt;
use std::io::{self, Write as _};

use aptix_mapping::StreamDelta;
use serde::Serialize;

/// Writes a line for a human on stderr, prefixed with `aptix: `. A failing stderr is
/// ignored: there is nowhere left to report it.
pub(crate) fn note(message: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr().lock(), "aptix: {message}");
}

/// Writes `warning: ...` on stderr.
pub(crate) fn warn(message: &str) {
    let _ = writeln!(io::stderr().lock(), "warning: {message}");
}

/// Prints `value` as pretty JSON and a newline on stdout.
pub(crate) fn print_json(value: &impl Serialize) -> Result<(), anyhow::Error> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// Prints one line of text on stdout.
pub(crate) fn print_line(text: &str) -> Result<(), anyhow::Error> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// Whether an error is stdout closing under us (the reader went away).
pub(crate) fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Prints answer text on stdout as it streams in: text and refusal deltas, flushed at
/// once, with a blank line between two output messages (as the envelope's `text` joins
/// them) and a final newline.
#[derive(Debug, Default)]
pub(crate) struct AnswerPrinter {
    /// The output index of the message last printed.
    last_index: Option<u64>,
    /// Whether the last byte written was a newline (or nothing was written).
    ends_with_newline: bool,
    /// Whether anything was written.
    wrote: bool,
    /// The first write error; later text is dropped.
    error: Option<io::Error>,
}

impl AnswerPrinter {
    /// A printer that has written nothing.
    pub(crate) fn new() -> AnswerPrinter {
        AnswerPrinter {
            ends_with_newline: true,
            ..AnswerPrinter::default()
        }
    }

    /// Prints what a delta adds to the answer, if anything.
    pub(crate) fn delta(&mut self, delta: &StreamDelta) {
        match delta {
            StreamDelta::TextDelta {
                output_index, text, ..
            }
            | StreamDelta::RefusalDelta {
                output_index, text, ..
            } => {
                if self.wrote && self.last_index != Some(*output_index) {
                    self.write(if self.ends_with_newline { "\n" } else { "\n\n" });
                }
                self.last_index = Some(*output_index);
                self.write(text);
            }
            _ => {}
        }
    }

    /// Prints a whole answer (the non-streamed case).
    pub(crate) fn whole(&mut self, text: &str) {
        if self.wrote {
            self.write(if self.ends_with_newline { "\n" } else { "\n\n" });
        }
        self.write(text);
    }

    /// Whether any answer text was printed.
    pub(crate) fn wrote(&self) -> bool {
        self.wrote
    }

    fn write(&mut self, text: &str) {
        if text.is_empty() || self.error.is_some() {
            return;
        }
        let mut out = io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => {
                self.wrote = true;
                self.ends_with_newline = text.ends_with('\n');
            }
            Err(error) => self.error = Some(error),
        }
    }

    /// Ends the answer with a newline and reports the first write error.
    pub(crate) fn finish(mut self) -> Result<(), anyhow::Error> {
        if self.wrote && !self.ends_with_newline {
            self.write("\n");
        }
        match self.error {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }
}

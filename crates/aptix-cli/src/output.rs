//! What the command writes: results on stdout (answer text, envelope JSON, request
//! bodies), everything for a human on stderr (session ids, warnings, errors).
//!
//! Nothing here panics on a closed pipe: `aptix ask ... | head -1` stops writing when
//! `head` exits, the turn still finishes and is stored, and the process exits quietly.

use std::borrow::Cow;
use std::fmt;
use std::io::{self, IsTerminal as _, Write as _};

use aptix_index::IndexProgress;
use aptix_mapping::{AnswerText, ShownAnswer, StreamDelta};
use aptix_runtime::Reporter;
use serde::Serialize;

/// Whether notes and warnings go out as JSON log records (`--log-format json`), so that
/// a collector reading stderr finds nothing but JSON lines.
static JSON_LINES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Writes notes and warnings as JSON log records from now on.
pub(crate) fn notes_as_json() {
    JSON_LINES.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// One line on stderr: `prefix` and the message, or with JSON logs a record of the
/// shape the log lines have (`timestamp`, `level`, `fields.message`, `target`).
fn say(level: &str, prefix: &str, message: fmt::Arguments<'_>) {
    let mut stderr = io::stderr().lock();
    if JSON_LINES.load(std::sync::atomic::Ordering::Relaxed) {
        let record = serde_json::json!({
            "timestamp": humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string(),
            "level": level,
            "fields": {"message": message.to_string()},
            "target": "aptix",
        });
        let _ = writeln!(stderr, "{record}");
    } else {
        let _ = writeln!(stderr, "{prefix}{message}");
    }
}

/// Writes the error a command ends with on stderr, prefixed with `error: ` (with JSON
/// logs, a log record at `ERROR`).
pub(crate) fn error(message: fmt::Arguments<'_>) {
    say("ERROR", "error: ", message);
}

/// Writes a line for a human on stderr, prefixed with `aptix: ` (with JSON logs, a log
/// record at `INFO`). A failing stderr is ignored: there is nowhere left to report it.
pub(crate) fn note(message: fmt::Arguments<'_>) {
    say("INFO", "aptix: ", message);
}

/// Says on stderr that a request is sent again, and why: `aptix: rate limited (429);
/// sending the request again in 2s (attempt 2 of 3)`.
pub(crate) fn note_request_retry(notice: &aptix_client::RetryNotice) {
    note(format_args!(
        "{}; sending the request again in {} (attempt {} of {})",
        notice.reason,
        aptix_client::human_duration(notice.wait),
        notice.attempt,
        notice.max_attempts
    ));
}

/// A text argument (`aptix ask`'s instruction, `aptix search`'s query) as given, or
/// read from stdin for `-` (where a long one fits, unlike an argument list); the
/// newline that ends piped text is not part of it. Bytes that are not UTF-8, and an
/// empty text, are the caller's mistake (exit 2), naming `what` it is.
pub(crate) fn text_argument(argument: &str, what: &str) -> Result<String, anyhow::Error> {
    use anyhow::Context as _;
    let text = if argument == "-" {
        let bytes = read_file_or_stdin(std::path::Path::new("-"))
            .with_context(|| format!("could not read the {what} from stdin"))?;
        String::from_utf8(bytes)
            .map_err(|_| crate::exit::usage(format!("the {what} on stdin is not UTF-8 text")))?
            .trim_end()
            .to_owned()
    } else {
        argument.to_owned()
    };
    if text.trim().is_empty() {
        return Err(crate::exit::usage(format!("the {what} is empty")));
    }
    Ok(text)
}

/// The bytes of the file at `path`, or of stdin for `-`, as every command that reads a
/// file argument takes it.
pub(crate) fn read_file_or_stdin(path: &std::path::Path) -> io::Result<Vec<u8>> {
    if path == std::path::Path::new("-") {
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut io::stdin(), &mut bytes)?;
        Ok(bytes)
    } else {
        std::fs::read(path)
    }
}

/// The flag (and `aptix.toml` key) that bounds a wait of this kind, or all three when
/// the error named none.
fn timeout_setting(kind: Option<aptix_client::TimeoutKind>) -> &'static str {
    use aptix_client::TimeoutKind;
    match kind {
        Some(TimeoutKind::StreamIdle) => {
            "--stream-idle-timeout (silence before or during the answer; stream_idle_timeout in aptix.toml)"
        }
        Some(TimeoutKind::Connect) => "--connect-timeout (connect_timeout in aptix.toml)",
        Some(TimeoutKind::Request) => {
            "--request-timeout (the whole reply; request_timeout in aptix.toml)"
        }
        _ => {
            "--request-timeout (the whole reply), --stream-idle-timeout (silence before or during the answer) or --connect-timeout, or their keys in aptix.toml"
        }
    }
}

/// What to do about a failure of this error code, on stderr
/// ([`aptix_client::remedy`]), the settings named by their flags where the command
/// has them: the notes `ask` and `ask --schema` give for a rejected key, a timeout, a
/// server not reached, a connection broken mid-reply, rate limits and no quota.
pub(crate) fn note_for_error_code(code: &str, message: &str) {
    use aptix_client::Remedy;
    match aptix_client::remedy(code, message) {
        Some(Remedy::RaiseTimeout(kind)) => note(format_args!(
            "if the server is slow rather than gone, raise {}",
            timeout_setting(kind)
        )),
        Some(Remedy::CheckServer) => note(format_args!(
            "check that the server runs and that base_url (--base-url, OPENAI_BASE_URL, aptix.toml) names it"
        )),
        Some(remedy) => note(format_args!("{remedy}")),
        None => {}
    }
}

/// `text` as one word a POSIX shell reads back as it is: unchanged when it holds only
/// characters no shell treats specially, else in single quotes (a session id given as
/// `--session "two words"` is shown so that it can be pasted).
pub(crate) fn shell_word(text: &str) -> std::borrow::Cow<'_, str> {
    let plain = !text.is_empty()
        && text.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'/' | b'+' | b'=')
        });
    if plain {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(format!("'{}'", text.replace('\'', "'\\''")))
    }
}

/// Where log lines go: a writer per event (`inner`'s), each line held until the event
/// is written whole and then passed on without the provider's key. The libraries log
/// what they handle at trace level (the ACP library each JSON-RPC message: a prompt
/// with a file holding the key, a tool's output), and `-vvv` logs everything: no level
/// may show the key.
pub(crate) struct ScrubbedLogs<M> {
    pub(crate) inner: M,
    pub(crate) redactor: Option<std::sync::Arc<aptix_client::Redactor>>,
}

impl<'a, M: tracing_subscriber::fmt::MakeWriter<'a>> tracing_subscriber::fmt::MakeWriter<'a>
    for ScrubbedLogs<M>
{
    type Writer = ScrubbedLine<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        ScrubbedLine {
            line: Vec::new(),
            inner: self.inner.make_writer(),
            redactor: self.redactor.clone(),
        }
    }
}

/// One log event's text, written to the inner writer, scrubbed, when dropped.
pub(crate) struct ScrubbedLine<W: io::Write> {
    line: Vec<u8>,
    inner: W,
    redactor: Option<std::sync::Arc<aptix_client::Redactor>>,
}

impl<W: io::Write> io::Write for ScrubbedLine<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.line.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<W: io::Write> Drop for ScrubbedLine<W> {
    fn drop(&mut self) {
        let line = std::mem::take(&mut self.line);
        let clean = self
            .redactor
            .as_ref()
            .and_then(|redactor| redactor.redact(&String::from_utf8_lossy(&line)));
        // A failing stderr is ignored: there is nowhere left to report it.
        let _ = match clean {
            Some(clean) => self.inner.write_all(clean.as_bytes()),
            None => self.inner.write_all(&line),
        };
        let _ = self.inner.flush();
    }
}

/// Writes `warning: ...` on stderr.
pub(crate) fn warn(message: &str) {
    say("WARN", "warning: ", format_args!("{message}"));
}

/// What the runtime reports while it wires a workspace, for a person: notes and
/// warnings on stderr, and a progress bar while the index refreshes (drawn only on a
/// terminal). Stdout stays for results (and for ACP's messages).
pub(crate) struct StderrReporter;

impl Reporter for StderrReporter {
    fn note(&self, message: &str) {
        note(format_args!("{message}"));
    }

    fn warn(&self, message: &str) {
        warn(message);
    }

    fn indexing(&self) -> Box<dyn IndexProgress + '_> {
        Box::new(crate::index::BarProgress::new())
    }
}

/// Prints `value` as pretty JSON and a newline on stdout, without the API key: what
/// the command prints as JSON (an envelope, a capture `inspect` maps, a stored session)
/// may hold text a server or a model echoed, and the key in `OPENAI_API_KEY` is never
/// shown.
pub(crate) fn print_json(value: &impl Serialize) -> Result<(), anyhow::Error> {
    let key = aptix_runtime::process_env("OPENAI_API_KEY");
    let mut text = without_key(&serde_json::to_string_pretty(value)?, key.as_deref());
    text.push('\n');
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(())
}

/// `text` without the API key `key`: replaced by `[redacted]` (a key is letters,
/// digits, `-` and `_`, so JSON text holds it as it is). The one rule for text the
/// command sends or prints: a question, an attachment, an envelope.
pub(crate) fn without_key(text: &str, key: Option<&str>) -> String {
    aptix_client::scrub_key(text, key.map(str::trim))
}

/// Prints one line of text on stdout.
pub(crate) fn print_line(text: &str) -> Result<(), anyhow::Error> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()?;
    Ok(())
}

/// Prints text that came from a store or a model (what a session asked, its mode) as
/// one line on stdout: on a terminal its control characters are shown, not obeyed
/// ([`for_terminal`]); redirected, it is written as it is.
pub(crate) fn print_stored(text: &str) -> Result<(), anyhow::Error> {
    if io::stdout().is_terminal() {
        print_line(&for_terminal(text))
    } else {
        print_line(text)
    }
}

/// Model text as a terminal may show it: a control character other than a line break
/// or a tab is shown as its symbol (ESC as `␛`, BEL as `␇`), not obeyed. An answer is
/// the model's, and the model reads the workspace: a file with an escape sequence in it
/// could otherwise set the terminal's title, write the clipboard (OSC 52) or hide text
/// (`\r`). A `\r` before a `\n` is a line ending and stays; one at the end of `text`
/// is shown (the printer holds a chunk's last `\r` back until the next chunk).
fn for_terminal(text: &str) -> Cow<'_, str> {
    let obeyed = |c: char| c.is_control() && c != '\n' && c != '\t' && c != '\r';
    let lone_return = text
        .char_indices()
        .any(|(at, c)| c == '\r' && !text[at + 1..].starts_with('\n'));
    if !text.chars().any(obeyed) && !lone_return {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => shown.push(c),
            '\n' | '\t' => shown.push(c),
            // C0 controls have pictures at U+2400 + code; DEL at U+2421.
            c if u32::from(c) < 0x20 => {
                shown.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{FFFD}'));
            }
            '\u{7f}' => shown.push('\u{2421}'),
            c if c.is_control() => shown.push('\u{FFFD}'),
            c => shown.push(c),
        }
    }
    Cow::Owned(shown)
}

/// One streamed chunk of the answer as a terminal is shown it ([`for_terminal`]). A
/// `\r` that ends a chunk is a line ending only if the next chunk starts with `\n`: it
/// is held back in `held` until that chunk says which.
fn terminal_chunk(held: &mut String, text: &str) -> String {
    let mut chunk = std::mem::take(held);
    chunk.push_str(text);
    if chunk.ends_with('\r') {
        chunk.pop();
        held.push('\r');
    }
    for_terminal(&chunk).into_owned()
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
    /// What of the answer is shown, so that a request sent again after a cut stream
    /// does not print its text twice.
    shown: ShownAnswer,
    /// Notices already written on stderr as they happened (a compaction), which the
    /// envelope also carries as warnings: not written twice.
    noted: Vec<String>,
    /// Stdout is a terminal: the answer's control characters are shown, not obeyed.
    terminal: bool,
    /// On a terminal, a `\r` that ended the last chunk, until the next shows whether a
    /// `\n` follows it.
    held_return: String,
}

impl AnswerPrinter {
    /// A printer that has written nothing.
    pub(crate) fn new() -> AnswerPrinter {
        AnswerPrinter {
            ends_with_newline: true,
            terminal: io::stdout().is_terminal(),
            ..AnswerPrinter::default()
        }
    }

    /// Prints what a delta adds to the answer, if anything. A retry notice goes to
    /// stderr; after a request is sent again, text the new stream repeats is not
    /// printed twice, only what goes beyond it ([`ShownAnswer`]).
    pub(crate) fn delta(&mut self, delta: &StreamDelta) {
        let shown = self.shown.delta(delta);
        match delta {
            StreamDelta::Retrying { .. } => {
                if !self.ends_with_newline {
                    // The answer stopped mid-line: the note starts on a line of its own.
                    let _ = writeln!(io::stderr().lock());
                }
                AnswerPrinter::note_retry(delta, true);
            }
            StreamDelta::Compacted { message, .. } => {
                if !self.ends_with_newline {
                    let _ = writeln!(io::stderr().lock());
                }
                note(format_args!("{message}"));
                self.noted.push(message.clone());
            }
            StreamDelta::TextDelta { output_index, .. }
            | StreamDelta::RefusalDelta { output_index, .. } => {
                let text = match shown {
                    None => return,
                    Some(AnswerText::More(text)) => text,
                    Some(AnswerText::Restarted(text)) => {
                        if !self.ends_with_newline {
                            let _ = writeln!(io::stderr().lock());
                        }
                        note(format_args!(
                            "the new answer differs from the text shown above; it follows in full"
                        ));
                        if self.wrote {
                            self.write(if self.ends_with_newline { "\n" } else { "\n\n" });
                        }
                        self.last_index = Some(*output_index);
                        text
                    }
                };
                if self.wrote && self.last_index != Some(*output_index) {
                    self.write(if self.ends_with_newline { "\n" } else { "\n\n" });
                }
                self.last_index = Some(*output_index);
                self.write(&text);
            }
            // The next text is the next model call's (its message is at index 0 again):
            // a paragraph of its own, not run on ("Let me look.The session ...").
            StreamDelta::ToolFinished { .. } => self.last_index = None,
            _ => {}
        }
    }

    /// Says on stderr that a cut stream is being recovered, and how; `showing_text`
    /// when the answer is printed as it streams (not with `--json`).
    pub(crate) fn note_retry(delta: &StreamDelta, showing_text: bool) {
        let StreamDelta::Retrying {
            cause: _,
            attempt,
            max_attempts,
            wait_ms,
            reason,
            events,
            resumed,
        } = delta
        else {
            return;
        };
        let wait = aptix_client::human_duration(std::time::Duration::from_millis(*wait_ms));
        if *events == 0 && !*resumed {
            // Nothing streamed (a server silent before its reply): no text to speak of.
            note(format_args!(
                "no reply: {reason}; asking again in {wait} (attempt {attempt} of {max_attempts})"
            ));
            return;
        }
        let (how, after) = if *resumed {
            ("resuming the same response where it stopped", "")
        } else {
            (
                "asking again",
                if showing_text {
                    "; text already shown is not printed twice"
                } else {
                    ""
                },
            )
        };
        note(format_args!(
            "the stream was cut after {events} event(s): {reason}; {how} in {wait} (attempt {attempt} of {max_attempts}){after}"
        ));
    }

    /// Shows the turn's final answer where what was printed is not it: the rest of it,
    /// or (a server whose deltas did not spell its final response) the whole answer,
    /// after a note and a blank line. Nothing when the printed text is the answer.
    pub(crate) fn settle(&mut self, answer: &str) {
        match self.shown.settle(answer) {
            None => {}
            Some(AnswerText::More(rest)) => self.write(&rest),
            Some(AnswerText::Restarted(whole)) => {
                if !self.ends_with_newline {
                    let _ = writeln!(io::stderr().lock());
                }
                note(format_args!(
                    "the streamed text differs from the final answer; the final answer follows in full"
                ));
                self.whole(&whole);
            }
        }
    }

    /// Prints a whole answer (the non-streamed case).
    fn whole(&mut self, text: &str) {
        if self.wrote {
            self.write(if self.ends_with_newline { "\n" } else { "\n\n" });
        }
        self.write(text);
    }

    /// Whether any answer text was printed.
    pub(crate) fn wrote(&self) -> bool {
        self.wrote
    }

    /// Whether `warning` was already written on stderr when it happened.
    pub(crate) fn already_noted(&self, warning: &str) -> bool {
        self.noted.iter().any(|noted| noted == warning)
    }

    fn write(&mut self, text: &str) {
        if text.is_empty() || self.error.is_some() {
            return;
        }
        let shown = if self.terminal {
            Cow::Owned(terminal_chunk(&mut self.held_return, text))
        } else {
            Cow::Borrowed(text)
        };
        let text = shown.as_ref();
        if text.is_empty() {
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
        if !self.held_return.is_empty() {
            // A lone `\r` at the very end: shown, not obeyed.
            self.held_return.clear();
            self.write("\u{240d}");
        }
        if self.wrote && !self.ends_with_newline {
            self.write("\n");
        }
        match self.error {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{for_terminal, timeout_setting};

    #[test]
    fn log_lines_leave_the_key_out_at_every_level() {
        use std::io::Write as _;
        use tracing_subscriber::fmt::MakeWriter as _;
        let key = "sk-test-LOGS-1234567890abcd";
        let logs = super::ScrubbedLogs {
            inner: std::sync::Mutex::new(Vec::<u8>::new()),
            redactor: Some(std::sync::Arc::new(aptix_client::Redactor::new(key))),
        };
        for line in [
            format!("TRACE Received JSON-RPC message {{\"content\":\"the key is {key}\"}}\n"),
            "INFO nothing secret here\n".to_owned(),
        ] {
            // Written in pieces, as a formatter may.
            let mut writer = logs.make_writer();
            let (first, rest) = line.split_at(line.len() / 2);
            writer.write_all(first.as_bytes()).unwrap();
            writer.write_all(rest.as_bytes()).unwrap();
        }
        let written = String::from_utf8(logs.inner.into_inner().unwrap()).unwrap();
        assert!(!written.contains(key), "{written}");
        assert!(written.contains("the key is [redacted]"), "{written}");
        assert!(written.ends_with("INFO nothing secret here\n"), "{written}");
    }

    #[test]
    fn a_word_the_shell_would_split_is_quoted() {
        use super::shell_word;
        assert_eq!(shell_word("s-0123456789ab"), "s-0123456789ab");
        assert_eq!(shell_word("two words"), "'two words'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_terminal_is_shown_control_characters_not_told_to_obey_them() {
        // A title change, a clipboard write (OSC 52), a bell and a line hidden by `\r`.
        let hostile = "ok\u{1b}]0;PWNED\u{7}\u{1b}]52;c;ZXZpbA==\u{7}done\rX\u{9b}31m";
        let shown = for_terminal(hostile);
        assert!(!shown.chars().any(|c| c.is_control()), "{shown:?}");
        assert_eq!(
            shown,
            "ok\u{241b}]0;PWNED\u{2407}\u{241b}]52;c;ZXZpbA==\u{2407}done\u{240d}X\u{fffd}31m"
        );
        // Plain text, line endings and tabs pass as they are, without a copy.
        for plain in ["line one\nline two", "a\tb\r\nc", "ünïcödé ✓"] {
            assert!(
                matches!(for_terminal(plain), std::borrow::Cow::Borrowed(_)),
                "{plain:?}"
            );
        }
        assert_eq!(for_terminal("ends with\r"), "ends with\u{240d}");
    }

    #[test]
    fn a_return_that_ends_a_chunk_waits_for_the_next() {
        // Deltas end anywhere: "done\r" then "rm -rf ~ is safe" would overwrite the line.
        let mut held = String::new();
        assert_eq!(super::terminal_chunk(&mut held, "done\r"), "done");
        assert_eq!(
            super::terminal_chunk(&mut held, "rm -rf ~ is safe"),
            "\u{240d}rm -rf ~ is safe"
        );
        // A line ending split across two chunks stays one.
        assert_eq!(super::terminal_chunk(&mut held, "line\r"), "line");
        assert_eq!(super::terminal_chunk(&mut held, "\nnext"), "\r\nnext");
        assert!(held.is_empty());
    }

    #[test]
    fn a_timeout_hint_names_the_flag_of_the_wait_that_ran_out() {
        use aptix_client::TimeoutKind;
        assert!(
            timeout_setting(Some(TimeoutKind::StreamIdle)).starts_with("--stream-idle-timeout")
        );
        let connect = timeout_setting(Some(TimeoutKind::Connect));
        assert!(connect.starts_with("--connect-timeout") && !connect.contains("--request-timeout"));
        assert!(timeout_setting(Some(TimeoutKind::Request)).starts_with("--request-timeout ("));
        assert!(timeout_setting(None).contains("--connect-timeout"));
    }
}

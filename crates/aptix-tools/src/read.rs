//! `read_file`: a line range of one workspace file, with line numbers.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use aptix_orchestrator::{ReferenceReader, ReferencedFile, ServerTool};
use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::confine::Workspace;
use crate::{ToolError, arguments, result};

/// The most lines one call returns.
pub(crate) const MAX_LINES: usize = 400;
/// The most bytes of file text one call returns.
pub(crate) const MAX_BYTES: usize = 64 * 1024;
/// Files larger than this are not read at all.
pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Where [`ReadFile`] gets a file's bytes: the disk ([`DiskReader`]) or, say, an
/// editor's unsaved buffers. Paths have been confined to the workspace already.
#[async_trait]
pub trait FileReader: Send + Sync {
    /// The whole content of the file at `relative` (workspace-relative, `/`-separated),
    /// whose real path on disk is `absolute`. A reader may refuse files larger than
    /// `limit` bytes with [`ToolError::TooLarge`].
    async fn read(&self, relative: &str, absolute: &Path, limit: u64)
    -> Result<Vec<u8>, ToolError>;
}

/// Reads files from disk.
#[derive(Debug, Clone, Copy, Default)]
pub struct DiskReader;

#[async_trait]
impl FileReader for DiskReader {
    async fn read(
        &self,
        relative: &str,
        absolute: &Path,
        limit: u64,
    ) -> Result<Vec<u8>, ToolError> {
        let io = |error: std::io::Error| ToolError::Io {
            path: relative.to_owned(),
            message: error.to_string(),
        };
        // The checks are made on the file opened, not on its path before opening it:
        // a named pipe put in the file's place in between would otherwise be opened,
        // and wait for a writer that may never come, holding the turn.
        let file = open_without_waiting(absolute).map_err(io)?;
        let metadata = file.metadata().map_err(io)?;
        if metadata.is_dir() {
            return Err(ToolError::WrongType {
                path: relative.to_owned(),
                expected: "is a folder; use list_files to see its files",
            });
        }
        if !metadata.is_file() {
            return Err(not_regular(relative));
        }
        let too_large = |bytes: u64| ToolError::TooLarge {
            path: relative.to_owned(),
            bytes,
            limit,
        };
        if metadata.len() > limit {
            return Err(too_large(metadata.len()));
        }
        // At most one byte over the limit: a file that grew since is refused, not read
        // whole.
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, limit + 1), &mut bytes)
            .map_err(io)?;
        if bytes.len() as u64 > limit {
            return Err(too_large(bytes.len() as u64));
        }
        Ok(bytes)
    }
}

/// `path` opened for reading without waiting: a named pipe opens at once (then its
/// metadata refuses it) instead of waiting for a writer. A regular file reads as usual.
fn open_without_waiting(path: &Path) -> std::io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(std::fs::File::from(fd))
    }
    #[cfg(not(unix))]
    {
        std::fs::File::open(path)
    }
}

/// A path that is neither a folder nor a regular file: opening a named pipe waits for
/// a writer that may never come (holding the turn, and its session, with it), and a
/// device may never end. Refused before any reader (the disk, an editor) is asked.
fn not_regular(path: &str) -> ToolError {
    ToolError::WrongType {
        path: path.to_owned(),
        expected: "is not a regular file (a named pipe, a socket or a device), which is never read",
    }
}

/// Whether `path` exists on disk as something other than a folder or a regular file.
fn is_special(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|metadata| !metadata.is_dir() && !metadata.is_file())
}

/// The `read_file` tool.
pub struct ReadFile {
    workspace: Workspace,
    reader: Arc<dyn FileReader>,
}

impl std::fmt::Debug for ReadFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadFile")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl ReadFile {
    /// `read_file` over `workspace`, reading through `reader`.
    pub fn new(workspace: Workspace, reader: Arc<dyn FileReader>) -> ReadFile {
        ReadFile { workspace, reader }
    }

    /// Runs the tool; the result is JSON.
    pub async fn run(&self, arguments_json: &str) -> Result<Value, ToolError> {
        let args: Args = arguments(arguments_json)?;
        let start = args.start_line.unwrap_or(1);
        if start == 0 {
            return Err(ToolError::Arguments("start_line counts from 1".to_owned()));
        }
        if let Some(end) = args.end_line
            && end < start
        {
            return Err(ToolError::Arguments(format!(
                "end_line {end} is before start_line {start}"
            )));
        }
        let confined = self.workspace.confine(&args.path)?;
        if confined.absolute.is_dir() {
            return Err(ToolError::WrongType {
                path: args.path,
                expected: "is a folder; use list_files to see its files",
            });
        }
        if is_special(&confined.absolute) {
            return Err(not_regular(&args.path));
        }
        let bytes = self
            .reader
            .read(&confined.relative, &confined.absolute, MAX_FILE_BYTES)
            .await?;
        // Read as the index reads it (what retrieval served can be read further), and
        // what has the shape of a credential is not read out.
        let Some(text) = aptix_index::file_text(&bytes) else {
            return Err(ToolError::Binary { path: args.path });
        };
        let text = aptix_index::redact_secrets(&text);
        let lines: Vec<&str> = text.lines().collect();
        let total = lines.len();
        if start > total.max(1) {
            return Err(ToolError::Arguments(format!(
                "start_line {start} is past the end of {} ({total} lines)",
                confined.relative
            )));
        }
        let wanted_end = args.end_line.unwrap_or(usize::MAX).min(total);
        let width = wanted_end.max(1).to_string().len();
        let mut content = String::new();
        let mut end = start.saturating_sub(1);
        let mut cut = None;
        let mut long_line = None;
        for (index, line) in lines.iter().enumerate().take(wanted_end).skip(start - 1) {
            let number = index + 1;
            if number - start >= MAX_LINES {
                cut = Some(format!("{MAX_LINES} lines"));
                break;
            }
            if content.len() + line.len() + width + 3 > MAX_BYTES {
                if content.is_empty() {
                    // One line longer than a whole call (minified code, a one-line JSON
                    // fixture): its start, said to be cut, rather than nothing, which a
                    // model would ask for again and again.
                    let keep = line.floor_char_boundary(MAX_BYTES - width - 3);
                    let _ = writeln!(content, "{number:>width$}| {}", &line[..keep]);
                    end = number;
                    long_line = Some((number, line.len()));
                }
                cut = Some(format!("{} KiB", MAX_BYTES / 1024));
                break;
            }
            let _ = writeln!(content, "{number:>width$}| {line}");
            end = number;
        }
        let mut value = json!({
            "path": confined.relative,
            "start_line": start,
            "end_line": end,
            "total_lines": total,
            "content": content,
        });
        if let Some((number, bytes)) = long_line {
            value["note"] = Value::String(format!(
                "line {number} is {} KiB long: only its first {} KiB are shown; {}",
                bytes.div_ceil(1024),
                MAX_BYTES / 1024,
                if end < total {
                    format!(
                        "call read_file with start_line {} for the lines after it",
                        end + 1
                    )
                } else {
                    "it is the last line".to_owned()
                }
            ));
        } else if let Some(limit) = cut {
            value["note"] = Value::String(format!(
                "cut at {limit} (the most one call returns): lines {start}-{end} of {total}; call read_file again with start_line {} for more",
                end + 1
            ));
        } else if end < total && args.end_line.is_some() {
            value["note"] = Value::String(format!("lines {start}-{end} of {total}"));
        }
        Ok(value)
    }
}

/// The files a user turn names by reference (AGN-034 4.2: a path without content),
/// read under the same rules as [`ReadFile`]: confined to the workspace, not ignored,
/// not secret, through the same [`FileReader`] (an editor's buffers in `aptix acp`);
/// text has what looks like a credential redacted, as the index and `read_file` do.
/// At most [`MAX_INLINE_ATTACHMENT_BYTES`](aptix_model::contract::limits::MAX_INLINE_ATTACHMENT_BYTES)
/// per file, as an inline attachment.
pub struct ReferenceFiles {
    workspace: Workspace,
    reader: Arc<dyn FileReader>,
}

impl std::fmt::Debug for ReferenceFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReferenceFiles")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl ReferenceFiles {
    /// References into `workspace`, read through `reader`.
    pub fn new(workspace: Workspace, reader: Arc<dyn FileReader>) -> ReferenceFiles {
        ReferenceFiles { workspace, reader }
    }

    async fn read(&self, path: &str) -> Result<ReferencedFile, ToolError> {
        let confined = self.workspace.confine(path)?;
        if confined.absolute.is_dir() {
            return Err(ToolError::WrongType {
                path: path.to_owned(),
                expected: "is a folder, not a file",
            });
        }
        if is_special(&confined.absolute) {
            return Err(not_regular(path));
        }
        let limit = aptix_model::contract::limits::MAX_INLINE_ATTACHMENT_BYTES as u64;
        let bytes = self
            .reader
            .read(&confined.relative, &confined.absolute, limit)
            .await?;
        if memchr_nul(&bytes) {
            return Ok(ReferencedFile::Bytes(bytes));
        }
        match String::from_utf8(bytes) {
            Ok(text) => Ok(ReferencedFile::Text(
                aptix_index::redact_secrets(&text).into_owned(),
            )),
            Err(error) => Ok(ReferencedFile::Bytes(error.into_bytes())),
        }
    }
}

#[async_trait]
impl ReferenceReader for ReferenceFiles {
    async fn read_reference(&self, path: &str) -> Result<ReferencedFile, String> {
        self.read(path).await.map_err(|error| error.to_string())
    }
}

fn memchr_nul(bytes: &[u8]) -> bool {
    bytes.contains(&0)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    #[serde(default)]
    start_line: Option<usize>,
    #[serde(default)]
    end_line: Option<usize>,
}

#[async_trait]
impl ServerTool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }

    fn description(&self) -> &str {
        "Read lines of a text file in the workspace, with line numbers."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the workspace root, e.g. crates/foo/src/lib.rs"},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line, from 1 (default 1)"},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line, inclusive (default: the end, within the cap)"}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn usage(&self) -> Option<&str> {
        Some(
            "read_file: read a workspace file (path relative to the workspace root) when the context does not show enough of it; give start_line and end_line to read part of a large file. One call returns at most 400 lines or 64 KiB; the result's note says where to continue. Ignored, secret and binary files are refused.",
        )
    }

    async fn execute(&self, arguments_json: &str) -> Result<String, String> {
        let value = self
            .run(arguments_json)
            .await
            .map_err(|error| error.to_string())?;
        result(&value)
    }
}

//! Size limits of an AGN-034 request.
//!
//! The limits are generous on purpose: they exist so that a runaway client (a whole
//! repository pasted inline, a tool dumping a database) gets a clear violation naming
//! the field instead of a slow request, a provider error or an out-of-memory server.
//! Text sizes count UTF-8 bytes as sent; base64 attachments count their base64 text,
//! not the decoded bytes, so a client can check a limit without decoding anything.

/// The most bytes [`AgentExecuteRequest::from_json_slice`](super::AgentExecuteRequest::from_json_slice)
/// reads: 64 MiB. Larger bodies are rejected before parsing.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// The longest `sessionId`, `turnId` or `toolCallId`: 256 bytes.
pub const MAX_ID_BYTES: usize = 256;

/// The longest `instruction`: 1 MiB, about 250,000 tokens, more than any model reads.
pub const MAX_INSTRUCTION_BYTES: usize = 1024 * 1024;

/// The most entries in `files`.
pub const MAX_FILE_INPUTS: usize = 256;

/// The most entries in `images`.
pub const MAX_IMAGE_INPUTS: usize = 64;

/// The longest relative path of a file or image input: 1,024 bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// The longest `mediaType`: 255 bytes (RFC 6838 allows 127 on each side of the `/`).
pub const MAX_MEDIA_TYPE_BYTES: usize = 255;

/// The largest single inline attachment (`content` or `contentBase64`): 20 MiB as sent.
pub const MAX_INLINE_ATTACHMENT_BYTES: usize = 20 * 1024 * 1024;

/// The largest sum of all inline attachments of one request: 48 MiB as sent.
pub const MAX_TOTAL_INLINE_BYTES: usize = 48 * 1024 * 1024;

/// The most conditions in `ragScope.conditions`.
pub const MAX_SCOPE_CONDITIONS: usize = 64;

/// The longest scope condition `key`: 128 bytes.
pub const MAX_SCOPE_KEY_BYTES: usize = 128;

/// The most entries in one condition's `values`.
pub const MAX_SCOPE_VALUES: usize = 256;

/// The longest single scope condition value: 1,024 bytes.
pub const MAX_SCOPE_VALUE_BYTES: usize = 1024;

/// The longest workspace hint (`workspaceId`, `repository`, `language`): 256 bytes.
pub const MAX_HINT_BYTES: usize = 256;

/// The most entries in `toolResults`.
pub const MAX_TOOL_RESULTS: usize = 128;

/// The largest `resultJson` or `errorMessage` of one tool result: 8 MiB.
pub const MAX_TOOL_OUTPUT_BYTES: usize = 8 * 1024 * 1024;

/// The deepest nesting of arrays and objects in an inline `resultJson` value: 128 levels.
/// Text parsed by `serde_json` cannot nest deeper anyway; the limit keeps a value built in
/// code from exhausting the stack when it is serialised.
pub const MAX_RESULT_JSON_DEPTH: usize = 128;

/// The most violations one rejection lists. Beyond it one `too_many_violations`
/// violation says that more were left out, so a hostile request cannot make the
/// server build an unbounded report.
pub const MAX_VIOLATIONS: usize = 1000;

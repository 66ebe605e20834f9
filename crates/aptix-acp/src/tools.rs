//! `read_file` reading through the editor (`fs/read_text_file`) when it offers to. (Each
//! server tool run reaches the editor through the turn's `ToolRunning` and
//! `ToolFinished` deltas; see `report`.)

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::ReadTextFileRequest;
use aptix_tools::{FileReader, ToolError};
use async_trait::async_trait;

/// Locks a mutex whose data stays consistent even if a holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// How long a read through the editor may take: a file is in its buffers or on disk,
/// so an answer takes milliseconds; the rest is an editor that is not answering.
const EDITOR_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads files through the editor's `fs/read_text_file`, so the model sees unsaved
/// buffers. Only asked for paths the tool has confined to the workspace already.
pub(crate) struct EditorReader {
    connection: ConnectionTo<Client>,
    session_id: String,
}

impl EditorReader {
    pub(crate) fn new(connection: ConnectionTo<Client>, session_id: String) -> EditorReader {
        EditorReader {
            connection,
            session_id,
        }
    }

    /// The whole text of the file at `absolute`, as the editor has it, when it answers
    /// within [`EDITOR_READ_TIMEOUT`]: an editor that never does must not hold the turn
    /// (and its session) until someone cancels it.
    pub(crate) async fn read_text(&self, absolute: &Path) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session_id.clone(), absolute.to_path_buf());
        let read = self.connection.send_request(request).block_task();
        match tokio::time::timeout(EDITOR_READ_TIMEOUT, read).await {
            Ok(answer) => answer
                .map(|response| response.content)
                .map_err(|error| in_words(&error)),
            Err(_) => Err(format!(
                "the editor did not answer within {} s",
                EDITOR_READ_TIMEOUT.as_secs()
            )),
        }
    }
}

/// An editor's error in words: its message, and its details when it gives them (the
/// SDKs put an exception's text in `data.details`), not the JSON of it.
pub(crate) fn in_words(error: &agent_client_protocol::Error) -> String {
    let details = match &error.data {
        Some(serde_json::Value::String(text)) => Some(text.as_str()),
        Some(serde_json::Value::Object(data)) => data.get("details").and_then(|d| d.as_str()),
        _ => None,
    };
    match details.map(str::trim).filter(|details| !details.is_empty()) {
        Some(details) => format!("{} ({details})", error.message.trim_end_matches('.')),
        None => error.message.clone(),
    }
}

#[async_trait]
impl FileReader for EditorReader {
    async fn read(
        &self,
        relative: &str,
        absolute: &Path,
        limit: u64,
    ) -> Result<Vec<u8>, ToolError> {
        let text = self
            .read_text(absolute)
            .await
            .map_err(|message| ToolError::Io {
                path: relative.to_owned(),
                message: format!("the editor could not read it: {message}"),
            })?;
        let bytes = u64::try_from(text.len()).unwrap_or(u64::MAX);
        if bytes > limit {
            return Err(ToolError::TooLarge {
                path: relative.to_owned(),
                bytes,
                limit,
            });
        }
        Ok(text.into_bytes())
    }
}

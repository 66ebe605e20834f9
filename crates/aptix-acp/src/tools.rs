//! The server tools as an editor sees them: each run reported to the prompt in flight,
//! and `read_file` reading through the editor (`fs/read_text_file`) when it offers to.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::ReadTextFileRequest;
use aptix_orchestrator::ServerTool;
use aptix_tools::{FileReader, ToolError};
use async_trait::async_trait;
use serde_json::Value;

use crate::report::TurnReporter;

/// Locks a mutex whose data stays consistent even if a holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where a session's tool runs are reported: the reporter of the prompt in flight, if
/// any. The orchestrator runs a session's tools one at a time, inside its turn.
#[derive(Default)]
pub(crate) struct ToolObserver {
    reporter: Mutex<Option<Arc<Mutex<TurnReporter>>>>,
}

impl ToolObserver {
    /// Reports tool runs to `reporter` until [`detach`](Self::detach).
    pub(crate) fn attach(&self, reporter: Arc<Mutex<TurnReporter>>) {
        *lock(&self.reporter) = Some(reporter);
    }

    /// Stops reporting.
    pub(crate) fn detach(&self) {
        *lock(&self.reporter) = None;
    }

    fn with(&self, report: impl FnOnce(&mut TurnReporter)) {
        let reporter = lock(&self.reporter).clone();
        if let Some(reporter) = reporter {
            report(&mut lock(&reporter));
        }
    }
}

/// A server tool whose runs are reported (started, then completed or failed) to the
/// session's [`ToolObserver`]. It runs the wrapped tool unchanged.
pub(crate) struct ObservedTool {
    inner: Arc<dyn ServerTool>,
    observer: Arc<ToolObserver>,
}

impl ObservedTool {
    pub(crate) fn new(inner: Arc<dyn ServerTool>, observer: Arc<ToolObserver>) -> ObservedTool {
        ObservedTool { inner, observer }
    }
}

#[async_trait]
impl ServerTool for ObservedTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn parameters(&self) -> Value {
        self.inner.parameters()
    }

    fn strict(&self) -> bool {
        self.inner.strict()
    }

    fn usage(&self) -> Option<&str> {
        self.inner.usage()
    }

    async fn execute(&self, arguments_json: &str) -> Result<String, String> {
        let name = self.inner.name();
        self.observer
            .with(|reporter| reporter.tool_started(name, arguments_json));
        let outcome = self.inner.execute(arguments_json).await;
        self.observer
            .with(|reporter| reporter.tool_finished(name, arguments_json, &outcome));
        outcome
    }
}

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

    /// The whole text of the file at `absolute`, as the editor has it.
    pub(crate) async fn read_text(&self, absolute: &Path) -> Result<String, String> {
        let request = ReadTextFileRequest::new(self.session_id.clone(), absolute.to_path_buf());
        self.connection
            .send_request(request)
            .block_task()
            .await
            .map(|response| response.content)
            .map_err(|error| error.to_string())
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

//! Aptix as an agent of the Agent Client Protocol (ACP): an editor (Zed, a JetBrains
//! IDE, Neovim with CodeCompanion) starts `aptix acp` and drives it with JSON-RPC 2.0,
//! one message per line, over the agent's stdin and stdout.
//!
//! [`AcpAgent`] maps ACP onto the orchestrator; it implements no rule of the design
//! documents itself. A `session/prompt` becomes an AGN-034 user turn run by
//! [`aptix_orchestrator::Orchestrator::execute_streaming`], and the turn's stream deltas
//! and server tool runs become `session/update` notifications:
//!
//! | ACP | Aptix |
//! |---|---|
//! | `initialize` | protocol version 1, `agentInfo`, `loadSession`, prompts of text, resource links, embedded resources and images; no auth methods (the key comes from the environment) |
//! | `session/new {cwd}` | a session whose workspace is `cwd`, opened by the caller's [`WorkspaceOpener`] (settings, store, index refreshed, tools, the orchestrator over them) |
//! | `session/load` | the stored history replayed as updates, then the answer |
//! | `session/prompt` | text: the instruction; links and resources: attachments; the answer's `stopReason` from the envelope (`end_turn`, `max_tokens`, `refusal`, `max_turn_requests`, `cancelled`); a provider failure: a JSON-RPC error saying what to do |
//! | `session/cancel` | the turn's future is dropped (the provider stream and any tool stop), nothing is stored, the prompt answers `cancelled` (too late once the answer is being stored: then it answers as finished) |
//! | `fs/read_text_file` | when the editor offers it, the built-in `read_file` tool reads through it (unsaved buffers) |
//! | `mcpServers` of `session/new` and `session/load` | each stdio server started for the session (in its `cwd`, with its `env` and only the variables that find programs and folders: never the provider's key), each streamable HTTP one connected to with the editor's headers, its tools offered to the model as `mcp__<server>__<tool>`, the editor asked (`session/request_permission`) before one not marked read-only runs; a server that does not start is told to the editor with the first prompt, and the session opens without its tools |
//!
//! Every handler that waits hands its work to a task of the connection, so the message
//! loop keeps reading (a cancel arrives while a turn streams). Malformed lines, unknown
//! methods and wrong parameters are answered with JSON-RPC errors by the SDK, and the
//! agent keeps serving. Stdout carries only ACP messages: the agent writes nothing else
//! there, and a caller must log to stderr.
//!
//! # Example
//!
//! The agent in-process, driven by the SDK's client over the agent's own component
//! (the `aptix` command serves it on stdio with [`AcpAgent::serve_stdio`]):
//!
//! ```
//! use std::path::Path;
//! use std::sync::Arc;
//!
//! use agent_client_protocol::schema::ProtocolVersion;
//! use agent_client_protocol::v1::schema::InitializeRequest;
//! use agent_client_protocol::Client;
//! use aptix_acp::{AcpAgent, AcpError, OpenedWorkspace, WorkspaceOpener};
//! use aptix_client::FakeProvider;
//! use aptix_model::wire::Response;
//! use aptix_orchestrator::{InMemorySessionStore, Orchestrator, ServerTool, SessionStore};
//! use aptix_tools::FileReader;
//!
//! struct Scripted(Arc<FakeProvider>);
//!
//! impl WorkspaceOpener for Scripted {
//!     fn open(
//!         &self,
//!         cwd: &Path,
//!         _reader: Option<Arc<dyn FileReader>>,
//!         mcp_tools: Vec<Arc<dyn ServerTool>>,
//!     ) -> Result<OpenedWorkspace, AcpError> {
//!         let store: Arc<dyn SessionStore> = Arc::new(InMemorySessionStore::new());
//!         let orchestrator = mcp_tools
//!             .into_iter()
//!             .fold(Orchestrator::builder(self.0.clone(), store.clone()), |builder, tool| {
//!                 builder.server_tool(tool)
//!             })
//!             .build()
//!             .map_err(|error| error.to_string());
//!         Ok(OpenedWorkspace { root: cwd.to_path_buf(), orchestrator, store })
//!     }
//!     fn new_session_id(&self) -> String { "s-1".into() }
//!     fn new_turn_id(&self) -> String { "t-1".into() }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
//! let provider = Arc::new(FakeProvider::new());
//! provider.push_response(serde_json::from_str::<Response>(r#"{
//!     "id": "resp_1", "status": "completed", "model": "gpt-test",
//!     "output": [{"type": "message", "role": "assistant",
//!                 "content": [{"type": "output_text", "text": "Hello."}]}]
//! }"#)?);
//! let agent = AcpAgent::new(Arc::new(Scripted(provider)));
//! let answer = Client.v1().connect_with(agent, async |cx| {
//!     cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
//!     let mut session = cx
//!         .build_session(std::env::temp_dir())
//!         .block_task()
//!         .start_session()
//!         .await?
//!         .session;
//!     session.send_prompt("Say hello")?;
//!     session.read_to_string().await
//! }).await?;
//! assert_eq!(answer, "Hello.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Architecture invariant:** maps ACP to the orchestrator's API and back; every rule
//! of a turn (validation, context, the tool loop, what is stored) is the
//! orchestrator's.
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod agent;
mod call_ids;
mod error;
mod mcp;
mod present;
mod prompt;
mod replay;
mod report;
mod tools;

pub use agent::{AcpAgent, OpenedWorkspace, WorkspaceOpener};
pub use error::AcpError;

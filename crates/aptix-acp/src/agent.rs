//! The agent: one typed handler per ACP method. A handler runs inside the connection's
//! message loop and blocks it until it returns, so every one that waits (opening a
//! workspace, replaying a session, running a turn) hands its work to a task of the
//! connection (`cx.spawn`) and returns at once: `session/cancel` is read while a turn
//! runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, Meta, NewSessionRequest, NewSessionResponse, PromptCapabilities,
    PromptRequest, PromptResponse, SessionCapabilities, SessionInfo, SessionListCapabilities,
    SessionNotification, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, ConnectTo, Error as RpcError, ErrorCode, Lines};
use aptix_mapping::StreamDelta;
use aptix_model::contract::{AgentExecuteRequest, AgentExecuteResponse, FinishReason, Kind};
use aptix_orchestrator::{Orchestrator, ServerTool, SessionStore};
use aptix_tools::FileReader;
use tokio::sync::oneshot;

use crate::call_ids::CallIds;
use crate::error::{
    AcpError, from_error_envelope, from_opening, from_orchestrator, internal, invalid_params, rpc,
    unknown_session,
};
use crate::mcp::{self, McpServers};
use crate::report::TurnReporter;
use crate::tools::{EditorReader, lock};
use crate::{prompt, replay};

/// Opens the workspace a session works in. The caller (the `aptix` command, through
/// `aptix-runtime`) owns the wiring: settings, the provider, the session store, the
/// index, the tools and the orchestrator built from them.
pub trait WorkspaceOpener: Send + Sync + 'static {
    /// Opens the workspace for a session whose editor folder is `cwd`: loads its
    /// settings, opens its session store and builds the orchestrator its turns run on
    /// (its index refreshed, progress on stderr, never stdout), with the built-in
    /// `read_file` reading through `reader` when one is given (the editor's buffers).
    /// Blocking: it is called off the message loop.
    ///
    /// `server_tools` are tools the session adds to the workspace's own (those of the
    /// MCP servers the editor offered): the orchestrator must offer them too.
    fn open(
        &self,
        cwd: &Path,
        reader: Option<Arc<dyn FileReader>>,
        server_tools: Vec<Arc<dyn ServerTool>>,
    ) -> Result<OpenedWorkspace, AcpError>;

    /// The workspace folder and the session store `open` would use for `cwd`, to list
    /// its sessions (`session/list`) and find the one a `session/load` names, without
    /// building an orchestrator or refreshing the index (nor making a store where
    /// there is none). The default opens the whole workspace; an opener that can do less should.
    /// Blocking, like `open`.
    fn sessions_of(&self, cwd: &Path) -> Result<(PathBuf, Arc<dyn SessionStore>), AcpError> {
        let opened = self.open(cwd, None, Vec::new())?;
        Ok((opened.root, opened.store))
    }

    /// Whether prompts in `cwd` can run (a provider is configured), or why not: asked
    /// before a session's MCP servers are started, so that a session whose prompts
    /// cannot run starts none (and does not wait on them). Blocking, like `open`. The
    /// default says they can.
    fn can_prompt(&self, cwd: &Path) -> Result<(), String> {
        let _ = cwd;
        Ok(())
    }

    /// A new session id.
    fn new_session_id(&self) -> String;

    /// Whether `id` is one [`new_session_id`](Self::new_session_id) made. A session
    /// is stored with its first turn; one made and never prompted (or whose first
    /// prompts failed: a key fixed, the editor restarted) has nothing stored, and an
    /// id of this shape loads as that empty session instead of an unknown one. The
    /// default knows none.
    fn made_session_id(&self, id: &str) -> bool {
        let _ = id;
        false
    }

    /// A new turn id, unique per prompt.
    fn new_turn_id(&self) -> String;
}

/// What a session runs on.
pub struct OpenedWorkspace {
    /// The workspace folder in use (the session's `cwd`, unless the caller pins one).
    pub root: PathBuf,
    /// The orchestrator the session's prompts run on, or why there is none, in words a
    /// person can act on (no API key, say): the session opens, and each prompt ends
    /// with this message.
    pub orchestrator: Result<Orchestrator, String>,
    /// Where the session's turns are kept (shared with `aptix ask` and `aptix serve`);
    /// the orchestrator's own store when there is one.
    pub store: Arc<dyn SessionStore>,
}

impl std::fmt::Debug for OpenedWorkspace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedWorkspace")
            .field("root", &self.root)
            .field(
                "orchestrator",
                &self.orchestrator.as_ref().map(|_| "configured"),
            )
            .finish_non_exhaustive()
    }
}

/// Aptix as an ACP agent. Serve it on stdio with [`serve_stdio`](Self::serve_stdio), or
/// connect it to any transport of the SDK (it is a `ConnectTo<Client>` component).
pub struct AcpAgent {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AcpAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpAgent")
            .field("sessions", &lock(&self.shared.sessions).len())
            .finish_non_exhaustive()
    }
}

struct Shared {
    opener: Arc<dyn WorkspaceOpener>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Whether the editor serves `fs/read_text_file` (from `initialize`).
    editor_reads: AtomicBool,
    /// How long the editor's MCP servers may take to start, and one tool call.
    mcp_timeouts: mcp::Timeouts,
}

/// A prompt in flight: the slot is taken until its answer is sent.
#[derive(Default)]
struct Running {
    cancel: Option<oneshot::Sender<()>>,
}

struct Session {
    id: String,
    root: PathBuf,
    /// The session's orchestrator, or why prompts cannot run (no provider).
    turns: Result<Arc<Orchestrator>, String>,
    editor: Option<Arc<EditorReader>>,
    running: Mutex<Option<Running>>,
    /// The editor's MCP servers started for the session (their tools are among the
    /// orchestrator's); they stop when the session is dropped.
    mcp: Mutex<McpServers>,
    /// Asks the editor before an MCP tool that may change things runs.
    permission: Arc<mcp::Permission>,
    /// What the editor is told with the session's next prompt (an MCP server that did
    /// not start).
    notices: Mutex<Vec<String>>,
    /// The ids the editor was given for the session's tool calls.
    call_ids: Arc<Mutex<CallIds>>,
}

impl AcpAgent {
    /// An agent whose sessions open their workspaces with `opener`.
    pub fn new(opener: Arc<dyn WorkspaceOpener>) -> AcpAgent {
        AcpAgent {
            shared: Arc::new(Shared {
                opener,
                sessions: Mutex::new(HashMap::new()),
                editor_reads: AtomicBool::new(false),
                mcp_timeouts: mcp::Timeouts::default(),
            }),
        }
    }

    /// The longest one call of an editor's MCP server tool may take (default 5 min): a
    /// server that has not answered by then is sent `notifications/cancelled`, and the
    /// model is told the call failed, so that a hung server does not hold the turn until
    /// the user cancels it. Zero is taken as the default.
    pub fn mcp_tool_timeout(mut self, timeout: std::time::Duration) -> AcpAgent {
        if let Some(shared) = Arc::get_mut(&mut self.shared)
            && !timeout.is_zero()
        {
            shared.mcp_timeouts.call = timeout;
        }
        self
    }

    /// How long each of a session's MCP servers has to start, answer the MCP handshake
    /// and list its tools (default 60 s, which a first `npx -y` or `uvx` download
    /// needs): `session/new` waits for them that long, and a server not ready by then
    /// is stopped and the session opened without its tools (its first prompt says
    /// why). Zero is taken as the default.
    pub fn mcp_startup_timeout(mut self, timeout: std::time::Duration) -> AcpAgent {
        if let Some(shared) = Arc::get_mut(&mut self.shared)
            && !timeout.is_zero()
        {
            shared.mcp_timeouts.startup = timeout;
        }
        self
    }

    /// Serves ACP on this process's stdin and stdout until the editor closes stdin
    /// (a prompt still running then is cancelled, and its session released, before
    /// this returns). Stdout carries nothing but ACP messages; log to stderr.
    ///
    /// A line of bytes that are not UTF-8 (an editor passing a Latin-1 buffer through)
    /// is read with U+FFFD in their place, and a warning logged: the SDK's own stdio
    /// transport ended the whole connection on one, with every session and turn in it.
    pub async fn serve_stdio(self) -> Result<(), AcpError> {
        self.serve_stdio_until(std::future::pending()).await
    }

    /// [`serve_stdio`](Self::serve_stdio), until `stop` completes if it does first (a
    /// signal, say): then the connection is dropped (a prompt running is cancelled, and
    /// nothing of it stored) and, as when the editor closes stdin, every session's MCP
    /// servers are stopped before this returns.
    pub async fn serve_stdio_until(self, stop: impl Future<Output = ()>) -> Result<(), AcpError> {
        use futures_util::AsyncWriteExt as _;
        // Blocking reads and writes on threads of their own, as the SDK's transport does:
        // a read of stdin cannot be cancelled, and a detached thread does not hold the
        // process open at exit.
        let reading = Arc::clone(&self.shared);
        let incoming = futures_util::stream::unfold(
            Some(futures_util::io::BufReader::new(blocking::Unblock::new(
                std::io::stdin(),
            ))),
            move |reader| {
                let shared = Arc::clone(&reading);
                async move {
                    let mut reader = reader?;
                    loop {
                        let mut line = Vec::new();
                        match read_message(&mut reader, &mut line).await {
                            Ok(Read::End) => {
                                // The editor closed its end. A prompt still running is
                                // cancelled and ends while the connection is up, as on a
                                // stop: ended with it, its session stayed leased (busy to
                                // a replica on another host) until the lease ran out.
                                if shared.any_running() {
                                    tracing::info!(
                                        "the editor closed stdin: cancelling the prompts running"
                                    );
                                    shared.cancel_all();
                                    if tokio::time::timeout(STOP_GRACE, shared.prompts_ended())
                                        .await
                                        .is_err()
                                    {
                                        warn_not_ended();
                                    }
                                }
                                return None;
                            }
                            // Not a message: nothing to answer.
                            Ok(Read::Line) if line.trim_ascii().is_empty() => {}
                            Ok(Read::Line) => return Some((Ok(line_text(line)), Some(reader))),
                            Ok(Read::TooLong) => {
                                tracing::warn!(
                                    "a message from the editor is over {} MiB; it is dropped unread",
                                    MAX_MESSAGE >> 20
                                );
                                // Answered as what it is to the protocol: not a message it
                                // can read (-32700).
                                return Some((Ok(TOO_LONG.to_owned()), Some(reader)));
                            }
                            // Reported once; the stream ends after it.
                            Err(error) => return Some((Err(error), None)),
                        }
                    }
                }
            },
        );
        let outgoing = futures_util::sink::unfold(
            blocking::Unblock::new(std::io::stdout()),
            |mut stdout, line: String| async move {
                let mut bytes = bounded_error_reply(line).into_bytes();
                bytes.push(b'\n');
                stdout.write_all(&bytes).await?;
                stdout.flush().await?;
                Ok::<_, std::io::Error>(stdout)
            },
        );
        let lines = Lines::new(Box::pin(outgoing), Box::pin(incoming));
        let shared = Arc::clone(&self.shared);
        let mut serving = std::pin::pin!(ConnectTo::<Client>::connect_to(self, lines));
        let served = tokio::select! {
            served = &mut serving => served,
            () = stop => {
                tracing::info!("stopping: the agent was asked to end");
                // Each prompt running is cancelled as `session/cancel` would, and its
                // `cancelled` answer goes out before the connection does: the editor
                // is not left waiting on a request that will never be answered.
                // A prompt cancelled already (`session/cancel`) and still ending is
                // waited for too.
                shared.cancel_all();
                if shared.any_running() {
                    let answered = async {
                        shared.prompts_ended().await;
                        // The answers are written by the connection: a moment more of
                        // it, for them to go out.
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    };
                    tokio::select! {
                        served = &mut serving => return finish(&shared, served).await,
                        () = answered => {}
                        () = tokio::time::sleep(STOP_GRACE) => warn_not_ended(),
                    }
                }
                Ok(())
            }
        };
        finish(&shared, served).await
    }

    fn component(self) -> impl ConnectTo<Client> {
        let shared = self.shared;
        let (on_initialize, on_new, on_load, on_list, on_prompt, on_cancel) = (
            Arc::clone(&shared),
            Arc::clone(&shared),
            Arc::clone(&shared),
            Arc::clone(&shared),
            Arc::clone(&shared),
            shared,
        );
        Agent
            .v1()
            .name("aptix")
            .on_receive_request(
                async move |request: InitializeRequest,
                            responder: Responder<InitializeResponse>,
                            _cx: ConnectionTo<Client>| {
                    on_initialize.initialize(&request, responder)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: NewSessionRequest,
                            responder: Responder<NewSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    Shared::new_session(&on_new, request, responder, &cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: LoadSessionRequest,
                            responder: Responder<LoadSessionResponse>,
                            cx: ConnectionTo<Client>| {
                    Shared::load_session(&on_load, request, responder, &cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: ListSessionsRequest,
                            responder: Responder<ListSessionsResponse>,
                            cx: ConnectionTo<Client>| {
                    Shared::list_sessions(&on_list, request, responder, &cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_request(
                async move |request: PromptRequest,
                            responder: Responder<PromptResponse>,
                            cx: ConnectionTo<Client>| {
                    Shared::prompt(&on_prompt, request, responder, &cx)
                },
                agent_client_protocol::on_receive_request!(),
            )
            .on_receive_notification(
                async move |notification: CancelNotification, _cx: ConnectionTo<Client>| {
                    on_cancel.cancel(&notification.session_id.0);
                    Ok(())
                },
                agent_client_protocol::on_receive_notification!(),
            )
    }
}

impl ConnectTo<Client> for AcpAgent {
    async fn connect_to(self, client: impl ConnectTo<Agent>) -> Result<(), RpcError> {
        self.component().connect_to(client).await
    }
}

/// Sessions in one page of `session/list`.
const LIST_PAGE: usize = 50;

/// A thread's title from what it first asked: its first line, at most 80 characters.
fn title_of(instruction: &str) -> String {
    let line = instruction.trim().lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(80) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// The session's folder: absolute (ACP requires it) and an existing folder.
fn checked_cwd(cwd: &Path) -> Result<PathBuf, RpcError> {
    if !cwd.is_absolute() {
        return Err(invalid_params(format!(
            "cwd {} is not an absolute path",
            cwd.display()
        )));
    }
    if !cwd.is_dir() {
        return Err(invalid_params(format!(
            "cwd {} is not a folder",
            cwd.display()
        )));
    }
    Ok(cwd.to_path_buf())
}

impl Shared {
    fn initialize(
        &self,
        request: &InitializeRequest,
        responder: Responder<InitializeResponse>,
    ) -> Result<(), RpcError> {
        let reads = request.client_capabilities.fs.read_text_file;
        self.editor_reads.store(reads, Ordering::Relaxed);
        tracing::info!(
            client = ?request.client_info.as_ref().map(|info| (&info.name, &info.version)),
            requested_version = ?request.protocol_version,
            editor_reads = reads,
            "initialize"
        );
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()))
            .prompt_capabilities(
                // Text and resource links always; embedded resources and images become the
                // turn's attachments (AGN-034 files and images). No audio.
                PromptCapabilities::new().image(true).embedded_context(true),
            )
            // The editor's MCP servers over stdio (every agent's) and streamable HTTP.
            .mcp_capabilities(McpCapabilities::new().http(true));
        responder.respond(
            InitializeResponse::new(ProtocolVersion::V1)
                .agent_capabilities(capabilities)
                // The provider key comes from the environment, as for `aptix ask`.
                .auth_methods(Vec::new())
                .agent_info(
                    Implementation::new("aptix", env!("CARGO_PKG_VERSION"))
                        .title("Aptix".to_owned()),
                ),
        )
    }

    fn session(&self, session_id: &str) -> Option<Arc<Session>> {
        lock(&self.sessions).get(session_id).cloned()
    }

    /// Cancels every prompt running, as `session/cancel` does; how many there were.
    fn cancel_all(&self) -> usize {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
        sessions
            .iter()
            .filter(|session| session.cancel_running())
            .count()
    }

    /// Completes once no prompt runs in any session.
    async fn prompts_ended(&self) {
        while self.any_running() {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }

    /// Whether a prompt is running in any session.
    fn any_running(&self) -> bool {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
        sessions
            .iter()
            .any(|session| lock(&session.running).is_some())
    }

    fn new_session(
        shared: &Arc<Shared>,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result<(), RpcError> {
        let cwd = match checked_cwd(&request.cwd) {
            Ok(cwd) => cwd,
            Err(error) => return responder.respond_with_error(error),
        };
        let id = shared.opener.new_session_id();
        let shared = Arc::clone(shared);
        let connection = cx.clone();
        cx.spawn(async move {
            match shared
                .open_session(&id, &cwd, &request.mcp_servers, &connection)
                .await
            {
                Ok(session) => {
                    tracing::info!(session = %id, workspace = %session.root.display(), "new session");
                    lock(&shared.sessions).insert(id.clone(), session);
                    responder.respond(NewSessionResponse::new(id))
                }
                Err(error) => responder.respond_with_error(error),
            }
        })
    }

    /// Starts the editor's MCP servers for the session, then opens its workspace through
    /// the opener, off the message loop (it refreshes the index).
    async fn open_session(
        &self,
        id: &str,
        cwd: &Path,
        mcp_servers: &[agent_client_protocol::v1::schema::McpServer],
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, RpcError> {
        let permission = Arc::new(mcp::Permission::new(cx.clone(), id.to_owned()));
        let opener = Arc::clone(&self.opener);
        let dir = cwd.to_path_buf();
        let ready = tokio::task::spawn_blocking(move || opener.can_prompt(&dir))
            .await
            .unwrap_or(Ok(()));
        let connected = match ready {
            Ok(()) => mcp::connect(mcp_servers, cwd, &permission, self.mcp_timeouts).await,
            Err(why) => {
                if !mcp_servers.is_empty() {
                    tracing::info!(session = %id, %why, "the editor's MCP servers are not started: no prompt can run");
                }
                mcp::Connected::default()
            }
        };
        let editor = self
            .editor_reads
            .load(Ordering::Relaxed)
            .then(|| Arc::new(EditorReader::new(cx.clone(), id.to_owned())));
        let reader = editor.clone().map(|editor| editor as Arc<dyn FileReader>);
        let opener = Arc::clone(&self.opener);
        let dir = cwd.to_path_buf();
        let tools = connected.tools;
        let opened = tokio::task::spawn_blocking(move || opener.open(&dir, reader, tools)).await;
        let opened = match opened {
            Ok(Ok(opened)) => opened,
            Ok(Err(error)) => {
                connected.servers.stop().await;
                return Err(from_opening(&error));
            }
            Err(error) => {
                connected.servers.stop().await;
                return Err(internal(format!("opening the workspace stopped: {error}")));
            }
        };
        // Without a provider the session still opens (it can be loaded, and the editor
        // shows why prompts fail): each prompt ends with the reason. Each tool run
        // reaches the editor through the turn's ToolRunning and ToolFinished deltas.
        let turns = opened.orchestrator.map(Arc::new);
        let mut servers = connected.servers;
        if turns.is_err() {
            // No prompt can run to call their tools.
            std::mem::take(&mut servers).stop().await;
        }
        Ok(Arc::new(Session {
            id: id.to_owned(),
            root: opened.root,
            turns,
            editor,
            running: Mutex::new(None),
            mcp: Mutex::new(servers),
            permission,
            notices: Mutex::new(connected.notices),
            call_ids: Arc::default(),
        }))
    }

    fn load_session(
        shared: &Arc<Shared>,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result<(), RpcError> {
        let id = request.session_id.0.to_string();
        let cwd = match checked_cwd(&request.cwd) {
            Ok(cwd) => cwd,
            Err(error) => return responder.respond_with_error(error),
        };
        if let Some(session) = shared.session(&id)
            && lock(&session.running).is_some()
        {
            return responder.respond_with_error(rpc(
                ErrorCode::INVALID_REQUEST,
                format!("session {id} has a prompt running; cancel it before loading the session"),
            ));
        }
        let shared = Arc::clone(shared);
        let connection = cx.clone();
        cx.spawn(async move {
            // The stored session is looked for first, in the store the workspace for
            // `cwd` has (no store is made, nothing indexed): a load that fails leaves
            // a folder as it found it.
            let opener = Arc::clone(&shared.opener);
            let folder = cwd.clone();
            let (root, store) = match tokio::task::spawn_blocking(move || opener.sessions_of(&folder)).await {
                Ok(Ok(found)) => found,
                Ok(Err(error)) => return responder.respond_with_error(from_opening(&error)),
                Err(error) => {
                    return responder.respond_with_error(internal(format!(
                        "opening the workspace stopped: {error}"
                    )));
                }
            };
            let open = shared.session(&id);
            // A session lives in its workspace's store: open here in another workspace,
            // loading it in this one would find nothing to replay and go on in this
            // store without its history, the conversation cut in two.
            // Compared as the folders they are: a symlink or `..` spelling of the same
            // folder is the same workspace.
            let same_folder = |a: &Path, b: &Path| {
                a == b
                    || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b)
            };
            if let Some(open) = &open
                && !same_folder(&open.root, &root)
            {
                return responder.respond_with_error(rpc(
                    ErrorCode::INVALID_PARAMS,
                    format!(
                        "session {id} belongs to the workspace {}, not {}: load it with that cwd, or start a new session here",
                        open.root.display(),
                        root.display()
                    ),
                ));
            }
            let stored = match store.load_full(&id).await {
                Ok(stored) => stored,
                Err(error) => {
                    return responder.respond_with_error(internal(format!(
                        "could not read session {id}: {error}"
                    )));
                }
            };
            // A session has no stored turn until its first prompt ends: one started on
            // this connection, or one this agent made before a restart, has nothing to
            // replay.
            if stored.is_none() && open.is_none() {
                if !shared.opener.made_session_id(&id) {
                    return responder.respond_with_error(unknown_session(&id));
                }
                tracing::info!(session = %id, "loading a session with no stored turn: nothing to replay");
            }
            let session = match shared
                .open_session(&id, &cwd, &request.mcp_servers, &connection)
                .await
            {
                Ok(session) => session,
                Err(error) => return responder.respond_with_error(error),
            };
            if let Some(stored) = stored {
                // Replayed before the answer, as the protocol asks: the conversation as
                // the user saw it, compactions undone.
                let mut ids = CallIds::default();
                for update in replay::updates(&stored.value, &session.root, &mut ids) {
                    connection.send_notification(SessionNotification::new(id.clone(), update))?;
                }
                *lock(&session.call_ids) = ids;
            }
            // Checked again as the session is swapped in: a prompt may have begun on the
            // open one while this one opened (its servers started, its index refreshed).
            let replaced = {
                let mut sessions = lock(&shared.sessions);
                let busy = sessions
                    .get(&id)
                    .is_some_and(|open| lock(&open.running).is_some());
                if busy {
                    None
                } else {
                    Some(sessions.insert(id.clone(), Arc::clone(&session)))
                }
            };
            let Some(replaced) = replaced else {
                session.stop_mcp().await;
                return responder.respond_with_error(rpc(
                    ErrorCode::INVALID_REQUEST,
                    format!("session {id} has a prompt running; cancel it before loading the session"),
                ));
            };
            if let Some(replaced) = &replaced {
                // The user's "always" answers are the session's, not the process's.
                session.permission.inherit(&replaced.permission);
            }
            tracing::info!(session = %id, workspace = %session.root.display(), "session loaded");
            let answered = responder.respond(LoadSessionResponse::new());
            // The session's servers as it was open: the loaded one has its own.
            if let Some(replaced) = replaced {
                replaced.stop_mcp().await;
            }
            answered
        })
    }

    /// `session/list`: the stored sessions of the workspace for `cwd`, most recently used
    /// first, titled by what each first asked, with when each last changed; without
    /// `cwd`, those of the workspaces this agent has opened. Pages of [`LIST_PAGE`]
    /// sessions, with a cursor for more when a `cwd` is given.
    fn list_sessions(
        shared: &Arc<Shared>,
        request: ListSessionsRequest,
        responder: Responder<ListSessionsResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result<(), RpcError> {
        let folders = match &request.cwd {
            Some(cwd) => match checked_cwd(cwd) {
                Ok(cwd) => vec![cwd],
                Err(error) => return responder.respond_with_error(error),
            },
            None => {
                let mut roots: Vec<PathBuf> = lock(&shared.sessions)
                    .values()
                    .map(|session| session.root.clone())
                    .collect();
                roots.sort();
                roots.dedup();
                roots
            }
        };
        // A cursor pages one workspace's store; across several there is one page each,
        // and no cursor (one given back would be ignored, and a client paging would
        // get the same page forever).
        let paged = request.cwd.is_some();
        let cursor = request.cursor.clone().filter(|_| paged);
        let opener = Arc::clone(&shared.opener);
        cx.spawn(async move {
            let mut sessions = Vec::new();
            let mut next_cursor = None;
            for folder in folders {
                let opener = Arc::clone(&opener);
                let opened = tokio::task::spawn_blocking(move || opener.sessions_of(&folder));
                let (root, store) = match opened.await {
                    Ok(Ok(found)) => found,
                    Ok(Err(error)) => {
                        return responder.respond_with_error(from_opening(&error));
                    }
                    Err(error) => {
                        return responder.respond_with_error(internal(format!(
                            "opening the workspace stopped: {error}"
                        )));
                    }
                };
                let page = match store.list_sessions(LIST_PAGE, cursor.as_deref()).await {
                    Ok(page) => page,
                    Err(aptix_orchestrator::OrchestratorError::InvalidCursor { cursor }) => {
                        return responder.respond_with_error(invalid_params(format!(
                            "{cursor:?} is not a cursor of session/list: pass the nextCursor \
                             of the previous page"
                        )));
                    }
                    Err(error) => {
                        return responder.respond_with_error(internal(format!(
                            "could not list the sessions of {}: {error}",
                            root.display()
                        )));
                    }
                };
                next_cursor = page.next_cursor.filter(|_| paged);
                for summary in page.sessions {
                    // A session that does not read is listed without a title.
                    let title = match store.load(&summary.session_id).await {
                        Ok(Some(stored)) => stored.value.first_instruction().map(title_of),
                        Ok(None) => continue,
                        Err(_) => None,
                    };
                    let updated = summary.updated_at_unix_ms.map(|ms| {
                        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
                        humantime::format_rfc3339_seconds(at).to_string()
                    });
                    sessions.push(
                        SessionInfo::new(summary.session_id, root.clone())
                            .title(title)
                            .updated_at(updated),
                    );
                }
            }
            responder.respond(ListSessionsResponse::new(sessions).next_cursor(next_cursor))
        })
    }

    fn prompt(
        shared: &Arc<Shared>,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        cx: &ConnectionTo<Client>,
    ) -> Result<(), RpcError> {
        let id = request.session_id.0.to_string();
        let Some(session) = shared.session(&id) else {
            return responder.respond_with_error(unknown_session(&id));
        };
        let (cancel, cancelled) = oneshot::channel();
        // A prompt sent right after `session/cancel`, before the cancelled one has
        // answered, waits for it to end (briefly: a cancelled prompt ends at its next
        // step) instead of being refused as a second prompt.
        let ending = {
            let mut running = lock(&session.running);
            match running.as_ref() {
                None => {
                    *running = Some(Running {
                        cancel: Some(cancel),
                    });
                    None
                }
                Some(Running { cancel: None }) => Some(cancel),
                Some(_) => {
                    return responder.respond_with_error(rpc(
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "session {id} already has a prompt running; wait for its answer or cancel it (session/cancel)"
                        ),
                    ));
                }
            }
        };
        let turn_id = shared.opener.new_turn_id();
        let request_cancelled = responder.cancellation();
        let connection = cx.clone();
        cx.spawn(async move {
            if let Some(cancel) = ending {
                let started = tokio::time::Instant::now();
                loop {
                    {
                        let mut running = lock(&session.running);
                        if running.is_none() {
                            *running = Some(Running {
                                cancel: Some(cancel),
                            });
                            break;
                        }
                    }
                    if started.elapsed() > STOP_GRACE {
                        return responder.respond_with_error(rpc(
                            ErrorCode::INVALID_REQUEST,
                            format!(
                                "session {id}'s cancelled prompt has not ended yet; send this prompt again when it answers"
                            ),
                        ));
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            }
            let cancel = async move {
                tokio::select! {
                    Ok(()) = cancelled => {}
                    () = request_cancelled.cancelled() => {}
                }
            };
            let outcome = session
                .run_prompt(&turn_id, request.prompt, connection, cancel)
                .await;
            // Said in the agent's log at the default level too: an editor's log shows
            // the protocol library's "Internal error" line, not why.
            if let Err(error) = &outcome {
                tracing::warn!(
                    session = %session.id,
                    turn = %turn_id,
                    code = i32::from(error.code),
                    "the prompt failed: {}",
                    error.message
                );
            }
            // Free the slot before answering: the editor may send the next prompt as
            // soon as it has the answer.
            *lock(&session.running) = None;
            responder.respond_with_result(outcome)
        })
    }

    fn cancel(&self, session_id: &str) {
        let Some(session) = self.session(session_id) else {
            tracing::debug!(session = %session_id, "session/cancel for a session this agent does not know");
            return;
        };
        if session.cancel_running() {
            tracing::info!(session = %session_id, "cancelling the prompt in flight");
        }
    }
}

impl Session {
    /// Cancels the prompt running, if one is and was not cancelled already.
    fn cancel_running(&self) -> bool {
        let Some(cancel) = lock(&self.running)
            .as_mut()
            .and_then(|running| running.cancel.take())
        else {
            return false;
        };
        let _ = cancel.send(());
        true
    }

    /// Stops the session's MCP servers (its tools then fail, saying so).
    async fn stop_mcp(&self) {
        let servers = std::mem::take(&mut *lock(&self.mcp));
        servers.stop().await;
    }

    /// One prompt: the AGN-034 user turn through the orchestrator, its deltas and tool
    /// runs as updates, until it ends or `cancel` fires.
    async fn run_prompt(
        &self,
        turn_id: &str,
        blocks: Vec<agent_client_protocol::v1::schema::ContentBlock>,
        connection: ConnectionTo<Client>,
        cancel: impl Future<Output = ()>,
    ) -> Result<PromptResponse, RpcError> {
        let turns = match &self.turns {
            Ok(turns) => turns,
            // As every failed prompt, with a code an editor can act on (`data.errorCode`).
            Err(reason) => {
                return Err(internal(reason.clone())
                    .data(serde_json::json!({ "errorCode": "no_provider" })));
            }
        };
        let reporter = Arc::new(Mutex::new(TurnReporter::new(
            connection,
            self.id.clone(),
            self.root.clone(),
            Arc::clone(&self.call_ids),
        )));
        // What the editor was not told yet: an MCP server of the session that did not
        // start, say.
        for notice in std::mem::take(&mut *lock(&self.notices)) {
            lock(&reporter).warn(&notice);
        }
        let mut sink = {
            let reporter = Arc::clone(&reporter);
            let permission = Arc::clone(&self.permission);
            move |delta: &StreamDelta| {
                let mut reporter = lock(&reporter);
                if let StreamDelta::ToolRunning { call_id, .. } = delta {
                    // Asked of the editor by the id its card has.
                    permission.running(&reporter.shown_id(call_id));
                }
                reporter.delta(delta);
            }
        };
        // Reading linked files through the editor is part of the prompt: a cancel stops
        // it too.
        // The request as built, kept to settle the turn if it is cancelled.
        let built: Mutex<Option<AgentExecuteRequest>> = Mutex::new(None);
        let turn = async {
            let (request, notes) = prompt::user_turn(
                &self.id,
                turn_id,
                blocks,
                &self.root,
                self.editor.as_deref(),
            )
            .await?;
            for note in notes {
                lock(&reporter).warn(&note);
            }
            *lock(&built) = Some(request.clone());
            // A model request sent again after a 429, a 5xx or a lost connection is
            // told to the editor before the wait, as a cut stream's retry is.
            let observer = {
                let reporter = Arc::clone(&reporter);
                move |notice: &aptix_client::RetryNotice| {
                    lock(&reporter).delta(&aptix_orchestrator::retry_delta(notice));
                }
            };
            aptix_client::observe_retries(observer, turns.execute_streaming(request, &mut sink))
                .await
                .map_err(from_orchestrator)
        };
        let outcome = tokio::select! {
            result = turn => Some(result),
            () = cancel => None,
        };
        let envelope = match outcome {
            Some(result) => result?,
            None => {
                // The turn's future is dropped: the provider stream and any tool running
                // stop. A turn is committed once, at its end, and a commit already begun
                // runs to its end: then the turn is answered as the finished turn it was.
                let request = lock(&built).take();
                let settled = match &request {
                    Some(request) => turns.settle_dropped_turn(request).await,
                    // Cancelled while its linked files were read: nothing ran.
                    None => turns.release_session(&self.id).await.map(|()| None),
                };
                match settled {
                    Ok(Some(envelope)) => {
                        tracing::info!(session = %self.id, turn = %turn_id, "prompt cancelled as it was stored; answering with it");
                        envelope
                    }
                    settled => {
                        if let Err(error) = settled {
                            tracing::warn!(session = %self.id, %error, "could not release the session after a cancel");
                        }
                        lock(&reporter).cancel_open_calls();
                        tracing::info!(session = %self.id, turn = %turn_id, "prompt cancelled; nothing stored");
                        return Ok(PromptResponse::new(StopReason::Cancelled));
                    }
                }
            }
        };
        log_turn(&self.id, &envelope);
        if envelope.kind == Kind::Error {
            return Err(from_error_envelope(&envelope));
        }
        lock(&reporter).finish(&envelope);
        Ok(PromptResponse::new(stop_reason(&envelope)).meta(usage_meta(turn_id, &envelope)))
    }
}

/// The ACP stop reason of a finished turn.
fn stop_reason(envelope: &AgentExecuteResponse) -> StopReason {
    let no_text = envelope.text.as_deref().is_none_or(str::is_empty);
    match envelope.finish_reason {
        Some(FinishReason::Length) => StopReason::MaxTokens,
        Some(FinishReason::ContentFilter) => StopReason::Refusal,
        _ if envelope.refusal.is_some() && no_text => StopReason::Refusal,
        // The model still wanted tools when the turn's bound on model calls was
        // reached; the last results go with the next prompt.
        _ if aptix_orchestrator::stopped_at_model_call_bound(envelope) => {
            StopReason::MaxTurnRequests
        }
        _ => StopReason::EndTurn,
    }
}

/// Token usage in the response's `_meta` (protocol v1 has no stable per-turn usage
/// field; its `usage_update` reports a context window Aptix does not know).
fn usage_meta(turn_id: &str, envelope: &AgentExecuteResponse) -> Meta {
    let usage = &envelope.usage;
    let value = serde_json::json!({
        "turnId": turn_id,
        "usage": {
            "inputTokens": usage.prompt_tokens,
            "outputTokens": usage.completion_tokens,
            "totalTokens": usage.total_tokens,
            "cachedTokens": usage.cached_tokens,
            "reasoningTokens": usage.reasoning_tokens,
        },
    });
    let mut meta = Meta::new();
    meta.insert("aptix".to_owned(), value);
    meta
}

fn log_turn(session_id: &str, envelope: &AgentExecuteResponse) {
    let usage = &envelope.usage;
    tracing::info!(
        session = %session_id,
        kind = %envelope.kind,
        finish_reason = ?envelope.finish_reason,
        input_tokens = usage.prompt_tokens,
        cached_tokens = usage.cached_tokens,
        output_tokens = usage.completion_tokens,
        reasoning_tokens = usage.reasoning_tokens,
        "turn finished"
    );
    for warning in &envelope.warnings {
        tracing::warn!(session = %session_id, "{warning}");
    }
}

/// How long a stop waits for the prompts it cancelled to answer.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// The end of serving: the editor is gone, so its sessions' MCP servers are stopped,
/// not left running.
/// Said when cancelled prompts have not ended within [`STOP_GRACE`] and the agent
/// stops all the same.
fn warn_not_ended() {
    tracing::warn!(
        "a prompt did not end within {} s of being cancelled; stopping anyway",
        STOP_GRACE.as_secs()
    );
}

async fn finish(
    shared: &Arc<Shared>,
    served: Result<(), agent_client_protocol::Error>,
) -> Result<(), AcpError> {
    let sessions: Vec<Arc<Session>> = lock(&shared.sessions).drain().map(|(_, s)| s).collect();
    futures_util::future::join_all(sessions.iter().map(|session| session.stop_mcp())).await;
    served.map_err(AcpError::from)
}

/// The longest message read from the editor: room for a prompt with large files and
/// images attached (base64), while a runaway line (an editor gone wrong, `cat` of a
/// disk image) is not buffered whole.
const MAX_MESSAGE: usize = 64 << 20;

/// What stands for a message over [`MAX_MESSAGE`]: text the protocol cannot read, so it
/// is answered as one (`-32700`), and the connection goes on.
const TOO_LONG: &str = "a message over the size limit, dropped unread";

/// An outgoing line over this many bytes that is an error reply has its `data` cut.
const MAX_ERROR_REPLY: usize = 64 << 10;

/// The most of one text in an error reply's `data` that is sent back.
const MAX_ERROR_ECHO: usize = 1024;

/// `line` as sent, but when it is a long error reply: the protocol library echoes what
/// it could not read in the error's `data` (the whole line for `-32700`, the whole
/// params for `-32602`), which for a runaway message is megabytes sent back to the
/// editor, and its log. Each long text of `data` is cut to its first
/// [`MAX_ERROR_ECHO`] bytes, saying how long it was.
fn bounded_error_reply(line: String) -> String {
    let head = &line.as_bytes()[..line.len().min(256)];
    if line.len() <= MAX_ERROR_REPLY || head.windows(8).any(|w| w == b"\"method\"") {
        return line;
    }
    let Ok(mut reply) = serde_json::from_str::<serde_json::Value>(&line) else {
        return line;
    };
    let Some(data) = reply
        .get_mut("error")
        .and_then(|error| error.get_mut("data"))
    else {
        return line;
    };
    cut_texts(data);
    // Many short texts can be as long: then `data` is its own text, cut.
    let text = data.to_string();
    if text.len() > MAX_ERROR_REPLY {
        *data = serde_json::Value::String(text);
        cut_texts(data);
    }
    serde_json::to_string(&reply).unwrap_or(line)
}

/// Every string in `value` cut to [`MAX_ERROR_ECHO`] bytes (at a character boundary),
/// with a note of its length.
fn cut_texts(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) if text.len() > MAX_ERROR_ECHO => {
            let end = text.floor_char_boundary(MAX_ERROR_ECHO);
            *text = format!("{}... ({} bytes in all)", &text[..end], text.len());
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(cut_texts),
        serde_json::Value::Object(members) => members.values_mut().for_each(cut_texts),
        _ => {}
    }
}

/// How reading one line went.
#[derive(Debug, PartialEq)]
enum Read {
    /// A line (the last may have no line break).
    Line,
    /// A line over [`MAX_MESSAGE`], read to its end and dropped.
    TooLong,
    /// The end of the input.
    End,
}

/// Reads one line into `line`, at most [`MAX_MESSAGE`] bytes of it: a longer one is
/// read to its end without being kept.
async fn read_message(
    reader: &mut (impl futures_util::AsyncBufRead + Unpin),
    line: &mut Vec<u8>,
) -> std::io::Result<Read> {
    use futures_util::AsyncBufReadExt as _;
    let mut too_long = false;
    loop {
        let buffered = reader.fill_buf().await?;
        if buffered.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Read::TooLong,
                (false, true) => Read::End,
                (false, false) => Read::Line,
            });
        }
        let (taken, ended) = match buffered.iter().position(|byte| *byte == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffered.len(), false),
        };
        if !too_long {
            // The line break is not part of the message.
            if line.len() + taken > MAX_MESSAGE + usize::from(ended) {
                too_long = true;
                *line = Vec::new();
            } else {
                line.extend_from_slice(&buffered[..taken]);
            }
        }
        reader.consume_unpin(taken);
        if ended {
            return Ok(if too_long { Read::TooLong } else { Read::Line });
        }
    }
}

/// One line read from the editor, without its line break (`\n` or `\r\n`); bytes that
/// are not UTF-8 become U+FFFD.
fn line_text(mut line: Vec<u8>) -> String {
    if line.last() == Some(&b'\n') {
        line.pop();
        if line.last() == Some(&b'\r') {
            line.pop();
        }
    }
    match String::from_utf8(line) {
        Ok(text) => text,
        Err(error) => {
            tracing::warn!(
                "a message from the editor holds bytes that are not UTF-8; they are read as U+FFFD"
            );
            String::from_utf8_lossy(error.as_bytes()).into_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aptix_model::contract::AgentToolCall;

    #[test]
    fn a_long_error_reply_echoes_only_the_head_of_what_it_could_not_read() {
        let huge = format!("{{\"broken\": {}", "x".repeat(1 << 20));
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "Parse error", "data": {"line": huge}}});
        let sent = bounded_error_reply(reply.to_string());
        assert!(sent.len() < 2 * MAX_ERROR_ECHO, "{} bytes", sent.len());
        let sent: serde_json::Value = serde_json::from_str(&sent).unwrap();
        assert_eq!(sent["error"]["code"], -32700);
        let line = sent["error"]["data"]["line"].as_str().unwrap();
        assert!(line.starts_with("{\"broken\": xxx"), "{line}");
        assert!(
            line.ends_with(&format!("... ({} bytes in all)", huge.len())),
            "{line}"
        );
        // Many short texts: the data is cut whole.
        let many: Vec<String> = (0..100_000).map(|n| format!("item {n}")).collect();
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": 3,
            "error": {"code": -32602, "message": "Invalid params", "data": {"json": many}}});
        let sent = bounded_error_reply(reply.to_string());
        assert!(sent.len() < 2 * MAX_ERROR_ECHO, "{} bytes", sent.len());
        // What is short, or not an error, goes as it is.
        let short = serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "m", "data": "d"}}).to_string();
        assert_eq!(bounded_error_reply(short.clone()), short);
        let update = serde_json::json!({"jsonrpc": "2.0", "method": "session/update",
            "params": {"error": {"data": "y".repeat(1 << 17)}}})
        .to_string();
        assert_eq!(bounded_error_reply(update.clone()), update);
    }

    async fn reads_of(input: Vec<u8>) -> Vec<(Read, Vec<u8>)> {
        let mut reader = futures_util::io::BufReader::new(&input[..]);
        let mut reads = Vec::new();
        loop {
            let mut line = Vec::new();
            let read = read_message(&mut reader, &mut line).await.unwrap();
            if read == Read::End {
                return reads;
            }
            reads.push((read, line));
        }
    }

    #[tokio::test]
    async fn lines_are_read_whole_up_to_the_limit_and_a_longer_one_is_dropped_unkept() {
        let mut input = b"{\"a\":1}\n\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', MAX_MESSAGE + 1));
        input.extend(b"\n{\"b\":2}");
        let reads = reads_of(input).await;
        assert_eq!(reads.len(), 4);
        assert_eq!(reads[0], (Read::Line, b"{\"a\":1}\n".to_vec()));
        assert_eq!(reads[1], (Read::Line, b"\n".to_vec()));
        assert_eq!(reads[2], (Read::TooLong, Vec::new()));
        assert_eq!(reads[3], (Read::Line, b"{\"b\":2}".to_vec()));
        // Exactly at the limit, with its line break, is a line; one byte more is not.
        let mut input = vec![b'y'; MAX_MESSAGE];
        input.push(b'\n');
        assert_eq!(reads_of(input).await[0].0, Read::Line);
        let mut input = vec![b'y'; MAX_MESSAGE + 1];
        input.push(b'\n');
        assert_eq!(reads_of(input).await[0].0, Read::TooLong);
    }

    #[test]
    fn stop_reasons_come_from_the_envelope() {
        let mut envelope = AgentExecuteResponse::new(Kind::Ok);
        envelope.text = Some("done".into());
        envelope.finish_reason = Some(FinishReason::Stop);
        assert_eq!(stop_reason(&envelope), StopReason::EndTurn);
        envelope.finish_reason = Some(FinishReason::Length);
        assert_eq!(stop_reason(&envelope), StopReason::MaxTokens);
        envelope.finish_reason = Some(FinishReason::ContentFilter);
        assert_eq!(stop_reason(&envelope), StopReason::Refusal);
        envelope.finish_reason = Some(FinishReason::ToolUse);
        assert_eq!(stop_reason(&envelope), StopReason::MaxTurnRequests);
        envelope.tool_calls.push(AgentToolCall {
            call_id: "c".into(),
            name: "n".into(),
            arguments_json: "{}".into(),
        });
        assert_eq!(stop_reason(&envelope), StopReason::EndTurn);
        let mut refused = AgentExecuteResponse::new(Kind::Ok);
        refused.refusal = Some("no".into());
        refused.finish_reason = Some(FinishReason::Stop);
        assert_eq!(stop_reason(&refused), StopReason::Refusal);
    }
}

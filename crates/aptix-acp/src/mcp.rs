//! The editor's MCP servers (`mcpServers` of `session/new` and `session/load`): every
//! stdio server is started for the session (ACP asks every agent to support stdio), and
//! every streamable HTTP one connected to with the editor's headers; its tools are
//! listed, and each offered to the model as a server tool named `mcp__<server>__<tool>`.
//! The servers stop when the session is loaded again, when it has no provider, and when
//! the editor closes the agent (stdin closed, then killed; an HTTP one's MCP session is
//! ended).
//!
//! A server that cannot be started, or does not answer within [`STARTUP`], leaves the
//! session without its tools, never without the session: the reason is logged, and told
//! to the editor with the session's first prompt. HTTP and SSE servers are not offered
//! by the editor (the agent does not advertise them) and are skipped with a notice if
//! they are.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    McpServer, McpServerHttp, McpServerStdio, PermissionOption, PermissionOptionKind,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use aptix_orchestrator::ServerTool;
use async_trait::async_trait;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ContentBlock, Implementation,
    ResourceContents, Tool,
};
use rmcp::service::{RunningService, ServiceExt as _};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;

use crate::tools::lock;

/// How long a server has to start, answer `initialize` and list its tools, by default
/// (see [`AcpAgent::mcp_startup_timeout`](crate::AcpAgent::mcp_startup_timeout)): a
/// first `npx -y` or `uvx` run downloads the server before it answers.
pub(crate) const STARTUP: Duration = Duration::from_secs(60);

/// The longest one tool call may take by default (see
/// [`AcpAgent::mcp_tool_timeout`](crate::AcpAgent::mcp_tool_timeout)): long enough for
/// a build or a test run a tool starts.
pub(crate) const CALL: Duration = Duration::from_secs(5 * 60);

/// The most characters of a tool name the model may call (`^[a-zA-Z0-9_-]{1,64}$`).
const MAX_NAME: usize = 64;

/// How long stopping the servers may take: rmcp lets a server's last messages drain,
/// closes its stdin, waits for it to exit, then kills it.
const STOPPING: Duration = Duration::from_secs(10);

/// The variables of this process a server inherits, as the official MCP SDKs choose
/// them: what finds programs and the user's folders, nothing that may be a secret (the
/// provider's key, Aptix's settings, another tool's token). An editor that means a
/// server to have more names it in the server's `env`, applied after.
fn inherited(name: &str) -> bool {
    const ALLOWED: &[&str] = &[
        "HOME",
        "LOGNAME",
        "PATH",
        "SHELL",
        "TERM",
        "USER",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TMPDIR",
        "TZ",
        "XDG_CACHE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_RUNTIME_DIR",
        // Windows, where names are compared without case.
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PROCESSOR_ARCHITECTURE",
        "PROGRAMFILES",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
    ];
    ALLOWED.iter().any(|allowed| {
        if cfg!(windows) {
            allowed.eq_ignore_ascii_case(name)
        } else {
            *allowed == name
        }
    })
}

type Service = RunningService<RoleClient, ClientConfig>;

/// A session's running MCP servers, their only owner (its tools hold them weakly);
/// dropping it kills them, [`stop`](Self::stop) lets them exit first.
#[derive(Default)]
pub(crate) struct McpServers {
    running: Vec<Running>,
}

/// One running server, and the process group it leads.
struct Running {
    /// `None` once [`McpServers::stop`] has taken it.
    service: Option<Arc<Service>>,
    /// The group's id (the server's pid); what is left of the group is killed when this
    /// is dropped: a server started through `sh -c`, `npx` or `uvx` leaves children a
    /// kill of the server alone would not reach.
    group: Option<u32>,
}

impl Drop for Running {
    fn drop(&mut self) {
        kill_group(self.group);
    }
}

/// Kills what is left of the process group `group` leads (nothing if it is gone).
fn kill_group(group: Option<u32>) {
    #[cfg(unix)]
    if let Some(group) = group.and_then(|pid| i32::try_from(pid).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(group),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    #[cfg(not(unix))]
    let _ = group;
}

impl McpServers {
    /// Stops every server at once: closes its stdin, waits for it to exit (it is killed
    /// if it does not), then kills what is left of its process group, all within
    /// [`STOPPING`].
    pub(crate) async fn stop(self) {
        let stopping = self.running.into_iter().map(|mut running| async move {
            // A call running now holds the server: the group is killed under it.
            if let Some(mut service) = running.service.take().and_then(Arc::into_inner) {
                let _ = service.close_with_timeout(STOPPING).await;
            }
            drop(running);
        });
        futures_util::future::join_all(stopping).await;
    }
}

/// What starting the editor's servers gave.
#[derive(Default)]
pub(crate) struct Connected {
    /// The tools of every server that started, named for the model.
    pub(crate) tools: Vec<Arc<dyn ServerTool>>,
    /// The servers, to keep for as long as the session.
    pub(crate) servers: McpServers,
    /// Why a server offers no tools, one sentence each, for the editor.
    pub(crate) notices: Vec<String>,
}

/// Asks the editor before an MCP tool that may change things runs
/// (`session/request_permission`: allow once or always, reject once or always), and
/// keeps the "always" answers for the rest of the session. A tool its server marks as
/// read-only (`readOnlyHint`) runs without asking, as Aptix's own tools do.
pub(crate) struct Permission {
    connection: ConnectionTo<Client>,
    session_id: String,
    /// The call the turn runs now: told by the turn's `ToolRunning` delta, which comes
    /// just before its tool runs (a turn runs its server tools one at a time).
    running: Mutex<Option<String>>,
    /// Tools allowed (`true`) or refused for the rest of the session.
    always: Mutex<HashMap<String, bool>>,
}

impl Permission {
    pub(crate) fn new(connection: ConnectionTo<Client>, session_id: String) -> Permission {
        Permission {
            connection,
            session_id,
            running: Mutex::new(None),
            always: Mutex::new(HashMap::new()),
        }
    }

    /// Keeps the "always" answers of `earlier` (the same session, open before it was
    /// loaded again).
    pub(crate) fn inherit(&self, earlier: &Permission) {
        let always = lock(&earlier.always).clone();
        lock(&self.always).extend(always);
    }

    /// The turn is about to run the call `call_id`.
    pub(crate) fn running(&self, call_id: &str) {
        *lock(&self.running) = Some(call_id.to_owned());
    }

    /// The call the turn runs now goes ahead (allowed, or one that needs no asking): the
    /// editor shows it `in_progress` from here, not while the user is still asked. (The
    /// turn's report leaves an MCP tool's call `pending` until then; see
    /// [`is_mcp_tool`].)
    fn goes_ahead(&self) {
        let Some(call_id) = lock(&self.running).clone() else {
            return;
        };
        let update = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id,
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        ));
        if let Err(error) = self
            .connection
            .send_notification(SessionNotification::new(self.session_id.clone(), update))
        {
            tracing::warn!(session = %self.session_id, %error, "could not send a session update");
        }
    }

    /// Whether the user lets the model run `tool` now; the reason the model is told if
    /// not.
    async fn ask(&self, tool: &str, arguments: &Value) -> Result<(), String> {
        let refused = || {
            format!(
                "the user did not allow this call of {tool}; do not call it again unless they ask"
            )
        };
        match lock(&self.always).get(tool) {
            Some(true) => return Ok(()),
            Some(false) => return Err(refused()),
            None => {}
        }
        let Some(call_id) = lock(&self.running).clone() else {
            return Err(format!(
                "{tool} was not run: the editor could not be asked first"
            ));
        };
        let options = vec![
            PermissionOption::new("allow_once", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new(
                "allow_always",
                format!("Always allow {tool} in this session"),
                PermissionOptionKind::AllowAlways,
            ),
            PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
            PermissionOption::new(
                "reject_always",
                format!("Never allow {tool} in this session"),
                PermissionOptionKind::RejectAlways,
            ),
        ];
        let request = RequestPermissionRequest::new(
            self.session_id.clone(),
            // The call as the editor's card shows it: a client that draws the question
            // from the request alone (not from the card) shows what is asked.
            ToolCallUpdate::new(
                call_id,
                ToolCallUpdateFields::new()
                    .title(crate::present::title(tool, arguments))
                    .kind(crate::present::kind(tool))
                    .raw_input(arguments.clone()),
            ),
            options,
        );
        let answer = self
            .connection
            .send_request(request)
            .block_task()
            .await
            .map_err(|error| {
                format!("{tool} was not run: the editor could not ask the user ({error})")
            })?;
        let chosen = match answer.outcome {
            RequestPermissionOutcome::Selected(selected) => selected.option_id.0,
            RequestPermissionOutcome::Cancelled => {
                return Err(format!(
                    "{tool} was not run: the editor withdrew the question before the user answered"
                ));
            }
            _ => return Err(refused()),
        };
        match &*chosen {
            "allow_once" => Ok(()),
            "allow_always" => {
                lock(&self.always).insert(tool.to_owned(), true);
                Ok(())
            }
            "reject_always" => {
                lock(&self.always).insert(tool.to_owned(), false);
                Err(refused())
            }
            "reject_once" => Err(refused()),
            // Not one of the options offered: an editor's bug, taken as the safe answer.
            other => {
                tracing::warn!(
                    option = other,
                    "the editor answered a permission request with an option it was not offered; the tool is not run"
                );
                Err(refused())
            }
        }
    }
}

/// How long the editor's MCP servers may take to start, and each tool call to answer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) startup: Duration,
    pub(crate) call: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            startup: STARTUP,
            call: CALL,
        }
    }
}

/// Starts `servers` for a session working in `cwd`, all at once, each within
/// `timeouts.startup`; their tools that may change things ask `permission` first.
pub(crate) async fn connect(
    servers: &[McpServer],
    cwd: &Path,
    permission: &Arc<Permission>,
    timeouts: Timeouts,
) -> Connected {
    let mut connected = Connected::default();
    let mut endpoints: Vec<Endpoint<'_>> = Vec::new();
    for server in servers {
        let endpoint = match server {
            McpServer::Stdio(stdio) => Endpoint::Stdio(stdio),
            McpServer::Http(http) => Endpoint::Http(http),
            McpServer::Sse(sse) => {
                connected.notices.push(format!(
                    "the MCP server `{}` is served over SSE, which Aptix does not connect to (streamable HTTP and stdio it does); its tools are not available",
                    sse.name
                ));
                continue;
            }
            _ => {
                connected.notices.push(
                    "an MCP server of a transport Aptix does not know was skipped".to_owned(),
                );
                continue;
            }
        };
        if endpoint.name().trim().is_empty() {
            connected.notices.push(format!(
                "an MCP server ({}) has no name, which its tools' names need; it was not started",
                endpoint.place()
            ));
            continue;
        }
        if endpoints
            .iter()
            .any(|other| other.name() == endpoint.name())
        {
            connected.notices.push(format!(
                "two MCP servers are named `{}`: the tools of the second are numbered (mcp__{}__<tool>_2)",
                endpoint.name(),
                endpoint.name()
            ));
        }
        endpoints.push(endpoint);
    }
    let mut taken: HashSet<String> = HashSet::new();
    let starting = endpoints.iter().map(|endpoint| match endpoint {
        Endpoint::Stdio(stdio) => {
            futures_util::future::Either::Left(start(stdio, cwd, timeouts.startup))
        }
        Endpoint::Http(http) => {
            futures_util::future::Either::Right(connect_http(http, timeouts.startup))
        }
    });
    for (endpoint, started) in endpoints
        .iter()
        .zip(futures_util::future::join_all(starting).await)
    {
        let server = endpoint.name();
        match started {
            Ok((service, group, tools)) => {
                let service = Arc::new(service);
                tracing::info!(server = %server, tools = tools.len(), "MCP server started");
                for tool in tools {
                    let name = model_name(server, &tool.name, &mut taken);
                    connected.tools.push(Arc::new(McpTool::new(
                        name,
                        server,
                        tool,
                        Arc::downgrade(&service),
                        Arc::clone(permission),
                        timeouts.call,
                    )));
                }
                connected.servers.running.push(Running {
                    service: Some(service),
                    group,
                });
            }
            Err(reason) => {
                // The reason may quote the url whole (the HTTP client's "error sending
                // request for url (...)"): shown as `place` shows it.
                let notice = format!(
                    "the MCP server `{server}` ({}) could not be started: {}; its tools are not available",
                    endpoint.place(),
                    with_urls_shown(&reason)
                );
                tracing::warn!("{notice}");
                connected.notices.push(notice);
            }
        }
    }
    connected
}

/// Starts one stdio server: spawned in `cwd` with its arguments and environment,
/// initialized, and its tools listed, within `startup`.
async fn start(
    server: &McpServerStdio,
    cwd: &Path,
    startup: Duration,
) -> Result<(Service, Option<u32>, Vec<Tool>), String> {
    let mut command = tokio::process::Command::new(&server.command);
    command.args(&server.args).current_dir(cwd).env_clear();
    for (name, value) in std::env::vars_os() {
        if name.to_str().is_some_and(inherited) {
            command.env(name, value);
        }
    }
    for variable in &server.env {
        command.env(&variable.name, &variable.value);
    }
    // The server's stdout is the MCP connection; its stderr goes to the agent's log,
    // line by line, in the log's own format (never to the agent's stdout, which carries
    // only ACP).
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut command = process_wrap::tokio::CommandWrap::from(command);
    #[cfg(unix)]
    command.wrap(process_wrap::tokio::ProcessGroup::leader());
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|error| error.to_string())?;
    let group = transport.id();
    // Until the server is handed over, its group is killed however this ends: a timeout,
    // a failed handshake, or this future dropped (the agent stopping mid-handshake,
    // where the transport's own kill on drop may never get to run).
    let mut starting = Starting(group);
    if let Some(stderr) = stderr {
        tokio::spawn(log_stderr(server.name.clone(), stderr));
    }
    // rmcp says a server that exited at once as a transport failure to send ("Broken
    // pipe") or a closed connection: say what happened.
    let closed = "it exited (or closed its output) before the MCP handshake; what it wrote on stderr is in the agent's log (aptix acp -v)";
    let (service, tools) = handshake(transport, startup, closed).await?;
    starting.0 = None;
    Ok((service, group, tools))
}

/// Connects to one server over streamable HTTP, with the headers the editor gave
/// (an `Authorization` header among them is sent as given and never logged), and
/// lists its tools, within `startup`.
async fn connect_http(
    server: &McpServerHttp,
    startup: Duration,
) -> Result<(Service, Option<u32>, Vec<Tool>), String> {
    let lower = server.url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(format!(
            "its url {:?} is not an http or https url",
            shown_url(&server.url)
        ));
    }
    let mut headers = HashMap::new();
    for header in &server.headers {
        let name = http::HeaderName::from_bytes(header.name.as_bytes()).map_err(|_| {
            format!(
                "its header name {:?} is not a valid HTTP header name",
                header.name
            )
        })?;
        let mut value = http::HeaderValue::from_str(&header.value).map_err(|_| {
            format!(
                "the value of its header {:?} is not a valid HTTP header value",
                header.name
            )
        })?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let config =
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).custom_headers(headers);
    let transport = StreamableHttpClientTransport::from_config(config);
    let closed = "it closed the connection before the MCP handshake";
    let (service, tools) = handshake(transport, startup, closed).await?;
    Ok((service, None, tools))
}

/// The MCP handshake over `transport`, then the server's tools, within `startup`;
/// `closed` says what a connection closed at once means.
async fn handshake<T, E, A>(
    transport: T,
    startup: Duration,
    closed: &str,
) -> Result<(Service, Vec<Tool>), String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("aptix", env!("CARGO_PKG_VERSION")),
    );
    let started = async {
        let service = client.serve(transport).await.map_err(|error| {
            let said = error.to_string();
            if said.contains("Broken pipe")
                || said.contains("closed")
                || said.contains("TransportClosed")
            {
                closed.to_owned()
            } else {
                // rmcp names its transport's type first ("Send message error Transport
                // [rmcp::transport::worker::WorkerTransport<...>] error: ..."): what
                // follows is what the server did.
                let said = said
                    .split_once("] error: ")
                    .map_or(said.as_str(), |(_, what)| what);
                format!("it did not complete the MCP handshake: {said}")
            }
        })?;
        // A server of resources or prompts only has no tools to list.
        let has_tools = service
            .peer_info()
            .is_some_and(|info| info.capabilities.tools.is_some());
        if !has_tools {
            return Ok((service, Vec::new()));
        }
        let tools = service
            .list_all_tools()
            .await
            .map_err(|error| format!("it did not list its tools: {error}"))?;
        Ok::<_, String>((service, tools))
    };
    tokio::time::timeout(startup, started)
        .await
        .map_err(|_| {
            format!(
                "it did not start within {} (--mcp-startup-timeout)",
                humantime::format_duration(startup)
            )
        })
        .and_then(|started| started)
}

/// An MCP server the editor offers, by the transport Aptix connects to it over.
enum Endpoint<'a> {
    Stdio(&'a McpServerStdio),
    Http(&'a McpServerHttp),
}

impl Endpoint<'_> {
    fn name(&self) -> &str {
        match self {
            Endpoint::Stdio(stdio) => &stdio.name,
            Endpoint::Http(http) => &http.name,
        }
    }

    /// Where it runs, for a notice: its command, or its url without what may carry a
    /// secret (a `user:password@`, the query).
    fn place(&self) -> String {
        match self {
            Endpoint::Stdio(stdio) => stdio.command.display().to_string(),
            Endpoint::Http(http) => shown_url(&http.url),
        }
    }
}

/// `url` without its user information, query and fragment.
fn shown_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(host_end);
            let host = authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// `text` with every `http://` or `https://` url in it as [`shown_url`] shows it.
fn with_urls_shown(text: &str) -> String {
    // ASCII lowercasing keeps every byte offset.
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut search = 0;
    while let Some(found) = lower[search..].find("http") {
        let start = search + found;
        if !(lower[start..].starts_with("http://") || lower[start..].starts_with("https://")) {
            search = start + "http".len();
            continue;
        }
        let word_end = text[start..]
            .find(char::is_whitespace)
            .map_or(text.len(), |end| start + end);
        let end = text[start..word_end]
            .find([')', '"', '\'', '>', ']'])
            .map_or(word_end, |end| start + end);
        out.push_str(&text[copied..start]);
        out.push_str(&shown_url(&text[start..end]));
        // A query or fragment may hold a `)` or a quote of its own: what follows the url's
        // end up to the word's end is dropped with it when the url had one, and only
        // the word's closing punctuation is kept.
        let cut = text[start..end].contains(['?', '#']);
        let rest_of_word = &text[end..word_end];
        copied = if cut {
            let closing = rest_of_word.len()
                - rest_of_word
                    .trim_end_matches([')', '"', '\'', '>', ']', ':', ',', ';', '.'])
                    .len();
            out.push_str(&rest_of_word[rest_of_word.len() - closing..]);
            word_end
        } else {
            end
        };
        search = copied;
    }
    out.push_str(&text[copied..]);
    out
}

/// The process group of a server being started: killed when dropped, unless handed
/// over (set to `None`).
struct Starting(Option<u32>);

impl Drop for Starting {
    fn drop(&mut self) {
        kill_group(self.0.take());
    }
}

/// The most of one line of a server's stderr that is logged.
const MAX_LOG_LINE: usize = 4096;

/// Logs each line a server writes on its stderr (`info`, with the server's name) until
/// it closes it; of a line longer than [`MAX_LOG_LINE`] bytes, the first are logged and
/// the length of the rest.
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    let limit = u64::try_from(MAX_LOG_LINE).unwrap_or(u64::MAX);
    loop {
        line.clear();
        match (&mut reader).take(limit).read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        // The rest of a long line is read and counted, not kept.
        let mut skipped = 0_usize;
        while !line.ends_with(b"\n") {
            let chunk = match reader.fill_buf().await {
                Ok([]) | Err(_) => break,
                Ok(chunk) => chunk,
            };
            let (used, ends) = match chunk.iter().position(|byte| *byte == b'\n') {
                Some(at) => (at + 1, true),
                None => (chunk.len(), false),
            };
            reader.consume(used);
            skipped += used;
            if ends {
                break;
            }
        }
        let text = String::from_utf8_lossy(&line);
        if skipped == 0 {
            tracing::info!(mcp_server = %server, "{}", text.trim_end());
        } else {
            tracing::info!(mcp_server = %server, "{} [… {skipped} more bytes of this line]", text.trim_end());
        }
    }
}

/// The name the model calls `tool` of `server` by: `mcp__<server>__<tool>`, each
/// character outside `[a-zA-Z0-9_-]` as `_`, cut to 64 characters, and a number added
/// when the name is taken (two servers of one name, or names that differ only in what
/// was replaced).
/// Whether the model's tool `name` is an MCP server's (`mcp__<server>__<tool>`, as
/// [`model_name`] makes them).
pub(crate) fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(MCP_PREFIX)
}

/// What every MCP tool's name starts with.
const MCP_PREFIX: &str = "mcp__";

pub(crate) fn model_name(server: &str, tool: &str, taken: &mut HashSet<String>) -> String {
    let clean = |text: &str| -> String {
        text.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    // Cut to fit, the server's part first (the tool's tells the model what it calls),
    // down to 8 characters, then the tool's.
    let (mut server, mut tool) = (clean(server), clean(tool));
    let fixed = "mcp____".len();
    if fixed + server.len() + tool.len() > MAX_NAME {
        server.truncate(
            server
                .len()
                .min(8)
                .max(MAX_NAME.saturating_sub(fixed + tool.len())),
        );
        tool.truncate(MAX_NAME - fixed - server.len());
    }
    let base = format!("{MCP_PREFIX}{server}__{tool}");
    let mut name = base.clone();
    let mut number = 2;
    while taken.contains(&name) {
        let suffix = format!("_{number}");
        name = format!(
            "{}{suffix}",
            &base[..base.len().min(MAX_NAME - suffix.len())]
        );
        number += 1;
    }
    taken.insert(name.clone());
    name
}

/// One tool of an MCP server, as a server tool of the session's turns.
struct McpTool {
    /// What the model calls it.
    name: String,
    /// What the server calls it.
    tool: String,
    server: String,
    description: String,
    parameters: Value,
    /// The server marks it read-only: it runs without asking.
    read_only: bool,
    permission: Arc<Permission>,
    service: Weak<Service>,
    /// The longest a call may take: a server that has not answered by then is sent
    /// `notifications/cancelled` (rmcp sends it as the call is dropped) and the model is
    /// told the call failed, so that a hung server does not hold the turn until the user
    /// cancels it.
    call_timeout: Duration,
}

impl McpTool {
    fn new(
        name: String,
        server: &str,
        tool: Tool,
        service: Weak<Service>,
        permission: Arc<Permission>,
        call_timeout: Duration,
    ) -> McpTool {
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.read_only_hint)
            == Some(true);

        let what = said(tool.description.as_deref())
            .or_else(|| said(tool.title.as_deref()))
            .or_else(|| said(tool.annotations.as_ref().and_then(|a| a.title.as_deref())))
            .map_or_else(String::new, |text| format!("{text} "));
        let parameters = function_parameters((*tool.input_schema).clone());
        McpTool {
            name,
            description: format!(
                "{what}(the tool `{}` of the MCP server `{server}`)",
                tool.name
            ),
            tool: tool.name.into_owned(),
            server: server.to_owned(),
            parameters,
            read_only,
            permission,
            service,
            call_timeout,
        }
    }
}

#[async_trait]
impl ServerTool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn execute(&self, arguments_json: &str) -> Result<String, String> {
        let arguments = match arguments_json.trim() {
            // A model calling a tool without parameters may send nothing at all.
            "" => serde_json::Map::new(),
            text => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(arguments)) => arguments,
                Ok(_) => return Err("the arguments must be a JSON object".to_owned()),
                Err(error) => return Err(format!("the arguments are not valid JSON: {error}")),
            },
        };
        let Some(service) = self
            .service
            .upgrade()
            .filter(|service| !service.is_transport_closed())
        else {
            return Err(format!(
                "the MCP server `{}` has stopped (it exited or closed its pipes); its tools cannot run until the session is opened again",
                self.server
            ));
        };
        // Asked once the server is known to be there: a dead server's tool is not put
        // to the user.
        if !self.read_only {
            self.permission
                .ask(&self.name, &Value::Object(arguments.clone()))
                .await?;
        }
        self.permission.goes_ahead();
        let call = service
            .call_tool(CallToolRequestParams::new(self.tool.clone()).with_arguments(arguments));
        let result = tokio::time::timeout(self.call_timeout, call)
            .await
            .map_err(|_| {
                format!(
                    "the MCP server `{}` did not answer within {}; the call was cancelled",
                    self.server,
                    aptix_client::human_duration(self.call_timeout)
                )
            })?
            .map_err(|error| format!("the MCP server `{}` failed: {error}", self.server))?;
        // Cut to the orchestrator's bound for every tool's result, as it runs it.
        let text = result_text(&result.content, result.structured_content.as_ref());
        if result.is_error == Some(true) {
            Err(if text.is_empty() {
                format!("the tool `{}` failed and said nothing more", self.tool)
            } else {
                text
            })
        } else {
            Ok(text)
        }
    }
}

/// A server's input schema as a function's parameters, which the Responses API checks
/// more strictly than MCP does: an object schema at the top (with `properties`, empty if
/// need be), and every array schema with `items` (a missing one fails the whole request,
/// every tool's).
fn function_parameters(mut schema: serde_json::Map<String, Value>) -> Value {
    fn arrays_with_items(value: &mut Value) {
        match value {
            Value::Object(node) => {
                let is_array = match node.get("type") {
                    Some(Value::String(kind)) => kind == "array",
                    Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "array"),
                    _ => false,
                };
                if is_array && !node.contains_key("items") {
                    node.insert("items".to_owned(), Value::Object(serde_json::Map::new()));
                }
                node.values_mut().for_each(arrays_with_items);
            }
            Value::Array(values) => values.iter_mut().for_each(arrays_with_items),
            _ => {}
        }
    }
    schema.insert("type".to_owned(), Value::String("object".to_owned()));
    schema
        .entry("properties")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let mut schema = Value::Object(schema);
    arrays_with_items(&mut schema);
    schema
}

/// `text` trimmed, unless it says nothing.
fn said(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|text| !text.is_empty())
}

/// A tool result as the text the model reads: text as it is, other content named.
fn result_text(content: &[ContentBlock], structured: Option<&Value>) -> String {
    if content.is_empty() {
        return structured.map(Value::to_string).unwrap_or_default();
    }
    let parts: Vec<String> = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text(text) => text.text.clone(),
            ContentBlock::Image(image) => format!(
                "[an image ({}, {} bytes), not shown]",
                image.mime_type,
                base64_len(&image.data)
            ),
            ContentBlock::Audio(audio) => format!(
                "[audio ({}, {} bytes), not played]",
                audio.mime_type,
                base64_len(&audio.data)
            ),
            ContentBlock::Resource(embedded) => match &embedded.resource {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[{uri}]\n{text}")
                }
                ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    format!(
                        "[{uri}: {} bytes of binary data, not shown]",
                        base64_len(blob)
                    )
                }
                _ => "[a resource of a kind Aptix does not know, not shown]".to_owned(),
            },
            ContentBlock::ResourceLink(link) => format!("[{}: {}]", link.name, link.uri),
            _ => "[content of a kind Aptix does not know, not shown]".to_owned(),
        })
        .collect();
    parts.join("\n")
}

/// The bytes that base64 `data` holds.
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|byte| *byte == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_what_may_carry_a_secret() {
        for (url, shown) in [
            (
                "https://u:p@mcp.example.com/mcp?key=k#x",
                "https://mcp.example.com/mcp",
            ),
            ("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/mcp"),
            ("http://tok@host", "http://host"),
            ("http://host/a@b", "http://host/a@b"),
            ("not a url?x", "not a url"),
        ] {
            assert_eq!(shown_url(url), shown, "{url}");
        }
    }

    #[test]
    fn urls_quoted_in_a_reason_are_shown_without_their_secrets() {
        let reason = "error sending request for url (HTTP://127.0.0.1:9/mcp?token=urltok-SECRET): \
                      connection refused; see https://u:pw@docs.example/x#frag and http";
        let shown = with_urls_shown(reason);
        assert_eq!(
            shown,
            "error sending request for url (HTTP://127.0.0.1:9/mcp): connection refused; \
             see https://docs.example/x and http"
        );
        assert_eq!(with_urls_shown("no url, ünïcode"), "no url, ünïcode");
        // A `)` inside the query does not end the url: the rest of the token goes too.
        assert_eq!(
            with_urls_shown("for url (http://h/mcp?token=a)b): refused"),
            "for url (http://h/mcp): refused"
        );
    }

    #[tokio::test]
    async fn an_http_server_the_editor_describes_badly_is_refused_saying_why() {
        use agent_client_protocol::v1::schema::HttpHeader;
        let second = Duration::from_secs(5);
        let refused = |server: McpServerHttp| async move {
            match connect_http(&server, second).await {
                Ok(_) => panic!("{server:?} was connected"),
                Err(reason) => reason,
            }
        };
        let reason = refused(McpServerHttp::new("x", "ftp://127.0.0.1/mcp")).await;
        assert!(reason.contains("not an http or https url"), "{reason}");
        // A misspelt scheme: the url is named without the password or token it holds.
        let reason = refused(McpServerHttp::new(
            "x",
            "htps://u:hunter2@mcp.example/mcp?token=t0ken",
        ))
        .await;
        assert!(
            reason.contains("\"htps://mcp.example/mcp\" is not an http or https url"),
            "{reason}"
        );
        let reason = refused(
            McpServerHttp::new("x", "http://127.0.0.1:9/mcp")
                .headers(vec![HttpHeader::new("bad name", "v")]),
        )
        .await;
        assert!(
            reason.contains("\"bad name\" is not a valid HTTP header name"),
            "{reason}"
        );
        let reason = refused(
            McpServerHttp::new("x", "http://127.0.0.1:9/mcp")
                .headers(vec![HttpHeader::new("Authorization", "Bearer a\nb")]),
        )
        .await;
        assert!(
            reason.contains("header \"Authorization\" is not a valid HTTP header value")
                && !reason.contains("Bearer"),
            "{reason}"
        );
        // Nothing listens on the discard port: said without rmcp's type names.
        let reason = refused(McpServerHttp::new("x", "http://127.0.0.1:9/mcp")).await;
        assert!(
            reason.starts_with("it did not complete the MCP handshake: ")
                && !reason.contains("rmcp::"),
            "{reason}"
        );
    }

    #[test]
    fn model_names_are_valid_tool_names_and_unique() {
        let mut taken = HashSet::new();
        assert_eq!(model_name("fs", "read", &mut taken), "mcp__fs__read");
        assert_eq!(
            model_name("my server", "do.it/now", &mut taken),
            "mcp__my_server__do_it_now"
        );
        // Another spelling that cleans to a taken name gets a number.
        assert_eq!(
            model_name("my-server", "x", &mut taken),
            "mcp__my-server__x"
        );
        assert_eq!(
            model_name("my.server", "do it now", &mut taken),
            "mcp__my_server__do_it_now_2"
        );
        assert_eq!(
            model_name("my:server", "do it now", &mut taken),
            "mcp__my_server__do_it_now_3"
        );
        let long = "t".repeat(100);
        let first = model_name("s", &long, &mut taken);
        let second = model_name("s", &long, &mut taken);
        assert_eq!(first.len(), 64);
        assert_eq!(second.len(), 64);
        assert_ne!(first, second);
        assert!(second.ends_with("_2"), "{second}");
        // A long server name is cut before the tool's.
        let name = model_name(&"s".repeat(100), "lookup", &mut taken);
        assert_eq!(name.len(), 64);
        assert!(name.ends_with("s__lookup"), "{name}");
        // Non-ASCII letters are replaced one character each.
        let name = model_name("ü", "日本", &mut taken);
        assert_eq!(name, "mcp_______");
        for name in &taken {
            assert!(aptix_request::is_valid_name(name), "{name}");
        }
    }

    #[test]
    fn results_are_text_for_the_model_and_capped() {
        let content = vec![
            ContentBlock::text("line one"),
            ContentBlock::image("aGVsbG8=", "image/png"),
        ];
        assert_eq!(
            result_text(&content, None),
            "line one\n[an image (image/png, 5 bytes), not shown]"
        );
        let structured = serde_json::json!({"sum": 5});
        assert_eq!(result_text(&[], Some(&structured)), r#"{"sum":5}"#);
        assert_eq!(result_text(&[], None), "");
    }

    #[test]
    fn servers_inherit_no_secret() {
        for name in [
            "OPENAI_API_KEY",
            "APTIX_SERVE_TOKENS",
            "APTIX_STORE",
            "PGPASSWORD",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            assert!(!inherited(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG"] {
            assert!(inherited(name), "{name}");
        }
    }

    #[test]
    fn input_schemas_become_parameters_the_api_accepts() {
        let schema = serde_json::json!({
            "properties": {
                "tags": {"type": "array"},
                "either": {"type": ["array", "null"], "items": {"type": "string"}},
                "nested": {"type": "object", "properties": {"ids": {"type": "array"}}},
                "any": {"anyOf": [{"type": "array"}, {"type": "string"}]}
            }
        });
        let Value::Object(schema) = schema else {
            unreachable!()
        };
        let parameters = function_parameters(schema);
        assert_eq!(parameters["type"], "object");
        assert_eq!(
            parameters["properties"]["tags"]["items"],
            serde_json::json!({})
        );
        assert_eq!(
            parameters["properties"]["either"]["items"]["type"],
            "string"
        );
        assert_eq!(
            parameters["properties"]["nested"]["properties"]["ids"]["items"],
            serde_json::json!({})
        );
        assert_eq!(
            parameters["properties"]["any"]["anyOf"][0]["items"],
            serde_json::json!({})
        );
        let empty = function_parameters(serde_json::Map::new());
        assert_eq!(
            empty,
            serde_json::json!({"type": "object", "properties": {}})
        );
    }
}

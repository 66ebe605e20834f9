//! The router and its handlers: HTTP in, orchestrator calls, HTTP out.

use std::convert::Infallible;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use aptix_mapping::StreamDelta;
use aptix_model::contract::{
    AgentExecuteRequest, AgentExecuteResponse, FinishReason, Kind, LlmUsage, ValidatedRequest,
    Violation, ViolationCode,
};
use aptix_orchestrator::{Orchestrator, OrchestratorError};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::PathRejection;
use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tracing::Instrument as _;
use utoipa::ToSchema;

use crate::config::ServerConfig;
use crate::error::{ApiError, ErrorBody, ErrorCode, ServerError};
use crate::metrics::{self, Metrics, RetryKind};

const REQUEST_ID: &str = "x-request-id";

/// What every handler reads, behind one `Arc`: axum clones the state for each layer
/// and handler a request passes, and one count to change per clone is cheaper than
/// three, each a cache line the two cores pass back and forth.
#[derive(Clone)]
pub(crate) struct AppState(Arc<Shared>);

pub(crate) struct Shared {
    orchestrator: Arc<Orchestrator>,
    config: ServerConfig,
    turns: Arc<Semaphore>,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The request id of the request being handled (taken from `x-request-id` or made).
#[derive(Debug, Clone)]
struct RequestId(String);

/// The service's routes over `orchestrator`. Sessions are read from the orchestrator's
/// own store, so a session started by `aptix ask` is continued here.
pub fn router(orchestrator: Arc<Orchestrator>, config: ServerConfig) -> Router {
    let turns = Arc::new(Semaphore::new(config.max_concurrent_turns.max(1)));
    let state = AppState(Arc::new(Shared {
        orchestrator,
        config,
        turns,
    }));
    Router::new()
        .route("/v1/agent/execute", post(execute))
        .route("/v1/sessions", get(sessions))
        .route("/v1/sessions/{id}", get(session).delete(delete_session))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .route("/openapi.json", get(openapi_json))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn_with_state(state.clone(), each_request))
        .with_state(state)
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, lets the
/// requests in flight finish, and the turns whose clients went away too, and returns.
///
/// A client must send a request's headers within `header_read_timeout` (counted from
/// when the connection is ready for a request, so a keep-alive connection idle that long
/// is closed too): `axum::serve` sets no timer, so a client that trickles its headers
/// (a slow-loris) would hold a connection, and a file descriptor, forever. Use
/// [`ServerConfig::header_read_timeout`].
///
/// Connections are served with `TCP_NODELAY`: a streamed turn writes one small event at a
/// time, and with Nagle's algorithm each event after the first waited for the client's
/// delayed ACK (about 40 ms on Linux loopback; `cargo xtask serve-bench` measured 44 ms
/// per streamed turn before this).
///
/// # Errors
///
/// [`ServerError::Io`] when the listener fails for good (not for one failed accept: a
/// connection reset before it was accepted is skipped, and running out of file
/// descriptors waits a second and tries again, as `axum::serve` does).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    header_read_timeout: std::time::Duration,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::service::TowerToHyperService;

    let mut http = hyper::server::conn::http1::Builder::new();
    // A deadline past what the clock can hold panics in every connection's timer: a
    // century is as good as none.
    let century = std::time::Duration::from_secs(100 * 365 * 24 * 60 * 60);
    http.timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout.min(century));
    // Turns whose client went away are waited for too, after the connections.
    let detached = DetachedTurns::default();
    let app = app.layer(axum::Extension(detached.clone()));
    let connections = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, _peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) if is_connection_error(&error) => continue,
                Err(error) if is_resource_error(&error) => {
                    tracing::error!(%error, "accept failed; retrying in 1 s");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
                Err(source) => {
                    return Err(ServerError::Io {
                        operation: "accept a connection",
                        source,
                    });
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let service = TowerToHyperService::new(app.clone());
        let connection = connections.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::trace!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    connections.shutdown().await;
    detached.all_ended().await;
    Ok(())
}

/// An accept error that concerns one connection only: skip it.
fn is_connection_error(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
            | std::io::ErrorKind::Interrupted
            | std::io::ErrorKind::WouldBlock
    )
}

/// An accept error that passes once resources are freed (too many open files, no
/// memory for a socket buffer): wait and try again.
fn is_resource_error(error: &std::io::Error) -> bool {
    // EMFILE, ENFILE, ENOBUFS, ENOMEM on Linux and the BSDs alike.
    matches!(error.raw_os_error(), Some(12 | 23 | 24 | 105))
        || error.kind() == std::io::ErrorKind::OutOfMemory
}

/// What every request gets, one layer for all (each layer a request passes costs a
/// boxed service and future): its id, the caller's `x-request-id` when it is a short
/// printable value or a new one, handed to the handler and put on the response; a log
/// span carrying it, with one line when the response's head is ready (a streamed
/// turn's when its head goes out); and its count by route template (never the concrete
/// path, which may hold a session id), method and status, and an error response's by
/// its code.
async fn each_request(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|value| value.to_str().ok())
        .filter(|value| {
            !value.is_empty()
                && value.len() <= 128
                && value.bytes().all(|byte| byte.is_ascii_graphic())
        })
        .map_or_else(new_request_id, str::to_owned);
    request.extensions_mut().insert(RequestId(id.clone()));
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = request.method().clone();
    // At `error`, so that it is on whenever any logging is: a warning at the default
    // level (a failed turn, a provider retry) carries the request id the client sent.
    let span = tracing::error_span!(
        "request",
        request_id = %id,
        method = %method,
        path = %request.uri().path()
    );
    let started = std::time::Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            // Whole microseconds, so the field reads `47.022`, not `47.022178999999994`.
            elapsed_ms = started.elapsed().as_micros() as f64 / 1000.0,
            "answered"
        );
    });
    let metrics = &state.config.metrics;
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    metrics.request(route, &method, response.status().as_u16());
    if let Some(code) = response.extensions().get::<ErrorCode>() {
        metrics.response_error(*code);
    }
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}

/// `req_` and 16 hex digits: a prefix random per process (so that replicas and restarts
/// do not collide), then a counter (so that ids are unique within the process without
/// hashing anything per request).
fn new_request_id() -> String {
    static PREFIX: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(|| {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        hasher.finish() as u32
    });
    let count = COUNTER.fetch_add(1, Ordering::Relaxed) as u32;
    format!("req_{prefix:08x}{count:08x}")
}

fn id_of(request: &Request) -> String {
    request
        .extensions()
        .get::<RequestId>()
        .map_or_else(new_request_id, |id| id.0.clone())
}

/// The request id of a request to a protected route, or the `401` to answer with.
fn authorized(state: &AppState, request: &Request) -> Result<String, ApiError> {
    let request_id = id_of(request);
    authorize(state, request.headers(), request.uri(), &request_id).map(|()| request_id)
}

fn unknown_session(id: &str, request_id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::UnknownSession,
        format!("there is no session {}", shown_id(id)),
        request_id,
    )
}

/// The characters of a session id a message quotes: an id is checked for its
/// characters, not its length, and an error is no place to send back a client's
/// megabyte.
const SHOWN_ID_CHARS: usize = 100;

/// `id` quoted for a message: whole when short, else its start and its length.
fn shown_id(id: &str) -> String {
    let count = id.chars().count();
    if count <= SHOWN_ID_CHARS {
        format!("{id:?}")
    } else {
        let start: String = id.chars().take(SHOWN_ID_CHARS).collect();
        format!("{start:?}… ({count} characters)")
    }
}

/// Any path no route has: the one error shape, as every other refusal. Under `/v1/`,
/// where every route needs the token, the token is asked for first: a caller without it
/// is told to authenticate, whatever the path (the routes themselves are public, in
/// `/openapi.json`).
async fn not_found(State(state): State<AppState>, request: Request) -> Response {
    if let Some(refused) = unauthorized_under_v1(&state, &request) {
        return refused;
    }
    let message = format!(
        "there is no route {} {}",
        request.method(),
        request.uri().path()
    );
    ApiError::new(ErrorCode::NotFound, message, &id_of(&request)).into_response()
}

/// The refusal of a request under `/v1/`, where every route needs the token, that does
/// not carry it: asked for before a path or a method is said to be wrong.
fn unauthorized_under_v1(state: &AppState, request: &Request) -> Option<Response> {
    if !request.uri().path().starts_with("/v1/") {
        return None;
    }
    authorized(state, request)
        .err()
        .map(IntoResponse::into_response)
}

/// A route's path with a method it does not have; axum adds the `Allow` header. Under
/// `/v1/` the token is asked for first, as for a path no route has.
async fn method_not_allowed(State(state): State<AppState>, request: Request) -> Response {
    if let Some(refused) = unauthorized_under_v1(&state, &request) {
        return refused;
    }
    let message = format!(
        "{} does not take {} (see the Allow header)",
        request.uri().path(),
        request.method()
    );
    ApiError::new(ErrorCode::MethodNotAllowed, message, &id_of(&request)).into_response()
}

/// A path or query string the route could not read, as `400 invalid_request` listing
/// every parameter that is wrong (its name as `path`), as a body's violations are.
fn unreadable(what: &str, violations: Vec<Violation>, request_id: &str) -> ApiError {
    let reasons: Vec<&str> = violations.iter().map(|v| v.message.as_str()).collect();
    let mut error = ApiError::new(
        ErrorCode::InvalidRequest,
        format!("the {what} is not valid: {}", reasons.join("; ")),
        request_id,
    );
    error.violations = violations;
    error
}

/// The session id of a `/v1/sessions/{id}` path, or the `400` when it does not read or
/// holds a NUL, which no store keeps (PostgreSQL refuses it in text). Other control
/// characters are no longer given to new sessions (`invalid_id`), but a session stored
/// with one before can still be read and deleted.
fn session_id(
    id: Result<Path<String>, PathRejection>,
    request_id: &str,
) -> Result<String, ApiError> {
    let invalid = |message: &str| {
        unreadable(
            "path",
            vec![Violation::new("id", ViolationCode::InvalidId, message)],
            request_id,
        )
    };
    // The only way the one `{id}` segment fails to read is bytes that are not UTF-8
    // once percent-decoded (axum's words for it name its internals).
    let Path(id) = id.map_err(|_| {
        invalid("the session id is not UTF-8 once percent-decoded, which no session id is")
    })?;
    if id.contains('\0') {
        return Err(invalid(
            "the session id holds the control character '\\0', which no session id has",
        ));
    }
    Ok(id)
}

/// The token of an `Authorization` value of the Bearer scheme. The scheme's name is
/// case-insensitive (RFC 9110 §11.1: `bearer` and `BEARER` are `Bearer`), and the
/// spaces around the token are not part of it.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

/// Without tokens (a service on loopback), the request must name the service by a
/// loopback host: a web page the user opens can send requests to `127.0.0.1`, and
/// through DNS rebinding read the answers, but its requests then carry the page's own
/// host name. Requests without a `Host` (HTTP/1.0) pass. A request target in absolute
/// form (`GET http://host/v1/...`) names its host too, which a server takes over `Host`
/// (RFC 9112 §3.2.2): both must be loopback.
fn local_host(
    headers: &HeaderMap,
    uri: &axum::http::Uri,
    request_id: &str,
) -> Result<(), ApiError> {
    let host = single(headers, header::HOST, request_id)?;
    let named = host
        .map(|host| host.to_str().ok().and_then(host_name))
        .into_iter()
        .chain(
            uri.authority()
                .map(|authority| host_name(authority.as_str())),
        );
    let mut local = true;
    for name in named {
        local &= name.is_some_and(aptix_model::is_loopback_host);
    }
    if local {
        return Ok(());
    }
    Err(ApiError::new(
        ErrorCode::HostNotAllowed,
        "without bearer tokens the service answers only requests addressed to a loopback \
         host (localhost, 127.0.0.1, [::1]); configure tokens (--tokens-file) to serve \
         other names",
        request_id,
    ))
}

/// The name of a `Host` value, without its port: `[::1]:8787` -> `::1`; `None` when
/// what follows the name is not a port (`localhost:80@evil.com`).
fn host_name(host: &str) -> Option<&str> {
    let host = host.trim();
    let is_port = |port: &str| port.bytes().all(|b| b.is_ascii_digit());
    if let Some(bracketed) = host.strip_prefix('[') {
        let (name, rest) = bracketed.split_once(']')?;
        return (rest.is_empty() || rest.strip_prefix(':').is_some_and(is_port)).then_some(name);
    }
    match host.rsplit_once(':') {
        Some((name, port)) => is_port(port).then_some(name),
        None => Some(host),
    }
}

/// The one value of header `name`, `None` when absent. Sent twice it is refused: a
/// proxy in front may read the other one (RFC 9112 §3.2 requires this of `Host`, and
/// two `Authorization` or `Content-Type` headers are as ambiguous).
fn single<'h>(
    headers: &'h HeaderMap,
    name: header::HeaderName,
    request_id: &str,
) -> Result<Option<&'h header::HeaderValue>, ApiError> {
    let mut values = headers.get_all(&name).iter();
    let first = values.next();
    if values.next().is_some() {
        let violation = Violation::new(
            name.as_str(),
            ViolationCode::DuplicateField,
            format!("the {name} header is sent more than once; send it once"),
        );
        return Err(unreadable(
            "request's header set",
            vec![violation],
            request_id,
        ));
    }
    Ok(first)
}

/// `Authorization: Bearer <token>` when tokens are configured.
fn authorize(
    state: &AppState,
    headers: &HeaderMap,
    uri: &axum::http::Uri,
    request_id: &str,
) -> Result<(), ApiError> {
    if state.config.tokens.is_empty() {
        if state.config.loopback_hosts_only {
            return local_host(headers, uri, request_id);
        }
        return Ok(());
    }
    let presented = single(headers, header::AUTHORIZATION, request_id)?
        .and_then(|value| value.to_str().ok())
        .and_then(bearer_token);
    match presented {
        Some(token) if state.config.tokens.accepts(token) => Ok(()),
        Some(_) => Err(ApiError::new(
            ErrorCode::Unauthorized,
            "the bearer token is not accepted",
            request_id,
        )),
        None => Err(ApiError::new(
            ErrorCode::Unauthorized,
            "an Authorization: Bearer token is required",
            request_id,
        )),
    }
}

/// `POST /v1/agent/execute`.
#[utoipa::path(
    post,
    path = "/v1/agent/execute",
    tag = "turns",
    summary = "Run a turn",
    description = "Runs one turn (an instruction, or the results of the client tool calls the last turn asked for). `Accept: text/event-stream` streams events whose data is JSON: a StreamDelta (the schema given for text/event-stream, its `type` naming the kind) for `event: retry` for a retry notice (a provider request sent again, or a cut stream recovered), `event: tool` for a server tool starting and finishing, `event: delta` for the rest; then exactly one `event: envelope` (an AgentExecuteResponse, the JSON path's envelope) or one `event: error` (an ErrorBody). The head waits for the turn's first event or its end (at most one heartbeat interval), so a turn refused before it streams anything gets its status as in JSON; `event: error` ends a stream that had begun. `: heartbeat` comments keep idle proxies from cutting a long turn. A turn outlives its connection: retrying the same sessionId + turnId returns the stored envelope.",
    request_body(content = aptix_model::contract::AgentExecuteRequest, content_type = "application/json"),
    params(("x-request-id" = Option<String>, Header, description = "Echoed back; made when absent or not a printable value of at most 128 bytes")),
    responses(
        (status = 200, description = "The AGN-004 envelope (also for `kind: error`), or its event stream", content(
            (aptix_model::contract::AgentExecuteResponse = "application/json"),
            (aptix_mapping::StreamDelta = "text/event-stream"),
        )),
        (status = 400, description = "`invalid_request` (not JSON, or breaks AGN-034: every violation listed) or `tool_results_mismatch`", body = ErrorBody),
        (status = 401, description = "`unauthorized`: a bearer token is required (`WWW-Authenticate: Bearer`)", body = ErrorBody),
        (status = 403, description = "`host_not_allowed`: without tokens, a request addressed to a host that is not loopback (a web page through DNS rebinding)", body = ErrorBody),
        (status = 404, description = "`unknown_session`: a tool continuation names no session", body = ErrorBody),
        (status = 409, description = "`session_busy` (another turn runs on the session), `nothing_pending` (tool results with no calls pending) or `session_conflict` (the session changed while the turn ran)", body = ErrorBody),
        (status = 422, description = "`turn_id_reused`: the `sessionId` + `turnId` name a stored user turn that a different request ran; a retry sends the same request, a new turn needs a new `turnId` (tool continuations with other results are the turn's next round)", body = ErrorBody),
        (status = 408, description = "`body_timeout`: the body did not arrive within the body read timeout (default 60 s)", body = ErrorBody),
        (status = 413, description = "`body_too_large`: over the body limit (default 1 MiB)", body = ErrorBody),
        (status = 415, description = "`unsupported_media_type`: the body is not `application/json`, or is sent with a content coding (`Content-Encoding: gzip`), which is not read", body = ErrorBody),
        (status = 500, description = "`internal_error`", body = ErrorBody),
        (status = 503, description = "`over_capacity` (too many turns in flight; `Retry-After: 1`; a stored turn is answered anyway, and a turn on a session running one is 409), `store_unavailable`, or `shutting_down` (the service stopped the turn as it stopped; nothing of it was stored; `Retry-After: 1`)", body = ErrorBody),
        (status = 504, description = "`turn_timeout`: the turn ran past its deadline (default 10 min)", body = ErrorBody),
    ),
    security((), ("bearer" = [])),
)]
pub(crate) async fn execute(State(state): State<AppState>, request: Request) -> Response {
    let request_id = id_of(&request);
    let detached = request.extensions().get::<DetachedTurns>().cloned();
    match prepare_turn(&state, request, &request_id).await {
        Ok((turn, streamed)) => {
            let turn = Turn { detached, ..turn };
            if streamed {
                stream_turn(state, turn, request_id).await
            } else {
                json_turn(state, turn, request_id).await
            }
        }
        Err(error) => error.into_response(),
    }
}

/// Checks auth, media type, size and capacity, and reads the AGN-034 request.
async fn prepare_turn(
    state: &AppState,
    request: Request,
    request_id: &str,
) -> Result<(Turn, bool), ApiError> {
    let (parts, body) = request.into_parts();
    authorize(state, &parts.headers, &parts.uri, request_id)?;
    no_query(&parts.uri, request_id)?;
    let is_json = single(&parts.headers, header::CONTENT_TYPE, request_id)?
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "the body must be application/json (an AGN-034 request)",
            request_id,
        ));
    }
    // A compressed body is not read: refused for its coding (RFC 9110 §15.5.16), not
    // decoded as JSON and called malformed.
    if let Some(coding) = parts
        .headers
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .flat_map(|value| value.to_str().unwrap_or("?").split(','))
        .map(str::trim)
        .find(|coding| !coding.is_empty() && !coding.eq_ignore_ascii_case("identity"))
    {
        return Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            format!(
                "the body must be sent as it is, without a content coding (content-encoding {coding:?} is not read)"
            ),
            request_id,
        ));
    }
    let limit = state.config.body_limit;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(too_large(limit, request_id));
    }
    let bytes = read_body(body, limit, state.config.body_read_timeout, request_id).await?;
    // Validated once here, to answer 400 before anything runs; the orchestrator runs the
    // validated request without checking it again.
    let turn_request = ValidatedRequest::from_json_slice(&bytes).map_err(|rejection| {
        ApiError::from_orchestrator(OrchestratorError::InvalidRequest(rejection), request_id)
    })?;
    let permit = match Arc::clone(&state.turns).try_acquire_owned() {
        Ok(permit) => Some(permit),
        // A turn already stored costs no model call: its retry (what a client sends after
        // losing its connection, often under load) is answered at capacity too.
        Err(_) if is_stored(state, &turn_request).await => None,
        // A retry of a turn still running (a client that lost its connection) is told
        // the session is busy, as it would be with room to spare, not that the service
        // is full.
        Err(_) => {
            if let Some(busy) = state
                .orchestrator
                .session_busy(turn_request.session_id().as_str())
                .await
            {
                return Err(ApiError::from_orchestrator(busy, request_id));
            }
            let most = state.config.max_concurrent_turns;
            return Err(ApiError::new(
                ErrorCode::OverCapacity,
                format!(
                    "{most} turn{} already running, the most this service runs at once; retry shortly",
                    if most == 1 { " is" } else { "s are" }
                ),
                request_id,
            ));
        }
    };
    let asks_stream = matches!(&*turn_request, AgentExecuteRequest::UserTurn(turn) if turn.stream);
    let streamed = wants_stream(
        parts
            .headers
            .get(header::ACCEPT)
            .and_then(|value| value.to_str().ok()),
        asks_stream,
    );
    Ok((
        Turn {
            request: turn_request,
            permit,
            detached: None,
        },
        streamed,
    ))
}

/// Whether a turn is answered as server-sent events: when `Accept` names
/// `text/event-stream` with a weight above zero and at least that of
/// `application/json`, or when the body asks (`"stream": true`) and `Accept`, if sent,
/// admits the event stream (names it with a weight above zero, or through `*/*` or
/// `text/*`).
fn wants_stream(accept: Option<&str>, body_asks: bool) -> bool {
    let Some(accept) = accept else {
        return body_asks;
    };
    let (mut stream, mut json, mut wildcard) = (None, None, None::<f32>);
    for range in accept.split(',') {
        let mut parameters = range.split(';');
        let media = parameters.next().unwrap_or_default().trim();
        // A weight is 0 to 1 with at most three decimals (RFC 9110 §12.4.2); a range
        // with any other is not one the client stated, and counts as not acceptable.
        let weight = match parameters.find_map(|parameter| parameter.trim().strip_prefix("q=")) {
            None => 1.0,
            Some(weight) => weight
                .trim()
                .parse::<f32>()
                .ok()
                .filter(|weight| (0.0..=1.0).contains(weight))
                .unwrap_or(0.0),
        };
        if media.eq_ignore_ascii_case("text/event-stream") {
            stream = Some(weight);
        } else if media.eq_ignore_ascii_case("application/json") {
            json = Some(weight);
        } else if media == "*/*" || media.eq_ignore_ascii_case("text/*") {
            wildcard = Some(wildcard.map_or(weight, |known| known.max(weight)));
        }
    }
    match stream {
        Some(weight) => weight > 0.0 && (body_asks || weight >= json.unwrap_or(0.0)),
        None => body_asks && wildcard.is_some_and(|weight| weight > 0.0),
    }
}

/// Whether `request`'s turn is stored, so that running it calls no model: it is
/// answered from the store, or refused for reusing a stored turn's id (a store that
/// fails says no).
async fn is_stored(state: &AppState, request: &ValidatedRequest) -> bool {
    matches!(
        state.orchestrator.stored_answer(request).await,
        Ok(Some(_)) | Err(OrchestratorError::TurnReused { .. })
    )
}

/// The whole body, at most `limit` bytes, within `timeout`.
async fn read_body(
    body: Body,
    limit: usize,
    timeout: std::time::Duration,
    request_id: &str,
) -> Result<axum::body::Bytes, ApiError> {
    use http_body_util::BodyExt as _;
    let read = http_body_util::Limited::new(body, limit).collect();
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.is::<http_body_util::LengthLimitError>() => {
            Err(too_large(limit, request_id))
        }
        Ok(Err(error)) => Err(ApiError::new(
            ErrorCode::InvalidRequest,
            format!("the request body could not be read: {error}"),
            request_id,
        )),
        Err(_) => Err(ApiError::new(
            ErrorCode::BodyTimeout,
            format!(
                "the request body did not arrive within {} s",
                timeout.as_secs_f64()
            ),
            request_id,
        )),
    }
}

fn too_large(limit: usize, request_id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::BodyTooLarge,
        format!("the request body is larger than the limit of {limit} bytes"),
        request_id,
    )
}

/// A validated request with its place among the turns in flight.
struct Turn {
    request: ValidatedRequest,
    /// `None` for the retry of a stored turn at capacity.
    permit: Option<tokio::sync::OwnedSemaphorePermit>,
    /// Where the turn goes if its client leaves: the tracker of [`serve`], which waits
    /// for it; `None` under another server (the turn is then spawned untracked).
    detached: Option<DetachedTurns>,
}

/// What a turn ends with.
type Outcome = Result<AgentExecuteResponse, ApiError>;

/// A running turn, boxed so that it can be moved into a task of its own.
type TurnFuture = std::pin::Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// The turn as a future: the orchestrator's call under the turn deadline and the
/// metrics, holding its place among the turns in flight until it ends; each delta is
/// handed to `sink` when given.
fn turn_future(
    state: &AppState,
    turn: Turn,
    request_id: String,
    sink: Option<DeltaSink>,
) -> TurnFuture {
    let orchestrator = Arc::clone(&state.orchestrator);
    let deadline = state.config.turn_timeout;
    let metrics = state.config.metrics.clone();
    let stop = state.config.stop_turns.clone();
    // The request's span goes with the turn wherever it runs: in its handler, in its
    // streamed body's poll after the head went out, or in a task of its own after its
    // client left; every line the turn logs (retries, cut streams, its end) carries the
    // request id.
    let span = tracing::Span::current();
    let streamed = sink.is_some();
    let started = std::time::Instant::now();
    let turn = async move {
        let Turn {
            request, permit, ..
        } = turn;
        // Kept to settle the turn if it is stopped: what was stored under its key is
        // its answer only if this very request ran it.
        let asked: aptix_model::contract::AgentExecuteRequest = (*request).clone();
        // A request the provider sends again is counted, and a streamed turn's client is
        // told before the wait (`event: retry`).
        let observer = {
            let metrics = metrics.clone();
            let sink = sink.clone();
            move |notice: &aptix_client::RetryNotice| {
                metrics.retry(RetryKind::Request, notice.wait);
                if let Some(sink) = &sink {
                    sink.write(&aptix_orchestrator::retry_delta(notice));
                }
            }
        };
        let run = aptix_client::observe_retries(observer, async {
            match sink {
                Some(sink) => {
                    let mut sink = |delta: &StreamDelta| sink.push(delta);
                    orchestrator.execute_streaming(request, &mut sink).await
                }
                None => orchestrator.execute(request).await,
            }
        });
        let stoppable = async {
            let mut timed = std::pin::pin!(tokio::time::timeout(deadline, run));
            let mut guard = stop.guard();
            std::future::poll_fn(move |cx| guard.poll(cx, timed.as_mut())).await
        };
        let (outcome, called_model) = metrics.turn(stoppable).await;
        // An envelope answered again from the store (a retry) was counted when its turn
        // ran.
        let count = |envelope: &aptix_model::contract::AgentExecuteResponse| {
            if called_model {
                metrics.envelope(envelope);
            }
        };
        let outcome = match outcome {
            Some(Ok(Ok(envelope))) => {
                count(&envelope);
                Ok(envelope)
            }
            Some(Ok(Err(error))) => Err(ApiError::from_orchestrator(error, &request_id)),
            // Stopped (a shutdown) or past its deadline: the turn's future is dropped. A
            // commit it had begun runs to its end, so what the client is told is what
            // the store holds: the envelope if the turn was stored after all, else that
            // nothing of it was. The lease is given back so that the next process need
            // not wait for it to expire.
            dropped => {
                let settled = match orchestrator.settle_dropped_turn(&asked).await {
                    Ok(stored) => stored,
                    Err(error) => {
                        tracing::warn!(session = %asked.session_id().as_str(), %error, "could not settle a stopped turn");
                        None
                    }
                };
                match (settled, dropped) {
                    (Some(envelope), _) => {
                        tracing::info!(session = %asked.session_id().as_str(), turn = %asked.turn_id().as_str(), "a stopped turn was stored as it stopped; answering with it");
                        count(&envelope);
                        Ok(envelope)
                    }
                    (None, None) => Err(ApiError::new(
                        ErrorCode::ShuttingDown,
                        "the service is stopping and stopped this turn before it ended; nothing of it was stored: send it again",
                        &request_id,
                    )),
                    (None, _) => Err(ApiError::new(
                        ErrorCode::TurnTimeout,
                        format!(
                            "the turn ran past the deadline of {} and was stopped; nothing of it was stored",
                            aptix_client::human_duration(deadline)
                        ),
                        &request_id,
                    )),
                }
            }
        };
        drop(permit);
        log_turn_end(&outcome, streamed, started);
        outcome
    };
    // Without a subscriber that wants the span (no logging), the turn is not wrapped:
    // entering and leaving a disabled span at every poll is work for nothing.
    if span.is_disabled() {
        Box::pin(turn)
    } else {
        Box::pin(turn.instrument(span))
    }
}

/// The line a turn's end is logged with, beyond the request's `answered` line (which,
/// for a streamed turn, is written when its head goes out): an error envelope, a
/// failed streamed turn or a turn the service failed (5xx) at `warn` with its code, a
/// streamed turn's end at `info`.
fn log_turn_end(outcome: &Outcome, streamed: bool, started: std::time::Instant) {
    let elapsed_ms = started.elapsed().as_micros() as f64 / 1000.0;
    match outcome {
        Ok(envelope) if envelope.kind == Kind::Error => tracing::warn!(
            code = envelope.error_code.as_deref().unwrap_or("unknown"),
            streamed,
            elapsed_ms,
            "the turn ended with an error envelope: {}",
            envelope.error_message.as_deref().unwrap_or("no message")
        ),
        Ok(envelope) if streamed => tracing::info!(
            kind = %envelope.kind,
            elapsed_ms,
            "streamed turn ended"
        ),
        Ok(_) => {}
        // A turn the service could not finish (past its deadline, stopped by a
        // shutdown, a store down) is worth a warning whichever way it was asked.
        Err(error) if error.code.status().is_server_error() => tracing::warn!(
            code = error.code.as_str(),
            streamed,
            elapsed_ms,
            "{} failed: {}",
            if streamed { "streamed turn" } else { "turn" },
            error.message
        ),
        // A client's mistake (a busy session, a reused turn id) is in the `answered`
        // line, with its status; a stream's is said too, as its head may have gone
        // out with 200 before the turn decided.
        Err(error) if streamed => tracing::info!(
            code = error.code.as_str(),
            elapsed_ms,
            "streamed turn refused: {}",
            error.message
        ),
        Err(_) => {}
    }
}

/// A turn run by the request that asked for it (no task, channel or wake-up between
/// them), which is not cancelled when that request goes away: dropped before it ended
/// (the client disconnected), it moves into a task of its own, where it completes and
/// is stored, so that a retry of the same turn gets its envelope. A turn that panics
/// ends with `internal_error` instead of taking the connection down.
struct InlineTurn {
    turn: Option<TurnFuture>,
    request_id: String,
    detached: Option<DetachedTurns>,
}

impl InlineTurn {
    fn new(turn: TurnFuture, request_id: String, detached: Option<DetachedTurns>) -> InlineTurn {
        InlineTurn {
            turn: Some(turn),
            request_id,
            detached,
        }
    }

    /// The turn, still running, as a future that ends with its outcome (a panic caught
    /// as in [`poll`](Future::poll)); `None` when it has ended.
    fn release(&mut self) -> Option<InlineTurn> {
        self.turn.take().map(|turn| InlineTurn {
            turn: Some(turn),
            request_id: self.request_id.clone(),
            // Awaited to its end by the task it moves into.
            detached: None,
        })
    }
}

impl Future for InlineTurn {
    type Output = Outcome;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Outcome> {
        use std::task::Poll;
        let this = &mut *self;
        let Some(turn) = this.turn.as_mut() else {
            // Polled again after its end: a caller's mistake, answered without panicking.
            return Poll::Ready(Err(turn_failed(
                "the turn had already ended",
                &this.request_id,
            )));
        };
        let polled =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| turn.as_mut().poll(cx)));
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(outcome)) => {
                this.turn = None;
                Poll::Ready(outcome)
            }
            Err(panic) => {
                this.turn = None;
                let reason = panic
                    .downcast_ref::<&str>()
                    .map(|text| (*text).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_owned());
                Poll::Ready(Err(turn_failed(
                    &format!("the turn failed: {reason}"),
                    &this.request_id,
                )))
            }
        }
    }
}

impl Drop for InlineTurn {
    fn drop(&mut self) {
        if let Some(turn) = self.turn.take() {
            spawn_turn(self.detached.as_ref(), async move {
                let _ = turn.await;
            });
        }
    }
}

/// Runs `task` to its end in a task of its own, counted among `detached` when given (so
/// that a graceful shutdown waits for it), else untracked on the current runtime.
fn spawn_turn(detached: Option<&DetachedTurns>, task: impl Future<Output = ()> + Send + 'static) {
    match detached {
        Some(detached) => detached.spawn(task),
        None => {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(task);
            }
        }
    }
}

/// The turns of one [`serve`] whose clients went away, each run to its end in a task of
/// its own; `serve` waits for them after its connections, so that a graceful shutdown
/// lets them finish too (else the process would exit mid-turn, leaving the session
/// leased until its lease expires).
#[derive(Clone, Default)]
pub(crate) struct DetachedTurns(Arc<DetachedInner>);

#[derive(Default)]
struct DetachedInner {
    running: AtomicUsize,
    ended: tokio::sync::Notify,
}

/// Counts a detached turn out when its task ends, panicked or not.
struct Running(DetachedTurns);

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.0.ended.notify_waiters();
        }
    }
}

impl DetachedTurns {
    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        self.0.running.fetch_add(1, Ordering::AcqRel);
        let running = Running(self.clone());
        runtime.spawn(async move {
            let _running = running;
            task.await;
        });
    }

    /// Waits until no detached turn is running.
    async fn all_ended(&self) {
        loop {
            // Made before the check: a turn that ends in between still wakes it.
            let ended = self.0.ended.notified();
            if self.0.running.load(Ordering::Acquire) == 0 {
                return;
            }
            ended.await;
        }
    }
}

fn turn_failed(message: &str, request_id: &str) -> ApiError {
    ApiError::new(ErrorCode::Internal, message, request_id)
}

async fn json_turn(state: AppState, turn: Turn, request_id: String) -> Response {
    let detached = turn.detached.clone();
    let turn = turn_future(&state, turn, request_id.clone(), None);
    match InlineTurn::new(turn, request_id, detached).await {
        Ok(envelope) => (StatusCode::OK, axum::Json(envelope)).into_response(),
        Err(error) => error.into_response(),
    }
}

/// A streamed turn. Its head waits for the turn's first event or its end, at most one
/// heartbeat interval: a turn refused before it streams anything (`session_busy`,
/// `unknown_session`, a store that fails) is answered with its status, as the JSON path
/// answers it, and a turn whose first events are ready at once sends them with its head,
/// in one write.
async fn stream_turn(state: AppState, turn: Turn, request_id: String) -> Response {
    let handover = Arc::new(std::sync::Mutex::new(Handover::default()));
    let detached = turn.detached.clone();
    let sink = DeltaSink {
        handover: Arc::downgrade(&handover),
        metrics: state.config.metrics.clone(),
    };
    let started = std::time::Instant::now();
    let turn = turn_future(&state, turn, request_id.clone(), Some(sink));
    let mut turn = InlineTurn::new(turn, request_id, detached.clone());
    // A zero interval would send heartbeats as fast as the connection takes them.
    let interval = state.config.heartbeat.max(MIN_HEARTBEAT);
    let mut heartbeat = None;
    let head = std::future::poll_fn(|cx| {
        use std::task::Poll;
        if let Poll::Ready(outcome) = std::pin::Pin::new(&mut turn).poll(cx) {
            return Poll::Ready(Some(outcome));
        }
        if !lock(&handover).events.is_empty() {
            return Poll::Ready(None);
        }
        // Made only when the turn waits, as the body's heartbeat is (see `SseBody`).
        let timer = heartbeat.get_or_insert_with(|| {
            Box::pin(tokio::time::sleep_until(heartbeat_due(
                tokio::time::Instant::now(),
                interval.min(HEAD_WAIT),
            )))
        });
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await;
    let body = match head {
        Some(Err(error)) => return error.into_response(),
        Some(Ok(envelope)) => {
            let mut chunk = std::mem::take(&mut lock(&handover).events);
            push_sse_event(&mut chunk, "envelope", json_data(&envelope));
            Body::from(chunk)
        }
        None => {
            // The head went out before any event: a heartbeat with it, so that the
            // client and any proxy between see the stream open and alive at once.
            let waiting = lock(&handover).events.is_empty();
            let body = SseBody {
                turn: BodyTurn::Inline(turn),
                detached,
                handover,
                metrics: state.config.metrics.clone(),
                heartbeat,
                last_sent: tokio::time::Instant::now(),
                interval,
                started,
            };
            if waiting {
                let first = futures_util::stream::once(std::future::ready(Ok::<_, Infallible>(
                    Bytes::from_static(HEARTBEAT),
                )));
                Body::from_stream(futures_util::StreamExt::chain(first, body))
            } else {
                Body::from_stream(body)
            }
        }
    };
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            // nginx buffers a proxied response unless told not to: the events would
            // reach the client in lumps.
            (HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        body,
    )
        .into_response()
}

/// The comment a heartbeat sends.
const HEARTBEAT: &[u8] = b": heartbeat\n\n";

/// The longest a streamed response's head waits for the turn's first event: a turn
/// refused before it streams (a busy or unknown session, a store that fails at once) is
/// answered with its status well within it, and a client waiting on a slow model sees
/// its stream open after it, with a heartbeat.
const HEAD_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// When a heartbeat is due: `interval` after `last_sent`. An interval too long to add
/// (`Duration::MAX`, to turn heartbeats off) waits a year instead of overflowing.
fn heartbeat_due(
    last_sent: tokio::time::Instant,
    interval: std::time::Duration,
) -> tokio::time::Instant {
    last_sent
        .checked_add(interval)
        .unwrap_or(last_sent + std::time::Duration::from_secs(365 * 24 * 3600))
}

/// The shortest interval between heartbeats.
const MIN_HEARTBEAT: std::time::Duration = std::time::Duration::from_millis(10);

/// Appends one server-sent event; `data` writes its one line (compact JSON has no line
/// breaks).
fn push_sse_event(out: &mut Vec<u8>, name: &str, data: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(b"event: ");
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\ndata: ");
    data(out);
    out.extend_from_slice(b"\n\n");
}

/// Event data that is `value` as compact JSON, written straight into the event (an
/// encoding failure, which these types cannot have, leaves the data empty).
fn json_data<T: Serialize>(value: &T) -> impl FnOnce(&mut Vec<u8>) + '_ {
    move |out| {
        let start = out.len();
        if serde_json::to_writer(&mut *out, value).is_err() {
            out.truncate(start);
        }
    }
}

/// Event data that is already one line of text.
fn text_data(text: &str) -> impl FnOnce(&mut Vec<u8>) + '_ {
    move |out| out.extend_from_slice(text.as_bytes())
}

/// How far a client may fall behind a streamed turn, in bytes of events it has not
/// taken: past it, the turn's later deltas are left out (the envelope still carries the
/// whole answer), so that a client that stops reading holds neither its turn nor an
/// unbounded buffer.
const MAX_UNSENT: usize = 8 << 20;

/// What a streamed turn hands its body: its deltas as server-sent events, then its
/// outcome. The body owns it; the turn holds a weak reference, so that once the body is
/// gone (the client disconnected) its events are freed and no longer written.
#[derive(Default)]
struct Handover {
    events: Vec<u8>,
    /// The client fell [`MAX_UNSENT`] behind: no more deltas for this turn.
    overflowed: bool,
    /// The turn's outcome, once it ran in a task of its own and ended.
    outcome: Option<Outcome>,
    /// The body waiting for events, once the turn runs in a task of its own.
    waker: Option<std::task::Waker>,
}

/// The comment sent where a client fell too far behind and deltas stop.
const OVERFLOW_NOTICE: &[u8] =
    b": the client fell behind; later deltas are left out, the envelope has the whole answer\n\n";

/// Where a streamed turn writes its deltas for its body to send.
#[derive(Clone)]
struct DeltaSink {
    handover: std::sync::Weak<std::sync::Mutex<Handover>>,
    metrics: Metrics,
}

/// The server-sent event a delta goes out as: `retry` for a retry notice, `tool` for a
/// server tool starting and finishing, `delta` for the rest (text, refusals, the
/// model's tool calls and their arguments, reasoning summaries, compaction notices).
fn event_name(delta: &StreamDelta) -> &'static str {
    match delta {
        StreamDelta::Retrying { .. } => "retry",
        StreamDelta::ToolRunning { .. } | StreamDelta::ToolFinished { .. } => "tool",
        _ => "delta",
    }
}

impl DeltaSink {
    /// A delta of the orchestrator's: a retry notice here is a cut stream's.
    fn push(&self, delta: &StreamDelta) {
        if let StreamDelta::Retrying { wait_ms, .. } = delta {
            self.metrics.retry(
                RetryKind::Stream,
                std::time::Duration::from_millis(*wait_ms),
            );
        }
        self.write(delta);
    }

    /// Writes `delta` as its event for the body to send.
    fn write(&self, delta: &StreamDelta) {
        let Some(handover) = self.handover.upgrade() else {
            return;
        };
        let waker = {
            let mut handover = lock(&handover);
            if handover.overflowed {
                return;
            }
            let start = handover.events.len();
            push_sse_event(&mut handover.events, event_name(delta), json_data(delta));
            if handover.events.len() > MAX_UNSENT {
                handover.events.truncate(start);
                handover.events.extend_from_slice(OVERFLOW_NOTICE);
                handover.overflowed = true;
            }
            handover.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Hands over the outcome of a turn that ran in a task of its own.
    fn finish(&self, outcome: Outcome) {
        let Some(handover) = self.handover.upgrade() else {
            return;
        };
        let waker = {
            let mut handover = lock(&handover);
            handover.outcome = Some(outcome);
            handover.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

fn lock(handover: &std::sync::Mutex<Handover>) -> std::sync::MutexGuard<'_, Handover> {
    // Held only to move bytes in or out; a panic while it was held left whole events
    // behind.
    handover
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long a streamed turn runs in its request's poll (its handler's, then its
/// body's): when its body waits after that, it moves into a task of its own. A turn
/// that waits on a model is past it by its first token (hundreds of milliseconds), and
/// a task costs it nothing measurable; a turn that ends sooner (an instant provider, a
/// stored envelope, an error) costs no task and no wake-up between two tasks, which on
/// this project's 2-core test machine cost a turn at concurrency 1 over a millisecond
/// at p99. Only a client that stops reading
/// within this time, while the provider fills every buffer between them (hyper's and
/// the socket's: megabytes), holds its turn.
const RELEASE_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

/// Where a streamed turn runs.
enum BodyTurn {
    /// In its body's poll, for its first [`RELEASE_AFTER`].
    Inline(InlineTurn),
    /// In a task of its own, from when it waited after [`RELEASE_AFTER`]: the provider's
    /// stream is then read however fast the client reads.
    Released,
    /// Its final event was sent.
    Ended,
}

/// The body of a streamed turn: the deltas (`event: delta`, `tool`, `retry`), then the
/// final event, with a `: heartbeat` comment whenever nothing was sent for the heartbeat
/// interval.
///
/// The turn goes on in the body's poll where [`stream_turn`] left it (a turn that ends
/// before its head goes out needs no body of this kind), so that one that ends soon
/// costs no task. When it waits past [`RELEASE_AFTER`], it moves into a task of its
/// own, which hands its deltas over through a shared buffer: a turn read only as fast
/// as its client reads would hold its session and its provider's stream for as long as
/// a client that stopped reading stayed connected.
///
/// Everything ready when the body is polled goes out as one chunk: a provider's reply
/// often brings many events in one read, and writing each in a chunk of its own cost
/// the service and its client more than the turn did.
struct SseBody {
    turn: BodyTurn,
    detached: Option<DetachedTurns>,
    handover: Arc<std::sync::Mutex<Handover>>,
    metrics: Metrics,
    /// The heartbeat's timer, made when the turn first waits (before its head, or in
    /// the body): a turn that ends at once never registers one (registering a timer
    /// earlier than every other woke the runtime's timer thread, a system call per
    /// turn).
    heartbeat: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    last_sent: tokio::time::Instant,
    interval: std::time::Duration,
    /// When the turn started, to tell a turn that waits on a model from one that ends at
    /// once.
    started: std::time::Instant,
}

impl SseBody {
    /// Moves a turn that waits into a task of its own, which hands its outcome over.
    fn release(&mut self, turn: &mut InlineTurn) -> bool {
        if tokio::runtime::Handle::try_current().is_err() {
            return false;
        }
        let Some(turn) = turn.release() else {
            return false;
        };
        let sink = DeltaSink {
            handover: Arc::downgrade(&self.handover),
            metrics: self.metrics.clone(),
        };
        spawn_turn(self.detached.as_ref(), async move {
            sink.finish(turn.await);
        });
        true
    }
}

impl futures_util::Stream for SseBody {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        use std::task::Poll;
        let this = &mut *self;
        let outcome = match &mut this.turn {
            BodyTurn::Ended => return Poll::Ready(None),
            BodyTurn::Inline(turn) => match std::pin::Pin::new(&mut *turn).poll(cx) {
                Poll::Ready(outcome) => Some(outcome),
                Poll::Pending if this.started.elapsed() < RELEASE_AFTER => None,
                Poll::Pending => {
                    let mut turn = std::mem::replace(&mut this.turn, BodyTurn::Released);
                    if let BodyTurn::Inline(inline) = &mut turn
                        && !this.release(inline)
                    {
                        this.turn = turn;
                    }
                    None
                }
            },
            BodyTurn::Released => None,
        };
        // The deltas come first; the final event after the last of them.
        let (mut chunk, outcome) = {
            let mut handover = lock(&this.handover);
            let outcome = outcome.or_else(|| handover.outcome.take());
            if outcome.is_none()
                && handover.events.is_empty()
                && matches!(this.turn, BodyTurn::Released)
                && !handover
                    .waker
                    .as_ref()
                    .is_some_and(|waker| waker.will_wake(cx.waker()))
            {
                handover.waker = Some(cx.waker().clone());
            }
            (std::mem::take(&mut handover.events), outcome)
        };
        if let Some(outcome) = outcome {
            this.turn = BodyTurn::Ended;
            match outcome {
                Ok(envelope) => push_sse_event(&mut chunk, "envelope", json_data(&envelope)),
                Err(error) => {
                    this.metrics.response_error(error.code);
                    push_sse_event(&mut chunk, "error", text_data(&error.json()));
                }
            }
        }
        if !chunk.is_empty() {
            // The timer is pushed back lazily, when the body next waits.
            this.last_sent = tokio::time::Instant::now();
            return Poll::Ready(Some(Ok(Bytes::from(chunk))));
        }
        // Nothing to send: wait for the turn, or for the heartbeat.
        let due = heartbeat_due(this.last_sent, this.interval);
        let heartbeat = this
            .heartbeat
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due)));
        if heartbeat.deadline() != due {
            heartbeat.as_mut().reset(due);
        }
        if heartbeat.as_mut().poll(cx).is_ready() {
            this.last_sent = tokio::time::Instant::now();
            return Poll::Ready(Some(Ok(Bytes::from_static(HEARTBEAT))));
        }
        Poll::Pending
    }
}

/// A stored session, as `GET /v1/sessions/{id}` shows it.
#[derive(Serialize, ToSchema)]
#[schema(as = Session)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionView {
    /// The session's id.
    session_id: String,
    /// The session's mode (server-owned).
    mode: String,
    /// The model its turns use.
    model: String,
    /// The provider response the next turn continues from.
    last_response_id: Option<String>,
    /// Client tool calls waiting for their results.
    pending_tool_calls: Vec<PendingCallView>,
    /// Items in the stored history.
    history_items: usize,
    /// The stored version (grows with each committed turn).
    version: u64,
    /// Turns committed in this session (user turns and tool continuations; a turn that
    /// failed is not stored and not counted).
    turns: u64,
    /// The tokens of those turns, summed.
    usage: LlmUsage,
    /// The most recent stored turns, newest first (at most 20); `null` when the session
    /// store cannot list turns.
    recent_turns: Option<Vec<TurnView>>,
}

/// A stored turn, as a session shows it.
#[derive(Serialize, ToSchema)]
#[schema(as = SessionTurn)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnView {
    /// The client's `turnId`.
    turn_id: String,
    /// `user_turn` or `tool_continuation` (the results of the client tool calls of the
    /// turn with the same id).
    scenario: &'static str,
    /// The envelope's `kind`.
    kind: Kind,
    /// The envelope's `finishReason`.
    finish_reason: Option<FinishReason>,
    /// The envelope's `usage`.
    usage: LlmUsage,
}

/// How many stored turns `GET /v1/sessions/{id}` shows.
const RECENT_TURNS: usize = 20;

/// A client tool call waiting for its result.
#[derive(Serialize, ToSchema)]
#[schema(as = PendingToolCall)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PendingCallView {
    /// The turn that asked for it.
    turn_id: String,
    /// The id a tool result must answer with.
    call_id: String,
    /// The tool's name.
    name: String,
    /// The arguments as the model emitted them (JSON text).
    arguments_json: String,
}

/// `{"status": ...}` of the health routes.
#[derive(Serialize, ToSchema)]
#[schema(as = Status)]
pub(crate) struct StatusView {
    /// `ok` (`/healthz`) or `ready` (`/readyz`).
    status: &'static str,
}

/// `GET /v1/sessions/{id}`: the stored session (mode, model, pending client calls,
/// history length, version, turns and their usage totals, the most recent turns).
#[utoipa::path(
    get,
    path = "/v1/sessions/{id}",
    tag = "sessions",
    summary = "Show a stored session",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The stored session", body = SessionView),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`host_not_allowed`", body = ErrorBody),
        (status = 400, description = "`invalid_request`: an id that does not read (not UTF-8 once percent-decoded)", body = ErrorBody),
        (status = 404, description = "`unknown_session`", body = ErrorBody),
        (status = 503, description = "`store_unavailable`", body = ErrorBody),
    ),
    security((), ("bearer" = [])),
)]
pub(crate) async fn session(
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    request: Request<Body>,
) -> Response {
    let request_id = match authorized(&state, &request) {
        Ok(request_id) => request_id,
        Err(refused) => return refused.into_response(),
    };
    if let Err(error) = no_query(request.uri(), &request_id) {
        return error.into_response();
    }
    let id = match session_id(id, &request_id) {
        Ok(id) => id,
        Err(refused) => return refused.into_response(),
    };
    let store = state.orchestrator.store();
    match session_view(store.as_ref(), &id).await {
        Ok(Some(view)) => axum::Json(view).into_response(),
        Ok(None) => {
            // A session is stored with its first turn: while that turn runs, the session
            // is not there to show yet, though it cannot be deleted either (409). Said,
            // so that a client polling it knows to wait rather than that its id is wrong.
            let first_turn_runs = matches!(
                store.lease(&id).await,
                Ok(Some(lease)) if !lease.expires_in.is_zero()
            );
            if first_turn_runs {
                ApiError::new(
                    ErrorCode::UnknownSession,
                    format!(
                        "there is no session {} yet: its first turn is running, and it is stored when that turn ends",
                        shown_id(&id)
                    ),
                    &request_id,
                )
                .into_response()
            } else {
                unknown_session(&id, &request_id).into_response()
            }
        }
        Err(error) => ApiError::from_orchestrator(error, &request_id).into_response(),
    }
}

/// A stored session as `GET /v1/sessions/{id}` shows it (and `aptix sessions show
/// --json` prints it); `None` when the store holds no such session.
pub(crate) async fn session_view(
    store: &dyn aptix_orchestrator::SessionStore,
    id: &str,
) -> Result<Option<SessionView>, OrchestratorError> {
    let Some(versioned) = store.load(id).await? else {
        return Ok(None);
    };
    let session = versioned.value;
    let recent_turns = match store.list_turns(id, RECENT_TURNS).await {
        Ok(turns) => Some(
            turns
                .into_iter()
                .map(|turn| TurnView {
                    turn_id: turn.turn_id,
                    scenario: turn.scenario.as_str(),
                    kind: turn.envelope.kind,
                    finish_reason: turn.envelope.finish_reason,
                    usage: turn.envelope.usage,
                })
                .collect(),
        ),
        Err(error) => {
            tracing::debug!(%error, "the session's turns are not listed");
            None
        }
    };
    let pending_tool_calls = session
        .pending
        .map(|pending| {
            let turn_id = pending.turn_id;
            pending
                .client_calls
                .into_iter()
                .map(|call| PendingCallView {
                    turn_id: turn_id.clone(),
                    call_id: call.call_id,
                    name: call.name,
                    arguments_json: call.arguments_json,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Some(SessionView {
        history_items: session.history.len(),
        session_id: session.session_id,
        mode: session.mode,
        model: session.model.model,
        last_response_id: session.last_response_id,
        pending_tool_calls,
        version: versioned.version,
        turns: session.totals.turns,
        usage: session.totals.usage,
        recent_turns,
    }))
}

/// A stored session in a listing.
#[derive(Serialize, ToSchema)]
#[schema(as = SessionSummary)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionSummaryView {
    /// The session's id.
    session_id: String,
    /// The session's mode.
    mode: String,
    /// The stored version (grows with each committed turn).
    version: u64,
}

/// One page of sessions.
#[derive(Serialize, ToSchema)]
#[schema(as = SessionList)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionListView {
    /// The sessions, most recent first.
    sessions: Vec<SessionSummaryView>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

/// Sessions in a listing page when the request names no `limit`.
const DEFAULT_LIST_LIMIT: usize = 50;
/// The largest `limit` of a listing page.
const MAX_LIST_LIMIT: usize = 1000;

/// A store's listing cursor as `nextCursor`: base64url without padding, so that it
/// goes into a query string as it is (a store's cursor holds a session id, which may
/// hold `+`, `&`, `#` or spaces, and a client that pasted it unencoded skipped
/// sessions without a word).
fn write_cursor(cursor: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(cursor)
}

/// The store's cursor a `cursor` parameter holds, or why it holds none.
fn read_cursor(text: &str) -> Result<String, Violation> {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .filter(|cursor| !cursor.is_empty())
        .ok_or_else(|| not_a_cursor(text))
}

/// The violation of a `cursor` that is not one.
fn not_a_cursor(sent: &str) -> Violation {
    Violation::new(
        "cursor",
        ViolationCode::WrongType,
        format!("{sent:?} is not a cursor: pass the nextCursor of the previous page as it came"),
    )
}

/// `GET /v1/sessions?limit=N&cursor=C`.
#[derive(Default, utoipa::IntoParams)]
pub(crate) struct ListQuery {
    /// At most this many sessions (1 to 1000, default 50).
    limit: Option<usize>,
    /// The `nextCursor` of the previous page.
    cursor: Option<String>,
}

impl ListQuery {
    /// The parameters of a query string, or every one that is wrong: a `limit` that is
    /// not a whole number from 1 to [`MAX_LIST_LIMIT`], a cursor that is not one, a
    /// parameter given twice, one the route does not have. With them, the store's
    /// cursor the `cursor` holds.
    fn read(query: Option<&str>) -> Result<(ListQuery, Option<String>), Vec<Violation>> {
        let mut read = ListQuery::default();
        let mut store_cursor = None;
        let mut violations = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            if !seen.insert(name.clone()) {
                if matches!(name.as_ref(), "limit" | "cursor") {
                    violations.push(Violation::new(
                        name.as_ref(),
                        ViolationCode::DuplicateField,
                        format!("{name} is given twice; give it once"),
                    ));
                }
                continue;
            }
            match name.as_ref() {
                "limit" => match whole_number(value.trim()) {
                    Some(Some(limit)) if (1..=MAX_LIST_LIMIT).contains(&limit) => {
                        read.limit = Some(limit);
                    }
                    number => violations.push(Violation::new(
                        "limit",
                        // A whole number out of range (`0`, `-1`, `1001`, one of 30
                        // digits) is a number of the wrong size; anything else (`abc`,
                        // `+5`, `2.5`) is not a number at all.
                        if number.is_some() {
                            ViolationCode::InvalidNumber
                        } else {
                            ViolationCode::WrongType
                        },
                        format!(
                            "limit must be a whole number from 1 to {MAX_LIST_LIMIT}, not {value:?}"
                        ),
                    )),
                },
                "cursor" => match read_cursor(&value) {
                    Ok(cursor) => {
                        store_cursor = Some(cursor);
                        read.cursor = Some(value.into_owned());
                    }
                    Err(violation) => violations.push(violation),
                },
                other => violations.push(Violation::new(
                    other,
                    ViolationCode::UnknownField,
                    format!("{other:?} is not a parameter of this route (limit, cursor)"),
                )),
            }
        }
        if violations.is_empty() {
            Ok((read, store_cursor))
        } else {
            Err(violations)
        }
    }
}

/// `Some` when `text` is a whole number in decimal digits, with a minus sign or not:
/// `Some(Some(n))` when it fits a `usize`, `Some(None)` when it does not (negative, or
/// too large).
fn whole_number(text: &str) -> Option<Option<usize>> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(if text.starts_with('-') {
        None
    } else {
        digits.parse().ok()
    })
}

/// The `400` for a query string sent to a route that has no parameters: every one is
/// named, rather than quietly ignored (`?stream=true` on `execute` would otherwise be
/// a stream asked for and a JSON answer given).
fn no_query(uri: &axum::http::Uri, request_id: &str) -> Result<(), ApiError> {
    let Some(query) = uri.query().filter(|query| !query.is_empty()) else {
        return Ok(());
    };
    let mut seen = std::collections::HashSet::new();
    let names: Vec<String> = form_urlencoded::parse(query.as_bytes())
        .map(|(name, _)| name.into_owned())
        .filter(|name| seen.insert(name.clone()))
        .take(aptix_model::contract::limits::MAX_VIOLATIONS)
        .collect();
    if names.is_empty() {
        // `?` or `?&`: no parameter at all.
        return Ok(());
    }
    let violations = names
        .iter()
        .map(|name| {
            Violation::new(
                name.as_str(),
                ViolationCode::UnknownField,
                format!("{name:?} is not a parameter of this route, which takes none"),
            )
        })
        .collect();
    Err(unreadable("query string", violations, request_id))
}

/// `GET /v1/sessions`: one page of the stored sessions, most recent first.
#[utoipa::path(
    get,
    path = "/v1/sessions",
    tag = "sessions",
    summary = "List stored sessions",
    params(ListQuery),
    responses(
        (status = 200, description = "One page of sessions, most recent first", body = SessionListView),
        (status = 400, description = "`invalid_request`: a query string that does not read (a `limit` that is not a number from 1 to 1000, a cursor that is not one)", body = ErrorBody),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`host_not_allowed`", body = ErrorBody),
        (status = 503, description = "`store_unavailable`", body = ErrorBody),
    ),
    security((), ("bearer" = [])),
)]
pub(crate) async fn sessions(State(state): State<AppState>, request: Request<Body>) -> Response {
    let request_id = match authorized(&state, &request) {
        Ok(request_id) => request_id,
        Err(refused) => return refused.into_response(),
    };
    let (query, cursor) = match ListQuery::read(request.uri().query()) {
        Ok(read) => read,
        Err(violations) => {
            return unreadable("query string", violations, &request_id).into_response();
        }
    };
    let limit = query.limit.unwrap_or(DEFAULT_LIST_LIMIT);
    match state
        .orchestrator
        .store()
        .list_sessions(limit, cursor.as_deref())
        .await
    {
        Ok(page) => axum::Json(SessionListView {
            sessions: page
                .sessions
                .into_iter()
                .map(|summary| SessionSummaryView {
                    session_id: summary.session_id,
                    mode: summary.mode,
                    version: summary.version,
                })
                .collect(),
            next_cursor: page.next_cursor.as_deref().map(write_cursor),
        })
        .into_response(),
        // Said of the cursor as the client sent it, not as the store reads it.
        Err(OrchestratorError::InvalidCursor { .. }) => {
            let sent = query.cursor.as_deref().unwrap_or_default();
            unreadable("query string", vec![not_a_cursor(sent)], &request_id).into_response()
        }
        Err(error) => ApiError::from_orchestrator(error, &request_id).into_response(),
    }
}

/// `DELETE /v1/sessions/{id}`: forgets a session and its stored turns.
#[utoipa::path(
    delete,
    path = "/v1/sessions/{id}",
    tag = "sessions",
    summary = "Delete a stored session",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 204, description = "Deleted, with its stored turns"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`host_not_allowed`", body = ErrorBody),
        (status = 400, description = "`invalid_request`: an id that does not read (not UTF-8 once percent-decoded)", body = ErrorBody),
        (status = 404, description = "`unknown_session`", body = ErrorBody),
        (status = 409, description = "`session_busy`: a turn is running on it", body = ErrorBody),
        (status = 503, description = "`store_unavailable`", body = ErrorBody),
    ),
    security((), ("bearer" = [])),
)]
pub(crate) async fn delete_session(
    State(state): State<AppState>,
    id: Result<Path<String>, PathRejection>,
    request: Request<Body>,
) -> Response {
    let request_id = match authorized(&state, &request) {
        Ok(request_id) => request_id,
        Err(refused) => return refused.into_response(),
    };
    if let Err(error) = no_query(request.uri(), &request_id) {
        return error.into_response();
    }
    let id = match session_id(id, &request_id) {
        Ok(id) => id,
        Err(refused) => return refused.into_response(),
    };
    match aptix_orchestrator::delete_session(state.orchestrator.store().as_ref(), &id).await {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => unknown_session(&id, &request_id).into_response(),
        Err(error) => ApiError::from_orchestrator(error, &request_id).into_response(),
    }
}

/// `GET /healthz`: the process is up.
#[utoipa::path(
    get,
    path = "/healthz",
    tag = "operations",
    summary = "The process is up",
    responses((status = 200, description = "`{\"status\": \"ok\"}`", body = StatusView)),
)]
pub(crate) async fn healthz() -> Response {
    axum::Json(StatusView { status: "ok" }).into_response()
}

/// `GET /readyz`: the session store answers.
#[utoipa::path(
    get,
    path = "/readyz",
    tag = "operations",
    summary = "The session store answers",
    responses(
        (status = 200, description = "`{\"status\": \"ready\"}`", body = StatusView),
        (status = 503, description = "`store_unavailable`", body = ErrorBody),
    ),
)]
pub(crate) async fn readyz(State(state): State<AppState>, request: Request) -> Response {
    let request_id = id_of(&request);
    // A probe waits seconds at most: a load balancer asks again, and a store that takes
    // longer than this to read one row is not ready for turns.
    let probe = tokio::time::timeout(
        READY_DEADLINE,
        state.orchestrator.store().load("aptix-readyz-probe"),
    )
    .await;
    let reason = match probe {
        Ok(Ok(_)) => return axum::Json(StatusView { status: "ready" }).into_response(),
        Ok(Err(error)) => {
            tracing::warn!(%request_id, cause = %aptix_model::error_chain(&error), "not ready");
            // The probe is open to anyone: the database's own words stay in the log.
            match crate::error::io_cause(&error) {
                Some(cause) => format!("{error}: {cause}"),
                None => format!("{error} (the service's log says why, request {request_id})"),
            }
        }
        Err(_) => {
            tracing::warn!(%request_id, "not ready: the session store did not answer in time");
            format!("no answer within {} s", READY_DEADLINE.as_secs())
        }
    };
    ApiError::new(
        ErrorCode::StoreUnavailable,
        format!("the session store does not answer: {reason}"),
        &request_id,
    )
    .into_response()
}

/// How long `/readyz` waits for the session store.
const READY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

/// `GET /metrics`: Prometheus (OpenMetrics) text; behind the bearer token when tokens are
/// configured.
#[utoipa::path(
    get,
    path = "/metrics",
    tag = "operations",
    summary = "Prometheus metrics",
    description = "Requests by route template and status, turn latency, turns in flight, tokens by kind, provider retries by kind, errors by code, provider time and orchestration overhead (docs/serve.md lists every metric).",
    responses(
        (status = 200, description = "OpenMetrics text", body = String, content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8"),
        (status = 401, description = "`unauthorized`", body = ErrorBody),
        (status = 403, description = "`host_not_allowed`", body = ErrorBody),
    ),
    security((), ("bearer" = [])),
)]
pub(crate) async fn metrics_text(State(state): State<AppState>, request: Request) -> Response {
    if let Err(refused) = authorized(&state, &request) {
        return refused.into_response();
    }
    let text = Metrics::encode(&state.config.metrics);
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response()
}

/// `GET /openapi.json`: this service's OpenAPI document (open, like the health routes).
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "operations",
    summary = "This document",
    responses((status = 200, description = "The OpenAPI 3.1 document", body = Object, content_type = "application/json")),
)]
pub(crate) async fn openapi_json() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::openapi_json(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_a_name_and_a_port_or_nothing() {
        assert_eq!(host_name("localhost:8787"), Some("localhost"));
        assert_eq!(host_name("[::1]:8787"), Some("::1"));
        assert_eq!(host_name("[::1]"), Some("::1"));
        assert_eq!(host_name(" example.com "), Some("example.com"));
        assert_eq!(host_name("localhost:80@evil.com"), None);
        assert_eq!(host_name("[::1]x"), None);
        assert_eq!(host_name("[::1"), None);
    }

    #[test]
    fn a_stream_is_what_accept_prefers_or_what_the_body_asks_and_accept_admits() {
        for (accept, body_asks, streamed) in [
            (None, false, false),
            (None, true, true),
            (Some("text/event-stream"), false, true),
            (Some("TEXT/EVENT-STREAM; charset=utf-8"), false, true),
            (Some("application/json"), false, false),
            (Some("application/json"), true, false),
            (
                Some("application/json, text/event-stream;q=0"),
                false,
                false,
            ),
            (Some("application/json, text/event-stream;q=0"), true, false),
            (
                Some("application/json;q=0.9, text/event-stream"),
                false,
                true,
            ),
            (
                Some("application/json, text/event-stream;q=0.5"),
                false,
                false,
            ),
            (
                Some("application/json, text/event-stream;q=0.5"),
                true,
                true,
            ),
            (Some("*/*"), false, false),
            (Some("*/*"), true, true),
            (Some("text/*;q=0"), true, false),
            // A weight that is not one (out of 0..=1, or not a number) states nothing
            // acceptable.
            (
                Some("text/event-stream;q=abc, application/json"),
                false,
                false,
            ),
            (Some("text/event-stream;q=2"), false, false),
            (Some("text/event-stream;q=2"), true, false),
            (Some("text/event-stream;q=1.0"), false, true),
        ] {
            assert_eq!(
                wants_stream(accept, body_asks),
                streamed,
                "{accept:?} {body_asks}"
            );
        }
    }
}

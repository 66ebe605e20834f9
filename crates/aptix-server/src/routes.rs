//! The router and its handlers: HTTP in, orchestrator calls, HTTP out.

use std::convert::Infallible;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aptix_mapping::StreamDelta;
use aptix_model::contract::{AgentExecuteRequest, AgentExecuteResponse};
use aptix_orchestrator::{Orchestrator, OrchestratorError};
use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::UnboundedReceiverStream;
use tracing::Instrument as _;

use crate::config::ServerConfig;
use crate::error::{ApiError, ErrorCode, ServerError};
use crate::metrics::{self, Metrics};

const REQUEST_ID: &str = "x-request-id";

#[derive(Clone)]
struct AppState {
    orchestrator: Arc<Orchestrator>,
    config: Arc<ServerConfig>,
    turns: Arc<Semaphore>,
}

/// The request id of the request being handled (taken from `x-request-id` or made).
#[derive(Debug, Clone)]
struct RequestId(String);

/// The service's routes over `orchestrator`. Sessions are read from the orchestrator's
/// own store, so a session started by `aptix ask` is continued here.
pub fn router(orchestrator: Arc<Orchestrator>, config: ServerConfig) -> Router {
    let turns = Arc::new(Semaphore::new(config.max_concurrent_turns.max(1)));
    let state = AppState {
        orchestrator,
        config: Arc::new(config),
        turns,
    };
    Router::new()
        .route("/v1/agent/execute", post(execute))
        .route("/v1/sessions/{id}", get(session))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .layer(from_fn_with_state(state.clone(), count_request))
        .with_state(state)
        .layer(from_fn(request_id))
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, lets the
/// requests in flight finish, and returns.
///
/// # Errors
///
/// [`ServerError::Io`] when serving fails.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|source| ServerError::Io {
            operation: "serve",
            source,
        })
}

/// Takes the caller's `x-request-id` (when it is a short printable value) or makes one,
/// hands it to the handler and puts it on the response.
async fn request_id(mut request: Request, next: Next) -> Response {
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
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %request.method(),
        path = %request.uri().path()
    );
    let mut response = next.run(request).instrument(span).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}

/// Counts the request by route template (never the concrete path, which may hold a
/// session id), method and status, and an error response by its code.
async fn count_request(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let method = request.method().clone();
    let response = next.run(request).await;
    let metrics = &state.config.metrics;
    metrics.request(&route, method.as_str(), response.status().as_u16());
    if let Some(code) = response.extensions().get::<ErrorCode>() {
        metrics.response_error(*code);
    }
    response
}

fn new_request_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    format!("req_{:016x}", hasher.finish())
}

fn id_of(request: &Request) -> String {
    request
        .extensions()
        .get::<RequestId>()
        .map_or_else(new_request_id, |id| id.0.clone())
}

/// `Authorization: Bearer <token>` when tokens are configured.
fn authorize(state: &AppState, headers: &HeaderMap, request_id: &str) -> Result<(), ApiError> {
    if state.config.tokens.is_empty() {
        return Ok(());
    }
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
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
async fn execute(State(state): State<AppState>, request: Request) -> Response {
    let request_id = id_of(&request);
    match prepare_turn(&state, request, &request_id).await {
        Ok((turn, streamed)) => {
            if streamed {
                stream_turn(state, turn, request_id).into_response()
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
    authorize(state, &parts.headers, request_id)?;
    let is_json = parts
        .headers
        .get(header::CONTENT_TYPE)
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
    let limit = state.config.body_limit;
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<usize>().ok());
    if declared.is_some_and(|length| length > limit) {
        return Err(too_large(limit, request_id));
    }
    let bytes = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| too_large(limit, request_id))?;
    let turn_request = AgentExecuteRequest::from_json_slice(&bytes).map_err(|rejection| {
        ApiError::from_orchestrator(OrchestratorError::InvalidRequest(rejection), request_id)
    })?;
    let permit = Arc::clone(&state.turns).try_acquire_owned().map_err(|_| {
        ApiError::new(
            ErrorCode::OverCapacity,
            format!(
                "{} turns are already running; retry shortly",
                state.config.max_concurrent_turns
            ),
            request_id,
        )
    })?;
    let streamed = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    Ok((
        Turn {
            request: turn_request,
            permit,
        },
        streamed,
    ))
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
    request: AgentExecuteRequest,
    permit: tokio::sync::OwnedSemaphorePermit,
}

/// What a turn's task ends with.
type Outcome = Result<AgentExecuteResponse, ApiError>;

/// Runs the turn in its own task, so that it completes (and is stored) even when the
/// client goes away; deltas go to `deltas` when given.
fn spawn_turn(
    state: &AppState,
    turn: Turn,
    request_id: String,
    deltas: Option<mpsc::UnboundedSender<StreamDelta>>,
) -> tokio::task::JoinHandle<Outcome> {
    let orchestrator = Arc::clone(&state.orchestrator);
    let deadline = state.config.turn_timeout;
    let metrics = state.config.metrics.clone();
    tokio::spawn(async move {
        let Turn { request, permit } = turn;
        let run = async {
            match deltas {
                Some(sender) => {
                    let mut sink = |delta: &StreamDelta| {
                        // A client that left is not an error: the turn goes on.
                        let _ = sender.send(delta.clone());
                    };
                    orchestrator.execute_streaming(request, &mut sink).await
                }
                None => orchestrator.execute(request).await,
            }
        };
        let outcome = match metrics.turn(tokio::time::timeout(deadline, run)).await {
            Ok(Ok(envelope)) => {
                metrics.envelope(&envelope);
                Ok(envelope)
            }
            Ok(Err(error)) => Err(ApiError::from_orchestrator(error, &request_id)),
            Err(_) => Err(ApiError::new(
                ErrorCode::TurnTimeout,
                format!(
                    "the turn ran past the deadline of {} s and was stopped",
                    deadline.as_secs()
                ),
                &request_id,
            )),
        };
        drop(permit);
        outcome
    })
}

async fn json_turn(state: AppState, turn: Turn, request_id: String) -> Response {
    match spawn_turn(&state, turn, request_id.clone(), None).await {
        Ok(Ok(envelope)) => (StatusCode::OK, axum::Json(envelope)).into_response(),
        Ok(Err(error)) => error.into_response(),
        Err(join) => ApiError::new(
            ErrorCode::Internal,
            format!("the turn's task failed: {join}"),
            &request_id,
        )
        .into_response(),
    }
}

fn stream_turn(
    state: AppState,
    turn: Turn,
    request_id: String,
) -> Sse<impl tokio_stream::Stream<Item = Result<Event, Infallible>>> {
    let (sender, receiver) = mpsc::unbounded_channel();
    let handle = spawn_turn(&state, turn, request_id.clone(), Some(sender));
    let metrics = state.config.metrics.clone();
    let deltas = UnboundedReceiverStream::new(receiver).map(|delta| {
        Ok(Event::default()
            .event("delta")
            .data(serde_json::to_string(&delta).unwrap_or_default()))
    });
    // The final event comes after the last delta: the sender is dropped when the turn's
    // task ends, which ends `deltas`, and then the task's outcome is read.
    let last = futures_util::stream::once(async move {
        let event = match handle.await {
            Ok(Ok(envelope)) => Event::default()
                .event("envelope")
                .data(serde_json::to_string(&envelope).unwrap_or_default()),
            Ok(Err(error)) => {
                metrics.response_error(error.code);
                Event::default().event("error").data(error.json())
            }
            Err(join) => {
                metrics.response_error(ErrorCode::Internal);
                Event::default().event("error").data(
                    ApiError::new(
                        ErrorCode::Internal,
                        format!("the turn's task failed: {join}"),
                        &request_id,
                    )
                    .json(),
                )
            }
        };
        Ok(event)
    });
    Sse::new(deltas.chain(last)).keep_alive(
        KeepAlive::new()
            .interval(state.config.heartbeat)
            .text("heartbeat"),
    )
}

/// `GET /v1/sessions/{id}`: the stored session (mode, model, pending client calls,
/// history length, version).
async fn session(
    State(state): State<AppState>,
    Path(id): Path<String>,
    request: Request<Body>,
) -> Response {
    let request_id = id_of(&request);
    if let Err(error) = authorize(&state, request.headers(), &request_id) {
        return error.into_response();
    }
    match state.orchestrator.store().load(&id).await {
        Ok(Some(versioned)) => {
            let session = versioned.value;
            let pending: Vec<_> = session
                .pending
                .as_ref()
                .map(|pending| {
                    pending
                        .client_calls
                        .iter()
                        .map(|call| {
                            json!({
                                "turnId": pending.turn_id,
                                "callId": call.call_id,
                                "name": call.name,
                                "argumentsJson": call.arguments_json,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            axum::Json(json!({
                "sessionId": session.session_id,
                "mode": session.mode,
                "model": session.model.model,
                "lastResponseId": session.last_response_id,
                "pendingToolCalls": pending,
                "historyItems": session.history.len(),
                "version": versioned.version,
            }))
            .into_response()
        }
        Ok(None) => ApiError::new(
            ErrorCode::UnknownSession,
            format!("there is no session {id}"),
            &request_id,
        )
        .into_response(),
        Err(error) => ApiError::from_orchestrator(error, &request_id).into_response(),
    }
}

/// `GET /healthz`: the process is up.
async fn healthz() -> Response {
    axum::Json(json!({"status": "ok"})).into_response()
}

/// `GET /readyz`: the session store answers.
async fn readyz(State(state): State<AppState>, request: Request) -> Response {
    let request_id = id_of(&request);
    match state.orchestrator.store().load("aptix-readyz-probe").await {
        Ok(_) => axum::Json(json!({"status": "ready"})).into_response(),
        Err(error) => ApiError::new(
            ErrorCode::StoreUnavailable,
            format!("the session store does not answer: {error}"),
            &request_id,
        )
        .into_response(),
    }
}

/// `GET /metrics`: Prometheus (OpenMetrics) text; behind the bearer token when tokens are
/// configured.
async fn metrics_text(State(state): State<AppState>, request: Request) -> Response {
    let request_id = id_of(&request);
    if let Err(error) = authorize(&state, request.headers(), &request_id) {
        return error.into_response();
    }
    let text = Metrics::encode(&state.config.metrics);
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response()
}

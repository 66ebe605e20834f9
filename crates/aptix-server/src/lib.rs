//! Aptix as an HTTP service: the orchestrator behind an embeddable `axum` router, for
//! editors, scripts and teams.
//!
//! `POST /v1/agent/execute` takes an AGN-034 request and answers with the AGN-004
//! envelope: as JSON (`Accept: application/json`, the default) or as server-sent events
//! while the turn runs (`Accept: text/event-stream`: each
//! [`StreamDelta`](aptix_mapping::StreamDelta) as `event: retry` for a retry notice,
//! `event: tool` for a server tool starting and finishing, `event: delta` for the rest,
//! then exactly one `event: envelope` whose
//! data is what the JSON path returns for the same replies, or one `event: error`;
//! comment heartbeats keep idle proxies from cutting a long turn). `GET /v1/sessions/{id}`
//! shows a stored session; `GET /healthz` and `GET /readyz` are for orchestrators of
//! processes; `GET /metrics` serves Prometheus (OpenMetrics) text from [`Metrics`], with
//! provider time and orchestration overhead when the provider is wrapped in
//! [`TimedProvider`]; `GET /openapi.json` serves the OpenAPI document
//! ([`openapi_json`], committed as `docs/openapi.json`).
//!
//! Handlers translate HTTP to orchestrator calls and back: validation stays in
//! `aptix-model`, the turn in `aptix-orchestrator`. Every error has one JSON shape,
//! `{"error": {"code", "message", "requestId", "violations"}}` (`violations` on `400`
//! only), with one stable snake_case code per cause ([`ErrorCode`]).
//!
//! # Decisions
//!
//! - **A turn outlives its connection.** A client that disconnects mid-turn does not
//!   cancel it: it moves into a task of its own, completes and is stored, so retrying the
//!   same `sessionId` + `turnId` returns the stored envelope without a second model call
//!   (or `409` while it still runs). Cancelling instead would leave the provider's work
//!   wasted and the session's lease to expire; finishing keeps the session consistent
//!   and the retry free.
//! - **Bearer tokens** are compared in constant time and never logged; with tokens
//!   configured every `/v1/*` route and `/metrics` require one, while `/healthz` and
//!   `/readyz` stay open. Without tokens, those routes answer only requests addressed to
//!   a loopback host (`403 host_not_allowed` otherwise), so a web page cannot drive a
//!   local service through DNS rebinding
//!   ([`ServerConfig::loopback_hosts_only`](ServerConfig)).
//! - **Unknown paths and methods** get the same JSON shape (`404 not_found`,
//!   `405 method_not_allowed` with `Allow`), not an empty body.
//! - **Limits**: a body limit (`413`), a limit on turns in flight (`503` with
//!   `Retry-After`), a per-turn deadline (`504`), a body read timeout (`408`), and, in
//!   [`serve`], a header read timeout that disconnects slow or idle clients.
//!
//! **Architecture invariant:** no seed rule is implemented here; this crate only maps
//! HTTP to the orchestrator's API and its errors to statuses.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//!
//! use aptix_client::FakeProvider;
//! use aptix_orchestrator::{InMemorySessionStore, Orchestrator};
//! use aptix_server::{ServerConfig, router};
//!
//! let orchestrator = Orchestrator::builder(
//!     Arc::new(FakeProvider::new()),
//!     Arc::new(InMemorySessionStore::new()),
//! )
//! .build()?;
//! let app = router(Arc::new(orchestrator), ServerConfig::default());
//! // `aptix_server::serve(listener, app, header_read_timeout, shutdown)` serves it with
//! // a header read timeout and graceful shutdown; any axum server can serve it too.
//! # drop(app);
//! # Ok::<(), aptix_orchestrator::OrchestratorError>(())
//! ```
#![cfg_attr(
    not(test),
    warn(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod config;
mod error;
mod metrics;
mod openapi;
mod routes;

pub use config::{SHORT_TOKEN, ServerConfig, StopTurns, Tokens};
pub use error::{ErrorCode, ServerError};
pub use metrics::{Metrics, TimedProvider};
pub use openapi::openapi_json;
pub use routes::{router, serve};

/// A stored session as JSON, exactly as `GET /v1/sessions/{id}` answers it (mode, model,
/// pending client tool calls, history length, version, turns and their usage, the most
/// recent turns), for a front end that shows sessions without serving them; `None`
/// when `store` holds no session `id`.
pub async fn session_json(
    store: &dyn aptix_orchestrator::SessionStore,
    id: &str,
) -> Result<Option<serde_json::Value>, aptix_orchestrator::OrchestratorError> {
    let Some(view) = routes::session_view(store, id).await? else {
        return Ok(None);
    };
    serde_json::to_value(view).map(Some).map_err(|source| {
        aptix_orchestrator::OrchestratorError::CorruptState {
            session_id: id.to_owned(),
            source,
        }
    })
}

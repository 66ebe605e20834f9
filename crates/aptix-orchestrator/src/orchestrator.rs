//! [`Orchestrator`]: one turn end to end (DESIGN.md), through the provider, retriever,
//! store and tool traits.
//!
//! A turn: answer a repeated request from the store; take the session (busy if another
//! request has it); load or start the session; on a user turn retrieve context and build
//! the initial or continuing request; on a tool continuation check the results against
//! the pending calls; call the model; run server tools and call again, up to the
//! configured bound; end with the model's answer or with client tool calls left
//! pending; commit the session and the envelope in one transaction.
//!
//! Provider and mapping failures come back as `kind: "error"` envelopes and change
//! nothing stored, so the client can retry the same turn. Only misuse of the API is an
//! `Err`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use aptix_client::ResponsesProvider;
use aptix_mapping::StreamDelta;
use aptix_model::contract::{
    AgentExecuteRequest, AgentExecuteResponse, RequestRejection, ValidatedRequest,
};
use aptix_model::wire::CreateResponseRequest;
use aptix_rag::Retriever;

use crate::OrchestratorError;
use crate::config::OrchestratorConfig;
use crate::inputs::ReferenceReader;
use crate::session::{Scenario, TurnKey, is_reused, request_digest};
use crate::store::SessionStore;
use crate::tools::{ClientTool, ServerTool};

/// A receiver of streamed deltas: text as it arrives, tool calls as they start.
pub type DeltaSink<'a> = &'a mut (dyn FnMut(&StreamDelta) + Send);

/// Runs turns. Cheap to share behind an `Arc`; every turn is independent.
pub struct Orchestrator {
    pub(crate) provider: Arc<dyn ResponsesProvider>,
    pub(crate) retriever: Option<Arc<dyn Retriever>>,
    pub(crate) references: Option<Arc<dyn ReferenceReader>>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) server_tools: Vec<Arc<dyn ServerTool>>,
    pub(crate) client_tools: Vec<ClientTool>,
    pub(crate) config: OrchestratorConfig,
    /// This instance's lease holder name: unique per process and instance, so that a
    /// turn dropped mid-flight leaves a lease this instance can take again.
    pub(crate) instance: String,
    /// Sessions with a turn running in this instance (or a lease being given back
    /// in the background).
    active: Arc<Mutex<HashSet<String>>>,
    /// Commits of dropped turns still running (see `commit.rs`).
    pub(crate) commits: Arc<crate::commit::InFlight>,
    /// Background responses of streamed model calls in flight, for a dropped turn's
    /// to be cancelled (see `recovery.rs`).
    pub(crate) running: crate::recovery::Running,
    /// The provider answered its compaction route with 404, 405 or 501: compaction
    /// writes a summary instead, without asking again.
    pub(crate) compact_endpoint_missing: std::sync::atomic::AtomicBool,
    /// Context windows, by model, that overflow errors showed smaller than configured
    /// (see `compaction.rs`).
    pub(crate) learned_windows: Mutex<std::collections::HashMap<String, u64>>,
}

impl std::fmt::Debug for Orchestrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orchestrator")
            .field("capabilities", &self.provider.capabilities())
            .field("retriever", &self.retriever.is_some())
            .field("references", &self.references.is_some())
            .field(
                "server_tools",
                &self
                    .server_tools
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>(),
            )
            .field(
                "client_tools",
                &self
                    .client_tools
                    .iter()
                    .map(|t| t.definition.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Configures an [`Orchestrator`].
pub struct OrchestratorBuilder {
    provider: Arc<dyn ResponsesProvider>,
    store: Arc<dyn SessionStore>,
    retriever: Option<Arc<dyn Retriever>>,
    references: Option<Arc<dyn ReferenceReader>>,
    server_tools: Vec<Arc<dyn ServerTool>>,
    client_tools: Vec<ClientTool>,
    config: OrchestratorConfig,
}

impl OrchestratorBuilder {
    /// Retrieves `[CONTEXT]` chunks for user turns with this retriever.
    pub fn retriever(mut self, retriever: Arc<dyn Retriever>) -> Self {
        self.retriever = Some(retriever);
        self
    }

    /// Reads the files and images a user turn names by reference (a path without
    /// content) with this reader; without one, each reference is a warning.
    pub fn reference_reader(mut self, reader: Arc<dyn ReferenceReader>) -> Self {
        self.references = Some(reader);
        self
    }

    /// Adds a tool the orchestrator runs itself.
    pub fn server_tool(mut self, tool: Arc<dyn ServerTool>) -> Self {
        self.server_tools.push(tool);
        self
    }

    /// Adds a tool whose calls go back to the client.
    pub fn client_tool(mut self, tool: ClientTool) -> Self {
        self.client_tools.push(tool);
        self
    }

    /// Replaces the configuration.
    pub fn config(mut self, config: OrchestratorConfig) -> Self {
        self.config = config;
        self
    }

    /// Checks the configuration and builds the orchestrator.
    pub fn build(self) -> Result<Orchestrator, OrchestratorError> {
        if self.config.mode(&self.config.default_mode).is_none() {
            return Err(OrchestratorError::Config(format!(
                "the default mode {:?} is not among the configured modes",
                self.config.default_mode
            )));
        }
        if self.config.max_model_calls_per_turn == 0 {
            return Err(OrchestratorError::Config(
                "max_model_calls_per_turn must be at least 1".into(),
            ));
        }
        let threshold = self.config.compact_threshold;
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(OrchestratorError::Config(format!(
                "compact_threshold must be above 0 and at most 1, not {threshold}"
            )));
        }
        if self.config.lease_ttl.is_zero() {
            return Err(OrchestratorError::Config(
                "lease_ttl must be longer than zero".into(),
            ));
        }
        if self.config.context_window == Some(0) {
            return Err(OrchestratorError::Config(
                "context_window must be at least 1 token".into(),
            ));
        }
        // What every request would be refused for, said once here rather than by the
        // first turn.
        let model = &self.config.model;
        aptix_request::check_model_settings(&aptix_request::ModelParams {
            model: Some(&model.model),
            temperature: model.temperature,
            top_p: None,
            max_output_tokens: model.max_output_tokens,
            reasoning_effort: model.reasoning_effort.as_deref(),
        })
        .map_err(|error| OrchestratorError::Config(format!("the model settings: {error}")))?;
        let mut names = HashSet::new();
        let all = self
            .server_tools
            .iter()
            .map(|tool| tool.name().to_owned())
            .chain(
                self.client_tools
                    .iter()
                    .map(|tool| tool.definition.name.clone()),
            );
        for name in all {
            if !aptix_request::is_valid_name(&name) {
                return Err(OrchestratorError::Config(format!(
                    "the tool name {name:?} is not one the API takes: 1 to 64 ASCII letters, digits, `_` or `-`"
                )));
            }
            if !names.insert(name.clone()) {
                return Err(OrchestratorError::Config(format!(
                    "the tool {name:?} is configured twice"
                )));
            }
        }
        Ok(Orchestrator {
            provider: self.provider,
            retriever: self.retriever,
            references: self.references,
            store: self.store,
            server_tools: self.server_tools,
            client_tools: self.client_tools,
            config: self.config,
            instance: instance_name(),
            active: Arc::new(Mutex::new(HashSet::new())),
            commits: Arc::default(),
            running: crate::recovery::Running::default(),
            compact_endpoint_missing: std::sync::atomic::AtomicBool::new(false),
            learned_windows: Mutex::default(),
        })
    }
}

/// The request, validated unless it already is. AGN-034's one home is
/// `ValidatedRequest::new`: a request built in code is checked by the same `validate` as
/// a decoded body, over its canonical encoding.
fn checked<R>(request: R) -> Result<ValidatedRequest, OrchestratorError>
where
    R: TryInto<ValidatedRequest>,
    R::Error: Into<RequestRejection>,
{
    request
        .try_into()
        .map_err(|rejection| OrchestratorError::InvalidRequest(rejection.into()))
}

/// This instance's lease holder id: host, pid and process start time, so that another
/// process can tell when this one is gone.
fn instance_name() -> String {
    crate::lease::new_holder_id()
}

/// Marks a session as running in this instance until dropped, so a turn dropped
/// mid-flight frees it.
struct ActiveTurn<'a> {
    active: &'a Mutex<HashSet<String>>,
    session_id: String,
}

impl Drop for ActiveTurn<'_> {
    fn drop(&mut self) {
        self.active
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(&self.session_id);
    }
}

impl Orchestrator {
    /// Starts configuring an orchestrator around a provider and a session store.
    pub fn builder(
        provider: Arc<dyn ResponsesProvider>,
        store: Arc<dyn SessionStore>,
    ) -> OrchestratorBuilder {
        OrchestratorBuilder {
            provider,
            store,
            retriever: None,
            references: None,
            server_tools: Vec::new(),
            client_tools: Vec::new(),
            config: OrchestratorConfig::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &OrchestratorConfig {
        &self.config
    }

    /// The session store turns are kept in (a service reads sessions from it).
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// Validates an AGN-034 request given as JSON bytes, then runs it.
    pub async fn execute_json(
        &self,
        body: &[u8],
    ) -> Result<AgentExecuteResponse, OrchestratorError> {
        // Decoding is validation: the request is not checked a second time.
        let request =
            ValidatedRequest::from_json_slice(body).map_err(OrchestratorError::InvalidRequest)?;
        self.run(request, None).await
    }

    /// Validates the request (AGN-034, every violation reported), then runs one turn
    /// with non-streaming provider calls.
    ///
    /// A request built in code is checked exactly as a decoded one
    /// ([`ValidatedRequest::new`]): the typed fields hold their own rules, but the rules
    /// between fields (a user turn has some input, tool call ids are unique, counts and
    /// sizes) are `validate`'s. A [`ValidatedRequest`] (from a service that decoded the
    /// body itself, to answer `400` before running anything) is not checked again.
    pub async fn execute<R>(&self, request: R) -> Result<AgentExecuteResponse, OrchestratorError>
    where
        R: TryInto<ValidatedRequest>,
        R::Error: Into<RequestRejection>,
    {
        self.run(checked(request)?, None).await
    }

    /// Validates the request like [`execute`](Self::execute), then runs one turn with
    /// streaming provider calls, passing each delta to `sink` as it arrives, and returns
    /// the final envelope (the same one `execute` would return for the same replies).
    pub async fn execute_streaming<R>(
        &self,
        request: R,
        sink: DeltaSink<'_>,
    ) -> Result<AgentExecuteResponse, OrchestratorError>
    where
        R: TryInto<ValidatedRequest>,
        R::Error: Into<RequestRejection>,
    {
        self.run(checked(request)?, Some(sink)).await
    }

    /// The exact `/v1/responses` body the turn's first model call would send, without
    /// sending it, taking the session or changing anything stored. The request is
    /// validated like [`execute`](Self::execute)'s.
    pub async fn dry_run(
        &self,
        request: &AgentExecuteRequest,
    ) -> Result<CreateResponseRequest, OrchestratorError> {
        self.dry_run_warned(request).await.map(|(body, _)| body)
    }

    /// [`dry_run`](Self::dry_run), with the warnings the turn's envelope would carry
    /// about that body: context chunks left out of the token budget, a scope nothing
    /// is in, a retrieval that failed. A dry run is how a user checks what will be
    /// sent, and these say what will not be.
    pub async fn dry_run_warned(
        &self,
        request: &AgentExecuteRequest,
    ) -> Result<(CreateResponseRequest, Vec<String>), OrchestratorError> {
        let request = checked(request.clone())?;
        let loaded = self.store.load(request.session_id().as_str()).await?;
        let mut state = match loaded {
            Some(versioned) => versioned.value,
            None if request.is_tool_continuation() => {
                return Err(OrchestratorError::UnknownSession {
                    session_id: request.session_id().as_str().to_owned(),
                });
            }
            None => self.new_session(request.session_id().as_str()),
        };
        let prepared = self.prepare(&request, &mut state).await?;
        Ok((prepared.body, prepared.warnings))
    }

    async fn run(
        &self,
        request: ValidatedRequest,
        sink: Option<DeltaSink<'_>>,
    ) -> Result<AgentExecuteResponse, OrchestratorError> {
        let key = TurnKey::of(&request);
        let asked = request_digest(&request);
        let session_id = key.session_id.clone();
        // A dropped turn's commit still running on this session is waited for: this
        // turn is then answered from the store if it is that turn's retry, and does not
        // run on a session about to change under it.
        self.commits.settled(&session_id).await;
        if let Some(envelope) = self.answered(&key, asked.as_deref()).await? {
            tracing::debug!(session = %session_id, turn = %key.turn_id, "answered from the store");
            return Ok(envelope);
        }
        let _active = match self.enter(&session_id) {
            Ok(active) => active,
            Err(busy) => return Err(self.with_lease_expiry(busy, &session_id).await),
        };
        self.take_lease(&session_id).await?;
        let result = self
            // The turn's state machine is large (~18 KB: the provider call, the stream
            // fold, the tool loop, compaction): boxed once here, so that the futures
            // wrapping it (`execute`, a caller's timeout, a spawned task) stay small and
            // are not copied whole at each wrapping.
            .holding_lease(
                &session_id,
                Box::pin(self.run_leased(&request, &key, asked, sink)),
            )
            .await;
        if let Err(error) = self.store.release_lease(&session_id, &self.instance).await {
            // The turn's outcome matters more; the lease is given back later.
            tracing::warn!(session = %session_id, %error, "could not release the session lease; trying again in the background");
            self.release_later(session_id);
        }
        result
    }

    /// The envelope stored for `request`'s turn when it ran already: what a retry of it
    /// gets from [`execute`](Self::execute) without a model call. `None` when the turn
    /// has not run (or ran, failed and was not stored). A different request under the
    /// key of a stored turn is refused ([`OrchestratorError::TurnReused`]).
    pub async fn stored_answer(
        &self,
        request: &AgentExecuteRequest,
    ) -> Result<Option<AgentExecuteResponse>, OrchestratorError> {
        self.answered(&TurnKey::of(request), request_digest(request).as_deref())
            .await
    }

    /// [`stored_answer`](Self::stored_answer) for a request already keyed and digested.
    pub(crate) async fn answered(
        &self,
        key: &TurnKey,
        asked: Option<&str>,
    ) -> Result<Option<AgentExecuteResponse>, OrchestratorError> {
        match self.store.stored_turn(key).await? {
            Some(stored) if is_reused(stored.request_digest.as_deref(), asked) => {
                match key.scenario {
                    // A turn whose tool results make the model call client tools again
                    // is continued again under its id: other results are the next
                    // round, which the pending calls check (a stale round's results are
                    // a mismatch there, not another round's answer).
                    Scenario::ToolContinuation => Ok(None),
                    Scenario::UserTurn => Err(OrchestratorError::TurnReused {
                        session_id: key.session_id.clone(),
                        turn_id: key.turn_id.clone(),
                    }),
                }
            }
            Some(stored) => Ok(Some(stored.envelope)),
            None => Ok(None),
        }
    }

    /// The configured lease TTL, at most [`LONGEST_LEASE`](crate::lease::LONGEST_LEASE).
    fn lease_ttl(&self) -> std::time::Duration {
        self.config.lease_ttl.min(crate::lease::LONGEST_LEASE)
    }

    /// Gives a lease back in the background, for a release that failed (the store was
    /// away for a moment): tried again after 1, 2, 4 ... seconds until it succeeds or the
    /// lease has expired anyway. Otherwise the session stayed busy on every replica for
    /// the rest of its TTL (5 minutes by default) after a store outage of seconds.
    fn release_later(&self, session_id: String) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = Arc::clone(&self.store);
        let holder = self.instance.clone();
        let active = Arc::clone(&self.active);
        let now = tokio::time::Instant::now();
        let expires = now + self.lease_ttl();
        runtime.spawn(async move {
            let mut wait = std::time::Duration::from_secs(1);
            loop {
                let next = tokio::time::Instant::now() + wait;
                if next >= expires {
                    return;
                }
                tokio::time::sleep_until(next).await;
                // Every turn of this instance holds the lease under one holder name: a
                // turn started on the session since holds it now, and gives it back
                // itself. Marked as running while the release is on its way, so none
                // starts in between and has its lease taken away.
                let claimed = active
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .insert(session_id.clone());
                if !claimed {
                    return;
                }
                let released = store.release_lease(&session_id, &holder).await;
                active
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .remove(&session_id);
                match released {
                    Ok(()) => {
                        tracing::info!(session = %session_id, "session lease released");
                        return;
                    }
                    Err(error) => {
                        tracing::debug!(session = %session_id, %error, "the session lease could not be released yet");
                    }
                }
                wait = (wait * 2).min(std::time::Duration::from_secs(30));
            }
        });
    }

    /// Why a turn on `session_id` could not start now: the
    /// [`SessionBusy`](OrchestratorError::SessionBusy) a turn would end with (who holds
    /// the session, until when), when a live lease holds it; `None` when it is free (or
    /// the store does not say). For a caller that must refuse a turn before running it
    /// (a service at capacity) and should say it is the session, not the service, that
    /// is busy.
    pub async fn session_busy(&self, session_id: &str) -> Option<OrchestratorError> {
        let lease = self.store.lease(session_id).await.ok().flatten()?;
        (!lease.expires_in.is_zero()).then(|| crate::lease::busy(session_id, Some(lease)))
    }

    /// Gives back this instance's lease on a session, for a caller that dropped a
    /// turn's future (Ctrl-C, SIGTERM): a dropped turn cannot release it itself, and
    /// another process would otherwise wait for the lease to expire. A background
    /// response the dropped turn was streaming (`OrchestratorConfig::background`) is
    /// cancelled on the server first. Does nothing when this instance holds no lease on
    /// the session.
    pub async fn release_session(&self, session_id: &str) -> Result<(), OrchestratorError> {
        // A dropped turn's commit still running keeps the session until it lands.
        self.commits.settled(session_id).await;
        // A turn of this instance that started on the session since holds the lease
        // under the same name: it is that turn's to give back.
        if self
            .active
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .contains(session_id)
        {
            return Ok(());
        }
        // No turn of this instance runs on the session: a background response left
        // here is a dropped turn's, generating for no one.
        if let Some(response) = self.running.take(session_id) {
            crate::recovery::cancel_quietly(self.provider.as_ref(), &response).await;
        }
        self.store.release_lease(session_id, &self.instance).await
    }

    /// Answers for a turn whose future was dropped before it ended (a deadline, a
    /// shutdown, a cancel, Ctrl-C), given the request it ran: waits for a commit it had
    /// begun, which runs to its end (a store's write cannot be taken back half-way),
    /// gives the session's lease back, and returns the turn's envelope when it was
    /// stored after all. `None`: nothing of the turn was stored (for a tool
    /// continuation, the round stored under its `turnId` is an earlier one), and the
    /// client may send it again.
    ///
    /// # Errors
    ///
    /// A store error, from giving the lease back or from looking the turn up.
    pub async fn settle_dropped_turn(
        &self,
        request: &AgentExecuteRequest,
    ) -> Result<Option<AgentExecuteResponse>, OrchestratorError> {
        let released = self.release_session(request.session_id().as_str()).await;
        let stored = match self.stored_answer(request).await {
            Ok(stored) => stored,
            // The key names another request's turn: not this one's.
            Err(OrchestratorError::TurnReused { .. }) => None,
            Err(error) => return Err(error),
        };
        released?;
        Ok(stored)
    }

    /// Runs `turn` while renewing this instance's lease on the session every third of
    /// its TTL, so that a turn longer than the TTL (a slow model, a long tool loop) keeps
    /// the session: the TTL bounds how long a *dead* holder blocks it, not how long a
    /// live turn may run. The renewal runs beside the turn in the same task (no task of
    /// its own to spawn, wake and abort on every turn, which cost a short turn more than
    /// the renewal ever does); the turn's awaits (the model, tools, the store) give it its
    /// turn, and no step of a turn holds the thread for anything near a third of a TTL.
    /// It stops when the turn ends or its future is dropped. A renewal that finds the
    /// lease taken (the process stalled past the TTL and another holder took over) is
    /// logged; the turn's commit, fenced by the lease, then fails as the session busy
    /// and writes nothing, whichever of the two turns commits first.
    async fn holding_lease<T>(
        &self,
        session_id: &str,
        turn: impl std::future::Future<Output = T>,
    ) -> T {
        let ttl = self.lease_ttl();
        let period = (ttl / 3).max(std::time::Duration::from_millis(50));
        let renewals = async {
            loop {
                tokio::time::sleep(period).await;
                match self
                    .store
                    .acquire_lease(session_id, &self.instance, ttl)
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => tracing::warn!(
                        session = %session_id,
                        "the session's lease was taken by another holder while this turn ran"
                    ),
                    Err(error) => {
                        tracing::warn!(session = %session_id, %error, "could not renew the session lease");
                    }
                }
            }
        };
        let mut turn = std::pin::pin!(turn);
        let mut renewals = std::pin::pin!(renewals);
        // The turn is polled first, so a renewal due at the moment the turn ends is not
        // started; `renewals` never ends on its own.
        std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(outcome) = turn.as_mut().poll(cx) {
                return std::task::Poll::Ready(outcome);
            }
            let _pending: std::task::Poll<()> = renewals.as_mut().poll(cx);
            std::task::Poll::Pending
        })
        .await
    }

    /// Takes the session's lease: free, expired, this instance's own, or held by a
    /// process of this host that is gone (killed, crashed), which is taken over at once
    /// instead of waiting for its TTL. Otherwise the session is busy, and the error says
    /// who holds it and when the lease expires.
    async fn take_lease(&self, session_id: &str) -> Result<(), OrchestratorError> {
        let ttl = self.lease_ttl();
        if self
            .store
            .acquire_lease(session_id, &self.instance, ttl)
            .await?
        {
            return Ok(());
        }
        let current = self.store.lease(session_id).await?;
        if let Some(current) = &current
            && crate::lease::holder_is_gone(&current.holder)
            && self
                .store
                .take_over_lease(session_id, &current.holder, &self.instance, ttl)
                .await?
        {
            // Recovery working as meant (a killed `aptix ask`, a crashed replica): news
            // for the operator's log, not a warning on a user's terminal.
            tracing::info!(
                session = %session_id,
                holder = %current.holder,
                "took over the lease of a process that is gone"
            );
            return Ok(());
        }
        Err(crate::lease::busy(session_id, current))
    }

    /// `busy` (another turn of this process runs on the session) with when the
    /// session's lease expires, as the store says: the answer says when the session
    /// frees whoever holds it. (A store that cannot say leaves it out.)
    async fn with_lease_expiry(
        &self,
        busy: OrchestratorError,
        session_id: &str,
    ) -> OrchestratorError {
        match (busy, self.store.lease(session_id).await) {
            (
                OrchestratorError::SessionBusy {
                    session_id, holder, ..
                },
                Ok(Some(lease)),
            ) => OrchestratorError::SessionBusy {
                session_id,
                holder,
                expires_in: Some(lease.expires_in),
            },
            (busy, _) => busy,
        }
    }

    fn enter(&self, session_id: &str) -> Result<ActiveTurn<'_>, OrchestratorError> {
        let mut active = self
            .active
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !active.insert(session_id.to_owned()) {
            return Err(OrchestratorError::SessionBusy {
                session_id: session_id.to_owned(),
                holder: Some("another turn of this process".to_owned()),
                expires_in: None,
            });
        }
        Ok(ActiveTurn {
            active: &self.active,
            session_id: session_id.to_owned(),
        })
    }
}

//! The body of a turn: preparing the first request, calling the model, the bounded
//! server-tool loop, pending client calls, history, and the one commit at the end.

use std::sync::Arc;
use std::time::Instant;

use aptix_client::ClientError;
use aptix_mapping::{
    Mapped, StreamDelta, TurnContext, map_error_body, map_response, map_transport_failure,
};
use aptix_model::contract::{
    AgentExecuteRequest, AgentExecuteResponse, AgentToolCall, Kind, LlmUsage, SourceRef,
    ToolOutcome as ClientOutcome,
};
use aptix_model::wire::{
    ContentPart, CreateResponseRequest, ErrorBody, Input, InputItem, MessageContent, OutputItem,
    Response, Role,
};
use aptix_rag::{RetrievalQuery, ScoredChunk, TokenCounter, cut_to_tokens, select_context};
use aptix_request::{Continuation, RequestBuilder, ToolOutput, ToolUsageBlock, normalize_history};

use crate::OrchestratorError;
use crate::compaction::{
    Body, answered_calls, is_context_overflow, notice, remember_usage, still_too_long,
    unkept_compactions,
};
use crate::config::Mode;
use crate::inputs::{prepare_inputs, read_references};
use crate::matching::check_tool_results;
use crate::orchestrator::{DeltaSink, Orchestrator};
use crate::session::{
    CompactionReason, CompletedCall, PendingCall, PendingToolCalls, SessionState, StoredTurn,
    TurnKey,
};
use crate::tools::{cap_result, function_tool, result_bytes_for};

/// The first request of a turn, with what was learnt preparing it.
pub(crate) struct FirstRequest {
    pub body: CreateResponseRequest,
    /// Leading input items of `body` that replay the history.
    pub replayed: usize,
    pub sources: Vec<SourceRef>,
    pub warnings: Vec<String>,
}

/// A model reply, streamed or not, mapped.
struct Reply {
    response: Response,
    mapped: Mapped,
}

impl Orchestrator {
    pub(crate) fn new_session(&self, session_id: &str) -> SessionState {
        SessionState::new(
            session_id,
            self.config.default_mode.clone(),
            self.config.model.clone(),
        )
    }

    fn mode_of(&self, state: &SessionState) -> Mode {
        self.config
            .mode(&state.mode)
            .cloned()
            .unwrap_or_else(|| Mode::new(state.mode.clone()))
    }

    /// Stateless replay when configured, or when the provider keeps no state.
    fn stateless(&self) -> bool {
        self.config.stateless || !self.provider.capabilities().previous_response_id
    }

    /// How the request continues the session. A replayed history goes through the one
    /// normalisation at the send boundary (`normalize_history`): whatever built it, every
    /// call is sent with exactly one output; each repair is a warning.
    ///
    /// A session with history but no response to chain from (a stateful provider's
    /// session just compacted) replays its history too, and the reply starts a new chain.
    /// Also returns how many leading input items replay the history.
    fn continuation(
        &self,
        state: &SessionState,
        outputs: &[ToolOutput],
        warnings: &mut Vec<String>,
    ) -> (Continuation, usize) {
        match &state.last_response_id {
            Some(id) if !self.stateless() => (Continuation::PreviousResponse(id.clone()), 0),
            _ if state.history.is_empty() => (Continuation::Initial, 0),
            _ => {
                let answered: Vec<&str> = outputs.iter().map(|o| o.call_id.as_str()).collect();
                let (history, repairs) = normalize_history(state.history.clone(), &answered);
                warnings.extend(
                    repairs
                        .iter()
                        .map(|repair| format!("the replayed history was repaired: {repair}")),
                );
                let replayed = history.len();
                (Continuation::Stateless(history), replayed)
            }
        }
    }

    /// A builder with the session's settings, the mode's prompt and tools, and how many
    /// leading input items of its body replay the history.
    fn request_builder(
        &self,
        state: &SessionState,
        mode: &Mode,
        outputs: Vec<ToolOutput>,
        warnings: &mut Vec<String>,
    ) -> (RequestBuilder, usize) {
        let mut usage = ToolUsageBlock::new();
        let (continuation, replayed) = self.continuation(state, &outputs, warnings);
        let mut builder = RequestBuilder::new(state.model.model.clone())
            .base_system_prompt(self.config.base_system_prompt.clone())
            .system_prompt(mode.system_prompt.clone().unwrap_or_default())
            .mode(mode.name.clone())
            .temperature(state.model.temperature)
            .max_output_tokens(state.model.max_output_tokens)
            .resend_tools_on_continuation(self.config.resend_tools_on_continuation)
            .continuation(continuation)
            .tool_outputs(outputs);
        if let Some(effort) = &state.model.reasoning_effort {
            builder = builder.reasoning_effort(effort.clone());
            if self.stateless() {
                // A reasoning model's items can be replayed without server state only
                // with their encrypted content, which the API returns for
                // `store: false` requests that ask for it.
                builder = builder.store(false).include("reasoning.encrypted_content");
            }
        }
        for tool in self.server_tools.iter().filter(|t| mode.allows(t.name())) {
            builder = builder.tools([function_tool(tool.as_ref())]);
            if let Some(text) = tool.usage() {
                usage.push(tool.name(), text);
            }
        }
        for tool in self
            .client_tools
            .iter()
            .filter(|t| mode.allows(&t.definition.name))
        {
            builder = builder.tools([tool.definition.clone()]);
            if let Some(text) = &tool.usage {
                usage.push(tool.definition.name.clone(), text.clone());
            }
        }
        if let Some(block) = usage.render() {
            builder = builder.tool_usage_block(block);
        }
        (builder, replayed)
    }

    /// Builds the turn's first request and updates `state` for it (pending calls are
    /// consumed). Changes nothing stored.
    pub(crate) async fn prepare(
        &self,
        request: &AgentExecuteRequest,
        state: &mut SessionState,
    ) -> Result<FirstRequest, OrchestratorError> {
        let mode = self.mode_of(state);
        let mut warnings = Vec::new();
        match request {
            AgentExecuteRequest::UserTurn(turn) => {
                let mut outputs = Vec::new();
                if let Some(pending) = state.pending.take() {
                    // Only the client's calls are cancelled: the outputs of server tools
                    // (left by a turn stopped at its bound of model calls) are sent as
                    // they are, which is no news.
                    if !pending.client_calls.is_empty() {
                        warnings.push(format!(
                            "{} pending tool call(s) of turn {} were cancelled by this new turn",
                            pending.client_calls.len(),
                            pending.turn_id
                        ));
                    }
                    outputs.extend(pending.server_outputs.iter().map(completed_to_output));
                    outputs.extend(pending.client_calls.iter().map(|call| {
                        ToolOutput::error(
                            call.call_id.clone(),
                            "the user started a new turn instead of running this tool",
                        )
                        .with_tool_name(call.name.clone())
                    }));
                }
                let (files, images) = read_references(
                    self.references.as_deref(),
                    &turn.files,
                    &turn.images,
                    &mut warnings,
                )
                .await;
                let mut inputs = prepare_inputs(&files, &images);
                warnings.extend(std::mem::take(&mut inputs.warnings));
                let counter = TokenCounter::o200k().map_err(OrchestratorError::Context)?;
                // Attached files always reach the model (the context budget is for what
                // retrieval adds), cut only where together they would pass half of the
                // model's context window.
                let window = self.config.context_window(&state.model.model);
                let attachment_tokens = usize::try_from(window / 2).unwrap_or(usize::MAX);
                inputs.chunks =
                    fit_attachments(inputs.chunks, attachment_tokens, &counter, &mut warnings);
                let query = RetrievalQuery {
                    text: turn
                        .instruction
                        .as_ref()
                        .map(|i| i.as_str().to_owned())
                        .unwrap_or_default(),
                    scope: turn.scope_conditions().to_vec(),
                    // At most a quarter of the window: history, the instruction, the
                    // tools and the answer need the rest (a 12,000-token budget in an
                    // 8,192-token local model overflowed every request).
                    token_budget: self
                        .config
                        .context_token_budget
                        .min(usize::try_from(window / 4).unwrap_or(usize::MAX)),
                    max_chunks: self.config.max_chunks,
                };
                let mut retrieved = Vec::new();
                // Chunks the retriever found and left out of the budget itself: counted
                // with what is left out here, so the turn warns once, with one count.
                let mut left_by_retriever = 0;
                if let Some(retriever) = &self.retriever
                    && !query.text.is_empty()
                {
                    match retriever.retrieve(&query).await {
                        Ok(found) => {
                            warnings.extend(found.warnings);
                            retrieved = found.chunks;
                            left_by_retriever = found.left_out;
                        }
                        Err(error) => warnings.push(format!(
                            "retrieval failed: {}",
                            aptix_model::error_chain(&error)
                        )),
                    }
                }
                // What the conversation holds already (an earlier turn's [CONTEXT]) is
                // not sent again: the budget goes to what it does not have. Still a
                // source of this answer.
                let (in_conversation, retrieved): (Vec<ScoredChunk>, Vec<ScoredChunk>) =
                    retrieved.into_iter().partition(|scored| {
                        state
                            .context_sent
                            .iter()
                            .any(|id| id == scored.chunk.id.as_str())
                    });
                if !in_conversation.is_empty() {
                    tracing::debug!(
                        chunks = in_conversation.len(),
                        "retrieved chunks the conversation holds already were not sent again"
                    );
                }
                // Attachments (usually none) are told apart after packing by their ids.
                let attachment_ids: Vec<String> = inputs
                    .chunks
                    .iter()
                    .map(|scored| scored.chunk.id.as_str().to_owned())
                    .collect();
                let attached = inputs.chunks.len();
                // Saturating: the count comes from a retriever of anyone's making.
                let offered = (attached + retrieved.len()).saturating_add(left_by_retriever);
                let packed = select_context(inputs.chunks, retrieved, &query, &counter);
                // Only what the budget left out: a chunk left out for overlapping one
                // sent (an attachment) has its lines in the context already.
                let left_out = packed
                    .dropped
                    .len()
                    .saturating_add(packed.past_max_chunks)
                    .saturating_add(left_by_retriever);
                warnings.extend(packed.left_out_warning(left_out, offered, &query));
                let mut sources: Vec<SourceRef> = packed.kept.iter().map(source_ref).collect();
                sources.extend(in_conversation.iter().map(source_ref));
                // Retrieved chunks only: an attachment may be sent cut to its first
                // lines, and the whole chunk is not in the conversation then.
                state.sent_context(
                    packed
                        .kept
                        .iter()
                        .map(|scored| scored.chunk.id.as_str())
                        .filter(|id| !attachment_ids.iter().any(|attached| attached == id)),
                );
                let (builder, replayed) =
                    self.request_builder(state, &mode, outputs, &mut warnings);
                let mut builder = builder.instruction(
                    turn.instruction
                        .as_ref()
                        .map(|i| i.as_str().to_owned())
                        .unwrap_or_else(|| "Read the attached inputs.".to_owned()),
                );
                if let Some(block) = packed.block {
                    builder = builder.context_block(block);
                }
                let mut body = builder.build()?;
                append_to_user_message(&mut body, inputs.parts);
                Ok(FirstRequest {
                    body,
                    replayed,
                    sources,
                    warnings,
                })
            }
            AgentExecuteRequest::ToolContinuation(continuation) => {
                let session_id = state.session_id.clone();
                let pending = state
                    .pending
                    .take()
                    .ok_or(OrchestratorError::NothingPending { session_id })?;
                if pending.turn_id != continuation.turn_id.as_str() {
                    return Err(OrchestratorError::ToolResultsMismatch {
                        turn_id: pending.turn_id.clone(),
                        mismatch: format!(
                            "the pending calls belong to turn {}, not {}",
                            pending.turn_id,
                            continuation.turn_id.as_str()
                        ),
                        expected: pending.call_ids(),
                        received: continuation
                            .tool_results
                            .iter()
                            .map(|r| r.tool_call_id.as_str().to_owned())
                            .collect(),
                    });
                }
                check_tool_results(&pending, &continuation.tool_results)?;
                let mut outputs: Vec<ToolOutput> = pending
                    .server_outputs
                    .iter()
                    .map(completed_to_output)
                    .collect();
                for (call, result) in pending.client_calls.iter().zip(&continuation.tool_results) {
                    let output = match &result.outcome {
                        ClientOutcome::Result(json) => {
                            ToolOutput::result(call.call_id.clone(), json.as_str())
                        }
                        ClientOutcome::Error(message) => {
                            ToolOutput::error(call.call_id.clone(), message.as_str())
                        }
                    };
                    outputs.push(
                        output
                            .with_tool_name(call.name.clone())
                            .with_execution_ms(result.execution_ms),
                    );
                }
                let (builder, replayed) =
                    self.request_builder(state, &mode, outputs, &mut warnings);
                let body = builder.build()?;
                Ok(FirstRequest {
                    body,
                    replayed,
                    sources: Vec::new(),
                    warnings,
                })
            }
        }
    }

    /// Everything after the lease is taken.
    pub(crate) async fn run_leased(
        &self,
        request: &AgentExecuteRequest,
        key: &TurnKey,
        asked: Option<String>,
        mut sink: Option<DeltaSink<'_>>,
    ) -> Result<AgentExecuteResponse, OrchestratorError> {
        // The same turn may have finished while this request waited for the lease.
        if let Some(envelope) = self.answered(key, asked.as_deref()).await? {
            return Ok(envelope);
        }
        let loaded = self.store.load(&key.session_id).await?;
        let (mut state, version) = match loaded {
            Some(versioned) => (versioned.value, Some(versioned.version)),
            None if request.is_tool_continuation() => {
                return Err(OrchestratorError::UnknownSession {
                    session_id: key.session_id.clone(),
                });
            }
            None => (self.new_session(&key.session_id), None),
        };
        let mode = self.mode_of(&state);
        let prepared = self.prepare(request, &mut state).await?;
        let mut context = TurnContext::new(key.session_id.clone(), key.turn_id.clone());
        context.mode = Some(mode.name.clone());
        context.sources = prepared.sources;
        let mut warnings = prepared.warnings;
        let mut usage = LlmUsage::default();
        let mut body = Body {
            request: prepared.body,
            replayed: prepared.replayed,
        };
        let mut model_calls = 0;
        // A `context_length_exceeded` answer compacts once per turn and retries once.
        let mut overflow_compacted = false;
        // A chain the provider no longer holds is replayed once per turn.
        let mut chain_replayed = false;
        loop {
            model_calls += 1;
            self.compact_before_call(
                &mut state,
                &mut body,
                key,
                &mut sink,
                &mut warnings,
                &mut usage,
            )
            .await?;
            let called = loop {
                // An overflow told in a `failed` response or in the stream is the same
                // answer as one told by the HTTP status: compacted, and sent again.
                let answered = match self
                    .call_model(&mut body.request, &mut sink, &context)
                    .await
                {
                    Ok(reply) if is_context_overflow(&reply.mapped.envelope) => {
                        Err(reply.mapped.envelope)
                    }
                    answered => answered,
                };
                match answered {
                    Err(failed)
                        if !chain_replayed
                            && body.request.previous_response_id.is_some()
                            && is_chain_lost(&failed) =>
                    {
                        chain_replayed = true;
                        let lost = replay_instead_of_chain(&mut state, &mut body);
                        // INFO: the envelope's warning is what its reader is told (a
                        // WARN line too would say it twice on a terminal).
                        tracing::info!(
                            session = %key.session_id,
                            turn = %key.turn_id,
                            response = %lost,
                            "the provider no longer holds the response the session continues from; replaying the session's history"
                        );
                        warnings.push(format!(
                            "the provider no longer holds response {lost}, which this session continued from (responses expire, and some servers keep none: set stateless = true for those); the session's history was sent instead"
                        ));
                    }
                    Err(failed) if is_context_overflow(&failed) && overflow_compacted => {
                        self.learn_window(&state, &failed);
                        let why = format!(
                            "even after compacting the session (if the model's window is smaller than context_window, {} tokens, set context_window lower)",
                            self.context_window(&state)
                        );
                        break Err(still_too_long(failed, &why));
                    }
                    Err(failed) if is_context_overflow(&failed) => {
                        overflow_compacted = true;
                        self.learn_window(&state, &failed);
                        let compacted = self
                            .compact_and_notify(
                                &mut state,
                                &mut body,
                                key,
                                CompactionReason::Overflow,
                                &mut sink,
                                &mut warnings,
                                &mut usage,
                            )
                            .await;
                        if let Err(why) = compacted {
                            let why = format!(
                                "and the session could not be compacted ({why}; if the model's window is smaller than context_window, {} tokens, set context_window lower)",
                                self.context_window(&state)
                            );
                            break Err(still_too_long(failed, &why));
                        }
                    }
                    other => break other,
                }
            };
            let reply = match called {
                Ok(reply) => reply,
                Err(mut failed) => {
                    // Nothing is stored: the client may retry the same turn.
                    failed.usage.add(&usage);
                    unkept_compactions(&mut warnings);
                    prepend_warnings(&mut failed, warnings);
                    return Ok(failed);
                }
            };
            let mut envelope = reply.mapped.envelope;
            usage.add(&envelope.usage);
            if envelope.kind == Kind::Error {
                envelope.usage = usage;
                unkept_compactions(&mut warnings);
                prepend_warnings(&mut envelope, warnings);
                return Ok(envelope);
            }
            let calls: Vec<_> = reply
                .response
                .output
                .iter()
                .filter_map(|item| match item {
                    OutputItem::FunctionCall(call) => Some(call.clone()),
                    _ => None,
                })
                .collect();
            let response_id = reply.response.id.clone();
            // The body is built anew for any further call, so what it sent and what came
            // back move into the history instead of being copied there.
            let mut sent = std::mem::replace(&mut body.request.input, Input::Items(Vec::new()));
            self.redact_new(&mut sent, body.replayed);
            self.record_exchange(
                &mut state,
                sent,
                body.request.previous_response_id.is_some(),
                reply.response,
            );
            let mut server_outputs = Vec::new();
            let mut client_calls = Vec::new();
            for call in calls {
                if let Some(tool) = self
                    .server_tools
                    .iter()
                    .find(|tool| tool.name() == call.name && mode.allows(&call.name))
                {
                    if let Some(sink) = sink.as_mut() {
                        sink(&StreamDelta::ToolRunning {
                            call_id: call.call_id.clone(),
                            name: call.name.clone(),
                        });
                    }
                    let started = Instant::now();
                    let most = result_bytes_for(self.context_window(&state));
                    let outcome = match tool.execute(&call.arguments).await {
                        Ok(result) => Ok(json_text(cap_result(result, most))),
                        Err(reason) => Err(cap_result(reason, most)),
                    };
                    let execution_ms =
                        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    if let Some(sink) = sink.as_mut() {
                        let (ok, output) = match &outcome {
                            Ok(result) => (true, result.clone()),
                            Err(reason) => (false, reason.clone()),
                        };
                        // A workspace file holding the key, read by a tool, reaches the
                        // front end (an editor's tool card, a service's `event: tool`)
                        // without it, as the provider and the store get it.
                        let output = match self.provider.redactor() {
                            Some(redactor) => redactor.redact(&output).unwrap_or(output),
                            None => output,
                        };
                        sink(&StreamDelta::ToolFinished {
                            call_id: call.call_id.clone(),
                            name: call.name.clone(),
                            ok,
                            output,
                            execution_ms,
                        });
                    }
                    server_outputs.push(CompletedCall {
                        call_id: call.call_id,
                        name: call.name,
                        execution_ms,
                        outcome,
                    });
                } else if self
                    .client_tools
                    .iter()
                    .any(|tool| tool.definition.name == call.name && mode.allows(&call.name))
                {
                    client_calls.push(PendingCall {
                        call_id: call.call_id,
                        name: call.name,
                        arguments_json: call.arguments,
                    });
                } else {
                    warnings.push(format!(
                        "the model called {:?}, which is not a tool this turn offers (mode {}); it was told so",
                        call.name, mode.name
                    ));
                    let reason = format!("there is no tool named {:?}", call.name);
                    if let Some(sink) = sink.as_mut() {
                        // A reader showing the call learns it ended, and why: started
                        // and finished, as every call a reader is shown is, so that one
                        // that pairs them (an editor's tool list) needs no exception.
                        sink(&StreamDelta::ToolRunning {
                            call_id: call.call_id.clone(),
                            name: call.name.clone(),
                        });
                        sink(&StreamDelta::ToolFinished {
                            call_id: call.call_id.clone(),
                            name: call.name.clone(),
                            ok: false,
                            output: reason.clone(),
                            execution_ms: 0,
                        });
                    }
                    server_outputs.push(CompletedCall {
                        call_id: call.call_id,
                        name: call.name,
                        execution_ms: 0,
                        outcome: Err(reason),
                    });
                }
            }
            let done = client_calls.is_empty() && server_outputs.is_empty();
            let bound_reached = !done
                && client_calls.is_empty()
                && model_calls >= self.config.max_model_calls_per_turn;
            if done || !client_calls.is_empty() || bound_reached {
                if bound_reached {
                    warnings.push(format!(
                        "stopped after {model_calls} model calls; the last tool results will be sent with the next turn"
                    ));
                }
                state.pending = (!done).then(|| PendingToolCalls {
                    turn_id: key.turn_id.clone(),
                    response_id,
                    client_calls: client_calls.clone(),
                    server_outputs,
                });
                envelope.tool_calls = client_calls
                    .iter()
                    .map(|call| AgentToolCall {
                        call_id: call.call_id.clone(),
                        name: call.name.clone(),
                        arguments_json: call.arguments_json.clone(),
                    })
                    .collect();
                envelope.kind = classify(&envelope);
                envelope.usage = usage;
                prepend_warnings(&mut envelope, warnings);
                state.totals.add_turn(&envelope);
                // The store takes the state and the turn; the caller gets the one copy
                // of the envelope.
                let stored = StoredTurn {
                    turn_id: key.turn_id.clone(),
                    scenario: key.scenario,
                    envelope: envelope.clone(),
                    request_digest: asked,
                };
                // Once begun, the commit runs to its end even if this turn is dropped.
                let store = Arc::clone(&self.store);
                let session_id = key.session_id.clone();
                let holder = self.instance.clone();
                crate::commit::Shielded::new(
                    async move { store.commit(state, version, stored, &holder).await },
                    &self.commits,
                    &session_id,
                )
                .await?;
                return Ok(envelope);
            }
            // Only server calls: send their results and let the model go on.
            let outputs: Vec<ToolOutput> = server_outputs.iter().map(completed_to_output).collect();
            let (builder, replayed) = self.request_builder(&state, &mode, outputs, &mut warnings);
            body = Body {
                request: builder.build()?,
                replayed,
            };
        }
    }

    /// Compacts the session first when `body` would pass the compaction threshold. A
    /// compaction that cannot be made is a warning: the request may still fit, and an
    /// overflow is handled when the provider says so.
    async fn compact_before_call(
        &self,
        state: &mut SessionState,
        body: &mut Body,
        key: &TurnKey,
        sink: &mut Option<DeltaSink<'_>>,
        warnings: &mut Vec<String>,
        usage: &mut LlmUsage,
    ) -> Result<(), OrchestratorError> {
        let limit = self.compact_at(state);
        // Tokenizing costs ~60 µs per KB; a bound in bytes clears nearly every turn.
        if self.estimate_bound(state, body) <= limit {
            return Ok(());
        }
        let estimate = self.estimate(state, body)?;
        if estimate <= limit {
            return Ok(());
        }
        let compacted = self
            .compact_and_notify(
                state,
                body,
                key,
                CompactionReason::Threshold,
                sink,
                warnings,
                usage,
            )
            .await;
        if let Err(why) = compacted {
            warnings.push(format!(
                "the request is estimated at {estimate} tokens, over the compaction threshold of {limit}, but the session was not compacted: {why}"
            ));
        }
        Ok(())
    }

    /// Compacts the session and says so: a warning on the envelope and a `Compacted`
    /// delta to a streaming caller.
    #[allow(clippy::too_many_arguments)]
    async fn compact_and_notify(
        &self,
        state: &mut SessionState,
        body: &mut Body,
        key: &TurnKey,
        reason: CompactionReason,
        sink: &mut Option<DeltaSink<'_>>,
        warnings: &mut Vec<String>,
        usage: &mut LlmUsage,
    ) -> Result<(), String> {
        let record = self
            .compact(state, body, &key.turn_id, reason, usage)
            .await?;
        let message = notice(&record, self.context_window(state));
        tracing::info!(
            session = %key.session_id,
            turn = %key.turn_id,
            reason = record.reason.as_str(),
            method = record.method.as_str(),
            tokens_before = record.tokens_before,
            tokens_after = record.tokens_after,
            "compacted the session"
        );
        if let Some(sink) = sink {
            sink(&StreamDelta::Compacted {
                reason: record.reason.as_str().to_owned(),
                method: record.method.as_str().to_owned(),
                tokens_before: record.tokens_before,
                tokens_after: record.tokens_after,
                message: message.clone(),
            });
        }
        warnings.push(message);
        Ok(())
    }

    /// Calls the model once; a failure is already an error envelope.
    async fn call_model(
        &self,
        body: &mut CreateResponseRequest,
        sink: &mut Option<DeltaSink<'_>>,
        context: &TurnContext,
    ) -> Result<Reply, AgentExecuteResponse> {
        // Said in the body, so that the provider sends it as it is.
        body.stream = sink.is_some().then_some(true);
        let body = &*body;
        let Some(sink) = sink else {
            let (reply, sent) = crate::recovery::counting_sends(self.provider.create(body)).await;
            let reply = reply.map_err(|error| {
                let mut envelope = crate::recovery::error_envelope(&error, context);
                crate::recovery::note_attempts(&mut envelope, sent, None);
                envelope
            })?;
            crate::recovery::log_rate_limits(&reply.meta);
            let mut context = context.clone();
            context.request_id = reply.meta.request_id.clone();
            context.rate_limits = reply.meta.rate_limits.as_ref().map(Into::into);
            // The provider's body as received, when it has one: encoding the response
            // again would cost as much as decoding it did.
            let mapped = map_response(&reply.response, reply.raw_json, &context);
            return Ok(Reply {
                response: reply.response,
                mapped,
            });
        };
        let background;
        let body = if self.config.background {
            background = crate::recovery::in_background(body);
            &background
        } else {
            body
        };
        let streamed = crate::recovery::stream_with_recovery(
            self.provider.as_ref(),
            self.config.stream_recovery,
            body,
            &mut **sink,
            context,
            &self.running,
        )
        .await?;
        Ok(Reply {
            response: streamed.response,
            mapped: streamed.mapped,
        })
    }

    /// Takes the provider's credentials out of what a model call sent that the session
    /// did not hold already (the items after the `replayed` ones), before the session
    /// keeps it: a workspace file holding the API key reaches a request as retrieved
    /// context or a tool's output, and the store (a team's PostgreSQL database among
    /// them) would keep the key. The provider took it out of the body it sent already.
    fn redact_new(&self, sent: &mut Input, replayed: usize) {
        let Some(redactor) = self.provider.redactor() else {
            return;
        };
        match sent {
            Input::Text(text) => {
                if let Some(clean) = redactor.redact(text) {
                    *text = clean;
                }
            }
            Input::Items(items) => {
                for item in items.iter_mut().skip(replayed) {
                    // An item as JSON text, where the key is spelt as it is (it has no
                    // character JSON escapes), then read back without it.
                    let clean = serde_json::to_string(&*item)
                        .ok()
                        .and_then(|json| redactor.redact(&json))
                        .and_then(|json| serde_json::from_str::<InputItem>(&json).ok());
                    if let Some(clean) = clean {
                        *item = clean;
                    }
                }
            }
        }
    }

    /// Appends this exchange to the replayable history and moves the chain on.
    fn record_exchange(
        &self,
        state: &mut SessionState,
        sent: Input,
        chained: bool,
        response: Response,
    ) {
        let sent = input_items(sent);
        if !chained && !state.history.is_empty() {
            // A body that continues a session without a chain (stateless, or a chain
            // started again after a compaction) already starts with the whole history.
            state.history = sent;
        } else {
            state.history.extend(sent);
        }
        let stateless = self.stateless();
        let Response {
            id, output, usage, ..
        } = response;
        let mut outputs: Vec<InputItem> = output
            .into_iter()
            .map(OutputItem::into_input_item)
            .filter_map(|item| {
                if stateless {
                    replayable_without_state(item)
                } else {
                    Some(item)
                }
            })
            .collect();
        // A reasoning item must be followed by the item it preceded.
        while matches!(outputs.last(), Some(InputItem::Reasoning(_))) {
            outputs.pop();
        }
        state.history.extend(outputs);
        // Kept only where a next call can chain from it: the id of a reply from a
        // provider that keeps no state (a Chat Completions `chatcmpl-...`) names
        // nothing a `/v1/responses` server holds, if the session is later continued
        // through one.
        state.last_response_id = (!stateless).then_some(id);
        remember_usage(state, usage.as_ref());
    }
}

/// Whether a failed call says the response its request continues from
/// (`previous_response_id`) is not there: OpenAI's `previous_response_not_found` (a
/// response past its retention, made with another key or project, or with
/// `store: false`), or a server's own words for it.
fn is_chain_lost(envelope: &AgentExecuteResponse) -> bool {
    if envelope.error_code.as_deref() == Some("previous_response_not_found") {
        return true;
    }
    envelope.error_message.as_deref().is_some_and(|message| {
        let message = message.to_ascii_lowercase();
        message.contains("previous_response_id") || message.contains("previous response")
    })
}

/// Rebuilds a chained `body` to replay the session's history instead, the chain
/// dropped from `state` (the reply starts a new one); returns the response id the
/// chain was lost at. The history goes out as a stateless provider's would: without
/// the ids the provider gave its items (they name what it no longer holds) and without
/// reasoning items that have no encrypted content, normalised with the new items'
/// outputs.
fn replay_instead_of_chain(state: &mut SessionState, body: &mut Body) -> String {
    let lost = body.request.previous_response_id.take().unwrap_or_default();
    let new_items = input_items(std::mem::take(&mut body.request.input));
    let answered = answered_calls(&new_items);
    let history: Vec<InputItem> = state
        .history
        .iter()
        .cloned()
        .filter_map(replayable_without_state)
        .collect();
    let (history, _) = normalize_history(history, &answered);
    state.history.clone_from(&history);
    state.last_response_id = None;
    state.context = None;
    body.replayed = history.len();
    let mut input = history;
    input.extend(new_items);
    body.request.input = Input::Items(input);
    lost
}

/// The items of a request's input; its plain-text form is one user message.
fn input_items(input: Input) -> Vec<InputItem> {
    match input {
        Input::Items(items) => items,
        Input::Text(text) => vec![InputItem::Message(aptix_model::wire::InputMessage::new(
            Role::User,
            vec![ContentPart::input_text(text)],
        ))],
    }
}

/// `item` as a history replayed without server state carries it: without the id the
/// provider gave it ([`without_item_id`]), and `None` for a reasoning item without
/// encrypted content, which only the provider's state could resolve.
fn replayable_without_state(item: InputItem) -> Option<InputItem> {
    match item {
        InputItem::Reasoning(reasoning) if reasoning.encrypted_content.is_none() => None,
        item => Some(without_item_id(item)),
    }
}

/// `item` without the id the provider gave it, for a history replayed without server
/// state. Such an id names nothing the provider kept (`Item with id rs_... not found`),
/// and an item whose id pairs it with a reasoning item that is not replayed (one without
/// encrypted content, from a reasoning model asked for none) is refused: `Item 'fc_...'
/// of type 'function_call' was provided without its required 'reasoning' item`. Items
/// without ids stand alone; the call ids that pair calls with their outputs are kept.
fn without_item_id(item: InputItem) -> InputItem {
    match item {
        InputItem::Reasoning(mut reasoning) => {
            reasoning.id = None;
            InputItem::Reasoning(reasoning)
        }
        InputItem::FunctionCall(mut call) => {
            call.id = None;
            InputItem::FunctionCall(call)
        }
        InputItem::Message(mut message) => {
            message.id = None;
            InputItem::Message(message)
        }
        InputItem::EasyMessage(mut message) => {
            message.id = None;
            InputItem::EasyMessage(message)
        }
        InputItem::Other(serde_json::Value::Object(mut fields)) => {
            fields.remove("id");
            InputItem::Other(serde_json::Value::Object(fields))
        }
        other => other,
    }
}

fn completed_to_output(call: &CompletedCall) -> ToolOutput {
    let output = match &call.outcome {
        Ok(json) => ToolOutput::result(call.call_id.clone(), json.clone()),
        Err(message) => ToolOutput::error(call.call_id.clone(), message.clone()),
    };
    output
        .with_tool_name(call.name.clone())
        .with_execution_ms(call.execution_ms)
}

/// A server tool's result must be JSON text; anything else is sent as a JSON string.
fn json_text(result: String) -> String {
    if serde_json::from_str::<serde_json::Value>(&result).is_ok() {
        result
    } else {
        serde_json::Value::String(result).to_string()
    }
}

fn source_ref(scored: &ScoredChunk) -> SourceRef {
    let chunk = &scored.chunk;
    SourceRef {
        chunk_id: chunk.id.as_str().to_owned(),
        path: chunk.path.clone(),
        line_start: chunk.lines.start(),
        line_end: chunk.lines.end(),
        language: chunk.language.clone(),
        score: (scored.score.is_finite() && scored.score < f32::MAX)
            .then_some(f64::from(scored.score)),
    }
}

fn append_to_user_message(body: &mut CreateResponseRequest, parts: Vec<ContentPart>) {
    if parts.is_empty() {
        return;
    }
    if let Input::Items(items) = &mut body.input
        && let Some(InputItem::Message(message)) = items
            .iter_mut()
            .rev()
            .find(|item| matches!(item, InputItem::Message(m) if m.role == Role::User))
        && let MessageContent::Parts(existing) = &mut message.content
    {
        existing.extend(parts);
    }
}

fn prepend_warnings(envelope: &mut AgentExecuteResponse, mut warnings: Vec<String>) {
    warnings.append(&mut envelope.warnings);
    // One line per thing to say: a model that called a missing tool eight times got
    // eight identical warnings.
    let mut seen = std::collections::HashSet::new();
    warnings.retain(|warning| seen.insert(warning.clone()));
    envelope.warnings = warnings;
}

/// Whether a turn's envelope is one that stopped at the bound on model calls per turn
/// (`max_model_calls_per_turn`) while the model still wanted tools: its answer is not
/// done, and the last tool results go to the model with the session's next turn. (A
/// turn that waits for the client's tool results lists them in `toolCalls` instead.)
pub fn stopped_at_model_call_bound(envelope: &AgentExecuteResponse) -> bool {
    envelope.finish_reason == Some(aptix_model::contract::FinishReason::ToolUse)
        && envelope.tool_calls.is_empty()
}

/// AGN-004 section 4, over what the client is asked to do: text, client tool calls.
fn classify(envelope: &AgentExecuteResponse) -> Kind {
    let has_text = envelope
        .text
        .as_deref()
        .is_some_and(|text| !text.is_empty());
    Kind::classify(
        false,
        has_text,
        !envelope.tool_calls.is_empty(),
        envelope.refusal.is_some(),
    )
}

/// A provider failure as an error envelope: the status and body for HTTP errors, the
/// event for in-stream errors, a code naming the failure otherwise.
pub(crate) fn client_error_envelope(
    error: &ClientError,
    context: &TurnContext,
) -> AgentExecuteResponse {
    let mut context = context.clone();
    if let Some(request_id) = error.request_id() {
        context.request_id = Some(request_id.to_owned());
    }
    match error {
        ClientError::Status {
            status,
            api_error,
            raw_body,
            ..
        } => {
            let body = match (api_error, raw_body) {
                // The body as received (`rawResponseJson` keeps every member of it),
                // else the error decoded from it.
                (_, Some(raw)) => raw.clone().into_bytes(),
                (Some(api_error), None) => serde_json::to_vec(&ErrorBody {
                    error: (**api_error).clone(),
                })
                .unwrap_or_default(),
                (None, None) => Vec::new(),
            };
            map_error_body(*status, &body, &context).envelope
        }
        other => map_transport_failure(&other.code(), &other.to_string(), &context).envelope,
    }
}

/// Attached text files within `max_tokens` together, in order: each whole while they
/// fit, one that passes the limit cut to its first lines (a warning says which lines
/// the model got), and each after it kept as far as what is left allows (left out, with
/// a warning, where not even its first line fits).
fn fit_attachments(
    attachments: Vec<ScoredChunk>,
    max_tokens: usize,
    counter: &TokenCounter,
    warnings: &mut Vec<String>,
) -> Vec<ScoredChunk> {
    let mut used = 0usize;
    let mut fitted = Vec::with_capacity(attachments.len());
    for attachment in attachments {
        let left = max_tokens.saturating_sub(used);
        let whole = attachment.chunk.lines;
        let path = attachment.chunk.path.clone();
        match cut_to_tokens(attachment.chunk, left, counter) {
            Some((cut, tokens)) => {
                if cut.lines != whole {
                    warnings.push(format!(
                        "file input {} was cut to lines {}-{} of {} to fit half of the model's context window ({max_tokens} tokens); the rest was left out",
                        cut.path,
                        cut.lines.start(),
                        cut.lines.end(),
                        whole.end()
                    ));
                }
                used = used.saturating_add(tokens);
                fitted.push(ScoredChunk {
                    chunk: cut,
                    score: attachment.score,
                });
            }
            None => warnings.push(format!(
                "file input {path} was left out: it does not fit in what is left of half of the model's context window ({max_tokens} tokens)"
            )),
        }
    }
    fitted
}

#[cfg(test)]
mod replay_tests {
    use super::without_item_id;
    use aptix_model::wire::InputItem;

    #[test]
    fn a_replayed_item_keeps_its_call_id_and_loses_the_server_id() {
        // The shape `gpt-5-mini` answers a tool turn with: the call's `fc_` id ties it to a
        // reasoning item that is not replayed without encrypted content.
        let items: Vec<InputItem> = serde_json::from_value(serde_json::json!([
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read_file",
             "arguments": "{}", "status": "completed"},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Hi", "annotations": []}]},
            {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_2", "name": "x",
             "input": "y"}
        ]))
        .unwrap();
        let replayed: Vec<InputItem> = items.into_iter().map(without_item_id).collect();
        let json = serde_json::to_value(&replayed).unwrap();
        for item in json.as_array().unwrap() {
            assert!(item.get("id").is_none(), "{item}");
        }
        assert_eq!(json[0]["call_id"], "call_1");
        assert_eq!(json[2]["call_id"], "call_2");
    }
}

//! One streamed model call that survives a cut stream: the connection lost mid-body, a
//! stall past the idle timeout, or a body that ended without a terminal event.
//!
//! The cut attempt's events are already folded and their deltas delivered. When it is
//! safe, the call goes on: a background response is resumed after the last event
//! received (`ResponsesProvider::resume_stream`), keeping the fold, so no text comes
//! twice; otherwise the request is sent again, with a fresh fold, so the final response
//! (and the envelope made from it) holds the new attempt's text once. Between the two
//! the caller's sink gets [`StreamDelta::Retrying`], so a consumer that printed text
//! knows where the retry began.
//!
//! Sending again is safe only while no hosted tool (web search, file search, code
//! interpreter, image generation, MCP) has started in the cut attempt: the server ran
//! it, and a new request would run it again. Failures the server reported (an `error`
//! event, `response.failed`, a non-retryable status) are not retried here, the
//! server's verdict standing, except the transient ones ([`TRANSIENT_CODES`]: an error
//! of the server's own, a rate limit), which the same request may get past, as a 500 or
//! a 429 before the stream would have been: those are sent again from the start, as
//! Codex does. Waits before the re-sent request's own reply head
//! (`retry-after`, `x-should-retry`) are the client's retry policy's, as for any
//! request.
//!
//! A failed call's error counts every request it sent ("gave up after 4 attempts"):
//! the streams this module opened and the sends the client's retry policy added to
//! each, as the notes on the way said them ("attempt 2 of 5", then "attempt 3 of 3").

use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use aptix_client::{ClientError, ResponsesProvider, TimeoutKind, TransportPhase, requested_wait};
use aptix_mapping::{
    Mapped, MappingWarning, RetryCause, StreamDelta, StreamFold, TurnContext, map_folded,
    map_mapping_error,
};
use aptix_model::contract::AgentExecuteResponse;
use aptix_model::wire::{CreateResponseRequest, Response};
use futures_util::StreamExt;

use crate::config::StreamRecovery;
use crate::turn::client_error_envelope;

/// Hosted tools: the server runs them, so a request sent again would run them again.
const HOSTED_TOOL_ITEMS: &[&str] = &[
    "web_search_call",
    "file_search_call",
    "code_interpreter_call",
    "image_generation_call",
    "mcp_call",
    "mcp_list_tools",
];

/// The error codes of a failure reported in the stream (an `error` event, a `failed`
/// response) that a request sent again may get past: the server's own error and rate
/// limits. Others (`insufficient_quota`, `invalid_prompt`, an overflow, which compaction
/// answers) are the server's verdict on the request itself.
const TRANSIENT_CODES: &[&str] = &[
    "server_error",
    "rate_limit_exceeded",
    "server_is_overloaded",
    "slow_down",
];

/// The background responses of this instance's streamed model calls, by session, while
/// they run: a turn dropped before its end (Ctrl-C, a deadline, a stop) leaves its
/// response generating, and billed, on the server, and the front end's
/// `release_session` cancels it from here.
#[derive(Debug, Default)]
pub(crate) struct Running(std::sync::Mutex<std::collections::HashMap<String, String>>);

impl Running {
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, String>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn started(&self, session: &str, response: &str) {
        self.lock().insert(session.to_owned(), response.to_owned());
    }

    fn ended(&self, session: &str) {
        self.lock().remove(session);
    }

    /// The background response a dropped turn of `session` left running.
    pub(crate) fn take(&self, session: &str) -> Option<String> {
        self.lock().remove(session)
    }
}

/// Cancels a background response no one will read, bounded (a person who pressed
/// Ctrl-C is waiting: a server that does not answer in 3 s is left to finish it);
/// failures are logged, not returned.
pub(crate) async fn cancel_quietly(provider: &dyn ResponsesProvider, response_id: &str) {
    let cancelled = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        provider.cancel(response_id),
    )
    .await;
    match cancelled {
        Ok(Ok(())) => tracing::info!(response = %response_id, "background response cancelled"),
        Ok(Err(ClientError::Unsupported { .. })) => {}
        Ok(Err(error)) => tracing::warn!(
            response = %response_id,
            %error,
            "could not cancel a background response no one will read; the server may go on generating it"
        ),
        Err(_) => tracing::warn!(
            response = %response_id,
            "could not cancel a background response no one will read (no answer in 3 s); the server may go on generating it"
        ),
    }
}

/// A streamed model call's result.
pub(crate) struct Streamed {
    pub(crate) response: Response,
    pub(crate) mapped: Mapped,
}

/// What ended an attempt before its terminal event.
enum Cut {
    /// The request could not be sent again (or resumed).
    Open(ClientError),
    /// The stream's last item was a connection failure.
    Stream(ClientError),
    /// The body ended without a terminal event.
    EndedEarly,
    /// The server reported a transient failure (one of [`TRANSIENT_CODES`]) in the
    /// stream: its code and message.
    Failed(String, String),
}

impl Cut {
    fn describe(&self, events: u64) -> String {
        match self {
            Cut::Open(error) | Cut::Stream(error) => error.to_string(),
            Cut::EndedEarly => {
                format!("the stream ended after {events} event(s) without a final event")
            }
            Cut::Failed(code, message) => {
                format!("the server reported a failure it may get past ({code}): {message}")
            }
        }
    }
}

/// What the folding of one attempt saw.
#[derive(Default)]
struct Seen {
    /// Events of this attempt.
    events: u64,
    /// A hosted tool started in this fold.
    hosted_tool: bool,
    /// The stream sent an `error` event: the server's verdict, not a cut.
    error_event: bool,
    /// The code and message of a transient failure the stream reported (an `error`
    /// event, or a `failed` response's error), one of [`TRANSIENT_CODES`].
    transient: Option<(String, String)>,
}

/// `body` in background mode (`background: true`, `store: true`), so that a cut stream
/// can be resumed where it stopped.
pub(crate) fn in_background(body: &CreateResponseRequest) -> CreateResponseRequest {
    let mut body = body.clone();
    body.extra
        .insert("background".into(), serde_json::Value::Bool(true));
    body.store = Some(true);
    body
}

/// Whether the request runs in background mode, so its stream can be resumed.
fn is_background(body: &CreateResponseRequest) -> bool {
    body.extra.get("background") == Some(&serde_json::Value::Bool(true))
        && body.store != Some(false)
}

/// Whether an event starts (or reports the progress of) a hosted tool call.
fn starts_hosted_tool(kind: &str, data: &str) -> bool {
    if kind == "response.output_item.added" {
        // Every message of every turn starts with this event: one that names no hosted
        // tool item anywhere in its text (and escapes nothing, so cannot spell one in
        // escapes) is not one, without decoding it.
        if !data.contains('\\') && !HOSTED_TOOL_ITEMS.iter().any(|item| data.contains(item)) {
            return false;
        }
        // The item's own type says what it is; only that is read (every other value is
        // skipped, not built).
        #[derive(serde::Deserialize)]
        struct Added<'a> {
            #[serde(borrow)]
            item: Item<'a>,
        }
        #[derive(serde::Deserialize)]
        struct Item<'a> {
            #[serde(rename = "type", borrow)]
            kind: std::borrow::Cow<'a, str>,
        }
        return serde_json::from_str::<Added<'_>>(data)
            .is_ok_and(|added| HOSTED_TOOL_ITEMS.contains(&added.item.kind.as_ref()));
    }
    kind.strip_prefix("response.")
        .and_then(|rest| rest.split('.').next())
        .is_some_and(|head| HOSTED_TOOL_ITEMS.contains(&head))
}

/// A number in `0.0..1.0` that differs between calls, for the jitter; no clock, no
/// extra dependency (std's hasher keys are random per `RandomState`).
fn random_unit(salt: u32) -> f64 {
    let bits = std::hash::RandomState::new().hash_one(salt) >> 11;
    // 53 bits fit an f64 exactly.
    bits as f64 / (1u64 << 53) as f64
}

/// The code and message of a `response.failed` event's error, when its code is one of
/// [`TRANSIENT_CODES`]. Only that error is read (the rest of the response is skipped).
fn transient_failure(data: &str) -> Option<(String, String)> {
    #[derive(serde::Deserialize)]
    struct Failed {
        response: FailedResponse,
    }
    #[derive(serde::Deserialize)]
    struct FailedResponse {
        error: Option<Failure>,
    }
    #[derive(serde::Deserialize)]
    struct Failure {
        code: Option<String>,
        #[serde(default)]
        message: String,
    }
    let error = serde_json::from_str::<Failed>(data).ok()?.response.error?;
    let code = error.code?;
    TRANSIENT_CODES
        .contains(&code.as_str())
        .then_some((code, error.message))
}

/// Folds one attempt's events into `fold`, passing deltas on; `None` when the terminal
/// event arrived, else what cut the attempt.
async fn drain(
    stream: &mut aptix_client::EventStream,
    fold: &mut StreamFold,
    sink: &mut (dyn FnMut(&StreamDelta) + Send),
    seen: &mut Seen,
    mut named: impl FnMut(&str),
) -> Option<Cut> {
    // Once the terminal event is in, the rest of the body is not read: dropping the
    // stream releases the connection.
    while !fold.is_finished() {
        match stream.next().await {
            Some(Ok(event)) => {
                seen.events += 1;
                if starts_hosted_tool(event.event_type(), &event.data) {
                    seen.hosted_tool = true;
                }
                if event.event_type() == "response.failed"
                    && let Some(failure) = transient_failure(&event.data)
                {
                    seen.transient.get_or_insert(failure);
                }
                let unnamed = fold.response_id().is_none();
                let delta = fold.apply_sse(&event);
                if unnamed && let Some(id) = fold.response_id() {
                    named(id);
                }
                if let Some(delta) = delta {
                    if let StreamDelta::Error { code, message } = &delta {
                        seen.error_event = true;
                        if TRANSIENT_CODES.contains(&code.as_str()) {
                            seen.transient = Some((code.clone(), message.clone()));
                        }
                    }
                    sink(&delta);
                }
            }
            Some(Err(error)) => return Some(Cut::Stream(error)),
            None => break,
        }
    }
    (!fold.is_finished()).then_some(Cut::EndedEarly)
}

/// Whether an attempt ended this way may be tried again.
fn recoverable(cut: &Cut, seen: &Seen) -> bool {
    let connection_lost = |error: &ClientError| {
        matches!(
            error,
            ClientError::Transport {
                phase: TransportPhase::ReadBody,
                ..
            } | ClientError::Timeout {
                kind: TimeoutKind::StreamIdle,
                ..
            }
        )
    };
    match cut {
        // A server that went silent before the reply's head: nothing arrived, so
        // nothing was shown and no hosted tool was seen; the client does not retry
        // this (the server may be working on it), but a stall is what recovery is for.
        Cut::Open(ClientError::Timeout {
            kind: TimeoutKind::StreamIdle,
            ..
        }) => true,
        // Getting a stream (the first, or again) is otherwise the client's to retry:
        // its policy sees the reply's headers (`retry-after`, `x-should-retry`) and has
        // already given up when this error comes back.
        Cut::Open(_) => false,
        Cut::Stream(error) => connection_lost(error),
        Cut::EndedEarly => !seen.error_event || seen.transient.is_some(),
        Cut::Failed(..) => true,
    }
}

/// Calls the model once with streaming on, recovering cut streams as `policy` allows.
/// A failure is already an error envelope.
pub(crate) async fn stream_with_recovery(
    provider: &dyn ResponsesProvider,
    policy: StreamRecovery,
    body: &CreateResponseRequest,
    sink: &mut (dyn FnMut(&StreamDelta) + Send),
    context: &TurnContext,
    running: &Running,
) -> Result<Streamed, AgentExecuteResponse> {
    let session = context.conversation_id.clone().unwrap_or_default();
    let result = stream_attempts(provider, policy, body, sink, context, running, &session).await;
    // Ended (answered, or given up and cancelled): nothing left to cancel. A call whose
    // future is dropped never gets here, and leaves its response for `release_session`.
    if is_background(body) {
        running.ended(&session);
    }
    result
}

async fn stream_attempts(
    provider: &dyn ResponsesProvider,
    policy: StreamRecovery,
    body: &CreateResponseRequest,
    sink: &mut (dyn FnMut(&StreamDelta) + Send),
    context: &TurnContext,
    running: &Running,
    session: &str,
) -> Result<Streamed, AgentExecuteResponse> {
    let max_attempts = policy.max_attempts.max(1);
    let background = is_background(body);
    let mut context = context.clone();
    let mut fold = StreamFold::new();
    let mut seen = Seen::default();
    let mut resume_after: Option<(String, Option<u64>)> = None;
    // The server has no route to resume a response (`404`, `405`, `501`): a cut stream
    // is sent again from its start instead.
    let mut resume_missing = false;
    let mut attempt = 0u32;
    // Requests sent, the client's own retries included.
    let mut sent = 0u32;
    loop {
        attempt += 1;
        seen.events = 0;
        let (opened, sends) = counting_sends(async {
            match &resume_after {
                Some((id, after)) => provider.resume_stream(id, *after).await,
                None => provider.stream(body).await,
            }
        })
        .await;
        sent = sent.saturating_add(sends);
        let cut = match opened {
            Err(error) => Cut::Open(error),
            Ok(mut stream) => {
                if let Some(id) = &stream.meta().request_id {
                    context.request_id = Some(id.clone());
                }
                if let Some(limits) = &stream.meta().rate_limits {
                    context.rate_limits = Some(limits.into());
                }
                log_rate_limits(stream.meta());
                let drained = drain(&mut stream, &mut fold, sink, &mut seen, |id| {
                    if background {
                        running.started(session, id);
                    }
                })
                .await;
                match drained {
                    // Ended with a transient failure: tried again while attempts are
                    // left, else the failed response is the answer, as sent.
                    None => match seen.transient.take() {
                        Some((code, message)) if attempt < max_attempts && !seen.hosted_tool => {
                            Cut::Failed(code, message)
                        }
                        _ => break,
                    },
                    Some(cut) => cut,
                }
            }
        };
        let cannot_resume = resume_after.is_some()
            && matches!(
                &cut,
                Cut::Open(ClientError::Status {
                    status: 404 | 405 | 501,
                    ..
                })
            );
        if cannot_resume {
            tracing::info!("the server cannot resume a response; sending the request again");
            resume_missing = true;
            // The response it could not resume is still generating: no one reads it.
            if let Some((id, _)) = &resume_after {
                cancel_quietly(provider, id).await;
            }
        }
        // Resuming needs the response and where it stopped: without sequence numbers
        // the resumed stream would start over and the fold could not skip what it had.
        // A response that failed is over: it is sent again, not resumed.
        let failed = matches!(cut, Cut::Failed(..)) || seen.transient.is_some();
        let resumable = background
            && !failed
            && !resume_missing
            && fold.response_id().is_some()
            && fold.last_sequence_number().is_some();
        let safe = resumable || !seen.hosted_tool;
        if !(recoverable(&cut, &seen) || cannot_resume) || !safe || attempt >= max_attempts {
            // A background response given up mid-way goes on generating unless told.
            if background
                && !cannot_resume
                && !fold.is_finished()
                && let Some(id) = fold.response_id()
            {
                cancel_quietly(provider, id).await;
            }
            let mut envelope = give_up(&cut, fold, &context);
            if cannot_resume {
                // The status is the resume route's, not base_url's: the hint to check
                // base_url a 404 brings would send the reader after the wrong thing.
                let no_such_endpoint = MappingWarning::NoSuchEndpoint.to_string();
                envelope
                    .warnings
                    .retain(|warning| *warning != no_such_endpoint);
                let message = envelope.error_message.take().unwrap_or_default();
                envelope.error_message =
                    Some(format!("the server cannot resume the response: {message}"));
            }
            let hosted = (!safe && (recoverable(&cut, &seen) || cannot_resume))
                .then_some("not sent again: a hosted tool had already run in this model call");
            note_attempts(&mut envelope, sent, hosted);
            return Err(envelope);
        }
        let next = attempt + 1;
        let wait = policy.wait_before(next, random_unit(next));
        let reason = if cannot_resume {
            format!(
                "the server cannot resume the response ({}); sending it again from the start",
                cut.describe(seen.events)
            )
        } else {
            cut.describe(seen.events)
        };
        // INFO, not WARN: the caller is told through the sink and says it its own way.
        tracing::info!(
            attempt = next,
            max_attempts,
            wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            resumed = resumable,
            %reason,
            "stream cut; recovering"
        );
        sink(&StreamDelta::Retrying {
            cause: RetryCause::StreamCut,
            attempt: next,
            max_attempts,
            wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            reason,
            events: seen.events,
            resumed: resumable,
        });
        tokio::time::sleep(wait).await;
        if resumable {
            let id = fold.response_id().unwrap_or_default().to_owned();
            resume_after = Some((id, fold.last_sequence_number()));
        } else {
            resume_after = None;
            fold = StreamFold::new();
            seen = Seen::default();
        }
    }
    let folded = fold
        .finish()
        .map_err(|error| map_mapping_error(&error, &context).envelope)?;
    let (mut mapped, response) = map_folded(folded, &context);
    if mapped.envelope.kind == aptix_model::contract::Kind::Error {
        // A transient failure that came again on the last attempt.
        note_attempts(&mut mapped.envelope, sent, None);
    }
    Ok(Streamed { response, mapped })
}

/// Runs one request of a model call; with its output, how many times it was sent. The
/// HTTP client sends a failed request again on its own (its retry policy's) and tells
/// only the observers in scope ([`aptix_client::observe_retries`]): a count of the
/// call's attempts without those would say 2 where a person was shown "attempt 3 of 3".
pub(crate) async fn counting_sends<F: Future>(request: F) -> (F::Output, u32) {
    let resent = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&resent);
    let output = aptix_client::observe_retries(
        move |_: &aptix_client::RetryNotice| {
            counter.fetch_add(1, Ordering::Relaxed);
        },
        request,
    )
    .await;
    (output, resent.load(Ordering::Relaxed).saturating_add(1))
}

/// Ends a failed model call's error message with `also`, a further note, and how many
/// requests the call sent, when more than one (`fake 503 (gave up after 3 attempts)`).
pub(crate) fn note_attempts(envelope: &mut AgentExecuteResponse, sent: u32, also: Option<&str>) {
    let notes: Vec<String> = also
        .map(str::to_owned)
        .into_iter()
        .chain((sent > 1).then(|| format!("gave up after {sent} attempts")))
        .collect();
    if !notes.is_empty() {
        let message = envelope.error_message.take().unwrap_or_default();
        envelope.error_message = Some(format!("{message} ({})", notes.join("; ")));
    }
}

/// The delta that tells a streaming caller about a model request that failed before its
/// reply and is sent again ([`aptix_client::observe_retries`] reports it): a
/// [`StreamDelta::Retrying`] with no events received and nothing resumed, the shape a
/// cut stream's notice has, so a front end tells both the same way.
pub fn retry_delta(notice: &aptix_client::RetryNotice) -> StreamDelta {
    StreamDelta::Retrying {
        cause: RetryCause::RequestFailed,
        attempt: notice.attempt,
        max_attempts: notice.max_attempts,
        wait_ms: u64::try_from(notice.wait.as_millis()).unwrap_or(u64::MAX),
        reason: notice.reason.clone(),
        events: 0,
        resumed: false,
    }
}

/// The reply's `x-ratelimit-*` headers, for `aptix ask -v` and other INFO readers.
pub(crate) fn log_rate_limits(meta: &aptix_client::ReplyMeta) {
    if let Some(limits) = &meta.rate_limits {
        tracing::info!("rate limits: {limits}");
    }
}

/// The error envelope of the last attempt.
/// What arrived is kept as its `text`, as `map_mapping_error` keeps it for a stream
/// that ended early: a client that reads the envelope alone (`--json`, a JSON client of
/// the service) is not left with less than the stream showed.
fn give_up(cut: &Cut, fold: StreamFold, context: &TurnContext) -> AgentExecuteResponse {
    match cut {
        Cut::Open(error) | Cut::Stream(error) => {
            let mut envelope = error_envelope(error, context);
            envelope.text = fold.partial_text();
            envelope
        }
        Cut::EndedEarly | Cut::Failed(..) => match fold.finish() {
            Err(error) => map_mapping_error(&error, context).envelope,
            // Not reached: a cut fold has no terminal event.
            Ok(folded) => map_folded(folded, context).0.envelope,
        },
    }
}

/// A provider failure as an error envelope, with the wait the server asked for (a
/// `retry-after` the client did not obey) in the message.
pub(crate) fn error_envelope(error: &ClientError, context: &TurnContext) -> AgentExecuteResponse {
    let mut envelope = client_error_envelope(error, context);
    // A wait the server asked for is news only where waiting helps: not for an account
    // out of quota, nor a request it refused.
    if let ClientError::Status {
        retry_after: Some(wait),
        ..
    } = error
        && error.is_retryable()
    {
        let message = envelope.error_message.take().unwrap_or_default();
        envelope.error_message = Some(format!("{message}{}", requested_wait(Some(*wait))));
    }
    envelope
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn hosted_tools_are_recognised_and_function_calls_are_not() {
        assert!(starts_hosted_tool(
            "response.web_search_call.in_progress",
            "{}"
        ));
        assert!(starts_hosted_tool(
            "response.output_item.added",
            r#"{"item":{"type":"code_interpreter_call"}}"#
        ));
        assert!(!starts_hosted_tool(
            "response.output_item.added",
            r#"{"item":{"type":"function_call"}}"#
        ));
        // As sent: the item's id first, other members around it, an escaped type.
        assert!(starts_hosted_tool(
            "response.output_item.added",
            r#"{"type":"response.output_item.added","output_index":1,"item":{"id":"ws_1","type":"web\u005fsearch_call","status":"in_progress","action":{"type":"search"}},"sequence_number":3}"#
        ));
        assert!(!starts_hosted_tool(
            "response.output_item.added",
            r#"{"item":{"id":"msg_1","type":"message","content":[{"type":"output_text"}]}}"#
        ));
        assert!(!starts_hosted_tool(
            "response.output_item.added",
            "not json"
        ));
        assert!(!starts_hosted_tool(
            "response.function_call_arguments.delta",
            "{}"
        ));
        assert!(!starts_hosted_tool("response.output_text.delta", "{}"));
        // A message whose text names a hosted tool is still a message.
        assert!(!starts_hosted_tool(
            "response.output_item.added",
            r#"{"item":{"id":"msg_2","type":"message","content":[{"type":"output_text","text":"a web_search_call"}]}}"#
        ));
    }

    #[test]
    fn waits_double_up_to_the_cap_and_jitter_adds_at_most_one_more() {
        let policy = StreamRecovery {
            jitter: false,
            ..StreamRecovery::default()
        };
        let waits: Vec<_> = (2..=7).map(|n| policy.wait_before(n, 0.9)).collect();
        let ms = |n| Duration::from_millis(n);
        assert_eq!(
            waits,
            [ms(500), ms(1000), ms(2000), ms(4000), ms(8000), ms(8000)]
        );
        let jittered = StreamRecovery::default();
        assert_eq!(jittered.wait_before(3, 0.5), ms(1500));
        assert_eq!(jittered.wait_before(3, 7.0), ms(2000));
        let unit = random_unit(3);
        assert!((0.0..1.0).contains(&unit));
    }

    #[test]
    fn background_needs_store() {
        let mut body = CreateResponseRequest::default();
        assert!(!is_background(&body));
        body.extra
            .insert("background".into(), serde_json::Value::Bool(true));
        assert!(is_background(&body));
        body.store = Some(false);
        assert!(!is_background(&body));
    }
}

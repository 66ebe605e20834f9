//! `GET /metrics`: the service's counters and histograms in the Prometheus (OpenMetrics)
//! text format, and [`TimedProvider`], the decorator that times the provider so that a
//! turn's own cost (orchestration overhead) can be told from the model's.
//!
//! Nothing secret is recorded: labels are route templates (`/v1/sessions/{id}`, never a
//! session id), statuses, error codes, token kinds and call kinds.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use aptix_client::{Capabilities, ClientError, EventStream, ProviderResponse, ResponsesProvider};
use aptix_model::contract::{AgentExecuteResponse, Kind};
use aptix_model::wire::{CompactRequest, CompactResponse, CreateResponseRequest};
use async_trait::async_trait;
use futures_util::Stream;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The content type of `GET /metrics`.
pub(crate) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The longest envelope `errorCode` kept as a label; longer ones are cut, so that a
/// provider's odd error cannot blow up a label.
const MAX_CODE_LABEL: usize = 64;

/// The most distinct envelope `errorCode`s kept as labels; later new ones are counted
/// as `other`, so that a provider inventing codes cannot grow the series without bound.
const MAX_CODE_LABELS: usize = 100;

/// An envelope's `errorCode` as a label value: what a provider sent is not trusted, so
/// only ASCII letters, digits, `_`, `.` and `-` are kept (any other character becomes
/// `_`: a quote, a backslash or a line break would break the exposition), cut at
/// [`MAX_CODE_LABEL`]; none, or nothing left, is `unknown`.
fn code_label(code: Option<&str>) -> String {
    let label: String = code
        .unwrap_or_default()
        .chars()
        .take(MAX_CODE_LABEL)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if label.is_empty() {
        "unknown".to_owned()
    } else {
        label
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    method: &'static str,
    status: u16,
}

/// One label, `kind`: a token kind, a rate limit kind, a retry kind.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

/// Why a provider call was made again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RetryKind {
    /// A request that failed before its reply (429, 5xx, a connection failure) was sent
    /// again.
    Request,
    /// A stream cut mid-answer was resumed or sent again.
    Stream,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    /// `response` (an error response or SSE `error` event, code an [`ErrorCode`]) or
    /// `envelope` (a `200` envelope of `kind: error`, code its `errorCode`).
    ///
    /// [`ErrorCode`]: crate::ErrorCode
    source: &'static str,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    /// `create`, `stream` or `resume`.
    call: &'static str,
    /// `ok`, `error` or `cut` (see [`Metrics::provider_call`]).
    outcome: &'static str,
}

fn turn_buckets() -> Histogram {
    // 1 ms .. ~17 min: past the default turn deadline (10 min), so that no turn the
    // service lets run lands in `+Inf` alone.
    Histogram::new(exponential_buckets(0.001, 2.0, 21))
}

fn overhead_buckets() -> Histogram {
    // 25 µs .. ~0.8 s.
    Histogram::new(exponential_buckets(0.000_025, 2.0, 16))
}

struct Inner {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    turn_seconds: Histogram,
    in_flight: Gauge,
    tokens: Family<KindLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    /// The envelope error codes labelled so far (at most [`MAX_CODE_LABELS`]).
    envelope_codes: std::sync::Mutex<std::collections::HashSet<String>>,
    rate_limit_remaining: Family<KindLabels, Gauge>,
    retries: Family<KindLabels, Counter>,
    provider_seconds: Family<CallLabels, Histogram, fn() -> Histogram>,
    overhead_seconds: Histogram,
    /// Whether a [`TimedProvider`] reports here: without one, a turn's provider time is
    /// unknown and no overhead is recorded.
    provider_timed: AtomicBool,
}

/// The service's metrics registry. Cheap to clone (shared); give the same one to
/// [`ServerConfig::metrics`](crate::ServerConfig::metrics) and to [`TimedProvider::new`].
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics")
            .field(
                "provider_timed",
                &self.inner.provider_timed.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric of the service registered (names prefixed
    /// `aptix_`).
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("aptix");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route template, method and status",
            requests.clone(),
        );
        let turn_seconds = turn_buckets();
        registry.register(
            "turn_duration_seconds",
            "Wall time of a turn that called the model, from its start to its envelope or error (with TimedProvider, a turn answered from the store or refused before calling the model is not one)",
            turn_seconds.clone(),
        );
        let in_flight = Gauge::default();
        registry.register("turns_in_flight", "Turns running now", in_flight.clone());
        let tokens = Family::<KindLabels, Counter>::default();
        registry.register(
            "tokens",
            "Tokens reported in envelopes' usage: input, output, cached, reasoning (with TimedProvider, an envelope answered again from the store is not counted again)",
            tokens.clone(),
        );
        // Every kind from the start, so that a dashboard's rate() has a series before the
        // first turn that reports it.
        for kind in ["input", "output", "cached", "reasoning"] {
            drop(tokens.get_or_create(&KindLabels { kind }));
        }
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "errors",
            "Errors: source=response for error responses and SSE error events (code is the ErrorCode), source=envelope for envelopes of kind error (code is their errorCode)",
            errors.clone(),
        );
        let rate_limit_remaining = Family::<KindLabels, Gauge>::default();
        registry.register(
            "provider_rate_limit_remaining",
            "What the provider's last reply said is left of its rate limits (x-ratelimit-remaining-requests / -tokens), kind=requests or tokens",
            rate_limit_remaining.clone(),
        );
        let retries = Family::<KindLabels, Counter>::default();
        registry.register(
            "provider_retries",
            "Provider calls made again: kind=request (a request that failed before its reply, with 429, 5xx or a connection failure, sent again) or kind=stream (a stream cut mid-answer, resumed or sent again)",
            retries.clone(),
        );
        for kind in ["request", "stream"] {
            drop(retries.get_or_create(&KindLabels { kind }));
        }
        let provider_seconds: Family<CallLabels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(turn_buckets);
        registry.register(
            "provider_call_duration_seconds",
            "Time in the provider per call (streamed calls: until the stream ends); needs TimedProvider",
            provider_seconds.clone(),
        );
        let overhead_seconds = overhead_buckets();
        registry.register(
            "turn_overhead_seconds",
            "Turn time minus time waiting on the provider; needs TimedProvider",
            overhead_seconds.clone(),
        );
        Metrics {
            inner: Arc::new(Inner {
                registry,
                requests,
                turn_seconds,
                in_flight,
                tokens,
                errors,
                envelope_codes: std::sync::Mutex::default(),
                rate_limit_remaining,
                retries,
                provider_seconds,
                overhead_seconds,
                provider_timed: AtomicBool::new(false),
            }),
        }
    }

    /// The registry as OpenMetrics text (what `GET /metrics` sends).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.inner.registry);
        text
    }

    /// A model call sent again after `wait`: counted, and the wait counted as the turn's
    /// time waiting on its provider, not as its overhead.
    pub(crate) fn retry(&self, kind: RetryKind, wait: Duration) {
        // A request sent again waits inside its provider call, whose time counts that
        // wait already; a cut stream waits between two calls.
        let (label, waits_between_calls) = match kind {
            RetryKind::Request => ("request", false),
            RetryKind::Stream => ("stream", true),
        };
        self.inner
            .retries
            .get_or_create(&KindLabels { kind: label })
            .inc();
        if waits_between_calls {
            let nanos = u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX);
            let _ =
                TURN_METER.try_with(|turn| turn.provider_nanos.fetch_add(nanos, Ordering::Relaxed));
        }
    }

    pub(crate) fn request(&self, route: &str, method: &axum::http::Method, status: u16) {
        self.inner
            .requests
            .get_or_create(&RequestLabels {
                route: route.to_owned(),
                method: method_label(method),
                status,
            })
            .inc();
    }

    pub(crate) fn response_error(&self, code: crate::ErrorCode) {
        self.inner
            .errors
            .get_or_create(&ErrorLabels {
                source: "response",
                code: code.as_str().to_owned(),
            })
            .inc();
    }

    /// Counts what an envelope says: its tokens, its error when it is one, and what is
    /// left of the provider's rate limits when its reply said.
    pub(crate) fn envelope(&self, envelope: &AgentExecuteResponse) {
        if let Some(limits) = &envelope.rate_limits {
            for (kind, remaining) in [
                ("requests", limits.remaining_requests),
                ("tokens", limits.remaining_tokens),
            ] {
                if let Some(remaining) = remaining {
                    self.inner
                        .rate_limit_remaining
                        .get_or_create(&KindLabels { kind })
                        .set(i64::try_from(remaining).unwrap_or(i64::MAX));
                }
            }
        }
        let usage = &envelope.usage;
        for (kind, count) in [
            ("input", usage.prompt_tokens),
            ("output", usage.completion_tokens),
            ("cached", usage.cached_tokens),
            ("reasoning", usage.reasoning_tokens),
        ] {
            if count > 0 {
                self.inner
                    .tokens
                    .get_or_create(&KindLabels { kind })
                    .inc_by(count);
            }
        }
        if envelope.kind == Kind::Error {
            let mut code = code_label(envelope.error_code.as_deref());
            {
                let mut seen = self
                    .inner
                    .envelope_codes
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if !seen.contains(&code) {
                    if seen.len() < MAX_CODE_LABELS {
                        seen.insert(code.clone());
                    } else {
                        code = "other".to_owned();
                    }
                }
            }
            self.inner
                .errors
                .get_or_create(&ErrorLabels {
                    source: "envelope",
                    code,
                })
                .inc();
        }
    }

    /// Runs `turn` as one turn: counted in flight, and timed with (given a
    /// [`TimedProvider`]) its overhead. Also says whether it called the model: `false`
    /// for a turn answered from the store or refused before any call, which is not timed
    /// as a turn (its near-zero time would pull the turn percentiles down) and whose
    /// envelope's tokens were counted when it ran; always `true` without a
    /// `TimedProvider`, which alone sees the calls.
    pub(crate) async fn turn<F: Future>(&self, turn: F) -> (F::Output, bool) {
        let inner = &self.inner;
        inner.in_flight.inc();
        let _in_flight = InFlight(&inner.in_flight);
        let meter = Arc::new(TurnMeter::default());
        let started = Instant::now();
        let output = TURN_METER.scope(Arc::clone(&meter), turn).await;
        let elapsed = started.elapsed();
        let timed = inner.provider_timed.load(Ordering::Relaxed);
        let called = !timed || meter.calls.load(Ordering::Relaxed) > 0;
        if called {
            inner.turn_seconds.observe(elapsed.as_secs_f64());
            if timed {
                let waited = Duration::from_nanos(meter.provider_nanos.load(Ordering::Relaxed));
                inner
                    .overhead_seconds
                    .observe(elapsed.saturating_sub(waited).as_secs_f64());
            }
        }
        (output, called)
    }

    /// One provider call, by its outcome: `ok`, `error`, or `cut` (a stream that ended
    /// or was given up before its final event, or a call stopped before its reply).
    fn provider_call(
        &self,
        call: &'static str,
        outcome: &'static str,
        took: Duration,
        turn: Option<&TurnMeter>,
    ) {
        self.inner
            .provider_seconds
            .get_or_create(&CallLabels { call, outcome })
            .observe(took.as_secs_f64());
        if let Some(turn) = turn {
            let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
            turn.provider_nanos.fetch_add(nanos, Ordering::Relaxed);
        }
    }
}

/// Decrements the in-flight gauge however the turn ends (even when its task is
/// aborted).
struct InFlight<'a>(&'a Gauge);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// What the current turn's provider calls added up to.
#[derive(Default)]
struct TurnMeter {
    /// Nanoseconds spent waiting on the provider.
    provider_nanos: AtomicU64,
    /// Provider calls begun (counted as each starts, so that a turn stopped while its
    /// call waits, by its deadline or a shutdown, is still a turn that called the model).
    calls: AtomicU64,
}

tokio::task_local! {
    /// The current turn's meter.
    static TURN_METER: Arc<TurnMeter>;
}

/// One provider call, timed from its start and recorded once: with the outcome it ends
/// with, or as `cut` when it is dropped first. A call the turn's deadline or a shutdown
/// stops while it waits is still time spent waiting on the provider: left unrecorded,
/// its wait would count as the turn's own overhead.
struct CallTimer {
    call: &'static str,
    started: Instant,
    metrics: Metrics,
    /// The turn it is a call of, when it runs in one.
    turn: Option<Arc<TurnMeter>>,
    recorded: bool,
}

impl CallTimer {
    /// Starts timing a call of the current turn, counting it as a call the turn made.
    fn begin(metrics: &Metrics, call: &'static str) -> CallTimer {
        let turn = TURN_METER.try_with(Arc::clone).ok();
        if let Some(turn) = &turn {
            turn.calls.fetch_add(1, Ordering::Relaxed);
        }
        CallTimer {
            call,
            started: Instant::now(),
            metrics: metrics.clone(),
            turn,
            recorded: false,
        }
    }

    fn end(&mut self, outcome: &'static str) {
        if !self.recorded {
            self.recorded = true;
            self.metrics.provider_call(
                self.call,
                outcome,
                self.started.elapsed(),
                self.turn.as_deref(),
            );
        }
    }
}

impl Drop for CallTimer {
    fn drop(&mut self) {
        self.end("cut");
    }
}

/// A [`ResponsesProvider`] that times every call of the provider it wraps into a
/// [`Metrics`] registry: `aptix_provider_call_duration_seconds`, and for turns served by
/// the router, `aptix_turn_overhead_seconds` (turn time minus provider time).
///
/// The router receives a built `Orchestrator`, so the binary wraps its provider before
/// building it:
///
/// ```
/// use std::sync::Arc;
///
/// use aptix_client::FakeProvider;
/// use aptix_orchestrator::{InMemorySessionStore, Orchestrator};
/// use aptix_server::{Metrics, ServerConfig, TimedProvider, router};
///
/// let metrics = Metrics::new();
/// let provider = TimedProvider::new(Arc::new(FakeProvider::new()), metrics.clone());
/// let orchestrator =
///     Orchestrator::builder(Arc::new(provider), Arc::new(InMemorySessionStore::new())).build()?;
/// let config = ServerConfig { metrics, ..ServerConfig::default() };
/// let app = router(Arc::new(orchestrator), config);
/// # drop(app);
/// # Ok::<(), aptix_orchestrator::OrchestratorError>(())
/// ```
///
/// A streamed call is timed until its stream ends (its last event, an error, or the
/// stream being dropped).
pub struct TimedProvider {
    inner: Arc<dyn ResponsesProvider>,
    metrics: Metrics,
}

impl TimedProvider {
    /// Wraps `inner`, reporting into `metrics`. Build the orchestrator the router runs
    /// on this provider: once a `TimedProvider` reports into a registry, a turn that
    /// made no call through one counts as answered without the model (a stored
    /// envelope), and is not timed as a turn nor its tokens counted.
    pub fn new(inner: Arc<dyn ResponsesProvider>, metrics: Metrics) -> TimedProvider {
        metrics.inner.provider_timed.store(true, Ordering::Relaxed);
        TimedProvider { inner, metrics }
    }

    fn timed_stream(
        mut timer: CallTimer,
        result: Result<EventStream, ClientError>,
    ) -> Result<EventStream, ClientError> {
        match result {
            Ok(stream) => {
                let meta = stream.meta().clone();
                Ok(EventStream::new(
                    meta,
                    TimedStream {
                        inner: stream,
                        timer,
                        terminal: false,
                    },
                ))
            }
            Err(error) => {
                timer.end("error");
                Err(error)
            }
        }
    }
}

impl fmt::Debug for TimedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimedProvider").finish_non_exhaustive()
    }
}

#[async_trait]
impl ResponsesProvider for TimedProvider {
    async fn create(
        &self,
        request: &CreateResponseRequest,
    ) -> Result<ProviderResponse, ClientError> {
        let mut timer = CallTimer::begin(&self.metrics, "create");
        let result = self.inner.create(request).await;
        timer.end(if result.is_ok() { "ok" } else { "error" });
        result
    }

    async fn stream(&self, request: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        let timer = CallTimer::begin(&self.metrics, "stream");
        let result = self.inner.stream(request).await;
        TimedProvider::timed_stream(timer, result)
    }

    async fn resume_stream(
        &self,
        response_id: &str,
        starting_after: Option<u64>,
    ) -> Result<EventStream, ClientError> {
        let timer = CallTimer::begin(&self.metrics, "resume");
        let result = self.inner.resume_stream(response_id, starting_after).await;
        TimedProvider::timed_stream(timer, result)
    }

    async fn cancel(&self, response_id: &str) -> Result<(), ClientError> {
        // Not a call of the turn's answer: not timed as provider time.
        self.inner.cancel(response_id).await
    }

    async fn compact(&self, request: &CompactRequest) -> Result<CompactResponse, ClientError> {
        let mut timer = CallTimer::begin(&self.metrics, "compact");
        let result = self.inner.compact(request).await;
        timer.end(if result.is_ok() { "ok" } else { "error" });
        result
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn redactor(&self) -> Option<std::sync::Arc<aptix_client::Redactor>> {
        self.inner.redactor()
    }
}

/// A provider stream whose call is timed until it ends or is dropped.
struct TimedStream {
    inner: EventStream,
    timer: CallTimer,
    /// Its final event came.
    terminal: bool,
}

impl TimedStream {
    fn finish(&mut self, failed: bool) {
        let outcome = match (failed, self.terminal) {
            (true, _) => "error",
            (false, true) => "ok",
            (false, false) => "cut",
        };
        self.timer.end(outcome);
    }
}

/// Whether an event is a final one (`response.completed`, `incomplete`, `failed`),
/// named by its `event:` field or, from a server that sends none, by its data's `type`.
fn is_final(name: Option<&str>, data: &str) -> bool {
    use aptix_model::wire::stream::StreamEvent;
    #[derive(serde::Deserialize)]
    struct Typed<'a> {
        #[serde(borrow, rename = "type")]
        kind: std::borrow::Cow<'a, str>,
    }
    match name {
        Some(name) => StreamEvent::is_terminal_type(name),
        None => serde_json::from_str::<Typed<'_>>(data)
            .is_ok_and(|typed| StreamEvent::is_terminal_type(&typed.kind)),
    }
}

impl Stream for TimedStream {
    type Item = <EventStream as Stream>::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let item = Pin::new(&mut this.inner).poll_next(cx);
        match &item {
            Poll::Ready(Some(Ok(event)))
                if !this.terminal && is_final(event.event.as_deref(), &event.data) =>
            {
                this.terminal = true;
            }
            Poll::Ready(None) => this.finish(false),
            Poll::Ready(Some(Err(_))) => this.finish(true),
            _ => {}
        }
        item
    }
}

impl Drop for TimedStream {
    fn drop(&mut self) {
        self.finish(false);
    }
}

/// A request's method as a label: the standard methods by name, any other `other`. HTTP
/// lets a client send any token as a method, and one series per token sent would let a
/// client grow the metrics (and this process's memory) without bound.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    for (known, label) in [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::DELETE, "DELETE"),
        (Method::PUT, "PUT"),
        (Method::PATCH, "PATCH"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ] {
        if *method == known {
            return label;
        }
    }
    "other"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(code: &str) -> AgentExecuteResponse {
        let mut envelope = AgentExecuteResponse::new(Kind::Error);
        envelope.error_code = Some(code.to_owned());
        envelope
    }

    #[test]
    fn every_call_of_the_provider_goes_through_and_is_timed() {
        // A method left to the trait's default would answer `Unsupported` while the
        // inner provider's capabilities still claim it: the service then summarised by
        // a model call where `aptix ask` used the provider's compaction.
        let fake = Arc::new(aptix_client::FakeProvider::new());
        fake.push_compacted(CompactResponse {
            id: "cmp_1".to_owned(),
            ..CompactResponse::default()
        });
        let metrics = Metrics::new();
        let timed = TimedProvider::new(fake.clone(), metrics.clone());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let compacted = runtime
            .block_on(timed.compact(&CompactRequest {
                model: "m".to_owned(),
                ..CompactRequest::default()
            }))
            .unwrap();
        assert_eq!(compacted.id, "cmp_1");
        runtime.block_on(timed.cancel("resp_1")).unwrap();
        let kinds: Vec<aptix_client::CallKind> =
            fake.calls().iter().map(|call| call.kind).collect();
        assert_eq!(
            kinds,
            [
                aptix_client::CallKind::Compact,
                aptix_client::CallKind::Cancel
            ]
        );
        let text = metrics.encode();
        assert!(
            text.contains(
                "aptix_provider_call_duration_seconds_count{call=\"compact\",outcome=\"ok\"} 1"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_providers_error_code_cannot_break_the_exposition_or_grow_it_without_bound() {
        let metrics = Metrics::new();
        metrics.envelope(&failed("bad\"} 1\n# EOF\nevil_metric{a=\""));
        metrics.envelope(&failed("back\\slash"));
        metrics.envelope(&AgentExecuteResponse::new(Kind::Error));
        let text = metrics.encode();
        assert_eq!(text.matches("# EOF").count(), 1, "{text}");
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(!text.contains("evil_metric{"), "{text}");
        assert!(
            text.contains(
                "aptix_errors_total{source=\"envelope\",code=\"bad___1___EOF_evil_metric_a__\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains("code=\"back_slash\"} 1"), "{text}");
        assert!(text.contains("code=\"unknown\"} 1"), "{text}");

        for n in 0..2 * MAX_CODE_LABELS {
            metrics.envelope(&failed(&format!("invented_{n}")));
        }
        let text = metrics.encode();
        let series = text
            .lines()
            .filter(|line| line.starts_with("aptix_errors_total{source=\"envelope\""))
            .count();
        assert_eq!(series, MAX_CODE_LABELS + 1, "{text}");
        let others = (2 * MAX_CODE_LABELS - (MAX_CODE_LABELS - 3)).to_string();
        assert!(
            text.contains(&format!("code=\"other\"}} {others}")),
            "{text}"
        );
    }
}

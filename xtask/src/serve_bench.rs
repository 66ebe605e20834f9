//! `cargo xtask serve-bench`: load on the HTTP service, side by side with the same
//! requests sent straight to a fake, so the service's overhead is a difference measured
//! in the same run on the same machine.
//!
//! Three targets per mode (JSON, streamed) and concurrency (1, 16, 64), each on a fresh
//! server and in-memory store:
//!
//! - `aptix`: `POST /v1/agent/execute` on the router served on loopback, over the
//!   in-memory store, with a provider that answers instantly in-process (a canned
//!   response's JSON, decoded on each call as a provider over HTTP decodes its reply,
//!   or the canned events of `sse_text_deltas.sse`, which the fold decodes), wrapped in
//!   `TimedProvider`.
//! - `fake`: the same request, same client, to a loopback axum route that answers with
//!   the exact bytes `aptix` answered (the envelope, or the whole event stream, chunked
//!   as the service sends it) and does nothing else: the HTTP round trip alone.
//! - `direct`: the orchestrator called in-process, no HTTP: the turn alone.
//!
//! Overhead = `aptix` - `fake`, per percentile. At concurrency 16 (the target's) the
//! pair is also run in seven interleaved rounds, and the target is read off the median
//! of their p99 overheads; the host's share of the CPU time (steal) is printed last.
//! Client, servers and fake share one tokio runtime (2 worker threads on the 2-core
//! machine), as they share the cores.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use aptix_client::{
    Capabilities, ClientError, EventStream, ProviderResponse, ReplyMeta, ResponsesProvider,
};
use aptix_model::contract::AgentExecuteRequest;
use aptix_model::wire::{CreateResponseRequest, Response, StreamEvent};
use aptix_orchestrator::{InMemorySessionStore, Orchestrator};
use aptix_server::{Metrics, ServerConfig, TimedProvider};
use async_trait::async_trait;
use axum::serve::ListenerExt as _;

const FIXTURE: &str = include_str!("../../tests/fixtures/responses/sse_text_deltas.sse");
const CONCURRENCY: [usize; 3] = [1, 16, 64];
/// The open-loop runs: 16 clients at fixed offered rates (turns per second), below and at
/// the throughput target, so that the latency measured is the service's and not the
/// queue of a saturated machine.
const PACED_CONCURRENCY: usize = 16;
const PACED_RATES: [f64; 3] = [1_000.0, 2_500.0, 5_000.0];
/// The closed loop at the target's concurrency, run again in this many rounds, the fake
/// and the service interleaved: a single run's p99 moves by half a millisecond with the
/// machine's drift, so the target is judged on the median of the rounds' p99 overheads.
const ROUNDS_CONCURRENCY: usize = 16;
const ROUNDS: usize = 7;

/// A provider that answers at once: the canned response, or its canned events. It
/// yields to the runtime once before answering, as a provider over the network waits
/// for its reply at least once: a turn that never waited would take a path no real turn
/// takes (a streamed turn's head goes out with its first events, after that wait).
struct InstantProvider {
    /// The canned response's JSON, decoded on each call as `OpenAiProvider` decodes a
    /// body it received.
    raw_json: String,
    /// The fixture's events as the SSE decoder frames them: what a provider over HTTP
    /// hands over (text to decode), not typed events encoded again for the occasion.
    frames: Vec<aptix_sse::SseEvent>,
}

#[async_trait]
impl ResponsesProvider for InstantProvider {
    async fn create(&self, _: &CreateResponseRequest) -> Result<ProviderResponse, ClientError> {
        wait_once().await;
        // What a provider over HTTP does with the body it received: decodes it, and
        // keeps its text as `rawResponseJson`. (Streamed, the fold decodes the events.)
        let raw_json = self.raw_json.clone();
        let response =
            serde_json::from_str::<Response>(&raw_json).map_err(|error| ClientError::Decode {
                what: "the canned response",
                position: 0,
                message: error.to_string(),
                excerpt: String::new(),
                request_id: None,
            })?;
        let mut reply = ProviderResponse::new(response, ReplyMeta::synthetic());
        reply.raw_json = Some(raw_json);
        Ok(reply)
    }

    async fn stream(&self, _: &CreateResponseRequest) -> Result<EventStream, ClientError> {
        wait_once().await;
        Ok(EventStream::new(
            ReplyMeta::synthetic(),
            futures_util::stream::iter(self.frames.clone().into_iter().map(Ok)),
        ))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::openai_responses()
    }
}

/// Returns `Pending` once, asking to be polled again at once: the turn waits, as it
/// waits for a provider's reply, but for nothing. (`tokio::task::yield_now` would also
/// wait for the runtime's next look at its sockets: 13 ms p99 for the in-process turn.)
async fn wait_once() {
    let mut waited = false;
    std::future::poll_fn(|cx| {
        if waited {
            std::task::Poll::Ready(())
        } else {
            waited = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    })
    .await;
}

fn provider() -> Result<Arc<InstantProvider>> {
    let events = FIXTURE
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(StreamEvent::from_json)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| anyhow::anyhow!("the fixture does not decode: {error:?}"))?;
    let response = events
        .last()
        .and_then(StreamEvent::terminal_response)
        .context("the fixture has no terminal event")?
        .clone();
    let raw_json = serde_json::to_string(&response).context("encoding the canned response")?;
    let mut decoder = aptix_sse::SseDecoder::new();
    decoder.feed(FIXTURE.as_bytes());
    let mut frames = Vec::new();
    while let Some(frame) = decoder.next_event() {
        frames.push(frame.map_err(|error| anyhow::anyhow!("the fixture's framing: {error}"))?);
    }
    if frames.len() != events.len() {
        bail!(
            "the fixture framed {} events, decoded {}",
            frames.len(),
            events.len()
        );
    }
    Ok(Arc::new(InstantProvider { raw_json, frames }))
}

static IDS: AtomicU64 = AtomicU64::new(0);

/// A new turn on a new session, so that no turn waits on another's session.
fn body() -> String {
    let n = IDS.fetch_add(1, Ordering::Relaxed);
    format!(r#"{{"sessionId":"bench-{n}","turnId":"t1","instruction":"Say hello"}}"#)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Json,
    Streamed,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Json => "json",
            Mode::Streamed => "sse",
        }
    }
}

struct Stats {
    latencies: Vec<Duration>,
    failures: u64,
    elapsed: Duration,
    /// CPU time the whole process (client, fake or service) spent during the run.
    cpu: Option<Duration>,
}

/// CPU time (user and system) this process has used so far, from `/proc/self/stat`
/// (Linux; `None` elsewhere). It counts what the machine spent on the run, not what
/// it waited for, so it varies far less than throughput on a shared virtual machine.
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces) in parentheses.
    let fields: Vec<&str> = stat
        .get(stat.rfind(')')? + 1..)?
        .split_whitespace()
        .collect();
    let ticks = |index: usize| fields.get(index)?.parse::<u64>().ok();
    // utime and stime, in USER_HZ ticks (100 per second on Linux).
    let total = ticks(11)? + ticks(12)?;
    Some(Duration::from_millis(total * 10))
}

/// CPU time the host took from this virtual machine so far (`steal` of `/proc/stat`, all
/// CPUs; Linux, `None` elsewhere): time the machine's cores ran someone else's work, which
/// shows as latency no code of ours caused.
fn stolen_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|line| line.starts_with("cpu "))?;
    // user nice system idle iowait irq softirq steal, in USER_HZ ticks (100 a second).
    let steal = line.split_whitespace().nth(8)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(steal * 10))
}

impl Stats {
    fn merge(mut a: Stats, b: Stats) -> Stats {
        a.latencies.extend(b.latencies);
        a.latencies.sort_unstable();
        a.failures += b.failures;
        a.elapsed += b.elapsed;
        a.cpu = a.cpu.zip(b.cpu).map(|(a, b)| a + b);
        a
    }

    fn throughput(&self) -> f64 {
        self.latencies.len() as f64 / self.elapsed.as_secs_f64()
    }

    /// CPU microseconds per completed turn, for the whole process.
    fn cpu_per_turn(&self) -> Option<f64> {
        let turns = self.latencies.len();
        (turns > 0).then(|| self.cpu.map(|cpu| cpu.as_secs_f64() * 1e6 / turns as f64))?
    }

    fn percentile(&self, p: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((self.latencies.len() as f64) * p).ceil() as usize;
        self.latencies[rank.clamp(1, self.latencies.len()) - 1]
    }
}

/// Runs `call` from `concurrency` tasks for `duration`, each call timed end to end.
async fn load<F, Fut>(concurrency: usize, duration: Duration, call: F) -> Stats
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let call = Arc::new(call);
    let cpu_before = process_cpu();
    let started = Instant::now();
    let deadline = started + duration;
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let call = Arc::clone(&call);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(16 * 1024);
                let mut failures = 0u64;
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    if call().await {
                        latencies.push(sent.elapsed());
                    } else {
                        failures += 1;
                    }
                }
                (latencies, failures)
            })
        })
        .collect();
    let mut stats = Stats {
        latencies: Vec::new(),
        failures: 0,
        elapsed: Duration::ZERO,
        cpu: None,
    };
    for worker in workers {
        if let Ok((latencies, failures)) = worker.await {
            stats.latencies.extend(latencies);
            stats.failures += failures;
        }
    }
    stats.elapsed = started.elapsed();
    stats.cpu = process_cpu()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before));
    stats.latencies.sort_unstable();
    stats
}

/// How far behind its schedule a send counts as late.
const LATE: Duration = Duration::from_millis(2);

/// Runs `call` at an offered `rate` (calls per second) spread over `concurrency` tasks,
/// each sending on its own schedule (open loop), for `duration`, each call timed from
/// its send; the second value is how many sends were more than [`LATE`] behind their
/// schedule, which says whether the offered rate was really offered.
async fn paced_load<F, Fut>(
    concurrency: usize,
    rate: f64,
    duration: Duration,
    call: F,
) -> (Stats, u64)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let call = Arc::new(call);
    let started = Instant::now();
    let deadline = started + duration;
    let interval = Duration::from_secs_f64(concurrency as f64 / rate);
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let call = Arc::clone(&call);
            // Workers start spread over one interval, so the offered load is even.
            let mut due = started + interval.mul_f64(worker as f64 / concurrency as f64);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(16 * 1024);
                let (mut failures, mut late) = (0u64, 0u64);
                while due < deadline {
                    if Instant::now() < due {
                        tokio::time::sleep_until(due.into()).await;
                    }
                    // Timers have a millisecond's resolution and fire up to about that
                    // late: time from the send, and count the sends that were more
                    // than 2 ms behind their schedule (the machine did not keep up).
                    let sent = Instant::now();
                    if sent > due + LATE {
                        late += 1;
                    }
                    if call().await {
                        latencies.push(sent.elapsed());
                    } else {
                        failures += 1;
                    }
                    due += interval;
                }
                (latencies, failures, late)
            })
        })
        .collect();
    let mut stats = Stats {
        latencies: Vec::new(),
        failures: 0,
        elapsed: Duration::ZERO,
        cpu: None,
    };
    let mut late_total = 0;
    for worker in workers {
        if let Ok((latencies, failures, late)) = worker.await {
            stats.latencies.extend(latencies);
            stats.failures += failures;
            late_total += late;
        }
    }
    stats.elapsed = started.elapsed();
    stats.latencies.sort_unstable();
    (stats, late_total)
}

/// The service on a fresh store, served on loopback until [`Service::stop`].
struct Service {
    base: String,
    metrics: Metrics,
    stop: tokio::sync::oneshot::Sender<()>,
    served: tokio::task::JoinHandle<Result<(), aptix_server::ServerError>>,
}

impl Service {
    /// Stops the service and waits for it, so that its store (a run's sessions, tens of
    /// megabytes) is freed before the next run: every run starts from the same heap.
    async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        match tokio::time::timeout(Duration::from_secs(10), self.served).await {
            Ok(Ok(served)) => served.context("the service failed"),
            Ok(Err(join)) => Err(join).context("the service's task failed"),
            Err(_) => bail!("the service did not stop within 10 s"),
        }
    }
}

async fn start_aptix(provider: Arc<InstantProvider>) -> Result<Service> {
    let metrics = Metrics::new();
    let timed = Arc::new(TimedProvider::new(provider, metrics.clone()));
    let orchestrator = Orchestrator::builder(timed, Arc::new(InMemorySessionStore::new()))
        .build()
        .context("building the orchestrator")?;
    let config = ServerConfig {
        max_concurrent_turns: 4096,
        metrics: metrics.clone(),
        ..ServerConfig::default()
    };
    let header_read_timeout = config.header_read_timeout;
    let app = aptix_server::router(Arc::new(orchestrator), config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(aptix_server::serve(
        listener,
        app,
        header_read_timeout,
        async move {
            let _ = stopped.await;
        },
    ));
    Ok(Service {
        base,
        metrics,
        stop,
        served,
    })
}

/// The fake: answers every POST with `bytes`, doing nothing else. Framed as the service
/// frames the same answer: the envelope with its length, the event stream chunked (sent
/// as one chunk), so that the two differ only in what the service does.
async fn start_fake(bytes: axum::body::Bytes, mode: Mode) -> Result<String> {
    use axum::response::IntoResponse as _;
    use axum::routing::post;
    let app = axum::Router::new().route(
        "/v1/agent/execute",
        post(move |_body: axum::body::Bytes| {
            let bytes = bytes.clone();
            async move {
                match mode {
                    Mode::Json => (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        bytes,
                    )
                        .into_response(),
                    Mode::Streamed => (
                        [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
                        axum::body::Body::from_stream(futures_util::stream::once(async move {
                            Ok::<_, std::convert::Infallible>(bytes)
                        })),
                    )
                        .into_response(),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    // Served the way `aptix_server::serve` serves (TCP_NODELAY), so that the two differ
    // only in what the service does.
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(base)
}

fn request(client: &reqwest::Client, base: &str, mode: Mode) -> reqwest::RequestBuilder {
    let request = client
        .post(format!("{base}/v1/agent/execute"))
        .header("content-type", "application/json")
        .body(body());
    match mode {
        Mode::Json => request,
        Mode::Streamed => request.header("accept", "text/event-stream"),
    }
}

async fn http_load(
    client: &reqwest::Client,
    base: &str,
    mode: Mode,
    concurrency: usize,
    duration: Duration,
) -> Stats {
    let client = client.clone();
    let base = base.to_owned();
    load(concurrency, duration, move || {
        let sent = request(&client, &base, mode).send();
        async move {
            match sent.await {
                Ok(response) if response.status() == 200 => response.bytes().await.is_ok(),
                _ => false,
            }
        }
    })
    .await
}

async fn http_paced(
    client: &reqwest::Client,
    base: &str,
    mode: Mode,
    rate: f64,
    duration: Duration,
) -> (Stats, u64) {
    let client = client.clone();
    let base = base.to_owned();
    paced_load(PACED_CONCURRENCY, rate, duration, move || {
        let sent = request(&client, &base, mode).send();
        async move {
            match sent.await {
                Ok(response) if response.status() == 200 => response.bytes().await.is_ok(),
                _ => false,
            }
        }
    })
    .await
}

async fn direct_load(
    provider: Arc<InstantProvider>,
    mode: Mode,
    concurrency: usize,
    duration: Duration,
) -> Result<Stats> {
    let orchestrator = Arc::new(
        Orchestrator::builder(provider, Arc::new(InMemorySessionStore::new()))
            .build()
            .context("building the orchestrator")?,
    );
    Ok(load(concurrency, duration, move || {
        let orchestrator = Arc::clone(&orchestrator);
        async move {
            let Ok(request) = AgentExecuteRequest::from_json_slice(body().as_bytes()) else {
                return false;
            };
            match mode {
                Mode::Json => orchestrator.execute(request).await.is_ok(),
                Mode::Streamed => {
                    let mut sink = |_: &aptix_mapping::StreamDelta| {};
                    orchestrator
                        .execute_streaming(request, &mut sink)
                        .await
                        .is_ok()
                }
            }
        }
    })
    .await)
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Mean of `aptix_turn_overhead_seconds` as the server measured it (turn time minus
/// provider time, inside the turn's task).
fn inner_overhead(metrics: &Metrics) -> Option<f64> {
    let text = metrics.encode();
    let value = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.trim().parse::<f64>().ok())
    };
    let sum = value("aptix_turn_overhead_seconds_sum")?;
    let count = value("aptix_turn_overhead_seconds_count")?;
    (count > 0.0).then(|| sum / count * 1000.0)
}

/// Which runs to make: a mode only, and one concurrency only (then without the open-loop
/// runs), for a profiler or an A/B comparison of two builds.
struct Selection<'a> {
    mode: Option<&'a str>,
    concurrency: Option<usize>,
}

async fn bench(duration: Duration, only: Selection<'_>) -> Result<()> {
    let provider = provider()?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .build()
        .context("building the HTTP client")?;
    println!(
        "serve-bench: {} s per run; client, service and fake share {} worker threads",
        duration.as_secs_f64(),
        tokio::runtime::Handle::current().metrics().num_workers()
    );
    println!();
    println!(
        "| mode | conc. | target | turns/s | p50 ms | p99 ms | failed | turn overhead in server (mean ms) | process CPU µs/turn |"
    );
    println!("|---|---:|---|---:|---:|---:|---:|---:|---:|");
    let stolen_before = stolen_cpu();
    let bench_started = Instant::now();
    let mut overheads = Vec::new();
    let mut paced = Vec::new();
    let mut rounds = Vec::new();
    for mode in [Mode::Json, Mode::Streamed] {
        if only.mode.is_some_and(|only| only != mode.name()) {
            continue;
        }
        // The fake answers with exactly what the service answered.
        let probe = start_aptix(Arc::clone(&provider)).await?;
        let answer = request(&client, &probe.base, mode).send().await?;
        if answer.status() != 200 {
            bail!("the service answered {} to the probe", answer.status());
        }
        let bytes = answer.bytes().await?;
        let fake = start_fake(bytes, mode).await?;
        // Warm both up (connections, allocator).
        let _ = http_load(&client, &fake, mode, 16, Duration::from_millis(300)).await;
        let _ = http_load(&client, &probe.base, mode, 16, Duration::from_millis(300)).await;
        probe.stop().await?;
        for concurrency in CONCURRENCY {
            if only.concurrency.is_some_and(|only| only != concurrency) {
                continue;
            }
            let fake_stats = http_load(&client, &fake, mode, concurrency, duration).await;
            let service = start_aptix(Arc::clone(&provider)).await?;
            let aptix_stats = http_load(&client, &service.base, mode, concurrency, duration).await;
            let inner = inner_overhead(&service.metrics);
            service.stop().await?;
            let direct_stats =
                direct_load(Arc::clone(&provider), mode, concurrency, duration).await?;
            for (target, stats, inner) in [
                ("fake", &fake_stats, None),
                ("aptix", &aptix_stats, inner),
                ("direct", &direct_stats, None),
            ] {
                println!(
                    "| {} | {concurrency} | {target} | {:.0} | {:.3} | {:.3} | {} | {} | {} |",
                    mode.name(),
                    stats.throughput(),
                    ms(stats.percentile(0.50)),
                    ms(stats.percentile(0.99)),
                    stats.failures,
                    inner.map_or_else(|| "".to_owned(), |mean| format!("{mean:.3}")),
                    stats
                        .cpu_per_turn()
                        .map_or_else(|| "".to_owned(), |cpu| format!("{cpu:.0}")),
                );
            }
            overheads.push((
                mode,
                concurrency,
                ms(aptix_stats.percentile(0.50)) - ms(fake_stats.percentile(0.50)),
                ms(aptix_stats.percentile(0.99)) - ms(fake_stats.percentile(0.99)),
                aptix_stats
                    .cpu_per_turn()
                    .zip(fake_stats.cpu_per_turn())
                    .map(|(aptix, fake)| aptix - fake),
            ));
        }
        if only
            .concurrency
            .is_none_or(|only| only == ROUNDS_CONCURRENCY)
        {
            let mut p99s = Vec::with_capacity(ROUNDS);
            for round in 0..ROUNDS {
                let service = start_aptix(Arc::clone(&provider)).await?;
                // Alternating which goes first, so that a drift within a round falls on
                // both alike.
                let (fake_stats, aptix_stats) = if round % 2 == 0 {
                    let fake_stats =
                        http_load(&client, &fake, mode, ROUNDS_CONCURRENCY, duration).await;
                    let aptix_stats =
                        http_load(&client, &service.base, mode, ROUNDS_CONCURRENCY, duration).await;
                    (fake_stats, aptix_stats)
                } else {
                    let aptix_stats =
                        http_load(&client, &service.base, mode, ROUNDS_CONCURRENCY, duration).await;
                    let fake_stats =
                        http_load(&client, &fake, mode, ROUNDS_CONCURRENCY, duration).await;
                    (fake_stats, aptix_stats)
                };
                service.stop().await?;
                p99s.push(ms(aptix_stats.percentile(0.99)) - ms(fake_stats.percentile(0.99)));
            }
            p99s.sort_by(f64::total_cmp);
            rounds.push((mode, p99s));
        }
        let rates = if only.concurrency.is_some() {
            &[][..]
        } else {
            &PACED_RATES[..]
        };
        for &rate in rates {
            // Interleaved halves, so that a burst of other load on the machine falls on
            // both targets alike.
            let service = start_aptix(Arc::clone(&provider)).await?;
            let half = duration / 2;
            let (fake_a, fake_late_a) = http_paced(&client, &fake, mode, rate, half).await;
            let (aptix_a, aptix_late_a) =
                http_paced(&client, &service.base, mode, rate, half).await;
            let (aptix_b, aptix_late_b) =
                http_paced(&client, &service.base, mode, rate, half).await;
            service.stop().await?;
            let (fake_b, fake_late_b) = http_paced(&client, &fake, mode, rate, half).await;
            let fake_stats = Stats::merge(fake_a, fake_b);
            let aptix_stats = Stats::merge(aptix_a, aptix_b);
            paced.push((
                mode,
                rate,
                fake_stats,
                fake_late_a + fake_late_b,
                aptix_stats,
                aptix_late_a + aptix_late_b,
            ));
        }
    }
    println!();
    println!(
        "Open loop: {PACED_CONCURRENCY} clients at a fixed offered rate; late: sends more than \
         2 ms behind their schedule"
    );
    println!();
    println!(
        "| mode | offered turns/s | fake p50 / p99 ms | aptix p50 / p99 ms | late sends (fake, aptix) | failed | overhead p50 / p99 ms |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (mode, rate, fake, fake_late, aptix, aptix_late) in &paced {
        println!(
            "| {} | {rate:.0} | {:.3} / {:.3} | {:.3} / {:.3} | {fake_late}, {aptix_late} | {} | {:.3} / {:.3} |",
            mode.name(),
            ms(fake.percentile(0.50)),
            ms(fake.percentile(0.99)),
            ms(aptix.percentile(0.50)),
            ms(aptix.percentile(0.99)),
            fake.failures + aptix.failures,
            ms(aptix.percentile(0.50)) - ms(fake.percentile(0.50)),
            ms(aptix.percentile(0.99)) - ms(fake.percentile(0.99)),
        );
    }
    println!();
    println!(
        "| mode | conc. | overhead p50 ms (aptix - fake) | overhead p99 ms (aptix - fake) | CPU µs/turn (aptix - fake) |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (mode, concurrency, p50, p99, cpu) in overheads {
        println!(
            "| {} | {concurrency} | {p50:.3} | {p99:.3} | {} |",
            mode.name(),
            cpu.map_or_else(|| "".to_owned(), |cpu| format!("{cpu:.0}"))
        );
    }
    if !rounds.is_empty() {
        println!();
        println!(
            "Closed loop at concurrency {ROUNDS_CONCURRENCY}, {ROUNDS} rounds, the fake and the \
             service interleaved: p99 overhead (aptix - fake) of each round"
        );
        println!();
        println!("| mode | median ms | lowest ms | highest ms | every round, lowest first, ms |");
        println!("|---|---:|---:|---:|---|");
        for (mode, p99s) in rounds {
            let every: Vec<String> = p99s.iter().map(|p99| format!("{p99:.3}")).collect();
            println!(
                "| {} | **{:.3}** | {:.3} | {:.3} | {} |",
                mode.name(),
                p99s[p99s.len() / 2],
                p99s[0],
                p99s[p99s.len() - 1],
                every.join(", ")
            );
        }
    }
    if let Some(stolen) = stolen_cpu()
        .zip(stolen_before)
        .map(|(after, before)| after.saturating_sub(before))
    {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let share = stolen.as_secs_f64() / (bench_started.elapsed().as_secs_f64() * cores as f64);
        println!();
        println!(
            "The host took {:.1} % of this machine's CPU time during the bench (steal): \
             latency no code here caused.",
            share * 100.0
        );
    }
    Ok(())
}

/// Runs the benchmark (the optimised build: `cargo xtask serve-bench` re-runs xtask in
/// release mode with this feature). Arguments: seconds per run (default 2), then
/// optionally `json` or `sse` to run one mode only, then optionally one of the
/// concurrencies (1, 16, 64) to run only that one, without the open-loop runs.
pub(crate) fn run(args: &[String]) -> Result<()> {
    let seconds: f64 = match args.first() {
        Some(value) => value
            .parse()
            .with_context(|| format!("the run length {value:?} is not a number of seconds"))?,
        None => 2.0,
    };
    // As `aptix serve` does (`steady_page_faults` in `aptix-cli/src/serve.rs`): a fault
    // on a fresh huge page stalls its thread for milliseconds on this machine.
    #[cfg(target_os = "linux")]
    if let Err(error) = rustix::thread::disable_transparent_huge_pages(true) {
        eprintln!("serve-bench: could not turn transparent huge pages off: {error}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let only = args.get(1).map(String::as_str);
    if only.is_some_and(|only| only != "json" && only != "sse") {
        bail!("the mode must be json or sse");
    }
    let concurrency = match args.get(2) {
        Some(value) => match value.parse::<usize>() {
            Ok(concurrency) if CONCURRENCY.contains(&concurrency) => Some(concurrency),
            _ => bail!("the concurrency {value:?} is not one of {CONCURRENCY:?}"),
        },
        None => None,
    };
    let selection = Selection {
        mode: only,
        concurrency,
    };
    runtime.block_on(bench(Duration::from_secs_f64(seconds), selection))
}

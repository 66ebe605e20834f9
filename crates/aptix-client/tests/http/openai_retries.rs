//! Retries against wiremock, timed on tokio's paused clock: Retry-After honoured,
//! permanent errors sent once, transient ones retried up to the bound.
//!
//! The mock server runs on its own thread; with `start_paused`, this runtime's clock
//! jumps to the next timer whenever the runtime is idle. `paused_config` removes every
//! timer but backon's sleep, so waiting for the mock never advances the clock, and the
//! elapsed paused time is exactly the waits the retry policy chose.

use std::time::{Duration, SystemTime};

use aptix_client::{ClientError, OpenAiProvider, ResponsesProvider, RetryPolicy};
use tokio::time::Instant;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{paused_config, reply_once, request};

fn fixture_reply(status: u16, fixture: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_raw(aptix_testkit::read_fixture(fixture), "application/json")
}

/// Mounts `first` once, then a success, and returns the elapsed paused time and the
/// number of requests the server received.
async fn retried_once(first: ResponseTemplate) -> (Duration, usize) {
    let server = MockServer::start().await;
    reply_once(&server, first, 1).await;
    Mock::given(method("POST"))
        .respond_with(fixture_reply(200, "response_plain_text.json"))
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(paused_config(&server.uri()).build().unwrap()).unwrap();
    let started = Instant::now();
    let reply = provider.create(&request()).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(reply.meta.attempts, 2);
    let received = server.received_requests().await.unwrap().len();
    (elapsed, received)
}

fn assert_waited(elapsed: Duration, expected: Duration) {
    // No other timer exists, so the only slack is rounding inside the runtime.
    assert!(
        elapsed >= expected && elapsed < expected + Duration::from_millis(5),
        "waited {elapsed:?}, expected {expected:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_429_with_retry_after_ms_waits_that_long_then_succeeds() {
    let first = fixture_reply(429, "error_429_rate_limit_exceeded.json")
        .insert_header("retry-after-ms", "1500")
        .insert_header("retry-after", "9");
    let (elapsed, received) = retried_once(first).await;
    assert_eq!(received, 2);
    assert_waited(elapsed, Duration::from_millis(1500));
}

#[tokio::test(start_paused = true)]
async fn a_429_with_retry_after_seconds_waits_that_long() {
    let first =
        fixture_reply(429, "error_429_rate_limit_exceeded.json").insert_header("retry-after", "3");
    let (elapsed, received) = retried_once(first).await;
    assert_eq!(received, 2);
    assert_waited(elapsed, Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_503_with_an_http_date_waits_until_then() {
    // HTTP dates have whole seconds: 5 s from now reads as a wait in (4 s, 5 s].
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(5));
    let first = ResponseTemplate::new(503).insert_header("retry-after", date.as_str());
    let (elapsed, received) = retried_once(first).await;
    assert_eq!(received, 2);
    assert!(
        elapsed > Duration::from_secs(3) && elapsed <= Duration::from_secs(5),
        "{elapsed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn insufficient_quota_is_sent_exactly_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            fixture_reply(429, "error_429_insufficient_quota.json")
                .insert_header("retry-after-ms", "10")
                .insert_header("x-should-retry", "true"),
        )
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(paused_config(&server.uri()).build().unwrap()).unwrap();
    let error = provider.create(&request()).await.unwrap_err();
    assert_eq!(error.api_code(), Some("insufficient_quota"));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_500_is_retried_exactly_up_to_the_bound() {
    for max_retries in [0, 1, 3] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(fixture_reply(500, "error_500_server_error.json"))
            .mount(&server)
            .await;
        let policy = RetryPolicy {
            max_retries,
            ..RetryPolicy::default()
        };
        let config = paused_config(&server.uri()).retry(policy).build().unwrap();
        let provider = OpenAiProvider::new(config).unwrap();
        let started = Instant::now();
        let error = provider.create(&request()).await.unwrap_err();
        assert_eq!(error.status(), Some(500));
        let received = server.received_requests().await.unwrap().len();
        assert_eq!(
            received,
            max_retries as usize + 1,
            "max_retries {max_retries}"
        );
        // Jittered exponential backoff: each wait is between the delay and twice it.
        let waits: Duration = (0..max_retries)
            .map(|n| (policy.initial_backoff * 2u32.pow(n)).min(policy.max_backoff))
            .sum();
        let elapsed = started.elapsed();
        assert!(
            elapsed >= waits && elapsed <= waits * 2 + Duration::from_millis(5),
            "{elapsed:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn x_should_retry_false_stops_a_503() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).insert_header("x-should-retry", "false"))
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(paused_config(&server.uri()).build().unwrap()).unwrap();
    let error = provider.create(&request()).await.unwrap_err();
    assert_eq!(error.status(), Some(503));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_beyond_the_cap_falls_back_to_the_backoff_and_is_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "3600"))
        .mount(&server)
        .await;
    let policy = RetryPolicy {
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(400),
        jitter: false,
        ..RetryPolicy::default()
    };
    let provider =
        OpenAiProvider::new(paused_config(&server.uri()).retry(policy).build().unwrap()).unwrap();
    let started = Instant::now();
    let error = provider.create(&request()).await.unwrap_err();
    // The policy's own waits (100 ms, 200 ms), not the hour asked for, nor none at all.
    assert_waited(started.elapsed(), Duration::from_millis(300));
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    assert!(matches!(
        error,
        ClientError::Status {
            status: 429,
            retry_after: Some(wait),
            ..
        } if wait == Duration::from_secs(3600)
    ));
    assert!(
        error
            .to_string()
            .ends_with("the server asked to wait 1h 0m before retrying"),
        "{error}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_request_is_retried_before_its_head_arrives() {
    let server = MockServer::start().await;
    reply_once(
        &server,
        ResponseTemplate::new(502).insert_header("retry-after-ms", "250"),
        1,
    )
    .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(
            aptix_testkit::read_fixture("sse_text_deltas.sse"),
            "text/event-stream",
        ))
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(paused_config(&server.uri()).build().unwrap()).unwrap();
    let started = Instant::now();
    let stream = provider.stream(&request()).await.unwrap();
    assert_waited(started.elapsed(), Duration::from_millis(250));
    assert_eq!(stream.meta().attempts, 2);
    let response = crate::support::fold(stream).await.unwrap().response;
    assert!(response.id.starts_with("resp_"));
}

#[tokio::test(start_paused = true)]
async fn each_retry_is_told_to_the_observers_in_scope_before_its_wait() {
    let server = MockServer::start().await;
    reply_once(
        &server,
        ResponseTemplate::new(503).insert_header("retry-after-ms", "700"),
        1,
    )
    .await;
    reply_once(
        &server,
        fixture_reply(429, "error_429_rate_limit_exceeded.json")
            .insert_header("retry-after-ms", "300"),
        2,
    )
    .await;
    Mock::given(method("POST"))
        .respond_with(fixture_reply(200, "response_plain_text.json"))
        .mount(&server)
        .await;
    let provider = OpenAiProvider::new(paused_config(&server.uri()).build().unwrap()).unwrap();
    let started = Instant::now();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (inner, outer) = (log.clone(), log.clone());
    let reply = aptix_client::observe_retries(
        move |notice: &aptix_client::RetryNotice| {
            outer
                .lock()
                .unwrap()
                .push(("outer", notice.clone(), started.elapsed()));
        },
        aptix_client::observe_retries(
            move |notice: &aptix_client::RetryNotice| {
                inner
                    .lock()
                    .unwrap()
                    .push(("inner", notice.clone(), started.elapsed()));
            },
            provider.create(&request()),
        ),
    )
    .await
    .unwrap();
    assert_eq!(reply.meta.attempts, 3);
    let seen = log.lock().unwrap().clone();
    let told: Vec<(&str, u32, u32, Duration, &str)> = seen
        .iter()
        .map(|(who, notice, _)| {
            (
                *who,
                notice.attempt,
                notice.max_attempts,
                notice.wait,
                notice.reason.as_str(),
            )
        })
        .collect();
    let (first, second) = (Duration::from_millis(700), Duration::from_millis(300));
    assert_eq!(
        told,
        [
            ("inner", 2, 3, first, "the server answered 503"),
            ("outer", 2, 3, first, "the server answered 503"),
            ("inner", 3, 3, second, "rate limited (429)"),
            ("outer", 3, 3, second, "rate limited (429)"),
        ]
    );
    // Told before each wait, not after it.
    assert!(seen[0].2 < first && seen[2].2 >= first && seen[2].2 < first + second);
    // Outside the scope, a retry is told to nobody.
    reply_once(
        &server,
        ResponseTemplate::new(503).insert_header("retry-after-ms", "10"),
        1,
    )
    .await;
    let reply = provider.create(&request()).await.unwrap();
    assert_eq!(reply.meta.attempts, 2);
    assert_eq!(
        log.lock().unwrap().len(),
        4,
        "the observers ended with their scope"
    );
}

//! The retry decision: a failed attempt in, "retry after this long" or "give up, and
//! why" out.
//!
//! As in tower's `retry::Policy`, the decision is kept apart from the transport: this
//! module sees a status, the reply headers and the decoded error body (or the kind of
//! transport failure), never a socket, and is unit-tested as a pure function. The HTTP
//! providers feed it to `backon` (`.when()` classifies, `.adjust()` turns the decision
//! into the wait), which owns the jittered exponential backoff and the sleeping.

use std::time::{Duration, SystemTime};

use aptix_model::wire::ApiError;
use http::HeaderMap;

use super::headers;
use crate::error::{TimeoutKind, TransportPhase};

/// Retry settings of an HTTP provider.
///
/// Defaults follow the official SDKs: 2 retries (3 attempts), backoff from 0.5 s
/// doubling to at most 8 s with jitter, and no single wait longer than 60 s, whether
/// computed or asked for by the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 turns retrying off).
    pub max_retries: u32,
    /// The first backoff delay.
    pub initial_backoff: Duration,
    /// The largest computed backoff delay (before jitter).
    pub max_backoff: Duration,
    /// The cap on any single wait. A server asking for longer (`retry-after: 3600`) is
    /// not obeyed: the policy's own backoff is used instead, and if the retries run out
    /// the error carries the server's `retry_after` for the caller to report.
    pub max_wait: Duration,
    /// Add random jitter (up to one more backoff delay) so that many clients that
    /// failed together do not retry together.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_wait: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn never() -> RetryPolicy {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }
}

/// What went wrong with one attempt, as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub enum Failure<'a> {
    /// The server answered with a non-2xx status.
    Status {
        /// The status code.
        status: u16,
        /// The reply headers.
        headers: &'a HeaderMap,
        /// The decoded error body, when it was one.
        error: Option<&'a ApiError>,
    },
    /// The transport failed at this phase.
    Transport(TransportPhase),
    /// A timeout elapsed.
    Timeout(TimeoutKind),
    /// Anything else (a reply that cannot be decoded, a configuration problem): never
    /// worth repeating.
    Permanent,
}

/// The policy's verdict on one failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Send the request again after this wait.
    RetryAfter(Duration),
    /// Return the error to the caller.
    GiveUp(GiveUpReason),
}

/// Why the policy gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GiveUpReason {
    /// The failure is not transient (a 400, a 401, a decode error, ...).
    NotRetryable,
    /// A 429 for `insufficient_quota`: billing, not load; it will not pass by waiting.
    InsufficientQuota,
    /// The server said `x-should-retry: false`.
    ServerSaidNo,
    /// The bounded number of retries is used up.
    AttemptsExhausted,
}

/// Whether a status (with its decoded body) is transient by the status rules alone:
/// 408, 409, 429 except `insufficient_quota`, and 5xx.
pub fn status_is_retryable(status: u16, error: Option<&ApiError>) -> bool {
    if is_insufficient_quota(error) {
        return false;
    }
    matches!(status, 408 | 409 | 429) || (500..600).contains(&status)
}

fn is_insufficient_quota(error: Option<&ApiError>) -> bool {
    error.is_some_and(|error| {
        error.code.as_deref() == Some("insufficient_quota")
            || error.kind.as_deref() == Some("insufficient_quota")
    })
}

impl RetryPolicy {
    /// Whether the failure is worth another attempt at all (`backon`'s `.when()`);
    /// `Err` says why not. Checked in this order: `insufficient_quota` is permanent
    /// whatever the headers say; then `x-should-retry` overrides; then the status
    /// rules (408, 409, 429, 5xx); transport failures are retried (a non-streamed
    /// reply's body cut after its head too), timeouts only when connecting.
    pub fn classify(&self, failure: &Failure<'_>) -> Result<(), GiveUpReason> {
        match failure {
            Failure::Status {
                status,
                headers,
                error,
            } => {
                if is_insufficient_quota(*error) {
                    return Err(GiveUpReason::InsufficientQuota);
                }
                match headers::should_retry(headers) {
                    Some(true) => Ok(()),
                    Some(false) => Err(GiveUpReason::ServerSaidNo),
                    None if status_is_retryable(*status, *error) => Ok(()),
                    None => Err(GiveUpReason::NotRetryable),
                }
            }
            // A body cut after its head is a non-streamed reply's (a stream's body is
            // never read under this policy): nothing of it was shown, and it is sent
            // again, as the official SDKs do. The server did generate the lost reply.
            Failure::Transport(_) => Ok(()),
            // A request or idle timeout means the server had the request and may still
            // be working on it: repeating it doubles cost and the caller's wait.
            Failure::Timeout(TimeoutKind::Connect) => Ok(()),
            Failure::Timeout(_) => Err(GiveUpReason::NotRetryable),
            Failure::Permanent => Err(GiveUpReason::NotRetryable),
        }
    }

    /// The wait before the next attempt (`backon`'s `.adjust()`): `backoff` is the next
    /// jittered exponential delay, `None` once the retries are used up. A wait the
    /// server asked for replaces it, unless it is longer than
    /// [`max_wait`](Self::max_wait): then the backoff is used (a proxy's `retry-after:
    /// 3600` should not end the turn at once, nor hold it for an hour). No wait exceeds
    /// `max_wait`.
    pub fn delay(
        &self,
        failure: &Failure<'_>,
        backoff: Option<Duration>,
        now: SystemTime,
    ) -> Result<Duration, GiveUpReason> {
        let backoff = backoff.ok_or(GiveUpReason::AttemptsExhausted)?;
        let requested = match failure {
            Failure::Status { headers, .. } => headers::retry_after(headers, now),
            _ => None,
        };
        match requested {
            Some(wait) if wait <= self.max_wait => Ok(wait),
            Some(_) | None => Ok(backoff.min(self.max_wait)),
        }
    }

    /// Both steps at once: the complete decision for one failed attempt.
    pub fn decide(
        &self,
        failure: &Failure<'_>,
        backoff: Option<Duration>,
        now: SystemTime,
    ) -> RetryDecision {
        match self
            .classify(failure)
            .and_then(|()| self.delay(failure, backoff, now))
        {
            Ok(wait) => RetryDecision::RetryAfter(wait),
            Err(reason) => RetryDecision::GiveUp(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    const NOW: SystemTime = SystemTime::UNIX_EPOCH;
    const BACKOFF: Option<Duration> = Some(Duration::from_millis(700));

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn fixture_error(name: &str) -> ApiError {
        let body: aptix_model::wire::ErrorBody =
            serde_json::from_slice(&aptix_testkit::read_fixture(name)).unwrap();
        body.error
    }

    /// One decision for a status reply; the table-driven tests go through here.
    fn check(
        status: u16,
        pairs: &[(&'static str, &str)],
        error: Option<&ApiError>,
    ) -> RetryDecision {
        let map = headers(pairs);
        let failure = Failure::Status {
            status,
            headers: &map,
            error,
        };
        RetryPolicy::default().decide(&failure, BACKOFF, NOW)
    }

    #[test]
    fn transient_statuses_are_retried_with_the_backoff() {
        for status in [408, 409, 429, 500, 502, 503, 504, 599] {
            assert_eq!(
                check(status, &[], None),
                RetryDecision::RetryAfter(Duration::from_millis(700)),
                "{status}"
            );
        }
    }

    #[test]
    fn other_statuses_are_not() {
        for status in [400, 401, 403, 404, 413, 422] {
            assert_eq!(
                check(status, &[], None),
                RetryDecision::GiveUp(GiveUpReason::NotRetryable),
                "{status}"
            );
        }
    }

    #[test]
    fn the_recorded_error_bodies_classify_as_documented() {
        let quota = fixture_error("error_429_insufficient_quota.json");
        let rate = fixture_error("error_429_rate_limit_exceeded.json");
        let server = fixture_error("error_500_server_error.json");
        let auth = fixture_error("error_401_invalid_api_key.json");
        let tool = fixture_error("error_400_no_tool_output_found.json");
        assert_eq!(
            check(429, &[], Some(&quota)),
            RetryDecision::GiveUp(GiveUpReason::InsufficientQuota)
        );
        assert!(matches!(
            check(429, &[], Some(&rate)),
            RetryDecision::RetryAfter(_)
        ));
        assert!(matches!(
            check(500, &[], Some(&server)),
            RetryDecision::RetryAfter(_)
        ));
        assert_eq!(
            check(401, &[], Some(&auth)),
            RetryDecision::GiveUp(GiveUpReason::NotRetryable)
        );
        assert_eq!(
            check(400, &[], Some(&tool)),
            RetryDecision::GiveUp(GiveUpReason::NotRetryable)
        );
    }

    #[test]
    fn x_should_retry_overrides_the_status_but_not_the_quota() {
        assert!(matches!(
            check(400, &[("x-should-retry", "true")], None),
            RetryDecision::RetryAfter(_)
        ));
        assert_eq!(
            check(503, &[("x-should-retry", "false")], None),
            RetryDecision::GiveUp(GiveUpReason::ServerSaidNo)
        );
        let quota = fixture_error("error_429_insufficient_quota.json");
        assert_eq!(
            check(429, &[("x-should-retry", "true")], Some(&quota)),
            RetryDecision::GiveUp(GiveUpReason::InsufficientQuota)
        );
    }

    #[test]
    fn server_requested_waits_replace_the_backoff() {
        assert_eq!(
            check(429, &[("retry-after-ms", "1500")], None),
            RetryDecision::RetryAfter(Duration::from_millis(1500))
        );
        assert_eq!(
            check(503, &[("retry-after", "2")], None),
            RetryDecision::RetryAfter(Duration::from_secs(2))
        );
        // Out of range: the policy's own backoff instead of giving up at once.
        assert_eq!(
            check(429, &[("retry-after", "3600")], None),
            RetryDecision::RetryAfter(Duration::from_millis(700))
        );
        let map = headers(&[("retry-after", "3600")]);
        let failure = Failure::Status {
            status: 429,
            headers: &map,
            error: None,
        };
        assert_eq!(
            RetryPolicy::default().decide(&failure, None, NOW),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted)
        );
    }

    #[test]
    fn computed_backoff_is_capped_and_bounded() {
        let policy = RetryPolicy {
            max_wait: Duration::from_secs(1),
            ..RetryPolicy::default()
        };
        let map = HeaderMap::new();
        let failure = Failure::Status {
            status: 500,
            headers: &map,
            error: None,
        };
        assert_eq!(
            policy.decide(&failure, Some(Duration::from_secs(30)), NOW),
            RetryDecision::RetryAfter(Duration::from_secs(1))
        );
        assert_eq!(
            policy.decide(&failure, None, NOW),
            RetryDecision::GiveUp(GiveUpReason::AttemptsExhausted)
        );
    }

    #[test]
    fn transport_failures_are_retried_and_timeouts_only_when_connecting() {
        let policy = RetryPolicy::default();
        let decide = |failure| policy.decide(&failure, BACKOFF, NOW);
        assert!(matches!(
            decide(Failure::Transport(TransportPhase::Connect)),
            RetryDecision::RetryAfter(_)
        ));
        assert!(matches!(
            decide(Failure::Transport(TransportPhase::Send)),
            RetryDecision::RetryAfter(_)
        ));
        // A non-streamed reply's body cut after its head (a stream's is not read under
        // this policy).
        assert!(matches!(
            decide(Failure::Transport(TransportPhase::ReadBody)),
            RetryDecision::RetryAfter(_)
        ));
        assert!(matches!(
            decide(Failure::Timeout(TimeoutKind::Connect)),
            RetryDecision::RetryAfter(_)
        ));
        assert_eq!(
            decide(Failure::Timeout(TimeoutKind::Request)),
            RetryDecision::GiveUp(GiveUpReason::NotRetryable)
        );
        assert_eq!(
            decide(Failure::Permanent),
            RetryDecision::GiveUp(GiveUpReason::NotRetryable)
        );
    }
}

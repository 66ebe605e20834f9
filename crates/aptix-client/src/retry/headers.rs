//! Reading the reply headers that steer retries and report limits: `retry-after-ms`,
//! `retry-after` (seconds or an HTTP date), `x-should-retry`, `x-request-id` and the
//! `x-ratelimit-*` family, whose reset values are Go-style duration strings (`2ms`,
//! `6m0s`, `1.5s`).
//!
//! Pure functions over an [`http::HeaderMap`]; a malformed header reads as absent,
//! because a server's formatting slip must not turn a reply into an error.

use std::time::{Duration, SystemTime};

use http::HeaderMap;

use crate::provider::RateLimits;

/// The wait the server asked for: `retry-after-ms` (milliseconds, possibly
/// fractional) first, as the official SDKs read it, then `retry-after` as seconds or
/// as an HTTP date relative to `now` (a date in the past means "now"). `None` when
/// neither header is present and readable.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(millis) = header_text(headers, "retry-after-ms").and_then(parse_non_negative) {
        return Duration::try_from_secs_f64(millis / 1000.0).ok();
    }
    let value = header_text(headers, "retry-after")?;
    if let Some(seconds) = parse_non_negative(value) {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The server's explicit verdict in `x-should-retry` (`true` / `false`), which
/// overrides the status-based classification.
pub fn should_retry(headers: &HeaderMap) -> Option<bool> {
    match header_text(headers, "x-should-retry")?.trim() {
        value if value.eq_ignore_ascii_case("true") => Some(true),
        value if value.eq_ignore_ascii_case("false") => Some(false),
        _ => None,
    }
}

/// The reply's `x-request-id`.
pub fn request_id(headers: &HeaderMap) -> Option<String> {
    header_text(headers, "x-request-id")
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// The `x-ratelimit-*` headers, or `None` when the reply carries none of them
/// (streamed replies usually do not).
pub fn rate_limits(headers: &HeaderMap) -> Option<RateLimits> {
    let count = |name: &str| header_text(headers, name).and_then(|v| v.trim().parse().ok());
    let reset = |name: &str| header_text(headers, name).and_then(parse_go_duration);
    let limits = RateLimits {
        limit_requests: count("x-ratelimit-limit-requests"),
        limit_tokens: count("x-ratelimit-limit-tokens"),
        remaining_requests: count("x-ratelimit-remaining-requests"),
        remaining_tokens: count("x-ratelimit-remaining-tokens"),
        reset_requests: reset("x-ratelimit-reset-requests"),
        reset_tokens: reset("x-ratelimit-reset-tokens"),
    };
    (limits != RateLimits::default()).then_some(limits)
}

/// Parses a Go `time.Duration` string as OpenAI sends it in rate-limit reset headers:
/// one or more `<number><unit>` pairs with units `h`, `m`, `s`, `ms`, `us`/`µs`, `ns`
/// and optional fractions (`6m0s`, `2ms`, `1.5s`, `1h2m3.25s`). A bare number is read
/// as seconds, which some compatible servers send.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if let Some(seconds) = parse_non_negative(text) {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let mut total = 0.0_f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_end);
        let value: f64 = number.parse().ok()?;
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, remainder) = after.split_at(unit_end);
        let scale = match unit {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += value * scale;
        rest = remainder;
    }
    Duration::try_from_secs_f64(total).ok()
}

fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn parse_non_negative(text: &str) -> Option<f64> {
    let value: f64 = text.trim().parse().ok()?;
    (value.is_finite() && value >= 0.0).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn go_durations_as_openai_sends_them() {
        let cases = [
            ("2ms", Duration::from_millis(2)),
            ("0s", Duration::ZERO),
            ("6m0s", Duration::from_secs(360)),
            ("1.5s", Duration::from_millis(1500)),
            ("1h2m3s", Duration::from_secs(3723)),
            ("17ms", Duration::from_millis(17)),
            ("20", Duration::from_secs(20)),
        ];
        for (text, expected) in cases {
            let parsed = parse_go_duration(text).unwrap();
            let delta = parsed.abs_diff(expected);
            assert!(delta < Duration::from_micros(1), "{text}: {parsed:?}");
        }
        for bad in ["", "s", "5x", "1..2s", "-1s", "ms5"] {
            assert_eq!(parse_go_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn retry_after_ms_wins_over_retry_after() {
        let now = SystemTime::UNIX_EPOCH;
        let both = headers(&[("retry-after-ms", "250"), ("retry-after", "7")]);
        assert_eq!(retry_after(&both, now), Some(Duration::from_millis(250)));
        let seconds = headers(&[("retry-after", "7")]);
        assert_eq!(retry_after(&seconds, now), Some(Duration::from_secs(7)));
        let fractional = headers(&[("retry-after-ms", "1.5")]);
        assert_eq!(
            retry_after(&fractional, now),
            Some(Duration::from_micros(1500))
        );
    }

    #[test]
    fn retry_after_reads_http_dates_relative_to_now() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &later)]), now),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &earlier)]), now),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn malformed_retry_headers_read_as_absent() {
        let now = SystemTime::UNIX_EPOCH;
        for value in ["soon", "-3", "NaN", "inf"] {
            let map = headers(&[("retry-after", value), ("retry-after-ms", value)]);
            assert_eq!(retry_after(&map, now), None, "{value}");
        }
        assert_eq!(should_retry(&headers(&[("x-should-retry", "maybe")])), None);
        assert_eq!(
            should_retry(&headers(&[("x-should-retry", "TRUE")])),
            Some(true)
        );
        assert_eq!(
            should_retry(&headers(&[("x-should-retry", "false")])),
            Some(false)
        );
    }

    #[test]
    fn rate_limits_from_the_recorded_headers() {
        let recorded: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(
            &aptix_testkit::read_fixture("headers_nonstreaming_200.json"),
        )
        .unwrap();
        let mut map = HeaderMap::new();
        for (name, value) in &recorded {
            map.insert(
                http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).unwrap(),
                HeaderValue::from_str(value.as_str().unwrap()).unwrap(),
            );
        }
        let limits = rate_limits(&map).unwrap();
        assert_eq!(limits.limit_requests, Some(30000));
        assert_eq!(limits.remaining_requests, Some(29999));
        assert_eq!(limits.limit_tokens, Some(150_000_000));
        assert_eq!(limits.remaining_tokens, Some(149_999_967));
        assert_eq!(limits.reset_requests, Some(Duration::from_millis(2)));
        assert_eq!(limits.reset_tokens, Some(Duration::ZERO));
        assert_eq!(request_id(&map).as_deref(), Some("Sanitized"));
    }

    #[test]
    fn streamed_replies_carry_no_rate_limits() {
        let recorded: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&aptix_testkit::read_fixture("headers_streaming_200.json"))
                .unwrap();
        let mut map = HeaderMap::new();
        for (name, value) in &recorded {
            map.insert(
                http::HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()).unwrap(),
                HeaderValue::from_str(value.as_str().unwrap()).unwrap(),
            );
        }
        assert_eq!(rate_limits(&map), None);
        assert!(request_id(&map).is_some());
    }
}

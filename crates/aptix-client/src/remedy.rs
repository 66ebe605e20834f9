//! What a person can do about a turn that failed, read from its error code and message:
//! one rule for every front end (`aptix ask` notes it on stderr, `aptix acp` adds it to
//! the error the editor shows).

use std::fmt;

use crate::{TimeoutKind, TransportPhase};

/// The error code of a `401` from a server that was sent no API key: it wants one.
pub(crate) const MISSING_API_KEY: &str = "missing_api_key";

/// What a person can do about a failed turn. See [`remedy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Remedy {
    /// The provider refused the key (`invalid_api_key`, or a bare `401`).
    CheckKey,
    /// The server wants a key and none was sent (`missing_api_key`).
    SetKey,
    /// The account's quota is used up (`insufficient_quota`): retrying will not help.
    OutOfQuota,
    /// Still rate limited after the client's retries (`rate_limit_exceeded`, `429`).
    RateLimited,
    /// A wait ran out (`timeout`); the one the message names, when it names one.
    RaiseTimeout(Option<TimeoutKind>),
    /// The server answered, but the connection broke while its reply arrived.
    CheckNetwork,
    /// The server was not reached (`transport_error` before a reply).
    CheckServer,
}

/// What to do about a failure with this envelope `errorCode` and message, `None` for
/// failures no setting of the person's fixes (a refusal, a server error).
pub fn remedy(code: &str, message: &str) -> Option<Remedy> {
    Some(match code {
        "invalid_api_key" | "401" => Remedy::CheckKey,
        MISSING_API_KEY => Remedy::SetKey,
        "insufficient_quota" => Remedy::OutOfQuota,
        "rate_limit_exceeded" | "429" => Remedy::RateLimited,
        "timeout" => Remedy::RaiseTimeout(timeout_named(message)),
        // The client's `TransportPhase::ReadBody`, in its own words.
        "transport_error" if message.contains(&format!("while {}:", TransportPhase::ReadBody)) => {
            Remedy::CheckNetwork
        }
        "transport_error" => Remedy::CheckServer,
        _ => return None,
    })
}

/// The timeout a message names, as the client spells one (`TimeoutKind`'s name, then
/// "timeout").
fn timeout_named(message: &str) -> Option<TimeoutKind> {
    [
        TimeoutKind::StreamIdle,
        TimeoutKind::Connect,
        TimeoutKind::Request,
    ]
    .into_iter()
    .find(|kind| message.contains(&format!("{kind} timeout")))
}

/// The setting (the builder's method, `aptix.toml`'s key) that bounds this timeout,
/// with what it times.
fn timeout_key(kind: Option<TimeoutKind>) -> &'static str {
    match kind {
        Some(TimeoutKind::StreamIdle) => {
            "stream_idle_timeout (silence before or during the answer)"
        }
        Some(TimeoutKind::Connect) => "connect_timeout",
        Some(TimeoutKind::Request) => "request_timeout (the whole reply)",
        _ => {
            "request_timeout (the whole reply), stream_idle_timeout (silence before or during the answer) or connect_timeout"
        }
    }
}

/// The advice in words, naming settings by their keys (`aptix.toml`'s, the config
/// builder's) and variables.
impl fmt::Display for Remedy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Remedy::CheckKey => f.write_str("the provider refused the key: check OPENAI_API_KEY"),
            Remedy::SetKey => f.write_str(
                "this server wants an API key and none is set: set OPENAI_API_KEY",
            ),
            Remedy::OutOfQuota => f.write_str(
                "out of quota: the account's credit or plan limit is used up; retrying will not help until billing is fixed",
            ),
            Remedy::RateLimited => {
                f.write_str("the provider is rate limiting this key: try again shortly")
            }
            Remedy::RaiseTimeout(kind) => write!(
                f,
                "if the server is slow rather than gone, raise {}",
                timeout_key(*kind)
            ),
            Remedy::CheckNetwork => f.write_str(
                "the server answered, but the connection broke while its reply arrived: try again; if it goes on, check the network (a proxy, a VPN) between here and the server",
            ),
            Remedy::CheckServer => f.write_str(
                "check that the server runs and that base_url (OPENAI_BASE_URL, aptix.toml) names it",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fixable_failure_has_its_remedy() {
        assert_eq!(remedy("invalid_api_key", ""), Some(Remedy::CheckKey));
        assert_eq!(remedy("401", ""), Some(Remedy::CheckKey));
        assert_eq!(remedy("missing_api_key", ""), Some(Remedy::SetKey));
        assert_eq!(remedy("insufficient_quota", ""), Some(Remedy::OutOfQuota));
        assert_eq!(remedy("429", ""), Some(Remedy::RateLimited));
        assert_eq!(
            remedy(
                "timeout",
                "no reply: stream idle timeout after 1s (gave up after 5 attempts)"
            ),
            Some(Remedy::RaiseTimeout(Some(TimeoutKind::StreamIdle)))
        );
        assert_eq!(
            remedy("timeout", "connect timeout after 1s"),
            Some(Remedy::RaiseTimeout(Some(TimeoutKind::Connect)))
        );
        assert_eq!(
            remedy("timeout", "request timeout after 10m"),
            Some(Remedy::RaiseTimeout(Some(TimeoutKind::Request)))
        );
        assert_eq!(
            remedy("timeout", "timed out"),
            Some(Remedy::RaiseTimeout(None))
        );
        assert_eq!(
            remedy(
                "transport_error",
                "transport error while reading the reply body: connection reset"
            ),
            Some(Remedy::CheckNetwork)
        );
        assert_eq!(
            remedy(
                "transport_error",
                "transport error while connecting: connection refused"
            ),
            Some(Remedy::CheckServer)
        );
        assert_eq!(remedy("server_error", "boom"), None);
        assert_eq!(remedy("refusal", ""), None);
    }

    #[test]
    fn a_timeout_names_the_setting_to_raise() {
        let idle = Remedy::RaiseTimeout(Some(TimeoutKind::StreamIdle)).to_string();
        assert!(
            idle.ends_with("raise stream_idle_timeout (silence before or during the answer)"),
            "{idle}"
        );
        let unknown = Remedy::RaiseTimeout(None).to_string();
        assert!(unknown.contains("connect_timeout"), "{unknown}");
    }
}

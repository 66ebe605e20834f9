//! The ids a caller makes: a session id for a new conversation, a turn id per request
//! (every front end and library user makes them the same way).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Random hex digits: the standard library's per-process random hash keys over the time
/// and the process id, so two invocations in the same nanosecond still differ.
fn random_hex() -> String {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u128(now().as_nanos());
    hasher.write_u32(std::process::id());
    format!("{:016x}", hasher.finish())
}

fn now() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// A new session id: `s-` and twelve hex digits.
pub fn new_session_id() -> String {
    format!("s-{}", random_hex().get(..12).unwrap_or_default())
}

/// Whether `id` has the shape of the ids [`new_session_id`] makes: a front end that
/// made a session and stored no turn of it yet (never prompted, or its first prompts
/// failed) knows it by this alone.
pub fn is_made_session_id(id: &str) -> bool {
    id.strip_prefix("s-")
        .is_some_and(|digits| digits.len() == 12 && digits.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A new turn id, unique per request: `t-`, the time in milliseconds, and eight hex
/// digits. A turn id is never reused, so a new request is never answered from the
/// store by mistake.
pub fn new_turn_id() -> String {
    format!(
        "t-{}-{}",
        now().as_millis(),
        random_hex().get(..8).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_valid_agn034_ids() {
        let sessions: std::collections::HashSet<String> =
            (0..100).map(|_| new_session_id()).collect();
        assert!(sessions.iter().all(|id| is_made_session_id(id)));
        for other in [
            "s-nope",
            "s-0123456789ab0",
            "0123456789ab",
            "s-0123456789aG",
            "",
        ] {
            assert!(!is_made_session_id(other), "{other}");
        }
        assert_eq!(sessions.len(), 100);
        let turns: std::collections::HashSet<String> = (0..100).map(|_| new_turn_id()).collect();
        assert_eq!(turns.len(), 100);
        for id in sessions.iter().chain(&turns) {
            assert!(
                aptix_model::contract::SessionId::new(id.clone()).is_ok(),
                "{id}"
            );
        }
    }
}

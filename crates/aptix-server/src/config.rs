//! The service's settings: tokens and limits, with the defaults a careful operator
//! would choose.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use subtle::ConstantTimeEq;

use crate::error::ServerError;
use crate::metrics::Metrics;

/// Bearer tokens accepted by the service. Compared in constant time; never shown by
/// `Debug`, logs or errors.
#[derive(Clone, Default)]
pub struct Tokens {
    digests: Vec<[u8; 32]>,
    /// How many are shorter than [`SHORT_TOKEN`] characters.
    short: usize,
}

/// Tokens shorter than this many characters are easy to guess: served, and counted by
/// [`Tokens::short`] for the operator to be told.
pub const SHORT_TOKEN: usize = 16;

impl Tokens {
    /// Tokens from a file's text: one per line; blank lines, `#` comment lines and a
    /// `# comment` after a token (after a space) are ignored, and so is a byte order
    /// mark before the first line, which an editor may write and no client sends.
    ///
    /// # Errors
    ///
    /// [`ServerError::InvalidToken`] naming the first line whose token holds a character
    /// no `Authorization: Bearer` value carries (a space inside it, a control character,
    /// a letter outside ASCII): it could never match, and a shortened one would be
    /// weaker than its owner meant. The error never shows the line's text.
    pub fn from_lines(text: &str) -> Result<Tokens, ServerError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        Tokens::parse(text.lines().map(uncommented), "line")
    }

    /// Tokens from a comma-separated list (`APTIX_SERVE_TOKENS`), blank items ignored.
    ///
    /// # Errors
    ///
    /// [`ServerError::InvalidToken`] naming the first item that is not a token, as for
    /// [`from_lines`](Self::from_lines).
    pub fn from_comma_list(text: &str) -> Result<Tokens, ServerError> {
        Tokens::parse(text.split(','), "item")
    }

    fn parse<'a>(
        entries: impl Iterator<Item = &'a str>,
        what: &'static str,
    ) -> Result<Tokens, ServerError> {
        let mut tokens = Tokens::default();
        for (index, entry) in entries.enumerate() {
            let token = entry.trim();
            if token.is_empty() {
                continue;
            }
            if !token.bytes().all(|byte| byte.is_ascii_graphic()) {
                return Err(ServerError::InvalidToken {
                    what,
                    number: index + 1,
                });
            }
            tokens.short += usize::from(token.len() < SHORT_TOKEN);
            tokens.digests.push(digest(token));
        }
        Ok(tokens)
    }

    /// These tokens and `other`'s, all accepted.
    pub fn union(mut self, other: Tokens) -> Tokens {
        self.digests.extend(other.digests);
        self.short += other.short;
        self
    }

    /// Whether no token is configured (the service is then open).
    pub fn is_empty(&self) -> bool {
        self.digests.is_empty()
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.digests.len()
    }

    /// How many are shorter than [`SHORT_TOKEN`] characters.
    pub fn short(&self) -> usize {
        self.short
    }

    /// Whether `presented` is one of the tokens. Tokens are kept as digests of a fixed
    /// length, and every one is compared in constant time, so the time taken says
    /// nothing about which one nearly matched, nor how long one is.
    pub fn accepts(&self, presented: &str) -> bool {
        let presented = digest(presented);
        self.digests.iter().fold(false, |found, token| {
            found | bool::from(token.ct_eq(&presented))
        })
    }
}

/// A tokens file's line without its comment: a `#` that opens the line or follows a
/// space starts one (a `#` inside a token is part of it).
fn uncommented(line: &str) -> &str {
    let line = line.trim_start();
    if line.starts_with('#') {
        return "";
    }
    line.char_indices()
        .find(|&(at, c)| c == '#' && line[..at].ends_with(char::is_whitespace))
        .map_or(line, |(at, _)| &line[..at])
}

/// A token's BLAKE3 digest: what is kept and compared, so that no token is held in
/// memory as text and every comparison takes the same time whatever the lengths.
fn digest(token: &str) -> [u8; 32] {
    *blake3::hash(token.as_bytes()).as_bytes()
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tokens({} redacted)", self.digests.len())
    }
}

/// The service's settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Bearer tokens; empty means no authentication (allowed on loopback only, a rule
    /// the binary enforces when it binds).
    pub tokens: Tokens,
    /// Without tokens, answer `/v1/*` and `/metrics` only for requests addressed to a
    /// loopback host (default `true`; others get `403 host_not_allowed`): a web page the
    /// user opens can reach a local service through DNS rebinding, and its requests name
    /// the page's host. Set it `false` only when something in front of the router
    /// authenticates callers itself and keeps its own `Host`.
    pub loopback_hosts_only: bool,
    /// The largest request body, in bytes (default 1 MiB): larger is `413`.
    pub body_limit: usize,
    /// Turns running at once across all sessions (default 64): more is `503`.
    pub max_concurrent_turns: usize,
    /// The longest a turn may run (default 10 minutes): longer is `504`.
    pub turn_timeout: Duration,
    /// The longest a client may take to send a request's headers, counted from when the
    /// connection is ready for a request (default 30 s); the connection is then closed.
    /// This also closes a keep-alive connection left idle that long. Applied by
    /// [`serve`](crate::serve).
    pub header_read_timeout: Duration,
    /// The longest a client may take to send a request's body (default 60 s): longer is
    /// `408 body_timeout`.
    pub body_read_timeout: Duration,
    /// How often a streamed response sends a heartbeat comment when nothing else was
    /// sent (default 15 s; at least 10 ms).
    pub heartbeat: Duration,
    /// Where `GET /metrics` reads from (default a fresh registry). Give the same one to
    /// [`TimedProvider`](crate::TimedProvider) to get provider time and orchestration
    /// overhead.
    pub metrics: Metrics,
    /// Stops the turns in flight, for the end of a graceful shutdown whose grace ran
    /// out (default a fresh one): keep a clone to call [`StopTurns::stop`].
    pub stop_turns: StopTurns,
}

/// Stops the turns in flight of the routers it was given to: each ends at once with
/// `503 shutting_down` (or a streamed turn's `event: error` with that code), nothing of
/// it is stored, and its session is released for the next process. For the end of a
/// graceful shutdown, when its grace period ran out or its operator asked again: without
/// it, the process would exit under the turns, and their clients would see a connection
/// cut with no word of why.
#[derive(Clone)]
pub struct StopTurns(std::sync::Arc<StopInner>);

#[derive(Default)]
struct StopInner {
    stopping: AtomicBool,
    stopped: AtomicUsize,
    /// The turns waiting on something else (a model, a tool), to wake when stopping;
    /// each registers once, not at every poll.
    waiting: Mutex<HashMap<u64, Waker>>,
    next_id: AtomicU64,
}

impl Default for StopTurns {
    fn default() -> StopTurns {
        StopTurns(std::sync::Arc::new(StopInner::default()))
    }
}

impl StopTurns {
    /// Stops every turn in flight, and every turn that starts after.
    pub fn stop(&self) {
        self.0.stopping.store(true, Ordering::Release);
        let waiting = std::mem::take(&mut *lock(&self.0.waiting));
        for waker in waiting.into_values() {
            waker.wake();
        }
    }

    /// How many turns were stopped so far.
    pub fn stopped(&self) -> usize {
        self.0.stopped.load(Ordering::Acquire)
    }

    /// A turn's hold on this: [`StopGuard::poll`] runs the turn until it ends or
    /// [`stop`](Self::stop) is called.
    pub(crate) fn guard(&self) -> StopGuard {
        StopGuard {
            stop: self.clone(),
            registered: None,
        }
    }
}

/// One turn's place among those [`StopTurns::stop`] wakes.
pub(crate) struct StopGuard {
    stop: StopTurns,
    /// Its id among the waiting turns and the waker registered under it.
    registered: Option<(u64, Waker)>,
}

impl StopGuard {
    /// Polls `turn`: `Ready(None)` once stopping (the turn is counted as stopped and
    /// dropped by its caller), else the turn's own outcome. A pending turn's waker is
    /// registered once (again only if the task's waker changes): the check at each
    /// poll is one atomic load.
    pub(crate) fn poll<F: Future>(
        &mut self,
        cx: &mut Context<'_>,
        turn: Pin<&mut F>,
    ) -> Poll<Option<F::Output>> {
        let inner = &self.stop.0;
        if inner.stopping.load(Ordering::Acquire) {
            inner.stopped.fetch_add(1, Ordering::AcqRel);
            return Poll::Ready(None);
        }
        if let Poll::Ready(outcome) = turn.poll(cx) {
            return Poll::Ready(Some(outcome));
        }
        let current = self
            .registered
            .as_ref()
            .is_some_and(|(_, waker)| waker.will_wake(cx.waker()));
        if !current {
            let id = match &self.registered {
                Some((id, _)) => *id,
                None => inner.next_id.fetch_add(1, Ordering::Relaxed),
            };
            lock(&inner.waiting).insert(id, cx.waker().clone());
            self.registered = Some((id, cx.waker().clone()));
            // A stop between the first check and the registration woke no one here.
            if inner.stopping.load(Ordering::Acquire) {
                inner.stopped.fetch_add(1, Ordering::AcqRel);
                return Poll::Ready(None);
            }
        }
        Poll::Pending
    }
}

impl Drop for StopGuard {
    fn drop(&mut self) {
        if let Some((id, _)) = self.registered.take() {
            lock(&self.stop.0.waiting).remove(&id);
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while it was held left a whole map behind.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl fmt::Debug for StopTurns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopTurns")
            .field("stopping", &self.0.stopping.load(Ordering::Relaxed))
            .field("stopped", &self.stopped())
            .finish()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            tokens: Tokens::default(),
            loopback_hosts_only: true,
            body_limit: 1024 * 1024,
            max_concurrent_turns: 64,
            turn_timeout: Duration::from_secs(600),
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(60),
            heartbeat: Duration::from_secs(15),
            metrics: Metrics::new(),
            stop_turns: StopTurns::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_files_skip_comments_and_blank_lines() {
        let tokens = Tokens::from_lines(
            "\u{feff}# team tokens\n\n  alpha  \nbeta # the laptop\n#gamma\np@ss#w0rd\n",
        )
        .unwrap();
        assert_eq!(tokens.len(), 3);
        assert!(tokens.accepts("alpha"));
        assert!(tokens.accepts("beta"));
        assert!(
            tokens.accepts("p@ss#w0rd"),
            "a # inside a token is part of it"
        );
        assert!(!tokens.accepts("gamma"));
        assert!(!tokens.accepts("beta # the laptop"));
        assert!(!tokens.accepts("alph"));
        assert!(!tokens.accepts(""));
        assert_eq!(tokens.short(), 3);
    }

    #[test]
    fn a_token_no_client_can_send_is_refused_by_its_place_not_its_text() {
        for (text, number) in [
            ("good-one\nmy pass phrase\n", 2),
            ("Bearer s3cr3t-long-token\n", 1),
            ("ok\n\ntök\n", 3),
            ("tab\there\n", 1),
        ] {
            let error = Tokens::from_lines(text).expect_err(text).to_string();
            assert!(error.contains(&format!("line {number} ")), "{error}");
            for word in ["pass", "s3cr3t", "tök", "here"] {
                assert!(!error.contains(word), "{error}");
            }
        }
        let error = Tokens::from_comma_list("fine, not fine").expect_err("two words");
        assert!(error.to_string().contains("item 2 "), "{error}");
        let both = Tokens::from_lines("a-long-enough-token-1\n")
            .unwrap()
            .union(Tokens::from_comma_list(" , x").unwrap());
        assert_eq!((both.len(), both.short()), (2, 1));
        assert!(both.accepts("x") && both.accepts("a-long-enough-token-1"));
    }

    #[test]
    fn tokens_never_show_in_debug() {
        let tokens = Tokens::from_comma_list("s3cret-one, s3cret-two").unwrap();
        let shown = format!(
            "{:?}",
            ServerConfig {
                tokens,
                ..ServerConfig::default()
            }
        );
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("2 redacted"));
    }
}

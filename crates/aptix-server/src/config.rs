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

use crate::metrics::Metrics;

/// Bearer tokens accepted by the service. Compared in constant time; never shown by
/// `Debug`, logs or errors.
#[derive(Clone, Default)]
pub struct Tokens(Vec<[u8; 32]>);

impl Tokens {
    /// Tokens from a file's text: one per line, `#` comments and blank lines ignored.
    /// A token is a line's first word (a bearer token holds no space): a `# comment`
    /// after it is ignored, and so is a byte order mark before the first line, which an
    /// editor may write and no client sends.
    pub fn from_lines(text: &str) -> Tokens {
        Tokens(
            text.strip_prefix('\u{feff}')
                .unwrap_or(text)
                .lines()
                .filter_map(|line| line.split_whitespace().next())
                .filter(|token| !token.starts_with('#'))
                .map(digest)
                .collect(),
        )
    }

    /// Tokens from a comma-separated list (`APTIX_SERVE_TOKENS`).
    pub fn from_comma_list(text: &str) -> Tokens {
        Tokens(
            text.split(',')
                .map(str::trim)
                .filter(|token| !token.is_empty())
                .map(digest)
                .collect(),
        )
    }

    /// Whether no token is configured (the service is then open).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// How many tokens are configured.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether `presented` is one of the tokens. Tokens are kept as digests of a fixed
    /// length, and every one is compared in constant time, so the time taken says
    /// nothing about which one nearly matched, nor how long one is.
    pub fn accepts(&self, presented: &str) -> bool {
        let presented = digest(presented);
        self.0.iter().fold(false, |found, token| {
            found | bool::from(token.ct_eq(&presented))
        })
    }
}

/// A token's BLAKE3 digest: what is kept and compared, so that no token is held in
/// memory as text and every comparison takes the same time whatever the lengths.
fn digest(token: &str) -> [u8; 32] {
    *blake3::hash(token.as_bytes()).as_bytes()
}

impl fmt::Debug for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tokens({} redacted)", self.0.len())
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
        let tokens = Tokens::from_lines("# team tokens\n\n  alpha  \nbeta\n#gamma\n");
        assert_eq!(tokens.len(), 2);
        assert!(tokens.accepts("alpha"));
        assert!(tokens.accepts("beta"));
        assert!(!tokens.accepts("gamma"));
        assert!(!tokens.accepts("alph"));
        assert!(!tokens.accepts(""));
    }

    #[test]
    fn tokens_never_show_in_debug() {
        let tokens = Tokens::from_comma_list("s3cret-one, s3cret-two");
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

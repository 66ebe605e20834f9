//! A turn's commit runs to its end once begun, even when the turn's future is dropped
//! (a deadline, a shutdown, a client gone, Ctrl-C).
//!
//! A store's write cannot be taken back half-way: SQLite's runs on a blocking thread
//! that a dropped future does not stop, and PostgreSQL's server goes on with a query it
//! was sent. So a commit dropped mid-way may land after its caller was told the turn
//! failed. Instead, a commit whose future is dropped before it ends is finished in a
//! task of its own, and [`InFlight::settled`] lets whoever answers for the dropped turn
//! wait for it and then look at what the store holds
//! ([`Orchestrator::settle_dropped_turn`](crate::Orchestrator::settle_dropped_turn)):
//! the answer is then what was stored, never a guess.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use crate::OrchestratorError;

type Commit = Pin<Box<dyn Future<Output = Result<u64, OrchestratorError>> + Send>>;

/// The commits of dropped turns still running, by session.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    sessions: Mutex<HashMap<String, usize>>,
    ended: tokio::sync::Notify,
}

impl InFlight {
    /// Waits until no dropped turn's commit of `session_id` is still running.
    pub(crate) async fn settled(&self, session_id: &str) {
        // Every turn asks; almost always nothing is running, and then nothing is waited
        // for or registered.
        if !self.lock().contains_key(session_id) {
            return;
        }
        loop {
            // Registered before the look, so an end between the two is not missed.
            let ended = self.ended.notified();
            let mut ended = std::pin::pin!(ended);
            ended.as_mut().enable();
            if !self.lock().contains_key(session_id) {
                return;
            }
            ended.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.sessions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn begin(self: &Arc<Self>, session_id: &str) -> Running {
        *self.lock().entry(session_id.to_owned()).or_insert(0) += 1;
        Running {
            in_flight: Arc::clone(self),
            session_id: session_id.to_owned(),
        }
    }
}

/// One dropped turn's commit, running: counted until dropped.
struct Running {
    in_flight: Arc<InFlight>,
    session_id: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        {
            let mut sessions = self.in_flight.lock();
            if let Some(count) = sessions.get_mut(&self.session_id) {
                *count -= 1;
                if *count == 0 {
                    sessions.remove(&self.session_id);
                }
            }
        }
        self.in_flight.ended.notify_waiters();
    }
}

/// `commit`, finished in a task of its own if this future is dropped before it ends.
pub(crate) struct Shielded {
    commit: Option<Commit>,
    in_flight: Arc<InFlight>,
    session_id: String,
}

impl Shielded {
    pub(crate) fn new(
        commit: impl Future<Output = Result<u64, OrchestratorError>> + Send + 'static,
        in_flight: &Arc<InFlight>,
        session_id: &str,
    ) -> Shielded {
        Shielded {
            commit: Some(Box::pin(commit)),
            in_flight: Arc::clone(in_flight),
            session_id: session_id.to_owned(),
        }
    }
}

impl Future for Shielded {
    type Output = Result<u64, OrchestratorError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(commit) = self.commit.as_mut() else {
            // Polled again after it ended: a caller's mistake; it never ends again.
            return Poll::Pending;
        };
        let outcome = std::task::ready!(commit.as_mut().poll(cx));
        self.commit = None;
        Poll::Ready(outcome)
    }
}

impl Drop for Shielded {
    fn drop(&mut self) {
        let Some(commit) = self.commit.take() else {
            return;
        };
        // Outside a runtime (a future dropped on a plain thread) there is nowhere to
        // finish it; a store's own blocking work still runs to its end.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let running = self.in_flight.begin(&self.session_id);
        let session_id = std::mem::take(&mut self.session_id);
        runtime.spawn(async move {
            if let Err(error) = commit.await {
                tracing::warn!(session = %session_id, %error, "the commit of a dropped turn failed");
            }
            drop(running);
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_dropped_commit_is_finished_and_settled_waits_for_it() {
        let in_flight = Arc::new(InFlight::default());
        let landed = Arc::new(AtomicBool::new(false));
        let commit = {
            let landed = Arc::clone(&landed);
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                landed.store(true, Ordering::SeqCst);
                Ok(1)
            }
        };
        let shielded = Shielded::new(commit, &in_flight, "s-1");
        // Dropped before it ends, as a deadline drops a turn.
        assert!(
            tokio::time::timeout(Duration::from_millis(5), shielded)
                .await
                .is_err()
        );
        assert!(!landed.load(Ordering::SeqCst));
        in_flight.settled("s-2").await; // another session: nothing to wait for
        in_flight.settled("s-1").await;
        assert!(
            landed.load(Ordering::SeqCst),
            "settled returned before the commit ended"
        );
        assert!(in_flight.lock().is_empty());
    }

    #[tokio::test]
    async fn a_commit_that_ends_is_its_own_answer_and_leaves_nothing_behind() {
        let in_flight = Arc::new(InFlight::default());
        let version = Shielded::new(async { Ok(7) }, &in_flight, "s-1").await;
        assert_eq!(version.unwrap(), 7);
        assert!(in_flight.lock().is_empty());
        in_flight.settled("s-1").await;
    }
}

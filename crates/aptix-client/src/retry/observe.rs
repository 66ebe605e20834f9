//! Telling a caller, as it happens, that a request is about to be sent again.
//!
//! The HTTP providers retry inside one `create` or `stream` call, so a caller that
//! shows progress to a person (a streamed turn of `aptix serve`) would otherwise learn
//! of the wait only from the logs. [`observe_retries`] scopes an observer to the
//! calls made inside a future, as a tracing span scopes log context: no provider
//! signature changes, and a caller that does not observe pays nothing but an empty
//! look-up per retry.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// A request about to be sent again, before the wait.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryNotice {
    /// The attempt about to start (2 for the first retry).
    pub attempt: u32,
    /// The most attempts of this request, the first included.
    pub max_attempts: u32,
    /// The wait before it.
    pub wait: Duration,
    /// What failed, in words: "rate limited (429)", "the server answered 503", or the
    /// transport error.
    pub reason: String,
}

type Observer = Arc<dyn Fn(&RetryNotice) + Send + Sync>;

thread_local! {
    /// The observers of the scopes being polled on this thread, outermost first: a
    /// scope pushes its own while it polls its future and pops it after, as tokio's
    /// task-locals do (without needing tokio, which this crate's trait-only build
    /// does not pull in).
    static OBSERVERS: RefCell<Vec<Observer>> = const { RefCell::new(Vec::new()) };
}

/// Runs `future`, telling `observer` of every retry of a request that this crate's HTTP
/// providers make inside it, before the wait. Observers nest: each one in scope is
/// told, the innermost first. Work that `future` spawns onto other tasks is outside
/// the scope.
///
/// ```
/// use std::sync::{Arc, Mutex};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let log = Arc::clone(&seen);
/// let answer = aptix_client::observe_retries(
///     move |notice: &aptix_client::RetryNotice| {
///         log.lock().unwrap().push(notice.reason.clone());
///     },
///     async { 42 }, // provider calls go here
/// )
/// .await;
/// assert_eq!(answer, 42);
/// assert!(seen.lock().unwrap().is_empty(), "nothing was retried");
/// # }
/// ```
pub async fn observe_retries<F: Future>(
    observer: impl Fn(&RetryNotice) + Send + Sync + 'static,
    future: F,
) -> F::Output {
    Scoped {
        observer: Arc::new(observer),
        future: Box::pin(future),
    }
    .await
}

/// A future polled with its observer in scope.
struct Scoped<F> {
    observer: Observer,
    future: Pin<Box<F>>,
}

impl<F: Future> Future for Scoped<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        OBSERVERS.with(|observers| observers.borrow_mut().push(Arc::clone(&this.observer)));
        // Popped however the poll ends, a panic included.
        let _pop = Pop;
        this.future.as_mut().poll(cx)
    }
}

struct Pop;

impl Drop for Pop {
    fn drop(&mut self) {
        OBSERVERS.with(|observers| {
            observers.borrow_mut().pop();
        });
    }
}

/// Tells the observers in scope, innermost first.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) fn notify(notice: &RetryNotice) {
    let observers = OBSERVERS.with(|observers| observers.borrow().clone());
    for observer in observers.iter().rev() {
        observer(notice);
    }
}

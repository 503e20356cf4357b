//! What a cut-off caller leaves behind. A deadline, a client that disconnects or a shutdown
//! drops a future at whichever await point it had reached. Every store write is atomic and
//! cancel-safe on its own (`atrium_store`'s `begin_write`); the platform's work of several
//! writes keeps its records whole with the two tools here:
//!
//! - [`to_the_end`] runs a write (or a short sequence that must not be split) in a task of
//!   its own, so that dropping the caller only stops the wait, never the write;
//! - [`OnCut`] is armed while work is under way and, dropped before it is disarmed, spawns
//!   the write that closes the record (a conversation turn's `error`, a heartbeat run's end).
//!
//! Cross-app calls have their own such guard, [`crate::audit::Open`].

use std::future::Future;
use std::pin::Pin;

/// Runs `work` in a task of its own and waits for it: a caller dropped while waiting leaves
/// the work to finish. A panic of the work is the caller's panic.
pub(crate) async fn to_the_end<T: Send + 'static>(
    work: impl Future<Output = T> + Send + 'static,
) -> T {
    match tokio::spawn(work).await {
        Ok(value) => value,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Only a runtime shutting down cancels a task it runs: the caller goes with it.
            Err(e) => {
                tracing::error!(error = %e, "a write was stopped by the runtime's shutdown");
                std::future::pending().await
            }
        },
    }
}

/// A boxed write that closes a record.
type Closing = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A guard of work under way: dropped before [`OnCut::disarm`], it spawns its closing write
/// (see the module docs).
#[must_use = "a guard dropped at once closes its record at once"]
pub(crate) struct OnCut {
    what: &'static str,
    closing: Option<Closing>,
}

impl OnCut {
    /// Arms a guard of `what` (for the log) that writes `closing` if the work is cut off.
    pub(crate) fn arm(
        what: &'static str,
        closing: impl Future<Output = ()> + Send + 'static,
    ) -> OnCut {
        OnCut {
            what,
            closing: Some(Box::pin(closing)),
        }
    }

    /// The work reached the point where it closes its record itself.
    pub(crate) fn disarm(mut self) {
        self.closing = None;
    }

    /// Replaces the closing write (the work moved on to a stage that closes differently).
    pub(crate) fn rearm(&mut self, closing: impl Future<Output = ()> + Send + 'static) {
        self.closing = Some(Box::pin(closing));
    }
}

impl Drop for OnCut {
    fn drop(&mut self) {
        let Some(closing) = self.closing.take() else {
            return;
        };
        tracing::warn!(
            what = self.what,
            "work was cut off before it ended; closing its record"
        );
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(closing);
            }
            Err(_) => tracing::error!(
                what = self.what,
                "work was cut off outside a runtime: its record stays open"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_write_run_to_the_end_finishes_though_its_caller_is_dropped() {
        let done = Arc::new(AtomicUsize::new(0));
        let (started, wait_started) = tokio::sync::oneshot::channel::<()>();
        let counted = done.clone();
        let caller = tokio::spawn(async move {
            to_the_end(async move {
                let _ = started.send(());
                tokio::time::sleep(Duration::from_millis(50)).await;
                counted.fetch_add(1, Ordering::SeqCst);
            })
            .await;
        });
        wait_started.await.unwrap();
        caller.abort();
        let _ = caller.await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(done.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_guard_closes_its_record_only_when_dropped_armed() {
        let closed = Arc::new(AtomicUsize::new(0));
        let close = |n: usize| {
            let closed = closed.clone();
            async move {
                closed.fetch_add(n, Ordering::SeqCst);
            }
        };
        OnCut::arm("finished work", close(1)).disarm();
        let mut moved_on = OnCut::arm("work that moved on", close(10));
        moved_on.rearm(close(100));
        drop(moved_on);
        drop(OnCut::arm("cut work", close(1000)));
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(closed.load(Ordering::SeqCst), 1100);
    }
}

//! Metering off the request path: calls hand their usage record to one writer task, which
//! stores whatever has queued up in one transaction. A request never waits for the database
//! to write its usage, and writers never contend with each other. `flush` waits until every
//! record handed over before it is stored; the usage endpoint flushes first, so a client always
//! reads its own calls.
//!
//! The queue is bounded, and a host past its capacity fills it: then every answered request
//! would wait, unseen, to hand over its record. [`Metering::backlog`] tells the host's load
//! shedding how long records wait, so that it refuses new requests before they queue here.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use atrium_jobs::{Job, JobError, Stop};
use tokio::sync::{mpsc, oneshot};

use crate::{Store, UsageRecord};

/// Records queued at most before callers wait (backpressure when the database is slow).
const QUEUE: usize = 10_000;
/// Records written in one transaction at most.
const BATCH: usize = 512;

enum Message {
    /// A record, and when it was queued.
    Record(UsageRecord, Instant),
    /// A flush, and when it was queued.
    Flush(oneshot::Sender<()>, Instant),
}

/// The handle to the metering writer.
#[derive(Clone)]
pub struct Metering {
    tx: mpsc::Sender<Message>,
    /// How long the oldest record of the writer's latest batch had waited, in microseconds.
    lag_us: Arc<AtomicU64>,
}

/// Records waiting for the writer (see [`Metering::backlog`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backlog {
    /// Records (and flushes) queued.
    pub queued: usize,
    /// Whether the queue is full: the next record's request waits for room.
    pub full: bool,
    /// How long the oldest record of the writer's latest batch had waited when the writer took
    /// it.
    pub wait: Duration,
}

/// The metering writer, a [`Job`] named `metering`: stores what the handles queue, and on a
/// stop stores everything queued before it ends.
pub struct MeteringWriter {
    store: Store,
    rx: mpsc::Receiver<Message>,
    lag_us: Arc<AtomicU64>,
}

#[async_trait::async_trait]
impl Job for MeteringWriter {
    fn name(&self) -> &'static str {
        "metering"
    }

    async fn run(self: Box<Self>, stop: Stop) -> Result<(), JobError> {
        let MeteringWriter { store, rx, lag_us } = *self;
        writer(store, rx, lag_us, stop).await;
        Ok(())
    }
}

impl Metering {
    /// A handle and its writer, which the host starts with its other jobs.
    pub fn new(store: Store) -> (Self, MeteringWriter) {
        let (metering, rx) = Metering::detached(QUEUE);
        let writer = MeteringWriter {
            store,
            rx,
            lag_us: metering.lag_us.clone(),
        };
        (metering, writer)
    }

    /// A handle and the queue it feeds, with no writer yet.
    fn detached(capacity: usize) -> (Self, mpsc::Receiver<Message>) {
        let (tx, rx) = mpsc::channel(capacity);
        let lag_us = Arc::new(AtomicU64::new(0));
        (Metering { tx, lag_us }, rx)
    }

    /// Queues one record.
    pub async fn record(&self, record: UsageRecord) {
        if self
            .tx
            .send(Message::Record(record, Instant::now()))
            .await
            .is_err()
        {
            tracing::error!("the metering writer is gone; a usage record was not stored");
        }
    }

    /// What waits for the writer, if anything does: none when the queue is empty (the writer
    /// keeps up).
    pub fn backlog(&self) -> Option<Backlog> {
        let room = self.tx.capacity();
        let queued = self.tx.max_capacity() - room;
        (queued > 0).then(|| Backlog {
            queued,
            full: room == 0,
            wait: Duration::from_micros(self.lag_us.load(Ordering::Relaxed)),
        })
    }

    /// Waits until every record queued before this call is stored.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self
            .tx
            .send(Message::Flush(done, Instant::now()))
            .await
            .is_ok()
        {
            let _ = wait.await;
        }
    }
}

async fn writer(
    store: Store,
    mut rx: mpsc::Receiver<Message>,
    lag_us: Arc<AtomicU64>,
    mut stop: Stop,
) {
    loop {
        let first = if stop.is_requested() {
            // Asked to stop: store what is queued, then end.
            match rx.try_recv() {
                Ok(message) => message,
                Err(_) => return,
            }
        } else {
            tokio::select! {
                message = rx.recv() => match message {
                    Some(message) => message,
                    None => return,
                },
                () = stop.requested() => continue,
            }
        };
        let mut records = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        let mut oldest: Option<Instant> = None;
        while let Some(message) = next.take() {
            match message {
                Message::Record(r, queued) => {
                    oldest = Some(oldest.map_or(queued, |o| o.min(queued)));
                    records.push(r);
                }
                Message::Flush(done, queued) => {
                    oldest = Some(oldest.map_or(queued, |o| o.min(queued)));
                    flushes.push(done);
                }
            }
            if records.len() < BATCH {
                next = rx.try_recv().ok();
            }
        }
        let wait = oldest.map_or(Duration::ZERO, |o| o.elapsed());
        lag_us.store(
            u64::try_from(wait.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        let mut delay = Duration::from_millis(50);
        while let Err(error) = store.record_usage_batch(&records).await {
            // Usage is money: keep it and try again rather than drop it.
            stop.report(
                &format!("storing {} usage records failed; retrying", records.len()),
                &error,
            );
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(org_id: &str, tenant: &str) -> UsageRecord {
        UsageRecord {
            org_id: org_id.into(),
            tenant_id: tenant.into(),
            kind: "embedding".into(),
            provider: "local".into(),
            model: "lexical".into(),
            prompt_tokens: 3,
            completion_tokens: 0,
            cost_micros: 0,
            batch: false,
            app_slug: None,
            agent: None,
        }
    }

    #[tokio::test]
    async fn the_backlog_says_how_many_records_wait_whether_the_queue_is_full_and_how_long_they_waited()
     {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(dir.path()).await.unwrap();
        let org = store.create_key("acme", "ops").await.unwrap().org_id;
        let (metering, rx) = Metering::detached(4);
        assert_eq!(metering.backlog(), None);
        metering.record(record(&org, "a")).await;
        metering.record(record(&org, "b")).await;
        assert_eq!(
            metering.backlog(),
            Some(Backlog {
                queued: 2,
                full: false,
                wait: Duration::ZERO
            })
        );
        metering.record(record(&org, "c")).await;
        metering.record(record(&org, "d")).await;
        assert!(metering.backlog().unwrap().full);

        // The writer starts late: its first batch, the four records, had waited at least that
        // long.
        tokio::time::sleep(Duration::from_millis(40)).await;
        let jobs = atrium_jobs::Jobs::new();
        jobs.start(Box::new(MeteringWriter {
            store: store.clone(),
            rx,
            lag_us: metering.lag_us.clone(),
        }));
        while store.usage(&org).await.unwrap().totals.calls < 4 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(
            metering.lag_us.load(Ordering::Relaxed) >= 40_000,
            "{} µs",
            metering.lag_us.load(Ordering::Relaxed)
        );
        // Once the queue is empty there is no backlog, whatever the last batch had waited.
        metering.flush().await;
        assert_eq!(metering.backlog(), None);
        jobs.stop(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn a_stopped_writer_stores_everything_queued_before_it_ends() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(dir.path()).await.unwrap();
        let org = store.create_key("acme", "ops").await.unwrap().org_id;
        let (metering, writer) = Metering::new(store.clone());
        for tenant in ["a", "b", "c"] {
            metering.record(record(&org, tenant)).await;
        }
        // Queued before the writer ever ran; the stop comes first.
        let jobs = atrium_jobs::Jobs::new();
        jobs.start(Box::new(writer));
        jobs.stop(Duration::from_secs(5)).await;
        assert_eq!(store.usage(&org).await.unwrap().totals.calls, 3);
        assert_eq!(jobs.failures("metering"), 0);
        // A flush after the end does not wait for a writer that is gone.
        metering.flush().await;
    }
}

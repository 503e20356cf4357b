//! Metering off the request path: calls hand their usage record to one writer task, which
//! stores whatever has queued up in one transaction. A request never waits for the database
//! to write its usage, and writers never contend with each other. `flush` waits until every
//! record handed over before it is stored; the usage endpoint flushes first, so a client always
//! reads its own calls.
//!
//! The queue is bounded, and a host past its capacity fills it: then every answered request
//! would wait, unseen, to hand over its record. [`Metering::backlog`] tells the host's load
//! shedding how long records wait, so that it refuses new requests before they queue here.
//!
//! When the database refuses a batch, the writer tries it [`TRIES`] times with a growing pause
//! and then reports the store failing ([`Metering::health`], the host's readiness): it answers
//! every waiting flush with [`FlushError`] (no caller waits on a failing store), keeps the
//! records (usage is money), and tries them again every [`FAILING_RETRY`] with whatever came
//! since. It holds at most [`HELD`] records; past that it stops taking new ones, so the queue
//! fills and the load shedding refuses new requests rather than let memory grow.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use atrium_jobs::{Job, JobError, Stop};
use tokio::sync::{mpsc, oneshot};

use crate::{Store, UsageRecord};

/// Records queued at most before callers wait (backpressure when the database is slow).
const QUEUE: usize = 10_000;
/// Records written in one transaction at most, while the store takes them.
const BATCH: usize = 512;
/// Tries of one batch before the writer reports the store failing.
pub const TRIES: u32 = 4;
/// The pause after the first failed try; it doubles after each further one.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
/// How often a failing writer tries its held records again.
pub const FAILING_RETRY: Duration = Duration::from_secs(5);
/// Records a failing writer holds at most before it stops taking new ones.
pub const HELD: usize = 100_000;
/// How long a record waits at most for room in a full queue.
pub const RECORD_WAIT: Duration = Duration::from_secs(10);

enum Message {
    /// A record, and when it was queued.
    Record(UsageRecord, Instant),
    /// A flush, and when it was queued.
    Flush(oneshot::Sender<Result<(), FlushError>>, Instant),
}

/// A flush that could not complete: the store refuses the writer's records (they are kept and
/// tried again), or the writer is gone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FlushError {
    /// The store refuses the writer's batches.
    #[error("the database refuses usage records ({held} waiting since {since}): {error}")]
    Failing {
        /// Records the writer holds.
        held: usize,
        /// When the first refused try was.
        since: jiff::Timestamp,
        /// The database's last error.
        error: String,
    },
    /// The writer has ended (the host is stopping).
    #[error("the metering writer has stopped")]
    Stopped,
}

/// How the metering writer fares with the store (see [`Metering::health`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeteringHealth {
    /// Its last batch was stored.
    Writing,
    /// The store refuses its batches.
    Failing {
        /// When the first refused try was.
        since: jiff::Timestamp,
        /// Records the writer holds, stored once the store takes them.
        held: usize,
        /// The database's last error.
        error: String,
    },
}

/// The handle to the metering writer.
#[derive(Clone)]
pub struct Metering {
    tx: mpsc::Sender<Message>,
    /// How long the oldest record of the writer's latest batch had waited, in microseconds.
    lag_us: Arc<AtomicU64>,
    /// How the writer fares; the writer sets it, readiness and flushes read it.
    health: Arc<Mutex<MeteringHealth>>,
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
    health: Arc<Mutex<MeteringHealth>>,
}

#[async_trait::async_trait]
impl Job for MeteringWriter {
    fn name(&self) -> &'static str {
        "metering"
    }

    async fn run(self: Box<Self>, stop: Stop) -> Result<(), JobError> {
        let MeteringWriter {
            store,
            rx,
            lag_us,
            health,
        } = *self;
        Writer {
            store,
            lag_us,
            health,
            held: Vec::new(),
        }
        .run(rx, stop)
        .await;
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
            health: metering.health.clone(),
        };
        (metering, writer)
    }

    /// A handle and the queue it feeds, with no writer yet.
    fn detached(capacity: usize) -> (Self, mpsc::Receiver<Message>) {
        let (tx, rx) = mpsc::channel(capacity);
        let metering = Metering {
            tx,
            lag_us: Arc::new(AtomicU64::new(0)),
            health: Arc::new(Mutex::new(MeteringHealth::Writing)),
        };
        (metering, rx)
    }

    /// Queues one record. When the queue is full (the writer holds all it may while the
    /// store refuses its records, and the load shedding refuses new requests) it waits for
    /// room at most [`RECORD_WAIT`], then drops the record with an error in the log: a request
    /// never waits on a broken store without a limit.
    pub async fn record(&self, record: UsageRecord) {
        match self
            .tx
            .send_timeout(Message::Record(record, Instant::now()), RECORD_WAIT)
            .await
        {
            Ok(()) => {}
            Err(mpsc::error::SendTimeoutError::Timeout(_)) => tracing::error!(
                "the metering queue stayed full for {} s (the database refuses usage records): \
                 a usage record was not stored",
                RECORD_WAIT.as_secs()
            ),
            Err(mpsc::error::SendTimeoutError::Closed(_)) => {
                tracing::error!("the metering writer is gone; a usage record was not stored");
            }
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

    /// How the writer fares with the store.
    pub fn health(&self) -> MeteringHealth {
        self.health
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until every record queued before this call is stored. While the store refuses
    /// the writer's records it answers [`FlushError::Failing`] at once, and a flush that was
    /// waiting gets it once the writer's tries of its batch are spent: no caller waits on a
    /// failing store.
    pub async fn flush(&self) -> Result<(), FlushError> {
        if self.tx.is_closed() {
            return Err(FlushError::Stopped);
        }
        if let MeteringHealth::Failing { since, held, error } = self.health() {
            return Err(FlushError::Failing { held, since, error });
        }
        let (done, wait) = oneshot::channel();
        if self
            .tx
            .send(Message::Flush(done, Instant::now()))
            .await
            .is_err()
        {
            return Err(FlushError::Stopped);
        }
        wait.await.unwrap_or(Err(FlushError::Stopped))
    }
}

/// The writer's state between batches.
struct Writer {
    store: Store,
    lag_us: Arc<AtomicU64>,
    health: Arc<Mutex<MeteringHealth>>,
    /// Records of batches the store refused, tried again with the next batch.
    held: Vec<UsageRecord>,
}

impl Writer {
    async fn run(mut self, mut rx: mpsc::Receiver<Message>, mut stop: Stop) {
        loop {
            let first = if stop.is_requested() {
                // Asked to stop: store what is queued (and held), then end.
                match rx.try_recv() {
                    Ok(message) => Some(message),
                    Err(_) if self.held.is_empty() => return,
                    Err(_) => None,
                }
            } else if self.held.len() >= HELD {
                // Holding all it may: take nothing more until the store takes these.
                tokio::select! {
                    () = tokio::time::sleep(FAILING_RETRY) => None,
                    () = stop.requested() => continue,
                }
            } else if self.held.is_empty() {
                tokio::select! {
                    message = rx.recv() => match message {
                        Some(message) => Some(message),
                        None => return,
                    },
                    () = stop.requested() => continue,
                }
            } else {
                // Failing: try the held records again after a pause, with what came meanwhile.
                tokio::select! {
                    message = rx.recv() => message,
                    () = tokio::time::sleep(FAILING_RETRY) => None,
                    () = stop.requested() => continue,
                }
            };
            let (records, flushes) = self.gather(first, &mut rx);
            let stored = self.store_batch(records, &stop).await;
            for done in flushes {
                let _ = done.send(stored.clone());
            }
            if stop.is_requested() && !self.held.is_empty() && rx.is_empty() {
                tracing::error!(
                    records = self.held.len(),
                    "the host stops while the database refuses usage records: these are not stored"
                );
                return;
            }
        }
    }

    /// The held records, `first` and whatever else is queued, up to a batch beyond the held
    /// ones, and the flushes among them.
    fn gather(
        &mut self,
        first: Option<Message>,
        rx: &mut mpsc::Receiver<Message>,
    ) -> (
        Vec<UsageRecord>,
        Vec<oneshot::Sender<Result<(), FlushError>>>,
    ) {
        let mut records = std::mem::take(&mut self.held);
        let limit = records.len() + BATCH;
        let mut flushes = Vec::new();
        let mut next = first;
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
            if records.len() < limit {
                next = rx.try_recv().ok();
            }
        }
        let wait = oldest.map_or(Duration::ZERO, |o| o.elapsed());
        self.lag_us.store(
            u64::try_from(wait.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        (records, flushes)
    }

    /// Stores `records` in at most [`TRIES`] tries; what the store refuses is held.
    async fn store_batch(
        &mut self,
        records: Vec<UsageRecord>,
        stop: &Stop,
    ) -> Result<(), FlushError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut pause = FIRST_PAUSE;
        let mut tries = 0;
        let first_refusal = jiff::Timestamp::now();
        let error = loop {
            // No deadline around the write: a try cut off while committing might have stored
            // the batch, and a second try would count it twice. The database's own limits
            // (the busy timeout, the pool's acquire timeout) end a try that cannot go on.
            match self.store.record_usage_batch(&records).await {
                Ok(()) => {
                    self.written();
                    return Ok(());
                }
                Err(error) => {
                    tries += 1;
                    stop.report(
                        &format!(
                            "storing {} usage records failed (try {tries} of {TRIES})",
                            records.len()
                        ),
                        &error,
                    );
                    if tries >= TRIES {
                        break error.to_string();
                    }
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
            }
        };
        let held = records.len();
        self.held = records;
        let failing = {
            let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
            let since = match &*health {
                MeteringHealth::Failing { since, .. } => *since,
                MeteringHealth::Writing => first_refusal,
            };
            *health = MeteringHealth::Failing {
                since,
                held,
                error: error.clone(),
            };
            FlushError::Failing { held, since, error }
        };
        tracing::error!(
            records = held,
            "the database refuses usage records: they are held and tried again every {} s",
            FAILING_RETRY.as_secs()
        );
        Err(failing)
    }

    /// A batch was stored: the writer is healthy again.
    fn written(&self) {
        let mut health = self.health.lock().unwrap_or_else(PoisonError::into_inner);
        if let MeteringHealth::Failing { since, .. } = &*health {
            tracing::info!(
                failing_for_ms = jiff::Timestamp::now().duration_since(*since).as_millis(),
                "the database takes usage records again"
            );
        }
        *health = MeteringHealth::Writing;
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
            health: metering.health.clone(),
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
        metering.flush().await.unwrap();
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
        assert_eq!(metering.flush().await, Err(FlushError::Stopped));
    }

    /// Makes the database refuse (or take again) every usage batch, as a broken store does,
    /// through a connection of its own: the table the batches go to is renamed away and back.
    async fn refuse_usage(dir: &std::path::Path, refuse: bool) {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!(
            "sqlite://{}",
            dir.join("atrium.db").display()
        ))
        .await
        .unwrap();
        let sql = if refuse {
            "ALTER TABLE usage_records RENAME TO usage_records_away"
        } else {
            "ALTER TABLE usage_records_away RENAME TO usage_records"
        };
        sqlx::query(sql).execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }

    #[tokio::test]
    async fn a_refused_batch_is_tried_a_bounded_number_of_times_then_held_and_stored_once_the_store_takes_it()
     {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(dir.path()).await.unwrap();
        let org = store.create_key("acme", "ops").await.unwrap().org_id;
        let (metering, writer) = Metering::new(store.clone());
        let jobs = atrium_jobs::Jobs::new();
        jobs.start(Box::new(writer));
        metering.record(record(&org, "a")).await;
        metering.flush().await.unwrap();
        assert_eq!(metering.health(), MeteringHealth::Writing);

        refuse_usage(dir.path(), true).await;
        for tenant in ["b", "c"] {
            metering.record(record(&org, tenant)).await;
        }
        // The flush waits for the writer's tries of its batch, then hears that they failed.
        let Err(FlushError::Failing { held, error, .. }) = metering.flush().await else {
            panic!("a flush on a refusing store succeeded");
        };
        assert_eq!(held, 2);
        assert!(error.contains("usage_records"), "{error}");
        assert_eq!(jobs.failures("metering"), u64::from(TRIES));
        let MeteringHealth::Failing { held, .. } = metering.health() else {
            panic!("the writer does not report the refusing store");
        };
        assert_eq!(held, 2);
        // While it fails, a flush answers at once rather than wait.
        let answered = tokio::time::timeout(Duration::from_millis(100), metering.flush()).await;
        assert!(
            matches!(answered, Ok(Err(FlushError::Failing { .. }))),
            "{answered:?}"
        );

        // More records come while it fails; once the store takes them again, every record is
        // stored exactly once.
        metering.record(record(&org, "d")).await;
        refuse_usage(dir.path(), false).await;
        let deadline = Instant::now() + FAILING_RETRY * 3;
        while metering.health() != MeteringHealth::Writing {
            assert!(
                Instant::now() < deadline,
                "the held records were never stored"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        metering.flush().await.unwrap();
        assert_eq!(store.usage(&org).await.unwrap().totals.calls, 4);
        jobs.stop(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn a_writer_stopped_while_the_store_refuses_its_records_ends_after_its_tries() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(dir.path()).await.unwrap();
        let org = store.create_key("acme", "ops").await.unwrap().org_id;
        let (metering, writer) = Metering::new(store.clone());
        let jobs = atrium_jobs::Jobs::new();
        jobs.start(Box::new(writer));
        refuse_usage(dir.path(), true).await;
        metering.record(record(&org, "a")).await;
        assert!(metering.flush().await.is_err());
        jobs.stop(Duration::from_secs(30)).await;
        // It tried once more on the stop and ended on its own: an abort at the grace would
        // count one failure more.
        assert_eq!(jobs.failures("metering"), 2 * u64::from(TRIES));
        assert_eq!(metering.flush().await, Err(FlushError::Stopped));
    }
}

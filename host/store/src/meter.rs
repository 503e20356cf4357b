//! Metering off the request path: calls hand their usage record to one writer task, which
//! stores whatever has queued up in one transaction. A request never waits for the database
//! to write its usage, and writers never contend with each other. `flush` waits until every
//! record handed over before it is stored; the usage endpoint flushes first, so a client always
//! reads its own calls.

use std::time::Duration;

use crate::{Store, UsageRecord};
use tokio::sync::{mpsc, oneshot};

/// Records queued at most before callers wait (backpressure when the database is slow).
const QUEUE: usize = 10_000;
/// Records written in one transaction at most.
const BATCH: usize = 512;

enum Message {
    Record(UsageRecord),
    Flush(oneshot::Sender<()>),
}

/// The handle to the metering writer.
#[derive(Clone)]
pub struct Metering {
    tx: mpsc::Sender<Message>,
}

impl Metering {
    /// Starts the writer on the current Tokio runtime.
    pub fn start(store: Store) -> Self {
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(writer(store, rx));
        Metering { tx }
    }

    /// Queues one record.
    pub async fn record(&self, record: UsageRecord) {
        if self.tx.send(Message::Record(record)).await.is_err() {
            tracing::error!("the metering writer is gone; a usage record was not stored");
        }
    }

    /// Waits until every record queued before this call is stored.
    pub async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Message::Flush(done)).await.is_ok() {
            let _ = wait.await;
        }
    }
}

async fn writer(store: Store, mut rx: mpsc::Receiver<Message>) {
    while let Some(first) = rx.recv().await {
        let mut records = Vec::new();
        let mut flushes = Vec::new();
        let mut next = Some(first);
        while let Some(message) = next.take() {
            match message {
                Message::Record(r) => records.push(r),
                Message::Flush(done) => flushes.push(done),
            }
            if records.len() < BATCH {
                next = rx.try_recv().ok();
            }
        }
        let mut delay = Duration::from_millis(50);
        while let Err(error) = store.record_usage_batch(&records).await {
            // Usage is money: keep it and try again rather than drop it.
            tracing::error!(%error, records = records.len(), "storing usage failed; retrying");
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        for done in flushes {
            let _ = done.send(());
        }
    }
}

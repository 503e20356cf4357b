//! Whether the vector store can be reached, and what to do when it cannot.
//!
//! The connection to LanceDB is made on first use, not when the service opens, so a store that
//! is down when the host starts (object storage unreachable) takes down retrieval alone: the
//! rest of the host serves, and retrieval calls answer [`RetrievalError::Unavailable`] (503)
//! naming the cause. When a call into the store fails, a probe (connect, list one table)
//! tells an outage from a failure of that one call. During an outage calls fail at once,
//! without waiting on the store; the upkeep job ([`crate::Upkeep`]) probes it
//! every [`RetrievalConfig::retry_every`](crate::RetrievalConfig::retry_every), and serving
//! resumes as soon as a probe succeeds.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lancedb::Connection;

use crate::{Retrieval, RetrievalConfig, RetrievalError};

/// Longest wait for a probe's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How to connect: the database's URI, the session its tables share and its options.
pub(crate) struct Connector {
    uri: String,
    session: Arc<lancedb::Session>,
    storage_options: Vec<(String, String)>,
    read_consistency: Option<Duration>,
}

impl Connector {
    pub fn new(config: &RetrievalConfig) -> Self {
        // One session for every table: the caches are shared and bounded, however many
        // collections the host serves.
        let session = lancedb::Session::new(
            config.index_cache_bytes,
            config.metadata_cache_bytes,
            Arc::new(lancedb::ObjectStoreRegistry::default()),
        );
        Connector {
            uri: config.uri.clone(),
            session: Arc::new(session),
            storage_options: config.storage_options.clone(),
            read_consistency: config.read_consistency,
        }
    }

    pub async fn connect(&self) -> lancedb::Result<Connection> {
        let mut connect = lancedb::connect(&self.uri).session(Arc::clone(&self.session));
        if !self.storage_options.is_empty() {
            connect = connect.storage_options(self.storage_options.clone());
        }
        if let Some(interval) = self.read_consistency {
            connect = connect.read_consistency_interval(interval);
        }
        connect.execute().await
    }
}

/// An outage of the store.
#[derive(Debug, Clone)]
struct Outage {
    /// What the last probe met.
    cause: String,
    /// When the outage was noticed.
    since: Instant,
}

/// The store's state: reachable, or in an outage; and one probe at a time.
#[derive(Debug, Default)]
pub(crate) struct Health {
    outage: std::sync::Mutex<Option<Outage>>,
    probing: tokio::sync::Mutex<()>,
}

impl Health {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Outage>> {
        self.outage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a failed probe; logs the start of an outage with the whole error.
    fn down(&self, cause: String, detail: &str) {
        let mut outage = self.lock();
        if let Some(known) = outage.as_mut() {
            known.cause = cause;
            return;
        }
        tracing::error!(error = %detail, "the retrieval store cannot be reached; retrieval answers 503 until it is back");
        *outage = Some(Outage {
            cause,
            since: Instant::now(),
        });
    }

    /// Records a successful probe; logs the end of an outage.
    fn up(&self) {
        if let Some(outage) = self.lock().take() {
            tracing::info!(
                down_for_s = outage.since.elapsed().as_secs(),
                "the retrieval store is reachable again; retrieval serves"
            );
        }
    }

    /// What the last probe met, during an outage.
    fn cause(&self) -> Option<String> {
        self.lock().as_ref().map(|o| o.cause.clone())
    }
}

/// What failed, in a few words, from the whole error of a probe. LanceDB passes some object
/// store errors on as text (the request's URI, retry counts and a source file included), so
/// the common causes are recognised in the text of the whole chain; anything else is the
/// innermost error, cut at 200 characters.
fn cause_of(error: &(dyn std::error::Error + 'static)) -> String {
    let mut whole = String::new();
    let mut innermost = error;
    loop {
        whole.push_str(&innermost.to_string().to_ascii_lowercase());
        whole.push('\n');
        match innermost.source() {
            Some(source) => innermost = source,
            None => break,
        }
    }
    let known = [
        ("connection refused", "connection refused"),
        ("connection reset", "connection reset"),
        ("timed out", "timed out"),
        ("dns error", "the store's host name does not resolve"),
        (
            "failed to lookup address",
            "the store's host name does not resolve",
        ),
        ("nosuchbucket", "the bucket does not exist"),
        (
            "status 403",
            "access denied (HTTP 403); check the credentials",
        ),
        (
            "403 forbidden",
            "access denied (HTTP 403); check the credentials",
        ),
        (
            "invalidaccesskeyid",
            "access denied (unknown access key); check the credentials",
        ),
        (
            "signaturedoesnotmatch",
            "access denied (wrong secret key); check the credentials",
        ),
        ("certificate", "the TLS certificate was refused"),
    ];
    if let Some((_, cause)) = known.iter().find(|(needle, _)| whole.contains(needle)) {
        return (*cause).to_owned();
    }
    innermost.to_string().chars().take(200).collect()
}

impl Retrieval {
    /// Fails with [`RetrievalError::Unavailable`] during an outage.
    pub(crate) fn available(&self) -> Result<(), RetrievalError> {
        match self.tables.health.cause() {
            Some(cause) => Err(self.unavailable(&cause)),
            None => Ok(()),
        }
    }

    /// Runs `op`, a call that uses the store, unless the store is down; when `op` fails on
    /// storage, probes the store, and answers [`RetrievalError::Unavailable`] if the probe
    /// fails too.
    pub(crate) async fn guarded<T>(
        &self,
        op: impl Future<Output = Result<T, RetrievalError>>,
    ) -> Result<T, RetrievalError> {
        self.available()?;
        match op.await {
            Err(RetrievalError::Storage(detail)) => match self.probe().await {
                Ok(()) => Err(RetrievalError::Storage(detail)),
                Err(unavailable) => {
                    tracing::warn!(error = %detail, "a retrieval call failed during a store outage");
                    Err(unavailable)
                }
            },
            other => other,
        }
    }

    /// Connects if need be and lists one table, within [`PROBE_TIMEOUT`]; records the result.
    /// Calls that fail together share one probe.
    pub(crate) async fn probe(&self) -> Result<(), RetrievalError> {
        let health = &self.tables.health;
        let _probing = match health.probing.try_lock() {
            Ok(guard) => guard,
            Err(_) => {
                // Another call is probing: its result is this one's.
                let _done = health.probing.lock().await;
                return self.available();
            }
        };
        let probe = async {
            let db = self.tables.db().await?;
            db.table_names().limit(1).execute().await.map(|_| ())
        };
        let (cause, detail) = match tokio::time::timeout(PROBE_TIMEOUT, probe).await {
            Ok(Ok(())) => {
                health.up();
                return Ok(());
            }
            Ok(Err(e)) => (cause_of(&e), e.to_string()),
            Err(_) => {
                let cause = format!("no answer within {} s", PROBE_TIMEOUT.as_secs());
                (cause.clone(), cause)
            }
        };
        let error = self.unavailable(&cause);
        health.down(cause, &detail);
        Err(error)
    }

    /// During an outage, probes the store (the upkeep task calls this every
    /// [`RetrievalConfig::retry_every`](crate::RetrievalConfig::retry_every)); returns whether
    /// the store is reachable.
    pub async fn check_store(&self) -> bool {
        if self.available().is_ok() {
            return true;
        }
        self.probe().await.is_ok()
    }

    fn unavailable(&self, cause: &str) -> RetrievalError {
        RetrievalError::Unavailable(format!(
            "the retrieval store cannot be reached: {cause}; the host retries every {} s and serves retrieval again as soon as the store answers",
            self.config.retry_every.as_secs().max(1)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_kept_until_a_probe_succeeds() {
        let health = Health::default();
        assert_eq!(health.cause(), None);
        health.down(
            "Connection refused".into(),
            "listing tables failed: Connection refused",
        );
        health.down("timed out".into(), "listing tables failed: timed out");
        assert_eq!(health.cause().as_deref(), Some("timed out"));
        health.up();
        assert_eq!(health.cause(), None);
    }

    #[test]
    fn causes_are_named_in_a_few_words() {
        #[derive(Debug, thiserror::Error)]
        #[error("sending the request to http://10.0.0.7:9000/bucket failed")]
        struct Outer(#[source] std::io::Error);
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        assert_eq!(cause_of(&Outer(refused)), "connection refused");
        // As LanceDB passes it on: the object store's error as text.
        let lance = lancedb::Error::InvalidInput {
            message: r#"Failed to connect to namespace: IO { source: Generic { store: "S3", source: ListRequest { source: RetryError(RetryErrorImpl { uri: Some(http://127.0.0.1:42747/b), inner: Http(HttpError { kind: Connect, source: ConnectError("tcp connect error", Os { code: 111, kind: ConnectionRefused, message: "Connection refused" }) }) }) } }"#.into(),
        };
        assert_eq!(cause_of(&lance), "connection refused");
        let other = Outer(std::io::Error::other("the disk is full"));
        assert_eq!(cause_of(&other), "the disk is full");
    }
}

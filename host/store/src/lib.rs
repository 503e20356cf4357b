//! Atrium's database: organizations, API keys, tenants, usage records, batches, the
//! bookkeeping of retrieval collections and documents, and the app registry (developers, apps,
//! versions, the files a version refers to, sealed secrets), tenant users and their tokens,
//! and installs (with their sealed values, the tenant's integrations, cross-app grants and
//! cloned templates).
//!
//! One [`Store`] over SQLite (the embedded default, a file in the data directory, WAL mode) or
//! PostgreSQL (for several hosts sharing one deployment), with the same schema and the same
//! behaviour on both. Migrations (in `migrations/`) are applied when the store opens. Queries
//! are written once in the SQL both accept and run on whichever pool is open.
//!
//! Writes that change what a host may cache (installs, tenant users and tokens, keys) record
//! it in the change feed (`changes`), which every host polls to keep its [`Cache`]s honest.
//!
//! Times: every time the store takes or hands out (a row's fields, a query's bounds, a page's
//! cursor) is a `jiff::Timestamp`, so that no caller does arithmetic in a unit it has to
//! remember. The columns keep integers: ms since the epoch, and µs for a room's messages,
//! which a room orders strictly. The conversion happens at the store's edge, by `millis`
//! and `micros` when a row is read and `as_millisecond` when one is written; a stored
//! integer out of a `Timestamp`'s range (years -9999 to 9999) reads as `StoreError::Corrupt`.
//!
//! Keys are stored as SHA-256 digests of the secret, never in clear: a key is 32 random bytes,
//! so a fast hash cannot be searched backwards, and lookups stay one indexed read.

mod apps;
mod audit;
mod batches;
mod catalogue;
mod changes;
mod commitments;
mod conversations;
mod developers;
mod grants;
mod heartbeats;
mod ids;
mod install_edits;
mod installs;
mod integrations;
mod keys;
mod llm_roles;
mod memory;
mod meter;
mod public_routes;
mod rag;
mod records;
mod rooms;
mod schedules;
mod secrets;
mod templates;
mod tenant_settings;
mod tenant_tokens;
mod tenants;
mod usage;
mod visions;
mod wires;

use std::path::Path;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

pub use apps::{
    App, AppStatus, AppVersion, FileRole, NewVersion, Registered, VersionFile, VersionStatus,
};
pub use audit::{AuditEntry, AuditFilter, NewAuditEntry};
pub use batches::{Batch, BatchItem, BatchSummary, ClaimedItem, ItemStatus};
pub use changes::{Affected, Cache, Change, ChangeFeed, ChangeWatcher, POLL_INTERVAL, STALE_AFTER};
pub use commitments::{CommitmentFilter, CommitmentStatus, NewCommitment, StoredCommitment};
pub use conversations::{Conversation, NewMessage, StoredMessage};
pub use developers::{Developer, NewDeveloper, check_email, check_login};
pub use grants::Grant;
pub use heartbeats::{
    DueHeartbeat, HeartbeatClaim, HeartbeatDecl, HeartbeatEnd, HeartbeatRef, HeartbeatRow,
    HeartbeatRun, MAX_CONSECUTIVE_FAILURES,
};
pub use ids::{InstallKey, InstallValueKind, TenantKey};
pub use installs::{Activation, Install, InstallStatus, NewGrant, NewTemplate, UpgradePolicy};
pub use integrations::StoredIntegration;
pub use keys::KEY_PREFIX;
pub use keys::{ApiKey, CreatedKey, KeyOwner};
pub use llm_roles::{AgentLimitsRow, LlmRole};
pub use memory::MemoryEntry;
pub use meter::{Backlog, FlushError, Metering, MeteringHealth, MeteringWriter};
pub use rag::{
    Collection, CollectionSummary, Document, MAX_COLLECTION_NAME, check_collection_name,
};
pub use records::Record;
pub use rooms::{
    MemberAdded, MemberKind, NewRoomMember, NewRoomMessage, Posted, ROOM_CHANNEL, Room, RoomMember,
    RoomMessage, RoomNotification, RoomNotifications,
};
pub use schedules::{ScheduleRun, ScheduleSlot};
pub use secrets::SecretMeta;
pub use tenant_settings::TenantSettings;
pub use tenant_tokens::{
    CreatedTenantToken, NewTenantToken, TENANT_TOKEN_PREFIX, TenantPrincipal, TenantRole,
    TenantToken, check_display_name, check_user_id,
};
pub use tenants::{Tenant, check_tenant_id};
pub use usage::{AgentUsage, AppUsage, TenantUsage, Usage, UsageRecord, UsageTotals};
pub use visions::{NewVisionPhase, Vision, VisionPhase, VisionStep};
pub use wires::{HeartbeatWake, NewWire, Wire, WireFilter};

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened or migrated.
    #[error("cannot open the database {target}: {source}")]
    Open {
        /// The file or URL (without password).
        target: String,
        /// The cause.
        source: sqlx::Error,
    },
    /// Applying the migrations failed.
    #[error("cannot migrate the database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A query failed.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The client's input breaks a rule (a 400 at the API): the message names the field and
    /// the rule.
    #[error("{0}")]
    Invalid(String),
    /// A stored row is not what the schema allows (an unknown status, a column that is not
    /// JSON): a fault of the host's data, never of the request (a 500 with an error id).
    #[error("a stored row is corrupt: {0}")]
    Corrupt(String),
    /// The host failed on its own side outside the database: a value that does not encode, the
    /// operating system's random source (a 500 with an error id).
    #[error("{0}")]
    Internal(String),
    /// The thing asked for does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The write contradicts what is stored (a name taken, an immutable value set otherwise).
    #[error("{0}")]
    Conflict(String),
    /// The caller may not change this (an app owned by another developer).
    #[error("{0}")]
    Forbidden(String),
}

/// The result of store operations.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

#[derive(Debug, Clone)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs the same query code on whichever pool is open: `$pool` is bound to the concrete pool
/// in each arm, so the code is type-checked against both drivers.
macro_rules! on_pool {
    (pool: $of:expr, $pool:ident => $body:expr) => {
        match &$of {
            $crate::Pool::Sqlite($pool) => $body,
            $crate::Pool::Postgres($pool) => $body,
        }
    };
    ($store:expr, $pool:ident => $body:expr) => {
        match &$store.pool {
            $crate::Pool::Sqlite($pool) => $body,
            $crate::Pool::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_pool;

/// Starts a transaction that writes. On SQLite it takes the write lock when it begins
/// (`BEGIN IMMEDIATE`): a deferred transaction that reads first and writes later cannot wait
/// for the lock another writer holds (SQLite answers `database is locked` at once rather than
/// risk a deadlock), whereas one that asks at `BEGIN` waits for it within the busy timeout.
/// PostgreSQL's row locks need nothing of the kind.
///
/// This is the only way the store begins a transaction (a test of this crate fails on any
/// other `begin`), and it is what makes every store write cancel-safe by construction: a
/// caller may be dropped at any of its await points (a deadline, a client that disconnects,
/// a shutdown), and the write then rolls back whole, or, once committing, ends committed.
///
/// - The `BEGIN` runs in a task of its own, so a cancelled caller never tears it: sqlx's
///   drivers leave a connection inside a transaction that nothing will end when the future
///   beginning it is dropped at the wrong moment (SQLite between an acknowledged
///   `BEGIN IMMEDIATE` and the `Transaction` that owns it; PostgreSQL while waiting for the
///   answer to `BEGIN`). Such a connection, back in the pool, holds SQLite's write lock for
///   ever, and every later write of the host fails. Dropping the task's handle leaves the task
///   to finish: the transaction it made is dropped with its output, which rolls it back.
/// - Once begun, a dropped [`sqlx::Transaction`] rolls back: the driver queues the `ROLLBACK`
///   ahead of anything else the connection does, and the pool flushes it before the
///   connection is reused.
/// - A connection that still comes back to the pool inside a transaction, whatever the cause,
///   is closed (which ends the transaction) and logged, never reused ([`released`]).
pub(crate) trait WriteTransaction {
    /// The driver.
    type Db: sqlx::Database;

    /// `BEGIN` for a transaction that will write.
    async fn begin_write(&self) -> Result<WriteTx<Self::Db>>;
}

impl WriteTransaction for SqlitePool {
    type Db = sqlx::Sqlite;

    async fn begin_write(&self) -> Result<WriteTx<sqlx::Sqlite>> {
        let pool = self.clone();
        uncancelled(async move {
            // The database's turn first, then a connection and the lock: writers wait here in
            // the order they came, none holding a connection, instead of each in SQLite's
            // busy handler on a connection of its own, where the lock goes to whichever polls
            // first and a writer can wait out the busy timeout behind a stream of newer ones.
            let gate = write_gate(pool.connect_options().get_filename());
            let turn = tokio::time::timeout(WRITE_TURN_TIMEOUT, gate.acquire_owned())
                .await
                .map_err(|_| {
                    StoreError::Internal(format!(
                        "no turn to write within {} s: another write of this host holds the database",
                        WRITE_TURN_TIMEOUT.as_secs()
                    ))
                })?
                .map_err(|e| StoreError::Internal(format!("the write gate closed: {e}")))?;
            let tx = pool.begin_with("BEGIN IMMEDIATE").await?;
            Ok(WriteTx {
                tx,
                _turn: Some(turn),
            })
        })
        .await
    }
}

impl WriteTransaction for PgPool {
    type Db = sqlx::Postgres;

    async fn begin_write(&self) -> Result<WriteTx<sqlx::Postgres>> {
        let pool = self.clone();
        uncancelled(async move {
            Ok(WriteTx {
                tx: pool.begin().await?,
                _turn: None,
            })
        })
        .await
    }
}

/// How long a write waits for its turn at the SQLite database (as long as SQLite's own busy
/// timeout would have let it wait for the lock).
const WRITE_TURN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The write gate of the SQLite database `file`: one turn, shared by every pool of this
/// process on that file, handed out first come, first served (tokio's semaphore is fair).
/// SQLite lets one writer in at a time anyway; the gate only decides the order.
fn write_gate(file: &Path) -> std::sync::Arc<tokio::sync::Semaphore> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock, Weak};
    static GATES: OnceLock<Mutex<HashMap<std::path::PathBuf, Weak<tokio::sync::Semaphore>>>> =
        OnceLock::new();
    let mut gates = GATES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(gate) = gates.get(file).and_then(Weak::upgrade) {
        return gate;
    }
    // The gates of databases nobody writes any more go as new ones come.
    gates.retain(|_, gate| gate.strong_count() > 0);
    let gate = Arc::new(tokio::sync::Semaphore::new(1));
    gates.insert(file.to_path_buf(), Arc::downgrade(&gate));
    gate
}

/// A transaction that writes ([`WriteTransaction::begin_write`]): the connection to run its
/// statements on (`&mut *tx`), until [`WriteTx::commit`] or [`WriteTx::rollback`]; dropped,
/// it rolls back. On SQLite it holds the database's write turn until it ends.
pub(crate) struct WriteTx<DB: sqlx::Database> {
    tx: sqlx::Transaction<'static, DB>,
    _turn: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl<DB: sqlx::Database> WriteTx<DB> {
    /// Commits; the turn is given back once the commit is done.
    pub(crate) async fn commit(self) -> std::result::Result<(), sqlx::Error> {
        self.tx.commit().await
    }

    /// Rolls back; the turn is given back once the rollback is done.
    pub(crate) async fn rollback(self) -> std::result::Result<(), sqlx::Error> {
        self.tx.rollback().await
    }
}

impl<DB: sqlx::Database> std::ops::Deref for WriteTx<DB> {
    type Target = DB::Connection;

    fn deref(&self) -> &DB::Connection {
        &self.tx
    }
}

impl<DB: sqlx::Database> std::ops::DerefMut for WriteTx<DB> {
    fn deref_mut(&mut self) -> &mut DB::Connection {
        &mut self.tx
    }
}

/// Runs `begin` to its end in a task of its own, whether or not the caller waits for it.
async fn uncancelled<T: Send + 'static>(
    begin: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    match tokio::spawn(begin).await {
        Ok(begun) => begun,
        Err(e) => Err(StoreError::Internal(format!(
            "beginning a transaction stopped: {e}"
        ))),
    }
}

/// The pool's check of a connection it takes back: `false` (close it) when the connection is
/// still inside a transaction. Closing a connection ends its transaction on both databases,
/// where keeping it would leave SQLite's write lock taken (every later write of the host
/// failing with `database is locked`) or PostgreSQL's row locks held.
fn released<C: sqlx::Connection>(conn: &C) -> bool {
    if conn.is_in_transaction() {
        tracing::error!(
            "a database connection came back to the pool inside a transaction: closing it, \
             which rolls the transaction back"
        );
        return false;
    }
    true
}

/// [`released`] for SQLite, whose connections run their statements in a worker thread: a
/// dropped transaction's `ROLLBACK` is queued there, and the ping, which goes after it, makes
/// the depth read next the one the rollback left. PostgreSQL's depth changes when the
/// `ROLLBACK` is queued, so it needs no ping.
async fn sqlite_released(conn: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
    sqlx::Connection::ping(conn).await?;
    Ok(released(conn))
}

/// The database.
#[derive(Debug, Clone)]
pub struct Store {
    pub(crate) pool: Pool,
    /// One connection of its own for the change feed's poller: under load every connection of
    /// `pool` may be taken, and a poll that waits behind the requests makes every cache stale,
    /// which sends every request to the database (docs/platform.md, "What a host remembers").
    pub(crate) feed_pool: Pool,
    /// The caches over this store, and how the change feed's polls went.
    pub(crate) feed: std::sync::Arc<changes::Feed>,
}

impl Store {
    /// Opens (creating if needed) the SQLite database `atrium.db` in `data_dir`.
    pub async fn open_sqlite(data_dir: &Path) -> Result<Store> {
        let target = data_dir.join("atrium.db");
        let open_error = |source| StoreError::Open {
            target: target.display().to_string(),
            source,
        };
        std::fs::create_dir_all(data_dir).map_err(|e| open_error(sqlx::Error::Io(e)))?;
        let options = SqliteConnectOptions::new().filename(&target);
        Self::open_sqlite_with(options).await.map_err(|e| match e {
            StoreError::Database(source) => open_error(source),
            other => other,
        })
    }

    /// The SQLite settings every store uses: WAL, foreign keys, a busy timeout.
    async fn open_sqlite_with(options: SqliteConnectOptions) -> Result<Store> {
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(std::time::Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .after_release(|conn, _| Box::pin(sqlite_released(conn)))
            .connect_with(options.clone())
            .await?;
        let store = Self::migrated(Pool::Sqlite(pool)).await?;
        // Connected at the first poll: a store that never polls (a command) opens nothing more.
        let feed_pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_lazy_with(options);
        Ok(Store {
            feed_pool: Pool::Sqlite(feed_pool),
            ..store
        })
    }

    /// Opens a database by URL: `postgres://...` or `sqlite://path`.
    pub async fn open_url(url: &str) -> Result<Store> {
        let shown = redact(url);
        let open_error = |source| StoreError::Open {
            target: shown.clone(),
            source,
        };
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let pool = PgPoolOptions::new()
                .max_connections(16)
                .acquire_timeout(std::time::Duration::from_secs(10))
                .after_release(|conn, _| Box::pin(std::future::ready(Ok(released(conn)))))
                .connect(url)
                .await
                .map_err(&open_error)?;
            let store = Self::migrated(Pool::Postgres(pool)).await?;
            let feed_pool = PgPoolOptions::new()
                .max_connections(1)
                .acquire_timeout(std::time::Duration::from_secs(10))
                .connect_lazy(url)
                .map_err(open_error)?;
            return Ok(Store {
                feed_pool: Pool::Postgres(feed_pool),
                ..store
            });
        }
        if url.starts_with("sqlite:") {
            let options = SqliteConnectOptions::from_str(url).map_err(&open_error)?;
            return Self::open_sqlite_with(options).await.map_err(|e| match e {
                StoreError::Database(source) => open_error(source),
                other => other,
            });
        }
        Err(StoreError::Invalid(format!(
            "unsupported database URL `{shown}`: use postgres://... or sqlite://..."
        )))
    }

    async fn migrated(pool: Pool) -> Result<Store> {
        match &pool {
            Pool::Sqlite(p) => MIGRATOR.run(p).await?,
            Pool::Postgres(p) => MIGRATOR.run(p).await?,
        }
        Ok(Store {
            feed_pool: pool.clone(),
            pool,
            feed: std::sync::Arc::default(),
        })
    }

    /// Which database this is: `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self.pool {
            Pool::Sqlite(_) => "sqlite",
            Pool::Postgres(_) => "postgres",
        }
    }

    /// Whether the store takes a write now: a write transaction begun (on SQLite, with the
    /// write lock taken) and committed empty. A host's readiness asks it, with a deadline of
    /// its own: a store whose lock some connection keeps answers late or not at all.
    pub async fn probe_write(&self) -> Result<()> {
        on_pool!(self, pool => {
            let tx = WriteTransaction::begin_write(pool).await?;
            tx.commit().await?;
            Ok(())
        })
    }

    /// Closes the pool, waiting for connections to be returned.
    pub async fn close(&self) {
        on_pool!(self, pool => pool.close().await);
        on_pool!(pool: self.feed_pool, pool => pool.close().await);
    }
}

/// The URL with any password replaced, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

/// A time a column keeps in ms since the epoch.
pub(crate) fn millis(ms: i64) -> Result<jiff::Timestamp> {
    jiff::Timestamp::from_millisecond(ms)
        .map_err(|e| StoreError::Corrupt(format!("a stored time ({ms} ms) is out of range: {e}")))
}

/// A time a column may keep in ms since the epoch.
pub(crate) fn opt_millis(ms: Option<i64>) -> Result<Option<jiff::Timestamp>> {
    ms.map(millis).transpose()
}

/// A time a column keeps in µs since the epoch (a room's messages).
pub(crate) fn micros(us: i64) -> Result<jiff::Timestamp> {
    jiff::Timestamp::from_microsecond(us)
        .map_err(|e| StoreError::Corrupt(format!("a stored time ({us} µs) is out of range: {e}")))
}

/// Milliseconds since the Unix epoch, the unit most columns keep.
pub(crate) fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `bytes` random bytes from the operating system, as lower-case hex.
pub(crate) fn random_hex(bytes: usize) -> Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| {
        StoreError::Internal(format!("the operating system's random source failed: {e}"))
    })?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    /// Every transaction begins through [`super::WriteTransaction::begin_write`], whose start
    /// cannot be torn by a cancelled caller: no other module of the store begins one.
    #[test]
    fn no_transaction_begins_but_through_begin_write() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                let begins = [".begin()", "begin_with(", "Transaction::begin(", "\"BEGIN"]
                    .iter()
                    .any(|b| line.contains(b));
                if begins {
                    found.push(format!(
                        "{}:{}",
                        path.file_name().unwrap().to_string_lossy(),
                        n + 1
                    ));
                }
            }
        }
        // The two drivers' `begin_write` (and this test's own list of what to look for).
        assert!(
            found.len() == 3 && found.iter().all(|f| f.starts_with("lib.rs:")),
            "transactions begun elsewhere: {found:?}"
        );
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            super::redact("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(super::redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(super::redact("sqlite://x.db"), "sqlite://x.db");
    }
}

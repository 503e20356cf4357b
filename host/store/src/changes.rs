//! The change feed, and the caches it keeps honest.
//!
//! A host answers most calls from memory: who a credential is, which install a tenant has of
//! an app. What it remembers must not outlive a change made anywhere else: by another host on
//! the same PostgreSQL, or by a command (`atrium keys revoke`, `atrium tenants tokens revoke`)
//! on the same SQLite file. So every write that changes something a host may hold records a
//! [`Change`] in the `changes` table, in the write's own transaction, numbered by the
//! `change_head` row it updates (which also orders concurrent writers by commit). Each host
//! polls the changes past the last it applied every [`POLL_INTERVAL`] and tells its caches;
//! changes made through the same [`Store`] are told at once, after their commit.
//!
//! A [`Cache`] answers only while its store's polls succeed: when the last successful poll is
//! older than [`STALE_AFTER`] (the database unreachable, the poller stopped, or never
//! started) every lookup goes to the database, and the first poll that succeeds again drops
//! everything cached. Entries also expire after a few minutes, and a cache starts over when
//! full. A value read from the database is remembered only when no change reached the cache
//! while it was being read ([`Cache::epoch`], [`Cache::fill`]), so a read that raced a write
//! cannot put the old value back.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use atrium_jobs::{Job, JobError, Stop};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::{Result, Store, now_millis, on_pool};

/// How often a host reads the changes made elsewhere: the longest another host or a command
/// can change something before this host's caches know.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// Caches answer only while the last successful poll is at most this old.
pub const STALE_AFTER: Duration = Duration::from_secs(1);
/// How long a recorded change is kept for pollers that fell behind (a poller further behind
/// than this drops everything it cached).
const KEEP_CHANGES: Duration = Duration::from_secs(600);
/// The most changes read in one poll.
const POLL_BATCH: i64 = 1_000;

/// Something a write changed that a host may hold in memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// A tenant's install of an app: its row (status, version, scopes, settings) or its sealed
    /// values.
    Install {
        /// The organization.
        org_id: String,
        /// The tenant.
        tenant_id: String,
        /// The app.
        app_slug: String,
    },
    /// A user of a tenant (their display name), as every token of theirs presents them.
    TenantUser {
        /// The organization.
        org_id: String,
        /// The tenant.
        tenant_id: String,
        /// The user.
        user_id: String,
    },
    /// A tenant token (revoked).
    TenantToken {
        /// The token's id.
        token_id: String,
    },
    /// An organization key (revoked).
    Key {
        /// The key's id.
        key_id: String,
    },
}

impl Change {
    /// The change to an install.
    pub(crate) fn install(install: &crate::InstallKey) -> Change {
        Change::Install {
            org_id: install.org_id.clone(),
            tenant_id: install.tenant_id.clone(),
            app_slug: install.app_slug.clone(),
        }
    }

    pub(crate) fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Tells a cache about a change, or (`None`) that it must drop everything.
type Subscriber = Box<dyn Fn(Option<&Change>) + Send + Sync>;

/// A store's side of the feed: its caches, and how its polls went.
pub(crate) struct Feed {
    subscribers: RwLock<Vec<Subscriber>>,
    /// The last change applied, `None` before the first poll; polls take turns.
    applied: tokio::sync::Mutex<Option<i64>>,
    /// When the feed was made: instants below are milliseconds after it.
    born: Instant,
    /// Milliseconds after `born` of the last successful poll, plus one; 0 for never.
    polled: AtomicU64,
}

impl Default for Feed {
    fn default() -> Self {
        Feed {
            subscribers: RwLock::default(),
            applied: tokio::sync::Mutex::new(None),
            born: Instant::now(),
            polled: AtomicU64::new(0),
        }
    }
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Feed")
            .field("fresh", &self.fresh())
            .finish_non_exhaustive()
    }
}

impl Feed {
    fn since_born(&self) -> u64 {
        u64::try_from(self.born.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether the last successful poll is recent enough for caches to answer.
    fn fresh(&self) -> bool {
        match self.polled.load(Ordering::Acquire) {
            0 => false,
            polled => self.since_born().saturating_sub(polled - 1) < millis(STALE_AFTER),
        }
    }

    /// Tells every cache about `changes` (or, with `None`, to drop everything).
    fn publish(&self, changes: Option<&[Change]>) {
        let subscribers = self
            .subscribers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for subscriber in subscribers.iter() {
            match changes {
                Some(changes) => changes.iter().for_each(|c| subscriber(Some(c))),
                None => subscriber(None),
            }
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Records `$changes` (a `&[Change]`) in the open write transaction `$tx`: takes their numbers
/// from `change_head` (whose row stays locked until the commit) and inserts them. Call it last
/// in the transaction, to hold that lock briefly; after the commit, tell this host's caches
/// with [`Store::changed`].
macro_rules! record_changes {
    ($tx:expr, $changes:expr) => {{
        let changes: &[$crate::changes::Change] = $changes;
        let count = i64::try_from(changes.len()).unwrap_or(i64::MAX);
        let head: i64 =
            sqlx::query_scalar("UPDATE change_head SET seq = seq + $1 WHERE id = 1 RETURNING seq")
                .bind(count)
                .fetch_one(&mut *$tx)
                .await?;
        let at = $crate::now_millis();
        for (seq, change) in (head - count + 1..).zip(changes) {
            sqlx::query("INSERT INTO changes (seq, change, at) VALUES ($1, $2, $3)")
                .bind(seq)
                .bind(change.encode())
                .bind(at)
                .execute(&mut *$tx)
                .await?;
        }
    }};
}
pub(crate) use record_changes;

impl Store {
    /// Tells this store's caches about changes just committed through it.
    pub(crate) fn changed(&self, changes: &[Change]) {
        self.feed.publish(Some(changes));
    }

    /// Whether this store's caches may answer: a poll succeeded less than [`STALE_AFTER`]
    /// ago.
    pub fn changes_fresh(&self) -> bool {
        self.feed.fresh()
    }

    /// Reads the changes made since the last poll (by anyone: this host, another host, a
    /// command) and tells this store's caches; returns how many there were. The first poll
    /// only learns where the feed stands. A poll after the feed went stale, or one that finds
    /// changes already pruned, has the caches drop everything instead.
    pub async fn poll_changes(&self) -> Result<usize> {
        let mut applied = self.feed.applied.lock().await;
        let stale = !self.feed.fresh();
        let started = self.feed.since_born();
        let Some(last) = *applied else {
            let head: i64 = on_pool!(pool: self.feed_pool, pool => {
                sqlx::query_scalar("SELECT seq FROM change_head WHERE id = 1").fetch_one(pool).await?
            });
            *applied = Some(head);
            self.feed.publish(None);
            self.feed.polled.store(started + 1, Ordering::Release);
            return Ok(0);
        };
        // The head first: every change numbered up to it is committed (a change's row and its
        // number are written in one transaction), so the rows up to it must all be there.
        let head: i64 = on_pool!(pool: self.feed_pool, pool => {
            sqlx::query_scalar("SELECT seq FROM change_head WHERE id = 1").fetch_one(pool).await?
        });
        let mut last = last;
        let mut read = 0;
        let mut gap = false;
        while !stale && last < head && !gap {
            let rows: Vec<(i64, String)> = on_pool!(pool: self.feed_pool, pool => {
                sqlx::query(
                    "SELECT seq, change FROM changes WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3",
                )
                .bind(last)
                .bind(head)
                .bind(POLL_BATCH)
                .fetch_all(pool)
                .await?
                .iter()
                .map(|r| Ok((r.try_get("seq")?, r.try_get("change")?)))
                .collect::<Result<_, sqlx::Error>>()?
            });
            // Numbers are contiguous; a missing one was pruned before this host read it.
            gap = rows.is_empty()
                || rows
                    .iter()
                    .zip(last + 1..)
                    .any(|((seq, _), expected)| *seq != expected);
            if !(stale || gap) {
                let changes: Vec<Change> = rows
                    .iter()
                    .filter_map(|(seq, text)| match serde_json::from_str(text) {
                        Ok(change) => Some(change),
                        Err(e) => {
                            // A change this build does not know (a newer host wrote it)
                            // concerns nothing this host caches.
                            tracing::debug!(seq, error = %e, "a change of an unknown kind was skipped");
                            None
                        }
                    })
                    .collect();
                self.feed.publish(Some(&changes));
            }
            read += rows.len();
            last = rows.last().map_or(head, |(seq, _)| *seq);
        }
        if stale || gap {
            self.feed.publish(None);
            last = head;
        }
        *applied = Some(last);
        // Freshness counts from when the poll began: what it read was committed by then.
        self.feed.polled.store(started + 1, Ordering::Release);
        Ok(read)
    }

    /// Deletes changes older than every poller needs; returns how many.
    pub async fn prune_changes(&self) -> Result<u64> {
        let before = now_millis() - i64::try_from(KEEP_CHANGES.as_millis()).unwrap_or(0);
        Ok(on_pool!(self, pool => {
            sqlx::query("DELETE FROM changes WHERE at < $1")
                .bind(before)
                .execute(pool)
                .await?
                .rows_affected()
        }))
    }

    /// Polls the change feed every [`POLL_INTERVAL`] until the task is dropped or aborted,
    /// pruning old changes every few minutes. A host runs one while it serves; while none
    /// runs, this store's caches do not answer.
    pub async fn watch_changes(self) {
        let mut ticks = tokio::time::interval(POLL_INTERVAL);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let prune_every = KEEP_CHANGES.as_millis() / POLL_INTERVAL.as_millis() / 4;
        let mut failing = false;
        for tick in 0u128.. {
            ticks.tick().await;
            match self.poll_changes().await {
                Ok(_) if failing => {
                    failing = false;
                    tracing::info!("the change feed is read again");
                }
                Ok(_) => {}
                Err(e) if !failing => {
                    failing = true;
                    tracing::warn!(error = %e, "cannot read the change feed: caches are bypassed until it can");
                }
                Err(_) => {}
            }
            if tick % prune_every == prune_every - 1
                && let Err(e) = self.prune_changes().await
            {
                tracing::warn!(error = %e, "cannot prune the change feed");
            }
        }
    }
}

/// The change feed's poller on a thread and Tokio runtime of its own
/// ([`Store::watch_changes_apart`]); dropping it stops the poller.
#[derive(Debug)]
pub struct ChangeWatcher {
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Store {
    /// Polls the change feed as [`Store::watch_changes`] does, on a thread and runtime of its
    /// own, until the returned watcher is dropped. A host's runtime under load has thousands of
    /// tasks ready; a poll that queued behind them on every step would be late by a second,
    /// which turns every cache off and sends every request to the database, the load that made
    /// the poll late. Apart, a poll waits only for the database and for the kernel to give its
    /// thread a core.
    pub fn watch_changes_apart(self) -> std::io::Result<ChangeWatcher> {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name("atrium-changes".into())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        () = self.watch_changes() => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(ChangeWatcher { _stop: stop })
    }
}

/// The change feed's poller as a [`Job`] named `changes`: it polls apart
/// ([`Store::watch_changes_apart`]) until the stop. Started first and stopped last, so that
/// every other job reads the caches while the feed keeps them honest.
pub struct ChangeFeed(pub Store);

#[async_trait::async_trait]
impl Job for ChangeFeed {
    fn name(&self) -> &'static str {
        "changes"
    }

    async fn run(self: Box<Self>, mut stop: Stop) -> Result<(), JobError> {
        let watcher = self
            .0
            .watch_changes_apart()
            .map_err(|e| JobError::new(format!("cannot start the change feed's thread: {e}")))?;
        stop.requested().await;
        drop(watcher);
        Ok(())
    }
}

/// What a change means to one cache.
pub enum Affected<K, V> {
    /// Nothing it holds.
    Nothing,
    /// The entry under this key.
    Key(K),
    /// Every entry whose value matches.
    Matching(Box<dyn Fn(&V) -> bool>),
}

/// How long an entry is used at most, whatever the feed says.
const MAX_AGE: Duration = Duration::from_secs(300);

struct Entries<K, V> {
    map: HashMap<K, (Instant, V)>,
    /// Counts the changes that reached this cache.
    epoch: u64,
}

/// Values read from the store, kept until a [`Change`] affects them (see the module docs).
pub struct Cache<K, V> {
    entries: Arc<Mutex<Entries<K, V>>>,
    feed: Arc<Feed>,
    capacity: usize,
}

impl<K, V> Clone for Cache<K, V> {
    fn clone(&self) -> Self {
        Cache {
            entries: self.entries.clone(),
            feed: self.feed.clone(),
            capacity: self.capacity,
        }
    }
}

impl<K, V> std::fmt::Debug for Cache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("capacity", &self.capacity)
            .finish_non_exhaustive()
    }
}

impl<K, V> Cache<K, V>
where
    K: Eq + Hash + Send + 'static,
    V: Clone + Send + 'static,
{
    /// A cache of `store`'s values, at most `capacity` of them (it starts over when full);
    /// `affected` says which entries a change concerns.
    pub fn new(
        store: &Store,
        capacity: usize,
        affected: impl Fn(&Change) -> Affected<K, V> + Send + Sync + 'static,
    ) -> Self {
        let entries = Arc::new(Mutex::new(Entries {
            map: HashMap::new(),
            epoch: 0,
        }));
        let held = entries.clone();
        store
            .feed
            .subscribers
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Box::new(move |change| {
                let mut entries = held.lock().unwrap_or_else(PoisonError::into_inner);
                entries.epoch += 1;
                match change.map(&affected) {
                    None => entries.map.clear(),
                    Some(Affected::Nothing) => {}
                    Some(Affected::Key(key)) => {
                        entries.map.remove(&key);
                    }
                    Some(Affected::Matching(matches)) => {
                        entries.map.retain(|_, (_, value)| !matches(value));
                    }
                }
            }));
        Cache {
            entries,
            feed: store.feed.clone(),
            capacity,
        }
    }

    fn entries(&self) -> MutexGuard<'_, Entries<K, V>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value under `key`, if one is held and the feed is fresh.
    pub fn get(&self, key: &K) -> Option<V> {
        if !self.feed.fresh() {
            return None;
        }
        let entries = self.entries();
        let (at, value) = entries.map.get(key)?;
        (at.elapsed() < MAX_AGE).then(|| value.clone())
    }

    /// Where the cache stands: take it before reading a value from the store, and give it to
    /// [`Cache::fill`].
    pub fn epoch(&self) -> u64 {
        self.entries().epoch
    }

    /// Remembers `value`, read from the store after [`Cache::epoch`] answered `epoch`, unless
    /// a change reached the cache since (the value may predate it).
    pub fn fill(&self, key: K, value: V, epoch: u64) {
        let mut entries = self.entries();
        if entries.epoch != epoch {
            return;
        }
        if entries.map.len() >= self.capacity {
            entries.map.clear();
        }
        entries.map.insert(key, (Instant::now(), value));
    }

    /// Forgets every entry whose value matches (a change this process made and has already
    /// told the store about needs no call; this is for callers that know more).
    pub fn forget(&self, matches: impl Fn(&V) -> bool) {
        let mut entries = self.entries();
        entries.epoch += 1;
        entries.map.retain(|_, (_, value)| !matches(value));
    }

    /// How many entries are held.
    pub fn len(&self) -> usize {
        self.entries().map.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache of key ids, dropped by any key change.
    fn keys(store: &Store) -> Cache<String, String> {
        Cache::new(store, 10, |change| match change {
            Change::Key { key_id } => Affected::Key(key_id.clone()),
            _ => Affected::Nothing,
        })
    }

    #[tokio::test]
    async fn the_poller_has_a_connection_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(dir.path()).await.unwrap();
        let crate::Pool::Sqlite(pool) = &store.pool else {
            unreachable!()
        };
        // Every connection of the store's pool taken, as under load.
        let mut held = Vec::new();
        for _ in 0..pool.options().get_max_connections() {
            held.push(pool.acquire().await.unwrap());
        }
        tokio::time::timeout(Duration::from_secs(5), store.poll_changes())
            .await
            .expect("the poll waited for the busy pool")
            .unwrap();
        assert!(store.changes_fresh());
        drop(held);
    }

    async fn delete_change(store: &Store, seq: i64) {
        on_pool!(store, pool => {
            sqlx::query("DELETE FROM changes WHERE seq = $1").bind(seq).execute(pool).await.unwrap();
        });
    }

    async fn head(store: &Store) -> i64 {
        on_pool!(store, pool => {
            sqlx::query_scalar("SELECT seq FROM change_head WHERE id = 1").fetch_one(pool).await.unwrap()
        })
    }

    /// Changes pruned before a host read them, in the middle of what it reads or at its end,
    /// make it forget everything rather than miss an invalidation.
    #[tokio::test]
    async fn a_pruned_change_drops_everything() {
        let dir = tempfile::tempdir().unwrap();
        let one = Store::open_sqlite(dir.path()).await.unwrap();
        let two = Store::open_sqlite(dir.path()).await.unwrap();
        let cache = keys(&one);
        one.poll_changes().await.unwrap();
        let a = two.create_key("gap-org", "a").await.unwrap();
        let b = two.create_key("gap-org", "b").await.unwrap();

        // In the middle: of two revocations, the first was pruned.
        cache.fill("unrelated".into(), "x".into(), cache.epoch());
        two.revoke_key(&a.id).await.unwrap();
        two.revoke_key(&b.id).await.unwrap();
        delete_change(&one, head(&one).await - 1).await;
        one.poll_changes().await.unwrap();
        assert!(cache.is_empty(), "a gap in the middle drops everything");

        // At the end: the only change after the last one read was pruned.
        cache.fill("unrelated".into(), "x".into(), cache.epoch());
        let c = two.create_key("gap-org", "c").await.unwrap();
        two.revoke_key(&c.id).await.unwrap();
        delete_change(&one, head(&one).await).await;
        assert_eq!(one.poll_changes().await.unwrap(), 0);
        assert!(cache.is_empty(), "a gap at the end drops everything");

        // Contiguous changes drop only what they concern.
        cache.fill("unrelated".into(), "x".into(), cache.epoch());
        cache.fill(c.id.clone(), "c".into(), cache.epoch());
        let d = two.create_key("gap-org", "d").await.unwrap();
        two.revoke_key(&d.id).await.unwrap();
        two.revoke_key(&c.id).await.unwrap();
        one.poll_changes().await.unwrap();
        assert_eq!(cache.get(&"unrelated".into()), Some("x".into()));
        assert_eq!(cache.get(&c.id), None);
    }
}

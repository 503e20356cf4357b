//! The host's memory of authenticated credentials (organization keys, tenant tokens), so that
//! a request with a known credential costs no database read.
//!
//! Only credentials found valid are remembered, and only until the change feed says they
//! changed (`atrium_store::Cache`): a key or token revoked through this host stops working
//! here at once; one revoked by another host or a command (`atrium keys revoke`, `atrium
//! tenants tokens revoke`) stops working here at this host's next poll of the feed, within
//! [`atrium_store::POLL_INTERVAL`]. Unknown credentials are never remembered. Entries are
//! keyed by the SHA-256 digest of the secret, not the secret itself.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use atrium_store::{Affected, Cache, Change, KeyOwner, Store, TenantPrincipal};
use sha2::{Digest, Sha256};

/// The most credentials of one kind remembered; the cache starts over when full.
const CAPACITY: usize = 100_000;

/// The cache of one kind of credential: what a secret authenticated as (`T`).
pub struct AuthCache<T> {
    cache: Cache<[u8; 32], T>,
    /// The database reads under way, one per credential: requests that miss together share
    /// one read instead of each taking a connection (see [`AuthCache::authenticate`]).
    reads: Reads<T>,
}

/// Organization keys and their owners.
pub type KeyCache = AuthCache<KeyOwner>;
/// Tenant tokens and the principals they speak for.
pub type TenantTokenCache = AuthCache<TenantPrincipal>;

fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl KeyCache {
    /// The keys of `store`, dropped when revoked.
    pub fn keys(store: &Store) -> Self {
        AuthCache {
            cache: Cache::new(store, CAPACITY, |change| match change {
                Change::Key { key_id } => {
                    let key_id = key_id.clone();
                    Affected::Matching(Box::new(move |owner: &KeyOwner| owner.key_id == key_id))
                }
                _ => Affected::Nothing,
            }),
            reads: Mutex::default(),
        }
    }
}

impl TenantTokenCache {
    /// The tenant tokens of `store`, dropped when revoked or when their user changes.
    pub fn tenant_tokens(store: &Store) -> Self {
        AuthCache {
            cache: Cache::new(store, CAPACITY, |change| match change.clone() {
                Change::TenantToken { token_id } => {
                    Affected::Matching(Box::new(move |p: &TenantPrincipal| p.token_id == token_id))
                }
                Change::TenantUser {
                    org_id,
                    tenant_id,
                    user_id,
                } => Affected::Matching(Box::new(move |p: &TenantPrincipal| {
                    p.user_id == user_id && p.tenant_id == tenant_id && p.org_id == org_id
                })),
                _ => Affected::Nothing,
            }),
            reads: Mutex::default(),
        }
    }
}

/// The reads under way of one cache, by credential digest.
type Reads<T> = Mutex<HashMap<[u8; 32], Arc<tokio::sync::OnceCell<Option<T>>>>>;

/// Takes a read out of the reads under way when a request that joined it leaves.
struct Leaving<'a, T> {
    reads: &'a Reads<T>,
    key: [u8; 32],
    read: Arc<tokio::sync::OnceCell<Option<T>>>,
}

impl<T> Drop for Leaving<'_, T> {
    fn drop(&mut self) {
        let mut reads = self.reads.lock().unwrap_or_else(PoisonError::into_inner);
        if reads
            .get(&self.key)
            .is_some_and(|r| Arc::ptr_eq(r, &self.read))
        {
            reads.remove(&self.key);
        }
    }
}

impl<T: Clone + Send + 'static> AuthCache<T> {
    /// What `secret` authenticated as, if that is remembered and still true.
    pub fn get(&self, secret: &str) -> Option<T> {
        self.cache.get(&digest(secret))
    }

    /// Authenticates `secret` from memory, or with `check` (a database read) and remembers a
    /// success.
    ///
    /// Requests with the same credential that miss while a read of it is under way wait for
    /// that read and share its answer, instead of each reading: after a restart, or while the
    /// change feed is late and the memory is not used, a busy credential would otherwise send
    /// every one of its requests to the database at once, and the queue for a connection would
    /// grow until clients gave up. A shared answer is at most one read older than the request;
    /// if the read fails, the next waiter reads for itself.
    pub async fn authenticate<E, F>(&self, secret: &str, check: F) -> Result<Option<T>, E>
    where
        F: Future<Output = Result<Option<T>, E>>,
    {
        let key = digest(secret);
        if let Some(value) = self.cache.get(&key) {
            return Ok(Some(value));
        }
        let read = self
            .reads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        // Whatever happens to this request (answered, failed, or dropped by its client), the
        // read is no longer offered to newcomers once it leaves.
        let _leaving = Leaving {
            reads: &self.reads,
            key,
            read: read.clone(),
        };
        // Taken before the read: only the request that reads fills the memory, and only if no
        // change arrived meanwhile.
        let epoch = self.cache.epoch();
        let mut reader = false;
        let found = read
            .get_or_try_init(|| {
                reader = true;
                check
            })
            .await
            .cloned();
        let found = found?;
        if let Some(value) = &found
            && reader
        {
            self.cache.fill(key, value.clone(), epoch);
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn requests_that_miss_together_share_one_read_and_a_failed_read_is_not_shared() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(dir.path()).await.unwrap();
        // No poll of the change feed runs: the memory never answers, as when the feed is late.
        let keys = KeyCache::keys(&store);
        let reads = AtomicUsize::new(0);
        let owner = KeyOwner {
            key_id: "k1".into(),
            org_id: "acme".into(),
        };
        let read = || async {
            reads.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok::<_, String>(Some(owner.clone()))
        };
        let answers =
            futures::future::join_all((0..50).map(|_| keys.authenticate("secret", read()))).await;
        assert!(
            answers
                .iter()
                .all(|a| a.as_ref().unwrap().as_ref() == Some(&owner))
        );
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        // Another credential reads for itself; a request after the read finished reads again.
        keys.authenticate("other", read()).await.unwrap();
        keys.authenticate("secret", read()).await.unwrap();
        assert_eq!(reads.load(Ordering::SeqCst), 3);
        assert!(keys.reads.lock().unwrap().is_empty());

        // A read that fails fails its own request; the others waiting on it read for themselves.
        let failures = AtomicUsize::new(0);
        let failing = || async {
            if failures.fetch_add(1, Ordering::SeqCst) == 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
                return Err("the database is down".to_owned());
            }
            Ok(Some(owner.clone()))
        };
        let answers =
            futures::future::join_all((0..5).map(|_| keys.authenticate("secret", failing()))).await;
        assert_eq!(answers[0], Err("the database is down".to_owned()));
        assert!(answers[1..].iter().all(|a| a.as_ref().unwrap().is_some()));
        assert_eq!(failures.load(Ordering::SeqCst), 2);

        // A request dropped while it reads leaves nothing behind.
        let slow = keys.authenticate("dropped", read());
        assert!(
            tokio::time::timeout(Duration::from_millis(5), slow)
                .await
                .is_err()
        );
        assert!(keys.reads.lock().unwrap().is_empty());
    }
}

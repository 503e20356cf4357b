//! The host's memory of authenticated credentials (organization keys, tenant tokens), so that
//! a request with a known credential costs no database read.
//!
//! Only credentials found valid are remembered, and only until the change feed says they
//! changed (`atrium_store::Cache`): a key or token revoked through this host stops working
//! here at once; one revoked by another host or a command (`atrium keys revoke`, `atrium
//! tenants tokens revoke`) stops working here at this host's next poll of the feed, within
//! [`atrium_store::POLL_INTERVAL`]. Unknown credentials are never remembered. Entries are
//! keyed by the SHA-256 digest of the secret, not the secret itself.

use atrium_store::{Affected, Cache, Change, KeyOwner, Store, TenantPrincipal};
use sha2::{Digest, Sha256};

/// The most credentials of one kind remembered; the cache starts over when full.
const CAPACITY: usize = 100_000;

/// The cache of one kind of credential: what a secret authenticated as (`T`).
pub struct AuthCache<T> {
    cache: Cache<[u8; 32], T>,
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
    pub async fn authenticate<E, F>(&self, secret: &str, check: F) -> Result<Option<T>, E>
    where
        F: Future<Output = Result<Option<T>, E>>,
    {
        let key = digest(secret);
        if let Some(value) = self.cache.get(&key) {
            return Ok(Some(value));
        }
        let epoch = self.cache.epoch();
        let found = check.await?;
        if let Some(value) = &found {
            self.cache.fill(key, value.clone(), epoch);
        }
        Ok(found)
    }
}

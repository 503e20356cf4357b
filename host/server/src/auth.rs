//! A short-lived cache of authenticated credentials (organization keys, tenant tokens), so
//! that a burst of requests with one credential costs one database read a second instead of
//! one per request.
//!
//! Only credentials found valid are cached, for at most [`TTL`]: a key or token revoked by
//! another process (`atrium keys revoke`, another host) stops working within that time.
//! Unknown credentials are never cached. Entries are keyed by the SHA-256 digest of the
//! secret, not the secret itself.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use atrium_store::{KeyOwner, TenantPrincipal};
use sha2::{Digest, Sha256};

/// How long a successful authentication is reused.
pub const TTL: Duration = Duration::from_secs(1);
/// The most credentials remembered; the cache starts over when full.
const CAPACITY: usize = 10_000;

/// The cache of one kind of credential: what a secret authenticated as (`T`), and when.
pub struct AuthCache<T> {
    entries: Mutex<HashMap<[u8; 32], (Instant, T)>>,
}

/// Organization keys and their owners.
pub type KeyCache = AuthCache<KeyOwner>;
/// Tenant tokens and the principals they speak for.
pub type TenantTokenCache = AuthCache<TenantPrincipal>;

impl<T> Default for AuthCache<T> {
    fn default() -> Self {
        AuthCache {
            entries: Mutex::new(HashMap::new()),
        }
    }
}

fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl<T: Clone> AuthCache<T> {
    fn entries(&self) -> MutexGuard<'_, HashMap<[u8; 32], (Instant, T)>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What `secret` authenticated as, if that was less than [`TTL`] ago.
    pub fn get(&self, secret: &str) -> Option<T> {
        let entries = self.entries();
        let (at, value) = entries.get(&digest(secret))?;
        (at.elapsed() < TTL).then(|| value.clone())
    }

    /// Remembers a successful authentication.
    pub fn put(&self, secret: &str, value: T) {
        let mut entries = self.entries();
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(digest(secret), (Instant::now(), value));
    }

    /// Forgets every entry `revoked` matches: a credential revoked through this host stops
    /// working here at once (other hosts stop within [`TTL`]).
    pub fn forget(&self, revoked: impl Fn(&T) -> bool) {
        self.entries().retain(|_, (_, value)| !revoked(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire() {
        let cache = KeyCache::default();
        let owner = KeyOwner {
            key_id: "key_1".into(),
            org_id: "org_1".into(),
        };
        assert_eq!(cache.get("atr_x"), None);
        cache.put("atr_x", owner.clone());
        assert_eq!(cache.get("atr_x"), Some(owner.clone()));
        assert_eq!(cache.get("atr_y"), None);
        // An entry older than the TTL is not used.
        cache
            .entries
            .lock()
            .unwrap()
            .insert(digest("atr_old"), (Instant::now() - TTL, owner));
        assert_eq!(cache.get("atr_old"), None);
    }

    #[test]
    fn forgotten_entries_are_looked_up_again() {
        let cache = AuthCache::<(&str, &str)>::default();
        cache.put("att_a", ("ttk_a", "shop"));
        cache.put("att_b", ("ttk_b", "shop"));
        cache.forget(|(id, _)| *id == "ttk_a");
        assert_eq!(cache.get("att_a"), None);
        assert_eq!(cache.get("att_b"), Some(("ttk_b", "shop")));
    }
}

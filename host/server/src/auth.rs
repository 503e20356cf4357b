//! A short-lived cache of authenticated keys, so that a burst of requests with one key costs one
//! database read a second instead of one per request.
//!
//! Only keys found valid are cached, for at most [`TTL`]: a key revoked with `atrium keys
//! revoke` (another process) stops working within that time. Unknown keys are never cached.
//! Entries are keyed by the SHA-256 digest of the secret, not the secret itself.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use atrium_store::KeyOwner;
use sha2::{Digest, Sha256};

/// How long a successful authentication is reused.
pub const TTL: Duration = Duration::from_secs(1);
/// The most keys remembered; the cache starts over when full.
const CAPACITY: usize = 10_000;

/// The cache.
#[derive(Default)]
pub struct KeyCache {
    entries: Mutex<HashMap<[u8; 32], (Instant, KeyOwner)>>,
}

fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

impl KeyCache {
    /// The owner of `secret`, if it was authenticated less than [`TTL`] ago.
    pub fn get(&self, secret: &str) -> Option<KeyOwner> {
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (at, owner) = entries.get(&digest(secret))?;
        (at.elapsed() < TTL).then(|| owner.clone())
    }

    /// Remembers a successful authentication.
    pub fn put(&self, secret: &str, owner: KeyOwner) {
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(digest(secret), (Instant::now(), owner));
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
}

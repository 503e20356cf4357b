//! Token buckets by principal, the 429s' measure: how many requests a credential or a tenant
//! may still send, and how long until it may send the next.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::Rate;

/// The most buckets of one kind kept; beyond, full buckets (the same as none) are dropped.
const MAX_BUCKETS: usize = 100_000;
const SHARDS: usize = 16;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by principal, in shards so that cores do not queue on one lock.
pub(super) struct Buckets {
    rate: Rate,
    shards: Vec<Mutex<HashMap<String, Bucket>>>,
}

impl Buckets {
    pub(super) fn new(rate: Rate) -> Self {
        Buckets {
            rate,
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
        }
    }

    /// The shard of `key`, locked.
    fn shard(&self, key: &str) -> std::sync::MutexGuard<'_, HashMap<String, Bucket>> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        let shard = usize::try_from(hasher.finish() % SHARDS as u64).unwrap_or(0);
        self.shards[shard]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one token of `key`'s bucket, or answers how long until one is there.
    pub(super) fn take(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let mut map = self.shard(key);
        let Rate { rate, burst } = self.rate;
        if map.len() >= MAX_BUCKETS / SHARDS && !map.contains_key(key) {
            map.retain(|_, b| b.tokens + now.duration_since(b.at).as_secs_f64() * rate < burst);
        }
        let bucket = map.entry(key.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refilled =
            (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * rate).min(burst);
        bucket.at = now;
        if refilled >= 1.0 {
            bucket.tokens = refilled - 1.0;
            Ok(())
        } else {
            bucket.tokens = refilled;
            Err(Duration::from_secs_f64((1.0 - refilled) / rate))
        }
    }

    /// Gives back the token [`Buckets::take`] took (the request was refused by another limit).
    pub(super) fn refund(&self, key: &str) {
        if let Some(bucket) = self.shard(key).get_mut(key) {
            bucket.tokens = (bucket.tokens + 1.0).min(self.rate.burst);
        }
    }
}

/// Whole seconds to wait, at least one (the `Retry-After` header).
pub(super) fn seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_its_rate_and_says_how_long_to_wait() {
        let buckets = Buckets::new(Rate {
            rate: 2.0,
            burst: 3.0,
        });
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(buckets.take("k", t0), Ok(()));
        }
        let wait = buckets.take("k", t0).unwrap_err();
        assert_eq!(wait, Duration::from_millis(500));
        assert_eq!(seconds(wait), 1);
        // Another key has its own bucket.
        assert_eq!(buckets.take("other", t0), Ok(()));
        // Half a second later one token is back, and only one.
        let t1 = t0 + Duration::from_millis(500);
        assert_eq!(buckets.take("k", t1), Ok(()));
        assert!(buckets.take("k", t1).is_err());
    }
}

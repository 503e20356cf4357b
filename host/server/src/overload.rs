//! Overload: no request waits in a queue that grows until clients give up.
//!
//! Two answers, both at once and with `Retry-After` (docs/api.md, "Limits and overload"):
//!
//! - **429 `rate_limit_exceeded`**: a credential (an organization key, a tenant token, a
//!   developer) or a tenant sent more than its rate. Each has a token bucket: `rate` requests
//!   a second on average, `burst` at once. Buckets are keyed by authenticated principals only,
//!   so a client cannot spend another tenant's budget by naming it, and an unauthenticated
//!   flood is left to the global limits.
//! - **503 `overloaded`**: the host as a whole is past its capacity: more requests in flight
//!   than `max_in_flight`, or requests waiting longer than `max_queue_delay` to be scheduled
//!   (the delay a probe task measures on the runtime every few milliseconds: the queue every
//!   request waits in when the cores are saturated). Shed requests are not logged one by one;
//!   one warning every ten seconds counts them.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::{ApiError, HostState};

/// A token bucket's shape: `rate` requests a second on average, `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Requests a second.
    pub rate: f64,
    /// Requests at once.
    pub burst: f64,
}

/// The host's limits. Every field has a default fit for one host; `from_env` reads the
/// operator's.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Per credential (`ATRIUM_KEY_RATE`, `ATRIUM_KEY_BURST`); none is unlimited.
    pub per_key: Option<Rate>,
    /// Per tenant of an organization (`ATRIUM_TENANT_RATE`, `ATRIUM_TENANT_BURST`).
    pub per_tenant: Option<Rate>,
    /// Requests in flight on the host (`ATRIUM_MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
    /// The longest a ready request may wait for a core (`ATRIUM_MAX_QUEUE_DELAY_MS`).
    pub max_queue_delay: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_key: Some(Rate {
                rate: 1000.0,
                burst: 2000.0,
            }),
            per_tenant: Some(Rate {
                rate: 1000.0,
                burst: 2000.0,
            }),
            max_in_flight: 4096,
            max_queue_delay: Duration::from_millis(200),
        }
    }
}

impl Limits {
    /// The defaults with the operator's variables applied; an error names the variable.
    /// A rate of 0 turns that limit off.
    pub fn from_env(vars: &[(String, String)]) -> Result<Limits, String> {
        let var = |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.trim().to_owned())
        };
        fn number(name: &str, text: &str) -> Result<f64, String> {
            match text.parse::<f64>() {
                Ok(n) if n.is_finite() && n >= 0.0 => Ok(n),
                _ => Err(format!(
                    "{name} must be a number of 0 or more, not `{text}`"
                )),
            }
        }
        let rate = |rate_var: &str, burst_var: &str, default: Option<Rate>| {
            let rate = match var(rate_var) {
                Some(text) => number(rate_var, &text)?,
                None => default.map_or(0.0, |r| r.rate),
            };
            if rate == 0.0 {
                return Ok::<_, String>(None);
            }
            let burst = match var(burst_var) {
                Some(text) => number(burst_var, &text)?,
                None => (rate * 2.0).max(1.0),
            };
            if burst < 1.0 {
                return Err(format!("{burst_var} must be at least 1, not {burst}"));
            }
            Ok(Some(Rate { rate, burst }))
        };
        let defaults = Limits::default();
        let max_in_flight = match var("ATRIUM_MAX_IN_FLIGHT") {
            Some(text) => match text.parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(format!(
                        "ATRIUM_MAX_IN_FLIGHT must be a whole number above 0, not `{text}`"
                    ));
                }
            },
            None => defaults.max_in_flight,
        };
        let max_queue_delay = match var("ATRIUM_MAX_QUEUE_DELAY_MS") {
            Some(text) => match text.parse::<u64>() {
                Ok(n) if n > 0 => Duration::from_millis(n),
                _ => {
                    return Err(format!(
                        "ATRIUM_MAX_QUEUE_DELAY_MS must be a whole number of milliseconds above 0, not `{text}`"
                    ));
                }
            },
            None => defaults.max_queue_delay,
        };
        Ok(Limits {
            per_key: rate("ATRIUM_KEY_RATE", "ATRIUM_KEY_BURST", defaults.per_key)?,
            per_tenant: rate(
                "ATRIUM_TENANT_RATE",
                "ATRIUM_TENANT_BURST",
                defaults.per_tenant,
            )?,
            max_in_flight,
            max_queue_delay,
        })
    }
}

/// The most buckets of one kind kept; beyond, full buckets (the same as none) are dropped.
const MAX_BUCKETS: usize = 100_000;
const SHARDS: usize = 16;

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Token buckets by principal, in shards so that cores do not queue on one lock.
struct Buckets {
    rate: Rate,
    shards: Vec<Mutex<HashMap<String, Bucket>>>,
}

impl Buckets {
    fn new(rate: Rate) -> Self {
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
    fn take(&self, key: &str, now: Instant) -> Result<(), Duration> {
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
    fn refund(&self, key: &str) {
        if let Some(bucket) = self.shard(key).get_mut(key) {
            bucket.tokens = (bucket.tokens + 1.0).min(self.rate.burst);
        }
    }
}

/// The limits of one host, shared by every request.
pub struct Limiter {
    limits: Limits,
    keys: Option<Buckets>,
    tenants: Option<Buckets>,
    in_flight: AtomicUsize,
    /// The queue delay the probe last measured, in microseconds.
    queue_delay_us: AtomicU64,
    shed: AtomicU64,
    limited: AtomicU64,
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter::new(Limits::default())
    }
}

/// Whole seconds to wait, at least one (the `Retry-After` header).
fn seconds(wait: Duration) -> u64 {
    wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
}

impl Limiter {
    /// A limiter with these limits.
    pub fn new(limits: Limits) -> Self {
        Limiter {
            keys: limits.per_key.map(Buckets::new),
            tenants: limits.per_tenant.map(Buckets::new),
            limits,
            in_flight: AtomicUsize::new(0),
            queue_delay_us: AtomicU64::new(0),
            shed: AtomicU64::new(0),
            limited: AtomicU64::new(0),
        }
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Admits a request of an authenticated credential (`kind` and id, for example
    /// `key:<id>`; none for an anonymous caller) for a tenant of an organization, or answers
    /// 429.
    pub fn admit(
        &self,
        credential: Option<&str>,
        org_id: &str,
        tenant_id: Option<&str>,
    ) -> Result<(), ApiError> {
        let now = Instant::now();
        if let (Some(keys), Some(credential)) = (&self.keys, credential)
            && let Err(wait) = keys.take(credential, now)
        {
            self.limited.fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::rate_limited(
                format!(
                    "this credential sent more than {} requests a second (ATRIUM_KEY_RATE); retry after {} s",
                    self.limits.per_key.map_or(0.0, |r| r.rate),
                    seconds(wait)
                ),
                seconds(wait),
            ));
        }
        if let (Some(tenants), Some(tenant)) = (&self.tenants, tenant_id)
            && let Err(wait) = tenants.take(&format!("{org_id}\u{0}{tenant}"), now)
        {
            // A refused request spends nothing: the credential's token goes back.
            if let (Some(keys), Some(credential)) = (&self.keys, credential) {
                keys.refund(credential);
            }
            self.limited.fetch_add(1, Ordering::Relaxed);
            return Err(ApiError::rate_limited(
                format!(
                    "tenant `{tenant}` sent more than {} requests a second (ATRIUM_TENANT_RATE); retry after {} s",
                    self.limits.per_tenant.map_or(0.0, |r| r.rate),
                    seconds(wait)
                ),
                seconds(wait),
            ));
        }
        Ok(())
    }

    /// Whether a new request is shed, and why.
    fn shed_reason(&self) -> Option<String> {
        let delay = Duration::from_micros(self.queue_delay_us.load(Ordering::Relaxed));
        if delay > self.limits.max_queue_delay {
            return Some(format!(
                "the host is overloaded: requests wait {} ms for a core (the limit is {} ms)",
                delay.as_millis(),
                self.limits.max_queue_delay.as_millis()
            ));
        }
        let in_flight = self.in_flight.load(Ordering::Relaxed);
        if in_flight >= self.limits.max_in_flight {
            return Some(format!(
                "the host is overloaded: {in_flight} requests are in flight (the limit is {})",
                self.limits.max_in_flight
            ));
        }
        None
    }

    /// Measures the queue delay until `stop` says so: how late a task that asked to wake
    /// after 5 ms is actually polled. The delay that counts is the least of the last four
    /// probes: one long step that held a core once is not overload, a queue is.
    pub async fn probe_queue_delay(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        const PERIOD: Duration = Duration::from_millis(5);
        let mut last_report = Instant::now();
        let (mut shed_before, mut limited_before) = (0, 0);
        let mut recent = [0u64; 4];
        let mut next = 0;
        loop {
            let asked = Instant::now();
            tokio::select! {
                () = tokio::time::sleep(PERIOD) => {}
                _ = stop.changed() => return,
            }
            let late = asked.elapsed().saturating_sub(PERIOD);
            recent[next] = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
            next = (next + 1) % recent.len();
            let least = recent.iter().copied().min().unwrap_or(0);
            self.queue_delay_us.store(least, Ordering::Relaxed);
            if last_report.elapsed() >= Duration::from_secs(10) {
                let (shed, limited) = (
                    self.shed.load(Ordering::Relaxed),
                    self.limited.load(Ordering::Relaxed),
                );
                if shed > shed_before || limited > limited_before {
                    tracing::warn!(
                        shed = shed - shed_before,
                        rate_limited = limited - limited_before,
                        "overload: requests were answered 503 (shed) or 429 (rate limited) in the last 10 s"
                    );
                }
                (shed_before, limited_before) = (shed, limited);
                last_report = Instant::now();
            }
        }
    }
}

/// Counts a request in flight until it is answered (or dropped).
struct InFlight<'l>(&'l AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The global limits, around every route but `/health`: a request past them is answered
/// 503 at once, before its body is read.
pub async fn shed(State(state): State<HostState>, request: Request, next: Next) -> Response {
    let limiter = &state.limiter;
    if request.uri().path() == "/health" {
        return next.run(request).await;
    }
    if let Some(reason) = limiter.shed_reason() {
        limiter.shed.fetch_add(1, Ordering::Relaxed);
        return ApiError::overloaded(reason, 1).into_response();
    }
    limiter.in_flight.fetch_add(1, Ordering::Relaxed);
    let _counted = InFlight(&limiter.in_flight);
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

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

    #[test]
    fn the_limits_come_from_the_environment_and_bad_values_name_the_variable() {
        assert_eq!(Limits::from_env(&[]).unwrap(), Limits::default());
        let limits = Limits::from_env(&vars(&[
            ("ATRIUM_KEY_RATE", "5"),
            ("ATRIUM_TENANT_RATE", "0"),
            ("ATRIUM_MAX_IN_FLIGHT", "64"),
            ("ATRIUM_MAX_QUEUE_DELAY_MS", "250"),
        ]))
        .unwrap();
        assert_eq!(
            limits.per_key,
            Some(Rate {
                rate: 5.0,
                burst: 10.0
            })
        );
        assert_eq!(limits.per_tenant, None);
        assert_eq!(limits.max_in_flight, 64);
        assert_eq!(limits.max_queue_delay, Duration::from_millis(250));
        for (name, value) in [
            ("ATRIUM_KEY_RATE", "fast"),
            ("ATRIUM_TENANT_BURST", "0.5"),
            ("ATRIUM_MAX_IN_FLIGHT", "0"),
            ("ATRIUM_MAX_QUEUE_DELAY_MS", "-1"),
        ] {
            let err = Limits::from_env(&vars(&[(name, value)])).unwrap_err();
            assert!(err.starts_with(name), "{err}");
        }
    }

    #[test]
    fn a_queue_delay_past_the_limit_sheds_and_the_in_flight_cap_too() {
        let limiter = Limiter::new(Limits {
            max_in_flight: 2,
            ..Limits::default()
        });
        assert_eq!(limiter.shed_reason(), None);
        limiter.queue_delay_us.store(250_000, Ordering::Relaxed);
        let reason = limiter.shed_reason().unwrap();
        assert!(reason.contains("wait 250 ms"), "{reason}");
        limiter.queue_delay_us.store(0, Ordering::Relaxed);
        limiter.in_flight.store(2, Ordering::Relaxed);
        let reason = limiter.shed_reason().unwrap();
        assert!(reason.contains("2 requests are in flight"), "{reason}");
    }
}

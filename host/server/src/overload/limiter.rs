//! The [`Limiter`]: the limits of one host and the counts behind them, shared by every
//! request. It admits a request under the rate limits or answers 429, says whether the host is
//! past its capacity (and why), and measures the runtime's queue delay.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::Limits;
use super::buckets::{Buckets, seconds};
use crate::ApiError;

/// The limits of one host, shared by every request.
pub struct Limiter {
    limits: Limits,
    keys: Option<Buckets>,
    tenants: Option<Buckets>,
    pub(super) in_flight: AtomicUsize,
    /// The queue delay the probe last measured, in microseconds.
    queue_delay_us: AtomicU64,
    pub(super) shed: AtomicU64,
    limited: AtomicU64,
    /// When the host began to serve: a request that arrived before (a client that connected
    /// while the host was starting) waited for the start, not in a queue of the host's.
    serving_since: Mutex<Option<Instant>>,
    /// The metering writer, whose queue every answered request hands its usage record to.
    metering: std::sync::OnceLock<atrium_store::Metering>,
}

impl Default for Limiter {
    fn default() -> Self {
        Limiter::new(Limits::default())
    }
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
            serving_since: Mutex::new(None),
            metering: std::sync::OnceLock::new(),
        }
    }

    /// Sheds requests, too, while the usage records of those answered wait longer than
    /// `max_queue_delay` for `metering`'s writer, or fill its queue (`atrium_server::serve`
    /// calls it): past that point every admitted request would wait to hand over its record.
    pub fn watch_metering(&self, metering: atrium_store::Metering) {
        let _ = self.metering.set(metering);
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

    /// Notes that the host begins to serve now (`atrium_server::serve` calls it).
    pub fn serving(&self) {
        *self
            .serving_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
    }

    /// Whether a new request that waited `waited` before the host read it is shed, and why.
    pub(super) fn shed_reason(&self, waited: Option<Duration>) -> Option<String> {
        let limit = self.limits.max_queue_delay;
        // Only a wait while the host served counts.
        let waited = waited.filter(|w| *w > limit).map(|w| {
            self.serving_since
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .map_or(w, |since| w.min(since.elapsed()))
        });
        if let Some(waited) = waited
            && waited > limit
        {
            return Some(format!(
                "the host is overloaded: this request waited {} ms before the host could read it (the limit is {} ms)",
                waited.as_millis(),
                self.limits.max_queue_delay.as_millis()
            ));
        }
        let delay = Duration::from_micros(self.queue_delay_us.load(Ordering::Relaxed));
        if delay > self.limits.max_queue_delay {
            return Some(format!(
                "the host is overloaded: requests wait {} ms for a core (the limit is {} ms)",
                delay.as_millis(),
                self.limits.max_queue_delay.as_millis()
            ));
        }
        if let Some(backlog) = self
            .metering
            .get()
            .and_then(atrium_store::Metering::backlog)
            && (backlog.full || backlog.wait > self.limits.max_queue_delay)
        {
            return Some(format!(
                "the host is overloaded: the usage records of answered requests wait {} ms to be stored (the limit is {} ms)",
                backlog.wait.as_millis(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_delay_past_the_limit_sheds_and_the_in_flight_cap_too() {
        let limiter = Limiter::new(Limits {
            max_in_flight: 2,
            ..Limits::default()
        });
        assert_eq!(limiter.shed_reason(None), None);
        limiter.queue_delay_us.store(250_000, Ordering::Relaxed);
        let reason = limiter.shed_reason(None).unwrap();
        assert!(reason.contains("wait 250 ms"), "{reason}");
        limiter.queue_delay_us.store(0, Ordering::Relaxed);
        limiter.in_flight.store(2, Ordering::Relaxed);
        let reason = limiter.shed_reason(None).unwrap();
        assert!(reason.contains("2 requests are in flight"), "{reason}");
        limiter.in_flight.store(0, Ordering::Relaxed);
        // A request's own wait: up to the limit it is served, past it shed.
        let limit = limiter.limits().max_queue_delay;
        assert_eq!(limiter.shed_reason(Some(limit)), None);
        let reason = limiter
            .shed_reason(Some(limit + Duration::from_millis(1)))
            .unwrap();
        assert!(
            reason.contains("waited 201 ms before the host could read it"),
            "{reason}"
        );
        // A request that arrived while the host was starting waited for the start, not for
        // the host's queue.
        limiter.serving();
        assert_eq!(limiter.shed_reason(Some(limit * 5)), None);
    }
}

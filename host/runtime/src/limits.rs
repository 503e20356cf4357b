//! Per-call limits: the memory cap, the deadline and the CPU share.
//!
//! - Memory: a [`wasmtime::ResourceLimiter`] refuses growth of any linear memory beyond
//!   `runtime.resources.memory_mb` and traps with [`MemoryCapExceeded`], which names the cap.
//! - Deadline: the engine's epoch advances every tick (see `engine.rs`); at every tick a running
//!   guest enters [`CpuClock::tick`], which stops the call once the deadline has passed, and
//!   otherwise yields to the executor so that other calls on the same worker thread get their
//!   turn.
//! - CPU: `cpu_cores` is the share of the machine's cores an install (a tenant's app) may use,
//!   across all its calls at once, as its container would. Each poll of a guest is timed by its
//!   thread's CPU clock and charged to the install's [`CpuShare`]; once the install is ahead of
//!   its share by more than one [`CPU_PERIOD`] of debt, the call charged is put to sleep
//!   (holding no thread) until it is paid off. One call runs on one thread, so it never uses
//!   more than a core; two calls of an install at `cpu_cores: 1.0` share one core between them.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use wasmtime::UpdateDeadline;

/// The trap raised when a guest grows its memory beyond the cap.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("memory limit of {limit_mb} MiB exceeded (runtime.resources.memory_mb)")]
pub struct MemoryCapExceeded {
    /// The cap in MiB.
    pub limit_mb: u64,
}

/// The trap raised when a call runs past its deadline.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("deadline of {0:?} exceeded")]
pub struct DeadlineExceeded(pub Duration);

/// The memory cap of one call.
#[derive(Debug)]
pub(crate) struct MemoryCap {
    pub limit_mb: u64,
    pub peak_bytes: usize,
}

impl MemoryCap {
    fn limit_bytes(&self) -> usize {
        usize::try_from(self.limit_mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX)
    }
}

impl wasmtime::ResourceLimiter for MemoryCap {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit_bytes() {
            return Err(wasmtime::Error::new(MemoryCapExceeded {
                limit_mb: self.limit_mb,
            }));
        }
        if maximum.is_some_and(|max| desired > max) {
            return Ok(false);
        }
        self.peak_bytes = self.peak_bytes.max(desired);
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // A table element is a pointer; hold tables to the same budget as memory.
        let bytes = desired.saturating_mul(std::mem::size_of::<usize>());
        Ok(bytes <= self.limit_bytes() && maximum.is_none_or(|max| desired <= max))
    }
}

/// How far an install's calls may run ahead of its share before one is put to sleep: like a
/// CFS period, they compute freely until the install's debt (the wall time their computing
/// would have taken at `cpu_cores`, less the time that has passed) passes one period, and the
/// call that finds it past sleeps the whole debt. A short call never sleeps, however its run
/// falls: without the allowance, a 20 µs call at 0.5 cores that met a tick 10 µs in slept
/// 10 µs, which the executor's timer rounds up to a millisecond.
pub const CPU_PERIOD: Duration = Duration::from_millis(10);

/// The deadline of one call, checked at every epoch tick.
#[derive(Debug)]
pub(crate) struct CpuClock {
    started: Instant,
    deadline: Duration,
}

impl CpuClock {
    pub fn new(deadline: Duration) -> Self {
        CpuClock {
            started: Instant::now(),
            deadline,
        }
    }

    /// Called by the engine at every epoch tick while the guest runs: stops the call past its
    /// deadline, and otherwise yields to the executor, so that other calls on the same worker
    /// thread get their turn (and the install's share is counted between polls).
    pub fn tick(&mut self) -> wasmtime::Result<UpdateDeadline> {
        if self.started.elapsed() >= self.deadline {
            return Err(wasmtime::Error::new(DeadlineExceeded(self.deadline)));
        }
        Ok(UpdateDeadline::Yield(1))
    }
}

/// The CPU share of one install (a tenant's app): every call of the install is charged here,
/// so that its calls together use at most `runtime.resources.cpu_cores`, as the app's
/// container would. A generic cell-rate account: `due` is when the install will have earned
/// the CPU time its calls have used so far, at its share.
#[derive(Debug)]
pub(crate) struct CpuShare {
    due: Mutex<Instant>,
}

impl Default for CpuShare {
    fn default() -> Self {
        CpuShare {
            due: Mutex::new(Instant::now()),
        }
    }
}

impl CpuShare {
    /// Charges `used` CPU time at `cores`; says how long the charged call must sleep: the
    /// install's whole debt once it passes [`CPU_PERIOD`], else nothing. Time the install did
    /// not use is not saved up beyond the present: an idle install starts afresh.
    pub fn charge(&self, used: Duration, cores: f64, now: Instant) -> Option<Duration> {
        let mut due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
        *due = (*due).max(now) + used.div_f64(cores);
        let debt = *due - now;
        (debt > CPU_PERIOD).then_some(debt)
    }

    /// Whether the install owes nothing: an account in this state is as good as a new one.
    pub fn is_settled(&self, now: Instant) -> bool {
        *self.due.lock().unwrap_or_else(PoisonError::into_inner) <= now
    }
}

/// What a call is charged to: its install's share and its tenant's (all the tenant's installs
/// together), and the work the host does for it after a call (the reaper giving back the memory
/// its call grew).
#[derive(Debug, Clone)]
pub(crate) struct CpuAccount {
    /// The install's share, at `runtime.resources.cpu_cores`.
    pub install: Arc<CpuShare>,
    pub install_cores: f64,
    /// The tenant's share, at the runtime's `max_cpu_cores_per_tenant` (none: no such cap).
    pub tenant: Option<(Arc<CpuShare>, f64)>,
}

impl CpuAccount {
    /// Charges `used` to both shares; says how long the call charged must sleep: the larger of
    /// the two debts, once one passes [`CPU_PERIOD`].
    pub fn charge(&self, used: Duration, now: Instant) -> Option<Duration> {
        let install = self.install.charge(used, self.install_cores, now);
        let tenant = self
            .tenant
            .as_ref()
            .and_then(|(share, cores)| share.charge(used, *cores, now));
        install.max(tenant)
    }
}

/// One call's use of its install's CPU share: polls the guest, counts each poll's CPU time
/// (the thread's, so time the thread spent preempted or on other calls is not the call's),
/// charges it to the install, and sleeps between polls while the install is in debt.
pub(crate) struct CallCpu {
    account: CpuAccount,
    /// The call's deadline: no sleep goes past it.
    ends: Instant,
    nap: Option<Pin<Box<tokio::time::Sleep>>>,
    /// What the call used.
    pub used: CpuUse,
}

/// What a call used of the CPU, for its `atrium::call` event.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct CpuUse {
    /// CPU time of the guest's polls (its thread's, kernel time included).
    pub computed: Duration,
    /// How often the call was put to sleep because its install was over its share.
    pub throttled: u32,
    /// How long it slept in all.
    pub throttled_for: Duration,
}

impl CallCpu {
    pub fn new(account: CpuAccount, deadline: Duration) -> Self {
        CallCpu {
            account,
            ends: Instant::now() + deadline,
            nap: None,
            used: CpuUse::default(),
        }
    }

    /// What the call is charged to, for work done for it after it ends.
    pub fn account(&self) -> CpuAccount {
        self.account.clone()
    }

    /// Polls `work` once, unless the call is asleep for its install's share.
    pub fn poll<T>(
        &mut self,
        work: &mut Pin<Box<dyn Future<Output = T> + Send>>,
        cx: &mut Context<'_>,
    ) -> Poll<T> {
        if let Some(nap) = &mut self.nap {
            if nap.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.nap = None;
        }
        let started = thread_cpu_time();
        let polled = work.as_mut().poll(cx);
        let used = thread_cpu_time().saturating_sub(started);
        self.used.computed += used;
        let now = Instant::now();
        if let Some(debt) = self.account.charge(used, now)
            && polled.is_pending()
        {
            let nap = debt.min(self.ends.saturating_duration_since(now));
            if !nap.is_zero() {
                self.used.throttled += 1;
                self.used.throttled_for += nap;
                // Polled at once, so that the timer holds the waker; a guest that yielded at
                // its tick asked to be polled again, and is, after the nap.
                let mut sleep = Box::pin(tokio::time::sleep(nap));
                if sleep.as_mut().poll(cx).is_pending() {
                    self.nap = Some(sleep);
                }
            }
        }
        polled
    }
}

/// The CPU time the calling thread has used. A call's CPU is counted in it, not in wall time:
/// a short call whose thread the kernel preempted, or that waited for a page fault, has not
/// computed, and counting that wait once moved a well-behaved tenant's trivial calls to the
/// background for 10 s at a time whenever the machine was busy. Without a thread clock, wall
/// time.
pub(crate) fn thread_cpu_time() -> Duration {
    #[cfg(unix)]
    {
        let mut now = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: the call writes into a local timespec that outlives it.
        #[allow(unsafe_code)]
        let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut now) };
        if read == 0 {
            return Duration::new(
                u64::try_from(now.tv_sec).unwrap_or(0),
                u32::try_from(now.tv_nsec).unwrap_or(0),
            );
        }
    }
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_growth_beyond_the_cap_names_it() {
        let mut cap = MemoryCap {
            limit_mb: 64,
            peak_bytes: 0,
        };
        use wasmtime::ResourceLimiter;
        assert!(cap.memory_growing(0, 64 << 20, None).unwrap());
        let err = cap
            .memory_growing(64 << 20, (64 << 20) + 65536, None)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "memory limit of 64 MiB exceeded (runtime.resources.memory_mb)"
        );
    }

    #[test]
    fn a_call_past_its_deadline_is_stopped() {
        let mut clock = CpuClock::new(Duration::ZERO);
        let Err(err) = clock.tick() else {
            panic!("the call goes on past its deadline")
        };
        assert!(err.downcast_ref::<DeadlineExceeded>().is_some());
        let mut clock = CpuClock::new(Duration::from_secs(30));
        assert!(matches!(clock.tick().unwrap(), UpdateDeadline::Yield(1)));
    }

    #[test]
    fn an_install_over_its_share_sleeps_its_debt() {
        let ms = Duration::from_millis;
        // A moment after every account below is opened (each starts at the present).
        let t0 = Instant::now() + Duration::from_secs(1);
        let share = CpuShare::default();
        // At half a core, 5 ms of computing are worth 10 ms: one period of debt, no sleep.
        assert_eq!(share.charge(ms(5), 0.5, t0), None);
        // A microsecond more, at once, and the debt passes the period: sleep all of it.
        assert_eq!(
            share.charge(Duration::from_micros(1), 0.5, t0),
            Some(ms(10) + Duration::from_micros(2))
        );
        // Time passing pays the debt off: 10 ms later a trivial charge owes almost nothing.
        assert_eq!(share.charge(Duration::ZERO, 0.5, t0 + ms(10)), None);
        assert!(share.is_settled(t0 + ms(11)));

        // Calls of one install share it: four calls of 1.5 ms each at once, at half a core,
        // owe 12 ms together, and the fourth one to be charged sleeps.
        let shared = CpuShare::default();
        let each = Duration::from_micros(1500);
        let charges: Vec<_> = (0..4).map(|_| shared.charge(each, 0.5, t0)).collect();
        assert_eq!(charges, [None, None, None, Some(ms(12))]);
        // An idle install does not save up: after a second of nothing, the same four calls
        // owe the same, not less.
        let later = t0 + Duration::from_secs(2);
        let charges: Vec<_> = (0..4).map(|_| shared.charge(each, 0.5, later)).collect();
        assert_eq!(charges, [None, None, None, Some(ms(12))]);

        // At a full core a call alone, computing all the time it runs, never owes.
        let full = CpuShare::default();
        for step in 1..=100 {
            assert_eq!(full.charge(ms(1), 1.0, t0 + ms(step)), None);
        }
        // Nor does a trivial call at the smallest share.
        assert_eq!(
            CpuShare::default().charge(Duration::from_micros(20), 0.1, t0),
            None
        );
    }
}

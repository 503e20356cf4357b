//! Per-call limits: the memory cap, the deadline and the CPU share.
//!
//! - Memory: a [`wasmtime::ResourceLimiter`] refuses growth of any linear memory beyond
//!   `runtime.resources.memory_mb` and traps with [`MemoryCapExceeded`], which names the cap.
//! - Deadline and CPU: the engine's epoch advances every tick (see `engine.rs`); at every tick a
//!   running guest enters [`CpuClock::tick`], which stops the call once the deadline has passed,
//!   and otherwise yields to the executor so that other calls on the same worker thread get their
//!   turn. `cpu_cores` below 1 is a share of one core, enforced like a CFS bandwidth quota: a
//!   call that has held a worker longer than `cpu_cores` × its elapsed time, by more than one
//!   [`CPU_PERIOD`] of debt, is put to sleep until it is back within its share. At or above 1 a call is never throttled (a component instance
//!   runs on one thread), and the value only matters to container apps.

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

/// How far a call below one core may run ahead of its share before it is put to sleep: like
/// a CFS period, a call computes freely until its debt (the wall time its computing would have
/// taken at `cpu_cores`, less the time it has had) passes one period, then sleeps the whole
/// debt. A short call never sleeps, however its run falls on the ticks: without the allowance,
/// a 20 µs call at 0.5 cores that met a tick 10 µs in slept 10 µs, which the executor's timer
/// rounds up to a millisecond.
pub const CPU_PERIOD: Duration = Duration::from_millis(10);

/// Accounting of one call's time.
#[derive(Debug)]
pub(crate) struct CpuClock {
    cpu_cores: f64,
    started: Instant,
    deadline: Duration,
    /// Time the guest held a worker thread so far (conservative: counted between ticks).
    busy: Duration,
    /// When the guest last got the thread back.
    resumed: Instant,
    /// How often the call was put to sleep for exceeding its share.
    pub throttled: u32,
    /// Total time spent asleep for exceeding its share.
    pub throttled_for: Duration,
}

impl CpuClock {
    pub fn new(cpu_cores: f64, deadline: Duration) -> Self {
        let now = Instant::now();
        CpuClock {
            cpu_cores,
            started: now,
            deadline,
            busy: Duration::ZERO,
            resumed: now,
            throttled: 0,
            throttled_for: Duration::ZERO,
        }
    }

    /// Called by the engine at every epoch tick while the guest runs.
    pub fn tick(&mut self) -> wasmtime::Result<UpdateDeadline> {
        let now = Instant::now();
        let elapsed = now.duration_since(self.started);
        if elapsed >= self.deadline {
            return Err(wasmtime::Error::new(DeadlineExceeded(self.deadline)));
        }
        self.busy += now.saturating_duration_since(self.resumed);
        self.resumed = now;
        if self.cpu_cores < 1.0 {
            // The wall time the call's computing would have taken at its share; it may run
            // ahead of that by one period before it sleeps, and then sleeps the whole debt.
            let entitled = self.busy.div_f64(self.cpu_cores);
            if entitled > elapsed + CPU_PERIOD {
                let remaining = self.deadline - elapsed;
                let nap = (entitled - elapsed).min(remaining);
                self.throttled += 1;
                self.throttled_for += nap;
                // The nap counts as elapsed time, not as time on the thread.
                self.resumed = now + nap;
                return Ok(UpdateDeadline::YieldCustom(
                    1,
                    Box::pin(tokio::time::sleep(nap)),
                ));
            }
        }
        Ok(UpdateDeadline::Yield(1))
    }

    /// Time the guest held a worker thread, as counted at ticks.
    pub fn busy(&self) -> Duration {
        self.busy
    }
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
        let mut clock = CpuClock::new(1.0, Duration::ZERO);
        let Err(err) = clock.tick() else {
            panic!("the call goes on past its deadline")
        };
        assert!(err.downcast_ref::<DeadlineExceeded>().is_some());
    }

    #[tokio::test]
    async fn a_busy_call_over_its_share_is_put_to_sleep() {
        let mut clock = CpuClock::new(0.5, Duration::from_secs(30));
        // Pretend the guest has held the thread for its whole life so far.
        clock.started -= Duration::from_millis(100);
        clock.resumed -= Duration::from_millis(100);
        assert!(matches!(
            clock.tick().unwrap(),
            UpdateDeadline::YieldCustom(..)
        ));
        assert_eq!(clock.throttled, 1);
        // It is entitled to twice its busy time: about 100 ms of sleep.
        assert!(
            clock.throttled_for >= Duration::from_millis(99),
            "{:?}",
            clock.throttled_for
        );

        // A call that has computed for less than one period ahead of its share is not.
        let mut short = CpuClock::new(0.5, Duration::from_secs(30));
        short.started -= CPU_PERIOD - Duration::from_millis(1);
        short.resumed -= CPU_PERIOD - Duration::from_millis(1);
        assert!(matches!(short.tick().unwrap(), UpdateDeadline::Yield(1)));
        assert_eq!(short.throttled, 0);
        // Nor is one that met a tick microseconds after it started, at the smallest share.
        let mut brief = CpuClock::new(0.01, Duration::from_secs(30));
        brief.started -= Duration::from_micros(20);
        brief.resumed -= Duration::from_micros(20);
        assert!(matches!(brief.tick().unwrap(), UpdateDeadline::Yield(1)));

        let mut full = CpuClock::new(1.0, Duration::from_secs(30));
        full.started -= Duration::from_millis(100);
        full.resumed -= Duration::from_millis(100);
        assert!(matches!(full.tick().unwrap(), UpdateDeadline::Yield(1)));
    }
}

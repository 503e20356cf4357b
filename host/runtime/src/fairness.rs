//! Fair shares between tenants: how many instances one tenant may hold, and which calls get
//! the cores first.
//!
//! - **Slots per tenant.** A tenant may hold at most `max_instances_per_tenant` instances at
//!   once (default a quarter of the pool); a call beyond is refused at once with
//!   [`crate::CallError::Capacity`], so one tenant's flood of slow calls cannot take the pool
//!   from the others.
//! - **Two lanes.** Every call starts on the caller's runtime, where calls run as they come.
//!   Once a guest has computed for [`QUANTUM`] (its thread's CPU time) it moves, mid-call, to
//!   the background lane: a runtime of its own whose threads run under `SCHED_IDLE`. There it
//!   still runs whenever a core is free, and still meets its deadline (the epoch keeps counting
//!   wall time), but a short call that arrives on the first lane preempts it. Once the call has
//!   computed for [`HEAVY_AFTER`] in all, its tenant's calls start there for [`HEAVY_FOR`]. A
//!   short call does not leave the first lane (time its thread spends preempted or waiting is
//!   not computing, though kernel work while it runs is); a call that spins, grows its memory
//!   page by page or floods its log does, within a millisecond.
//!   Callers make the instance on the first lane: only the guest's run moves.
//! - **A reaper.** Dropping an instance returns its pool slot, and a slot whose memory grew
//!   past the part kept resident is unmapped back to its image: for a guest that filled 64 MiB,
//!   a millisecond or more of the kernel freeing pages. Those instances are dropped by a thread
//!   of their own ([`Reaper`]), so that no first-lane worker spends that time while short
//!   calls wait behind it; the others are dropped where the call ends.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::CallError;
use crate::limits::{CallCpu, CpuAccount, CpuShare, CpuUse};

/// How long a call may compute on the first lane before it moves to the background.
pub const QUANTUM: Duration = Duration::from_micros(500);

/// How long a call must compute (its threads' CPU time, on both lanes) before its tenant's
/// next calls start in the background. Ten quanta: a thread's CPU time also counts what the
/// kernel does while it runs, and on a machine busy with another tenant's page faults a
/// trivial call of 20 µs was seen to be charged 1.2 ms. Moving that one call costs only it;
/// marking its tenant on that evidence sent every call of a well-behaved tenant behind the
/// spinning guests for 10 s (docs/benchmarks.md, "Noisy neighbours").
pub const HEAVY_AFTER: Duration = Duration::from_millis(5);

/// How long a tenant's calls start in the background after one of them computed for
/// [`HEAVY_AFTER`].
pub const HEAVY_FOR: Duration = Duration::from_secs(10);

/// The instances each tenant holds, the tenants whose calls lately computed for long, and
/// each install's CPU account.
#[derive(Default)]
pub(crate) struct TenantSlots {
    held: Mutex<HashMap<String, u32>>,
    heavy: Mutex<HashMap<String, Instant>>,
    /// Keyed by tenant and app id; an account that owes nothing and that no call holds is
    /// as good as a new one, and such accounts are forgotten once there are many.
    shares: Mutex<HashMap<(String, String), Arc<CpuShare>>>,
    /// Each tenant's CPU account across its installs, kept the same way.
    tenant_shares: Mutex<HashMap<String, Arc<CpuShare>>>,
}

/// The account under `key`, opened if there is none; settled accounts no call holds are
/// forgotten once there are 10,000.
fn account<K: std::hash::Hash + Eq>(
    accounts: &Mutex<HashMap<K, Arc<CpuShare>>>,
    key: K,
) -> Arc<CpuShare> {
    let mut accounts = accounts.lock().unwrap_or_else(PoisonError::into_inner);
    if accounts.len() >= 10_000 {
        let now = Instant::now();
        accounts.retain(|_, share| Arc::strong_count(share) > 1 || !share.is_settled(now));
    }
    accounts.entry(key).or_default().clone()
}

/// One instance of a tenant, given back when dropped (with the call's store).
pub(crate) struct TenantSlot {
    slots: Arc<TenantSlots>,
    tenant: String,
}

impl TenantSlots {
    /// Takes a slot for `tenant`, or says that it holds `limit` already.
    pub fn take(self: &Arc<Self>, tenant: &str, limit: u32) -> Result<TenantSlot, CallError> {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(tenant.to_owned()).or_insert(0);
        if *count >= limit {
            return Err(CallError::Capacity(format!(
                "tenant `{tenant}` has {limit} calls running, its share of the instance pool (max_instances_per_tenant); retry when one ends"
            )));
        }
        *count += 1;
        Ok(TenantSlot {
            slots: self.clone(),
            tenant: tenant.to_owned(),
        })
    }

    /// Whether `tenant` had a call moved to the background within [`HEAVY_FOR`]: its calls
    /// then start there, so that finding out again costs the first lane nothing.
    pub fn is_heavy(&self, tenant: &str) -> bool {
        let mut heavy = self.heavy.lock().unwrap_or_else(PoisonError::into_inner);
        match heavy.get(tenant) {
            Some(until) if *until > Instant::now() => true,
            Some(_) => {
                heavy.remove(tenant);
                false
            }
            None => false,
        }
    }

    /// Remembers that a call of `tenant` computed for [`HEAVY_AFTER`]; says whether the tenant
    /// was not marked already.
    pub fn mark_heavy(&self, tenant: &str) -> bool {
        let mut heavy = self.heavy.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if heavy.len() >= 10_000 {
            heavy.retain(|_, until| *until > now);
        }
        heavy
            .insert(tenant.to_owned(), now + HEAVY_FOR)
            .is_none_or(|until| until <= now)
    }

    /// The CPU account of `tenant`'s install of `app`, which all its calls are charged to.
    pub fn share(&self, tenant: &str, app: &str) -> Arc<CpuShare> {
        account(&self.shares, (tenant.to_owned(), app.to_owned()))
    }

    /// The CPU account of `tenant`, which the calls of all its installs are charged to.
    pub fn tenant_share(&self, tenant: &str) -> Arc<CpuShare> {
        account(&self.tenant_shares, tenant.to_owned())
    }

    #[cfg(test)]
    fn held(&self, tenant: &str) -> u32 {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.get(tenant).copied().unwrap_or(0)
    }
}

impl Drop for TenantSlot {
    fn drop(&mut self) {
        let mut held = self
            .slots
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.tenant) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.tenant);
            }
        }
    }
}

/// How many stores may wait for the reaper before it stops yielding to everything else.
pub const REAPER_BEHIND: usize = 16;

/// What the reaper is sent: an item to drop, and the account its drop is charged to.
type Reaped = (Box<dyn Send>, Option<CpuAccount>);

/// A thread that drops what it is sent: the stores of calls whose memory is expensive to give
/// back. While it keeps up it runs under `SCHED_IDLE`, like the background lane: woken by a
/// first-lane worker it does not take that worker's core, and a worker that wakes where it runs
/// takes the core from it at the next point where the kernel may reschedule (freeing pages
/// checks every few hundred). A batch thread at nice 19 was tried first: it still kept the core
/// it ran on for its whole time slice, 3 to 4 ms of freeing pages while a short call waited.
/// When more than [`REAPER_BEHIND`] stores wait, it runs as a batch thread at nice 19 until it
/// has caught up, so that a machine kept busy by normal work cannot leave pool slots unreturned.
/// A store waits in its queue holding its pool slot and its tenant's share, so the queue is
/// bounded by the pool; a call that finds the pool full while stores wait here waits for the
/// reaper to give a slot back (at most a second in all) instead of being refused.
/// The time a drop takes (the kernel freeing what the call grew) is charged to the install
/// (and the tenant) whose call it was, as if its call had spent it: an app whose calls fill their memory pays
/// for giving it back, in the same account as its computing, instead of the host paying.
pub(crate) struct Reaper {
    queue: Option<std::sync::mpsc::Sender<Reaped>>,
    waiting: Arc<std::sync::atomic::AtomicUsize>,
    /// Told after each drop.
    dropped: Arc<tokio::sync::Notify>,
    /// How many items it dropped so far.
    drops: Arc<std::sync::atomic::AtomicU64>,
}

impl Reaper {
    /// Starts the thread.
    pub fn start() -> std::io::Result<Self> {
        use std::sync::atomic::Ordering;
        let (queue, dropped) = std::sync::mpsc::channel::<Reaped>();
        let waiting = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = waiting.clone();
        let dropped_one = Arc::new(tokio::sync::Notify::new());
        let told = dropped_one.clone();
        let drops = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let drops_counted = drops.clone();
        std::thread::Builder::new()
            .name("atrium-reaper".into())
            .spawn(move || {
                lower_priority();
                let mut behind = false;
                // Ends when the runtime (the sender) is gone and the queue is empty.
                for (item, account) in dropped {
                    let now_behind = counted.load(Ordering::Relaxed) > REAPER_BEHIND;
                    if now_behind != behind {
                        behind = now_behind;
                        if behind {
                            batch_priority();
                        } else {
                            lower_priority();
                        }
                    }
                    let started = crate::limits::thread_cpu_time();
                    drop(item);
                    if let Some(account) = account {
                        let used = crate::limits::thread_cpu_time().saturating_sub(started);
                        account.charge(used, Instant::now());
                    }
                    counted.fetch_sub(1, Ordering::Relaxed);
                    drops_counted.fetch_add(1, Ordering::Release);
                    told.notify_waiters();
                }
            })?;
        Ok(Reaper {
            queue: Some(queue),
            waiting,
            dropped: dropped_one,
            drops,
        })
    }

    /// How many items wait to be dropped.
    pub fn waiting(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many items it dropped so far: a mark for [`Reaper::progress`].
    pub fn drops(&self) -> u64 {
        self.drops.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether the reaper gave something back since `mark` (from [`Reaper::drops`]), waiting
    /// for it at most `limit` while it still has items to drop.
    pub async fn progress(&self, mark: u64, limit: Duration) -> bool {
        let notified = self.dropped.notified();
        tokio::pin!(notified);
        // Registered before looking, so that a drop in between is not missed.
        notified.as_mut().enable();
        if self.drops() != mark {
            return true;
        }
        if self.waiting() == 0 {
            return false;
        }
        tokio::time::timeout(limit, notified).await.is_ok()
    }

    /// Drops `item` on the reaper's thread (here, if the thread is gone), charging the time
    /// it takes to `account`.
    pub fn drop_later(&self, item: impl Send + 'static, account: Option<CpuAccount>) {
        if let Some(queue) = &self.queue {
            self.waiting
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            // A send fails only when the thread has ended; the item is then dropped here.
            if let Err(unsent) = queue.send((Box::new(item), account)) {
                self.waiting
                    .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
                drop(unsent);
            }
        }
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has dropped what is queued; nothing waits.
        self.queue.take();
    }
}

/// The background lane: a runtime whose threads run at the lowest priority.
pub(crate) struct Background {
    runtime: Option<tokio::runtime::Runtime>,
}

impl Background {
    /// Starts `threads` low-priority worker threads; none turns the lane off (every call
    /// stays on its caller's runtime).
    pub fn start(threads: usize) -> std::io::Result<Self> {
        if threads == 0 {
            return Ok(Background { runtime: None });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("atrium-background")
            .enable_all()
            .on_thread_start(lower_priority)
            .build()?;
        Ok(Background {
            runtime: Some(runtime),
        })
    }

    /// Runs a call of `tenant` on the first lane until it has computed for [`QUANTUM`], then
    /// here; a tenant one of whose calls computed for [`HEAVY_AFTER`] starts here for
    /// [`HEAVY_FOR`]. `cpu` times the call and holds it to its install's share, on either
    /// lane; what it counted comes back with the result.
    pub async fn run<T: Send + 'static>(
        &self,
        tenants: &Arc<TenantSlots>,
        tenant: &str,
        mut cpu: CallCpu,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Result<(T, CpuUse), CallError> {
        let mut work: Pin<Box<dyn Future<Output = T> + Send>> = Box::pin(work);
        let Some(runtime) = &self.runtime else {
            let result = std::future::poll_fn(|cx| cpu.poll(&mut work, cx)).await;
            return Ok((result, cpu.used));
        };
        if !tenants.is_heavy(tenant) {
            let first_lane = std::future::poll_fn(|cx| match cpu.poll(&mut work, cx) {
                Poll::Ready(result) => Poll::Ready(Some(result)),
                Poll::Pending if cpu.used.computed >= QUANTUM => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            })
            .await;
            if let Some(result) = first_lane {
                return Ok((result, cpu.used));
            }
        }
        // In the background the call's time goes on counting: once it has computed for
        // `HEAVY_AFTER`, it has shown what it is, and its tenant's next calls start here.
        let tenants = tenants.clone();
        let tenant = tenant.to_owned();
        let mut marked = false;
        let counted = std::future::poll_fn(move |cx| {
            let polled = cpu.poll(&mut work, cx);
            let computed = cpu.used.computed;
            if !marked && computed >= HEAVY_AFTER {
                marked = true;
                if tenants.mark_heavy(&tenant) {
                    tracing::debug!(
                        tenant,
                        computed_us = computed.as_micros(),
                        "a call computed for long; the tenant's calls start on the background lane for the next 10 s"
                    );
                }
            }
            polled.map(|result| (result, cpu.used))
        });
        in_background(runtime, Box::pin(counted)).await
    }
}

/// Runs the rest of `work` on the background lane.
async fn in_background<T: Send + 'static>(
    runtime: &tokio::runtime::Runtime,
    work: Pin<Box<dyn Future<Output = T> + Send>>,
) -> Result<T, CallError> {
    let task = runtime.spawn(work);
    // A caller that gives up (its request was dropped) ends the call in the background too.
    let _abort = AbortOnDrop(task.abort_handle());
    task.await
        .map_err(|e| CallError::Internal(format!("the background lane lost the call: {e}")))
}

struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        // Dropping a runtime may happen inside another runtime; this never blocks.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Gives the calling thread the lowest scheduling priority: Linux's `SCHED_IDLE` policy, under
/// which a thread runs only on a core no other thread wants, and a normal thread that wakes up
/// takes the core from it at once (a niced thread would keep it until its time slice ends,
/// milliseconds later). It still gets a sliver of a busy core, so its calls meet their
/// deadlines. Where the policy cannot be set, nice 19.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: both calls take plain values and a pointer to a local that outlives the call; on
    // Linux, pid 0 names the calling thread.
    #[allow(unsafe_code)]
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        if libc::sched_setscheduler(0, libc::SCHED_IDLE, &raw const param) != 0 {
            libc::setpriority(libc::PRIO_PROCESS, 0, 19);
        }
    }
}

/// Makes the calling thread a batch thread at nice 19: Linux's `SCHED_BATCH`, whose threads
/// never preempt another on waking, at the lowest weight of the normal policy (it keeps a core
/// it runs on until its time slice ends). Where the policy cannot be set, nice 19 alone.
fn batch_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: both calls take plain values and a pointer to a local that outlives the call; on
    // Linux, pid 0 names the calling thread.
    #[allow(unsafe_code)]
    unsafe {
        let param = libc::sched_param { sched_priority: 0 };
        libc::sched_setscheduler(0, libc::SCHED_BATCH, &raw const param);
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::thread_cpu_time;

    #[test]
    fn the_reaper_drops_on_its_own_thread() {
        struct Noted(std::sync::mpsc::Sender<String>);
        impl Drop for Noted {
            fn drop(&mut self) {
                let thread = std::thread::current().name().unwrap_or("").to_owned();
                let _ = self.0.send(thread);
            }
        }
        let reaper = Reaper::start().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        reaper.drop_later(Noted(tx), None);
        let thread = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(thread, "atrium-reaper");
    }

    #[test]
    fn the_reaper_charges_what_a_drop_takes_to_the_install_and_the_tenant() {
        // Spends 20 ms of its thread's CPU time being dropped, as giving back a grown memory does.
        struct Costly;
        impl Drop for Costly {
            fn drop(&mut self) {
                let until = thread_cpu_time() + Duration::from_millis(20);
                while thread_cpu_time() < until {
                    std::hint::spin_loop();
                }
            }
        }
        let reaper = Reaper::start().unwrap();
        let account = CpuAccount {
            install: Arc::default(),
            install_cores: 0.1,
            tenant: Some((Arc::default(), 0.1)),
        };
        reaper.drop_later(Costly, Some(account.clone()));
        let waited = Instant::now();
        while reaper.drops() == 0 {
            assert!(
                waited.elapsed() < Duration::from_secs(30),
                "the reaper did not drop"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // 20 ms at a tenth of a core are 200 ms of debt, in both accounts; a call charged next
        // sleeps for it.
        let soon = Instant::now() + Duration::from_millis(100);
        assert!(!account.install.is_settled(soon));
        let (tenant, _) = account.tenant.as_ref().unwrap();
        assert!(!tenant.is_settled(soon));
        assert!(account.charge(Duration::ZERO, Instant::now()).is_some());
    }

    #[test]
    fn a_tenant_holds_at_most_its_share_and_gets_slots_back() {
        let slots = Arc::new(TenantSlots::default());
        let a1 = slots.take("a", 2).unwrap();
        let _a2 = slots.take("a", 2).unwrap();
        let err = slots.take("a", 2).err().unwrap();
        assert!(
            matches!(&err, CallError::Capacity(m) if m.contains("tenant `a` has 2 calls running")),
            "{err:?}"
        );
        // Another tenant is not held back.
        let _b = slots.take("b", 2).unwrap();
        drop(a1);
        assert_eq!(slots.held("a"), 1);
        let _a3 = slots.take("a", 2).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_short_call_stays_on_the_first_lane_and_a_long_one_moves_with_its_tenant() {
        let background = Background::start(1).unwrap();
        let tenants = Arc::new(TenantSlots::default());
        let lane = || std::thread::current().name().unwrap_or("").to_owned();
        let cpu = |tenant: &str| {
            let account = CpuAccount {
                install: tenants.share(tenant, "app"),
                install_cores: 4.0,
                tenant: None,
            };
            CallCpu::new(account, HEAVY_FOR)
        };
        let short = background
            .run(&tenants, "t", cpu("t"), async move { lane() })
            .await
            .unwrap()
            .0;
        assert_ne!(short, "atrium-background");
        assert!(!tenants.is_heavy("t"));
        // Computes for `ms` milliseconds of its thread's CPU time (however busy the machine),
        // one at a time, yielding after each as a guest does at each tick.
        let compute = move |ms: u32| async move {
            for _ in 0..ms {
                let until = thread_cpu_time() + Duration::from_millis(1);
                while thread_cpu_time() < until {
                    std::hint::spin_loop();
                }
                tokio::task::yield_now().await;
            }
            lane()
        };
        // A call that computes past its quantum moves, but two milliseconds in all (as much
        // as the kernel was seen to charge a trivial call) do not mark its tenant.
        let moved = background
            .run(&tenants, "m", cpu("m"), compute(2))
            .await
            .unwrap()
            .0;
        assert_eq!(moved, "atrium-background");
        assert!(!tenants.is_heavy("m"));
        let long = background
            .run(&tenants, "t", cpu("t"), compute(20))
            .await
            .unwrap()
            .0;
        assert_eq!(long, "atrium-background");
        // Time off the core is not computing: a call whose thread waits (here it sleeps, as a
        // preempted thread would) for longer than a quantum stays on the first lane.
        let waited = background
            .run(&tenants, "w", cpu("w"), async move {
                std::thread::sleep(QUANTUM * 4);
                tokio::task::yield_now().await;
                std::thread::sleep(QUANTUM * 4);
                lane()
            })
            .await
            .unwrap()
            .0;
        assert_ne!(waited, "atrium-background");
        assert!(!tenants.is_heavy("w"));
        // The tenant's next calls start in the background, another tenant's do not.
        assert!(tenants.is_heavy("t"));
        let next = background
            .run(&tenants, "t", cpu("t"), async move { lane() })
            .await
            .unwrap()
            .0;
        assert_eq!(next, "atrium-background");
        let other = background
            .run(&tenants, "u", cpu("u"), async move { lane() })
            .await
            .unwrap()
            .0;
        assert_ne!(other, "atrium-background");
    }
}

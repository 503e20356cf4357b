//! The work a host runs beside requests, in one shape.
//!
//! Every background job (the change feed's poller, the metering writer, the batch runner,
//! named schedules, retrieval upkeep, the queue-delay probe, and the dispatchers to come)
//! implements [`Job`]: a name and `run(stop)`. The host starts them from one list with
//! [`Jobs::start`] and stops them with one call, [`Jobs::stop`], which signals each job in the
//! reverse order of its start and waits for it before signalling the next: a job stops before
//! the jobs started ahead of it, which it may rely on (the batch runner before the metering
//! writer that stores its usage, everything before the change feed that keeps caches honest).
//!
//! Failures are reported one way. A job that cannot go on returns a [`JobError`]; a job that
//! fails one round and carries on calls [`Stop::report`]. Both log with the job's name in the
//! `job` field and count in [`Jobs::failures`], so an operator reads every job's trouble the
//! same way. A job that panics is reported as failed too; the host carries on.
//!
//! ```
//! use atrium_jobs::{Job, JobError, Jobs, Stop};
//!
//! struct Ticker;
//!
//! #[async_trait::async_trait]
//! impl Job for Ticker {
//!     fn name(&self) -> &'static str {
//!         "ticker"
//!     }
//!
//!     async fn run(self: Box<Self>, mut stop: Stop) -> Result<(), JobError> {
//!         loop {
//!             tokio::select! {
//!                 () = stop.requested() => return Ok(()),
//!                 () = tokio::time::sleep(std::time::Duration::from_millis(10)) => {}
//!             }
//!         }
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let jobs = Jobs::new();
//! jobs.start(Box::new(Ticker));
//! jobs.stop(std::time::Duration::from_secs(5)).await;
//! assert_eq!(jobs.failures("ticker"), 0);
//! # });
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A job the host runs beside requests.
#[async_trait]
pub trait Job: Send + 'static {
    /// The job's name, in logs and in [`Jobs::failures`] (`changes`, `metering`, ...).
    fn name(&self) -> &'static str;

    /// Runs until `stop` is requested (then returns soon, having finished or handed back what
    /// it had in hand), or until it cannot go on (an error).
    async fn run(self: Box<Self>, stop: Stop) -> Result<(), JobError>;
}

/// Why a job could not go on.
#[derive(Debug)]
pub struct JobError(String);

impl JobError {
    /// An error with this message.
    pub fn new(message: impl fmt::Display) -> Self {
        JobError(message.to_string())
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JobError {}

/// What a running job holds: the stop signal, and where it reports a failed round.
#[derive(Clone)]
pub struct Stop {
    name: &'static str,
    signal: watch::Receiver<bool>,
    failures: Failures,
}

impl Stop {
    /// Completes once the job is asked to stop (at once if it already was).
    pub async fn requested(&mut self) {
        // An error means the sender is gone, which asks for a stop as well.
        let _ = self.signal.wait_for(|stop| *stop).await;
    }

    /// Whether the job has been asked to stop.
    #[must_use]
    pub fn is_requested(&self) -> bool {
        *self.signal.borrow()
    }

    /// The signal as a watch receiver, for code that takes one.
    #[must_use]
    pub fn receiver(&self) -> watch::Receiver<bool> {
        self.signal.clone()
    }

    /// Reports a round that failed (`what` says which step), the job carrying on: logged as a
    /// warning with the job's name and counted.
    pub fn report(&self, what: &str, error: &dyn fmt::Display) {
        self.failures.count(self.name);
        tracing::warn!(job = self.name, error = %error, "{what}");
    }

    /// The job's name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// Failures per job.
#[derive(Clone, Default)]
struct Failures(Arc<Mutex<BTreeMap<&'static str, u64>>>);

impl Failures {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<&'static str, u64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn count(&self, name: &'static str) {
        *self.lock().entry(name).or_default() += 1;
    }
}

struct Running {
    name: &'static str,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// The jobs a host runs: started one by one, stopped together in reverse order.
#[derive(Clone, Default)]
pub struct Jobs {
    running: Arc<Mutex<Vec<Running>>>,
    failures: Failures,
}

impl fmt::Debug for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jobs")
            .field("running", &self.names())
            .finish()
    }
}

impl Jobs {
    /// No jobs yet.
    #[must_use]
    pub fn new() -> Self {
        Jobs::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `job` on the current Tokio runtime.
    pub fn start(&self, job: Box<dyn Job>) {
        let name = job.name();
        let (stop, signal) = watch::channel(false);
        let failures = self.failures.clone();
        let handle = Stop {
            name,
            signal,
            failures: failures.clone(),
        };
        let task = tokio::spawn(async move {
            tracing::debug!(job = name, "job started");
            match job.run(handle).await {
                Ok(()) => tracing::debug!(job = name, "job ended"),
                Err(error) => {
                    failures.count(name);
                    tracing::error!(job = name, %error, "the job stopped on an error");
                }
            }
        });
        self.lock().push(Running { name, stop, task });
    }

    /// Starts every job of `list`, in order.
    pub fn start_all(&self, list: impl IntoIterator<Item = Box<dyn Job>>) {
        for job in list {
            self.start(job);
        }
    }

    /// The names of the jobs started and not yet stopped, in the order they started.
    #[must_use]
    pub fn names(&self) -> Vec<&'static str> {
        self.lock().iter().map(|r| r.name).collect()
    }

    /// How many failures job `name` reported (rounds and its end), since the host started.
    #[must_use]
    pub fn failures(&self, name: &str) -> u64 {
        self.failures.lock().get(name).copied().unwrap_or(0)
    }

    /// Stops every job, the last started first: signals it, waits for it to end (at most
    /// `grace`, after which it is aborted and reported), then goes on to the next. Jobs
    /// started while this runs are stopped too.
    pub async fn stop(&self, grace: Duration) {
        loop {
            let Some(mut running) = self.lock().pop() else {
                return;
            };
            let name = running.name;
            let _ = running.stop.send(true);
            match tokio::time::timeout(grace, &mut running.task).await {
                Ok(Ok(())) => tracing::info!(job = name, "job stopped"),
                Ok(Err(e)) => {
                    self.failures.count(name);
                    tracing::error!(job = name, error = %e, "the job panicked");
                }
                Err(_) => {
                    running.task.abort();
                    self.failures.count(name);
                    tracing::error!(
                        job = name,
                        grace_ms = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX),
                        "the job did not stop in time and was aborted"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records when it starts and stops into a shared log; fails on request.
    struct Probe {
        name: &'static str,
        log: Arc<Mutex<Vec<String>>>,
        ignore_stop: bool,
        fail_rounds: u32,
        end_with: Option<&'static str>,
    }

    fn probe(name: &'static str, log: &Arc<Mutex<Vec<String>>>) -> Probe {
        Probe {
            name,
            log: log.clone(),
            ignore_stop: false,
            fail_rounds: 0,
            end_with: None,
        }
    }

    #[async_trait]
    impl Job for Probe {
        fn name(&self) -> &'static str {
            self.name
        }

        async fn run(self: Box<Self>, mut stop: Stop) -> Result<(), JobError> {
            for _ in 0..self.fail_rounds {
                stop.report("a round failed", &"the database is away");
            }
            if let Some(error) = self.end_with {
                return Err(JobError::new(error));
            }
            if self.ignore_stop {
                std::future::pending::<()>().await;
            }
            stop.requested().await;
            assert!(stop.is_requested());
            self.log
                .lock()
                .unwrap()
                .push(format!("{} stopped", self.name));
            Ok(())
        }
    }

    #[tokio::test]
    async fn jobs_stop_in_reverse_order_each_after_the_one_started_after_it() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let jobs = Jobs::new();
        jobs.start_all([
            Box::new(probe("changes", &log)) as Box<dyn Job>,
            Box::new(probe("metering", &log)),
            Box::new(probe("batches", &log)),
        ]);
        assert_eq!(jobs.names(), ["changes", "metering", "batches"]);
        jobs.stop(Duration::from_secs(5)).await;
        assert_eq!(
            *log.lock().unwrap(),
            ["batches stopped", "metering stopped", "changes stopped"]
        );
        assert!(jobs.names().is_empty());
        // Stopping again does nothing.
        jobs.stop(Duration::from_secs(5)).await;
    }

    #[tokio::test]
    async fn failures_are_counted_per_job_whether_a_round_or_the_end() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let jobs = Jobs::new();
        jobs.start(Box::new(Probe {
            fail_rounds: 3,
            ..probe("upkeep", &log)
        }));
        jobs.start(Box::new(Probe {
            end_with: Some("cannot open the feed"),
            ..probe("changes", &log)
        }));
        jobs.stop(Duration::from_secs(5)).await;
        assert_eq!(jobs.failures("upkeep"), 3);
        assert_eq!(jobs.failures("changes"), 1);
        assert_eq!(jobs.failures("batches"), 0);
    }

    #[tokio::test]
    async fn a_job_that_ignores_the_stop_is_aborted_after_the_grace_and_the_rest_still_stop() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let jobs = Jobs::new();
        jobs.start(Box::new(probe("metering", &log)));
        jobs.start(Box::new(Probe {
            ignore_stop: true,
            ..probe("stuck", &log)
        }));
        jobs.stop(Duration::from_millis(50)).await;
        assert_eq!(jobs.failures("stuck"), 1);
        assert_eq!(*log.lock().unwrap(), ["metering stopped"]);
    }
}

//! The host's background jobs, in one list: what [`crate::serve`] starts beside the requests
//! and stops after them (`atrium_jobs`: a name and `run(stop)` each, stopped in the reverse
//! order of their start).
//!
//! | job | crate | what it does |
//! |---|---|---|
//! | `metering` | store | stores usage records off the request path; starts with the [`HostState`], since every answered request records through it, so it stops last and stores what the others recorded |
//! | `changes` | store | polls the change feed that keeps every cache honest |
//! | `queue-delay` | server | measures how late the runtime polls a task, for load shedding |
//! | `batches` | server | runs batch items |
//! | `schedules`, `room-listener`, `heartbeats` | platform | the capabilities' jobs, listed by `atrium_platform::Platform::jobs`: the apps' named schedules and the agents' heartbeats and vision phases, claimed in the database; on PostgreSQL, the posts of every host (`LISTEN`) for this host's room streams |
//! | `upkeep` | retrieval | compacts and prunes retrieval tables, probes the store in an outage |

use std::sync::Arc;
use std::time::Duration;

use atrium_jobs::{Job, JobError, Stop};

use crate::HostState;
use crate::overload::Limiter;

/// How long a job may take to stop on shutdown before it is aborted.
pub const JOB_GRACE: Duration = Duration::from_secs(30);

/// The jobs [`crate::serve`] starts, in order (the metering writer is already running).
pub(crate) fn background_jobs(state: &HostState) -> Vec<Box<dyn Job>> {
    let mut jobs: Vec<Box<dyn Job>> = vec![
        Box::new(atrium_store::ChangeFeed(state.store.clone())),
        Box::new(QueueDelayProbe(state.limiter.clone())),
        Box::new(crate::batches::Runner(state.clone())),
    ];
    if let Some(platform) = &state.platform {
        jobs.extend(platform.jobs());
    }
    if let Some(retrieval) = &state.retrieval {
        jobs.push(Box::new(atrium_retrieval::Upkeep(retrieval.clone())));
    }
    jobs
}

/// The queue-delay probe ([`Limiter::probe_queue_delay`]) as a job named `queue-delay`.
struct QueueDelayProbe(Arc<Limiter>);

#[async_trait::async_trait]
impl Job for QueueDelayProbe {
    fn name(&self) -> &'static str {
        "queue-delay"
    }

    async fn run(self: Box<Self>, stop: Stop) -> Result<(), JobError> {
        self.0.probe_queue_delay(stop.receiver()).await;
        Ok(())
    }
}

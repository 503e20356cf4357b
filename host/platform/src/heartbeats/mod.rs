//! Heartbeats: the background routines of an install's agents (`agents[].heartbeats[]`),
//! run by the heartbeat scheduler (docs/platform.md, "Heartbeats").
//!
//! - [`schedule`]: when a heartbeat is due (schedule types, zones, daylight saving, offsets,
//!   active hours, cooldown), as pure functions of a time.
//! - [`Scheduler`]: each tick finds the due rows, skips silently those that active hours or
//!   cooldown hold back (moving them to their next time), claims the others in the database
//!   (one host runs each due run) and runs them ([`run`]): the pre-filter without a model call,
//!   then, when it found records or `invoke_always` is set, the agent in the agent runner.
//!   The same tick runs the visions' due phases ([`crate::visions`]) and marks runs whose
//!   host stopped as lost.
//! - [`reply`]: what a reply asks for (`HEARTBEAT_OK`, `<escalate-to-vision/>`).

mod infer;
mod prefilter;
pub mod reply;
mod run;
pub mod schedule;

use std::sync::Arc;
use std::time::Duration;

use atrium_jobs::{Job, JobError, Stop};
use atrium_manifest::{Heartbeat, HeartbeatSchedule, Manifest};
use atrium_store::{DueHeartbeat, HeartbeatClaim, HeartbeatDecl, HeartbeatRef, InstallKey};
use jiff::Timestamp;
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::serving::{ServeError, Serving};
pub use run::{RunSummary, Trigger};
pub use schedule::{Routine, Schedule};

/// The scheduler's tick by default (the specification's 15 seconds).
pub const DEFAULT_TICK: Duration = Duration::from_secs(15);
/// How long a claimed run may stay `running` before it counts as lost (its host stopped):
/// longer than the longest run a tenant may allow (900 s) with room to spare.
pub const DEFAULT_LOST_AFTER: Duration = Duration::from_secs(20 * 60);
/// Runs one host runs at once by default.
pub const DEFAULT_CONCURRENT_RUNS: usize = 16;
/// The most due rows one tick reads.
pub const DUE_PER_TICK: i64 = 1_000;

/// How the scheduler runs.
#[derive(Debug, Clone)]
pub struct HeartbeatsConfig {
    /// The time between ticks (`ATRIUM_HEARTBEAT_TICK_MS` in the host).
    pub tick: Duration,
    /// When a run still `running` counts as lost.
    pub lost_after: Duration,
    /// Runs at once on this host.
    pub concurrent_runs: usize,
    /// The time between a vision's cycles ([`crate::visions::DEFAULT_CYCLE_PAUSE`]).
    pub vision_cycle_pause: Duration,
}

impl Default for HeartbeatsConfig {
    fn default() -> Self {
        HeartbeatsConfig {
            tick: DEFAULT_TICK,
            lost_after: DEFAULT_LOST_AFTER,
            concurrent_runs: DEFAULT_CONCURRENT_RUNS,
            vision_cycle_pause: crate::visions::DEFAULT_CYCLE_PAUSE,
        }
    }
}

impl HeartbeatsConfig {
    /// The configuration the environment sets, the defaults for the rest:
    /// `ATRIUM_HEARTBEAT_TICK_MS` (100 to 3,600,000), `ATRIUM_HEARTBEAT_LOST_AFTER_MS` (1,000
    /// to 86,400,000), `ATRIUM_HEARTBEAT_CONCURRENCY` (1 to 1,024) and
    /// `ATRIUM_VISION_CYCLE_PAUSE_MS` (0 to 604,800,000). A value out of range is an error
    /// naming the variable.
    pub fn from_env(vars: &[(String, String)]) -> Result<HeartbeatsConfig, String> {
        let number = |name: &str, range| crate::env_number(vars, name, range);
        let mut config = HeartbeatsConfig::default();
        if let Some(ms) = number("ATRIUM_HEARTBEAT_TICK_MS", 100..=3_600_000)? {
            config.tick = Duration::from_millis(ms);
        }
        if let Some(ms) = number("ATRIUM_HEARTBEAT_LOST_AFTER_MS", 1_000..=86_400_000)? {
            config.lost_after = Duration::from_millis(ms);
        }
        if let Some(n) = number("ATRIUM_HEARTBEAT_CONCURRENCY", 1..=1_024)? {
            config.concurrent_runs = usize::try_from(n).unwrap_or(config.concurrent_runs);
        }
        if let Some(ms) = number("ATRIUM_VISION_CYCLE_PAUSE_MS", 0..=604_800_000)? {
            config.vision_cycle_pause = Duration::from_millis(ms);
        }
        Ok(config)
    }
}

/// A heartbeat's feed id (`hb_` and 20 hex digits): a hash of its install, agent and slug, so
/// it is the same on every host and across re-activations.
#[must_use]
pub fn feed_id(install: &InstallKey, agent: &str, slug: &str) -> String {
    let mut hash = Sha256::new();
    for part in [
        install.org_id.as_str(),
        &install.tenant_id,
        &install.app_slug,
        agent,
        slug,
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let digest = hash.finalize();
    let hex: String = digest.iter().take(10).map(|b| format!("{b:02x}")).collect();
    format!("hb_{hex}")
}

/// The text a schedule is compared by: the declared schedule, the zone of its times and the
/// active hours its next runs are held to (a row whose window changed gets its next run
/// computed anew, inside the new window).
fn schedule_key(heartbeat: &Heartbeat) -> String {
    match &heartbeat.active_hours {
        Some(h) => format!(
            "{:?}|{}|{}-{}",
            heartbeat.schedule, h.timezone, h.start, h.end
        ),
        None => format!("{:?}|", heartbeat.schedule),
    }
}

/// Sets heartbeat `feed_id` of `tenant` `active` (its failures reset) or `disabled`, as the
/// tenant's admin asked: the row, or why not (a heartbeat the tenant does not have is not
/// found; a retired one, which the installed version no longer declares, is a conflict).
pub async fn set_state(
    store: &atrium_store::Store,
    tenant: &atrium_store::TenantKey,
    feed_id: &str,
    enabled: bool,
) -> Result<atrium_store::HeartbeatRow, crate::Refusal> {
    let Some((_, row)) = store.heartbeat_by_id(tenant, feed_id).await? else {
        return Err(crate::Refusal::not_found(format!(
            "this tenant has no heartbeat `{feed_id}`"
        )));
    };
    if row.state == "retired" {
        return Err(crate::Refusal::conflict(
            "heartbeat_retired",
            format!(
                "heartbeat `{feed_id}` ({}/{}) is retired: the installed version no longer declares it",
                row.agent, row.slug
            ),
        ));
    }
    let to = if enabled { "active" } else { "disabled" };
    store
        .set_heartbeat_state(tenant, feed_id, to)
        .await?
        .ok_or_else(|| crate::Refusal::not_found(format!("heartbeat `{feed_id}` vanished")))
}

/// The heartbeat rows follow an install's version in its transaction (`registry::declared`).
pub(crate) struct FollowVersion;

impl crate::registry::declared::InstallHook for FollowVersion {
    fn rows(
        &self,
        install: &InstallKey,
        manifest: &Manifest,
        rows: &mut crate::registry::declared::DeclaredRows,
    ) {
        rows.heartbeats.extend(declared(install, manifest));
    }
}

/// The heartbeats `manifest`'s agents declare, as the rows of `install` sync to.
#[must_use]
pub fn declared(install: &InstallKey, manifest: &Manifest) -> Vec<HeartbeatDecl> {
    manifest
        .agents
        .iter()
        .flat_map(|agent| {
            agent.heartbeats.iter().map(|h| HeartbeatDecl {
                agent: agent.id.clone(),
                slug: h.slug.clone(),
                id: feed_id(install, &agent.id, &h.slug),
                schedule_key: schedule_key(h),
            })
        })
        .collect()
}

/// The declared heartbeat `slug` of `agent` in `manifest`.
#[must_use]
pub fn find<'m>(manifest: &'m Manifest, agent: &str, slug: &str) -> Option<&'m Heartbeat> {
    manifest
        .agents
        .iter()
        .find(|a| a.id == agent)?
        .heartbeats
        .iter()
        .find(|h| h.slug == slug)
}

/// The zone of a heartbeat's times: its active hours' zone (`user`: the tenant's), else the
/// tenant's, else UTC.
fn zone_of(heartbeat: &Heartbeat, tenant_zone: Option<&str>) -> jiff::tz::TimeZone {
    schedule::zone(
        heartbeat.active_hours.as_ref().map(|h| h.timezone.as_str()),
        tenant_zone,
    )
}

/// The resolved schedule of `heartbeat` of `agent` in `install`, held to its active hours (read
/// in `zone`, theirs): every next run it computes lies inside them.
fn schedule_of(
    install: &InstallKey,
    agent: &str,
    heartbeat: &Heartbeat,
    zone: jiff::tz::TimeZone,
) -> Schedule {
    Schedule::new(
        &heartbeat.schedule,
        Routine {
            org_id: &install.org_id,
            tenant_id: &install.tenant_id,
            app_slug: &install.app_slug,
            agent,
            slug: &heartbeat.slug,
        },
        zone,
    )
    .within(heartbeat.active_hours.as_ref())
}

/// A next run that never comes (a schedule that never fires), as stored: the last whole ms a
/// `Timestamp` holds, so that it reads back from the store's ms as it was written.
pub const NEVER: Timestamp = Timestamp::constant(253_402_207_200, 999_000_000);

fn next_run(schedule: &Schedule, after: Timestamp) -> Timestamp {
    schedule.next_after(after).unwrap_or(NEVER)
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Rows whose next run was computed for the first time (or again, after a change).
    pub scheduled: usize,
    /// Due runs skipped because active hours or cooldown held them back.
    pub skipped: usize,
    /// Runs this host claimed and ran.
    pub runs: Vec<RunSummary>,
    /// Due runs another host claimed first.
    pub lost_claims: usize,
    /// Runs marked lost (their host stopped).
    pub reaped: usize,
    /// Vision phases run.
    pub vision_phases: usize,
}

/// The heartbeat scheduler of one host.
#[derive(Clone)]
pub struct Scheduler {
    serving: Serving,
    config: HeartbeatsConfig,
    host: String,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("host", &self.host)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A name for this host in the runs' records: the process id and a random suffix.
#[must_use]
pub fn host_name() -> String {
    let mut suffix = [0u8; 4];
    let _ = getrandom::fill(&mut suffix);
    let hex: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
    format!("host-{}-{hex}", std::process::id())
}

impl Scheduler {
    /// The scheduler of `serving`'s host, named `host` in the runs it records.
    pub fn new(serving: Serving, config: HeartbeatsConfig, host: impl Into<String>) -> Self {
        let permits = Arc::new(Semaphore::new(config.concurrent_runs.max(1)));
        Scheduler {
            serving,
            config,
            host: host.into(),
            permits,
        }
    }

    /// The host's name in the runs.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The configuration.
    pub fn config(&self) -> &HeartbeatsConfig {
        &self.config
    }

    /// One tick at `now`: marks lost runs, moves or claims every due row, runs what it
    /// claimed (at most [`HeartbeatsConfig::concurrent_runs`] at once) and the visions' due
    /// phases, and answers when all of them ended.
    pub async fn tick(&self, now: Timestamp) -> Result<TickReport, ServeError> {
        let mut report = TickReport {
            reaped: self.reap(now).await?,
            ..TickReport::default()
        };
        let store = self.serving.registry().store().clone();
        let due = store.due_heartbeats(now, DUE_PER_TICK).await?;
        let mut runs = Vec::new();
        let mut manifests = ManifestCache::default();
        let mut zones = ZoneCache::default();
        for row in due {
            let Some(manifest) = manifests.get(&self.serving, &row).await else {
                continue;
            };
            let Some(heartbeat) = find(&manifest, &row.row.agent, &row.row.slug) else {
                // Declared no longer: the next sync retires it; nothing runs meanwhile.
                continue;
            };
            let zone = zones.get(&store, &row.install).await;
            let schedule = schedule_of(
                &row.install,
                &row.row.agent,
                heartbeat,
                zone_of(heartbeat, zone.as_deref()),
            );
            let heartbeat_ref = HeartbeatRef {
                install: &row.install,
                agent: &row.row.agent,
                slug: &row.row.slug,
            };
            let Some(due_at) = row.row.next_run_at else {
                // Not computed yet: the first time after `now`.
                if store
                    .advance_heartbeat(heartbeat_ref, None, next_run(&schedule, now))
                    .await?
                {
                    report.scheduled += 1;
                }
                continue;
            };
            let woken = row.row.woken_at == Some(due_at);
            let next = next_run(&schedule, now);
            if !self.allowed(heartbeat, &row, zone.as_deref(), now) {
                if store
                    .advance_heartbeat(heartbeat_ref, Some(due_at), next)
                    .await?
                {
                    report.skipped += 1;
                }
                continue;
            }
            let trigger = if woken {
                Trigger::Wake
            } else {
                Trigger::Schedule
            };
            // The claim and the run it wins go to their end in tasks of their own, whatever
            // becomes of the tick: a committed claim always gets its run and its recorded end,
            // never left `running` for the reaper.
            let (this, manifest) = (self.clone(), manifest.clone());
            let claimed = crate::cancel::to_the_end(async move {
                let won = this
                    .serving
                    .registry()
                    .store()
                    .claim_heartbeat_run(HeartbeatClaim {
                        heartbeat: HeartbeatRef {
                            install: &row.install,
                            agent: &row.row.agent,
                            slug: &row.row.slug,
                        },
                        due_at,
                        trigger: trigger.as_str(),
                        host: &this.host,
                        at: now,
                        advance: Some((Some(due_at), next)),
                    })
                    .await?;
                Ok::<_, atrium_store::StoreError>(won.then(|| {
                    tokio::spawn(async move {
                        let _permit = this.permits.clone().acquire_owned().await;
                        run::run(&this.serving, &row, &manifest, (due_at, now), trigger).await
                    })
                }))
            })
            .await?;
            match claimed {
                Some(run) => runs.push(run),
                None => report.lost_claims += 1,
            }
        }
        for run in runs {
            match run.await {
                Ok(summary) => report.runs.push(summary),
                Err(e) => tracing::error!(error = %e, "a heartbeat run panicked"),
            }
        }
        let timing = crate::visions::VisionTiming {
            lost_after: self.config.lost_after,
            cycle_pause: self.config.vision_cycle_pause,
        };
        report.vision_phases = crate::visions::run_due(&self.serving, timing, now).await?;
        Ok(report)
    }

    /// Whether active hours and cooldown let a due run of `heartbeat` happen at `now`; a wake
    /// by an event is held back like any run (its next time is then the schedule's).
    fn allowed(
        &self,
        heartbeat: &Heartbeat,
        row: &DueHeartbeat,
        tenant_zone: Option<&str>,
        now: Timestamp,
    ) -> bool {
        if let Some(hours) = &heartbeat.active_hours {
            let zone = schedule::zone(Some(&hours.timezone), tenant_zone);
            if !schedule::within_active_hours(hours, &zone, now) {
                return false;
            }
        }
        schedule::cooled_down(heartbeat.cooldown_seconds, row.row.last_run_at, now)
    }

    /// Marks the runs that stayed `running` longer than [`HeartbeatsConfig::lost_after`] as
    /// lost, each counted as a failure of its heartbeat once (whichever host gets there
    /// first).
    async fn reap(&self, now: Timestamp) -> Result<usize, ServeError> {
        let store = self.serving.registry().store();
        let lost_after = i64::try_from(self.config.lost_after.as_millis()).unwrap_or(i64::MAX);
        let cutoff = now
            .checked_sub(jiff::SignedDuration::from_millis(lost_after))
            .unwrap_or(Timestamp::MIN);
        let mut reaped = 0;
        for (install, run) in store.stale_heartbeat_runs(cutoff, 100).await? {
            let heartbeat = HeartbeatRef {
                install: &install,
                agent: &run.agent,
                slug: &run.slug,
            };
            let end = atrium_store::HeartbeatEnd {
                outcome: "lost",
                error: Some(&format!(
                    "the run on {} did not finish within {} s: its host stopped or it hung",
                    run.host,
                    self.config.lost_after.as_secs()
                )),
                records: None,
                reply: None,
                escalated: false,
                cost_micros: 0,
            };
            if store
                .finish_heartbeat_run(heartbeat, run.due_at, end)
                .await?
                .is_some()
            {
                tracing::warn!(install = %install, agent = %run.agent, heartbeat = %run.slug, host = %run.host, "a heartbeat run was lost");
                reaped += 1;
            }
        }
        Ok(reaped)
    }

    /// Runs `tenant`'s heartbeat `feed_id` now, whatever its schedule, active hours and
    /// cooldown say (a tenant admin asked): answers how it ended.
    pub async fn run_now(
        &self,
        tenant: &atrium_store::TenantKey,
        feed_id: &str,
    ) -> Result<RunSummary, crate::Refusal> {
        run::run_now(self, tenant, feed_id).await
    }
}

/// The manifests of the versions a tick meets, each read once.
#[derive(Default)]
struct ManifestCache(std::collections::HashMap<(String, String), Option<Arc<Manifest>>>);

impl ManifestCache {
    async fn get(&mut self, serving: &Serving, row: &DueHeartbeat) -> Option<Arc<Manifest>> {
        let key = (row.install.app_slug.clone(), row.version.clone());
        if let Some(found) = self.0.get(&key) {
            return found.clone();
        }
        let manifest = match serving.registry().manifest_of(&key.0, &key.1).await {
            Ok(m) => Some(Arc::new(m)),
            Err(e) => {
                tracing::warn!(app = %key.0, version = %key.1, error = %e, "a heartbeat's manifest could not be read");
                None
            }
        };
        self.0.insert(key, manifest.clone());
        manifest
    }
}

/// The tenants' time zones a tick meets, each read once.
#[derive(Default)]
struct ZoneCache(std::collections::HashMap<(String, String), Option<String>>);

impl ZoneCache {
    async fn get(&mut self, store: &atrium_store::Store, install: &InstallKey) -> Option<String> {
        let key = (install.org_id.clone(), install.tenant_id.clone());
        if let Some(zone) = self.0.get(&key) {
            return zone.clone();
        }
        let zone = store
            .tenant_settings(&install.tenant())
            .await
            .ok()
            .and_then(|s| s.time_zone);
        self.0.insert(key, zone.clone());
        zone
    }
}

/// The scheduler as the host's `heartbeats` job: a tick every [`HeartbeatsConfig::tick`],
/// each in its own task so that a slow run does not hold the next tick back (claims keep two
/// ticks from running one due run twice); on stop, the ticks under way finish.
pub struct Heartbeats(pub Scheduler);

#[async_trait::async_trait]
impl Job for Heartbeats {
    fn name(&self) -> &'static str {
        "heartbeats"
    }

    async fn run(self: Box<Self>, mut stop: Stop) -> Result<(), JobError> {
        let scheduler = self.0;
        let mut ticks = tokio::task::JoinSet::new();
        // The first tick one period after the start, so that a host that only starts does
        // not scan at once.
        let period = scheduler.config.tick;
        let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = interval.tick() => {}
                () = stop.requested() => break,
            }
            while let Some(done) = ticks.try_join_next() {
                if let Ok(Err(e)) = done {
                    stop.report("a heartbeat tick failed", &e);
                }
            }
            let scheduler = scheduler.clone();
            ticks.spawn(async move { scheduler.tick(Timestamp::now()).await.map(|_| ()) });
        }
        while let Some(done) = ticks.join_next().await {
            if let Ok(Err(e)) = done {
                stop.report("a heartbeat tick failed", &e);
            }
        }
        Ok(())
    }
}

/// Whether `schedule` is an interval schedule (for the listing's text).
#[must_use]
pub fn describe(schedule: &HeartbeatSchedule) -> String {
    match schedule {
        HeartbeatSchedule::Interval { interval_minutes } => {
            format!("every {interval_minutes} minutes")
        }
        HeartbeatSchedule::Daily { time_of_day } => format!("daily at {time_of_day}"),
        HeartbeatSchedule::Weekly {
            time_of_day,
            day_of_week,
        } => {
            let day = [
                "Monday",
                "Tuesday",
                "Wednesday",
                "Thursday",
                "Friday",
                "Saturday",
                "Sunday",
            ]
            .get(usize::from(*day_of_week))
            .copied()
            .unwrap_or("?");
            format!("weekly on {day} at {time_of_day}")
        }
        HeartbeatSchedule::Cron { cron_expression } => format!("cron `{cron_expression}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_vars as vars;

    #[test]
    fn the_environment_configures_the_scheduler_and_names_a_bad_variable() {
        let config = HeartbeatsConfig::from_env(&vars(&[
            ("ATRIUM_HEARTBEAT_TICK_MS", "250"),
            ("ATRIUM_HEARTBEAT_LOST_AFTER_MS", "60000"),
            ("ATRIUM_HEARTBEAT_CONCURRENCY", "4"),
            ("ATRIUM_VISION_CYCLE_PAUSE_MS", "0"),
        ]))
        .unwrap();
        assert_eq!(config.tick, Duration::from_millis(250));
        assert_eq!(config.lost_after, Duration::from_secs(60));
        assert_eq!(config.concurrent_runs, 4);
        assert_eq!(config.vision_cycle_pause, Duration::ZERO);
        let defaults = HeartbeatsConfig::from_env(&[]).unwrap();
        assert_eq!(defaults.tick, DEFAULT_TICK);
        for (name, value) in [
            ("ATRIUM_HEARTBEAT_TICK_MS", "10"),
            ("ATRIUM_HEARTBEAT_LOST_AFTER_MS", "soon"),
            ("ATRIUM_HEARTBEAT_CONCURRENCY", "0"),
        ] {
            let e = HeartbeatsConfig::from_env(&vars(&[(name, value)])).unwrap_err();
            assert!(e.contains(name), "{e}");
        }
    }

    #[test]
    fn a_feed_id_is_stable_and_names_one_heartbeat() {
        let install = InstallKey::new("org_1", "shop", "desk");
        let id = feed_id(&install, "lead", "overdue");
        assert_eq!(id, feed_id(&install, "lead", "overdue"));
        assert!(id.starts_with("hb_") && id.len() == 23, "{id}");
        assert_ne!(id, feed_id(&install, "lead", "nightly"));
        assert_ne!(
            id,
            feed_id(
                &InstallKey::new("org_1", "kiosk", "desk"),
                "lead",
                "overdue"
            )
        );
        // The parts are separated: moving a character between them changes the id.
        assert_ne!(
            feed_id(&InstallKey::new("org_1", "shop", "desk"), "lea", "doverdue"),
            id
        );
    }
}

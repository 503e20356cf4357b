//! The schedule scanner: every minute, each host looks at the active installs whose app
//! declares `lifecycle.schedules`, and for each schedule whose cron expression matches the
//! minute (in UTC) claims the run in the database and, when the claim is its own, calls the
//! app's `on_schedule`. With several hosts on one database a schedule fires once per due
//! minute; a minute during which no host runs is not caught up.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use atrium_jobs::{Job, JobError, Stop};
use atrium_manifest::Schedule;
use atrium_manifest::cron::CronExpr;
use atrium_runtime::Caller;
use atrium_store::ScheduleSlot;

use super::{ServeError, Serving};
use crate::registry::Actor;

/// A run this host made in one scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledRun {
    /// The organization.
    pub org_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The app.
    pub app_slug: String,
    /// The schedule.
    pub schedule: String,
    /// How it ended: none when it succeeded.
    pub error: Option<String>,
}

/// The schedule scanner as a [`Job`] named `schedules`: a scan a second after each minute
/// starts (docs/platform.md). Each host names itself with its process id and a random suffix
/// in the runs it claims.
pub struct Schedules(pub Serving);

#[async_trait::async_trait]
impl Job for Schedules {
    fn name(&self) -> &'static str {
        "schedules"
    }

    async fn run(self: Box<Self>, mut stop: Stop) -> Result<(), JobError> {
        let mut suffix = [0u8; 4];
        let _ = getrandom::fill(&mut suffix);
        let host = format!(
            "host-{}-{}",
            std::process::id(),
            suffix
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        );
        loop {
            let now = jiff::Timestamp::now();
            let into_minute = now.as_millisecond().rem_euclid(60_000);
            let wait = u64::try_from(61_000 - into_minute).unwrap_or(60_000);
            tokio::select! {
                () = tokio::time::sleep(std::time::Duration::from_millis(wait)) => {}
                () = stop.requested() => return Ok(()),
            }
            // A scan under way finishes (its runs are claimed in the database) before the stop.
            match self.0.scan_schedules(jiff::Timestamp::now(), &host).await {
                Ok(runs) if !runs.is_empty() => tracing::debug!(runs = runs.len(), "schedules ran"),
                Ok(_) => {}
                Err(e) => stop.report("the schedule scan failed", &e),
            }
        }
    }
}

impl Serving {
    /// Runs the schedules due at the minute of `now` that no other host has claimed; `host`
    /// names this host in the runs' records.
    pub async fn scan_schedules(
        &self,
        now: jiff::Timestamp,
        host: &str,
    ) -> Result<Vec<ScheduledRun>, ServeError> {
        let minute = now
            .round(
                jiff::TimestampRound::new()
                    .smallest(jiff::Unit::Minute)
                    .mode(jiff::RoundMode::Trunc),
            )
            .unwrap_or(now);
        let civil = minute.to_zoned(jiff::tz::TimeZone::UTC).datetime();
        let registry = self.registry().clone();
        let store = registry.store();
        let mut runs = Vec::new();
        // Installs share versions: each version's schedules are read and parsed once a scan.
        let mut schedules_of: HashMap<(String, String), Vec<Schedule>> = HashMap::new();
        for install in store.active_installs().await? {
            let key = (install.app_slug.clone(), install.version.clone());
            let schedules = match schedules_of.entry(key) {
                Entry::Occupied(known) => known.into_mut(),
                Entry::Vacant(slot) => {
                    let stored = store.version(&install.app_slug, &install.version).await?;
                    let declared = stored
                        .filter(|v| self.runs(v))
                        .and_then(|v| atrium_manifest::parse(&v.manifest_source).ok())
                        .map(|m| m.lifecycle.schedules)
                        .unwrap_or_default();
                    slot.insert(declared)
                }
            };
            for schedule in schedules.iter() {
                let Ok(cron) = CronExpr::parse(&schedule.cron) else {
                    continue;
                };
                if !cron.matches(civil) {
                    continue;
                }
                let slot = ScheduleSlot {
                    install: &install,
                    schedule: &schedule.name,
                    due_at: minute,
                };
                if !store.claim_schedule_run(slot, host).await? {
                    continue;
                }
                let tenant = Actor::host(install.tenant());
                let outcome = async {
                    let app = self
                        .app(&install.app_slug, &install.version)
                        .await
                        .map_err(|e| e.to_string())?;
                    let inv = self
                        .invocation(&tenant, &install, &app, Caller::Platform)
                        .await
                        .map_err(|e| e.to_string())?;
                    app.on_schedule(&inv, &schedule.name)
                        .await
                        .map_err(|e| e.to_string())
                }
                .await;
                let error = outcome.err();
                if let Some(e) = &error {
                    tracing::warn!(app = %install.app_slug, tenant = %install.tenant_id, schedule = %schedule.name, error = %e, "a schedule failed");
                }
                store.finish_schedule_run(slot, error.as_deref()).await?;
                runs.push(ScheduledRun {
                    org_id: install.org_id.clone(),
                    tenant_id: install.tenant_id.clone(),
                    app_slug: install.app_slug.clone(),
                    schedule: schedule.name.clone(),
                    error,
                });
            }
        }
        Ok(runs)
    }
}

//! Runs of the apps' named schedules, claimed in the database so that several hosts on one
//! database run each due minute once.

use jiff::Timestamp;
use sqlx::Row;

use crate::installs::{COLUMNS, install_from};
use crate::{Install, InstallKey, Result, Store, millis, now_millis, on_pool};

/// One run of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleRun {
    /// The schedule's name.
    pub schedule: String,
    /// The minute it was due.
    pub due_at: Timestamp,
    /// The host that ran it.
    pub host: String,
    /// `running`, `ok` or `failed`.
    pub outcome: String,
    /// Why it failed.
    pub error: Option<String>,
}

/// Which schedule of which install at which minute.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleSlot<'a> {
    /// The install.
    pub install: &'a Install,
    /// The schedule's name.
    pub schedule: &'a str,
    /// The minute it is due.
    pub due_at: Timestamp,
}

impl Store {
    /// Claims a due run for `host`: `true` when this call claimed it, `false` when another
    /// host (or an earlier scan) already did.
    pub async fn claim_schedule_run(&self, slot: ScheduleSlot<'_>, host: &str) -> Result<bool> {
        let i = slot.install;
        let now = now_millis();
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "INSERT INTO schedule_runs (org_id, tenant_id, app_slug, schedule, due_at, host, outcome, claimed_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'running', $7) \
                 ON CONFLICT (org_id, tenant_id, app_slug, schedule, due_at) DO NOTHING",
            )
            .bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug).bind(slot.schedule).bind(slot.due_at.as_millisecond()).bind(host).bind(now)
            .execute(pool).await?.rows_affected() == 1)
        })
    }

    /// Records how a claimed run ended.
    pub async fn finish_schedule_run(
        &self,
        slot: ScheduleSlot<'_>,
        error: Option<&str>,
    ) -> Result<()> {
        let i = slot.install;
        let now = now_millis();
        let outcome = if error.is_some() { "failed" } else { "ok" };
        on_pool!(self, pool => {
            sqlx::query(
                "UPDATE schedule_runs SET outcome = $1, error = $2, finished_at = $3 \
                 WHERE org_id = $4 AND tenant_id = $5 AND app_slug = $6 AND schedule = $7 AND due_at = $8",
            )
            .bind(outcome).bind(error).bind(now)
            .bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug).bind(slot.schedule).bind(slot.due_at.as_millisecond())
            .execute(pool).await?;
        });
        Ok(())
    }

    /// The schedule runs of an install, newest first, at most `limit`.
    pub async fn schedule_runs(
        &self,
        install: &InstallKey,
        limit: i64,
    ) -> Result<Vec<ScheduleRun>> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        on_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT schedule, due_at, host, outcome, error FROM schedule_runs \
                 WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 ORDER BY due_at DESC, schedule LIMIT $4",
            )
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(limit)
            .fetch_all(pool).await?;
            rows.iter()
                .map(|r| {
                    Ok(ScheduleRun {
                        schedule: r.try_get("schedule")?,
                        due_at: millis(r.try_get("due_at")?)?,
                        host: r.try_get("host")?,
                        outcome: r.try_get("outcome")?,
                        error: r.try_get("error")?,
                    })
                })
                .collect()
        })
    }

    /// Every active install, across tenants: what the schedule scanner looks at.
    pub async fn active_installs(&self) -> Result<Vec<Install>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM installs WHERE status = 'active' ORDER BY org_id, tenant_id, app_slug"
            ))
            .fetch_all(pool).await?
            .iter()
            .map(install_from)
            .collect()
        })
    }
}

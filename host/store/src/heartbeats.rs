//! Heartbeat rows and their runs: what the heartbeat scheduler reads and claims.
//!
//! A row is created at activation for each heartbeat of the version's agents
//! ([`sync_heartbeats`], inside the activation's or the upgrade's transaction) and kept with
//! its state afterwards. A due run is claimed by inserting into `heartbeat_runs` (its primary
//! key ends with the due time) in the transaction that moves the row's `next_run_at` on, only
//! if the row still holds the due time the host read: of several hosts, one runs it, and a
//! host that dies mid-run leaves the next run scheduled (its run is marked `lost` later).

use jiff::Timestamp;
use sqlx::Row;

use crate::{
    InstallKey, Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, opt_millis,
};

/// Consecutive failures after which a heartbeat is disabled.
pub const MAX_CONSECUTIVE_FAILURES: i64 = 5;

/// A heartbeat the installed version declares, for [`sync_heartbeats`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatDecl {
    /// The agent.
    pub agent: String,
    /// The heartbeat's slug.
    pub slug: String,
    /// Its feed id (stable: derived from the install, the agent and the slug).
    pub id: String,
    /// The declared schedule as text; when it differs from the stored one the next run is
    /// computed again.
    pub schedule_key: String,
}

/// A stored heartbeat row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRow {
    /// The feed id (none for a row only an event's wake created, before any activation
    /// synced it).
    pub id: Option<String>,
    /// The agent.
    pub agent: String,
    /// The heartbeat's slug.
    pub slug: String,
    /// `active`, `disabled` or `retired`.
    pub state: String,
    /// When it runs next; none: not computed yet.
    pub next_run_at: Option<Timestamp>,
    /// The schedule `next_run_at` was computed for.
    pub schedule_key: Option<String>,
    /// Failures since the last success.
    pub consecutive_failures: i64,
    /// The last run's start.
    pub last_run_at: Option<Timestamp>,
    /// The last run that ended without failure.
    pub last_ok_at: Option<Timestamp>,
    /// Why the last failed run failed (cleared by a success).
    pub last_error: Option<String>,
    /// The last wake by an event.
    pub woken_at: Option<Timestamp>,
    /// What woke it: `<emitter_app>/<event_name>`.
    pub woken_by: Option<String>,
}

/// A due row with its install's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueHeartbeat {
    /// The install.
    pub install: InstallKey,
    /// The installed version.
    pub version: String,
    /// The row.
    pub row: HeartbeatRow,
}

/// A heartbeat of an install.
#[derive(Debug, Clone, Copy)]
pub struct HeartbeatRef<'a> {
    /// The install.
    pub install: &'a InstallKey,
    /// The agent.
    pub agent: &'a str,
    /// The heartbeat's slug.
    pub slug: &'a str,
}

/// A run to claim.
#[derive(Debug, Clone, Copy)]
pub struct HeartbeatClaim<'a> {
    /// Which heartbeat.
    pub heartbeat: HeartbeatRef<'a>,
    /// When it was due: the run's key.
    pub due_at: Timestamp,
    /// `schedule`, `wake` or `run_now`.
    pub trigger: &'a str,
    /// The host claiming it.
    pub host: &'a str,
    /// When, by the claiming scheduler's clock: the run's start, its row's last run, and
    /// what its lost-after time counts from.
    pub at: Timestamp,
    /// For a scheduled run: the row must still hold `next_run_at` = `.0` (none: not computed),
    /// and it moves to `.1`.
    pub advance: Option<(Option<Timestamp>, Timestamp)>,
}

/// How a claimed run ended.
#[derive(Debug, Clone, Copy)]
pub struct HeartbeatEnd<'a> {
    /// `ok`, `suppressed`, `idle`, `failed` or `lost`.
    pub outcome: &'a str,
    /// Why it failed.
    pub error: Option<&'a str>,
    /// How many records the pre-filter found.
    pub records: Option<i64>,
    /// The agent's reply, when it was kept.
    pub reply: Option<&'a str>,
    /// Whether the reply escalated to the vision loop.
    pub escalated: bool,
    /// What the run's model calls cost, in micro-dollars.
    pub cost_micros: i64,
}

impl HeartbeatEnd<'_> {
    fn failed(&self) -> bool {
        matches!(self.outcome, "failed" | "lost")
    }
}

/// A stored run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRun {
    /// The agent.
    pub agent: String,
    /// The heartbeat.
    pub slug: String,
    /// When it was due.
    pub due_at: Timestamp,
    /// `schedule`, `wake` or `run_now`.
    pub trigger: String,
    /// The host that ran it.
    pub host: String,
    /// `running`, `ok`, `suppressed`, `idle`, `failed` or `lost`.
    pub outcome: String,
    /// How many records the pre-filter found.
    pub records: Option<i64>,
    /// Why it failed.
    pub error: Option<String>,
    /// The reply kept.
    pub reply: Option<String>,
    /// Whether it escalated to the vision loop.
    pub escalated: bool,
    /// Its model calls' cost, in micro-dollars.
    pub cost_micros: i64,
    /// When it was claimed.
    pub claimed_at: Timestamp,
    /// When it ended.
    pub finished_at: Option<Timestamp>,
}

const ROW_COLUMNS: &str = "h.id, h.agent, h.slug, h.state, h.next_run_at, h.schedule_key, \
     h.consecutive_failures, h.last_run_at, h.last_ok_at, h.last_error, h.woken_at, h.woken_by";

fn row_from<R: Row>(row: &R) -> Result<HeartbeatRow>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(HeartbeatRow {
        id: row.try_get("id")?,
        agent: row.try_get("agent")?,
        slug: row.try_get("slug")?,
        state: row.try_get("state")?,
        next_run_at: opt_millis(row.try_get("next_run_at")?)?,
        schedule_key: row.try_get("schedule_key")?,
        consecutive_failures: row.try_get("consecutive_failures")?,
        last_run_at: opt_millis(row.try_get("last_run_at")?)?,
        last_ok_at: opt_millis(row.try_get("last_ok_at")?)?,
        last_error: row.try_get("last_error")?,
        woken_at: opt_millis(row.try_get("woken_at")?)?,
        woken_by: row.try_get("woken_by")?,
    })
}

const RUN_COLUMNS: &str = "agent, slug, due_at, run_trigger, host, outcome, records, error, \
     reply, escalated, cost_micros, claimed_at, finished_at";

fn run_from<R: Row>(row: &R) -> Result<HeartbeatRun>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(HeartbeatRun {
        agent: row.try_get("agent")?,
        slug: row.try_get("slug")?,
        due_at: millis(row.try_get("due_at")?)?,
        trigger: row.try_get("run_trigger")?,
        host: row.try_get("host")?,
        outcome: row.try_get("outcome")?,
        records: row.try_get("records")?,
        error: row.try_get("error")?,
        reply: row.try_get("reply")?,
        escalated: row.try_get::<i64, _>("escalated")? != 0,
        cost_micros: row.try_get("cost_micros")?,
        claimed_at: millis(row.try_get("claimed_at")?)?,
        finished_at: opt_millis(row.try_get("finished_at")?)?,
    })
}

/// Brings the heartbeat rows of install `$install` in line with `$decls` inside transaction
/// `$tx`: a declared heartbeat gets a row (`active`) or keeps its row and state (a retired one
/// is active again; a changed schedule clears `next_run_at` so the scheduler computes it
/// anew); a row the version no longer declares is `retired`.
macro_rules! sync_heartbeats {
    ($tx:expr, $install:expr, $decls:expr, $now:expr) => {{
        let install: &$crate::InstallKey = $install;
        let decls: &[$crate::heartbeats::HeartbeatDecl] = $decls;
        let now: i64 = $now;
        for d in decls {
            sqlx::query(
                "INSERT INTO heartbeats (org_id, tenant_id, app_slug, agent, slug, id, state, \
                   schedule_key, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'active', $7, $8, $8) \
                 ON CONFLICT (org_id, tenant_id, app_slug, agent, slug) DO UPDATE SET \
                   id = COALESCE(heartbeats.id, excluded.id), \
                   state = CASE WHEN heartbeats.state = 'retired' THEN 'active' ELSE heartbeats.state END, \
                   next_run_at = CASE WHEN COALESCE(heartbeats.schedule_key, '') <> excluded.schedule_key \
                     AND heartbeats.woken_at IS NULL THEN NULL ELSE heartbeats.next_run_at END, \
                   schedule_key = excluded.schedule_key, updated_at = excluded.updated_at",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
            .bind(&d.agent).bind(&d.slug).bind(&d.id).bind(&d.schedule_key).bind(now)
            .execute(&mut *$tx).await?;
        }
        let rows = sqlx::query(
            "SELECT agent, slug FROM heartbeats WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND state <> 'retired'",
        )
        .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
        .fetch_all(&mut *$tx).await?;
        for row in &rows {
            let agent: String = sqlx::Row::try_get(row, "agent")?;
            let slug: String = sqlx::Row::try_get(row, "slug")?;
            if !decls.iter().any(|d| d.agent == agent && d.slug == slug) {
                sqlx::query(
                    "UPDATE heartbeats SET state = 'retired', updated_at = $1 \
                     WHERE org_id = $2 AND tenant_id = $3 AND app_slug = $4 AND agent = $5 AND slug = $6",
                )
                .bind(now).bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
                .bind(&agent).bind(&slug)
                .execute(&mut *$tx).await?;
            }
        }
    }};
}
pub(crate) use sync_heartbeats;

impl Store {
    /// The heartbeat rows of `install`, by agent and slug.
    pub async fn heartbeat_rows(&self, install: &InstallKey) -> Result<Vec<HeartbeatRow>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT {ROW_COLUMNS} FROM heartbeats h \
                 WHERE h.org_id = $1 AND h.tenant_id = $2 AND h.app_slug = $3 ORDER BY h.agent, h.slug"
            ))
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
            .fetch_all(pool).await?
            .iter().map(row_from).collect()
        })
    }

    /// The heartbeat with feed id `id` of `tenant`, with its app.
    pub async fn heartbeat_by_id(
        &self,
        tenant: &TenantKey,
        id: &str,
    ) -> Result<Option<(String, HeartbeatRow)>> {
        on_pool!(self, pool => {
            let row = sqlx::query(&format!(
                "SELECT h.app_slug, {ROW_COLUMNS} FROM heartbeats h \
                 WHERE h.org_id = $1 AND h.tenant_id = $2 AND h.id = $3"
            ))
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .fetch_optional(pool).await?;
            row.map(|r| Ok((r.try_get("app_slug")?, row_from(&r)?))).transpose()
        })
    }

    /// At most `limit` active rows of active installs whose next run is due at `now` (or not
    /// computed yet), those not computed yet first, then the most overdue, in the same order
    /// on both databases (SQLite sorts NULL first and PostgreSQL last, so the order says it).
    pub async fn due_heartbeats(&self, now: Timestamp, limit: i64) -> Result<Vec<DueHeartbeat>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT h.org_id, h.tenant_id, h.app_slug, i.version, {ROW_COLUMNS} FROM heartbeats h \
                 JOIN installs i ON i.org_id = h.org_id AND i.tenant_id = h.tenant_id AND i.app_slug = h.app_slug \
                 WHERE h.state = 'active' AND (h.next_run_at IS NULL OR h.next_run_at <= $1) AND i.status = 'active' \
                 ORDER BY (h.next_run_at IS NOT NULL), h.next_run_at, h.org_id, h.tenant_id, h.app_slug, h.agent, h.slug LIMIT $2"
            ))
            .bind(now.as_millisecond()).bind(limit)
            .fetch_all(pool).await?
            .iter()
            .map(|r| {
                Ok(DueHeartbeat {
                    install: InstallKey::new(
                        r.try_get::<String, _>("org_id")?,
                        r.try_get::<String, _>("tenant_id")?,
                        r.try_get::<String, _>("app_slug")?,
                    ),
                    version: r.try_get("version")?,
                    row: row_from(r)?,
                })
            })
            .collect()
        })
    }

    /// Moves a row's next run from `from` (none: not computed) to `to`, unless another host
    /// moved it first; `true` when this call moved it.
    pub async fn advance_heartbeat(
        &self,
        heartbeat: HeartbeatRef<'_>,
        from: Option<Timestamp>,
        to: Timestamp,
    ) -> Result<bool> {
        let i = heartbeat.install;
        let (from, to) = (from.map(|t| t.as_millisecond()), to.as_millisecond());
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "UPDATE heartbeats SET next_run_at = $1 WHERE org_id = $2 AND tenant_id = $3 \
                 AND app_slug = $4 AND agent = $5 AND slug = $6 AND COALESCE(next_run_at, -1) = $7",
            )
            .bind(to).bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug)
            .bind(heartbeat.agent).bind(heartbeat.slug).bind(from.unwrap_or(-1))
            .execute(pool).await?.rows_affected() == 1)
        })
    }

    /// Claims a run (see the module docs): `true` when this call claimed it.
    pub async fn claim_heartbeat_run(&self, claim: HeartbeatClaim<'_>) -> Result<bool> {
        let HeartbeatRef {
            install: i,
            agent,
            slug,
        } = claim.heartbeat;
        let now = claim.at.as_millisecond();
        let due_at = claim.due_at.as_millisecond();
        let advance = claim
            .advance
            .map(|(from, to)| (from.map(|t| t.as_millisecond()), to.as_millisecond()));
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let inserted = sqlx::query(
                "INSERT INTO heartbeat_runs (org_id, tenant_id, app_slug, agent, slug, due_at, run_trigger, \
                   host, outcome, claimed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9) \
                 ON CONFLICT (org_id, tenant_id, app_slug, agent, slug, due_at) DO NOTHING",
            )
            .bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug).bind(agent).bind(slug)
            .bind(due_at).bind(claim.trigger).bind(claim.host).bind(now)
            .execute(&mut *tx).await?.rows_affected() == 1;
            if !inserted {
                return Ok(false);
            }
            let moved = match advance {
                Some((from, to)) => sqlx::query(
                    "UPDATE heartbeats SET next_run_at = $1, last_run_at = $2, updated_at = $2 \
                     WHERE org_id = $3 AND tenant_id = $4 AND app_slug = $5 AND agent = $6 AND slug = $7 \
                     AND state = 'active' AND COALESCE(next_run_at, -1) = $8",
                )
                .bind(to).bind(now).bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug)
                .bind(agent).bind(slug).bind(from.unwrap_or(-1))
                .execute(&mut *tx).await?.rows_affected(),
                None => sqlx::query(
                    "UPDATE heartbeats SET last_run_at = $1, updated_at = $1 \
                     WHERE org_id = $2 AND tenant_id = $3 AND app_slug = $4 AND agent = $5 AND slug = $6",
                )
                .bind(now).bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug).bind(agent).bind(slug)
                .execute(&mut *tx).await?.rows_affected(),
            };
            if moved != 1 {
                // Another host moved the row on (and claimed under another due time), or the
                // row is no longer active: the insert is undone with the transaction.
                return Ok(false);
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Records how a claimed run ended and counts it on its row: a success resets the
    /// failures, a failure adds one, and the [`MAX_CONSECUTIVE_FAILURES`]th disables an
    /// active row. Answers the row after it, or none when the run had already ended (another
    /// host marked it lost).
    pub async fn finish_heartbeat_run(
        &self,
        heartbeat: HeartbeatRef<'_>,
        due_at: Timestamp,
        end: HeartbeatEnd<'_>,
    ) -> Result<Option<HeartbeatRow>> {
        let due_at = due_at.as_millisecond();
        let HeartbeatRef {
            install: i,
            agent,
            slug,
        } = heartbeat;
        let now = now_millis();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let ended = sqlx::query(
                "UPDATE heartbeat_runs SET outcome = $1, error = $2, records = $3, reply = $4, \
                   escalated = $5, cost_micros = $6, finished_at = $7 \
                 WHERE org_id = $8 AND tenant_id = $9 AND app_slug = $10 AND agent = $11 AND slug = $12 \
                   AND due_at = $13 AND outcome = 'running'",
            )
            .bind(end.outcome).bind(end.error).bind(end.records).bind(end.reply)
            .bind(i64::from(end.escalated)).bind(end.cost_micros).bind(now)
            .bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug).bind(agent).bind(slug).bind(due_at)
            .execute(&mut *tx).await?.rows_affected() == 1;
            if !ended {
                return Ok(None);
            }
            if end.failed() {
                sqlx::query(
                    "UPDATE heartbeats SET consecutive_failures = consecutive_failures + 1, last_error = $1, \
                       state = CASE WHEN state = 'active' AND consecutive_failures + 1 >= $2 THEN 'disabled' ELSE state END, \
                       updated_at = $3 \
                     WHERE org_id = $4 AND tenant_id = $5 AND app_slug = $6 AND agent = $7 AND slug = $8",
                )
                .bind(end.error).bind(MAX_CONSECUTIVE_FAILURES).bind(now)
                .bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug).bind(agent).bind(slug)
                .execute(&mut *tx).await?;
            } else {
                sqlx::query(
                    "UPDATE heartbeats SET consecutive_failures = 0, last_error = NULL, last_ok_at = $1, updated_at = $1 \
                     WHERE org_id = $2 AND tenant_id = $3 AND app_slug = $4 AND agent = $5 AND slug = $6",
                )
                .bind(now).bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug).bind(agent).bind(slug)
                .execute(&mut *tx).await?;
            }
            let row = sqlx::query(&format!(
                "SELECT {ROW_COLUMNS} FROM heartbeats h WHERE h.org_id = $1 AND h.tenant_id = $2 \
                 AND h.app_slug = $3 AND h.agent = $4 AND h.slug = $5"
            ))
            .bind(&i.org_id).bind(&i.tenant_id).bind(&i.app_slug).bind(agent).bind(slug)
            .fetch_optional(&mut *tx).await?;
            tx.commit().await?;
            row.as_ref().map(row_from).transpose()
        })
    }

    /// Runs still `running` that were claimed before `claimed_before`: their host
    /// stopped, or they outlived any run's limit. At most `limit`.
    pub async fn stale_heartbeat_runs(
        &self,
        claimed_before: Timestamp,
        limit: i64,
    ) -> Result<Vec<(InstallKey, HeartbeatRun)>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT org_id, tenant_id, app_slug, {RUN_COLUMNS} FROM heartbeat_runs \
                 WHERE outcome = 'running' AND claimed_at < $1 ORDER BY claimed_at LIMIT $2"
            ))
            .bind(claimed_before.as_millisecond()).bind(limit)
            .fetch_all(pool).await?
            .iter()
            .map(|r| {
                Ok((
                    InstallKey::new(
                        r.try_get::<String, _>("org_id")?,
                        r.try_get::<String, _>("tenant_id")?,
                        r.try_get::<String, _>("app_slug")?,
                    ),
                    run_from(r)?,
                ))
            })
            .collect()
        })
    }

    /// The runs of `install`'s heartbeats, newest first, at most `limit`.
    pub async fn heartbeat_runs(
        &self,
        install: &InstallKey,
        limit: i64,
    ) -> Result<Vec<HeartbeatRun>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT {RUN_COLUMNS} FROM heartbeat_runs WHERE org_id = $1 AND tenant_id = $2 \
                 AND app_slug = $3 ORDER BY claimed_at DESC, due_at DESC LIMIT $4"
            ))
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug).bind(limit)
            .fetch_all(pool).await?
            .iter().map(run_from).collect()
        })
    }

    /// Sets the state of `tenant`'s heartbeat `id` to `active` or `disabled` (enabling resets
    /// the failures); a retired row is not changed. Answers the row after it.
    pub async fn set_heartbeat_state(
        &self,
        tenant: &TenantKey,
        id: &str,
        state: &str,
    ) -> Result<Option<HeartbeatRow>> {
        if !matches!(state, "active" | "disabled") {
            return Err(StoreError::Internal(format!(
                "`{state}` is not a state a heartbeat is set to"
            )));
        }
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "UPDATE heartbeats SET state = $1, \
                   consecutive_failures = CASE WHEN $1 = 'active' THEN 0 ELSE consecutive_failures END, \
                   updated_at = $2 WHERE org_id = $3 AND tenant_id = $4 AND id = $5 AND state <> 'retired'",
            )
            .bind(state).bind(now).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .execute(pool).await?;
        });
        Ok(self.heartbeat_by_id(tenant, id).await?.map(|(_, row)| row))
    }
}

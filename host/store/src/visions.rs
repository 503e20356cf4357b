//! Visions: an agent's long goal and the phases run for it (docs/platform.md, "Visions").
//! The definition (text, criteria, autonomy, budgets) is the installed manifest's; the store
//! keeps where the loop stands and what each phase produced.

use jiff::Timestamp;
use sqlx::Row;

use crate::{
    InstallKey, Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, opt_millis,
    random_hex,
};

/// A stored vision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vision {
    /// `vis_...`.
    pub id: String,
    /// The app.
    pub app_slug: String,
    /// The agent pursuing it.
    pub agent: String,
    /// The project the tenant selected.
    pub project: String,
    /// `running`, `awaiting_approval`, `done` or `stopped`.
    pub state: String,
    /// The phase that runs next (or waits): `assess`, `debate`, `plan`, `execute`, `review`.
    pub phase: String,
    /// The cycle, from 1.
    pub cycle: i64,
    /// Goals (cycles) completed.
    pub goals_done: i64,
    /// What its phases cost, in micro-dollars.
    pub cost_micros: i64,
    /// When the next phase is due; none while it waits for approval or has ended.
    pub next_action_at: Option<Timestamp>,
    /// Why it stopped.
    pub stop_reason: Option<String>,
    /// Creation.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

/// A phase a vision ran, or a decision on its plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VisionPhase {
    /// Its place, from 1.
    pub seq: i64,
    /// The cycle.
    pub cycle: i64,
    /// `assess`, `debate`, `plan`, `execute`, `review`, or `approval` for a decision.
    pub phase: String,
    /// `ok`, `failed`, `approved` or `rejected`.
    pub outcome: String,
    /// What the phase produced (the agent's answer, or the error; a decision's note).
    pub output: String,
    /// Its cost, in micro-dollars.
    pub cost_micros: i64,
    /// The user who decided, for a decision.
    pub decided_by: Option<String>,
    /// When it was stored.
    pub created_at: Timestamp,
}

/// Where a vision moves after a phase.
#[derive(Debug, Clone, Copy)]
pub struct VisionStep<'a> {
    /// The phase record to append.
    pub record: NewVisionPhase<'a>,
    /// The state after it.
    pub state: &'a str,
    /// The phase after it.
    pub phase: &'a str,
    /// The cycle after it.
    pub cycle: i64,
    /// Goals to add.
    pub goals_added: i64,
    /// When the next phase is due.
    pub next_action_at: Option<Timestamp>,
    /// Why it stopped.
    pub stop_reason: Option<&'a str>,
}

/// A phase record to append.
#[derive(Debug, Clone, Copy)]
pub struct NewVisionPhase<'a> {
    /// The cycle.
    pub cycle: i64,
    /// The phase.
    pub phase: &'a str,
    /// Its outcome.
    pub outcome: &'a str,
    /// Its output.
    pub output: &'a str,
    /// Its cost, in micro-dollars.
    pub cost_micros: i64,
    /// The user who decided.
    pub decided_by: Option<&'a str>,
}

const COLUMNS: &str = "app_slug, agent, id, project, state, phase, cycle, goals_done, cost_micros, \
     next_action_at, stop_reason, created_at, updated_at";

fn vision_from<R: Row>(row: &R) -> Result<Vision>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(Vision {
        id: row.try_get("id")?,
        app_slug: row.try_get("app_slug")?,
        agent: row.try_get("agent")?,
        project: row.try_get("project")?,
        state: row.try_get("state")?,
        phase: row.try_get("phase")?,
        cycle: row.try_get("cycle")?,
        goals_done: row.try_get("goals_done")?,
        cost_micros: row.try_get("cost_micros")?,
        next_action_at: opt_millis(row.try_get("next_action_at")?)?,
        stop_reason: row.try_get("stop_reason")?,
        created_at: millis(row.try_get("created_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
    })
}

impl Store {
    /// Creates the vision of `agent` of `install` for `project`, due at `now`, unless it has
    /// one (whose project is then updated); answers it.
    pub async fn ensure_vision(
        &self,
        install: &InstallKey,
        agent: &str,
        project: &str,
    ) -> Result<Vision> {
        let now = now_millis();
        let id = format!("vis_{}", random_hex(10)?);
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO visions (org_id, tenant_id, app_slug, agent, id, project, state, phase, cycle, \
                   goals_done, cost_micros, next_action_at, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'running', 'assess', 1, 0, 0, $7, $7, $7) \
                 ON CONFLICT (org_id, tenant_id, app_slug, agent) DO UPDATE SET \
                   project = excluded.project, updated_at = CASE WHEN visions.project = excluded.project \
                     THEN visions.updated_at ELSE excluded.updated_at END",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
            .bind(agent).bind(&id).bind(project).bind(now)
            .execute(pool).await?;
        });
        self.vision_of(install, agent).await?.ok_or_else(|| {
            StoreError::NotFound(format!("the vision of `{agent}` of {install} vanished"))
        })
    }

    /// The vision of `agent` of `install`.
    pub async fn vision_of(&self, install: &InstallKey, agent: &str) -> Result<Option<Vision>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM visions WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND agent = $4"
            ))
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug).bind(agent)
            .fetch_optional(pool).await?
            .as_ref().map(vision_from).transpose()
        })
    }

    /// `tenant`'s vision `id`.
    pub async fn vision(&self, tenant: &TenantKey, id: &str) -> Result<Option<Vision>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM visions WHERE org_id = $1 AND tenant_id = $2 AND id = $3"
            ))
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .fetch_optional(pool).await?
            .as_ref().map(vision_from).transpose()
        })
    }

    /// Every vision of `tenant`, by app and agent.
    pub async fn visions(&self, tenant: &TenantKey) -> Result<Vec<Vision>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT {COLUMNS} FROM visions WHERE org_id = $1 AND tenant_id = $2 ORDER BY app_slug, agent"
            ))
            .bind(&tenant.org_id).bind(&tenant.tenant_id)
            .fetch_all(pool).await?
            .iter().map(vision_from).collect()
        })
    }

    /// At most `limit` running visions of active installs whose next phase is due at `now`.
    pub async fn due_visions(
        &self,
        now: Timestamp,
        limit: i64,
    ) -> Result<Vec<(InstallKey, Vision)>> {
        on_pool!(self, pool => {
            sqlx::query(&format!(
                "SELECT v.org_id, v.tenant_id, {} FROM visions v \
                 JOIN installs i ON i.org_id = v.org_id AND i.tenant_id = v.tenant_id AND i.app_slug = v.app_slug \
                 WHERE v.state = 'running' AND v.next_action_at <= $1 AND i.status = 'active' \
                 ORDER BY v.next_action_at LIMIT $2",
                COLUMNS.split(", ").map(|c| format!("v.{c}")).collect::<Vec<_>>().join(", ")
            ))
            .bind(now.as_millisecond()).bind(limit)
            .fetch_all(pool).await?
            .iter()
            .map(|r| {
                let vision = vision_from(r)?;
                Ok((
                    InstallKey::new(
                        r.try_get::<String, _>("org_id")?,
                        r.try_get::<String, _>("tenant_id")?,
                        vision.app_slug.clone(),
                    ),
                    vision,
                ))
            })
            .collect()
        })
    }

    /// Claims the due phase of a vision for `lease_until`: `true` when this call moved
    /// its next action from `due` (another host's claim moved it first otherwise). A host that
    /// stops mid-phase leaves it due again when the lease ends.
    pub async fn claim_vision(
        &self,
        tenant: &TenantKey,
        id: &str,
        due: Timestamp,
        lease_until: Timestamp,
    ) -> Result<bool> {
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "UPDATE visions SET next_action_at = $1 WHERE org_id = $2 AND tenant_id = $3 AND id = $4 \
                 AND state = 'running' AND next_action_at = $5",
            )
            .bind(lease_until.as_millisecond()).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .bind(due.as_millisecond())
            .execute(pool).await?.rows_affected() == 1)
        })
    }

    /// Appends a phase record and moves the vision on, if it is still in `from_state` at
    /// `from_phase` (another host or a user's decision moved it otherwise: nothing is written,
    /// and `false` answered).
    pub async fn step_vision(
        &self,
        tenant: &TenantKey,
        id: &str,
        from: (&str, &str),
        step: VisionStep<'_>,
    ) -> Result<bool> {
        let now = now_millis();
        let r = step.record;
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let moved = sqlx::query(
                "UPDATE visions SET state = $1, phase = $2, cycle = $3, goals_done = goals_done + $4, \
                   cost_micros = cost_micros + $5, next_action_at = $6, stop_reason = COALESCE($7, stop_reason), \
                   updated_at = $8 \
                 WHERE org_id = $9 AND tenant_id = $10 AND id = $11 AND state = $12 AND phase = $13",
            )
            .bind(step.state).bind(step.phase).bind(step.cycle).bind(step.goals_added)
            .bind(r.cost_micros).bind(step.next_action_at.map(|t| t.as_millisecond())).bind(step.stop_reason).bind(now)
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id).bind(from.0).bind(from.1)
            .execute(&mut *tx).await?.rows_affected() == 1;
            if !moved {
                return Ok(false);
            }
            let app_slug: String = sqlx::query_scalar(
                "SELECT app_slug FROM visions WHERE org_id = $1 AND tenant_id = $2 AND id = $3",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .fetch_one(&mut *tx).await?;
            let seq: i64 = sqlx::query_scalar(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM vision_phases WHERE org_id = $1 AND tenant_id = $2 AND vision_id = $3",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .fetch_one(&mut *tx).await?;
            sqlx::query(
                "INSERT INTO vision_phases (org_id, tenant_id, app_slug, vision_id, seq, cycle, phase, outcome, \
                   output, cost_micros, decided_by, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(&app_slug).bind(id).bind(seq)
            .bind(r.cycle).bind(r.phase).bind(r.outcome).bind(r.output).bind(r.cost_micros)
            .bind(r.decided_by).bind(now)
            .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Starts `tenant`'s vision `id` over if it is `stopped` for `reason` (the reason its
    /// install's version no longer declared it, when a later version declares it again):
    /// `running` at `assess` of its next cycle, due at once, the reason cleared, its phases,
    /// goals and cost kept. `true` when it did.
    pub async fn restart_vision(&self, tenant: &TenantKey, id: &str, reason: &str) -> Result<bool> {
        let now = now_millis();
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "UPDATE visions SET state = 'running', phase = 'assess', cycle = cycle + 1, \
                   next_action_at = $1, stop_reason = NULL, updated_at = $1 \
                 WHERE org_id = $2 AND tenant_id = $3 AND id = $4 AND state = 'stopped' AND stop_reason = $5",
            )
            .bind(now).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id).bind(reason)
            .execute(pool).await?.rows_affected() == 1)
        })
    }

    /// Sets the next action of a running vision to `at` if that is sooner than the one it
    /// has (a heartbeat's escalation); `true` when it moved.
    pub async fn hasten_vision(
        &self,
        install: &InstallKey,
        agent: &str,
        at: Timestamp,
    ) -> Result<bool> {
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "UPDATE visions SET next_action_at = $1, updated_at = $2 WHERE org_id = $3 AND tenant_id = $4 \
                 AND app_slug = $5 AND agent = $6 AND state = 'running' AND (next_action_at IS NULL OR next_action_at > $1)",
            )
            .bind(at.as_millisecond()).bind(now_millis()).bind(&install.org_id).bind(&install.tenant_id)
            .bind(&install.app_slug).bind(agent)
            .execute(pool).await?.rows_affected() == 1)
        })
    }

    /// The phases of `tenant`'s vision `id`, in order.
    pub async fn vision_phases(&self, tenant: &TenantKey, id: &str) -> Result<Vec<VisionPhase>> {
        on_pool!(self, pool => {
            sqlx::query(
                "SELECT seq, cycle, phase, outcome, output, cost_micros, decided_by, created_at FROM vision_phases \
                 WHERE org_id = $1 AND tenant_id = $2 AND vision_id = $3 ORDER BY seq",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .fetch_all(pool).await?
            .iter()
            .map(|r| {
                Ok(VisionPhase {
                    seq: r.try_get("seq")?,
                    cycle: r.try_get("cycle")?,
                    phase: r.try_get("phase")?,
                    outcome: r.try_get("outcome")?,
                    output: r.try_get("output")?,
                    cost_micros: r.try_get("cost_micros")?,
                    decided_by: r.try_get("decided_by")?,
                    created_at: millis(r.try_get("created_at")?)?,
                })
            })
            .collect()
        })
    }
}

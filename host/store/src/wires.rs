//! Event wires within a tenant (section 6) and the heartbeat wakes they cause. A wire links an
//! emitter app's declared event to a subscriber's declared target; the subscriber side
//! proposes it (approved at once), the emitter side approves, either side revokes. The
//! platform owns the rules (`atrium_platform::wires`); the store moves a wire between states
//! in single statements, as it does grants.

use jiff::Timestamp;
use sqlx::Row;

use crate::{
    InstallKey, Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, opt_millis,
    random_hex,
};

/// A stored wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wire {
    /// `wir_...`, in creation order.
    pub id: String,
    /// The app that emits the event.
    pub emitter_app: String,
    /// The event's name.
    pub event_name: String,
    /// The app that receives it.
    pub subscriber_app: String,
    /// The agent invoked (`on_event`), or the agent whose heartbeat is woken.
    pub target_agent: String,
    /// The heartbeat woken; `None` for an agent target.
    pub target_heartbeat: Option<String>,
    /// When the subscriber side approved.
    pub subscriber_approved_at: Option<Timestamp>,
    /// When the emitter side approved.
    pub emitter_approved_at: Option<Timestamp>,
    /// When either side revoked it.
    pub revoked_at: Option<Timestamp>,
    /// Creation.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl Wire {
    /// Both sides approved and it is not revoked: events flow over it.
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.subscriber_approved_at.is_some()
            && self.emitter_approved_at.is_some()
            && self.revoked_at.is_none()
    }
}

/// A wire to propose: the pair, the event and the subscriber's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewWire<'a> {
    /// The emitting app.
    pub emitter_app: &'a str,
    /// The event.
    pub event_name: &'a str,
    /// The receiving app.
    pub subscriber_app: &'a str,
    /// The agent invoked, or the owner of the heartbeat.
    pub target_agent: &'a str,
    /// The heartbeat woken, for a heartbeat target.
    pub target_heartbeat: Option<&'a str>,
}

/// Which wires a list shows; `None` matches all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireFilter<'a> {
    /// Only wires from this emitter.
    pub emitter_app: Option<&'a str>,
    /// Only wires to this subscriber.
    pub subscriber_app: Option<&'a str>,
    /// Only this event.
    pub event_name: Option<&'a str>,
}

/// A heartbeat's wake by an event, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatWake {
    /// The agent.
    pub agent: String,
    /// The heartbeat.
    pub slug: String,
    /// When the scheduler runs it next; a wake sets it to the time of the wake.
    pub next_run_at: Option<Timestamp>,
    /// The last wake.
    pub woken_at: Option<Timestamp>,
    /// What woke it: `<emitter_app>/<event_name>`.
    pub woken_by: Option<String>,
}

const COLUMNS: &str = "id, emitter_app, event_name, subscriber_app, target_agent, \
                       target_heartbeat, subscriber_approved_at, emitter_approved_at, revoked_at, \
                       created_at, updated_at";

fn wire_from<R: Row>(row: &R) -> Result<Wire>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let heartbeat: String = row.try_get("target_heartbeat")?;
    Ok(Wire {
        id: row.try_get("id")?,
        emitter_app: row.try_get("emitter_app")?,
        event_name: row.try_get("event_name")?,
        subscriber_app: row.try_get("subscriber_app")?,
        target_agent: row.try_get("target_agent")?,
        target_heartbeat: (!heartbeat.is_empty()).then_some(heartbeat),
        subscriber_approved_at: opt_millis(row.try_get("subscriber_approved_at")?)?,
        emitter_approved_at: opt_millis(row.try_get("emitter_approved_at")?)?,
        revoked_at: opt_millis(row.try_get("revoked_at")?)?,
        created_at: millis(row.try_get("created_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
    })
}

impl Store {
    /// The wire `id` of a tenant, whatever its state.
    pub async fn wire(&self, tenant: &TenantKey, id: &str) -> Result<Option<Wire>> {
        let sql =
            format!("SELECT {COLUMNS} FROM wires WHERE org_id = $1 AND tenant_id = $2 AND id = $3");
        on_pool!(self, pool => {
            match sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
                .fetch_optional(pool).await?
            {
                Some(row) => Ok(Some(wire_from(&row)?)),
                None => Ok(None),
            }
        })
    }

    async fn wire_by_key(&self, tenant: &TenantKey, wire: &NewWire<'_>) -> Result<Option<Wire>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM wires WHERE org_id = $1 AND tenant_id = $2 \
             AND emitter_app = $3 AND event_name = $4 AND subscriber_app = $5 \
             AND target_agent = $6 AND target_heartbeat = $7"
        );
        on_pool!(self, pool => {
            match sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(wire.emitter_app)
                .bind(wire.event_name).bind(wire.subscriber_app).bind(wire.target_agent)
                .bind(wire.target_heartbeat.unwrap_or(""))
                .fetch_optional(pool).await?
            {
                Some(row) => Ok(Some(wire_from(&row)?)),
                None => Ok(None),
            }
        })
    }

    /// A page of the tenant's wires that `filter` matches, in creation order: at most `limit`,
    /// after the wire `after`.
    pub async fn wires_page(
        &self,
        tenant: &TenantKey,
        filter: &WireFilter<'_>,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Wire>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM wires WHERE org_id = $1 AND tenant_id = $2 \
             AND ($3 IS NULL OR emitter_app = $3) AND ($4 IS NULL OR subscriber_app = $4) \
             AND ($5 IS NULL OR event_name = $5) AND id > $6 ORDER BY id LIMIT $7"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id)
                .bind(filter.emitter_app).bind(filter.subscriber_app).bind(filter.event_name)
                .bind(after.unwrap_or("")).bind(limit)
                .fetch_all(pool).await?
                .iter()
                .map(wire_from)
                .collect()
        })
    }

    /// The active wires that carry `emitter`'s event `event` in a tenant: what an emit fans
    /// out to.
    pub async fn active_wires(
        &self,
        tenant: &TenantKey,
        emitter: &str,
        event: &str,
    ) -> Result<Vec<Wire>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM wires WHERE org_id = $1 AND tenant_id = $2 \
             AND emitter_app = $3 AND event_name = $4 AND subscriber_approved_at IS NOT NULL \
             AND emitter_approved_at IS NOT NULL AND revoked_at IS NULL ORDER BY id"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(emitter).bind(event)
                .fetch_all(pool).await?
                .iter()
                .map(wire_from)
                .collect()
        })
    }

    /// The subscriber side proposes `wire`: a new or revoked wire starts over, approved by the
    /// subscriber and pending the emitter; a pending or active one is left as it is unless
    /// `restart_revoked` is false, when a revoked one stays revoked too (what activation
    /// proposes never undoes an admin's revoke). Answers the wire and whether it (re)started.
    pub async fn propose_wire(
        &self,
        tenant: &TenantKey,
        wire: &NewWire<'_>,
        restart_revoked: bool,
    ) -> Result<(Wire, bool)> {
        let now = now_millis();
        let id = format!("wir_{now:012x}{}", random_hex(6)?);
        let on_conflict = if restart_revoked {
            "DO UPDATE SET subscriber_approved_at = excluded.subscriber_approved_at, \
             emitter_approved_at = NULL, revoked_at = NULL, updated_at = excluded.updated_at \
             WHERE wires.revoked_at IS NOT NULL"
        } else {
            "DO NOTHING"
        };
        let sql = format!(
            "INSERT INTO wires (org_id, tenant_id, id, emitter_app, event_name, subscriber_app, \
               target_agent, target_heartbeat, subscriber_approved_at, emitter_approved_at, \
               revoked_at, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, NULL, $9, $9) \
             ON CONFLICT (org_id, tenant_id, emitter_app, event_name, subscriber_app, target_agent, \
               target_heartbeat) {on_conflict}"
        );
        let started = on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(&id).bind(wire.emitter_app)
                .bind(wire.event_name).bind(wire.subscriber_app).bind(wire.target_agent)
                .bind(wire.target_heartbeat.unwrap_or("")).bind(now)
                .execute(pool).await?
                .rows_affected() > 0
        });
        let stored = self
            .wire_by_key(tenant, wire)
            .await?
            .ok_or_else(|| StoreError::NotFound("the proposed wire vanished".into()))?;
        Ok((stored, started))
    }

    /// The emitter side approves a wire the subscriber side approved and nobody revoked.
    /// Answers the wire as it is after (unchanged when it was revoked).
    pub async fn approve_wire(&self, tenant: &TenantKey, id: &str) -> Result<Option<Wire>> {
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "UPDATE wires SET emitter_approved_at = COALESCE(emitter_approved_at, $1), \
                   updated_at = $1 \
                 WHERE org_id = $2 AND tenant_id = $3 AND id = $4 \
                   AND subscriber_approved_at IS NOT NULL AND revoked_at IS NULL",
            )
            .bind(now).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .execute(pool).await?;
        });
        self.wire(tenant, id).await
    }

    /// Revokes a wire (either side); revoking twice keeps the first time. Answers the wire.
    pub async fn revoke_wire(&self, tenant: &TenantKey, id: &str) -> Result<Option<Wire>> {
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "UPDATE wires SET revoked_at = COALESCE(revoked_at, $1), updated_at = $1 \
                 WHERE org_id = $2 AND tenant_id = $3 AND id = $4",
            )
            .bind(now).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id)
            .execute(pool).await?;
        });
        self.wire(tenant, id).await
    }

    /// Wakes heartbeat `slug` of `agent` in `install`: its next run is now, and the wake is
    /// recorded with what caused it (`by`). Answers the time of the wake.
    pub async fn wake_heartbeat(
        &self,
        install: &InstallKey,
        agent: &str,
        slug: &str,
        by: &str,
    ) -> Result<Timestamp> {
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO heartbeats (org_id, tenant_id, app_slug, agent, slug, next_run_at, \
                   woken_at, woken_by, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $6, $6) \
                 ON CONFLICT (org_id, tenant_id, app_slug, agent, slug) DO UPDATE SET \
                   next_run_at = excluded.next_run_at, woken_at = excluded.woken_at, \
                   woken_by = excluded.woken_by, updated_at = excluded.updated_at",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
            .bind(agent).bind(slug).bind(now).bind(by)
            .execute(pool).await?;
        });
        millis(now)
    }

    /// The heartbeats of `install` that have a row, by agent and slug.
    pub async fn heartbeat_wakes(&self, install: &InstallKey) -> Result<Vec<HeartbeatWake>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT agent, slug, next_run_at, woken_at, woken_by FROM heartbeats \
                 WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 ORDER BY agent, slug",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug)
            .fetch_all(pool).await?;
            rows.iter()
                .map(|row| -> Result<HeartbeatWake> {
                    Ok(HeartbeatWake {
                        agent: row.try_get("agent")?,
                        slug: row.try_get("slug")?,
                        next_run_at: opt_millis(row.try_get("next_run_at")?)?,
                        woken_at: opt_millis(row.try_get("woken_at")?)?,
                        woken_by: row.try_get("woken_by")?,
                    })
                })
                .collect()
        })
    }
}

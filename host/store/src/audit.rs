//! The audit log of a tenant's cross-app calls (`apps.invoke`, `apps.fetch`, team delegation,
//! event delivery): who called whom, how it ended, how long it took, on which chain.

use jiff::Timestamp;
use sqlx::Row;

use crate::installs::json_list;
use crate::{Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, random_hex};

/// One cross-app call to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAuditEntry<'a> {
    /// `invoke`, `fetch`, `delegate` or `event`.
    pub kind: &'a str,
    /// The calling app.
    pub caller_app: &'a str,
    /// The calling agent, when the call came from an agent's run.
    pub caller_agent: Option<&'a str>,
    /// The app called.
    pub callee_app: &'a str,
    /// What of it: an agent, a route (`GET /path`), an event name.
    pub target: &'a str,
    /// `ok`, `refused` or `failed`.
    pub outcome: &'a str,
    /// Why it was refused or failed.
    pub reason: Option<&'a str>,
    /// How long it took, in ms.
    pub duration_ms: i64,
    /// The chain depth of the call.
    pub chain_depth: i64,
    /// The agents on its chain.
    pub visited_agents: &'a [String],
}

/// A recorded cross-app call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// `aud_...`.
    pub id: String,
    /// `invoke`, `fetch`, `delegate` or `event`.
    pub kind: String,
    /// The calling app.
    pub caller_app: String,
    /// The calling agent, if any.
    pub caller_agent: Option<String>,
    /// The app called.
    pub callee_app: String,
    /// What of it.
    pub target: String,
    /// `ok`, `refused` or `failed`.
    pub outcome: String,
    /// Why it was refused or failed.
    pub reason: Option<String>,
    /// How long it took (ms).
    pub duration_ms: i64,
    /// The chain depth.
    pub chain_depth: i64,
    /// The agents on the chain.
    pub visited_agents: Vec<String>,
    /// When.
    pub created_at: Timestamp,
}

/// Which entries a list shows; `None` matches all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditFilter<'a> {
    /// Only this kind.
    pub kind: Option<&'a str>,
    /// Only calls by this app.
    pub caller_app: Option<&'a str>,
    /// Only calls to this app.
    pub callee_app: Option<&'a str>,
    /// Only this outcome.
    pub outcome: Option<&'a str>,
}

fn entry_from<R: Row>(row: &R) -> Result<AuditEntry>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(AuditEntry {
        id: row.try_get("id")?,
        kind: row.try_get("kind")?,
        caller_app: row.try_get("caller_app")?,
        caller_agent: row.try_get("caller_agent")?,
        callee_app: row.try_get("callee_app")?,
        target: row.try_get("target")?,
        outcome: row.try_get("outcome")?,
        reason: row.try_get("reason")?,
        duration_ms: row.try_get("duration_ms")?,
        chain_depth: row.try_get("chain_depth")?,
        visited_agents: json_list(&row.try_get::<String, _>("visited_agents")?)?,
        created_at: millis(row.try_get("created_at")?)?,
    })
}

impl Store {
    /// Records one cross-app call of `tenant`.
    pub async fn record_audit(&self, tenant: &TenantKey, entry: &NewAuditEntry<'_>) -> Result<()> {
        self.record_audits(tenant, std::slice::from_ref(entry))
            .await
    }

    /// Records several cross-app calls of `tenant` in one transaction (the deliveries of one
    /// event: one commit rather than one per subscriber).
    pub async fn record_audits(
        &self,
        tenant: &TenantKey,
        entries: &[NewAuditEntry<'_>],
    ) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let mut rows = Vec::with_capacity(entries.len());
        for entry in entries {
            let visited = serde_json::to_string(entry.visited_agents)
                .map_err(|e| StoreError::Internal(format!("cannot encode a list: {e}")))?;
            rows.push((format!("aud_{}", random_hex(12)?), visited, entry));
        }
        let now = now_millis();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            for (id, visited, entry) in &rows {
                sqlx::query(
                    "INSERT INTO audit_log (org_id, tenant_id, id, kind, caller_app, caller_agent, callee_app, \
                     target, outcome, reason, duration_ms, chain_depth, visited_agents, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                )
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(id).bind(entry.kind)
                .bind(entry.caller_app).bind(entry.caller_agent).bind(entry.callee_app).bind(entry.target)
                .bind(entry.outcome).bind(entry.reason).bind(entry.duration_ms).bind(entry.chain_depth)
                .bind(visited).bind(now)
                .execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// A page of `tenant`'s audit log that `filter` matches, newest first: at most `limit`,
    /// after the entry made at `after.0` with id `after.1`.
    pub async fn audit_page(
        &self,
        tenant: &TenantKey,
        filter: &AuditFilter<'_>,
        after: Option<(Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<AuditEntry>> {
        let (at, id) = after.map_or((i64::MAX, "\u{10ffff}"), |(at, key)| {
            (at.as_millisecond(), key)
        });
        on_pool!(self, pool => {
            sqlx::query(
                "SELECT id, kind, caller_app, caller_agent, callee_app, target, outcome, reason, \
                 duration_ms, chain_depth, visited_agents, created_at FROM audit_log \
                 WHERE org_id = $1 AND tenant_id = $2 \
                 AND ($3 IS NULL OR kind = $3) AND ($4 IS NULL OR caller_app = $4) \
                 AND ($5 IS NULL OR callee_app = $5) AND ($6 IS NULL OR outcome = $6) \
                 AND (created_at < $7 OR (created_at = $7 AND id < $8)) \
                 ORDER BY created_at DESC, id DESC LIMIT $9",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id)
            .bind(filter.kind).bind(filter.caller_app).bind(filter.callee_app).bind(filter.outcome)
            .bind(at).bind(id).bind(limit)
            .fetch_all(pool).await?
            .iter()
            .map(entry_from)
            .collect()
        })
    }
}

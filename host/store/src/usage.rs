//! Metering: one record per call, rolled up per tenant and per organization. Costs are integer
//! micro-dollars, so totals are exact whatever the number of concurrent writers.

use sqlx::Row;

use crate::{Result, Store, TenantKey, now_millis, on_pool, random_hex};

/// One metered call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRecord {
    /// The organization.
    pub org_id: String,
    /// The tenant (created when new).
    pub tenant_id: String,
    /// `chat`, `embedding`, `retrieval`.
    pub kind: String,
    /// The provider that answered.
    pub provider: String,
    /// The model that answered.
    pub model: String,
    /// Input tokens.
    pub prompt_tokens: i64,
    /// Output tokens.
    pub completion_tokens: i64,
    /// Cost in micro-dollars.
    pub cost_micros: i64,
    /// Whether the call was a batch item (metered at the batch rate).
    pub batch: bool,
    /// The installed app the call was made for (a platform tool), or none for a call made
    /// straight to /v1.
    pub app_slug: Option<String>,
    /// The app's agent whose model step the call was, or none.
    pub agent: Option<String>,
}

/// Usage of one tenant by one agent of an installed app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentUsage {
    /// The app's slug.
    pub app_slug: String,
    /// The agent's slug.
    pub agent: String,
    /// Metered model steps.
    pub calls: i64,
    /// Input tokens.
    pub prompt_tokens: i64,
    /// Output tokens.
    pub completion_tokens: i64,
    /// Cost in micro-dollars.
    pub cost_micros: i64,
}

/// Usage of one tenant by one installed app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppUsage {
    /// The app's slug.
    pub app_slug: String,
    /// Metered calls.
    pub calls: i64,
    /// Input tokens.
    pub prompt_tokens: i64,
    /// Output tokens.
    pub completion_tokens: i64,
    /// Cost in micro-dollars.
    pub cost_micros: i64,
}

/// Usage of one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantUsage {
    /// The tenant id.
    pub tenant_id: String,
    /// Its registered name.
    pub name: Option<String>,
    /// Its registered external id.
    pub external_id: Option<String>,
    /// Metered calls.
    pub calls: i64,
    /// Input tokens.
    pub prompt_tokens: i64,
    /// Output tokens.
    pub completion_tokens: i64,
    /// Cost in micro-dollars.
    pub cost_micros: i64,
}

/// Organization-wide totals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageTotals {
    /// Tenants of the organization (with or without calls).
    pub tenants: i64,
    /// Metered calls.
    pub calls: i64,
    /// Cost in micro-dollars.
    pub cost_micros: i64,
}

/// Organization-wide usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage {
    /// The totals.
    pub totals: UsageTotals,
    /// One entry per tenant, by tenant id.
    pub per_tenant: Vec<TenantUsage>,
}

const PER_TENANT: &str = "SELECT t.id AS tenant_id, t.name, t.external_id, \
       COUNT(u.id) AS calls, \
       CAST(COALESCE(SUM(u.prompt_tokens), 0) AS BIGINT) AS prompt_tokens, \
       CAST(COALESCE(SUM(u.completion_tokens), 0) AS BIGINT) AS completion_tokens, \
       CAST(COALESCE(SUM(u.cost_micros), 0) AS BIGINT) AS cost_micros \
  FROM tenants t LEFT JOIN usage_records u ON u.org_id = t.org_id AND u.tenant_id = t.id \
 WHERE t.org_id = $1";

/// Rows one statement inserts at most: a batch of usage is a few statements, not two round
/// trips to the database per record. 128 rows of 13 parameters stay far below the limits of
/// both databases (SQLite 32,766 parameters, PostgreSQL 65,535).
const ROWS_PER_INSERT: usize = 128;

impl Store {
    /// Records one metered call (and creates its tenant on first use), atomically.
    pub async fn record_usage(&self, record: &UsageRecord) -> Result<()> {
        self.record_usage_batch(std::slice::from_ref(record)).await
    }

    /// Records several metered calls in one transaction (the metering writer's batches).
    pub async fn record_usage_batch(&self, records: &[UsageRecord]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        for record in records {
            crate::tenants::check_tenant_id(&record.tenant_id)?;
        }
        let now = now_millis();
        let ids: Vec<String> = records
            .iter()
            .map(|_| random_hex(12).map(|h| format!("use_{h}")))
            .collect::<Result<_>>()?;
        // Each tenant once, in one order (two hosts writing the same tenants never wait on
        // each other's row locks in a cycle).
        let mut tenants: Vec<(&str, &str)> = records
            .iter()
            .map(|r| (r.org_id.as_str(), r.tenant_id.as_str()))
            .collect();
        tenants.sort_unstable();
        tenants.dedup();
        let rows: Vec<(&UsageRecord, &String)> = records.iter().zip(&ids).collect();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            for chunk in tenants.chunks(ROWS_PER_INSERT) {
                let mut insert =
                    sqlx::QueryBuilder::new("INSERT INTO tenants (org_id, id, created_at, updated_at) ");
                insert.push_values(chunk, |mut row, (org_id, tenant_id)| {
                    row.push_bind(*org_id)
                        .push_bind(*tenant_id)
                        .push_bind(now)
                        .push_bind(now);
                });
                insert.push(" ON CONFLICT (org_id, id) DO NOTHING");
                insert.build().execute(&mut *tx).await?;
            }
            for chunk in rows.chunks(ROWS_PER_INSERT) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO usage_records (id, org_id, tenant_id, kind, provider, model, prompt_tokens, \
                     completion_tokens, cost_micros, batch, created_at, app_slug, agent) ",
                );
                insert.push_values(chunk, |mut row, (record, id)| {
                    row.push_bind(id.as_str())
                        .push_bind(record.org_id.as_str())
                        .push_bind(record.tenant_id.as_str())
                        .push_bind(record.kind.as_str())
                        .push_bind(record.provider.as_str())
                        .push_bind(record.model.as_str())
                        .push_bind(record.prompt_tokens)
                        .push_bind(record.completion_tokens)
                        .push_bind(record.cost_micros)
                        .push_bind(i64::from(record.batch))
                        .push_bind(now)
                        .push_bind(record.app_slug.as_deref())
                        .push_bind(record.agent.as_deref());
                });
                insert.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// Usage of every tenant of an organization, and the totals.
    pub async fn usage(&self, org_id: &str) -> Result<Usage> {
        let sql = format!("{PER_TENANT} GROUP BY t.id, t.name, t.external_id ORDER BY t.id");
        let per_tenant = self.tenant_rows(&sql, org_id, None).await?;
        let totals = UsageTotals {
            tenants: i64::try_from(per_tenant.len()).unwrap_or(i64::MAX),
            calls: per_tenant.iter().map(|t| t.calls).sum(),
            cost_micros: per_tenant.iter().map(|t| t.cost_micros).sum(),
        };
        Ok(Usage { totals, per_tenant })
    }

    /// Usage of one tenant, or none when the organization has no such tenant.
    pub async fn tenant_usage(&self, tenant: &TenantKey) -> Result<Option<TenantUsage>> {
        let TenantKey { org_id, tenant_id } = tenant;
        let sql = format!("{PER_TENANT} AND t.id = $2 GROUP BY t.id, t.name, t.external_id");
        Ok(self
            .tenant_rows(&sql, org_id, Some(tenant_id))
            .await?
            .into_iter()
            .next())
    }

    /// Usage of one tenant by each installed app that made metered calls, by slug.
    pub async fn tenant_usage_by_app(&self, tenant: &TenantKey) -> Result<Vec<AppUsage>> {
        let TenantKey { org_id, tenant_id } = tenant;
        let rows = on_pool!(self, pool => {
            sqlx::query(
                "SELECT app_slug, COUNT(id) AS calls, \
                        CAST(COALESCE(SUM(prompt_tokens), 0) AS BIGINT) AS prompt_tokens, \
                        CAST(COALESCE(SUM(completion_tokens), 0) AS BIGINT) AS completion_tokens, \
                        CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT) AS cost_micros \
                   FROM usage_records WHERE org_id = $1 AND tenant_id = $2 AND app_slug IS NOT NULL \
                  GROUP BY app_slug ORDER BY app_slug",
            )
            .bind(org_id)
            .bind(tenant_id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|r| {
                Ok(AppUsage {
                    app_slug: r.try_get("app_slug")?,
                    calls: r.try_get("calls")?,
                    prompt_tokens: r.try_get("prompt_tokens")?,
                    completion_tokens: r.try_get("completion_tokens")?,
                    cost_micros: r.try_get("cost_micros")?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?
        });
        Ok(rows)
    }

    /// A tenant's usage by the agents of its installed apps (the agent runner's model steps).
    pub async fn tenant_usage_by_agent(&self, tenant: &TenantKey) -> Result<Vec<AgentUsage>> {
        let TenantKey { org_id, tenant_id } = tenant;
        let rows = on_pool!(self, pool => {
            sqlx::query(
                "SELECT app_slug, agent, COUNT(id) AS calls, \
                        CAST(COALESCE(SUM(prompt_tokens), 0) AS BIGINT) AS prompt_tokens, \
                        CAST(COALESCE(SUM(completion_tokens), 0) AS BIGINT) AS completion_tokens, \
                        CAST(COALESCE(SUM(cost_micros), 0) AS BIGINT) AS cost_micros \
                   FROM usage_records WHERE org_id = $1 AND tenant_id = $2 \
                    AND app_slug IS NOT NULL AND agent IS NOT NULL \
                  GROUP BY app_slug, agent ORDER BY app_slug, agent",
            )
            .bind(org_id)
            .bind(tenant_id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|r| {
                Ok(AgentUsage {
                    app_slug: r.try_get("app_slug")?,
                    agent: r.try_get("agent")?,
                    calls: r.try_get("calls")?,
                    prompt_tokens: r.try_get("prompt_tokens")?,
                    completion_tokens: r.try_get("completion_tokens")?,
                    cost_micros: r.try_get("cost_micros")?,
                })
            })
            .collect::<Result<Vec<_>, sqlx::Error>>()?
        });
        Ok(rows)
    }

    async fn tenant_rows(
        &self,
        sql: &str,
        org_id: &str,
        tenant_id: Option<&str>,
    ) -> Result<Vec<TenantUsage>> {
        let rows = on_pool!(self, pool => {
            let mut query = sqlx::query(sql).bind(org_id);
            if let Some(tenant_id) = tenant_id {
                query = query.bind(tenant_id);
            }
            query
                .fetch_all(pool)
                .await?
                .iter()
                .map(|r| {
                    Ok(TenantUsage {
                        tenant_id: r.try_get("tenant_id")?,
                        name: r.try_get("name")?,
                        external_id: r.try_get("external_id")?,
                        calls: r.try_get("calls")?,
                        prompt_tokens: r.try_get("prompt_tokens")?,
                        completion_tokens: r.try_get("completion_tokens")?,
                        cost_micros: r.try_get("cost_micros")?,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()?
        });
        Ok(rows)
    }
}

//! A tenant's model roles: for each role it set (`fast`, `specialist`, `orchestrator`), the
//! tier, provider and/or model of the /v1 gateway that role calls. The platform owns the names
//! and the defaults (`atrium_platform::llm_roles`); the store keeps what a tenant set.

use jiff::Timestamp;
use sqlx::Row;

use crate::{Result, Store, TenantKey, millis, now_millis, on_pool};

/// One role a tenant set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmRole {
    /// `fast`, `specialist` or `orchestrator`.
    pub role: String,
    /// A tier of the gateway, when set.
    pub tier: Option<String>,
    /// A provider, when set.
    pub provider: Option<String>,
    /// A model, when set.
    pub model: Option<String>,
    /// When it was set.
    pub updated_at: Timestamp,
}

impl Store {
    /// The roles `tenant` set, by role name.
    pub async fn llm_roles(&self, tenant: &TenantKey) -> Result<Vec<LlmRole>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT role, tier, provider, model, updated_at FROM tenant_llm_roles \
                 WHERE org_id = $1 AND tenant_id = $2 ORDER BY role",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id)
            .fetch_all(pool).await?;
            rows.iter()
                .map(|row| {
                    Ok(LlmRole {
                        role: row.try_get("role")?,
                        tier: row.try_get("tier")?,
                        provider: row.try_get("provider")?,
                        model: row.try_get("model")?,
                        updated_at: millis(row.try_get("updated_at")?)?,
                    })
                })
                .collect()
        })
    }

    /// In one transaction: replaces the roles in `set` (their `updated_at` is now), removes
    /// those named in `reset`, which return to the platform's defaults, and replaces the
    /// tenant's agent limits with `limits` when given.
    pub async fn put_llm_roles(
        &self,
        tenant: &TenantKey,
        set: &[LlmRole],
        reset: &[&str],
        limits: Option<&AgentLimitsRow>,
    ) -> Result<()> {
        let now = now_millis();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            for role in set {
                sqlx::query(
                    "INSERT INTO tenant_llm_roles (org_id, tenant_id, role, tier, provider, model, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) \
                     ON CONFLICT (org_id, tenant_id, role) DO UPDATE SET tier = excluded.tier, \
                     provider = excluded.provider, model = excluded.model, updated_at = excluded.updated_at",
                )
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(&role.role)
                .bind(&role.tier).bind(&role.provider).bind(&role.model).bind(now)
                .execute(&mut *tx).await?;
            }
            for role in reset {
                sqlx::query(
                    "DELETE FROM tenant_llm_roles WHERE org_id = $1 AND tenant_id = $2 AND role = $3",
                )
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(*role)
                .execute(&mut *tx).await?;
            }
            if let Some(limits) = limits {
                sqlx::query(
                    "INSERT INTO tenant_agent_limits (org_id, tenant_id, max_steps, budget_micros, timeout_ms, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6) \
                     ON CONFLICT (org_id, tenant_id) DO UPDATE SET max_steps = excluded.max_steps, \
                     budget_micros = excluded.budget_micros, timeout_ms = excluded.timeout_ms, \
                     updated_at = excluded.updated_at",
                )
                .bind(&tenant.org_id).bind(&tenant.tenant_id)
                .bind(limits.max_steps).bind(limits.budget_micros).bind(limits.timeout_ms).bind(now)
                .execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }
}

/// The limits of an agent run a tenant set; `None` is the platform's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentLimitsRow {
    /// The most model steps.
    pub max_steps: Option<i64>,
    /// The most a run may cost, in micro-dollars.
    pub budget_micros: Option<i64>,
    /// How long a run may take, in ms.
    pub timeout_ms: Option<i64>,
    /// When they were set, or none when the tenant never set any.
    pub updated_at: Option<Timestamp>,
}

impl Store {
    /// The agent limits `tenant` set.
    pub async fn agent_limits(&self, tenant: &TenantKey) -> Result<AgentLimitsRow> {
        on_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT max_steps, budget_micros, timeout_ms, updated_at FROM tenant_agent_limits \
                 WHERE org_id = $1 AND tenant_id = $2",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id)
            .fetch_optional(pool).await?;
            match row {
                None => Ok(AgentLimitsRow::default()),
                Some(row) => Ok(AgentLimitsRow {
                    max_steps: row.try_get("max_steps")?,
                    budget_micros: row.try_get("budget_micros")?,
                    timeout_ms: row.try_get("timeout_ms")?,
                    updated_at: Some(millis(row.try_get("updated_at")?)?),
                }),
            }
        })
    }
}

//! Cross-app grants within a tenant (section 3): a caller app may reach a callee app's agents
//! (or its routes, `__route__`) when both sides approved and the grant is not revoked. The
//! platform owns the rules (`atrium_platform::grants`); the store keeps the rows and moves them
//! between states in single statements, so two admins acting at once leave one of the states
//! the lifecycle allows.

use jiff::Timestamp;
use sqlx::Row;

use crate::installs::json_list;
use crate::{Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, opt_millis};

/// A stored grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The app that calls.
    pub caller_app: String,
    /// The app it calls.
    pub callee_app: String,
    /// The callee's agents it may invoke; `__route__` admits the callee's declared routes.
    pub allowed_agents: Vec<String>,
    /// When the caller side approved.
    pub caller_approved_at: Option<Timestamp>,
    /// When the callee side approved.
    pub callee_approved_at: Option<Timestamp>,
    /// When either side revoked it.
    pub revoked_at: Option<Timestamp>,
    /// Creation.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl Grant {
    /// Both sides approved and it is not revoked.
    #[must_use]
    pub fn is_active(&self) -> bool {
        self.caller_approved_at.is_some()
            && self.callee_approved_at.is_some()
            && self.revoked_at.is_none()
    }
}

const COLUMNS: &str = "caller_app, callee_app, allowed_agents, caller_approved_at, \
                       callee_approved_at, revoked_at, created_at, updated_at";

fn grant_from<R: Row>(row: &R) -> Result<Grant>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<i64>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(Grant {
        caller_app: row.try_get("caller_app")?,
        callee_app: row.try_get("callee_app")?,
        allowed_agents: json_list(&row.try_get::<String, _>("allowed_agents")?)?,
        caller_approved_at: opt_millis(row.try_get("caller_approved_at")?)?,
        callee_approved_at: opt_millis(row.try_get("callee_approved_at")?)?,
        revoked_at: opt_millis(row.try_get("revoked_at")?)?,
        created_at: millis(row.try_get("created_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
    })
}

fn to_json(list: &[String]) -> Result<String> {
    serde_json::to_string(list)
        .map_err(|e| StoreError::Internal(format!("cannot encode a list: {e}")))
}

impl Store {
    /// The grant from `caller` to `callee` in a tenant, whatever its state.
    pub async fn grant(
        &self,
        tenant: &TenantKey,
        caller: &str,
        callee: &str,
    ) -> Result<Option<Grant>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM grants \
             WHERE org_id = $1 AND tenant_id = $2 AND caller_app = $3 AND callee_app = $4"
        );
        on_pool!(self, pool => {
            match sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(caller).bind(callee)
                .fetch_optional(pool).await?
            {
                Some(row) => Ok(Some(grant_from(&row)?)),
                None => Ok(None),
            }
        })
    }

    /// A page of the tenant's grants, by caller then callee: at most `limit`, after the pair
    /// `after`.
    pub async fn grants_page(
        &self,
        tenant: &TenantKey,
        after: Option<(&str, &str)>,
        limit: i64,
    ) -> Result<Vec<Grant>> {
        let (caller, callee) = after.unwrap_or(("", ""));
        let sql = format!(
            "SELECT {COLUMNS} FROM grants WHERE org_id = $1 AND tenant_id = $2 \
             AND (caller_app > $3 OR (caller_app = $3 AND callee_app > $4)) \
             ORDER BY caller_app, callee_app LIMIT $5"
        );
        on_pool!(self, pool => {
            sqlx::query(&sql)
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(caller).bind(callee).bind(limit)
                .fetch_all(pool).await?
                .iter()
                .map(grant_from)
                .collect()
        })
    }

    /// The caller side asks for a grant to `callee`'s `agents`: a new or revoked grant starts
    /// over, approved by the caller and pending the callee; an existing one that is pending or
    /// active is left as it is. Answers the grant and whether it (re)started.
    pub async fn request_grant(
        &self,
        tenant: &TenantKey,
        caller: &str,
        callee: &str,
        agents: &[String],
    ) -> Result<(Grant, bool)> {
        let now = now_millis();
        let agents = to_json(agents)?;
        let started = on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO grants (org_id, tenant_id, caller_app, callee_app, allowed_agents, \
                   caller_approved_at, callee_approved_at, revoked_at, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, $6, $6) \
                 ON CONFLICT (org_id, tenant_id, caller_app, callee_app) DO UPDATE SET \
                   allowed_agents = excluded.allowed_agents, caller_approved_at = excluded.caller_approved_at, \
                   callee_approved_at = NULL, revoked_at = NULL, updated_at = excluded.updated_at \
                 WHERE grants.revoked_at IS NOT NULL",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(caller).bind(callee)
            .bind(&agents).bind(now)
            .execute(pool).await?
            .rows_affected() > 0
        });
        let grant = self.grant(tenant, caller, callee).await?.ok_or_else(|| {
            StoreError::NotFound(format!("no grant from `{caller}` to `{callee}`"))
        })?;
        Ok((grant, started))
    }

    /// The callee side approves a grant the caller side approved and nobody revoked, admitting
    /// `allowed_agents`. Answers the grant as it is after: unchanged when it was not pending or
    /// active (the caller reads its state to say why).
    pub async fn approve_grant(
        &self,
        tenant: &TenantKey,
        caller: &str,
        callee: &str,
        allowed_agents: &[String],
    ) -> Result<Option<Grant>> {
        let now = now_millis();
        let agents = to_json(allowed_agents)?;
        on_pool!(self, pool => {
            sqlx::query(
                "UPDATE grants SET allowed_agents = $1, \
                   callee_approved_at = COALESCE(callee_approved_at, $2), updated_at = $2 \
                 WHERE org_id = $3 AND tenant_id = $4 AND caller_app = $5 AND callee_app = $6 \
                   AND caller_approved_at IS NOT NULL AND revoked_at IS NULL",
            )
            .bind(&agents).bind(now)
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(caller).bind(callee)
            .execute(pool).await?;
        });
        self.grant(tenant, caller, callee).await
    }

    /// Revokes a grant (either side); revoking twice keeps the first time. Answers the grant.
    pub async fn revoke_grant(
        &self,
        tenant: &TenantKey,
        caller: &str,
        callee: &str,
    ) -> Result<Option<Grant>> {
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "UPDATE grants SET revoked_at = COALESCE(revoked_at, $1), updated_at = $1 \
                 WHERE org_id = $2 AND tenant_id = $3 AND caller_app = $4 AND callee_app = $5",
            )
            .bind(now).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(caller).bind(callee)
            .execute(pool).await?;
        });
        self.grant(tenant, caller, callee).await
    }
}

//! Cross-app grants within a tenant (section 3): a caller app may reach a callee app's agents
//! (or its routes, `__route__`) when both sides approved and the grant is not revoked.

use sqlx::Row;

use crate::installs::json_list;
use crate::{Result, Store, TenantKey, on_pool};

impl Store {
    /// The grant from `caller` to `callee` in a tenant: allowed agents and whether both sides
    /// approved and it is not revoked.
    pub async fn grant(
        &self,
        tenant: &TenantKey,
        caller: &str,
        callee: &str,
    ) -> Result<Option<(Vec<String>, bool)>> {
        let TenantKey { org_id, tenant_id } = tenant;
        on_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT allowed_agents, caller_approved_at, callee_approved_at, revoked_at FROM grants \
                 WHERE org_id = $1 AND tenant_id = $2 AND caller_app = $3 AND callee_app = $4",
            )
            .bind(org_id).bind(tenant_id).bind(caller).bind(callee)
            .fetch_optional(pool).await?;
            match row {
                None => Ok(None),
                Some(row) => {
                    let agents = json_list(&row.try_get::<String, _>("allowed_agents")?)?;
                    let caller_at: Option<i64> = row.try_get("caller_approved_at")?;
                    let callee_at: Option<i64> = row.try_get("callee_approved_at")?;
                    let revoked: Option<i64> = row.try_get("revoked_at")?;
                    Ok(Some((agents, caller_at.is_some() && callee_at.is_some() && revoked.is_none())))
                }
            }
        })
    }
}

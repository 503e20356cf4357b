//! A tenant's document templates, cloned from an app version's template defaults once per
//! (tenant, slug) at an activation, never over a tenant's own.

use sqlx::Row;

use crate::{Result, Store, TenantKey, on_pool};

impl Store {
    /// The template slugs a tenant has, with the app each was cloned from.
    pub async fn tenant_templates(
        &self,
        tenant: &TenantKey,
    ) -> Result<Vec<(String, Option<String>)>> {
        let TenantKey { org_id, tenant_id } = tenant;
        on_pool!(self, pool => {
            let rows = sqlx::query("SELECT slug, app_slug FROM tenant_templates WHERE org_id = $1 AND tenant_id = $2 ORDER BY slug")
                .bind(org_id).bind(tenant_id).fetch_all(pool).await?;
            rows.iter().map(|r| Ok((r.try_get("slug")?, r.try_get("app_slug")?))).collect()
        })
    }
}

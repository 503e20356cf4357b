//! The lookup behind public routes: the public address of an install names the tenant by its
//! id, which is unique within an organization only, and a fingerprint of the organization
//! (computed by the platform). The store answers the candidates, the organizations whose
//! tenant of that id has an active install of the app; the platform keeps the one whose
//! fingerprint matches.

use sqlx::Row;

use crate::{InstallStatus, Result, Store, on_pool};

impl Store {
    /// The organizations whose tenant `tenant_id` has an active install of `app_slug`, by id.
    pub async fn active_install_orgs(
        &self,
        tenant_id: &str,
        app_slug: &str,
    ) -> Result<Vec<String>> {
        const SQL: &str = "SELECT org_id FROM installs \
             WHERE tenant_id = $1 AND app_slug = $2 AND status = $3 ORDER BY org_id";
        let orgs = on_pool!(self, pool => {
            sqlx::query(SQL)
                .bind(tenant_id)
                .bind(app_slug)
                .bind(InstallStatus::Active.as_str())
                .fetch_all(pool)
                .await?
                .iter()
                .map(|r| r.try_get("org_id"))
                .collect::<Result<Vec<String>, sqlx::Error>>()?
        });
        Ok(orgs)
    }
}

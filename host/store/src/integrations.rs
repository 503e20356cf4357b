//! A tenant's integrations (a mail provider, a CRM, ...): one configuration per provider, kept
//! sealed. The store never sees a configuration in clear: the platform seals it (it holds the
//! key) and hands over the sealed text, which is all this table holds. Rows written before
//! configurations were sealed hold the JSON object itself; [`Store::plain_integrations`] finds
//! them so the platform can seal them in place.

use sqlx::Row;

use crate::{Result, Store, TenantKey, now_millis, on_pool};

/// One integration as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIntegration {
    /// The provider's slug.
    pub provider: String,
    /// The sealed configuration (base64), or, in a row from before sealing, the JSON object.
    pub config: String,
}

impl StoredIntegration {
    /// Whether the configuration is still the plain JSON object of a row written before
    /// configurations were sealed (sealed text is base64 and never starts with `{`).
    #[must_use]
    pub fn is_plain(&self) -> bool {
        self.config.trim_start().starts_with('{')
    }
}

impl Store {
    /// Sets (or replaces) one of a tenant's integrations with its sealed configuration; `true`
    /// when it is new.
    pub async fn put_integration(
        &self,
        tenant: &TenantKey,
        provider: &str,
        sealed_config: &str,
    ) -> Result<bool> {
        crate::check_tenant_id(&tenant.tenant_id)?;
        self.ensure_tenant(tenant).await?;
        let now = now_millis();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let existed = sqlx::query("SELECT 1 FROM tenant_integrations WHERE org_id = $1 AND tenant_id = $2 AND provider = $3")
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(provider).fetch_optional(&mut *tx).await?.is_some();
            sqlx::query(
                "INSERT INTO tenant_integrations (org_id, tenant_id, provider, config, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (org_id, tenant_id, provider) DO UPDATE SET \
                   config = excluded.config, updated_at = excluded.updated_at",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(provider).bind(sealed_config).bind(now)
            .execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(!existed)
        })
    }

    /// A tenant's integrations, by provider.
    pub async fn integrations(&self, tenant: &TenantKey) -> Result<Vec<StoredIntegration>> {
        on_pool!(self, pool => {
            let rows = sqlx::query("SELECT provider, config FROM tenant_integrations WHERE org_id = $1 AND tenant_id = $2 ORDER BY provider")
                .bind(&tenant.org_id).bind(&tenant.tenant_id).fetch_all(pool).await?;
            rows.iter()
                .map(|row| Ok(StoredIntegration { provider: row.try_get("provider")?, config: row.try_get("config")? }))
                .collect()
        })
    }

    /// Every integration of every tenant whose configuration is still in clear (rows from
    /// before configurations were sealed), at most `limit`.
    pub async fn plain_integrations(
        &self,
        limit: i64,
    ) -> Result<Vec<(TenantKey, StoredIntegration)>> {
        on_pool!(self, pool => {
            let rows = sqlx::query("SELECT org_id, tenant_id, provider, config FROM tenant_integrations WHERE config LIKE '{%' ORDER BY org_id, tenant_id, provider LIMIT $1")
                .bind(limit).fetch_all(pool).await?;
            rows.iter()
                .map(|row| {
                    Ok((
                        TenantKey::new(row.try_get::<String, _>("org_id")?, row.try_get::<String, _>("tenant_id")?),
                        StoredIntegration { provider: row.try_get("provider")?, config: row.try_get("config")? },
                    ))
                })
                .collect()
        })
    }

    /// Replaces an integration's configuration `plain` by `sealed`, unless it changed in the
    /// meantime; `true` when replaced.
    pub async fn seal_integration(
        &self,
        tenant: &TenantKey,
        provider: &str,
        plain: &str,
        sealed: &str,
    ) -> Result<bool> {
        on_pool!(self, pool => {
            let done = sqlx::query("UPDATE tenant_integrations SET config = $1 WHERE org_id = $2 AND tenant_id = $3 AND provider = $4 AND config = $5")
                .bind(sealed).bind(&tenant.org_id).bind(&tenant.tenant_id).bind(provider).bind(plain)
                .execute(pool).await?.rows_affected();
            Ok(done == 1)
        })
    }
}

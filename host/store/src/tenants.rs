//! Tenants: the customers of an organization, created on first use or registered up front.

use jiff::Timestamp;
use sqlx::Row;

use crate::{Result, Store, StoreError, millis, now_millis, on_pool};

/// A tenant of an organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// The caller-chosen id.
    pub id: String,
    /// A display name, when registered.
    pub name: Option<String>,
    /// The caller's own id for the tenant, when registered.
    pub external_id: Option<String>,
    /// First use or registration.
    pub created_at: Timestamp,
    /// Last registration.
    pub updated_at: Timestamp,
}

/// Checks a caller-chosen tenant id: 1 to 256 characters, no control characters.
pub fn check_tenant_id(id: &str) -> Result<()> {
    if id.is_empty() || id.chars().count() > 256 || id.chars().any(char::is_control) {
        return Err(StoreError::Invalid(format!(
            "a tenant id must be 1 to 256 characters without control characters, got {id:?}"
        )));
    }
    Ok(())
}

impl Store {
    /// Creates the tenant if it does not exist yet (first use).
    pub async fn ensure_tenant(&self, tenant: &crate::TenantKey) -> Result<()> {
        let crate::TenantKey { org_id, tenant_id } = tenant;
        check_tenant_id(tenant_id)?;
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO tenants (org_id, id, created_at, updated_at) VALUES ($1, $2, $3, $3) \
                 ON CONFLICT (org_id, id) DO NOTHING",
            )
            .bind(org_id)
            .bind(tenant_id)
            .bind(now)
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// Registers a tenant with a name and external id, or updates them.
    pub async fn register_tenant(
        &self,
        org_id: &str,
        id: &str,
        name: Option<&str>,
        external_id: Option<&str>,
    ) -> Result<Tenant> {
        check_tenant_id(id)?;
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO tenants (org_id, id, name, external_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5) \
                 ON CONFLICT (org_id, id) DO UPDATE SET \
                   name = COALESCE(excluded.name, tenants.name), \
                   external_id = COALESCE(excluded.external_id, tenants.external_id), \
                   updated_at = excluded.updated_at",
            )
            .bind(org_id)
            .bind(id)
            .bind(name)
            .bind(external_id)
            .bind(now)
            .execute(pool)
            .await?;
        });
        self.tenant(&crate::TenantKey::new(org_id, id))
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("tenant `{id}` vanished")))
    }

    /// One tenant of an organization.
    pub async fn tenant(&self, tenant: &crate::TenantKey) -> Result<Option<Tenant>> {
        let crate::TenantKey {
            org_id,
            tenant_id: id,
        } = tenant;
        const SQL: &str = "SELECT id, name, external_id, created_at, updated_at FROM tenants WHERE org_id = $1 AND id = $2";
        let tenant = on_pool!(self, pool => {
            match sqlx::query(SQL).bind(org_id).bind(id).fetch_optional(pool).await? {
                Some(r) => Some(Tenant {
                    id: r.try_get("id")?,
                    name: r.try_get("name")?,
                    external_id: r.try_get("external_id")?,
                    created_at: millis(r.try_get("created_at")?)?,
                    updated_at: millis(r.try_get("updated_at")?)?,
                }),
                None => None,
            }
        });
        Ok(tenant)
    }
}

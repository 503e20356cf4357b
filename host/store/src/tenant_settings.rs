//! The settings a tenant's admin sets for the whole tenant (`/api/tenant/settings`): one row
//! per tenant, a missing row or a NULL column meaning the platform's default.

use sqlx::Row;

use crate::{Result, Store, TenantKey, now_millis, on_pool};

/// A tenant's settings as stored; none is the platform's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantSettings {
    /// The most members of a group room.
    pub room_member_limit: Option<i64>,
    /// The tenant's time zone, an IANA name (the caller checks it).
    pub time_zone: Option<String>,
}

impl Store {
    /// The tenant's settings (all defaults when its admin never set any).
    pub async fn tenant_settings(&self, tenant: &TenantKey) -> Result<TenantSettings> {
        on_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT room_member_limit, time_zone FROM tenant_settings \
                 WHERE org_id = $1 AND tenant_id = $2",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id)
            .fetch_optional(pool).await?;
            match row {
                None => Ok(TenantSettings::default()),
                Some(row) => Ok(TenantSettings {
                    room_member_limit: row.try_get("room_member_limit")?,
                    time_zone: row.try_get("time_zone")?,
                }),
            }
        })
    }

    /// Replaces the tenant's settings. When the time zone changes, the tenant's heartbeats
    /// are rescheduled in the same transaction (their next runs cleared, for the scheduler to
    /// compute in the new zone): heartbeats at the wall-clock times of the zone are due at
    /// other instants now. Answers whether the zone changed.
    pub async fn set_tenant_settings(
        &self,
        tenant: &TenantKey,
        settings: &TenantSettings,
    ) -> Result<bool> {
        let now = now_millis();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let before: Option<Option<String>> = sqlx::query_scalar(
                "SELECT time_zone FROM tenant_settings WHERE org_id = $1 AND tenant_id = $2",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id)
            .fetch_optional(&mut *tx).await?;
            sqlx::query(
                "INSERT INTO tenant_settings (org_id, tenant_id, room_member_limit, time_zone, \
                 updated_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (org_id, tenant_id) DO UPDATE \
                 SET room_member_limit = excluded.room_member_limit, \
                 time_zone = excluded.time_zone, updated_at = excluded.updated_at",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id)
            .bind(settings.room_member_limit).bind(settings.time_zone.as_deref()).bind(now)
            .execute(&mut *tx).await?;
            let zone_changed = before.flatten() != settings.time_zone;
            if zone_changed {
                sqlx::query(
                    "UPDATE heartbeats SET next_run_at = NULL \
                     WHERE org_id = $1 AND tenant_id = $2 AND next_run_at > $3",
                )
                .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(now)
                .execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(zone_changed)
        })
    }
}

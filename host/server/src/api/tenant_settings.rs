//! `/api/tenant/settings`: the settings a tenant's admin changes for the whole tenant. Any
//! user of the tenant reads them (a tenant token); only its admin replaces them.

use atrium_platform::rooms::{DEFAULT_MEMBER_LIMIT, MAX_MEMBER_LIMIT};
use atrium_store::TenantKey;
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use crate::principals::{TenantAdmin, TenantUser};
use crate::{ApiError, HostState, JsonBody};

/// The tenant's settings as answered.
#[derive(Debug, Serialize)]
pub struct SettingsView {
    /// The most members of a group room.
    pub room_member_limit: i64,
    /// Whether `room_member_limit` is the platform's default (50).
    pub room_member_limit_is_default: bool,
    /// The tenant's time zone, an IANA name; null when unset (then UTC). Heartbeats whose
    /// active hours or schedule say `user` read their times in it.
    pub time_zone: Option<String>,
}

/// `PUT /api/tenant/settings`: every setting; one left out (or null) is the platform's
/// default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutSettings {
    /// The most members of a group room, 1 to 1,000. Rooms that already have more keep them;
    /// nobody is added to them until they have fewer.
    #[serde(default)]
    pub room_member_limit: Option<i64>,
    /// The tenant's time zone: an IANA name such as `Europe/Berlin`.
    #[serde(default)]
    pub time_zone: Option<String>,
}

async fn view(state: &HostState, tenant: &TenantKey) -> Result<SettingsView, ApiError> {
    let settings = state.store.tenant_settings(tenant).await?;
    Ok(SettingsView {
        room_member_limit: settings.room_member_limit.unwrap_or(DEFAULT_MEMBER_LIMIT),
        room_member_limit_is_default: settings.room_member_limit.is_none(),
        time_zone: settings.time_zone,
    })
}

/// An IANA time-zone name that the host knows (from its bundled time-zone database).
fn check_time_zone(name: &str) -> Result<(), ApiError> {
    if !name.is_empty() && jiff::tz::TimeZone::get(name).is_ok() {
        return Ok(());
    }
    Err(ApiError::field(
        "time_zone",
        format!(
            "time_zone must be an IANA time-zone name such as `Europe/Berlin` or `UTC`, got `{name}`"
        ),
    ))
}

/// The tenant's settings.
pub async fn get_settings(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
) -> Result<Json<SettingsView>, ApiError> {
    Ok(Json(view(&state, &user.key()).await?))
}

/// Replaces the tenant's settings: 200 with them.
pub async fn put_settings(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    JsonBody(body): JsonBody<PutSettings>,
) -> Result<Json<SettingsView>, ApiError> {
    if let Some(limit) = body.room_member_limit
        && !(1..=MAX_MEMBER_LIMIT).contains(&limit)
    {
        return Err(ApiError::field(
            "room_member_limit",
            format!("room_member_limit must be from 1 to {MAX_MEMBER_LIMIT}, got {limit}"),
        ));
    }
    if let Some(zone) = &body.time_zone {
        check_time_zone(zone)?;
    }
    let tenant = admin.key();
    let before = state.store.tenant_settings(&tenant).await?;
    let settings = atrium_store::TenantSettings {
        room_member_limit: body.room_member_limit,
        time_zone: body.time_zone,
    };
    state.store.set_tenant_settings(&tenant, &settings).await?;
    if before.time_zone != settings.time_zone {
        // Heartbeats at wall-clock times of the tenant's zone are due at other instants now.
        state.store.reschedule_heartbeats(&tenant).await?;
    }
    Ok(Json(view(&state, &tenant).await?))
}

/// The routes of the tenant's settings.
pub(super) fn router() -> Router<HostState> {
    Router::new().route("/tenant/settings", get(get_settings).put(put_settings))
}

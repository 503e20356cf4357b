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
}

async fn view(state: &HostState, tenant: &TenantKey) -> Result<SettingsView, ApiError> {
    let limit = state.store.room_member_limit(tenant).await?;
    Ok(SettingsView {
        room_member_limit: limit.unwrap_or(DEFAULT_MEMBER_LIMIT),
        room_member_limit_is_default: limit.is_none(),
    })
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
    let tenant = admin.key();
    state
        .store
        .set_room_member_limit(&tenant, body.room_member_limit)
        .await?;
    Ok(Json(view(&state, &tenant).await?))
}

/// The routes of the tenant's settings.
pub(super) fn router() -> Router<HostState> {
    Router::new().route("/tenant/settings", get(get_settings).put(put_settings))
}

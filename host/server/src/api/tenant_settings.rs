//! `/api/tenant/settings`: the settings a tenant's admin changes for the whole tenant. Any
//! user of the tenant reads them (a tenant token); only its admin replaces them.

use crate::routing::{Routes, get};
use atrium_platform::tenant_settings;
use axum::Json;
use axum::extract::State;
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

impl From<tenant_settings::Settings> for SettingsView {
    fn from(settings: tenant_settings::Settings) -> Self {
        SettingsView {
            room_member_limit: settings.room_member_limit,
            room_member_limit_is_default: settings.room_member_limit_is_default,
            time_zone: settings.time_zone,
        }
    }
}

/// The tenant's settings.
pub async fn get_settings(
    State(state): State<HostState>,
    TenantUser(user): TenantUser,
) -> Result<Json<SettingsView>, ApiError> {
    let settings = tenant_settings::read(&state.store, &user.key()).await?;
    Ok(Json(settings.into()))
}

/// Replaces the tenant's settings: 200 with them.
pub async fn put_settings(
    State(state): State<HostState>,
    TenantAdmin(admin): TenantAdmin,
    JsonBody(body): JsonBody<PutSettings>,
) -> Result<Json<SettingsView>, ApiError> {
    let new = tenant_settings::NewSettings {
        room_member_limit: body.room_member_limit,
        time_zone: body.time_zone,
    };
    let settings = tenant_settings::replace(&state.store, &admin.key(), new).await?;
    Ok(Json(settings.into()))
}

/// The routes of the tenant's settings.
pub(super) fn router() -> Routes {
    Routes::new().route("/tenant/settings", get(get_settings).put(put_settings))
}

//! The app principal: an app calling the platform from outside the runtime (a container through
//! the compatibility shim), with the `APP_MCP_TOKEN` the host issued for its call
//! (`atrium_platform::identity::app_token`). No or a malformed header is 401 `missing_token`; a
//! token this host did not issue, or one that expired, 401 `invalid_token`.

use atrium_platform::identity::app_token::AppToken;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::extract::bearer_token;
use crate::{ApiError, HostState};

/// An installed app, for the tenant and the call its token names.
#[derive(Debug, Clone)]
pub struct AppCaller(pub AppToken);

impl FromRequestParts<HostState> for AppCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &HostState) -> Result<Self, ApiError> {
        let token = match bearer_token(parts) {
            Some(Some(token)) => token,
            _ => {
                return Err(ApiError::unauthorized_because(
                    "missing_token",
                    "send `Authorization: Bearer <APP_MCP_TOKEN>`, the token the host gave the app's call",
                ));
            }
        };
        let identity = state
            .platform()
            .map(atrium_platform::Platform::identity)
            .ok_or_else(|| {
                ApiError::unauthorized_because("invalid_token", "this host issues no app tokens")
            })?;
        let app = identity
            .issuer()
            .verify_app_token(token)
            .map_err(|message| ApiError::unauthorized_because("invalid_token", message))?;
        state.limiter.admit(
            Some(&format!("app:{}:{}", app.app_slug, app.call_id)),
            &app.org_id,
            Some(&app.tenant_id),
        )?;
        Ok(AppCaller(app))
    }
}

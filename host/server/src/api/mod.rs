//! The `/api` platform endpoints: the developer API under `/api/dev` (developer bearer token:
//! the app registry, preflight, secrets), tenant tokens (organization key), the tenant side
//! (tenant admin or user token: the catalogue, installs, integrations) and the public scope
//! catalogue at `/api/scopes`. Every handler names the principal it accepts in its extractor.

mod audit;
mod commitments;
mod conversations;
mod dev;
mod grants;
mod heartbeats;
mod installs;
mod llm_settings;
mod mcp;
mod rooms;
mod routes;
mod secrets;
mod tenant_settings;
mod tenant_tokens;
pub mod views;
mod wires;

use crate::routing::{Routes, get};

use crate::{ApiError, HostState};

/// The routes under `/api`: each module's own router, merged. A capability adds its module
/// and one line here.
pub(crate) fn router() -> Routes {
    Routes::new()
        .nest("/dev", dev::router().merge(secrets::router()))
        .route("/scopes", get(dev::scopes))
        .merge(tenant_tokens::router())
        .merge(installs::router())
        .merge(llm_settings::router())
        .merge(commitments::router())
        .merge(conversations::router())
        .merge(mcp::router())
        .merge(grants::router())
        .merge(wires::router())
        .merge(rooms::router())
        .merge(heartbeats::router())
        .merge(tenant_settings::router())
        .merge(audit::router())
        .merge(routes::router())
        .fallback(|uri: axum::http::Uri| async move {
            ApiError::not_found(format!("there is no endpoint {}", uri.path()))
        })
}

/// The platform's parts, each 503 `registry_unavailable` when this host runs without them:
/// the one place that answers so.
impl HostState {
    /// The app registry.
    pub(crate) fn registry(&self) -> Result<&atrium_platform::registry::Registry, ApiError> {
        self.platform()
            .map(atrium_platform::Platform::registry)
            .ok_or_else(|| ApiError::registry_unavailable("the app registry"))
    }

    /// Calls into installed apps.
    pub(crate) fn serving(&self) -> Result<&atrium_platform::serving::Serving, ApiError> {
        self.platform()
            .map(atrium_platform::Platform::serving)
            .ok_or_else(|| ApiError::registry_unavailable("the app registry"))
    }

    /// Developer identity.
    pub(crate) fn identity(
        &self,
    ) -> Result<&std::sync::Arc<atrium_platform::identity::Identity>, ApiError> {
        self.platform()
            .map(atrium_platform::Platform::identity)
            .ok_or_else(|| ApiError::registry_unavailable("developer accounts"))
    }

    /// The heartbeat scheduler.
    pub(crate) fn heartbeats(&self) -> Result<&atrium_platform::heartbeats::Scheduler, ApiError> {
        self.platform()
            .map(atrium_platform::Platform::heartbeats)
            .ok_or_else(|| ApiError::registry_unavailable("the heartbeat scheduler"))
    }

    /// The platform, if the host has one.
    pub(crate) fn platform(&self) -> Option<&atrium_platform::Platform> {
        self.platform.as_ref()
    }
}

/// The registry, or 503 when this host runs without one.
fn registry(state: &HostState) -> Result<&atrium_platform::registry::Registry, ApiError> {
    state.registry()
}

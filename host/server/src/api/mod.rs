//! The `/api` platform endpoints: the developer API under `/api/dev` (developer bearer token:
//! the app registry, preflight, secrets), tenant tokens (organization key), the tenant side
//! (tenant admin or user token: the catalogue, installs, integrations) and the public scope
//! catalogue at `/api/scopes`. Every handler names the principal it accepts in its extractor.

mod dev;
mod developer;
mod installs;
mod routes;
mod secrets;
mod tenant;
mod tenant_tokens;
pub mod views;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post, put};

pub use developer::Dev;

use crate::{ApiError, HostState};

/// The request body limit of a version registration: the largest component and a full docs
/// bundle, with room for the multipart framing.
const REGISTER_BODY_BYTES: usize = atrium_platform::registry::MAX_COMPONENT_BYTES + 8 * 1024 * 1024;

/// The routes under `/api`.
pub fn router() -> Router<HostState> {
    let dev = Router::new()
        .route("/me", get(dev::me))
        .route("/login", get(dev::login))
        .route("/preflight", post(dev::preflight))
        .route("/apps", get(dev::list_apps))
        .route("/apps/{slug}", get(dev::show_app))
        .route(
            "/apps/{slug}/versions",
            post(dev::register).layer(DefaultBodyLimit::max(REGISTER_BODY_BYTES)),
        )
        .route(
            "/apps/{slug}/versions/{version}/defaults/templates",
            post(dev::set_templates),
        )
        .route(
            "/apps/{slug}/versions/{version}/bundle",
            put(dev::set_bundle).layer(DefaultBodyLimit::max(
                atrium_platform::registry::BUNDLE_ARCHIVE_BYTES,
            )),
        )
        .route(
            "/apps/{slug}/versions/{version}/promote",
            post(dev::promote),
        )
        .route("/apps/{slug}/archive", post(dev::archive))
        .route("/apps/{slug}/upgrade", post(dev::force_upgrade))
        .route("/apps/{slug}/secrets", get(secrets::list))
        .route(
            "/apps/{slug}/secrets/{key}",
            put(secrets::put).get(secrets::get).delete(secrets::delete),
        );
    Router::new()
        .nest("/dev", dev)
        .route("/scopes", get(dev::scopes))
        .route(
            "/tenants/{tenant}/tokens",
            post(tenant_tokens::create).get(tenant_tokens::list),
        )
        .route(
            "/tenants/{tenant}/tokens/{id}",
            axum::routing::delete(tenant_tokens::revoke),
        )
        .route("/tenant/me", get(tenant_tokens::me))
        .route("/apps", get(installs::catalogue))
        .route("/apps/{app}/tools/{name}", post(installs::call_tool))
        .route(
            "/apps/{app}/routes/{*path}",
            axum::routing::any(routes::session).layer(DefaultBodyLimit::max(
                atrium_platform::serving::routes::MAX_BODY_BYTES,
            )),
        )
        .route(
            "/apps/{app}/public/t/{tenant}/{*path}",
            axum::routing::any(routes::public).layer(DefaultBodyLimit::max(
                atrium_platform::serving::routes::MAX_BODY_BYTES,
            )),
        )
        .route("/inbound/{channel}", post(installs::inbound))
        .route("/installs", get(installs::list))
        .route(
            "/installs/{app}",
            get(installs::show).patch(installs::patch),
        )
        .route(
            "/installs/{app}/secrets/{key}",
            put(installs::put_override).delete(installs::delete_override),
        )
        .route("/installs/{app}/activate", post(installs::activate))
        .route("/installs/{app}/deactivate", post(installs::deactivate))
        .route("/installs/{app}/upgrade", post(installs::upgrade))
        .route("/installs/{app}/agents", get(installs::agents))
        .route("/installs/{app}/workflows", get(installs::workflows))
        .route(
            "/installs/{app}/workflows/{workflow}",
            axum::routing::patch(installs::override_workflow),
        )
        .route(
            "/installs/{app}/agents/{agent}",
            axum::routing::patch(installs::edit_agent),
        )
        .route("/integrations", get(installs::list_integrations))
        .route("/integrations/{provider}", put(installs::put_integration))
        .fallback(|uri: axum::http::Uri| async move {
            ApiError::not_found(format!("there is no endpoint {}", uri.path()))
        })
}

/// The platform's parts, each 503 `registry_unavailable` when this host runs without them:
/// the one place that answers so.
impl HostState {
    /// The app registry.
    pub(crate) fn registry(&self) -> Result<&atrium_platform::registry::Registry, ApiError> {
        self.registry
            .as_ref()
            .ok_or_else(|| ApiError::registry_unavailable("the app registry"))
    }

    /// Calls into installed apps.
    pub(crate) fn serving(&self) -> Result<&atrium_platform::serving::Serving, ApiError> {
        self.serving
            .as_ref()
            .ok_or_else(|| ApiError::registry_unavailable("the app registry"))
    }

    /// Developer identity.
    pub(crate) fn identity(
        &self,
    ) -> Result<&std::sync::Arc<atrium_platform::identity::Identity>, ApiError> {
        self.identity
            .as_ref()
            .ok_or_else(|| ApiError::registry_unavailable("developer accounts"))
    }
}

/// The registry, or 503 when this host runs without one.
fn registry(state: &HostState) -> Result<&atrium_platform::registry::Registry, ApiError> {
    state.registry()
}

//! The `/api` platform endpoints. Today: the developer API under `/api/dev` (developer bearer
//! token: the app registry, preflight, secrets) and the public scope catalogue at
//! `/api/scopes`. Every handler names the principal it accepts in its extractor.

mod dev;
mod developer;
mod secrets;
mod views;

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
        .route("/apps/{slug}/secrets", get(secrets::list))
        .route(
            "/apps/{slug}/secrets/{key}",
            put(secrets::put).get(secrets::get).delete(secrets::delete),
        );
    Router::new()
        .nest("/dev", dev)
        .route("/scopes", get(dev::scopes))
        .fallback(|uri: axum::http::Uri| async move {
            ApiError::not_found(format!("there is no endpoint {}", uri.path()))
        })
}

/// The registry, or 503 when this host runs without one.
fn registry(state: &HostState) -> Result<&atrium_platform::registry::Registry, ApiError> {
    state.registry.as_ref().ok_or_else(|| {
        ApiError::unavailable(
            "registry_unavailable",
            "the app registry is not configured on this host",
        )
    })
}

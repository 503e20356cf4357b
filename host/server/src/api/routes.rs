//! Installed apps' custom routes (`http_routes`), served by the app's `wasi:http` export behind
//! the host's security floor (`atrium_platform::serving::routes`):
//!
//! - `ANY /api/apps/{app}/routes/{*path}`: a tenant user or admin, on the tenant's active
//!   install of `app`;
//! - `GET /api/apps/{app}/public/t/{tenant}/{*path}`: nobody, on routes declared
//!   `public: true` of the install the address names, with `public_route` set.
//!
//! The app gets the path below the address (`/echo/hello?x=1`, undecoded: the SDK binds the
//! route's placeholders from it), the allowed request headers and the host's context headers;
//! the client gets the app's status (a server error becomes 502 `app_failed`), its allowed
//! headers and its body.

use atrium_platform::registry::Actor;
use atrium_platform::serving::routes::{self, BodyRefusal, RouteTarget};
use atrium_platform::serving::{ServeError, Serving};
use atrium_runtime::CallError;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, Request, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::principals::TenantUser;
use crate::routing::Routes;
use crate::{ApiError, HostState};

/// `ANY /api/apps/{app}/routes/{*path}` (tenant user or admin).
pub async fn session(
    State(state): State<HostState>,
    TenantUser(principal): TenantUser,
    Path((app, _)): Path<(String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let serving = serving(&state)?;
    let body = read_body(body)?;
    // apps / {app} / routes / the app's path
    let (prefix, path) = split_path(&uri, 3);
    let tenant = Actor::user(
        atrium_store::TenantKey::new(principal.org_id, principal.tenant_id),
        principal.user_id,
    );
    let target = serving
        .session_route(
            &tenant,
            principal.role.as_str(),
            &app,
            method.as_str(),
            &path,
        )
        .await?;
    serve(target, method, &prefix, path, &headers, body, None).await
}

/// `GET /api/apps/{app}/public/t/{tenant}/{*path}` (nobody). Every other method, and every
/// address that does not lead to a public route, answers the same 404.
pub async fn public(
    State(state): State<HostState>,
    Path((app, tenant, _)): Path<(String, String, String)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let serving = serving(&state)?;
    let body = read_body(body)?;
    // apps / {app} / public / t / {tenant} / the app's path
    let (prefix, path) = split_path(&uri, 5);
    let target = serving
        .public_route(&tenant, &app, method.as_str(), &path)
        .await?;
    // Anonymous callers share the tenant's budget: a flood of a public address is limited
    // like the tenant's own traffic (and counts against it).
    state
        .limiter
        .admit(None, &target.tenant.org_id, Some(&target.tenant.tenant_id))?;
    serve(
        target,
        method,
        &prefix,
        path,
        &headers,
        body,
        Some(routes::PUBLIC_NOT_FOUND),
    )
    .await
}

fn serving(state: &HostState) -> Result<&Serving, ApiError> {
    state.serving()
}

/// The body within the cap (413 beyond it: the route's body limit stops reading there).
fn read_body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(routes::MAX_BODY_BYTES)
        } else {
            ApiError::bad_request(
                format!("the body cannot be read: {}", rejection.body_text()),
                None,
            )
        }
    })
}

/// Runs the call and passes the answer through the floor. `not_found` is the one 404 message
/// of the public address.
async fn serve(
    target: RouteTarget,
    method: Method,
    prefix: &str,
    path: String,
    headers: &HeaderMap,
    body: Bytes,
    not_found: Option<&str>,
) -> Result<Response, ApiError> {
    if let Err(refusal) = routes::check_body(headers, body.len()) {
        return Ok(match refusal {
            BodyRefusal::TooLarge => ApiError::too_large(routes::MAX_BODY_BYTES).into_response(),
            BodyRefusal::UnsupportedMediaType(message) => unsupported_media_type(message),
        });
    }
    let uri: Uri = path
        .parse()
        .map_err(|e| ApiError::bad_request(format!("the path is not valid: {e}"), None))?;
    let app_headers = target.request_headers(headers, body.len());
    let mut request = Request::new(body);
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.headers_mut() = app_headers;
    let response = match target.app.handle_http(&target.invocation, request).await {
        Ok(response) => response,
        Err(CallError::NotDeclared(message)) => {
            return Err(ApiError::not_found(not_found.unwrap_or(&message)));
        }
        Err(error) => return Err(ServeError::Call(error).into()),
    };
    match routes::filter_response(response, prefix) {
        Ok(response) => Ok(response.map(Body::from).into_response()),
        Err(status) => Err(ServeError::Call(CallError::Failed(format!(
            "its route answered {status}; the host does not pass an app's server errors on"
        )))
        .into()),
    }
}

/// 415 in the host's error shape (`param` names the header at fault).
fn unsupported_media_type(message: String) -> Response {
    let body = serde_json::json!({"error": {
        "message": message,
        "type": "invalid_request_error",
        "param": "content-type",
        "code": "unsupported_media_type",
    }});
    (StatusCode::UNSUPPORTED_MEDIA_TYPE, Json(body)).into_response()
}

/// Splits the request's path after its first `skip` segments below `/api` into the address
/// the request came in on (`/api/apps/notes/routes`, for a `Location` of the app) and the app's
/// path with the query (`/echo/hello?x=1`), both as sent, still percent-encoded.
fn split_path(uri: &Uri, skip: usize) -> (String, String) {
    let raw = uri.path();
    // Nested under /api, the router sees the path without it.
    let raw = raw
        .strip_prefix("/api")
        .filter(|r| r.starts_with("/apps/"))
        .unwrap_or(raw);
    let mut segments = raw.trim_start_matches('/').splitn(skip + 1, '/');
    let address: Vec<&str> = segments.by_ref().take(skip).collect();
    let mut path = format!("/{}", segments.next().unwrap_or_default());
    if let Some(query) = uri.query() {
        path.push('?');
        path.push_str(query);
    }
    (format!("/api/{}", address.join("/")), path)
}

/// The routes into apps' HTTP routes: a tenant's session, and the public ones.
pub(super) fn router() -> Routes {
    Routes::new()
        .route(
            "/apps/{app}/routes/{*path}",
            crate::routing::any(session)
                .limit_body(atrium_platform::serving::routes::MAX_BODY_BYTES),
        )
        .route(
            "/apps/{app}/public/t/{tenant}/{*path}",
            crate::routing::any(public)
                .limit_body(atrium_platform::serving::routes::MAX_BODY_BYTES),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apps_path_is_what_follows_the_address() {
        let uri: Uri = "/apps/notes/routes/echo/hello%20you?x=1".parse().unwrap();
        assert_eq!(
            split_path(&uri, 3),
            (
                "/api/apps/notes/routes".to_owned(),
                "/echo/hello%20you?x=1".to_owned()
            )
        );
        let uri: Uri = "/api/apps/notes/public/t/shop%2Feu-0123456789abcdef/open"
            .parse()
            .unwrap();
        assert_eq!(
            split_path(&uri, 5),
            (
                "/api/apps/notes/public/t/shop%2Feu-0123456789abcdef".to_owned(),
                "/open".to_owned()
            )
        );
    }
}

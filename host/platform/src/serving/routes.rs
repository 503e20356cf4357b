//! Custom routes of installed apps (`http_routes`): which install and which declared route a
//! request reaches, the public address of an install, and the security floor every request and
//! every answer passes (header allow-lists, a body cap, body content types, status rewriting).
//!
//! The server speaks HTTP and runs the call (`App::handle_http`); what it decides comes from
//! here, once, so that a tenant's session and the public address apply the same rules.
//!
//! The public address of an install is `/api/apps/{app}/public/t/{tenant}/{path}`, where
//! `{tenant}` is [`public_tenant_segment`]: the tenant id (percent-encoded where a URL needs
//! it), `-`, and 16 hex digits of the SHA-256 of the organization id. Tenant ids are unique
//! within an organization only; the fingerprint names the organization without showing its id,
//! and a request is served only when exactly one active install of the app matches both parts.
//! The address is derived, never stored, so it is the same on every host of a database, the
//! same after a re-activation, and `ctx.public_callback_url` can build it without a query.
//!
//! ```
//! use atrium_platform::serving::routes::{parse_public_tenant, public_tenant_segment};
//!
//! let segment = public_tenant_segment("org_51c2", "shop");
//! assert!(segment.starts_with("shop-"));
//! assert_eq!(parse_public_tenant(&segment).map(|(tenant, _)| tenant), Some("shop"));
//! ```

use atrium_manifest::HttpRoute;
use atrium_manifest::sandbox::ChainContext;
use atrium_runtime::{App, Caller, FetchResponse, Invocation, RouteResponse};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use sha2::{Digest, Sha256};

use super::Serving;
use crate::registry::{Actor, RegistryError};

/// The largest request body a route gets (413 beyond it). The Rust SDK reads at most as much.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// The client's request headers an app sees; every other one is dropped (`Authorization`,
/// `Cookie`, forwarding and hop-by-hop headers, and any `x-atrium-*` a client sends).
/// `content-length` is set by the host from the body it forwards.
pub const REQUEST_HEADERS: &[&str] = &[
    "accept",
    "accept-language",
    "content-type",
    "if-modified-since",
    "if-none-match",
    "user-agent",
    "x-request-id",
];

/// The app's response headers a client sees; every other one is dropped (`Set-Cookie` among
/// them). `location` only when it is a relative reference (one that starts with `/` is
/// rewritten under the address the request came in on); `content-length` is set by the host
/// from the body it answers.
pub const RESPONSE_HEADERS: &[&str] = &[
    "cache-control",
    "content-language",
    "content-type",
    "etag",
    "last-modified",
    "location",
    "x-request-id",
];

/// The media types a request body may have (415 otherwise); parameters such as `charset` or
/// `boundary` are allowed.
pub const BODY_CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/x-www-form-urlencoded",
    "multipart/form-data",
    "text/plain",
];

/// Set by the host on every route call: the tenant the call is for.
pub const TENANT_HEADER: &str = "x-atrium-tenant";
/// Set by the host on a session's route call: the calling user's id.
pub const USER_HEADER: &str = "x-atrium-user";
/// Set by the host on a session's route call: the calling user's role, `admin` or `user`.
pub const ROLE_HEADER: &str = "x-atrium-role";
/// The header naming the calling app on an `apps.fetch`, set by the host and only by it.
pub const CALLER_APP_HEADER: &str = "x-atrium-caller-app";

/// The one answer of the public address to whatever does not lead to a public route: an
/// unknown or malformed tenant, an unknown app, no active install, a route that is not declared
/// or not public. It never says which.
pub const PUBLIC_NOT_FOUND: &str = "there is no public route at this address";

/// How many hex digits of the organization's fingerprint the public address carries.
const FINGERPRINT_HEX: usize = 16;

/// A request that reached a declared route of an active install, ready to run.
pub struct RouteTarget {
    /// The loaded app of the install's version.
    pub app: App,
    /// The call's context: the install's scopes and settings, `public_route` on the public
    /// address.
    pub invocation: Invocation,
    /// The tenant (of its organization) the call is for, and the user on a session's call.
    pub tenant: Actor,
    /// The role of the session's user, none on the public address.
    pub role: Option<String>,
    /// The declared route the request matched.
    pub route: HttpRoute,
}

impl Serving {
    /// The declared route `method path` (path relative to the app, with or without a query)
    /// of the tenant's active install of `app_slug`, for a tenant user or admin of `role`.
    /// 404 when the tenant has no active install or the app declares no such route (another
    /// method of a declared path included).
    pub async fn session_route(
        &self,
        tenant: &Actor,
        role: &str,
        app_slug: &str,
        method: &str,
        path: &str,
    ) -> Result<RouteTarget, RegistryError> {
        let mut target = self
            .route_target(tenant, app_slug, method, path, false)
            .await?;
        target.role = Some(role.to_owned());
        Ok(target)
    }

    /// The public route `method path` of the install that the public address names by
    /// `tenant_segment` (decoded, see [`public_tenant_segment`]) and `app_slug`. Every way of
    /// missing answers the same 404 ([`PUBLIC_NOT_FOUND`]); the call runs with
    /// `public_route` set and no user.
    pub async fn public_route(
        &self,
        tenant_segment: &str,
        app_slug: &str,
        method: &str,
        path: &str,
    ) -> Result<RouteTarget, RegistryError> {
        let miss = || RegistryError::NotFound(PUBLIC_NOT_FOUND.into());
        // Public routes are GET only (the manifest refuses any other).
        if method != "GET" {
            return Err(miss());
        }
        let Some((tenant_id, fingerprint)) = parse_public_tenant(tenant_segment) else {
            return Err(miss());
        };
        let orgs = self
            .registry()
            .store()
            .active_install_orgs(tenant_id, app_slug)
            .await?;
        let mut matching = orgs
            .into_iter()
            .filter(|org| org_fingerprint(org) == fingerprint);
        // Two organizations with one fingerprint would make the address ambiguous: neither is
        // served rather than the wrong one.
        let (Some(org_id), None) = (matching.next(), matching.next()) else {
            return Err(miss());
        };
        let tenant = Actor::host(atrium_store::TenantKey::new(org_id, tenant_id));
        match self
            .route_target(&tenant, app_slug, method, path, true)
            .await
        {
            Err(RegistryError::NotFound(_)) => Err(miss()),
            other => other,
        }
    }

    /// `apps.fetch`: `caller`'s call of route `method path` of `callee` for `tenant`, on
    /// `chain` (advanced by the sandbox), once the grant admits `__route__` (the caller
    /// checks it: [`crate::grants::honoured`]). The request passes
    /// the same floor as a tenant's (declared routes only, the body cap and content types, the
    /// header allow-lists, an app's server error answered 502), with [`CALLER_APP_HEADER`]
    /// naming the caller. A refusal is the `AgentCallError` reason.
    #[allow(clippy::too_many_arguments)]
    pub async fn app_fetch(
        &self,
        tenant: &Actor,
        caller: &str,
        callee: &str,
        method: &str,
        path: &str,
        body: Option<Vec<u8>>,
        chain: &ChainContext,
    ) -> Result<FetchResponse, String> {
        let body = bytes::Bytes::from(body.unwrap_or_default());
        let mut incoming = HeaderMap::new();
        if !body.is_empty() {
            let media = if serde_json::from_slice::<serde::de::IgnoredAny>(&body).is_ok() {
                "application/json"
            } else {
                "text/plain; charset=utf-8"
            };
            incoming.insert("content-type", HeaderValue::from_static(media));
        }
        check_body(&incoming, body.len()).map_err(|refusal| match refusal {
            BodyRefusal::TooLarge => {
                format!("the body is larger than a route accepts ({MAX_BODY_BYTES} bytes)")
            }
            BodyRefusal::UnsupportedMediaType(message) => message,
        })?;
        let mut target = self
            .route_target(tenant, callee, method, path, false)
            .await
            .map_err(|e| format!("route not found: {e}"))?;
        target.invocation.chain = chain.clone();
        let mut headers = target.request_headers(&incoming, body.len());
        if let Ok(value) = HeaderValue::from_str(caller) {
            headers.insert(HeaderName::from_static(CALLER_APP_HEADER), value);
        }
        for (name, value) in chain.to_headers() {
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(name.to_ascii_lowercase().as_bytes()),
                HeaderValue::from_str(&value),
            ) {
                headers.insert(name, value);
            }
        }
        let uri: http::Uri = path
            .parse()
            .map_err(|e| format!("the path is not valid: {e}"))?;
        let mut request = http::Request::new(body);
        *request.method_mut() = method
            .parse()
            .map_err(|_| format!("`{method}` is not an HTTP method"))?;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        let response = target
            .app
            .handle_http(&target.invocation, request)
            .await
            .map_err(|e| format!("the route of `{callee}` failed: {e}"))?;
        let prefix = format!("/api/apps/{callee}/routes");
        let (status, headers, body) = match filter_response(response, &prefix) {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                let headers = parts
                    .headers
                    .iter()
                    .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
                    .collect();
                (parts.status.as_u16(), headers, body.to_vec())
            }
            Err(status) => (
                502,
                vec![("content-type".to_owned(), "application/json".to_owned())],
                serde_json::json!({"error": {
                    "message": format!("the route of `{callee}` answered {status}; the host does not pass an app's server errors on"),
                    "code": "app_failed",
                }})
                .to_string()
                .into_bytes(),
            ),
        };
        Ok(FetchResponse {
            status,
            headers,
            body,
        })
    }

    async fn route_target(
        &self,
        tenant: &Actor,
        app_slug: &str,
        method: &str,
        path: &str,
        public: bool,
    ) -> Result<RouteTarget, RegistryError> {
        let install = self.active_install(tenant, app_slug).await?;
        let app = self.app(app_slug, &install.version).await?;
        let route = find_route(&app.manifest().http_routes, method, path, public)
            .map_err(RegistryError::NotFound)?;
        let mut invocation = self
            .invocation(tenant, &install, &app, Caller::Platform)
            .await?;
        invocation.public_route = public;
        Ok(RouteTarget {
            app,
            invocation,
            tenant: tenant.clone(),
            role: None,
            route,
        })
    }
}

/// The route of `routes` that `method path` reaches (on the public address, only routes
/// declared `public: true` count), or why none does.
pub fn find_route(
    routes: &[HttpRoute],
    method: &str,
    path: &str,
    public: bool,
) -> Result<HttpRoute, String> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let candidates = || {
        routes
            .iter()
            .filter(move |r| (r.public || !public) && r.match_path(path).is_some())
    };
    if let Some(route) = candidates().find(|r| r.method.as_str() == method) {
        return Ok(route.clone());
    }
    let others: Vec<&str> = candidates().map(|r| r.method.as_str()).collect();
    Err(if others.is_empty() {
        format!("the app declares no route `{method} {path}`")
    } else {
        format!(
            "the app declares no route `{method} {path}`; that path answers {}",
            others.join(", ")
        )
    })
}

/// The `{tenant}` segment of an install's public address (not yet percent-encoded): the tenant
/// id, `-`, and the fingerprint of its organization.
pub fn public_tenant_segment(org_id: &str, tenant_id: &str) -> String {
    format!("{tenant_id}-{}", org_fingerprint(org_id))
}

/// Splits a decoded `{tenant}` segment into the tenant id and the organization's fingerprint;
/// none when it is not of that shape.
pub fn parse_public_tenant(segment: &str) -> Option<(&str, &str)> {
    let (tenant, fingerprint) = segment.rsplit_once('-')?;
    let well_formed = !tenant.is_empty()
        && fingerprint.len() == FINGERPRINT_HEX
        && fingerprint
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    well_formed.then_some((tenant, fingerprint))
}

/// The public address of `path` (a path of the app, `/open`) for the tenant's install of
/// `app_slug`: what `ctx.public_callback_url(path)` answers.
pub fn public_route_path(app_slug: &str, tenant: &Actor, path: &str) -> String {
    let segment = public_tenant_segment(&tenant.org_id, &tenant.tenant_id);
    format!(
        "/api/apps/{app_slug}/public/t/{}/{}",
        percent_encode(&segment),
        path.trim_start_matches('/')
    )
}

/// 16 hex digits of the SHA-256 of the organization id, with a label of its own so that the
/// digest serves nothing else.
fn org_fingerprint(org_id: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"atrium public route\0")
        .chain_update(org_id.as_bytes())
        .finalize();
    digest
        .iter()
        .take(FINGERPRINT_HEX / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Percent-encodes everything but the unreserved characters of RFC 3986.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Why a request body is refused before the app sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyRefusal {
    /// Larger than [`MAX_BODY_BYTES`]: 413.
    TooLarge,
    /// A body whose content type is missing or not in [`BODY_CONTENT_TYPES`]: 415. The
    /// sentence says which.
    UnsupportedMediaType(String),
}

/// Checks a request body (already read, at most [`MAX_BODY_BYTES`] plus one) and its content
/// type. An empty body needs no content type.
pub fn check_body(headers: &HeaderMap, body_len: usize) -> Result<(), BodyRefusal> {
    if body_len > MAX_BODY_BYTES {
        return Err(BodyRefusal::TooLarge);
    }
    if body_len == 0 {
        return Ok(());
    }
    let allowed = BODY_CONTENT_TYPES.join(", ");
    let Some(value) = headers.get("content-type") else {
        return Err(BodyRefusal::UnsupportedMediaType(format!(
            "a request body needs a Content-Type, one of {allowed}"
        )));
    };
    let media = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if BODY_CONTENT_TYPES.contains(&media.as_str()) {
        Ok(())
    } else {
        Err(BodyRefusal::UnsupportedMediaType(format!(
            "a request body of type `{media}` is not accepted; the types are {allowed}"
        )))
    }
}

impl RouteTarget {
    /// The headers the app gets for this call (see [`request_headers`]).
    pub fn request_headers(&self, incoming: &HeaderMap, body_len: usize) -> HeaderMap {
        request_headers(incoming, &self.tenant, self.role.as_deref(), body_len)
    }
}

/// The headers the app gets: the client's allowed ones ([`REQUEST_HEADERS`]), the length of
/// the body forwarded, and the host's own context headers ([`TENANT_HEADER`], and on a
/// session's call [`USER_HEADER`] and [`ROLE_HEADER`]), set here and only here.
pub fn request_headers(
    incoming: &HeaderMap,
    tenant: &Actor,
    role: Option<&str>,
    body_len: usize,
) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for name in REQUEST_HEADERS {
        for value in incoming.get_all(*name) {
            headers.append(HeaderName::from_static(name), value.clone());
        }
    }
    if body_len > 0 {
        headers.insert("content-length", HeaderValue::from(body_len));
    }
    let context = [
        (TENANT_HEADER, Some(tenant.tenant_id.as_str())),
        (USER_HEADER, tenant.user_id.as_deref()),
        (ROLE_HEADER, role),
    ];
    for (name, value) in context {
        // Tenant ids have no control characters, so every one is a valid header value.
        if let Some(value) = value.and_then(|v| HeaderValue::from_bytes(v.as_bytes()).ok()) {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
    headers
}

/// The app's answer as the client gets it: its allowed headers ([`RESPONSE_HEADERS`]) and
/// `x-content-type-options: nosniff`, or `Err(status)` when the app answered a status outside
/// 200 to 499 (a server error: the host answers 502 `app_failed` and drops the app's body).
/// `prefix` is the address the request came in on (`/api/apps/notes/routes`); a `Location`
/// that starts with `/` is a path of the app and is rewritten under it.
pub fn filter_response(response: RouteResponse, prefix: &str) -> Result<RouteResponse, u16> {
    let status = response.status().as_u16();
    if !(200..500).contains(&status) {
        return Err(status);
    }
    let (mut parts, body) = response.into_parts();
    let from_app = std::mem::take(&mut parts.headers);
    for name in RESPONSE_HEADERS {
        for value in from_app.get_all(*name) {
            let value = if *name == "location" {
                match relative_location(value, prefix) {
                    Some(value) => value,
                    None => continue,
                }
            } else {
                value.clone()
            };
            parts.headers.append(HeaderName::from_static(name), value);
        }
    }
    parts.headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    Ok(RouteResponse::from_parts(parts, body))
}

/// A `Location` an app may send: a relative reference (no scheme, not `//host`, no backslash
/// or whitespace a browser might reinterpret). One that starts with `/` is rewritten under
/// `prefix`.
fn relative_location(value: &HeaderValue, prefix: &str) -> Option<HeaderValue> {
    let text = value.to_str().ok()?;
    let scheme_end = text.find(['/', '?', '#']).unwrap_or(text.len());
    if text.is_empty()
        || text.starts_with("//")
        || text[..scheme_end].contains(':')
        || text.contains('\\')
        || text
            .chars()
            .any(|c| c.is_ascii_whitespace() || c.is_control())
    {
        return None;
    }
    if text.starts_with('/') {
        HeaderValue::from_str(&format!("{}{text}", prefix.trim_end_matches('/'))).ok()
    } else {
        Some(value.clone())
    }
}

#[cfg(test)]
mod tests {
    use atrium_manifest::Method;
    use bytes::Bytes;
    use reqwest::StatusCode;

    use super::*;

    fn route(path: &str, method: Method, public: bool) -> HttpRoute {
        HttpRoute {
            path: path.into(),
            method,
            public,
        }
    }

    #[test]
    fn routes_match_by_method_and_path_and_public_only_on_the_public_address() {
        let routes = [
            route("/echo/{word}", Method::Get, false),
            route("/submit", Method::Post, false),
            route("/open", Method::Get, true),
        ];
        let found = find_route(&routes, "GET", "/echo/hello?x=1", false).unwrap();
        assert_eq!(found.path, "/echo/{word}");
        let wrong = find_route(&routes, "DELETE", "/submit", false).unwrap_err();
        assert!(wrong.contains("answers POST"), "{wrong}");
        assert!(find_route(&routes, "GET", "/nothing", false).is_err());
        assert!(find_route(&routes, "GET", "/open", true).is_ok());
        assert!(find_route(&routes, "GET", "/echo/hello", true).is_err());
        assert!(find_route(&routes, "GET", "/echo/a/b", false).is_err());
    }

    #[test]
    fn the_tenant_segment_names_one_organization_and_round_trips() {
        let a = public_tenant_segment("org_aaaa", "shop-eu");
        let b = public_tenant_segment("org_bbbb", "shop-eu");
        assert_ne!(a, b, "the same tenant id in two organizations");
        let (tenant, fingerprint) = parse_public_tenant(&a).unwrap();
        assert_eq!(tenant, "shop-eu");
        assert_eq!(fingerprint, org_fingerprint("org_aaaa"));
        assert_eq!(public_tenant_segment("org_aaaa", "shop-eu"), a, "stable");
        for bad in [
            "shop",
            "-0123456789abcdef",
            "shop-0123",
            "shop-0123456789ABCDEF",
            "shop-0123456789abcdeg",
        ] {
            assert_eq!(parse_public_tenant(bad), None, "{bad}");
        }
        let tenant = Actor::host(atrium_store::TenantKey::new("org_aaaa", "Shop EU/1"));
        let path = public_route_path("notes", &tenant, "/open");
        let fp = org_fingerprint("org_aaaa");
        assert_eq!(
            path,
            format!("/api/apps/notes/public/t/Shop%20EU%2F1-{fp}/open")
        );
    }

    #[test]
    fn bodies_are_capped_and_typed() {
        let mut headers = HeaderMap::new();
        assert_eq!(check_body(&headers, 0), Ok(()));
        assert!(matches!(
            check_body(&headers, 3),
            Err(BodyRefusal::UnsupportedMediaType(_))
        ));
        headers.insert(
            "content-type",
            HeaderValue::from_static("Application/JSON; charset=utf-8"),
        );
        assert_eq!(check_body(&headers, 3), Ok(()));
        assert_eq!(
            check_body(&headers, MAX_BODY_BYTES + 1),
            Err(BodyRefusal::TooLarge)
        );
        headers.insert("content-type", HeaderValue::from_static("application/xml"));
        assert!(matches!(
            check_body(&headers, 3),
            Err(BodyRefusal::UnsupportedMediaType(m)) if m.contains("application/xml")
        ));
    }

    fn response(status: u16, headers: &[(&'static str, &'static str)]) -> RouteResponse {
        let mut response = RouteResponse::new(Bytes::from_static(b"body"));
        *response.status_mut() = StatusCode::from_u16(status).unwrap();
        for (name, value) in headers {
            response
                .headers_mut()
                .append(*name, HeaderValue::from_static(value));
        }
        response
    }

    #[test]
    fn answers_keep_only_allowed_headers_and_server_errors_are_the_apps() {
        let from_app = response(
            302,
            &[
                ("content-type", "text/plain"),
                ("set-cookie", "session=1"),
                ("cache-control", "no-store"),
                ("cache-control", "private"),
                ("content-length", "999"),
                ("x-powered-by", "probe"),
                ("location", "/echo/next?x=1"),
            ],
        );
        let out = filter_response(from_app, "/api/apps/notes/routes").unwrap();
        let h = out.headers();
        assert_eq!(h["content-type"], "text/plain");
        assert_eq!(h.get_all("cache-control").iter().count(), 2);
        assert!(h.get("set-cookie").is_none());
        assert!(h.get("x-powered-by").is_none());
        assert!(h.get("content-length").is_none());
        assert_eq!(h["location"], "/api/apps/notes/routes/echo/next?x=1");
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(out.body().as_ref(), b"body");

        for (location, kept) in [
            ("https://evil.example/", None),
            ("//evil.example/x", None),
            ("/\\evil.example", None),
            ("javascript:alert(1)", None),
            ("next?page=2", Some("next?page=2")),
        ] {
            let out = filter_response(response(303, &[("location", location)]), "/p").unwrap();
            assert_eq!(
                out.headers().get("location").map(|v| v.to_str().unwrap()),
                kept,
                "{location}"
            );
        }
        for status in [500, 503, 101] {
            assert_eq!(
                filter_response(response(status, &[]), "/p").err(),
                Some(status)
            );
        }
        assert!(filter_response(response(404, &[]), "/p").is_ok());
    }

    #[test]
    fn the_app_sees_allowed_headers_and_the_hosts_context_only() {
        let mut incoming = HeaderMap::new();
        for (name, value) in [
            ("authorization", "Bearer att_secret"),
            ("cookie", "session=1"),
            ("accept", "application/json"),
            ("x-request-id", "req-1"),
            ("x-atrium-tenant", "someone-else"),
            ("x-atrium-user", "forged"),
            ("x-forwarded-for", "10.0.0.1"),
            ("content-length", "999"),
        ] {
            incoming.append(name, HeaderValue::from_static(value));
        }
        let tenant = Actor::user(atrium_store::TenantKey::new("org_a", "shop"), "u-1");
        let headers = request_headers(&incoming, &tenant, Some("admin"), 3);
        assert!(headers.get("authorization").is_none());
        assert!(headers.get("cookie").is_none());
        assert!(headers.get("x-forwarded-for").is_none());
        assert_eq!(headers["accept"], "application/json");
        assert_eq!(headers["x-request-id"], "req-1");
        assert_eq!(headers[TENANT_HEADER], "shop");
        assert_eq!(headers.get_all(TENANT_HEADER).iter().count(), 1);
        assert_eq!(headers[USER_HEADER], "u-1");
        assert_eq!(headers[ROLE_HEADER], "admin");
        assert_eq!(headers["content-length"], "3");

        let public = Actor {
            user_id: None,
            ..tenant
        };
        let headers = request_headers(&incoming, &public, None, 0);
        assert!(
            headers.get(USER_HEADER).is_none(),
            "no user on the public address"
        );
        assert!(headers.get(ROLE_HEADER).is_none());
        assert!(headers.get("content-length").is_none());
    }
}

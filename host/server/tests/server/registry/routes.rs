//! Installed apps' custom routes over HTTP: `ANY /api/apps/{app}/routes/{*path}` for a
//! tenant's session and `GET /api/apps/{app}/public/t/{tenant}/{*path}` for nobody, behind the
//! host's floor (headers, body cap, content types, status rewriting), on SQLite and PostgreSQL.
//!
//! These checks read response headers, which the shared [`super::Host`] does not return, so
//! the host here is served the same way (`atrium_server::serve` on a free port, the registry of
//! [`super::open_registry`]) and keeps its address.

use std::time::Duration;

use atrium_platform::identity::{Identity, TokenIssuer};
use atrium_platform::registry::Actor;
use atrium_platform::sealing::SecretsKey;
use atrium_platform::serving::routes::{PUBLIC_NOT_FOUND, public_route_path};
use atrium_store::{NewDeveloper, Store};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::{code, message, open_registry, slug};
use crate::{state, stores, unique};

/// A host on a free port whose address the test keeps.
struct RouteHost {
    base: String,
    client: reqwest::Client,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
    _data: tempfile::TempDir,
    issuer: TokenIssuer,
}

/// An answer: status, headers, and the body as JSON (or the text as a JSON string).
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl RouteHost {
    async fn start(store: &Store) -> RouteHost {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path();
        let secrets = SecretsKey::load_or_create(dir, None).unwrap();
        let registry = open_registry(store, dir, secrets);
        let identity = Identity::new(TokenIssuer::load_or_create(dir, None).unwrap(), None);
        let issuer = TokenIssuer::load_or_create(dir, None).unwrap();
        let state = state(store, vec![]).with_platform(atrium_platform::PlatformParts::new(
            registry,
            identity,
            atrium_platform::PlatformConfig::default(),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            atrium_server::serve(listener, state, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        RouteHost {
            base,
            client: reqwest::Client::new(),
            stop,
            task,
            _data: data,
            issuer,
        }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(10), self.task).await;
    }

    /// Sends `method path` with a bearer token, extra headers and a body of a content type.
    async fn send(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<(&str, Vec<u8>)>,
    ) -> Answer {
        let mut request = self
            .client
            .request(method.parse().unwrap(), format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some((content_type, bytes)) = body {
            if !content_type.is_empty() {
                request = request.header("content-type", content_type);
            }
            request = request.body(bytes);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        Answer {
            status,
            headers,
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        }
    }

    async fn json(&self, method: &str, path: &str, token: &str, body: Value) -> Answer {
        let bytes = serde_json::to_vec(&body).unwrap();
        self.send(
            method,
            path,
            Some(token),
            &[],
            Some(("application/json", bytes)),
        )
        .await
    }

    /// Registers and promotes `manifest` with `component` as a fresh developer's app.
    async fn publish(&self, store: &Store, app: &str, manifest: &str, component: &[u8]) {
        let login = slug("route-dev");
        let developer = store
            .create_developer(&NewDeveloper {
                email: &format!("{login}@example.com"),
                login: &login,
                publish_allowed: true,
                dev_tenant: None,
            })
            .await
            .unwrap();
        let token = self
            .issuer
            .issue(&developer.id, &developer.email, Duration::from_secs(3600))
            .unwrap();
        let boundary = "atrium-routes-boundary-7f3c";
        let mut body = Vec::new();
        for (name, bytes) in [("manifest", manifest.as_bytes()), ("component", component)] {
            body.extend_from_slice(
                format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n")
                    .as_bytes(),
            );
            body.extend_from_slice(bytes);
            body.extend_from_slice(b"\r\n");
        }
        body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
        let content_type = format!("multipart/form-data; boundary={boundary}");
        let registered = self
            .send(
                "POST",
                &format!("/api/dev/apps/{app}/versions"),
                Some(&token),
                &[],
                Some((&content_type, body)),
            )
            .await;
        assert_eq!(
            registered.status,
            StatusCode::CREATED,
            "{}",
            registered.body
        );
        let version = registered.body["version"]["version"]
            .as_str()
            .unwrap()
            .to_owned();
        let promoted = self
            .send(
                "POST",
                &format!("/api/dev/apps/{app}/versions/{version}/promote"),
                Some(&token),
                &[],
                None,
            )
            .await;
        assert_eq!(promoted.status, StatusCode::OK, "{}", promoted.body);
    }

    /// A tenant token of `role` for `tenant`, issued with the organization key `key`.
    async fn tenant_token(&self, key: &str, tenant: &str, role: &str) -> String {
        let answer = self
            .json(
                "POST",
                &format!("/api/tenants/{tenant}/tokens"),
                key,
                json!({"role": role}),
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        answer.body["token"].as_str().unwrap().to_owned()
    }

    async fn activate(&self, app: &str, admin: &str, body: Value) {
        let answer = self
            .json(
                "POST",
                &format!("/api/installs/{app}/activate"),
                admin,
                body,
            )
            .await;
        assert!(answer.status.is_success(), "{}", answer.body);
    }
}

/// The probe test component's manifest under a fresh slug, with scopes of the catalogue.
fn probe_manifest(app: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace("app_id: probe", &format!("app_id: {app}"))
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
}

fn text(bytes: usize) -> Option<(&'static str, Vec<u8>)> {
    Some(("text/plain", vec![b'a'; bytes]))
}

#[tokio::test]
async fn routes_are_served_behind_the_floor_and_public_ones_without_a_session() {
    let probe = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    let plain = std::fs::read(atrium_test_artifacts::PLAIN_HTTP).unwrap();
    for (store, dir) in stores().await {
        let host = RouteHost::start(&store).await;
        let app = slug("routes");
        host.publish(&store, &app, &probe_manifest(&app), &probe)
            .await;
        let plain_app = slug("plain");
        let plain_manifest = std::fs::read_to_string(atrium_test_artifacts::PLAIN_HTTP_MANIFEST)
            .unwrap()
            .replace("app_id: plain-http", &format!("app_id: {plain_app}"));
        host.publish(&store, &plain_app, &plain_manifest, &plain)
            .await;

        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let user = host.tenant_token(&acme.secret, "shop", "user").await;
        let route = |path: &str| format!("/api/apps/{app}/routes{path}");

        // Not installed yet: nothing to reach.
        let answer = host
            .send("GET", &route("/echo/hi"), Some(&user), &[], None)
            .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.body);
        let scopes = json!({"granted_scopes": ["tasks.read", "tasks.write"]});
        host.activate(&app, &admin, scopes.clone()).await;
        host.activate(&plain_app, &admin, json!({})).await;

        // Placeholders are bound by the app from the path it gets; the query comes along; the
        // credentials and the host's context headers a client forges go nowhere.
        let answer = host
            .send(
                "GET",
                &route("/echo/hello?x=1&y=2"),
                Some(&user),
                &[
                    ("cookie", "session=stolen"),
                    ("x-atrium-tenant", "depot"),
                    ("x-atrium-user", "someone-else"),
                    ("x-request-id", "req-7"),
                ],
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.body["word"], "hello", "{}", answer.body);
        assert_eq!(answer.body["query"], "x=1&y=2", "{}", answer.body);
        assert_eq!(answer.body["tenant"], "shop", "{}", answer.body);
        assert_eq!(answer.body["public"], false, "{}", answer.body);
        assert_eq!(answer.headers["content-type"], "application/json");
        assert_eq!(answer.headers["x-content-type-options"], "nosniff");
        let answer = host
            .send("GET", &route("/echo/a%2Fb"), Some(&admin), &[], None)
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(
            answer.body["word"], "a%2Fb",
            "an encoded slash stays within its placeholder"
        );

        // A body, and the app's headers outside the allow-list (`x-length`) are dropped.
        let answer = host
            .send(
                "POST",
                &route("/submit"),
                Some(&user),
                &[],
                Some(("text/plain; charset=utf-8", b"payload".to_vec())),
            )
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        assert_eq!(answer.body, "payload");
        assert!(
            answer.headers.get("x-length").is_none(),
            "{:?}",
            answer.headers
        );
        assert!(answer.headers.get("set-cookie").is_none());

        // The floor on what the app is given and what it answers, from an app that tries:
        // credentials, cookies, forwarding and forged context headers never reach it; its
        // `Set-Cookie` and unlisted headers never reach the client; an absolute `Location`
        // is dropped and a rooted one is kept under the address the request came in on.
        let raw = |status: u16, headers: Value| {
            let body = serde_json::to_vec(&json!({"status": status, "headers": headers})).unwrap();
            Some(("application/json", body))
        };
        let answer = host
            .send(
                "POST",
                &route("/raw"),
                Some(&user),
                &[
                    ("cookie", "session=stolen"),
                    ("x-forwarded-for", "10.0.0.1"),
                    ("x-atrium-role", "admin"),
                    ("user-agent", "probe-test"),
                    ("accept-language", "de"),
                ],
                raw(
                    200,
                    json!([
                        ["set-cookie", "sid=1; HttpOnly"],
                        ["x-internal", "1"],
                        ["cache-control", "no-store"],
                        ["location", "/next"]
                    ]),
                ),
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let given: std::collections::HashMap<String, String> = answer.body["request_headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p[0].as_str().unwrap().to_owned(),
                    p[1].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            given.get("user-agent").map(String::as_str),
            Some("probe-test"),
            "{given:?}"
        );
        assert_eq!(given.get("accept-language").map(String::as_str), Some("de"));
        assert_eq!(
            given.get("x-atrium-tenant").map(String::as_str),
            Some("shop")
        );
        assert_eq!(
            given.get("x-atrium-role").map(String::as_str),
            Some("user"),
            "{given:?}"
        );
        for dropped in ["authorization", "cookie", "x-forwarded-for"] {
            assert!(
                !given.contains_key(dropped),
                "{dropped} reached the app: {given:?}"
            );
        }
        assert!(
            answer.headers.get("set-cookie").is_none(),
            "{:?}",
            answer.headers
        );
        assert!(
            answer.headers.get("x-internal").is_none(),
            "{:?}",
            answer.headers
        );
        assert_eq!(answer.headers["cache-control"], "no-store");
        assert_eq!(
            answer.headers["location"].to_str().unwrap(),
            format!("/api/apps/{app}/routes/next")
        );
        let answer = host
            .send(
                "POST",
                &route("/raw"),
                Some(&user),
                &[],
                raw(302, json!([["location", "https://evil.example/"]])),
            )
            .await;
        assert_eq!(answer.status, StatusCode::FOUND, "{}", answer.body);
        assert!(
            answer.headers.get("location").is_none(),
            "{:?}",
            answer.headers
        );
        // The app's server errors are its own: the client sees 502, never the app's 5xx body.
        for status in [500, 503] {
            let answer = host
                .send(
                    "POST",
                    &route("/raw"),
                    Some(&user),
                    &[],
                    raw(status, json!([])),
                )
                .await;
            assert_eq!(
                answer.status,
                StatusCode::BAD_GATEWAY,
                "{status}: {}",
                answer.body
            );
            assert_eq!(code(&answer.body), "app_failed", "{}", answer.body);
            assert!(
                answer.body.get("request_headers").is_none(),
                "{}",
                answer.body
            );
        }
        let answer = host
            .send(
                "POST",
                &route("/raw"),
                Some(&user),
                &[],
                raw(404, json!([])),
            )
            .await;
        assert_eq!(
            answer.status,
            StatusCode::NOT_FOUND,
            "a client error passes through"
        );
        let answer = host
            .json("POST", &route("/submit"), &user, json!({"a": 1}))
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        assert_eq!(answer.body, json!({"a": 1}));

        // The body cap: 1 MiB passes, one byte more is 413.
        let answer = host
            .send("POST", &route("/submit"), Some(&user), &[], text(1 << 20))
            .await;
        assert_eq!(answer.status, StatusCode::CREATED);
        let answer = host
            .send(
                "POST",
                &route("/submit"),
                Some(&user),
                &[],
                text((1 << 20) + 1),
            )
            .await;
        assert_eq!(
            answer.status,
            StatusCode::PAYLOAD_TOO_LARGE,
            "{}",
            answer.body
        );
        assert_eq!(code(&answer.body), "request_too_large");

        // Body content types: an allowed one, or 415.
        for content_type in ["application/xml", "application/octet-stream", ""] {
            let answer = host
                .send(
                    "POST",
                    &route("/submit"),
                    Some(&user),
                    &[],
                    Some((content_type, b"<a/>".to_vec())),
                )
                .await;
            assert_eq!(
                answer.status,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "{content_type}: {}",
                answer.body
            );
            assert_eq!(code(&answer.body), "unsupported_media_type");
            assert_eq!(answer.body["error"]["param"], "content-type");
        }
        let form = Some(("application/x-www-form-urlencoded", b"a=1&b=2".to_vec()));
        let answer = host
            .send("POST", &route("/submit"), Some(&user), &[], form)
            .await;
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);

        // Undeclared paths and methods.
        for (method, path) in [
            ("GET", "/nothing"),
            ("GET", "/echo"),
            ("GET", "/echo/a/b"),
            ("GET", "/submit"),
            ("DELETE", "/submit"),
            ("PUT", "/echo/hello"),
            ("OPTIONS", "/echo/hello"),
        ] {
            let answer = host
                .send(method, &route(path), Some(&user), &[], None)
                .await;
            assert_eq!(
                answer.status,
                StatusCode::NOT_FOUND,
                "{method} {path}: {}",
                answer.body
            );
            assert_eq!(code(&answer.body), "not_found");
        }
        let answer = host
            .send("DELETE", &route("/submit"), Some(&user), &[], None)
            .await;
        assert!(message(&answer.body).contains("POST"), "{}", answer.body);

        // Any component with a wasi:http export serves its routes; one that breaks the
        // contract fails alone with 502.
        let plain_route = |path: &str| format!("/api/apps/{plain_app}/routes{path}");
        let answer = host
            .send("GET", &plain_route("/hello"), Some(&user), &[], None)
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.body, "plain wasi:http answered /hello");
        let answer = host
            .send("GET", &plain_route("/silent"), Some(&user), &[], None)
            .await;
        assert_eq!(answer.status, StatusCode::BAD_GATEWAY, "{}", answer.body);
        assert_eq!(code(&answer.body), "app_failed");
        let answer = host
            .send("GET", &route("/echo/still-here"), Some(&user), &[], None)
            .await;
        assert_eq!(answer.status, StatusCode::OK);

        // Principals: none, an organization key, another tenant, another organization.
        let answer = host.send("GET", &route("/echo/hi"), None, &[], None).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        let answer = host
            .send("GET", &route("/echo/hi"), Some(&acme.secret), &[], None)
            .await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        let depot = host.tenant_token(&acme.secret, "depot", "admin").await;
        let umbrella = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        let stranger = host.tenant_token(&umbrella.secret, "shop", "admin").await;
        for who in [&depot, &stranger] {
            let answer = host
                .send("GET", &route("/echo/hi"), Some(who), &[], None)
                .await;
            assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.body);
        }

        // The public address: what ctx.public_callback_url builds, reachable with no token.
        let answer = host
            .json(
                "POST",
                &format!("/api/apps/{app}/tools/platform"),
                &user,
                json!({"op": "public_url", "path": "/open"}),
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let open = answer.body["result"]["ok"].as_str().unwrap().to_owned();
        let acme_shop = Actor::host(atrium_store::TenantKey::new(&acme.org_id, "shop"));
        assert_eq!(open, public_route_path(&app, &acme_shop, "/open"));
        let public_base = open.trim_end_matches("/open").to_owned();
        let answer = host
            .json(
                "POST",
                &format!("/api/apps/{app}/tools/platform"),
                &user,
                json!({"op": "public_url", "path": "/echo/x"}),
            )
            .await;
        assert!(answer.body["result"]["err"].is_string(), "{}", answer.body);

        let answer = host.send("GET", &open, None, &[], None).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_eq!(answer.body["public"], true, "{}", answer.body);
        let refused = answer.body["emit"]["err"].to_string();
        assert!(
            refused.contains("public route"),
            "events.emit is refused on a public route: {}",
            answer.body
        );
        assert_eq!(answer.headers["x-content-type-options"], "nosniff");
        // The same route through the session is not public.
        let answer = host
            .send("GET", &route("/open"), Some(&user), &[], None)
            .await;
        assert_eq!(answer.body["public"], false, "{}", answer.body);

        // Every miss on the public address is the same 404.
        let segment = public_base.rsplit('/').next().unwrap().to_owned();
        let fingerprint = segment.rsplit('-').next().unwrap().to_owned();
        let other_org = public_route_path(
            &app,
            &Actor::host(atrium_store::TenantKey::new(&umbrella.org_id, "shop")),
            "/open",
        );
        let misses = [
            ("GET", format!("{public_base}/echo/hello")),
            ("GET", format!("{public_base}/submit")),
            ("GET", format!("{public_base}/nothing")),
            ("POST", open.clone()),
            (
                "GET",
                open.replace(&segment, &format!("nobody-{fingerprint}")),
            ),
            ("GET", open.replace(&segment, "shop")),
            ("GET", open.replace(&segment, "shop-0000000000000000")),
            ("GET", other_org.clone()),
            ("GET", open.replace(&app, &slug("unknown"))),
            ("GET", open.replace(&app, &plain_app)),
        ];
        let mut bodies = Vec::new();
        for (method, path) in &misses {
            let answer = host.send(method, path, None, &[], None).await;
            assert_eq!(
                answer.status,
                StatusCode::NOT_FOUND,
                "{method} {path}: {}",
                answer.body
            );
            assert_eq!(message(&answer.body), PUBLIC_NOT_FOUND);
            bodies.push(answer.body);
        }
        assert!(bodies.windows(2).all(|w| w[0] == w[1]), "{bodies:?}");
        // A token on the public address changes nothing.
        let answer = host
            .send(
                "GET",
                &format!("{public_base}/echo/hello"),
                Some(&user),
                &[],
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);

        // The other organization's tenant `shop` installs the same app: its own address.
        host.activate(&app, &stranger, scopes.clone()).await;
        let answer = host.send("GET", &other_org, None, &[], None).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        assert_ne!(other_org, open);

        // Deactivated: the session and the public address answer 404; the other
        // organization's install still answers; a re-activation brings the same address back.
        let answer = host
            .send(
                "POST",
                &format!("/api/installs/{app}/deactivate"),
                Some(&admin),
                &[],
                None,
            )
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let answer = host
            .send("GET", &route("/echo/hi"), Some(&user), &[], None)
            .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{}", answer.body);
        let answer = host.send("GET", &open, None, &[], None).await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND);
        assert_eq!(answer.body, bodies[0]);
        let answer = host.send("GET", &other_org, None, &[], None).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        host.activate(&app, &admin, json!({})).await;
        let answer = host.send("GET", &open, None, &[], None).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);

        host.stop().await;
        drop(dir);
    }
}

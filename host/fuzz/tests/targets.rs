//! Fuzz targets for the readers of untrusted input that go through the host (docs/security.md):
//! the PDF extractor's input in its sandbox, and the bodies of the HTTP API. (Those that need
//! none of the host are in `atrium-fuzz-readers`, where libFuzzer builds them alone.) Each is
//! a bolero check: under `cargo test` it replays the inputs kept in `tests/__fuzz__/<target>/`
//! (the crashes found so far, and the corpus) and then tries random inputs for a second;
//! `tools/fuzz` runs each under libFuzzer for as long as it is asked. A reader may refuse its
//! input with an error; it may not panic, loop, or hold more memory than its limits allow, and
//! what it accepts must keep the reader's own promises (checked below).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

/// The PDF extractor's input (it runs in its own sandbox): any bytes give text or an error.
#[test]
fn pdf_text() {
    bolero::check!()
        .with_max_len(64 * 1024)
        .for_each(|bytes: &[u8]| {
            let _ = atrium_retrieval::pdf::extract_text(
                bytes,
                atrium_retrieval::pdf::PdfLimits::default(),
            );
        });
}

/// A host's router over a SQLite store in a temporary directory, no inference provider, the
/// built-in lexical embedder and retrieval: what the HTTP target sends its bodies to.
struct Http {
    runtime: tokio::runtime::Runtime,
    state: atrium_server::HostState,
    key: String,
    _dir: tempfile::TempDir,
}

impl Http {
    /// A host over a new temporary directory; `extend` adds to its state (given the runtime,
    /// the directory, the store and the organization key) and makes what else it needs.
    fn start<T>(
        extend: impl FnOnce(
            &tokio::runtime::Runtime,
            &std::path::Path,
            &atrium_store::Store,
            &str,
            atrium_server::HostState,
        ) -> (atrium_server::HostState, T),
    ) -> (Http, T) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (store, state, key) = runtime.block_on(async {
            let store = atrium_store::Store::open_sqlite(dir.path()).await.unwrap();
            let key = store.create_key("fuzz", "fuzz").await.unwrap().secret;
            let gateway =
                atrium_inference::Gateway::new(atrium_inference::Catalog::builtin(), vec![]);
            let retrieval = atrium_retrieval::Retrieval::open(
                store.clone(),
                atrium_inference::embed::Embedders::default(),
                atrium_retrieval::RetrievalConfig::local(&dir.path().join("rag")),
            )
            .await
            .unwrap();
            let state =
                atrium_server::HostState::new(store.clone(), gateway).with_retrieval(retrieval);
            (store, state, key)
        });
        let (state, more) = extend(&runtime, dir.path(), &store, &key, state);
        let host = Http {
            runtime,
            state,
            key,
            _dir: dir,
        };
        (host, more)
    }
}

fn http_host() -> &'static Http {
    static HOST: std::sync::OnceLock<Http> = std::sync::OnceLock::new();
    HOST.get_or_init(|| Http::start(|_, _, _, _, state| (state, ())).0)
}

/// The request bodies of /v1 and the organization's /api: any bytes, as JSON or as an upload,
/// are answered with a status, never a panic, and never a 5xx for the client's mistake (with
/// no provider configured, the only 5xx a well-formed chat or batch item may get is 503
/// `no_backend`).
#[test]
fn http_bodies() {
    const ROUTES: [(&str, &str); 9] = [
        ("/v1/chat/completions", "application/json"),
        ("/v1/embeddings", "application/json"),
        ("/v1/batches", "application/json"),
        ("/v1/tenants", "application/json"),
        ("/v1/rag/fuzz/documents", "application/json"),
        ("/v1/rag/fuzz/query", "application/json"),
        ("/v1/rag/fuzz/files", "application/octet-stream"),
        ("/v1/rag/fuzz/files", "multipart/form-data; boundary=fuzz"),
        ("/api/tenants/shop/tokens", "application/json"),
    ];
    let host = http_host();
    let created = axum::http::Request::post("/v1/rag/fuzz")
        .header("authorization", format!("Bearer {}", host.key))
        .body(axum::body::Body::empty())
        .unwrap();
    host.runtime.block_on(send(&host.state, created));
    bolero::check!()
        .with_max_len(16 * 1024)
        .for_each(|bytes: &[u8]| {
            // Taken here, not captured: the check needs an unwind-safe closure.
            let host = http_host();
            let Some((&route, body)) = bytes.split_first() else {
                return;
            };
            let (path, content_type) = ROUTES[usize::from(route) % ROUTES.len()];
            let request = axum::http::Request::post(path)
                .header("authorization", format!("Bearer {}", host.key))
                .header("content-type", content_type)
                .body(axum::body::Body::from(body.to_vec()))
                .unwrap();
            let (status, answer) = host.runtime.block_on(send(&host.state, request));
            if status.is_server_error() {
                let body: serde_json::Value = serde_json::from_str(&answer).unwrap_or_default();
                assert!(
                    status == axum::http::StatusCode::SERVICE_UNAVAILABLE
                        && body["error"]["code"] == "no_backend",
                    "{path}: {status} {answer}"
                );
            }
        });
}

/// A host's router with the app registry: a developer who published the `probe` test app
/// (version 1.0.0, promoted) and tenant `shop` of an organization, whose admin installed it.
struct Api {
    http: Http,
    dev: String,
    admin: String,
}

/// Sends one request through the router: its status and body.
async fn send(
    state: &atrium_server::HostState,
    request: axum::http::Request<axum::body::Body>,
) -> (axum::http::StatusCode, String) {
    use tower::ServiceExt;
    let response = atrium_server::router(state.clone())
        .oneshot(request)
        .await
        .unwrap();
    let status = response.status();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn request(
    method: &str,
    path: &str,
    credential: &str,
    content_type: &str,
    body: Vec<u8>,
) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {credential}"))
        .header("content-type", content_type)
        .body(axum::body::Body::from(body))
        .unwrap()
}

fn api_host() -> &'static Api {
    static HOST: std::sync::OnceLock<Api> = std::sync::OnceLock::new();
    HOST.get_or_init(|| {
        let (http, (dev, admin)) = Http::start(|runtime, data, store, key, state| {
            runtime.block_on(async {
                let developer = store
                    .create_developer(&atrium_store::NewDeveloper {
                        email: "fuzz@example.com",
                        login: "fuzz",
                        publish_allowed: true,
                        dev_tenant: None,
                    })
                    .await
                    .unwrap();
                let issuer =
                    atrium_platform::identity::TokenIssuer::load_or_create(data, None).unwrap();
                let dev = issuer
                    .issue(
                        &developer.id,
                        &developer.email,
                        std::time::Duration::from_secs(24 * 3600),
                    )
                    .unwrap();
                let identity = atrium_platform::identity::Identity::new(
                    atrium_platform::identity::TokenIssuer::load_or_create(data, None).unwrap(),
                    None,
                );
                let components = atrium_runtime::Runtime::new(atrium_runtime::RuntimeConfig {
                    cache_dir: Some(data.join("components")),
                    ..atrium_runtime::RuntimeConfig::default()
                })
                .unwrap();
                let registry = atrium_platform::registry::Registry::new(
                    atrium_platform::registry::RegistryParts {
                        store: store.clone(),
                        artifacts: atrium_platform::artifacts::Artifacts::local(
                            &data.join("artifacts"),
                        )
                        .unwrap(),
                        runtime: components,
                        secrets: atrium_platform::sealing::SecretsKey::load_or_create(data, None)
                            .unwrap(),
                        bundles_dir: data.join("bundles"),
                    },
                );
                let state = state.with_platform(atrium_platform::PlatformParts::new(
                    registry,
                    identity,
                    atrium_platform::PlatformConfig::default(),
                ));

                // Publish, promote, a tenant admin, the install: each must succeed.
                // The probe's own scopes are not the platform's; two of the catalogue's stand in.
                let manifest = std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
                    .unwrap()
                    .replace("probe.read", "tasks.read")
                    .replace("probe.write", "tasks.write")
                    .into_bytes();
                let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
                let mut upload = Vec::new();
                for (name, bytes) in [("manifest", &manifest), ("component", &component)] {
                    upload.extend_from_slice(
                        format!(
                            "--fuzz\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n"
                        )
                        .as_bytes(),
                    );
                    upload.extend_from_slice(bytes);
                    upload.extend_from_slice(b"\r\n");
                }
                upload.extend_from_slice(b"--fuzz--\r\n");
                let steps = [
                    request(
                        "POST",
                        "/api/dev/apps/probe/versions",
                        &dev,
                        "multipart/form-data; boundary=fuzz",
                        upload,
                    ),
                    request(
                        "POST",
                        "/api/dev/apps/probe/versions/1.0.0/promote",
                        &dev,
                        "application/json",
                        Vec::new(),
                    ),
                    request(
                        "POST",
                        "/api/tenants/shop/tokens",
                        key,
                        "application/json",
                        br#"{"role": "admin"}"#.to_vec(),
                    ),
                ];
                let mut admin = String::new();
                for step in steps {
                    let path = step.uri().path().to_owned();
                    let (status, body) = send(&state, step).await;
                    assert!(status.is_success(), "setup {path}: {status} {body}");
                    if path.ends_with("/tokens") {
                        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
                        body["token"].as_str().unwrap().clone_into(&mut admin);
                    }
                }
                let (status, body) = send(
                    &state,
                    request(
                        "POST",
                        "/api/installs/probe/activate",
                        &admin,
                        "application/json",
                        br#"{"granted_scopes": ["tasks.read", "tasks.write"]}"#.to_vec(),
                    ),
                )
                .await;
                assert!(status.is_success(), "setup activate: {status} {body}");
                (state, (dev, admin))
            })
        });
        Api { http, dev, admin }
    })
}

/// The request bodies of /api that need the registry: a developer's registrations, templates,
/// bundles and secrets, a tenant admin's installs, settings, overrides, tool calls and
/// integrations. Any bytes are answered with a status, never a panic, and never a 5xx.
#[test]
fn api_bodies() {
    #[derive(Clone, Copy)]
    enum Who {
        Developer,
        Admin,
        Organization,
    }
    const ROUTES: [(&str, &str, &str, Who); 16] = [
        (
            "POST",
            "/api/dev/preflight",
            "application/json",
            Who::Developer,
        ),
        (
            "POST",
            "/api/dev/apps/probe/versions",
            "multipart/form-data; boundary=fuzz",
            Who::Developer,
        ),
        (
            "POST",
            "/api/dev/apps/fuzzed/versions",
            "multipart/form-data; boundary=fuzz",
            Who::Developer,
        ),
        (
            "POST",
            "/api/dev/apps/probe/versions/1.0.0/defaults/templates",
            "application/json",
            Who::Developer,
        ),
        (
            "PUT",
            "/api/dev/apps/probe/versions/1.0.0/bundle",
            "application/octet-stream",
            Who::Developer,
        ),
        (
            "PUT",
            "/api/dev/apps/probe/secrets/FUZZ_KEY",
            "application/json",
            Who::Developer,
        ),
        (
            "POST",
            "/api/tenants/shop/tokens",
            "application/json",
            Who::Organization,
        ),
        (
            "POST",
            "/api/apps/probe/tools/echo",
            "application/json",
            Who::Admin,
        ),
        (
            "PATCH",
            "/api/installs/probe",
            "application/json",
            Who::Admin,
        ),
        (
            "PUT",
            "/api/installs/probe/secrets/FUZZ_KEY",
            "application/json",
            Who::Admin,
        ),
        (
            "POST",
            "/api/installs/probe/activate",
            "application/json",
            Who::Admin,
        ),
        (
            "POST",
            "/api/installs/probe/upgrade",
            "application/json",
            Who::Admin,
        ),
        (
            "PATCH",
            "/api/installs/probe/agents/fuzz",
            "application/json",
            Who::Admin,
        ),
        (
            "PATCH",
            "/api/installs/probe/workflows/fuzz",
            "application/json",
            Who::Admin,
        ),
        (
            "PUT",
            "/api/integrations/fuzz",
            "application/json",
            Who::Admin,
        ),
        ("POST", "/api/inbound/fuzz", "application/json", Who::Admin),
    ];
    api_host();
    bolero::check!()
        .with_max_len(16 * 1024)
        .for_each(|bytes: &[u8]| {
            let host = api_host();
            let Some((&route, body)) = bytes.split_first() else {
                return;
            };
            let (method, path, content_type, who) = ROUTES[usize::from(route) % ROUTES.len()];
            let credential = match who {
                Who::Developer => &host.dev,
                Who::Admin => &host.admin,
                Who::Organization => &host.http.key,
            };
            let (status, answer) = host.http.runtime.block_on(send(
                &host.http.state,
                request(method, path, credential, content_type, body.to_vec()),
            ));
            assert!(
                !status.is_server_error(),
                "{method} {path}: {status} {answer}"
            );
        });
}

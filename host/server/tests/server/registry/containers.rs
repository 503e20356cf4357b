//! Container-image apps through the compatibility shim, over HTTP against a running host: a
//! real registry on a loopback port (Debian's `docker-registry`), images built with umoci and
//! pushed with skopeo around the container test guest (`tests/guests/container`, a static
//! binary that speaks the container protocol), run by Debian's runc. Each test has a host, a
//! registry and an app of its own.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use atrium_test_artifacts::containers::{ImageSpec, Registry, outside_address, push, tools};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, code, message, slug};
use crate::unique;

/// A directory the containers' users can traverse (a temporary directory is `0700`).
fn workdir() -> tempfile::TempDir {
    tools();
    let dir = tempfile::Builder::new()
        .prefix("atrium-shim-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// The container guest's manifest as app `app` with image `image` and `egress` hosts.
fn guest_manifest(app: &str, image: &str, egress: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::CONTAINER_GUEST_MANIFEST)
        .unwrap()
        .replace("app_id: boxed", &format!("app_id: {app}"))
        .replace(
            "image: 127.0.0.1:5000/boxed:1.0.0",
            &format!("image: {image}"),
        )
        .replace(
            "egress_hosts: [egress.test]",
            &format!("egress_hosts: [{egress}]"),
        )
}

/// Builds and pushes the guest with `manifest` as its `/app/atrium.app.yaml` and `MARK` in
/// its environment; returns the reference.
fn push_guest(
    work: &tempfile::TempDir,
    registry: &Registry,
    app: &str,
    tag: &str,
    manifest: &str,
    mark: &str,
) -> String {
    let mark = format!("MARK={mark}");
    let spec = ImageSpec {
        files: vec![(
            "/app/guest",
            PathBuf::from(atrium_test_artifacts::CONTAINER_GUEST),
        )],
        texts: vec![("/app/atrium.app.yaml", manifest.to_owned())],
        entrypoint: vec!["/app/guest"],
        env: vec![&mark],
        ..ImageSpec::default()
    };
    push(work.path(), registry, app, tag, &spec, None)
}

/// A host that runs containers from `registry`, keeping them in `work`.
async fn host(store: &atrium_store::Store, work: &tempfile::TempDir, registry: &Registry) -> Host {
    Host::start_with_containers(
        store,
        atrium_platform::containers::ContainersConfig {
            dir: Some(work.path().join("containers")),
            insecure: vec![registry.address.clone()],
            ..atrium_platform::containers::ContainersConfig::default()
        },
    )
    .await
}

async fn tenant_token(host: &Host, key: &str, tenant: &str, role: &str) -> String {
    let (status, body) = host
        .post(
            &format!("/api/tenants/{tenant}/tokens"),
            key,
            Body::Json(json!({"role": role})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

/// Calls tool `tool` of `app` with `args` as `token`.
async fn call(host: &Host, app: &str, tool: &str, args: Value, token: &str) -> (StatusCode, Value) {
    host.post(
        &format!("/api/apps/{app}/tools/{tool}"),
        token,
        Body::Json(args),
    )
    .await
}

/// The container calls the platform back at `path` with `body` (and `token`, when given, in
/// place of its call's): the status and body it got.
async fn callback(host: &Host, app: &str, user: &str, path: &str, body: Value) -> (u64, Value) {
    let (status, answer) = call(host, app, "call", json!({"path": path, "body": body}), user).await;
    assert_eq!(status, StatusCode::OK, "{path}: {answer}");
    (
        answer["result"]["status"].as_u64().unwrap(),
        answer["result"]["body"].clone(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_app_is_pinned_at_registration_run_under_runc_and_called_like_a_component() {
    let work = workdir();
    let registry = Registry::start(work.path(), None);
    let dir = tempfile::tempdir().unwrap();
    let store = atrium_store::Store::open_sqlite(dir.path()).await.unwrap();
    let host = host(&store, &work, &registry).await;
    let outside = outside_address().expect("an address of this machine besides loopback");
    let app = slug("boxed");
    let tag = format!("{}/{app}:1.0.0", registry.address);
    let manifest = guest_manifest(&app, &tag, &outside.to_string());
    push_guest(&work, &registry, &app, "1.0.0", &manifest, "first");

    // Registration pins the tag to its digest; a later push under the same tag changes
    // nothing the version runs.
    let (_, dev) = host.sign_up("ada", true).await;
    let (status, body) = host
        .register(&app, &dev, &[("manifest", None, manifest.as_bytes())])
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let pinned = body["version"]["image"].as_str().unwrap().to_owned();
    assert!(
        pinned.starts_with(&format!("{}/{app}@sha256:", registry.address)),
        "{pinned}"
    );
    assert_eq!(body["version"]["kind"], "image");
    push_guest(&work, &registry, &app, "1.0.0", &manifest, "second");
    let (status, _) = host
        .post(
            &format!("/api/dev/apps/{app}/versions/1.0.0/promote"),
            &dev,
            Body::None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    // An image the registry does not have is refused at registration, naming the field.
    let ghost = slug("ghost");
    let missing = guest_manifest(
        &ghost,
        &format!("{}/ghost:9.9.9", registry.address),
        "x.example",
    );
    let (status, body) = host
        .register(&ghost, &dev, &[("manifest", None, missing.as_bytes())])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(code(&body), "invalid_image");
    assert_eq!(body["error"]["param"], "runtime.image", "{body}");

    // The tenant installs it: `on_install` is the container's first call.
    let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
    let admin = tenant_token(&host, &acme.secret, "shop", "admin").await;
    let user = tenant_token(&host, &acme.secret, "shop", "user").await;
    host.activate(
        &app,
        &admin,
        &["memory.read", "memory.write", "rooms.write"],
    )
    .await;
    assert_eq!(host.containers.started(), 1);

    let (status, echo) = call(&host, &app, "echo", json!({"word": "hi"}), &user).await;
    assert_eq!(status, StatusCode::OK, "{echo}");
    let echo = &echo["result"];
    assert_eq!(echo["args"], json!({"word": "hi"}));
    assert_eq!(echo["tenant"], "shop");
    assert_eq!(echo["version"], "1.0.0");
    assert_eq!(echo["depth"], "1");
    assert_eq!(echo["has_token"], true);
    assert_eq!(echo["env"]["PLATFORM_URL"], "http://127.0.0.1:7780");
    assert_eq!(echo["env"]["GREETING"], "hello", "runtime.env");
    assert_eq!(echo["env"]["APP_ID"], app.as_str());
    assert_eq!(
        echo["env"]["MARK"], "first",
        "the pinned image, not the tag's new one"
    );
    assert_eq!(
        host.containers.started(),
        1,
        "one container serves every call"
    );

    // The sandbox, seen from inside.
    let (_, who) = call(&host, &app, "whoami", json!({}), &user).await;
    let who = &who["result"];
    assert_eq!(who["cap_eff"], "0000000000000000", "{who}");
    assert_eq!(who["no_new_privs"], "1", "{who}");
    assert_eq!(who["seccomp"], "2", "{who}");
    assert_eq!(who["root_writable"], false, "{who}");
    assert_eq!(who["tmp_writable"], true, "{who}");

    // The manifest's checks come first, as for a component.
    let (status, body) = call(&host, &app, "nope", json!({}), &user).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    // The app's own answers.
    let (status, body) = call(&host, &app, "invalid", json!({}), &user).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(message(&body).contains("`id` is required"), "{body}");
    let (status, body) = call(&host, &app, "fail", json!({}), &user).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(message(&body).contains("failing as asked"), "{body}");
    let (status, body) = call(&host, &app, "big", json!({"bytes": 3 << 20}), &user).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(message(&body).contains("too large"), "{body}");

    // Its routes, private and public; the caller's credentials never reach the app.
    let (status, routed) = host
        .get(&format!("/api/apps/{app}/routes/items/7"), &user)
        .await;
    assert_eq!(status, StatusCode::OK, "{routed}");
    assert_eq!(routed["target"], "/route/items/7");
    assert_eq!(routed["tenant"], "shop");
    assert_eq!(routed["authorization"], Value::Null);

    // Its calls back to the platform, with the token of its call.
    let (status, put) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/tools-call",
        json!({"name": "records.put", "args": {"record_type": "note", "record": {"text": "hi"}}}),
    )
    .await;
    assert_eq!(status, 200, "{put}");
    let (status, found) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/tools-call",
        json!({"name": "records.query", "args": {"record_type": "note"}}),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    assert!(found.to_string().contains("hi"), "{found}");
    let (status, unknown) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/tools-call",
        json!({"name": "nothing.here"}),
    )
    .await;
    assert_eq!(status, 404, "{unknown}");
    assert_eq!(unknown["error"]["code"], "unknown_tool", "{unknown}");
    let (status, secret) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/secrets-get",
        json!({"key": "API_KEY"}),
    )
    .await;
    assert_eq!((status, &secret), (200, &json!({"value": null})));
    let (status, config) = callback(&host, &app, &user, "/api/mcp/config", json!({})).await;
    assert_eq!(status, 200, "{config}");
    assert!(config["settings"].is_object(), "{config}");
    let (status, emitted) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/events-emit",
        json!({"name": "boxed_event", "payload": {"n": 1}}),
    )
    .await;
    assert_eq!(status, 200, "{emitted}");
    assert_eq!(emitted["wire_count"], 0);
    let (status, undeclared) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/events-emit",
        json!({"name": "not_declared"}),
    )
    .await;
    assert_eq!(status, 403, "{undeclared}");
    let (status, invoke) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/apps-invoke",
        json!({"app": "ledger", "agent": "clerk", "prompt": "hi"}),
    )
    .await;
    assert_eq!(status, 403, "{invoke}");
    assert_eq!(invoke["error"]["code"], "agent_call_refused", "{invoke}");
    let (status, committed) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/commitments-add",
        json!({"title": "Call back", "content": "Tomorrow", "from_agent": "lead"}),
    )
    .await;
    assert_eq!(status, 201, "{committed}");
    let (status, url) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/public-url",
        json!({"path": "/open"}),
    )
    .await;
    assert_eq!(status, 200, "{url}");
    let url = url["url"].as_str().unwrap().to_owned();
    assert!(
        url.contains("/public/t/shop") && url.ends_with("/open"),
        "{url}"
    );
    let path = url.trim_start_matches(host.base()).to_owned();
    let (status, public) = host.send("GET", &path, None, Body::None).await;
    assert_eq!(status, StatusCode::OK, "{url}: {public}");
    assert_eq!(public["target"], "/public/open");
    assert_eq!(public["public"], "1");
    let (status, refused) = callback(
        &host,
        &app,
        &user,
        "/api/mcp/public-url",
        json!({"path": "/items/1"}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["param"], "path", "{refused}");
    // Without a token, or with one this host did not issue.
    let (status, answer) = call(
        &host,
        &app,
        "call",
        json!({"path": "/api/mcp/config", "body": {}, "token": null}),
        &user,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["result"]["status"], 401, "{answer}");
    let other = tempfile::tempdir().unwrap();
    let foreign = atrium_platform::identity::TokenIssuer::load_or_create(other.path(), None)
        .unwrap()
        .issue_app_token(
            &atrium_platform::identity::app_token::AppToken {
                org_id: acme.org_id.clone(),
                tenant_id: "shop".into(),
                user_id: None,
                app_slug: app.clone(),
                version: "1.0.0".into(),
                call_id: "call-x".into(),
                chain_depth: 1,
                visited_agents: Vec::new(),
                public_route: false,
            },
            atrium_platform::identity::app_token::APP_TOKEN_TTL,
        )
        .unwrap();
    let (_, answer) = call(
        &host,
        &app,
        "call",
        json!({"path": "/api/mcp/config", "body": {}, "token": foreign}),
        &user,
    )
    .await;
    assert_eq!(answer["result"]["status"], 401, "{answer}");
    assert_eq!(
        answer["result"]["body"]["error"]["code"], "invalid_token",
        "{answer}"
    );

    // Another organization's tenant has no install of it.
    let other_org = store.create_key(&unique("umbrella"), "ops").await.unwrap();
    let stranger = tenant_token(&host, &other_org.secret, "shop", "user").await;
    let (status, _) = call(&host, &app, "echo", json!({}), &stranger).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Egress: a host the manifest names, through the host's proxy; nothing else.
    let listener = tokio::net::TcpListener::bind((outside, 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buffer = [0u8; 2048];
            let _ = stream.read(&mut buffer).await;
            let _ = stream
                .write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\noutside")
                .await;
        }
    });
    let (_, allowed) = call(
        &host,
        &app,
        "fetch",
        json!({"url": format!("http://{outside}:{port}/")}),
        &user,
    )
    .await;
    assert_eq!(
        allowed["result"],
        json!({"status": 200, "body": "outside"}),
        "{allowed}"
    );
    let (_, refused) = call(
        &host,
        &app,
        "fetch",
        json!({"url": "http://not-allowed.example/"}),
        &user,
    )
    .await;
    assert_eq!(refused["result"]["status"], 403, "{refused}");
    let (_, direct) = call(
        &host,
        &app,
        "direct",
        json!({"host": outside.to_string(), "port": port}),
        &user,
    )
    .await;
    assert_eq!(direct["result"]["connected"], false, "{direct}");

    // Over its memory limit the container is killed, the call fails, and the next call gets
    // a new container.
    let (status, body) = call(&host, &app, "allocate", json!({"mb": 200}), &user).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(message(&body).contains("stopped during the call"), "{body}");
    let (status, body) = call(&host, &app, "echo", json!({}), &user).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(host.containers.started(), 2);

    // A container whose /health fails is stopped by the upkeep, and the next call (after the
    // backoff) starts another.
    let (status, _) = call(&host, &app, "sicken", json!({}), &user).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(host.containers.upkeep().await, 1);
    assert_eq!(host.containers.running().await, 0);
    let (status, body) = call(&host, &app, "echo", json!({}), &user).await;
    assert_eq!(
        status,
        StatusCode::SERVICE_UNAVAILABLE,
        "backing off: {body}"
    );
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let (status, body) = call(&host, &app, "echo", json!({}), &user).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(host.containers.started(), 3);

    host.stop().await;
}

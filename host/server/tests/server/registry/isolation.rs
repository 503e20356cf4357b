//! Every route the host serves, taken from its own route table (`atrium_server::route_table`,
//! built by the calls that build the router), tried against one tenant's things from another
//! tenant of its organization and from another organization (and a developer's app from
//! another developer). A route added to any module is in the table, so it is tried here; one
//! this test cannot fill in (a path parameter or a body it does not know) fails the test,
//! naming the route.
//!
//! The organization's key speaks for each of its tenants (it names the tenant itself), so the
//! routes it opens are tried from another organization only.
//!
//! What must hold for every try: no answer carries anything of the shop's that the request did
//! not carry itself (the room's name, the conversation's title, the time zone, a token's name,
//! a document's title), no try that names one of the shop's things (a room, a conversation, a
//! wire, a grant, a token, a batch, a document, a developer's app) succeeds, no try fails the
//! host (5xx), and what the shop reads on every route afterwards is what it read before.

use std::collections::BTreeMap;

use atrium_server::routing::Route;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::rooms::{ROOMS, manifest};
use super::{Body, Host, slug};
use crate::{stores, unique};

/// Who a route serves, by where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    /// Anyone: the welcome, health, readiness, the scope catalogue, an app's public routes,
    /// the login redirect.
    Public,
    /// A tenant's admin or user token.
    Tenant,
    /// An organization key with the tenant in the path (`/api/tenants/{tenant}/...`).
    OrgPath,
    /// An organization key with the tenant in `X-Service-Tenant` (`/v1`).
    OrgHeader,
    /// An app token (`/api/mcp/...`).
    App,
    /// A developer token (`/api/dev/...`).
    Developer,
}

fn who(path: &str) -> Who {
    if matches!(
        path,
        "/" | "/health" | "/ready" | "/api/scopes" | "/api/dev/login"
    ) || path.starts_with("/api/apps/{app}/public/")
    {
        Who::Public
    } else if path.starts_with("/v1/") {
        Who::OrgHeader
    } else if path.starts_with("/api/tenants/") {
        Who::OrgPath
    } else if path.starts_with("/api/mcp/") {
        Who::App
    } else if path.starts_with("/api/dev/") {
        Who::Developer
    } else {
        Who::Tenant
    }
}

/// A credential: a bearer token and the tenant it names, in the path or in the header.
#[derive(Clone)]
struct Caller {
    token: String,
    tenant: String,
}

/// What the shop has, and the names its things go by.
struct Shop {
    app: String,
    other_app: String,
    room: String,
    member: String,
    conversation: String,
    wire: String,
    token_id: String,
    batch: String,
    collection: String,
    document: String,
}

impl Shop {
    /// The value of `param` in `path` for a caller acting as `tenant`.
    fn value(&self, path: &str, param: &str, tenant: &str) -> Option<String> {
        let id = |prefix: &str| path.starts_with(prefix);
        Some(match param {
            "app" | "slug" | "caller" => self.app.clone(),
            "callee" => self.other_app.clone(),
            "version" => "1.0.0".into(),
            "agent" => "lead".into(),
            "workflow" => "triage".into(),
            "name" => "echo".into(),
            "channel" => "email".into(),
            "provider" => "gmail".into(),
            "feed_id" => format!("{}:lead:daily", self.app),
            "tenant" => tenant.to_owned(),
            "*path" => "echo/hi".into(),
            "collection" => self.collection.clone(),
            "key" if id("/api/agent-rooms/") => self.member.clone(),
            "key" => "API_KEY".into(),
            "id" if id("/api/agent-rooms/") => self.room.clone(),
            "id" if id("/api/conversations/") => self.conversation.clone(),
            "id" if id("/api/wires/") => self.wire.clone(),
            "id" if id("/api/tenants/") => self.token_id.clone(),
            "id" if id("/v1/batches/") => self.batch.clone(),
            "id" if id("/v1/rag/") => self.document.clone(),
            "id" if id("/api/commitments/") => "cmt_of_the_shop".into(),
            "id" if id("/api/visions/") => "vis_of_the_shop".into(),
            _ => return None,
        })
    }

    /// `route`'s path with its parameters filled in for a caller acting as `tenant`.
    fn path(&self, route: &Route, tenant: &str) -> String {
        let mut out = String::new();
        let mut rest = route.path.as_str();
        while let Some(open) = rest.find('{') {
            let close = rest[open..].find('}').unwrap() + open;
            let param = &rest[open + 1..close];
            let value = self.value(&route.path, param, tenant).unwrap_or_else(|| {
                panic!(
                    "{} {}: the isolation test has no value for `{{{param}}}`; add one to Shop::value",
                    route.method, route.path
                )
            });
            out.push_str(&rest[..open]);
            out.push_str(&value);
            rest = &rest[close + 1..];
        }
        out.push_str(rest);
        if route.path == "/v1/usage" {
            // The organization's usage is every tenant's; a tenant's own is asked by name.
            out.push_str(&format!("?tenant={tenant}"));
        }
        out
    }

    /// Whether `route` names one of the shop's things, which no other caller may reach.
    fn names_a_thing(route: &Route) -> bool {
        let path = route.path.as_str();
        ["{id}", "{feed_id}", "{callee}"]
            .iter()
            .any(|p| path.contains(p))
            || (path.starts_with("/api/agent-rooms/") && path.contains("{key}"))
            || (path.starts_with("/api/dev/apps/{slug}"))
    }

    /// The body another caller sends `route`: one the route would take from its own tenant.
    fn body(&self, route: &Route) -> Send {
        let json = |value: Value| Send::Json(value);
        match (route.method, route.path.as_str()) {
            ("GET" | "DELETE" | "ANY", _) => Send::Empty,
            ("POST", "/v1/chat/completions") => json(
                json!({"model": "mistral-small-latest", "messages": [{"role": "user", "content": "hi"}]}),
            ),
            ("POST", "/v1/embeddings") => json(json!({"input": "hello"})),
            ("POST", "/v1/tenants") => json(json!({"id": "elsewhere"})),
            ("POST", "/v1/batches") => json(
                json!({"requests": [{"custom_id": "a", "provider": "mistral", "messages": [{"role": "user", "content": "x"}]}]}),
            ),
            ("POST", "/v1/rag/{collection}") => Send::Empty,
            ("POST", "/v1/rag/{collection}/documents") => {
                json(json!({"title": "Elsewhere", "text": "Another tenant's text."}))
            }
            ("POST", "/v1/rag/{collection}/files") => Send::Raw(
                "multipart/form-data; boundary=b",
                b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nAnother tenant's file.\r\n--b--\r\n".to_vec(),
            ),
            ("POST", "/v1/rag/{collection}/query") => json(json!({"query": "handbook"})),
            ("POST", "/api/tenants/{tenant}/tokens") => json(json!({"role": "user"})),
            ("POST", "/api/apps/{app}/tools/{name}") => json(json!({"word": "hi"})),
            ("POST", "/api/inbound/{channel}") => {
                json(json!({"from": "a@example.com", "body": "hello"}))
            }
            ("PATCH", "/api/installs/{app}") => json(json!({"settings": {}})),
            ("PUT", "/api/installs/{app}/secrets/{key}") => json(json!({"value": "v"})),
            ("POST", "/api/installs/{app}/activate") => json(json!({"granted_scopes": ROOMS})),
            ("POST", "/api/installs/{app}/deactivate" | "/api/installs/{app}/upgrade") => {
                Send::Empty
            }
            ("PATCH", "/api/installs/{app}/workflows/{workflow}") => json(json!({"name": "n"})),
            ("PATCH", "/api/installs/{app}/agents/{agent}") => {
                json(json!({"display_name": "Elsewhere"}))
            }
            ("PUT", "/api/integrations/{provider}") => json(json!({"config": {}})),
            ("PUT", "/api/llm-settings") => {
                json(json!({"roles": {"fast": {"provider": "mistral"}}}))
            }
            ("PUT", "/api/tenant/settings") => json(json!({"time_zone": "Europe/Lisbon"})),
            ("PATCH", "/api/commitments/{id}") => json(json!({"status": "done"})),
            ("POST", "/api/conversations") => json(json!({"channel": "web", "title": "Elsewhere"})),
            ("POST", "/api/conversations/{id}/messages") => json(json!({"content": "hello"})),
            ("POST", "/api/agent-rooms" | "/api/agent-rooms/") => {
                json(json!({"name": "Elsewhere", "members": []}))
            }
            ("POST", "/api/agent-rooms/{id}/members") => json(json!({"key": self.member})),
            ("POST", "/api/agent-rooms/{id}/messages") => json(json!({"content": "hello"})),
            ("POST", "/api/grants") => json(
                json!({"caller_app": self.app, "callee_app": self.other_app, "allowed_agents": ["lead"]}),
            ),
            ("POST", "/api/grants/{caller}/{callee}/approve") => {
                json(json!({"allowed_agents": ["lead"]}))
            }
            ("POST", "/api/grants/{caller}/{callee}/revoke") => Send::Empty,
            ("POST", "/api/wires") => json(
                json!({"emitter_app": self.other_app, "event_name": "probe_event", "subscriber_app": self.app, "target_agent": "lead"}),
            ),
            ("POST", "/api/wires/{id}/approve" | "/api/wires/{id}/revoke") => Send::Empty,
            ("POST", "/api/admin/data-feeds/{feed_id}/run-now")
            | ("POST", "/api/admin/data-feeds/{feed_id}/enable")
            | ("POST", "/api/admin/data-feeds/{feed_id}/disable") => Send::Empty,
            ("POST", "/api/visions/{id}/approve" | "/api/visions/{id}/reject") => Send::Empty,
            ("POST", "/api/mcp/agent-invoke") => {
                json(json!({"agent": "helper", "prompt": "p", "from_agent": "lead"}))
            }
            ("POST", "/api/mcp/rooms-post") => {
                json(json!({"room_id": self.room, "content": "hi", "from_agent": "lead"}))
            }
            ("POST", "/api/mcp/tools-call") => {
                json(json!({"name": "records.query", "args": {"record_type": "note"}}))
            }
            ("POST", "/api/mcp/secrets-get") => json(json!({"key": "API_KEY"})),
            ("POST", "/api/mcp/config") => json(json!({})),
            ("POST", "/api/mcp/apps-invoke") => {
                json(json!({"app": self.other_app, "agent": "lead", "prompt": "p"}))
            }
            ("POST", "/api/mcp/apps-fetch") => {
                json(json!({"app": self.other_app, "path": "/open"}))
            }
            ("POST", "/api/mcp/events-emit") => json(json!({"name": "probe_event"})),
            ("POST", "/api/mcp/agent-ask") => json(json!({"prompt": "p"})),
            ("POST", "/api/mcp/commitments-add") => {
                json(json!({"title": "t", "content": "c", "from_agent": "lead"}))
            }
            ("POST", "/api/mcp/public-url") => json(json!({"path": "/open"})),
            ("POST", "/api/dev/preflight") => json(json!({"manifest": "apiVersion: platform/v2"})),
            ("POST", "/api/dev/apps/{slug}/versions") => Send::Register,
            ("POST", "/api/dev/apps/{slug}/versions/{version}/defaults/templates") => {
                json(json!([]))
            }
            ("PUT", "/api/dev/apps/{slug}/versions/{version}/bundle") => Send::Raw(
                "application/zip",
                super::zip_of(&[("index.html", b"<p>elsewhere</p>")]),
            ),
            ("POST", "/api/dev/apps/{slug}/versions/{version}/promote")
            | ("POST", "/api/dev/apps/{slug}/archive") => Send::Empty,
            ("POST", "/api/dev/apps/{slug}/upgrade") => {
                json(json!({"target_version": "1.0.0", "organization": "o", "tenant": "t"}))
            }
            ("PUT", "/api/dev/apps/{slug}/secrets/{key}") => json(json!({"value": "v"})),
            ("POST", "/api/dev/apps/{slug}/tools/{name}") => json(json!({"word": "hi"})),
            ("PATCH", "/api/dev/apps/{slug}/settings") => json(json!({"settings": {}})),
            (method, path) => panic!(
                "{method} {path}: the isolation test has no body for this route; add one to Shop::body"
            ),
        }
    }
}

/// What a try sends.
enum Send {
    Empty,
    Json(Value),
    Raw(&'static str, Vec<u8>),
    /// A version's registration (multipart: the manifest and the component).
    Register,
}

/// Sends `method path` as `caller` (the tenant in `X-Service-Tenant` where the route reads it
/// there): the status and the body as text.
async fn call(
    host: &Host,
    route: &Route,
    path: &str,
    caller: &Caller,
    send: &Send,
    component: &[u8],
) -> (StatusCode, String) {
    let method = if route.method == "ANY" {
        "GET"
    } else {
        route.method
    };
    if let Send::Register = send {
        let app = path.split('/').nth(4).unwrap();
        let text = manifest(app, true).replace("version: 1.0.0", "version: 9.0.0");
        let (status, body) = host
            .register(
                app,
                &caller.token,
                &[
                    ("manifest", None, text.as_bytes()),
                    ("component", None, component),
                ],
            )
            .await;
        return (status, body.to_string());
    }
    let mut request = reqwest::Client::new()
        .request(method.parse().unwrap(), format!("{}{path}", host.base()))
        .bearer_auth(&caller.token);
    if who(&route.path) == Who::OrgHeader {
        request = request.header("x-service-tenant", &caller.tenant);
    }
    request = match send {
        Send::Empty | Send::Register => request,
        Send::Json(value) => request.json(value),
        Send::Raw(content_type, bytes) => request
            .header("content-type", *content_type)
            .body(bytes.clone()),
    };
    let response = request.send().await.unwrap();
    let status = response.status();
    (status, response.text().await.unwrap())
}

/// What the shop (and its developer) reads on every `GET` route: the status and the body, by
/// route. Streams are left out (a stream does not end), and so are the app's own HTTP routes
/// (the app answers them; they hold nothing of the platform's) and the catalogue of every
/// published app (`/api/apps`: other tests publish apps into the same database meanwhile;
/// what the shop has installed is `/api/installs`).
async fn snapshot(
    host: &Host,
    shop: &Shop,
    callers: &BTreeMap<&str, Caller>,
    table: &[Route],
    component: &[u8],
) -> BTreeMap<String, (StatusCode, String)> {
    let mut seen = BTreeMap::new();
    for route in table {
        if route.method != "GET" || route.path.ends_with("/stream") || route.path == "/api/apps" {
            continue;
        }
        let caller = match who(&route.path) {
            Who::Public => continue,
            Who::Tenant => &callers["shop-admin"],
            Who::OrgPath | Who::OrgHeader => &callers["shop-key"],
            Who::App => &callers["shop-app"],
            Who::Developer => &callers["ada"],
        };
        let path = shop.path(route, &caller.tenant);
        let answer = call(host, route, &path, caller, &Send::Empty, component).await;
        seen.insert(format!("GET {path}"), answer);
    }
    seen
}

#[tokio::test]
async fn every_route_is_closed_to_another_tenant_and_another_organization() {
    let table = atrium_server::route_table();
    assert!(
        table.len() > 80
            && table
                .iter()
                .any(|r| r.path == "/api/agent-rooms/{id}/messages"),
        "the route table lists the host's routes: {table:?}"
    );
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, _dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, ada) = host.sign_up("ada", true).await;
        let (_, bob) = host.sign_up("bob", true).await;
        let app = slug("isle");
        let other_app = slug("isle-peer");
        // The app subscribes to the peer's event: its activation proposes the wire.
        let subscriber = manifest(&app, true).replace(
            "  - { emitter_app: ledger, event_name: entry_voided, target_agent: lead }\n",
            &format!("  - {{ emitter_app: ledger, event_name: entry_voided, target_agent: lead }}\n  - {{ emitter_app: {other_app}, event_name: probe_event, target_agent: lead }}\n"),
        );
        assert!(subscriber.contains(&other_app), "{subscriber}");
        host.publish(&app, &ada, &subscriber, &component).await;
        host.publish(&other_app, &ada, &manifest(&other_app, true), &component)
            .await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let umbrella = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        let admin = host.tenant_token(&acme.secret, "shop", "admin").await;
        let user = host.tenant_token(&acme.secret, "shop", "user").await;
        host.activate(&app, &admin, &ROOMS).await;
        host.activate(&other_app, &admin, &ROOMS).await;
        let app_token = |org: &str, tenant: &str| host.app_token(org, tenant, &app);

        // The shop's things, each with a name no other caller sends.
        let markers = [
            "Shop room 4f1c",
            "Shop talk 9a2e",
            "Pacific/Chatham",
            "Shop clerk 77b0",
            "Shop handbook 3d5f",
        ];
        let member = format!("{app}:lead");
        let (status, room) = host
            .post(
                "/api/agent-rooms",
                &user,
                Body::Json(json!({"name": markers[0], "members": [member]})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{room}");
        let (status, conversation) = host
            .post(
                "/api/conversations",
                &user,
                Body::Json(json!({"channel": "web", "title": markers[1]})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{conversation}");
        let (status, body) = host
            .put(
                "/api/tenant/settings",
                &admin,
                Body::Json(json!({"time_zone": markers[2]})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (status, token) = host
            .send(
                "POST",
                "/api/tenants/shop/tokens",
                Some(&acme.secret),
                Body::Json(json!({"role": "user", "display_name": markers[3]})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{token}");
        let (status, grant) = host
            .post(
                "/api/grants",
                &admin,
                Body::Json(
                    json!({"caller_app": app, "callee_app": other_app, "allowed_agents": ["lead"]}),
                ),
            )
            .await;
        assert!(status.is_success(), "{grant}");
        let (status, wires) = host.get("/api/wires", &admin).await;
        assert_eq!(status, StatusCode::OK, "{wires}");
        let wire = wires["wires"][0].clone();
        assert_eq!(wire["emitter_app"], other_app.as_str(), "{wires}");
        let shop_key = Caller {
            token: acme.secret.clone(),
            tenant: "shop".into(),
        };
        let collection = unique("kb");
        let rag = |method: &'static str, path: String, body: Option<Value>| {
            let (host, key) = (&host, &shop_key);
            async move {
                let mut request = reqwest::Client::new()
                    .request(method.parse().unwrap(), format!("{}{path}", host.base()))
                    .bearer_auth(&key.token)
                    .header("x-service-tenant", &key.tenant);
                if let Some(body) = body {
                    request = request.json(&body);
                }
                let response = request.send().await.unwrap();
                let status = response.status();
                (status, response.json::<Value>().await.unwrap())
            }
        };
        let (status, body) = rag("POST", format!("/v1/rag/{collection}"), None).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, document) = rag(
            "POST",
            format!("/v1/rag/{collection}/documents"),
            Some(json!({"title": markers[4], "text": "The shop's own handbook."})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{document}");
        let (status, batch) = rag(
            "POST",
            "/v1/batches".into(),
            Some(json!({"requests": [{"custom_id": "a", "provider": "mistral", "messages": [{"role": "user", "content": "x"}]}]})),
        )
        .await;
        assert_eq!(status, StatusCode::ACCEPTED, "{batch}");
        // The batch runs in the background: the shop reads it once it has ended.
        let batch_path = format!("/v1/batches/{}", batch["id"].as_str().unwrap());
        let started = std::time::Instant::now();
        loop {
            let (_, seen) = rag("GET", batch_path.clone(), None).await;
            if seen["status"] == "completed" {
                break;
            }
            assert!(started.elapsed().as_secs() < 60, "{seen}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let shop = Shop {
            app: app.clone(),
            other_app: other_app.clone(),
            room: room["id"].as_str().unwrap().to_owned(),
            member,
            conversation: conversation["id"].as_str().unwrap().to_owned(),
            wire: wire["id"].as_str().unwrap().to_owned(),
            token_id: token["id"].as_str().unwrap().to_owned(),
            batch: batch["id"].as_str().unwrap().to_owned(),
            collection,
            document: document["document_id"].as_str().unwrap().to_owned(),
        };

        let caller = |token: String, tenant: &str| Caller {
            token,
            tenant: tenant.to_owned(),
        };
        let mut callers = BTreeMap::new();
        callers.insert("shop-admin", caller(admin.clone(), "shop"));
        callers.insert("shop-key", shop_key.clone());
        callers.insert("shop-app", caller(app_token(&acme.org_id, "shop"), "shop"));
        callers.insert("ada", caller(ada.clone(), "shop"));
        let before = snapshot(&host, &shop, &callers, &table, &component).await;
        assert!(
            before
                .iter()
                .any(|(_, (_, body))| body.contains(markers[0]))
                && before
                    .iter()
                    .any(|(_, (_, body))| body.contains(markers[2])),
            "the shop reads its own things: {before:?}"
        );

        // Another tenant of the organization, then another organization (whose tenant is also
        // called `shop`); for the developer routes, another developer.
        let depot = host.tenant_token(&acme.secret, "depot", "admin").await;
        let elsewhere = host.tenant_token(&umbrella.secret, "shop", "admin").await;
        let others = [
            (
                "another tenant",
                caller(depot, "depot"),
                None,
                caller(app_token(&acme.org_id, "depot"), "depot"),
            ),
            (
                "another organization",
                caller(elsewhere, "shop"),
                Some(caller(umbrella.secret.clone(), "shop")),
                caller(app_token(&umbrella.org_id, "shop"), "shop"),
            ),
        ];
        let bob = caller(bob, "shop");
        let mut tried = 0;
        for (label, tenant, key, app_caller) in &others {
            for route in &table {
                let caller = match who(&route.path) {
                    Who::Public => continue,
                    Who::Tenant => tenant,
                    // An organization's key speaks for every tenant of it (it names the
                    // tenant itself): only another organization's is a stranger's.
                    Who::OrgPath | Who::OrgHeader => match key {
                        Some(key) => key,
                        None => continue,
                    },
                    Who::App => app_caller,
                    Who::Developer => &bob,
                };
                let path = shop.path(route, &caller.tenant);
                let send = shop.body(route);
                let (status, body) = call(&host, route, &path, caller, &send, &component).await;
                tried += 1;
                let what = format!("{} {path} from {label}: {status} {body}", route.method);
                assert!(!status.is_server_error(), "{what}");
                for marker in markers {
                    assert!(!body.contains(marker), "{what} shows `{marker}`");
                }
                if Shop::names_a_thing(route) {
                    assert!(!status.is_success(), "{what} reached the shop's");
                }
            }
        }
        assert!(tried > 150, "{tried} tries");

        let after = snapshot(&host, &shop, &callers, &table, &component).await;
        for (route, seen) in &before {
            assert_eq!(
                Some(seen),
                after.get(route),
                "{route}: what the shop reads changed after the others' tries"
            );
        }
        host.stop().await;
    }
}

//! Calling an installed app's tools over HTTP: the install's settings, secrets (the tenant's
//! override over the developer's default) and records; a hostile app's failures stay in its own
//! call; another tenant or organization reaches nothing.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, code, slug};
use crate::{stores, unique};

/// The probe test component's manifest under a fresh slug, with scopes of the catalogue.
fn probe_manifest(app: &str) -> String {
    std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
        .unwrap()
        .replace("app_id: probe", &format!("app_id: {app}"))
        .replace(
            "required_scopes: [probe.read, probe.write]",
            "required_scopes: [probe.read, probe.write, knowledge.read, knowledge.write]",
        )
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
        + "install_settings:\n  - {id: greeting, type: string, label: Greeting, default: hi}\n  - {id: token, type: secret, label: Token}\n"
        + "rag_slots:\n  - {name: handbook, scope: read_write}\n  - {name: policies}\n"
}

#[tokio::test]
async fn tools_run_with_the_install_and_fail_alone() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let app = slug("probe");
        let text = probe_manifest(&app);
        let (status, body) = host
            .register(
                &app,
                &dev,
                &[
                    ("manifest", None, text.as_bytes()),
                    ("component", None, &component),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, _) = host
            .post(
                &format!("/api/dev/apps/{app}/versions/1.0.0/promote"),
                &dev,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = host
            .put(
                &format!("/api/dev/apps/{app}/secrets/API_KEY"),
                &dev,
                Body::Json(json!({"value": "developer-default"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);

        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let token = |tenant: &'static str, role: &'static str, key: String| {
            let host = &host;
            async move {
                let (status, body) = host
                    .post(
                        &format!("/api/tenants/{tenant}/tokens"),
                        &key,
                        Body::Json(json!({"role": role})),
                    )
                    .await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
                body["token"].as_str().unwrap().to_owned()
            }
        };
        let admin = token("shop", "admin", acme.secret.clone()).await;
        let user = token("shop", "user", acme.secret.clone()).await;
        let call = |tool: &str, args: Value, who: &str| {
            let (host, path, who) = (
                &host,
                format!("/api/apps/{app}/tools/{tool}"),
                who.to_owned(),
            );
            async move { host.post(&path, &who, Body::Json(args)).await }
        };

        // Not installed yet.
        let (status, body) = call("echo", json!({}), &user).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        // The tenant's knowledge collections, made through /v1 with the organization's key.
        for name in ["handbook", "policies"] {
            let response = reqwest::Client::new()
                .post(format!("{}/v1/rag/{name}", host.base()))
                .bearer_auth(&acme.secret)
                .header("x-service-tenant", "shop")
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), StatusCode::CREATED);
        }
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/activate"),
                &admin,
                Body::Json(json!({
                    "granted_scopes": ["knowledge.read", "knowledge.write", "tasks.read", "tasks.write"],
                    "settings": {"token": "s3cret"},
                    "rag_bindings": {"handbook": "handbook", "policies": "policies"}
                })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");

        let (status, body) = call("echo", json!({"word": "hello"}), &user).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["result"]["word"], "hello", "{body}");
        let (_, body) = call("platform", json!({"op": "config_all"}), &user).await;
        assert_eq!(body["result"]["ok"]["greeting"], "hi", "{body}");
        assert_eq!(
            body["result"]["ok"]["token"], "s3cret",
            "secret settings reach the app: {body}"
        );
        let (_, body) = call("platform", json!({"op": "info"}), &user).await;
        assert_eq!(body["result"]["tenant_id"], "shop", "{body}");
        assert_eq!(body["result"]["app_id"], app.as_str(), "{body}");
        let (_, body) = call("platform", json!({"op": "secret", "key": "API_KEY"}), &user).await;
        assert_eq!(body["result"]["ok"], "developer-default", "{body}");

        // Records: put, query, update, get, delete, all within the install.
        let put = json!({"op": "tool", "name": "records.put", "args": {"record_type": "note", "record": {"title": "first", "status": "open"}}});
        let (_, body) = call("platform", put, &user).await;
        let id = body["result"]["ok"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{body}"))
            .to_owned();
        let (_, body) = call("platform", json!({"op": "tool", "name": "records.query", "args": {"record_type": "note", "status": "open"}}), &user).await;
        assert_eq!(body["result"]["ok"][0]["title"], "first", "{body}");
        let (_, body) = call("platform", json!({"op": "tool", "name": "records.update", "args": {"id": id, "fields": {"status": "done"}}}), &user).await;
        assert_eq!(body["result"]["ok"]["ok"], true, "{body}");
        let (_, body) = call("platform", json!({"op": "tool", "name": "records.query", "args": {"record_type": "note", "status": "open"}}), &user).await;
        assert_eq!(body["result"]["ok"], json!([]), "{body}");
        let (_, body) = call(
            "platform",
            json!({"op": "tool", "name": "records.get", "args": {"id": id}}),
            &user,
        )
        .await;
        assert_eq!(body["result"]["ok"]["status"], "done", "{body}");
        let (_, body) = call(
            "platform",
            json!({"op": "tool", "name": "records.put", "args": {"record_type": "note"}}),
            &user,
        )
        .await;
        assert_eq!(
            body["result"]["err"]["decision"], "invalid_arguments",
            "{body}"
        );
        let (_, body) = call(
            "platform",
            json!({"op": "tool", "name": "mail.teleport", "args": {}}),
            &user,
        )
        .await;
        assert_eq!(body["result"]["err"]["decision"], "unknown_tool", "{body}");

        // Every capability is served now: rooms.post reaches the platform, which refuses an
        // install without `rooms.write` (the room rules are tested in `registry::rooms`).
        let (_, body) = call(
            "platform",
            json!({"op": "post", "room": "r1", "content": "hi", "from": "lead"}),
            &user,
        )
        .await;
        let err = &body["result"]["err"];
        assert_eq!(err["decision"], "scope_denied", "{body}");
        assert_eq!(err["tool_name"], "rooms.post", "{body}");
        assert_eq!(err["needed_scopes"], json!(["rooms.write"]), "{body}");
        // An event nobody is wired to: nothing to deliver.
        let (_, body) = call(
            "platform",
            json!({"op": "emit", "name": "probe_event"}),
            &user,
        )
        .await;
        assert_eq!(
            body["result"]["ok"],
            json!({"wire_count": 0, "dispatched": 0, "failures": 0}),
            "{body}"
        );
        let (_, body) = call(
            "platform",
            json!({"op": "post", "room": "r1", "content": "hi", "from": "ghost"}),
            &user,
        )
        .await;
        assert_eq!(body["result"]["err"]["decision"], "unknown_agent", "{body}");
        let (_, body) = call(
            "platform",
            json!({"op": "emit", "name": "undeclared"}),
            &user,
        )
        .await;
        assert!(
            body["result"]["err"]["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("event `undeclared` is not declared")),
            "{body}"
        );

        // Chat through the host's gateway, billed to the tenant with the app named.
        let chat = |args: Value| json!({"op": "tool", "name": "chat.complete", "args": args});
        let (status, body) = call(
            "platform",
            chat(
                json!({"messages": [{"role": "user", "content": "hello"}], "tier": "eu-sovereign"}),
            ),
            &user,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let answer = &body["result"]["ok"];
        assert!(
            answer["content"]
                .as_str()
                .is_some_and(|c| c.ends_with("says hi")),
            "{body}"
        );
        assert_eq!(answer["usage"]["total_tokens"], 15, "{body}");
        let provider = answer["provider"].as_str().unwrap().to_owned();
        assert_eq!(host.fakes.calls(&provider), 1, "{body}");
        let (_, body) = call("platform", chat(json!({"messages": []})), &user).await;
        assert_eq!(
            body["result"]["err"]["decision"], "invalid_arguments",
            "{body}"
        );
        assert!(
            body["result"]["err"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("messages")),
            "{body}"
        );
        let streamed =
            chat(json!({"messages": [{"role": "user", "content": "x"}], "stream": true}));
        let (_, body) = call("platform", streamed, &user).await;
        assert_eq!(
            body["result"]["err"]["decision"], "invalid_arguments",
            "{body}"
        );
        let pii_abroad = chat(
            json!({"messages": [{"role": "user", "content": "x"}], "provider": "openai", "contains_pii": true}),
        );
        let (_, body) = call("platform", pii_abroad, &user).await;
        assert_eq!(
            body["result"]["err"]["decision"], "invalid_arguments",
            "{body}"
        );
        assert_eq!(
            host.fakes.calls("openai"),
            0,
            "the EU data policy holds for apps too"
        );
        // A call straight to /v1 for the same tenant is counted for it, not for the app.
        let response = reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", host.base()))
            .bearer_auth(&acme.secret)
            .header("x-service-tenant", "shop")
            .json(
                &json!({"model": "eu-sovereign", "messages": [{"role": "user", "content": "hi"}]}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let usage: Value = reqwest::Client::new()
            .get(format!("{}/v1/usage?tenant=shop", host.base()))
            .bearer_auth(&acme.secret)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(usage["tenant"]["calls"].as_i64().unwrap() >= 2, "{usage}");
        assert_eq!(
            usage["per_app"].as_array().map(Vec::len),
            Some(1),
            "{usage}"
        );
        assert_eq!(usage["per_app"][0]["app"], app.as_str(), "{usage}");
        assert_eq!(usage["per_app"][0]["calls"], 1, "{usage}");
        assert_eq!(usage["per_app"][0]["tokens"], 15, "{usage}");

        // The tenant's override of a secret wins over the developer's default, until removed.
        let override_path = format!("/api/installs/{app}/secrets/API_KEY");
        let (status, _) = host
            .put(&override_path, &user, Body::Json(json!({"value": "x"})))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host
            .put(
                &override_path,
                &admin,
                Body::Json(json!({"value": "tenant-override"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert!(!body.to_string().contains("tenant-override"), "{body}");
        let (_, body) = call("platform", json!({"op": "secret", "key": "API_KEY"}), &user).await;
        assert_eq!(body["result"]["ok"], "tenant-override", "{body}");
        let (status, _) = host
            .put(
                &format!("/api/installs/{app}/secrets/api-key"),
                &admin,
                Body::Json(json!({"value": "x"})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (status, _) = host.delete(&override_path, &admin).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (_, body) = call("platform", json!({"op": "secret", "key": "API_KEY"}), &user).await;
        assert_eq!(body["result"]["ok"], "developer-default", "{body}");
        let (status, _) = host.delete(&override_path, &admin).await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // Settings changed without a restart: the next call sees them.
        let install_path = format!("/api/installs/{app}");
        let (status, body) = host
            .send(
                "PATCH",
                &install_path,
                Some(&admin),
                Body::Json(json!({"settings": {"greeting": "bonjour"}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (_, body) = call("platform", json!({"op": "config_all"}), &user).await;
        assert_eq!(body["result"]["ok"]["greeting"], "bonjour", "{body}");
        assert_eq!(body["result"]["ok"]["token"], "s3cret", "{body}");
        let (status, body) = host
            .send(
                "PATCH",
                &install_path,
                Some(&admin),
                Body::Json(json!({"settings": {"greeting": 5}})),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "invalid_settings");
        let (status, _) = host
            .send(
                "PATCH",
                &install_path,
                Some(&user),
                Body::Json(json!({"settings": {}})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);

        // Knowledge through the install's slots: the app names a slot, never a collection.
        let add = json!({"op": "tool", "name": "knowledge.add", "args": {"slot": "handbook", "title": "Plants", "text": "Water the ficus on Mondays."}});
        let (_, body) = call("platform", add, &user).await;
        assert!(body["result"]["ok"]["document_id"].is_string(), "{body}");
        let query = json!({"op": "tool", "name": "knowledge.query", "args": {"slot": "handbook", "query": "ficus"}});
        let (_, body) = call("platform", query, &user).await;
        assert!(
            body["result"]["ok"]["matches"][0]["text"]
                .as_str()
                .unwrap()
                .contains("ficus"),
            "{body}"
        );
        let readonly = json!({"op": "tool", "name": "knowledge.add", "args": {"slot": "policies", "title": "x", "text": "y"}});
        let (_, body) = call("platform", readonly, &user).await;
        assert!(
            body["result"]["err"]["message"]
                .as_str()
                .unwrap()
                .contains("read-only"),
            "{body}"
        );
        let undeclared = json!({"op": "tool", "name": "knowledge.query", "args": {"slot": "secrets", "query": "x"}});
        let (_, body) = call("platform", undeclared, &user).await;
        assert_eq!(
            body["result"]["err"]["decision"], "invalid_arguments",
            "{body}"
        );

        // The tenant edits an agent; the edits survive a re-activation, field by field.
        let agents_path = format!("/api/installs/{app}/agents");
        let (status, body) = host.get(&agents_path, &user).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["agents"].as_array().unwrap().len(), 2, "{body}");
        let lead = format!("{agents_path}/lead");
        let edit = json!({"system_prompt": "Be brief.", "tools_allowed": ["echo"]});
        let (status, _) = host
            .send("PATCH", &lead, Some(&user), Body::Json(edit.clone()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host
            .send("PATCH", &lead, Some(&admin), Body::Json(edit))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["system_prompt"], "Be brief.");
        assert_eq!(
            body["display_name"], "Lead",
            "an unedited field keeps the manifest's value"
        );
        let (status, body) = host
            .send(
                "PATCH",
                &lead,
                Some(&admin),
                Body::Json(json!({"display_name": "Chief"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["system_prompt"], "Be brief.", "edits merge: {body}");
        let (status, body) = host
            .send(
                "PATCH",
                &lead,
                Some(&admin),
                Body::Json(json!({"tools_allowed": ["teleport"]})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "tools_allowed");
        let (status, _) = host
            .send(
                "PATCH",
                &format!("{agents_path}/nobody"),
                Some(&admin),
                Body::Json(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/activate"),
                &admin,
                Body::Json(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (_, body) = host.get(&agents_path, &user).await;
        let kept = body["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == "lead")
            .unwrap()
            .clone();
        assert_eq!(kept["display_name"], "Chief", "{body}");
        assert_eq!(kept["system_prompt"], "Be brief.", "{body}");
        assert_eq!(kept["tools_allowed"], json!(["echo"]), "{body}");

        // Lifecycle hooks fanned out to the tenant's installs: an inbound message, a new user
        // (the probe refuses new users: the failure is reported for the app alone).
        let inbound = json!({"from": "ada@example.com", "body": "hello", "subject": "Invoice 7"});
        let (status, _) = host
            .post("/api/inbound/email", &user, Body::Json(inbound.clone()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host
            .post("/api/inbound/email", &admin, Body::Json(inbound.clone()))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(
            body["message_id"].as_str().unwrap().starts_with("msg_"),
            "{body}"
        );
        let mine: Vec<&Value> = body["dispatched"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["app"] == app.as_str())
            .collect();
        assert_eq!(mine.len(), 1, "{body}");
        assert_eq!(mine[0]["ok"], true, "{body}");
        let (status, body) = host
            .post("/api/inbound/Not A Channel", &admin, Body::Json(inbound))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let (status, body) = host
            .post(
                "/api/tenants/shop/tokens",
                &acme.secret,
                Body::Json(json!({"role": "user", "display_name": "Newcomer"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let hooks = body["user_added"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"));
        let probe = hooks.iter().find(|h| h["app"] == app.as_str()).unwrap();
        assert_eq!(probe["ok"], false, "{body}");
        assert!(
            probe["error"].as_str().unwrap().contains("refusing user"),
            "{body}"
        );

        // Hostile calls fail alone, each with its status; the app keeps answering.
        let (status, body) = call("trap", json!({}), &user).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
        assert_eq!(code(&body), "app_failed");
        let (status, body) = call("memory_bomb", json!({}), &user).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
        let (status, body) = call("nothing_declared", json!({}), &user).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(code(&body), "unknown_tool");
        let (status, body) = call("internal", json!({}), &user).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(code(&body), "not_agent_visible");
        let (status, _) = host
            .post(
                &format!("/api/apps/{app}/tools/echo"),
                &user,
                Body::Raw("application/json".into(), b"[1]".to_vec()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (status, body) = call("echo", json!({"still": "here"}), &user).await;
        assert_eq!(status, StatusCode::OK, "{body}");

        // Another tenant, another organization, an organization key: nothing.
        let depot = token("depot", "user", acme.secret.clone()).await;
        let umbrella = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        let stranger = token("shop", "admin", umbrella.secret.clone()).await;
        let callers = super::commitments::Callers {
            user: &user,
            admin: &admin,
            other_tenant: &depot,
            other_org: &stranger,
            org_key: &acme.secret,
        };
        super::commitments::commitments_are_kept_for_the_tenant(&host, &app, &callers).await;
        for who in [&depot, &stranger] {
            let (status, body) = call("echo", json!({}), who).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        }
        // Nor any other endpoint of this install, even as an admin of its own tenant.
        let depot_admin = token("depot", "admin", acme.secret.clone()).await;
        for who in [&depot_admin, &stranger] {
            let base = format!("/api/installs/{app}");
            for (method, path, body) in [
                ("GET", format!("{base}/agents"), Body::None),
                (
                    "PATCH",
                    format!("{base}/agents/lead"),
                    Body::Json(json!({"system_prompt": "x"})),
                ),
                ("GET", format!("{base}/workflows"), Body::None),
                (
                    "PATCH",
                    base.clone(),
                    Body::Json(json!({"settings": {"greeting": "x"}})),
                ),
                (
                    "PUT",
                    format!("{base}/secrets/API_KEY"),
                    Body::Json(json!({"value": "x"})),
                ),
                ("POST", format!("{base}/upgrade"), Body::Json(json!({}))),
            ] {
                let (status, answer) = host.send(method, &path, Some(who), body).await;
                assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {answer}");
            }
            // An inbound message of another tenant reaches that tenant's installs only.
            let (status, body) = host
                .post(
                    "/api/inbound/email",
                    who,
                    Body::Json(json!({"from": "x@example.com", "body": "hi"})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert!(
                body["dispatched"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|d| d["app"] != app.as_str()),
                "{body}"
            );
        }
        let (_, body) = call("platform", json!({"op": "secret", "key": "API_KEY"}), &user).await;
        assert_eq!(
            body["result"]["ok"], "developer-default",
            "untouched by the refused override: {body}"
        );
        let (status, _) = call("echo", json!({}), &acme.secret).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        // The other organization's tenant `shop` installs the same app: its own records.
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/activate"),
                &stranger,
                Body::Json(json!({"granted_scopes": ["knowledge.read", "knowledge.write", "tasks.read", "tasks.write"]})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (_, body) = call(
            "platform",
            json!({"op": "tool", "name": "records.query", "args": {"record_type": "note"}}),
            &stranger,
        )
        .await;
        assert_eq!(body["result"]["ok"], json!([]), "{body}");
        let (_, body) = call(
            "platform",
            json!({"op": "tool", "name": "records.get", "args": {"id": id}}),
            &stranger,
        )
        .await;
        assert!(body["result"]["ok"].is_null(), "{body}");
        // Its own override of a secret is read by its calls only: each install reads its own.
        let (status, body) = host
            .put(
                &format!("/api/installs/{app}/secrets/API_KEY"),
                &stranger,
                Body::Json(json!({"value": "umbrella-override"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let secret = json!({"op": "secret", "key": "API_KEY"});
        let (_, body) = call("platform", secret.clone(), &stranger).await;
        assert_eq!(body["result"]["ok"], "umbrella-override", "{body}");
        let (_, body) = call("platform", secret, &user).await;
        assert_eq!(body["result"]["ok"], "developer-default", "{body}");

        // Activations of many tenants at once all land (on SQLite, write transactions that
        // read first once failed with `database is locked` under this).
        let mut crowd = Vec::new();
        for i in 0..8 {
            let tenant: &'static str = ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"][i];
            crowd.push(token(tenant, "admin", acme.secret.clone()).await);
        }
        let path = format!("/api/installs/{app}/activate");
        let results = futures::future::join_all(crowd.iter().map(|admin| {
            host.post(
                &path,
                admin,
                Body::Json(json!({"granted_scopes": ["knowledge.read", "knowledge.write", "tasks.read", "tasks.write"]})),
            )
        }))
        .await;
        for (status, body) in results {
            assert_eq!(status, StatusCode::CREATED, "{body}");
        }
        for admin in &crowd {
            let deactivate = format!("/api/installs/{app}/deactivate");
            let (status, _) = host.post(&deactivate, admin, Body::None).await;
            assert_eq!(status, StatusCode::OK);
        }

        // Deactivated: no more calls. (Both installs: the shared test database keeps what a
        // test leaves active, and the schedule scanner would find it.)
        let (status, _) = host
            .post(
                &format!("/api/installs/{app}/deactivate"),
                &stranger,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = host
            .post(
                &format!("/api/installs/{app}/deactivate"),
                &admin,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = call("echo", json!({}), &user).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        host.stop().await;
        drop(dir);
    }
}

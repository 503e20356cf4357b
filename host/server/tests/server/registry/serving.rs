//! Calling an installed app's tools over HTTP: the install's settings, secrets (the tenant's
//! override over the developer's default) and records; a hostile app's failures stay in its own
//! call; another tenant or organization reaches nothing. Each rule is a test of its own, on the
//! binary's shared hosts ([`super::shared`]), with an app, an organization and tenants of its
//! own ([`Installed`]).

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, Shared, code, shared, slug};
use crate::unique;

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

/// The scopes every activation here grants.
const SCOPES: [&str; 4] = [
    "knowledge.read",
    "knowledge.write",
    "tasks.read",
    "tasks.write",
];

/// The probe published (with a developer's default for its secret `API_KEY`) under a slug of
/// its own, and an organization whose tenant `shop` has an admin, a user and the knowledge
/// collections the app's slots bind to.
struct Installed {
    host: &'static Host,
    store: atrium_store::Store,
    app: String,
    acme: atrium_store::CreatedKey,
    admin: String,
    user: String,
}

impl Installed {
    /// The app published and the tenant ready, not installed yet.
    async fn published(shared: &'static Shared) -> Installed {
        let host = &shared.host;
        let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
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
        let acme = shared
            .store
            .create_key(&unique("acme"), "ops")
            .await
            .unwrap();
        let admin = token(host, &acme.secret, "shop", "admin").await;
        let user = token(host, &acme.secret, "shop", "user").await;
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
        Installed {
            host,
            store: shared.store.clone(),
            app,
            acme,
            admin,
            user,
        }
    }

    /// The app installed for `shop` with a secret setting and both slots bound.
    async fn new(shared: &'static Shared) -> Installed {
        let it = Installed::published(shared).await;
        let (status, body) = it
            .host
            .post(
                &format!("/api/installs/{}/activate", it.app),
                &it.admin,
                Body::Json(json!({
                    "granted_scopes": SCOPES,
                    "settings": {"token": "s3cret"},
                    "rag_bindings": {"handbook": "handbook", "policies": "policies"}
                })),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        it
    }

    /// `tool` called with `args` as `who`.
    async fn call(&self, tool: &str, args: Value, who: &str) -> (StatusCode, Value) {
        self.host
            .post(
                &format!("/api/apps/{}/tools/{tool}", self.app),
                who,
                Body::Json(args),
            )
            .await
    }

    /// What the probe's `platform` tool answered for `op`, called as `who`.
    async fn platform(&self, op: Value, who: &str) -> Value {
        let (_, body) = self.call("platform", op, who).await;
        body["result"].clone()
    }

    /// A token of another organization's tenant `shop`, which has no install of the app.
    async fn stranger(&self, role: &str) -> String {
        let umbrella = self
            .store
            .create_key(&unique("umbrella"), "ops")
            .await
            .unwrap();
        token(self.host, &umbrella.secret, "shop", role).await
    }

    /// Deactivates the install of each of `admins`' tenants: the database outlives the test,
    /// and another host's schedule scanner on it would find an active install.
    async fn deactivate(&self, admins: &[&str]) {
        for admin in admins {
            let (status, body) = self
                .host
                .post(
                    &format!("/api/installs/{}/deactivate", self.app),
                    admin,
                    Body::None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    }
}

/// The probe's `platform` operation calling platform tool `name` with `args`.
fn tool(name: &str, args: Value) -> Value {
    json!({"op": "tool", "name": name, "args": args})
}

/// A token of `tenant` with `role`, made with the organization's `key`.
async fn token(host: &Host, key: &str, tenant: &str, role: &str) -> String {
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

#[tokio::test]
async fn a_call_reaches_an_installed_app_with_its_settings_secrets_and_tenant() {
    for shared in shared().await {
        let it = Installed::published(shared).await;
        let (status, body) = it.call("echo", json!({}), &it.user).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "not installed yet: {body}");
        let it = Installed::new(shared).await;
        let (status, body) = it.call("echo", json!({"word": "hello"}), &it.user).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["result"]["word"], "hello", "{body}");
        let config = it.platform(json!({"op": "config_all"}), &it.user).await;
        assert_eq!(config["ok"]["greeting"], "hi", "{config}");
        assert_eq!(
            config["ok"]["token"], "s3cret",
            "secret settings reach the app: {config}"
        );
        let info = it.platform(json!({"op": "info"}), &it.user).await;
        assert_eq!(info["tenant_id"], "shop", "{info}");
        assert_eq!(info["app_id"], it.app.as_str(), "{info}");
        let secret = it
            .platform(json!({"op": "secret", "key": "API_KEY"}), &it.user)
            .await;
        assert_eq!(secret["ok"], "developer-default", "{secret}");
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn records_are_put_queried_updated_and_read_within_the_install_only() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let put = it
            .platform(
                tool(
                    "records.put",
                    json!({"record_type": "note", "record": {"title": "first", "status": "open"}}),
                ),
                &it.user,
            )
            .await;
        let id = put["ok"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{put}"))
            .to_owned();
        let open = tool(
            "records.query",
            json!({"record_type": "note", "status": "open"}),
        );
        let found = it.platform(open.clone(), &it.user).await;
        assert_eq!(found["ok"][0]["title"], "first", "{found}");
        let updated = it
            .platform(
                tool(
                    "records.update",
                    json!({"id": id, "fields": {"status": "done"}}),
                ),
                &it.user,
            )
            .await;
        assert_eq!(updated["ok"]["ok"], true, "{updated}");
        let found = it.platform(open, &it.user).await;
        assert_eq!(found["ok"], json!([]), "{found}");
        let got = it
            .platform(tool("records.get", json!({"id": id})), &it.user)
            .await;
        assert_eq!(got["ok"]["status"], "done", "{got}");
        let refused = it
            .platform(
                tool("records.put", json!({"record_type": "note"})),
                &it.user,
            )
            .await;
        assert_eq!(refused["err"]["decision"], "invalid_arguments", "{refused}");
        let unknown = it
            .platform(tool("mail.teleport", json!({})), &it.user)
            .await;
        assert_eq!(unknown["err"]["decision"], "unknown_tool", "{unknown}");

        // The other organization's tenant `shop` installs the same app: its own records.
        let stranger = it.stranger("admin").await;
        let (status, body) = it
            .host
            .post(
                &format!("/api/installs/{}/activate", it.app),
                &stranger,
                Body::Json(json!({"granted_scopes": SCOPES})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let theirs = it
            .platform(
                tool("records.query", json!({"record_type": "note"})),
                &stranger,
            )
            .await;
        assert_eq!(theirs["ok"], json!([]), "{theirs}");
        let theirs = it
            .platform(tool("records.get", json!({"id": id})), &stranger)
            .await;
        assert!(theirs["ok"].is_null(), "{theirs}");
        it.deactivate(&[&it.admin, &stranger]).await;
    }
}

#[tokio::test]
async fn rooms_and_events_are_served_and_refuse_by_their_rules() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        // rooms.post reaches the platform, which refuses an install without `rooms.write` (the
        // room rules are tested in `registry::rooms`).
        let post = |from: &str| json!({"op": "post", "room": "r1", "content": "hi", "from": from});
        let answer = it.platform(post("lead"), &it.user).await;
        let err = &answer["err"];
        assert_eq!(err["decision"], "scope_denied", "{answer}");
        assert_eq!(err["tool_name"], "rooms.post", "{answer}");
        assert_eq!(err["needed_scopes"], json!(["rooms.write"]), "{answer}");
        let answer = it.platform(post("ghost"), &it.user).await;
        assert_eq!(answer["err"]["decision"], "unknown_agent", "{answer}");
        // An event nobody is wired to: nothing to deliver.
        let emitted = it
            .platform(json!({"op": "emit", "name": "probe_event"}), &it.user)
            .await;
        assert_eq!(
            emitted["ok"],
            json!({"wire_count": 0, "dispatched": 0, "failures": 0}),
            "{emitted}"
        );
        let emitted = it
            .platform(json!({"op": "emit", "name": "undeclared"}), &it.user)
            .await;
        assert!(
            emitted["err"]["reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("event `undeclared` is not declared")),
            "{emitted}"
        );
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn an_app_s_chat_goes_through_the_gateway_billed_to_the_tenant_and_the_app() {
    for shared in shared().await {
        // The fake providers' call counts are read below: no other test may call them now.
        let _alone = shared.fakes_alone.lock().await;
        let it = Installed::new(shared).await;
        let fakes = &it.host.fakes;
        let providers = ["openai", "mistral", "ovh", "anthropic", "ollama"];
        let calls = || providers.map(|p| (p, fakes.calls(p)));
        let before = calls();
        let chat = |args: Value| json!({"op": "tool", "name": "chat.complete", "args": args});
        let (status, body) = it
            .call(
                "platform",
                chat(
                    json!({"messages": [{"role": "user", "content": "hello"}], "tier": "eu-sovereign"}),
                ),
                &it.user,
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
        let once = before.map(|(p, n)| (p, n + usize::from(p == provider)));
        assert_eq!(calls(), once, "one call, to {provider}: {body}");
        let refused = it.platform(chat(json!({"messages": []})), &it.user).await;
        assert_eq!(refused["err"]["decision"], "invalid_arguments", "{refused}");
        assert!(
            refused["err"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("messages")),
            "{refused}"
        );
        let streamed =
            chat(json!({"messages": [{"role": "user", "content": "x"}], "stream": true}));
        let refused = it.platform(streamed, &it.user).await;
        assert_eq!(refused["err"]["decision"], "invalid_arguments", "{refused}");
        let pii_abroad = chat(
            json!({"messages": [{"role": "user", "content": "x"}], "provider": "openai", "contains_pii": true}),
        );
        let refused = it.platform(pii_abroad, &it.user).await;
        assert_eq!(refused["err"]["decision"], "invalid_arguments", "{refused}");
        assert_eq!(calls(), once, "the EU data policy holds for apps too");
        // A call straight to /v1 for the same tenant is counted for it, not for the app.
        let response = reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", it.host.base()))
            .bearer_auth(&it.acme.secret)
            .header("x-service-tenant", "shop")
            .json(
                &json!({"model": "eu-sovereign", "messages": [{"role": "user", "content": "hi"}]}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let usage: Value = reqwest::Client::new()
            .get(format!("{}/v1/usage?tenant=shop", it.host.base()))
            .bearer_auth(&it.acme.secret)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(usage["tenant"]["calls"], 2, "{usage}");
        assert_eq!(
            usage["per_app"].as_array().map(Vec::len),
            Some(1),
            "{usage}"
        );
        assert_eq!(usage["per_app"][0]["app"], it.app.as_str(), "{usage}");
        assert_eq!(usage["per_app"][0]["calls"], 1, "{usage}");
        assert_eq!(usage["per_app"][0]["tokens"], 15, "{usage}");
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn a_tenant_s_override_of_a_secret_wins_for_its_install_until_removed() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let secret = json!({"op": "secret", "key": "API_KEY"});
        let override_path = format!("/api/installs/{}/secrets/API_KEY", it.app);
        let (status, _) = it
            .host
            .put(&override_path, &it.user, Body::Json(json!({"value": "x"})))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = it
            .host
            .put(
                &override_path,
                &it.admin,
                Body::Json(json!({"value": "tenant-override"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert!(!body.to_string().contains("tenant-override"), "{body}");
        let read = it.platform(secret.clone(), &it.user).await;
        assert_eq!(read["ok"], "tenant-override", "{read}");
        let (status, _) = it
            .host
            .put(
                &format!("/api/installs/{}/secrets/api-key", it.app),
                &it.admin,
                Body::Json(json!({"value": "x"})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);

        // Another organization's install of the same app reads its own override only.
        let stranger = it.stranger("admin").await;
        let (status, body) = it
            .host
            .post(
                &format!("/api/installs/{}/activate", it.app),
                &stranger,
                Body::Json(json!({"granted_scopes": SCOPES})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, body) = it
            .host
            .put(
                &override_path,
                &stranger,
                Body::Json(json!({"value": "umbrella-override"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let read = it.platform(secret.clone(), &stranger).await;
        assert_eq!(read["ok"], "umbrella-override", "{read}");
        let read = it.platform(secret.clone(), &it.user).await;
        assert_eq!(read["ok"], "tenant-override", "{read}");

        let (status, _) = it.host.delete(&override_path, &it.admin).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let read = it.platform(secret, &it.user).await;
        assert_eq!(read["ok"], "developer-default", "{read}");
        let (status, _) = it.host.delete(&override_path, &it.admin).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        it.deactivate(&[&it.admin, &stranger]).await;
    }
}

#[tokio::test]
async fn settings_changed_by_an_admin_reach_the_next_call_without_a_restart() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let install_path = format!("/api/installs/{}", it.app);
        let patch = |who: &str, settings: Value| {
            let (host, path, who) = (it.host, install_path.clone(), who.to_owned());
            async move {
                host.send(
                    "PATCH",
                    &path,
                    Some(&who),
                    Body::Json(json!({"settings": settings})),
                )
                .await
            }
        };
        let (status, body) = patch(&it.admin, json!({"greeting": "bonjour"})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let config = it.platform(json!({"op": "config_all"}), &it.user).await;
        assert_eq!(config["ok"]["greeting"], "bonjour", "{config}");
        assert_eq!(config["ok"]["token"], "s3cret", "{config}");
        let (status, body) = patch(&it.admin, json!({"greeting": 5})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "invalid_settings");
        let (status, _) = patch(&it.user, json!({})).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn an_app_reaches_knowledge_through_its_slots_never_a_collection() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let added = it
            .platform(
                tool(
                    "knowledge.add",
                    json!({"slot": "handbook", "title": "Plants", "text": "Water the ficus on Mondays."}),
                ),
                &it.user,
            )
            .await;
        assert!(added["ok"]["document_id"].is_string(), "{added}");
        let found = it
            .platform(
                tool(
                    "knowledge.query",
                    json!({"slot": "handbook", "query": "ficus"}),
                ),
                &it.user,
            )
            .await;
        assert!(
            found["ok"]["matches"][0]["text"]
                .as_str()
                .unwrap()
                .contains("ficus"),
            "{found}"
        );
        let readonly = it
            .platform(
                tool(
                    "knowledge.add",
                    json!({"slot": "policies", "title": "x", "text": "y"}),
                ),
                &it.user,
            )
            .await;
        assert!(
            readonly["err"]["message"]
                .as_str()
                .unwrap()
                .contains("read-only"),
            "{readonly}"
        );
        let undeclared = it
            .platform(
                tool("knowledge.query", json!({"slot": "secrets", "query": "x"})),
                &it.user,
            )
            .await;
        assert_eq!(
            undeclared["err"]["decision"], "invalid_arguments",
            "{undeclared}"
        );
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn an_admin_s_agent_edits_merge_field_by_field_and_survive_a_reactivation() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let host = it.host;
        let agents_path = format!("/api/installs/{}/agents", it.app);
        let (status, body) = host.get(&agents_path, &it.user).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["agents"].as_array().unwrap().len(), 2, "{body}");
        let lead = format!("{agents_path}/lead");
        let edit = json!({"system_prompt": "Be brief.", "tools_allowed": ["echo"]});
        let (status, _) = host
            .send("PATCH", &lead, Some(&it.user), Body::Json(edit.clone()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host
            .send("PATCH", &lead, Some(&it.admin), Body::Json(edit))
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
                Some(&it.admin),
                Body::Json(json!({"display_name": "Chief"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["system_prompt"], "Be brief.", "edits merge: {body}");
        let (status, body) = host
            .send(
                "PATCH",
                &lead,
                Some(&it.admin),
                Body::Json(json!({"tools_allowed": ["teleport"]})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "tools_allowed");
        let (status, _) = host
            .send(
                "PATCH",
                &format!("{agents_path}/nobody"),
                Some(&it.admin),
                Body::Json(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, body) = host
            .post(
                &format!("/api/installs/{}/activate", it.app),
                &it.admin,
                Body::Json(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let (_, body) = host.get(&agents_path, &it.user).await;
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
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn lifecycle_hooks_fan_out_to_the_tenant_s_installs_and_fail_alone() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let host = it.host;
        // An inbound message.
        let inbound = json!({"from": "ada@example.com", "body": "hello", "subject": "Invoice 7"});
        let (status, _) = host
            .post("/api/inbound/email", &it.user, Body::Json(inbound.clone()))
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host
            .post("/api/inbound/email", &it.admin, Body::Json(inbound.clone()))
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
            .filter(|d| d["app"] == it.app.as_str())
            .collect();
        assert_eq!(mine.len(), 1, "{body}");
        assert_eq!(mine[0]["ok"], true, "{body}");
        let (status, body) = host
            .post("/api/inbound/Not A Channel", &it.admin, Body::Json(inbound))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        // A new user: the probe refuses new users, and the failure is reported for it alone.
        let (status, body) = host
            .post(
                "/api/tenants/shop/tokens",
                &it.acme.secret,
                Body::Json(json!({"role": "user", "display_name": "Newcomer"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let hooks = body["user_added"]
            .as_array()
            .unwrap_or_else(|| panic!("{body}"));
        let probe = hooks.iter().find(|h| h["app"] == it.app.as_str()).unwrap();
        assert_eq!(probe["ok"], false, "{body}");
        assert!(
            probe["error"].as_str().unwrap().contains("refusing user"),
            "{body}"
        );
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn a_hostile_call_fails_alone_with_its_status_and_the_app_keeps_answering() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let (status, body) = it.call("trap", json!({}), &it.user).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
        assert_eq!(code(&body), "app_failed");
        let (status, body) = it.call("memory_bomb", json!({}), &it.user).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
        let (status, body) = it.call("nothing_declared", json!({}), &it.user).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(code(&body), "unknown_tool");
        let (status, body) = it.call("internal", json!({}), &it.user).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(code(&body), "not_agent_visible");
        let (status, _) = it
            .host
            .post(
                &format!("/api/apps/{}/tools/echo", it.app),
                &it.user,
                Body::Raw("application/json".into(), b"[1]".to_vec()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        let (status, body) = it.call("echo", json!({"still": "here"}), &it.user).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn another_tenant_or_organization_reaches_nothing_of_an_install() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let host = it.host;
        let depot = token(host, &it.acme.secret, "depot", "user").await;
        let depot_admin = token(host, &it.acme.secret, "depot", "admin").await;
        let stranger = it.stranger("admin").await;
        let callers = super::commitments::Callers {
            user: &it.user,
            admin: &it.admin,
            other_tenant: &depot,
            other_org: &stranger,
            org_key: &it.acme.secret,
        };
        super::commitments::commitments_are_kept_for_the_tenant(host, &it.app, &callers).await;
        for who in [&depot, &stranger] {
            let (status, body) = it.call("echo", json!({}), who).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        }
        // Nor any other endpoint of this install, even as an admin of its own tenant.
        for who in [&depot_admin, &stranger] {
            let base = format!("/api/installs/{}", it.app);
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
                    .all(|d| d["app"] != it.app.as_str()),
                "{body}"
            );
        }
        let read = it
            .platform(json!({"op": "secret", "key": "API_KEY"}), &it.user)
            .await;
        assert_eq!(
            read["ok"], "developer-default",
            "untouched by the refused override: {read}"
        );
        let (status, _) = it.call("echo", json!({}), &it.acme.secret).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        it.deactivate(&[&it.admin]).await;
    }
}

#[tokio::test]
async fn activations_of_many_tenants_at_once_all_land() {
    for shared in shared().await {
        let it = Installed::published(shared).await;
        // On SQLite, write transactions that read first once failed with `database is locked`
        // under this.
        let mut crowd = Vec::new();
        for tenant in ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"] {
            crowd.push(token(it.host, &it.acme.secret, tenant, "admin").await);
        }
        let path = format!("/api/installs/{}/activate", it.app);
        let results = futures::future::join_all(crowd.iter().map(|admin| {
            it.host
                .post(&path, admin, Body::Json(json!({"granted_scopes": SCOPES})))
        }))
        .await;
        for (status, body) in results {
            assert_eq!(status, StatusCode::CREATED, "{body}");
        }
        let admins: Vec<&str> = crowd.iter().map(String::as_str).collect();
        it.deactivate(&admins).await;
    }
}

#[tokio::test]
async fn a_deactivated_install_answers_no_more_calls() {
    for shared in shared().await {
        let it = Installed::new(shared).await;
        let (status, body) = it.call("echo", json!({}), &it.user).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        it.deactivate(&[&it.admin]).await;
        let (status, body) = it.call("echo", json!({}), &it.user).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }
}

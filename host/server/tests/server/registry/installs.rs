//! Activation over HTTP, on SQLite and PostgreSQL: the catalogue a tenant sees, every refusal
//! of an activation with what it misses, idempotent re-activation (settings kept, templates
//! cloned once, dependency grants), deactivation, integrations, and tenants and organizations
//! that see nothing of each other.

use atrium_store::TenantKey;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, code, manifest, slug};
use crate::{stores, unique};

/// Registers and promotes `text` as a version of `app`.
async fn publish(host: &Host, dev: &str, app: &str, version: &str, text: &str) {
    let (status, body) = host
        .register(app, dev, &[("manifest", None, text.as_bytes())])
        .await;
    assert!(status.is_success(), "{body}");
    let (status, body) = host
        .post(
            &format!("/api/dev/apps/{app}/versions/{version}/promote"),
            dev,
            Body::None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

fn missing(body: &Value) -> Vec<&str> {
    body["error"]["missing"]
        .as_array()
        .unwrap_or_else(|| panic!("no `missing` list in {body}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn activation_checks_everything_and_reruns_idempotently() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let ledger = slug("ledger");
        let desk = slug("desk");
        publish(
            &host,
            &dev,
            &ledger,
            "1.0.0",
            &manifest(&ledger, "1.0.0", ""),
        )
        .await;
        let extra = format!(
            "required_scopes: [invoices.read, mail.send]\n\
             required_integrations: [gmail]\n\
             cross_app_dependencies:\n  - app_id: {ledger}\n    routes: [GET /entries]\n    reason: Books approved invoices.\n\
             rag_slots:\n  - name: policies\n    required: true\n\
             install_settings:\n\
             \x20 - {{id: region, type: select, label: Region, options: [eu, us], required: true}}\n\
             \x20 - {{id: limit, type: number, label: Limit, min: 1, max: 100, default: 10}}\n\
             \x20 - {{id: api_key, type: secret, label: API key, required: true}}\n\
             \x20 - {{id: owner, type: string, label: Owner, auto_default: activator_user_id}}\n\
             \x20 - {{id: sender, type: string, label: Sender, auto_default: mail_primary_email}}\n"
        );
        let text = manifest(&desk, "1.0.0", &extra);
        publish(&host, &dev, &desk, "1.0.0", &text).await;
        // A version registered but never promoted cannot be installed.
        let (status, _) = host
            .register(
                &desk,
                &dev,
                &[("manifest", None, text.replace("1.0.0", "1.1.0").as_bytes())],
            )
            .await;
        assert_eq!(status, StatusCode::CREATED);

        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let tenant = "shop";
        let admin = host.tenant_token(&acme.secret, tenant, "admin").await;
        let user = host.tenant_token(&acme.secret, tenant, "user").await;

        // The catalogue discloses what the install page shows.
        let (status, catalogue) = host.get("/api/apps", &user).await;
        assert_eq!(status, StatusCode::OK, "{catalogue}");
        let entry = catalogue["apps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["slug"] == desk.as_str())
            .unwrap()
            .clone();
        assert_eq!(entry["version"], "1.0.0");
        assert_eq!(entry["required_scopes"][1]["name"], "mail.send");
        assert_eq!(entry["required_scopes"][1]["risk"], "high");
        assert_eq!(
            entry["cross_app_dependencies"][0]["reason"],
            "Books approved invoices."
        );
        assert_eq!(entry["rag_slots"][0]["name"], "policies");
        assert_eq!(entry["install_settings"].as_array().unwrap().len(), 5);
        assert!(entry["installed"].is_null());

        let activate = |body: Value, token: String| {
            let (host, app) = (&host, desk.clone());
            async move {
                host.post(
                    &format!("/api/installs/{app}/activate"),
                    &token,
                    Body::Json(body),
                )
                .await
            }
        };
        let full = json!({
            "granted_scopes": ["invoices.read", "mail.send"],
            "settings": {"region": "eu", "api_key": "sk-123"},
            "rag_bindings": {"policies": "handbook"},
            "upgrade_policy": "auto"
        });

        // A tenant user may not activate.
        let (status, body) = activate(full.clone(), user.clone()).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        // Each refusal names what it misses, in order of the checks.
        let (status, body) =
            activate(json!({"granted_scopes": ["invoices.read"]}), admin.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "scopes_not_granted");
        assert_eq!(missing(&body), ["mail.send"]);
        let (status, body) = activate(
            json!({"granted_scopes": ["invoices.read", "mail.send", "users.read"]}),
            admin.clone(),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "granted_scopes");
        let (status, body) = activate(full.clone(), admin.clone()).await;
        assert_eq!(code(&body), "missing_integrations", "{body}");
        assert_eq!(missing(&body), ["gmail"]);
        let (status_put, put) = host
            .put(
                "/api/integrations/gmail",
                &admin,
                Body::Json(json!({"config": {"primary_email": "billing@shop.example"}})),
            )
            .await;
        assert_eq!(status_put, StatusCode::CREATED, "{put}");
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        let (_, body) = activate(json!({"granted_scopes": ["invoices.read", "mail.send"], "settings": {"region": "mars", "limit": 500}}), admin.clone()).await;
        assert_eq!(code(&body), "invalid_settings", "{body}");
        assert_eq!(missing(&body).len(), 2, "{body}");
        let (_, body) = activate(json!({"granted_scopes": ["invoices.read", "mail.send"], "settings": {"colour": "red"}}), admin.clone()).await;
        assert_eq!(code(&body), "invalid_settings", "{body}");
        assert!(missing(&body)[0].starts_with("colour: "), "{body}");
        // An undeclared setting does not hide the values that break their rules: one answer
        // names all three.
        let (_, body) = activate(json!({"granted_scopes": ["invoices.read", "mail.send"], "settings": {"colour": "red", "region": "mars", "limit": 500}}), admin.clone()).await;
        assert_eq!(code(&body), "invalid_settings", "{body}");
        let named: Vec<&str> = missing(&body)
            .iter()
            .map(|m| m.split(':').next().unwrap())
            .collect();
        assert_eq!(named, ["colour", "region", "limit"], "{body}");
        let (_, body) = activate(
            json!({"granted_scopes": ["invoices.read", "mail.send"]}),
            admin.clone(),
        )
        .await;
        assert_eq!(code(&body), "missing_settings", "{body}");
        assert_eq!(missing(&body), ["region", "api_key"]);
        let (_, body) = activate(json!({"granted_scopes": ["invoices.read", "mail.send"], "settings": {"region": "eu", "api_key": "sk-123"}}), admin.clone()).await;
        assert_eq!(code(&body), "missing_rag_bindings", "{body}");
        assert_eq!(missing(&body), ["policies"]);
        let (_, body) = activate(full.clone(), admin.clone()).await;
        assert_eq!(code(&body), "invalid_rag_bindings", "{body}");
        assert!(missing(&body)[0].contains("handbook"), "{body}");
        // The collection exists once the tenant creates it (through /v1 with the org key).
        store
            .create_collection(
                &TenantKey::new(&acme.org_id, tenant),
                "handbook",
                "lexical",
                "lexical-v1",
            )
            .await
            .unwrap();
        let (status, body) = activate(full.clone(), admin.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "missing_app_dependencies");
        assert_eq!(missing(&body), [ledger.as_str()]);
        let (status, body) = activate(json!({"version": "1.1.0"}), admin.clone()).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "an unpublished version: {body}"
        );
        // Nothing of the refused attempts was written.
        let (_, installs) = host.get("/api/installs", &user).await;
        assert_eq!(installs["installs"], json!([]), "{installs}");

        // The dependency, then the app.
        let (status, body) = host
            .post(
                &format!("/api/installs/{ledger}/activate"),
                &admin,
                Body::Json(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, body) = activate(full.clone(), admin.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let install = &body;
        assert_eq!(install["status"], "active");
        assert_eq!(install["version"], "1.0.0");
        assert_eq!(install["upgrade_policy"], "auto");
        assert_eq!(install["settings"]["region"], "eu");
        assert_eq!(
            install["settings"]["limit"], 10,
            "the default fills an omitted setting"
        );
        assert_eq!(
            install["settings"]["sender"], "billing@shop.example",
            "auto_default from the mail integration"
        );
        assert!(
            install["settings"]["owner"].as_str().unwrap().len() == 36,
            "auto_default: the activating user's id: {install}"
        );
        assert!(
            install["settings"].get("api_key").is_none(),
            "secret settings are never answered"
        );
        assert_eq!(install["secret_settings"], json!(["api_key"]));
        assert_eq!(install["rag_bindings"]["policies"], "handbook");
        assert!(!body.to_string().contains("sk-123"));
        // The list, a page at a time: two installs, one per page, by app.
        let (status, first) = host.get("/api/installs?limit=1", &user).await;
        assert_eq!(status, StatusCode::OK, "{first}");
        assert_eq!(first["installs"].as_array().unwrap().len(), 1, "{first}");
        let cursor = first["next_cursor"].as_str().unwrap().to_owned();
        let (status, second) = host
            .get(&format!("/api/installs?limit=1&cursor={cursor}"), &user)
            .await;
        assert_eq!(status, StatusCode::OK, "{second}");
        assert_eq!(second["installs"].as_array().unwrap().len(), 1, "{second}");
        assert!(second["next_cursor"].is_null(), "{second}");
        let mut apps = vec![
            first["installs"][0]["app"].as_str().unwrap(),
            second["installs"][0]["app"].as_str().unwrap(),
        ];
        assert!(apps[0] < apps[1], "by app: {apps:?}");
        apps.sort_unstable();
        let mut expected = vec![desk.as_str(), ledger.as_str()];
        expected.sort_unstable();
        assert_eq!(apps, expected);
        assert!(second["installs"][0]["secret_settings"].is_array());
        let (_, whole) = host.get("/api/installs", &user).await;
        assert_eq!(whole["installs"].as_array().unwrap().len(), 2, "{whole}");
        assert!(whole["next_cursor"].is_null(), "{whole}");
        for (query, param) in [
            ("limit=0", "limit"),
            ("limit=201", "limit"),
            ("limit=ten", "limit"),
            ("cursor=bm9wZQ", "cursor"),
        ] {
            let (status, body) = host.get(&format!("/api/installs?{query}"), &user).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
            assert_eq!(body["error"]["param"], param, "{query}: {body}");
        }
        let grant = store
            .grant(&TenantKey::new(&acme.org_id, tenant), &desk, &ledger)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (grant.allowed_agents.as_slice(), grant.is_active()),
            (["__route__".to_owned()].as_slice(), true)
        );

        // Re-activation: omitted values are kept (the secret too), the tenant's own values win.
        let (status, body) = activate(
            json!({"settings": {"owner": "someone-else", "limit": 42}}),
            admin.clone(),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["settings"]["owner"], "someone-else");
        assert_eq!(body["settings"]["limit"], 42);
        assert_eq!(body["settings"]["region"], "eu");
        assert_eq!(
            body["granted_scopes"],
            json!(["invoices.read", "mail.send"])
        );
        assert_eq!(body["secret_settings"], json!(["api_key"]));
        let grant = store
            .grant(&TenantKey::new(&acme.org_id, tenant), &desk, &ledger)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            grant.allowed_agents,
            ["__route__"],
            "merged, not duplicated"
        );

        // Listing and reading, for the tenant's users; deactivation for its admins.
        let (_, installs) = host.get("/api/installs", &user).await;
        assert_eq!(installs["installs"].as_array().unwrap().len(), 2);
        let (status, _) = host
            .post(
                &format!("/api/installs/{desk}/deactivate"),
                &user,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host
            .post(
                &format!("/api/installs/{desk}/deactivate"),
                &admin,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["status"], "inactive");
        let (status, _) = host
            .post(
                &format!("/api/installs/{desk}/deactivate"),
                &admin,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (_, catalogue) = host.get("/api/apps", &user).await;
        let entry = catalogue["apps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["slug"] == desk.as_str())
            .unwrap()
            .clone();
        assert_eq!(entry["installed"], "inactive");

        // Another tenant of the organization, and another organization, see none of it.
        let other_tenant = host.tenant_token(&acme.secret, "depot", "admin").await;
        let umbrella = store.create_key(&unique("umbrella"), "ops").await.unwrap();
        let other_org = host.tenant_token(&umbrella.secret, tenant, "admin").await;
        for token in [&other_tenant, &other_org] {
            let (_, installs) = host.get("/api/installs", token).await;
            assert_eq!(installs["installs"], json!([]), "{installs}");
            let (status, _) = host.get(&format!("/api/installs/{desk}"), token).await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (status, _) = host
                .post(
                    &format!("/api/installs/{desk}/deactivate"),
                    token,
                    Body::None,
                )
                .await;
            assert_eq!(status, StatusCode::NOT_FOUND);
            let (_, integrations) = host.get("/api/integrations", token).await;
            assert_eq!(integrations["integrations"], json!([]), "{integrations}");
        }
        // Organization keys and developer tokens are not tenant principals.
        for token in [acme.secret.as_str(), dev.as_str()] {
            let (status, body) = host.get("/api/installs", token).await;
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        }
        let (status, body) = host
            .post(
                &format!("/api/installs/{}/activate", slug("nothing")),
                &admin,
                Body::Json(json!({})),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        let (status, body) = host
            .post(
                &format!("/api/installs/{desk}/activate"),
                &admin,
                Body::Json(json!({"upgrade_policy": "sometimes"})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["param"], "upgrade_policy");
        host.stop().await;
        drop(dir);
    }
}

//! Upgrades over HTTP: auto-upgrading installs follow promotions unless new scopes need
//! consent, the tenant consents with an upgrade, and the developer forces installs, granting
//! new scopes without consent only on their dev tenant.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, code, manifest, slug};
use crate::{stores, unique};

async fn publish(host: &Host, dev: &str, app: &str, version: &str, scopes: &str) {
    let text = manifest(app, version, &format!("required_scopes: [{scopes}]\n"));
    let (status, body) = host
        .register(app, dev, &[("manifest", None, text.as_bytes())])
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = host
        .post(
            &format!("/api/dev/apps/{app}/versions/{version}/promote"),
            dev,
            Body::None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

async fn install(host: &Host, app: &str, token: &str) -> Value {
    let (status, body) = host.get(&format!("/api/installs/{app}"), token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

#[tokio::test]
async fn installs_upgrade_by_policy_consent_or_force() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let (_, dev) = host
            .sign_up_in("ada", true, Some((&acme.org_id, "devbox")))
            .await;
        let (_, other_dev) = host.sign_up("bob", true).await;
        let app = slug("notes");
        publish(&host, &dev, &app, "1.0.0", "tasks.read").await;

        // Another organization has a tenant of the same id: naming `manual` of acme must not
        // reach it.
        let globex = store.create_key(&unique("globex"), "ops").await.unwrap();
        let mut tokens = Vec::new();
        for (org, tenant, policy) in [
            (&acme, "auto", "auto"),
            (&acme, "manual", "manual"),
            (&acme, "devbox", "manual"),
            (&globex, "manual", "manual"),
        ] {
            let (_, created) = host
                .post(
                    &format!("/api/tenants/{tenant}/tokens"),
                    &org.secret,
                    Body::Json(json!({"role": "admin"})),
                )
                .await;
            let token = created["token"].as_str().unwrap().to_owned();
            let (status, body) = host
                .post(
                    &format!("/api/installs/{app}/activate"),
                    &token,
                    Body::Json(json!({"granted_scopes": ["tasks.read"], "upgrade_policy": policy})),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
            tokens.push(token);
        }
        let (auto, manual, devbox, globex_manual) =
            (&tokens[0], &tokens[1], &tokens[2], &tokens[3]);
        let acme_org = acme.org_id.as_str();

        // Same scopes: the auto install follows, the manual one stays.
        publish(&host, &dev, &app, "1.1.0", "tasks.read").await;
        assert_eq!(install(&host, &app, auto).await["version"], "1.1.0");
        assert_eq!(install(&host, &app, manual).await["version"], "1.0.0");

        // A new scope: the auto install waits for consent.
        publish(&host, &dev, &app, "2.0.0", "tasks.read, tasks.write").await;
        let waiting = install(&host, &app, auto).await;
        assert_eq!(waiting["version"], "1.1.0", "{waiting}");
        assert_eq!(waiting["pending_version"], "2.0.0", "{waiting}");
        let path = format!("/api/installs/{app}/upgrade");
        let (status, body) = host.post(&path, auto, Body::Json(json!({}))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "scopes_not_granted");
        let (status, body) = host
            .post(
                &path,
                auto,
                Body::Json(json!({"granted_scopes": ["tasks.read", "tasks.write"]})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["version"], "2.0.0");
        assert!(body["pending_version"].is_null(), "{body}");

        // The developer forces the rest: without consent a new scope waits, except on the
        // developer's own dev tenant with force_grant_new_scopes.
        let force = format!("/api/dev/apps/{app}/upgrade");
        let (status, _) = host.post(&force, &other_dev, Body::Json(json!({}))).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, body) = host
            .post(
                &force,
                &dev,
                Body::Json(json!({"organization": acme_org, "tenant": "manual", "force_grant_new_scopes": true})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "not a dev tenant: {body}");
        let (status, body) = host
            .post(&force, &dev, Body::Json(json!({"target_version": "2.0.0"})))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let outcomes = body["installs"].as_array().unwrap();
        let of = |tenant: &str| {
            outcomes
                .iter()
                .find(|o| o["tenant"] == tenant && o["organization"] == acme_org)
                .unwrap()
                .clone()
        };
        assert_eq!(of("auto")["outcome"], "current");
        assert_eq!(of("manual")["outcome"], "pending_consent");
        assert_eq!(of("manual")["new_scopes"], json!(["tasks.write"]));
        assert_eq!(of("devbox")["outcome"], "pending_consent");
        let (status, body) = host
            .post(
                &force,
                &dev,
                Body::Json(json!({"organization": acme_org, "tenant": "devbox", "force_grant_new_scopes": true})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["installs"][0]["outcome"], "upgraded", "{body}");
        let forced = install(&host, &app, devbox).await;
        assert_eq!(forced["version"], "2.0.0");
        assert_eq!(
            forced["granted_scopes"],
            json!(["tasks.read", "tasks.write"])
        );
        assert_eq!(install(&host, &app, manual).await["version"], "1.0.0");
        // A version that adds no scope to what the install granted: it moves.
        let (status, body) = host
            .post(
                &force,
                &dev,
                Body::Json(json!({"target_version": "1.1.0", "tenant": "manual"})),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "a tenant id alone is ambiguous: {body}"
        );
        assert_eq!(body["error"]["param"], "organization", "{body}");
        let globex_before = install(&host, &app, globex_manual).await["version"].clone();
        let (status, body) = host
            .post(
                &force,
                &dev,
                Body::Json(json!({"target_version": "1.1.0", "organization": acme_org, "tenant": "manual"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["installs"].as_array().unwrap().len(), 1, "{body}");
        assert_eq!(body["installs"][0]["organization"], acme_org, "{body}");
        assert_eq!(install(&host, &app, manual).await["version"], "1.1.0");
        assert_eq!(
            install(&host, &app, globex_manual).await["version"],
            globex_before,
            "the other organization's tenant of the same id stays"
        );
        let (status, _) = host
            .post(&force, &dev, Body::Json(json!({"target_version": "9.9.9"})))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        host.stop().await;
        drop(dir);
    }
}

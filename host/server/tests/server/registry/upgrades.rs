//! Upgrades over HTTP: auto-upgrading installs follow promotions unless new scopes need
//! consent, the tenant consents with an upgrade, and the developer forces installs, granting
//! new scopes without consent only on their dev tenant.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Body, Host, code, manifest, slug};
use crate::{stores, unique};

async fn publish(host: &Host, dev: &str, app: &str, version: &str, scopes: &str) -> Value {
    publish_with(
        host,
        dev,
        app,
        version,
        &format!("required_scopes: [{scopes}]\n"),
    )
    .await
}

/// Registers and promotes `version` of `app` with `extra` manifest lines: the promotion's
/// answer.
async fn publish_with(host: &Host, dev: &str, app: &str, version: &str, extra: &str) -> Value {
    let text = manifest(app, version, extra);
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
    body
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
        let promoted = publish(&host, &dev, &app, "1.0.0", "tasks.read").await;
        // The promotion put the version in the developer's dev tenant, scopes granted.
        assert_eq!(
            (
                promoted["dev_install"]["tenant"].as_str(),
                promoted["dev_install"]["outcome"].as_str(),
                promoted["dev_install"]["version"].as_str()
            ),
            (Some("devbox"), Some("installed"), Some("1.0.0")),
            "{promoted}"
        );

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
            // The developer's dev tenant has it from the promotion already.
            let expected = if tenant == "devbox" && org.org_id == acme.org_id {
                StatusCode::OK
            } else {
                StatusCode::CREATED
            };
            assert_eq!(status, expected, "{tenant}: {body}");
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
        // The dev tenant followed each promotion, consenting for itself.
        assert_eq!(of("devbox")["outcome"], "current");
        // Moved back to 1.0.0, it needs consent to go forward again, which the developer may
        // give for their dev tenant only.
        for (target, outcome) in [("1.0.0", "upgraded"), ("2.0.0", "pending_consent")] {
            let (status, body) = host
                .post(
                    &force,
                    &dev,
                    Body::Json(json!({"target_version": target, "organization": acme_org, "tenant": "devbox"})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["installs"][0]["outcome"], outcome, "{target}: {body}");
        }
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

/// The `install_settings` of a manifest: (id, `required`, default).
fn settings_yaml(settings: &[(&str, bool, Option<&str>)]) -> String {
    let mut yaml = String::from("install_settings:\n");
    for (id, required, default) in settings {
        yaml.push_str(&format!(
            "  - id: {id}\n    type: string\n    label: {id}\n    required: {required}\n"
        ));
        if let Some(default) = default {
            yaml.push_str(&format!("    default: {default}\n"));
        }
    }
    yaml
}

async fn publish_settings(
    host: &Host,
    dev: &str,
    app: &str,
    version: &str,
    settings: &[(&str, bool, Option<&str>)],
) -> Value {
    publish_with(host, dev, app, version, &settings_yaml(settings)).await
}

/// A version with a new required setting the install has no value for does not move it: it
/// waits, naming the setting, until the tenant's upgrade gives the value; a new setting with a
/// default moves it with the default stored. An activation needs no body.
#[tokio::test]
async fn a_new_required_setting_holds_an_upgrade_until_the_tenant_gives_it() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let (_, dev) = host.sign_up("ada", true).await;
        let app = slug("letters");
        publish_settings(
            &host,
            &dev,
            &app,
            "1.0.0",
            &[("greeting", false, Some("Hello"))],
        )
        .await;
        let mut tokens = Vec::new();
        for tenant in ["auto", "bare"] {
            let (_, created) = host
                .post(
                    &format!("/api/tenants/{tenant}/tokens"),
                    &acme.secret,
                    Body::Json(json!({"role": "admin"})),
                )
                .await;
            tokens.push(created["token"].as_str().unwrap().to_owned());
        }
        let (auto, bare) = (&tokens[0], &tokens[1]);
        let activate = format!("/api/installs/{app}/activate");
        let (status, body) = host
            .post(
                &activate,
                auto,
                Body::Json(json!({"upgrade_policy": "auto"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        // No body at all: every field of an activation is optional.
        let (status, body) = host.post(&activate, bare, Body::None).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["settings"], json!({"greeting": "Hello"}), "{body}");
        assert_eq!(body["upgrade_policy"], "manual", "{body}");

        // 1.1.0 needs a signature: the auto install waits and says for what, in the
        // promotion's answer too (this developer has no dev tenant).
        let promoted = publish_settings(
            &host,
            &dev,
            &app,
            "1.1.0",
            &[
                ("greeting", false, Some("Hello")),
                ("signature", true, None),
            ],
        )
        .await;
        assert!(promoted["dev_install"].is_null(), "{promoted}");
        assert_eq!(
            (
                promoted["installs"][0]["tenant"].as_str(),
                promoted["installs"][0]["outcome"].as_str(),
                promoted["installs"][0]["missing_settings"].clone()
            ),
            (Some("auto"), Some("pending_settings"), json!(["signature"])),
            "{promoted}"
        );
        let waiting = install(&host, &app, auto).await;
        assert_eq!(waiting["version"], "1.0.0", "{waiting}");
        assert_eq!(waiting["pending_version"], "1.1.0", "{waiting}");
        assert_eq!(
            waiting["pending"],
            json!({"version": "1.1.0", "new_scopes": [], "missing_settings": ["signature"]}),
            "{waiting}"
        );
        let (status, listed) = host.get("/api/installs", auto).await;
        assert_eq!(status, StatusCode::OK, "{listed}");
        assert_eq!(
            listed["installs"][0]["pending"]["missing_settings"],
            json!(["signature"]),
            "{listed}"
        );
        // Forced by the developer, it waits all the same: only the tenant can give the value.
        let (status, body) = host
            .post(
                &format!("/api/dev/apps/{app}/upgrade"),
                &dev,
                Body::Json(json!({"organization": acme.org_id, "tenant": "bare"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["installs"][0]["outcome"], "pending_settings", "{body}");
        assert_eq!(
            body["installs"][0]["missing_settings"],
            json!(["signature"]),
            "{body}"
        );
        assert_eq!(install(&host, &app, bare).await["version"], "1.0.0");

        // The tenant's upgrade: refused without the value, naming it; done with it.
        let upgrade = format!("/api/installs/{app}/upgrade");
        let (status, body) = host.post(&upgrade, auto, Body::None).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(code(&body), "missing_settings", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("signature"),
            "{body}"
        );
        let (status, body) = host
            .post(
                &upgrade,
                auto,
                Body::Json(json!({"settings": {"signature": "Ada"}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["version"], "1.1.0", "{body}");
        assert_eq!(
            body["settings"],
            json!({"greeting": "Hello", "signature": "Ada"}),
            "{body}"
        );
        assert!(
            body["pending_version"].is_null() && body.get("pending").is_none(),
            "{body}"
        );

        // 1.2.0 adds a setting with a default: the auto install moves, the default stored.
        publish_settings(
            &host,
            &dev,
            &app,
            "1.2.0",
            &[
                ("greeting", false, Some("Hello")),
                ("signature", true, None),
                ("footer", true, Some("Regards")),
            ],
        )
        .await;
        let moved = install(&host, &app, auto).await;
        assert_eq!(moved["version"], "1.2.0", "{moved}");
        assert_eq!(moved["settings"]["footer"], "Regards", "{moved}");
        assert_eq!(moved["settings"]["signature"], "Ada", "{moved}");

        // Another organization's tenant of the same id has no install to upgrade.
        let globex = store.create_key(&unique("globex"), "ops").await.unwrap();
        let (_, created) = host
            .post(
                "/api/tenants/auto/tokens",
                &globex.secret,
                Body::Json(json!({"role": "admin"})),
            )
            .await;
        let stranger = created["token"].as_str().unwrap();
        let (status, body) = host
            .post(
                &upgrade,
                stranger,
                Body::Json(json!({"settings": {"signature": "Eve"}})),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(
            install(&host, &app, auto).await["settings"]["signature"],
            "Ada"
        );
        host.stop().await;
        drop(dir);
    }
}

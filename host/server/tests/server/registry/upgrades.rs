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
        let acme_name = unique("acme");
        let acme = store.create_key(&acme_name, "ops").await.unwrap();
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
        // The organization by its name, as the administration commands take it; a name no
        // organization has matches no install (and tells nothing of which exist).
        let (status, body) = host
            .post(
                &force,
                &dev,
                Body::Json(json!({"target_version": "1.1.0", "organization": acme_name, "tenant": "manual"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["installs"].as_array().unwrap().len(), 1, "{body}");
        assert_eq!(body["installs"][0]["organization"], acme_org, "{body}");
        assert_eq!(body["installs"][0]["outcome"], "current", "{body}");
        let (status, body) = host
            .post(
                &force,
                &dev,
                Body::Json(json!({"target_version": "1.1.0", "organization": unique("nobody"), "tenant": "manual"})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["installs"], json!([]), "{body}");
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

/// `PATCH /api/dev/apps/{app}/settings` with `settings`, as the developer of `token`.
async fn set_dev_settings(
    host: &Host,
    app: &str,
    token: &str,
    settings: Value,
) -> (StatusCode, Value) {
    host.send(
        "PATCH",
        &format!("/api/dev/apps/{app}/settings"),
        Some(token),
        Body::Json(json!({ "settings": settings })),
    )
    .await
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

        // The developer's own dev tenant: a version with a required setting and no default is
        // not put there by its promotion; the developer gives the value, checked by the same
        // code as a tenant admin's change, and only in their own dev tenant.
        let (_, carol) = host
            .sign_up_in("carol", true, Some((&acme.org_id, "carolbox")))
            .await;
        let drafts = slug("drafts");
        let promoted = publish_settings(
            &host,
            &carol,
            &drafts,
            "1.0.0",
            &[
                ("greeting", false, Some("Hello")),
                ("signature", true, None),
            ],
        )
        .await;
        assert_eq!(
            (
                promoted["dev_install"]["outcome"].as_str(),
                promoted["dev_install"]["missing"].clone()
            ),
            (Some("missing_settings"), json!(["signature"])),
            "{promoted}"
        );
        let settings = format!("/api/dev/apps/{drafts}/settings");
        let (status, body) = host.get(&settings, &carol).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            (
                body["organization"].as_str(),
                body["tenant"].as_str(),
                body["current_version"].as_str(),
                body["missing_settings"].clone()
            ),
            (
                Some(acme.org_id.as_str()),
                Some("carolbox"),
                Some("1.0.0"),
                json!(["signature"])
            ),
            "{body}"
        );
        assert!(
            body["version"].is_null() && body["status"].is_null(),
            "no install yet: {body}"
        );
        assert_eq!(body["install_settings"][1]["id"], "signature", "{body}");
        // Refused values store nothing.
        for (bad, expected) in [
            (json!({"signature": 5}), "invalid_settings"),
            (json!({"colour": "red"}), "invalid_settings"),
            (json!({}), "missing_settings"),
        ] {
            let (status, body) = set_dev_settings(&host, &drafts, &carol, bad).await;
            assert_eq!(
                (status, code(&body)),
                (StatusCode::UNPROCESSABLE_ENTITY, expected),
                "{body}"
            );
        }
        assert!(host.get(&settings, &carol).await.1["version"].is_null());
        let (status, body) =
            set_dev_settings(&host, &drafts, &carol, json!({"signature": "Carol"})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            (
                body["outcome"].as_str(),
                body["version"].as_str(),
                body["settings"].clone(),
                body["missing_settings"].clone()
            ),
            (
                Some("installed"),
                Some("1.0.0"),
                json!({"greeting": "Hello", "signature": "Carol"}),
                json!([])
            ),
            "{body}"
        );
        let carolbox = host.tenant_token(&acme.secret, "carolbox", "admin").await;
        assert_eq!(
            install(&host, &drafts, &carolbox).await["settings"]["signature"],
            "Carol"
        );
        // The checks are the tenant admin's, to the word.
        for bad in [json!({"signature": 5}), json!({"colour": "red"})] {
            let (status, dev_body) = set_dev_settings(&host, &drafts, &carol, bad.clone()).await;
            let (tenant_status, tenant_body) = host
                .send(
                    "PATCH",
                    &format!("/api/installs/{drafts}"),
                    Some(&carolbox),
                    Body::Json(json!({ "settings": bad })),
                )
                .await;
            assert_eq!(
                (status, &dev_body["error"]),
                (tenant_status, &tenant_body["error"]),
                "{dev_body} {tenant_body}"
            );
        }
        // 1.1.0 needs a footer: the dev tenant stays on 1.0.0 until the developer gives it.
        let promoted = publish_settings(
            &host,
            &carol,
            &drafts,
            "1.1.0",
            &[
                ("greeting", false, Some("Hello")),
                ("signature", true, None),
                ("footer", true, None),
            ],
        )
        .await;
        assert_eq!(
            promoted["dev_install"]["outcome"], "missing_settings",
            "{promoted}"
        );
        let (_, body) = host.get(&settings, &carol).await;
        assert_eq!(
            (
                body["version"].as_str(),
                body["current_version"].as_str(),
                body["missing_settings"].clone()
            ),
            (Some("1.0.0"), Some("1.1.0"), json!(["footer"])),
            "{body}"
        );
        let (status, body) =
            set_dev_settings(&host, &drafts, &carol, json!({"footer": "Regards"})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            (
                body["outcome"].as_str(),
                body["version"].as_str(),
                body["settings"]["signature"].as_str()
            ),
            (Some("upgraded"), Some("1.1.0"), Some("Carol")),
            "{body}"
        );
        let (status, body) =
            set_dev_settings(&host, &drafts, &carol, json!({"greeting": "Hi"})).await;
        assert_eq!(
            (
                status,
                body["outcome"].as_str(),
                body["settings"]["footer"].as_str()
            ),
            (StatusCode::OK, Some("updated"), Some("Regards")),
            "{body}"
        );
        // Only the developer's own app, in their own dev tenant: Ada (no dev tenant) is
        // refused on hers (409) and on Carol's (403); a tenant's token is no developer's.
        let (status, body) = host
            .get(&format!("/api/dev/apps/{app}/settings"), &dev)
            .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::CONFLICT, "no_dev_tenant"),
            "{body}"
        );
        let (status, _) = set_dev_settings(&host, &drafts, &dev, json!({"greeting": "Eve"})).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) = host.get(&settings, &carolbox).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        // Another organization's tenant of the same id has no install of it.
        let stranger_box = host.tenant_token(&globex.secret, "carolbox", "admin").await;
        let (status, _) = host
            .get(&format!("/api/installs/{drafts}"), &stranger_box)
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(
            install(&host, &drafts, &carolbox).await["settings"]["greeting"],
            "Hi"
        );
        host.stop().await;
        drop(dir);
    }
}

/// The subscriber's manifest lines: agent `lead` and a project setting, and, when `declares`,
/// `lead`'s vision and a subscription of `lead` to `emitter`'s `tick`.
fn declaring(emitter: &str, declares: bool) -> String {
    let mut yaml = String::from(
        "agents:\n  - id: lead\n    name: Lead\n    system_prompt: Leads.\n    is_default: true\n",
    );
    if declares {
        yaml.push_str("    vision:\n      text: Ship the product.\n");
    }
    yaml.push_str("install_settings:\n  - {id: project, type: project_picker, label: Project}\n");
    if declares {
        yaml.push_str(&format!(
            "subscribes_to:\n  - {{emitter_app: {emitter}, event_name: tick, target_agent: lead}}\n"
        ));
    }
    yaml
}

/// The tenant's wires to `app`.
async fn wires_to(host: &Host, admin: &str, app: &str) -> Vec<Value> {
    let (status, body) = host
        .get(&format!("/api/wires?subscriber_app={app}"), admin)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["wires"].as_array().unwrap().clone()
}

/// The tenant's visions of `app`.
async fn visions_of(host: &Host, token: &str, app: &str) -> Vec<Value> {
    let (status, body) = host.get("/api/visions", token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["visions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["app"] == app)
        .cloned()
        .collect()
}

/// An upgrade carries what activation does, whichever way it comes (the tenant's, the
/// developer's forced one, the automatic one of a promotion): a version that declares a
/// subscription and a vision proposes the wire and creates the vision; one that drops them
/// revokes the wire and stops the vision; one that declares the vision again starts it over
/// (the revoked wire stays revoked until the subscriber side proposes it again). An emitter's
/// version that no longer emits the event revokes its wires too.
#[tokio::test]
async fn upgrades_propose_and_retire_what_their_version_declares() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let (_, dev) = host.sign_up("ada", true).await;
        let (emitter, app) = (slug("ticker"), slug("planner"));
        publish_with(&host, &dev, &emitter, "1.0.0", "emits: [tick]\n").await;
        publish_with(&host, &dev, &app, "1.0.0", &declaring(&emitter, false)).await;
        let kinds = ["tenant", "forced", "auto"];
        let mut tokens = Vec::new();
        for kind in kinds {
            let admin = host.tenant_token(&acme.secret, kind, "admin").await;
            let (status, body) = host
                .post(
                    &format!("/api/installs/{emitter}/activate"),
                    &admin,
                    Body::None,
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{kind}: {body}");
            let policy = if kind == "auto" { "auto" } else { "manual" };
            let (status, body) = host
                .post(
                    &format!("/api/installs/{app}/activate"),
                    &admin,
                    Body::Json(
                        json!({"settings": {"project": "Apollo"}, "upgrade_policy": policy}),
                    ),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{kind}: {body}");
            // 1.0.0 declares neither.
            assert_eq!(wires_to(&host, &admin, &app).await, Vec::<Value>::new());
            assert_eq!(visions_of(&host, &admin, &app).await, Vec::<Value>::new());
            tokens.push(admin);
        }
        let org = acme.org_id.clone();
        // Moves every tenant's install to `version`, each its own way; the promotion moves
        // the auto one.
        let move_all = |version: &'static str, declares: bool| {
            let (host, dev, app, emitter, tokens, org) =
                (&host, &dev, &app, &emitter, &tokens, &org);
            async move {
                let promoted =
                    publish_with(host, dev, app, version, &declaring(emitter, declares)).await;
                assert_eq!(
                    (
                        promoted["installs"][0]["tenant"].as_str(),
                        promoted["installs"][0]["outcome"].as_str()
                    ),
                    (Some("auto"), Some("upgraded")),
                    "{promoted}"
                );
                let (status, body) = host
                    .post(
                        &format!("/api/installs/{app}/upgrade"),
                        &tokens[0],
                        Body::Json(json!({"version": version})),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{body}");
                assert_eq!(body["version"], version, "{body}");
                let (status, body) = host
                    .post(
                        &format!("/api/dev/apps/{app}/upgrade"),
                        dev,
                        Body::Json(json!({"target_version": version, "organization": org, "tenant": "forced"})),
                    )
                    .await;
                assert_eq!(status, StatusCode::OK, "{body}");
                assert_eq!(body["installs"][0]["outcome"], "upgraded", "{body}");
                for (kind, token) in kinds.iter().zip(tokens.iter()) {
                    assert_eq!(
                        install(host, app, token).await["version"],
                        version,
                        "{kind}"
                    );
                }
            }
        };

        // 1.1.0 declares the subscription and the vision: each upgrade proposes the wire
        // (approved on the subscriber's side) and creates the vision, due at once.
        move_all("1.1.0", true).await;
        let mut visions = Vec::new();
        for (kind, token) in kinds.iter().zip(&tokens) {
            let wires = wires_to(&host, token, &app).await;
            assert_eq!(wires.len(), 1, "{kind}: {wires:?}");
            assert_eq!(
                (
                    wires[0]["emitter_app"].as_str(),
                    wires[0]["event_name"].as_str(),
                    wires[0]["target_agent"].as_str(),
                    wires[0]["state"].as_str()
                ),
                (
                    Some(emitter.as_str()),
                    Some("tick"),
                    Some("lead"),
                    Some("pending_emitter_approval")
                ),
                "{kind}: {wires:?}"
            );
            // The emitter's side approves: an active wire is retired all the same later.
            let (status, body) = host
                .post(
                    &format!("/api/wires/{}/approve", wires[0]["id"].as_str().unwrap()),
                    token,
                    Body::None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{kind}: {body}");
            let found = visions_of(&host, token, &app).await;
            assert_eq!(found.len(), 1, "{kind}: {found:?}");
            assert_eq!(
                (
                    found[0]["agent"].as_str(),
                    found[0]["project"].as_str(),
                    found[0]["state"].as_str(),
                    found[0]["phase"].as_str()
                ),
                (
                    Some("lead"),
                    Some("Apollo"),
                    Some("running"),
                    Some("assess")
                ),
                "{kind}: {found:?}"
            );
            visions.push(found[0]["id"].as_str().unwrap().to_owned());
        }

        // 1.2.0 drops both: each upgrade revokes the wire and stops the vision, its record
        // kept with the stop.
        move_all("1.2.0", false).await;
        for ((kind, token), id) in kinds.iter().zip(&tokens).zip(&visions) {
            let wires = wires_to(&host, token, &app).await;
            assert_eq!(wires.len(), 1, "{kind}: {wires:?}");
            assert_eq!(wires[0]["state"], "revoked", "{kind}: {wires:?}");
            let (status, vision) = host.get(&format!("/api/visions/{id}"), token).await;
            assert_eq!(status, StatusCode::OK, "{kind}: {vision}");
            assert_eq!(
                (vision["state"].as_str(), vision["stop_reason"].as_str()),
                (
                    Some("stopped"),
                    Some("the installed version no longer declares this vision")
                ),
                "{kind}: {vision}"
            );
            let phases = vision["phases"].as_array().unwrap();
            assert_eq!(
                (
                    phases.last().unwrap()["phase"].as_str(),
                    phases.last().unwrap()["outcome"].as_str()
                ),
                (Some("stop"), Some("stopped")),
                "{kind}: {vision}"
            );
        }

        // 1.3.0 declares them again: the vision starts over at its next cycle; the revoked
        // wire stays revoked (what an upgrade proposes never undoes a revoke).
        move_all("1.3.0", true).await;
        for ((kind, token), id) in kinds.iter().zip(&tokens).zip(&visions) {
            let found = visions_of(&host, token, &app).await;
            assert_eq!(found.len(), 1, "{kind}: {found:?}");
            assert_eq!(found[0]["id"].as_str(), Some(id.as_str()), "{kind}");
            assert_eq!(
                (
                    found[0]["state"].as_str(),
                    found[0]["phase"].as_str(),
                    found[0]["cycle"].as_i64()
                ),
                (Some("running"), Some("assess"), Some(2)),
                "{kind}: {found:?}"
            );
            assert!(found[0]["stop_reason"].is_null(), "{kind}: {found:?}");
            let wires = wires_to(&host, token, &app).await;
            assert_eq!(wires[0]["state"], "revoked", "{kind}: {wires:?}");
        }

        // The subscriber side proposes the wire again; the emitter's next version no longer
        // emits the event, and the tenant's upgrade of the emitter revokes it.
        let tenant = &tokens[0];
        let (status, body) = host
            .post(
                "/api/wires",
                tenant,
                Body::Json(
                    json!({"emitter_app": emitter, "event_name": "tick", "subscriber_app": app}),
                ),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["state"], "pending_emitter_approval", "{body}");
        publish_with(&host, &dev, &emitter, "1.1.0", "emits: [tock]\n").await;
        let (status, body) = host
            .post(
                &format!("/api/installs/{emitter}/upgrade"),
                tenant,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["version"], "1.1.0", "{body}");
        assert_eq!(wires_to(&host, tenant, &app).await[0]["state"], "revoked");
        // The other tenants' wires are theirs: revoked before, untouched now.
        for token in &tokens[1..] {
            assert_eq!(wires_to(&host, token, &app).await.len(), 1);
        }
        host.stop().await;
        drop(dir);
    }
}

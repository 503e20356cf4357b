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
        .replace("probe.read", "tasks.read")
        .replace("probe.write", "tasks.write")
        + "install_settings:\n  - {id: greeting, type: string, label: Greeting, default: hi}\n  - {id: token, type: secret, label: Token}\n"
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
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/activate"),
                &admin,
                Body::Json(json!({"granted_scopes": ["tasks.read", "tasks.write"], "settings": {"token": "s3cret"}})),
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
        // Not yet on this host: a typed refusal, not a failure of the call.
        let (status, body) = call(
            "platform",
            json!({"op": "emit", "name": "probe_event"}),
            &user,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body["result"]["err"].is_object(), "{body}");

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
        for who in [&depot, &stranger] {
            let (status, body) = call("echo", json!({}), who).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        }
        let (status, _) = call("echo", json!({}), &acme.secret).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        // The other organization's tenant `shop` installs the same app: its own records.
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/activate"),
                &stranger,
                Body::Json(json!({"granted_scopes": ["tasks.read", "tasks.write"]})),
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

        // Deactivated: no more calls.
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

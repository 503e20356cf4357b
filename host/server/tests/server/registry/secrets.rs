//! App secrets: sealed at rest, written and deleted by the app's owner, never shown again.

use std::path::PathBuf;

use atrium_platform::sealing::SecretsKey;
use reqwest::StatusCode;
use serde_json::json;

use super::{Body, Host, open_registry, slug};
use crate::{stores, unique};

#[tokio::test]
async fn secrets_are_sealed_and_never_shown_again() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, token) = host.sign_up("ada", true).await;
        let (_, bob_token) = host.sign_up("bob", true).await;
        let app = slug("vault");
        let (status, _) = host.register_image(&app, &token, "1.0.0").await;
        assert_eq!(status, StatusCode::CREATED);
        let secrets = format!("/api/dev/apps/{app}/secrets");
        let plaintext = format!("sk-live-{}", unique("plaintext"));

        let (status, body) = host
            .put(
                &format!("{secrets}/STRIPE_KEY"),
                &token,
                Body::Json(json!({"value": plaintext, "description": "Stripe, live"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["key"], "STRIPE_KEY");
        assert!(body.get("value").is_none(), "{body}");
        let (status, body) = host
            .put(
                &format!("{secrets}/STRIPE_KEY"),
                &token,
                Body::Json(json!({"value": format!("{plaintext}-2")})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["description"], "Stripe, live",
            "an omitted description is kept"
        );

        let (status, list) = host.get(&secrets, &token).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(list["secrets"].as_array().unwrap().len(), 1);
        assert!(!list.to_string().contains(&plaintext), "{list}");
        let (status, one) = host.get(&format!("{secrets}/STRIPE_KEY"), &token).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            one["created_at"].is_string()
                && one["updated_at"].is_string()
                && one.get("value").is_none(),
            "{one}"
        );

        for bad in [
            "stripe_key",
            "1KEY",
            "KEY-1",
            &format!("K{}", "A".repeat(64)),
        ] {
            let (status, body) = host
                .put(
                    &format!("{secrets}/{bad}"),
                    &token,
                    Body::Json(json!({"value": "v"})),
                )
                .await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
            assert_eq!(body["error"]["param"], "key");
        }
        let (status, body) = host
            .put(
                &format!("{secrets}/OTHER"),
                &token,
                Body::Json(json!({"vaule": "v"})),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
        let (status, _) = host
            .put(
                &format!("{secrets}/OTHER"),
                &bob_token,
                Body::Json(json!({"value": "v"})),
            )
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) = host
            .delete(&format!("{secrets}/STRIPE_KEY"), &bob_token)
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        let (status, _) = host
            .put(
                &format!("/api/dev/apps/{}/secrets/KEY", slug("none")),
                &token,
                Body::Json(json!({"value": "v"})),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND);

        // The value is sealed at rest: not in the database files, and the registry opens it.
        let files: Vec<PathBuf> = match &dir {
            Some(dir) => std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect(),
            None => Vec::new(),
        };
        for file in &files {
            let bytes = std::fs::read(file).unwrap();
            assert!(
                !bytes
                    .windows(plaintext.len())
                    .any(|w| w == plaintext.as_bytes()),
                "{} holds the plaintext",
                file.display()
            );
        }
        if dir.is_some() {
            assert!(
                files
                    .iter()
                    .any(|f| f.to_string_lossy().contains("atrium.db")),
                "{files:?}"
            );
        }
        let registry = open_registry(
            &store,
            host.data(),
            SecretsKey::load_or_create(host.data(), None).unwrap(),
        );
        assert_eq!(
            registry.open_secret(&app, "STRIPE_KEY").await.unwrap(),
            Some(format!("{plaintext}-2"))
        );
        let other_key = open_registry(&store, host.data(), SecretsKey::from_bytes([9; 32]));
        assert!(
            other_key.open_secret(&app, "STRIPE_KEY").await.is_err(),
            "another key does not open it"
        );

        let (status, _) = host.delete(&format!("{secrets}/STRIPE_KEY"), &token).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, _) = host.get(&format!("{secrets}/STRIPE_KEY"), &token).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = host.delete(&format!("{secrets}/STRIPE_KEY"), &token).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        host.stop().await;
    }
}

#[tokio::test]
async fn integration_configurations_from_before_sealing_are_sealed_in_place() {
    for (store, dir) in stores().await {
        let scratch = tempfile::tempdir().unwrap();
        let data = dir.as_ref().map_or(scratch.path(), |d| d.path());
        let registry = open_registry(&store, data, SecretsKey::from_bytes([7; 32]));
        let key = store.create_key(&unique("acme"), "ops").await.unwrap();
        let shop = atrium_store::TenantKey::new(&key.org_id, "shop");
        let plain = format!(
            r#"{{"primary_email": "{}@shop.example"}}"#,
            unique("billing")
        );
        // A row as a host before sealing wrote it: the JSON object itself.
        store.put_integration(&shop, "gmail", &plain).await.unwrap();
        assert!(store.integrations(&shop).await.unwrap()[0].is_plain());
        // It still reads while plain, and the sealing pass seals it once.
        let before = registry.integrations(&shop).await.unwrap();
        assert_eq!(
            before["gmail"]["primary_email"],
            serde_json::from_str::<serde_json::Value>(&plain).unwrap()["primary_email"]
        );
        assert!(registry.seal_plain_integrations().await.unwrap() >= 1);
        let stored = store.integrations(&shop).await.unwrap();
        assert!(!stored[0].is_plain(), "{stored:?}");
        assert!(!stored[0].config.contains("shop.example"), "{stored:?}");
        assert_eq!(registry.integrations(&shop).await.unwrap(), before);
        assert_eq!(registry.seal_plain_integrations().await.unwrap(), 0);
        // Sealed for this tenant and provider: copied under another, it does not open.
        let other = atrium_store::TenantKey::new(&key.org_id, "other-shop");
        store
            .put_integration(&other, "gmail", &stored[0].config)
            .await
            .unwrap();
        assert!(registry.integrations(&other).await.is_err());
    }
}

//! Developer tokens: what `/api/dev/me` accepts, and why it refuses the rest.

use std::time::Duration;

use atrium_platform::identity::TokenIssuer;
use reqwest::StatusCode;
use serde_json::json;

use super::{Body, Host, code, message};
use crate::{stores, unique};

#[tokio::test]
async fn developer_tokens_are_checked_and_say_why_they_are_refused() {
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (ada, token) = host.sign_up("ada", true).await;

        let (status, me) = host.get("/api/dev/me", &token).await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me["email"], ada.email);
        assert_eq!(me["login"], ada.login);
        assert_eq!(me["publish_allowed"], true);
        assert!(me["tenant"].is_null(), "{me}");

        let (status, body) = host.send("GET", "/api/dev/me", None, Body::None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "missing_token");

        let forged = TokenIssuer::from_secret(&[7u8; 32])
            .issue(&ada.id, &ada.email, Duration::from_secs(60))
            .unwrap();
        let (status, body) = host.get("/api/dev/me", &forged).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "invalid_token", "{body}");
        assert!(message(&body).contains("signature"), "{body}");

        // A token of this host that expired an hour ago (beyond the 30-second leeway).
        let secret = std::fs::read_to_string(host.data().join("jwt.key")).unwrap();
        let now = jsonwebtoken::get_current_timestamp();
        let expired = jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &json!({"iss": "atrium", "sub": ada.id, "email": ada.email, "iat": now - 7200, "exp": now - 3600, "jti": "x"}),
            &jsonwebtoken::EncodingKey::from_secret(secret.trim().as_bytes()),
        )
        .unwrap();
        let (status, body) = host.get("/api/dev/me", &expired).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "token_expired", "{body}");
        assert!(message(&body).contains("expired at"), "{body}");

        // An organization key or a tenant token is not a developer token, and a developer
        // token or a tenant token opens no /v1: each refusal says which credential it was
        // and where to get the right one.
        let key = store.create_key(&unique("acme"), "k").await.unwrap();
        let (status, body) = host.get("/api/dev/me", &key.secret).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "invalid_token", "{body}");
        assert!(
            message(&body).contains("organization key")
                && message(&body).contains("atrium developers token"),
            "{body}"
        );
        let tenant_token = host.tenant_token(&key.secret, "shop", "admin").await;
        let (status, body) = host.get("/api/dev/me", &tenant_token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "invalid_token", "{body}");
        assert!(message(&body).contains("tenant token"), "{body}");
        let (status, body) = host.get("/v1/usage", &token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(message(&body).contains("developer token"), "{body}");
        let (status, body) = host.get("/v1/usage", &tenant_token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "invalid_api_key", "{body}");
        assert!(
            message(&body).contains("tenant token")
                && message(&body).contains("atrium keys create"),
            "{body}"
        );

        // Suspension takes effect on the next request; reinstating restores access.
        store.set_developer_suspended(&ada.id, true).await.unwrap();
        let (status, body) = host.get("/api/dev/me", &token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(code(&body), "account_suspended", "{body}");
        store.set_developer_suspended(&ada.id, false).await.unwrap();
        assert_eq!(host.get("/api/dev/me", &token).await.0, StatusCode::OK);

        let (status, scopes) = host.send("GET", "/api/scopes", None, Body::None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            scopes["scopes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["name"] == "mail.send"),
            "{scopes}"
        );
        host.stop().await;
        drop(dir);
    }
}

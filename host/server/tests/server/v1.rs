//! Keys, tenants, usage and errors.

use atrium_store::UsageRecord;
use axum::http::StatusCode;
use serde_json::json;

use crate::{assert_error, call, stores, unique};

#[tokio::test]
async fn every_request_needs_a_live_key() {
    for (store, _dir) in stores().await {
        let (status, body) = call(&store, "GET", "/v1/usage", None, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_error(&body, "invalid_api_key");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("Authorization")
        );
        let (status, _) = call(&store, "GET", "/v1/usage", Some("atr_wrong"), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);

        let key = store.create_key(&unique("acme"), "k").await.unwrap();
        let (status, _) = call(&store, "GET", "/v1/usage", Some(&key.secret), None).await;
        assert_eq!(status, StatusCode::OK);
        store.revoke_key(&key.id).await.unwrap();
        let (status, body) = call(&store, "GET", "/v1/usage", Some(&key.secret), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("revoked")
        );
    }
}

#[tokio::test]
async fn tenants_register_update_and_show_in_usage() {
    for (store, _dir) in stores().await {
        let key = store.create_key(&unique("acme"), "k").await.unwrap();
        let (status, body) = call(
            &store,
            "POST",
            "/v1/tenants",
            Some(&key.secret),
            Some(r#"{"id":"t-1","name":"Beta","external_id":"crm-1"}"#),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            (
                body["id"].as_str(),
                body["name"].as_str(),
                body["external_id"].as_str()
            ),
            (Some("t-1"), Some("Beta"), Some("crm-1"))
        );
        let (_, body) = call(
            &store,
            "POST",
            "/v1/tenants",
            Some(&key.secret),
            Some(r#"{"id":"t-1","name":"Beta AG"}"#),
        )
        .await;
        assert_eq!(
            (body["name"].as_str(), body["external_id"].as_str()),
            (Some("Beta AG"), Some("crm-1"))
        );

        let record = |tenant: &str, cost| UsageRecord {
            org_id: key.org_id.clone(),
            tenant_id: tenant.into(),
            kind: "chat".into(),
            provider: "mistral".into(),
            model: "m".into(),
            prompt_tokens: 7,
            completion_tokens: 3,
            cost_micros: cost,
            batch: false,
            app_slug: None,
            agent: None,
        };
        store.record_usage(&record("t-1", 1_250)).await.unwrap();
        store.record_usage(&record("t-2", 500)).await.unwrap();
        let (status, usage) = call(&store, "GET", "/v1/usage", Some(&key.secret), None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            usage["totals"],
            json!({"tenants": 2, "calls": 2, "cost_usd": 0.00175})
        );
        assert_eq!(
            usage["per_tenant"][0],
            json!({"tenant_id": "t-1", "name": "Beta AG", "external_id": "crm-1", "calls": 1,
                   "prompt_tokens": 7, "completion_tokens": 3, "tokens": 10, "cost_usd": 0.00125})
        );
        let (_, one) = call(
            &store,
            "GET",
            "/v1/usage?tenant=t-2",
            Some(&key.secret),
            None,
        )
        .await;
        assert_eq!(one["tenant"]["cost_usd"], 0.0005);
        let (status, body) = call(
            &store,
            "GET",
            "/v1/usage?tenant=t-9",
            Some(&key.secret),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_error(&body, "not_found");

        // Another organization sees none of it.
        let other = store.create_key(&unique("globex"), "k").await.unwrap();
        let (_, theirs) = call(&store, "GET", "/v1/usage", Some(&other.secret), None).await;
        assert_eq!(
            theirs["totals"],
            json!({"tenants": 0, "calls": 0, "cost_usd": 0.0})
        );
        let (status, _) = call(
            &store,
            "GET",
            "/v1/usage?tenant=t-1",
            Some(&other.secret),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}

#[tokio::test]
async fn bad_bodies_name_what_is_wrong() {
    for (store, _dir) in stores().await {
        let key = store.create_key(&unique("acme"), "k").await.unwrap();
        let post = |body: &'static str| {
            let (store, secret) = (store.clone(), key.secret.clone());
            async move { call(&store, "POST", "/v1/tenants", Some(&secret), Some(body)).await }
        };
        let (status, body) = post(r#"{"name":"x"}"#).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["param"], "id", "{body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("missing field `id`"),
            "{body}"
        );

        let (status, body) = post(r#"{"id":"t","nmae":"x"}"#).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["param"], "nmae", "{body}");

        let (status, body) = post(r#"{"id": "#).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_error(&body, "invalid_json");

        let (status, body) = post(r#"{"id":""}"#).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(body["error"]["param"], "id");

        let big = format!(
            r#"{{"id":"t","name":"{}"}}"#,
            "x".repeat(atrium_server::MAX_BODY_BYTES)
        );
        let (status, body) =
            call(&store, "POST", "/v1/tenants", Some(&key.secret), Some(&big)).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_error(&body, "request_too_large");

        let (status, body) = call(&store, "GET", "/v1/nothing", Some(&key.secret), None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_error(&body, "not_found");
    }
}

/// A key revoked by another process (`atrium keys revoke` writes to the database) stops
/// working here once this host's change feed poller has read the revocation, or, were the
/// poller stuck, once the feed is stale and nothing is answered from memory.
#[tokio::test]
async fn a_key_revoked_by_another_process_stops_working_here() {
    let (store, dir) = stores().await.remove(0);
    let poller = tokio::spawn(store.clone().watch_changes());
    let state = crate::state(&store, vec![]);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    for _ in 0..2 {
        let (status, _) =
            crate::call_on(&state, "GET", "/v1/usage", Some(&key.secret), None, None).await;
        assert_eq!(status, StatusCode::OK);
    }
    let command = crate::reopen(&store, dir.as_ref()).await;
    command.revoke_key(&key.id).await.unwrap();
    command.close().await;
    tokio::time::sleep(atrium_store::STALE_AFTER + std::time::Duration::from_millis(50)).await;
    let (status, _) =
        crate::call_on(&state, "GET", "/v1/usage", Some(&key.secret), None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    poller.abort();
}

//! `/health` and `/ready` of a running host on SQLite, and the usage endpoint when the store
//! refuses writes: a write lock another connection keeps makes the host not ready (naming the
//! store) until it is let go; a database that refuses usage records makes the metering writer
//! report it (readiness names it), `GET /v1/usage` answer 503 `usage_unavailable` at once
//! rather than wait, and, once the database takes them again, every record is stored once.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Connection;

use crate::host::{Body, Host};

async fn connection(dir: &std::path::Path) -> sqlx::SqliteConnection {
    sqlx::SqliteConnection::connect(&format!("sqlite://{}", dir.join("atrium.db").display()))
        .await
        .unwrap()
}

async fn ready(host: &Host) -> (StatusCode, Value) {
    let response = reqwest::get(format!("{}/ready", host.base()))
        .await
        .unwrap();
    (response.status(), response.json().await.unwrap())
}

#[tokio::test]
async fn readiness_names_a_store_that_takes_no_writes_and_usage_never_waits_on_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = atrium_store::Store::open_sqlite(dir.path()).await.unwrap();
    let key = store.create_key("acme", "ops").await.unwrap();
    let state = crate::state(&store, vec![]);
    let metering = state.metering.clone();
    let host = Host::start(state).await;

    let (status, body) = ready(&host).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"status": "ready", "store": {"ok": true}, "metering": {"ok": true}})
    );
    let health = reqwest::get(format!("{}/health", host.base()))
        .await
        .unwrap();
    assert_eq!(health.text().await.unwrap(), "ok");

    // Another connection keeps the write lock: not ready, the store named.
    let mut holder = connection(dir.path()).await;
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let (status, body) = ready(&host).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["status"], "not_ready");
    assert_eq!(body["store"]["ok"], false);
    assert!(
        body["store"]["error"]
            .as_str()
            .unwrap()
            .contains("did not take a write"),
        "{body}"
    );
    assert_eq!(body["metering"]["ok"], true);
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    let (status, body) = ready(&host).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // The database refuses usage records (their table is gone).
    sqlx::query("ALTER TABLE usage_records RENAME TO usage_records_away")
        .execute(&mut holder)
        .await
        .unwrap();
    for tenant in ["a", "b"] {
        metering
            .record(atrium_store::UsageRecord {
                org_id: key.org_id.clone(),
                tenant_id: tenant.into(),
                kind: "embedding".into(),
                provider: "local".into(),
                model: "lexical".into(),
                prompt_tokens: 3,
                completion_tokens: 0,
                cost_micros: 0,
                batch: false,
                app_slug: None,
                agent: None,
            })
            .await;
    }
    // The first read waits for the writer's tries, then hears they failed.
    let (status, body) = host
        .send("GET", "/v1/usage", Some(&key.secret), Body::None)
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "usage_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("usage_records"),
        "{body}"
    );
    // Readiness names the metering writer, with what it holds.
    let (status, body) = ready(&host).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["store"]["ok"], true, "{body}");
    assert_eq!(body["metering"]["ok"], false, "{body}");
    assert_eq!(body["metering"]["held_records"], 2, "{body}");
    assert!(body["metering"]["failing_since_ms"].as_i64().unwrap() > 0);
    // While it fails, the usage endpoint answers at once: a client waits for nothing.
    let quick = tokio::time::timeout(
        Duration::from_secs(5),
        host.send("GET", "/v1/usage", Some(&key.secret), Body::None),
    )
    .await
    .expect("the usage endpoint waited on a failing store");
    assert_eq!(quick.0, StatusCode::SERVICE_UNAVAILABLE, "{}", quick.1);

    // The database takes them again: both stored, once.
    sqlx::query("ALTER TABLE usage_records_away RENAME TO usage_records")
        .execute(&mut holder)
        .await
        .unwrap();
    let mut answered = None;
    for _ in 0..100 {
        let (status, body) = host
            .send("GET", "/v1/usage", Some(&key.secret), Body::None)
            .await;
        if status == StatusCode::OK {
            answered = Some(body);
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let usage = answered.expect("the held usage records were never stored");
    assert_eq!(usage["totals"]["calls"], 2, "{usage}");
    let (status, body) = ready(&host).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    holder.close().await.unwrap();
    host.stop().await;
}

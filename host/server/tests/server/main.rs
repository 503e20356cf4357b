//! The /v1 router without a socket, on SQLite and (when configured) PostgreSQL.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod batches;
mod chat;
mod embeddings;
mod health;
mod host;
mod llm_settings;
mod openai_client;
mod overload;
mod rag;
mod registry;
mod tenants;
mod v1;

use std::sync::Arc;

use atrium_inference::providers::Provider;
use atrium_inference::{Catalog, Gateway};
use atrium_server::{HostState, router};
use atrium_store::Store;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

pub(crate) async fn stores() -> Vec<(Store, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut stores = vec![(Store::open_sqlite(dir.path()).await.unwrap(), Some(dir))];
    if let Ok(url) = std::env::var("ATRIUM_TEST_DATABASE_URL") {
        stores.push((Store::open_url(&url).await.unwrap(), None));
    }
    stores
}

/// Another handle on the database of `store` (from [`stores`]), as another host or a command
/// opens it: changes made through it reach `store`'s caches only through the change feed.
pub(crate) async fn reopen(store: &Store, dir: Option<&tempfile::TempDir>) -> Store {
    match dir {
        Some(dir) => Store::open_sqlite(dir.path()).await.unwrap(),
        None => {
            assert_eq!(store.backend(), "postgres");
            Store::open_url(&std::env::var("ATRIUM_TEST_DATABASE_URL").unwrap())
                .await
                .unwrap()
        }
    }
}

pub(crate) fn unique(name: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}-{n}", std::process::id())
}

/// A state with the given providers (none: every provider unavailable).
pub(crate) fn state(store: &Store, providers: Vec<Arc<dyn Provider>>) -> HostState {
    HostState::new(store.clone(), Gateway::new(Catalog::builtin(), providers))
}

pub(crate) async fn call(
    store: &Store,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> (StatusCode, Value) {
    call_on(&state(store, vec![]), method, path, key, None, body).await
}

pub(crate) async fn call_on(
    state: &HostState,
    method: &str,
    path: &str,
    key: Option<&str>,
    tenant: Option<&str>,
    body: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(key) = key {
        request = request.header("authorization", format!("Bearer {key}"));
    }
    if let Some(tenant) = tenant {
        request = request.header("x-service-tenant", tenant);
    }
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let request = request
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_owned())))
        .unwrap();
    let response = router(state.clone()).oneshot(request).await.unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())),
    )
}

pub(crate) fn assert_error(body: &Value, code: &str) {
    let error = &body["error"];
    assert!(
        error["message"].is_string() && error["type"].is_string(),
        "{body}"
    );
    assert!(error.as_object().unwrap().contains_key("param"), "{body}");
    assert_eq!(error["code"], code, "{body}");
}

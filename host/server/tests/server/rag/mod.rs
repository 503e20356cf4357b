//! `/v1/rag`: collections, documents, files (text and PDF, multipart and raw), hybrid query,
//! isolation between tenants and organizations, and bad inputs — with the local embedder.
//!
//! The helpers every part shares are here: a state with retrieval, raw and JSON calls, and
//! adding and querying documents. The tests are one module per concern.

mod documents;
mod files;
mod isolation;
mod ranking;
mod refusals;

use atrium_inference::embed::Embedders;
use atrium_retrieval::{Retrieval, RetrievalConfig};
use atrium_server::{HostState, router};
use atrium_store::Store;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::call_on;

/// A state with retrieval under `dir`, using `embedders`.
pub(crate) async fn rag_state(
    store: &Store,
    dir: &std::path::Path,
    embedders: Embedders,
) -> HostState {
    let retrieval = Retrieval::open(
        store.clone(),
        embedders.clone(),
        RetrievalConfig::local(dir),
    )
    .await
    .unwrap();
    crate::state(store, vec![])
        .with_embedders(embedders)
        .with_retrieval(retrieval)
}

fn pdf(pages: &[&[&str]]) -> Vec<u8> {
    atrium_test_artifacts::pdf::with_pages(pages)
}

/// Sends a raw body with its content type.
pub(crate) async fn send(
    state: &HostState,
    method: &str,
    path: &str,
    key: &str,
    tenant: Option<&str>,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (StatusCode, Value) {
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("authorization", format!("Bearer {key}"));
    if let Some(tenant) = tenant {
        request = request.header("x-service-tenant", tenant);
    }
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let response = router(state.clone())
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())),
    )
}

/// A multipart body with a `file` part (and a `title` part when given).
fn multipart(
    file: &[u8],
    filename: &str,
    file_type: &str,
    title: Option<&str>,
) -> (String, Vec<u8>) {
    let boundary = "atrium-test-boundary-7d1c";
    let mut body = Vec::new();
    if let Some(title) = title {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\n{title}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: {file_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(file);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn json_call(
    state: &HostState,
    method: &str,
    path: &str,
    key: &str,
    tenant: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let text = body.map(|b| b.to_string());
    call_on(
        state,
        method,
        path,
        Some(key),
        Some(tenant),
        text.as_deref(),
    )
    .await
}

async fn add(
    state: &HostState,
    key: &str,
    tenant: &str,
    collection: &str,
    title: &str,
    text: &str,
) -> String {
    let (status, body) = json_call(
        state,
        "POST",
        &format!("/v1/rag/{collection}/documents"),
        key,
        tenant,
        Some(json!({"title": title, "text": text})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["document_id"].as_str().unwrap().to_owned()
}

async fn top(
    state: &HostState,
    key: &str,
    tenant: &str,
    collection: &str,
    query: &str,
) -> Vec<Value> {
    let (status, body) = json_call(
        state,
        "POST",
        &format!("/v1/rag/{collection}/query"),
        key,
        tenant,
        Some(json!({"query": query})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["matches"].as_array().unwrap().clone()
}

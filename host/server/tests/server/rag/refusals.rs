//! What is refused, and why: bad files and fields, unknown collections, and an embedder that
//! fails or is gone; none of it leaves anything stored.

use atrium_inference::embed::Embedders;
use axum::http::StatusCode;
use serde_json::json;

use super::{json_call, multipart, pdf, rag_state, send};
use crate::{assert_error, stores, unique};

#[tokio::test]
async fn bad_files_and_fields_are_refused_with_what_is_wrong_and_nothing_is_stored() {
    let (store, _keep) = stores().await.remove(0);
    let dir = tempfile::tempdir().unwrap();
    let state = rag_state(&store, dir.path(), Embedders::default()).await;
    let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
    json_call(&state, "POST", "/v1/rag/c", &key, "t", None).await;
    for (content_type, bytes, status, code) in [
        (
            "image/png",
            b"\x89PNG\r\n\x1a\n....".to_vec(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_file_type",
        ),
        (
            "application/json",
            b"{\"title\": \"x\"}".to_vec(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_file_type",
        ),
        (
            "application/octet-stream",
            vec![0xff, 0x00, 0xfe, 0x01],
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_file_type",
        ),
        (
            "text/plain",
            Vec::new(),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            "text/plain",
            b"   \n\t ".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unprocessable_document",
        ),
        (
            "application/pdf",
            b"%PDF-1.7\nthis is not really a PDF at all".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unprocessable_document",
        ),
        (
            "application/pdf",
            b"hello".to_vec(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unprocessable_document",
        ),
        (
            "application/pdf",
            pdf(&[&[]]),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unprocessable_document",
        ),
    ] {
        let (got, body) = send(
            &state,
            "POST",
            "/v1/rag/c/files",
            &key,
            Some("t"),
            Some(content_type),
            bytes,
        )
        .await;
        assert_eq!(got, status, "{content_type}: {body}");
        assert_error(&body, code);
    }
    // A PDF with nothing but an image-less empty page says it has no text.
    let (_, body) = send(
        &state,
        "POST",
        "/v1/rag/c/files",
        &key,
        Some("t"),
        Some("application/pdf"),
        pdf(&[&[]]),
    )
    .await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no extractable text"),
        "{body}"
    );

    // A PDF that needs a password says so.
    let (status, body) = send(
        &state,
        "POST",
        "/v1/rag/c/files",
        &key,
        Some("t"),
        Some("application/pdf"),
        atrium_test_artifacts::pdf::encrypted("Salaries 2026", "user secret"),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_error(&body, "unprocessable_document");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("encrypted"),
        "{body}"
    );

    // Multipart without a file part; too large a file.
    let (content_type, _) = multipart(b"x", "a.txt", "text/plain", None);
    let body = "--atrium-test-boundary-7d1c\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nNo file\r\n--atrium-test-boundary-7d1c--\r\n".to_owned();
    let (status, err) = send(
        &state,
        "POST",
        "/v1/rag/c/files",
        &key,
        Some("t"),
        Some(&content_type),
        body.into_bytes(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["error"]["param"], "file");
    let (status, err) = send(
        &state,
        "POST",
        "/v1/rag/c/files",
        &key,
        Some("t"),
        Some("text/plain"),
        vec![b'a'; 33 * 1024 * 1024],
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{err}");

    const DOCS: &str = "/v1/rag/c/documents";
    const QUERY: &str = "/v1/rag/c/query";
    for (path, body, param) in [
        (DOCS, json!({"text": "no title"}), "title"),
        (DOCS, json!({"title": "no text"}), "text"),
        (DOCS, json!({"title": 3, "text": "x"}), "title"),
        (DOCS, json!({"title": "  ", "text": "x"}), "title"),
        (QUERY, json!({}), "query"),
        (QUERY, json!({"query": ""}), "query"),
        (QUERY, json!({"query": "x", "top_k": 0}), "top_k"),
        (QUERY, json!({"query": "x", "top_k": 51}), "top_k"),
        (QUERY, json!({"query": "x", "top_k": "five"}), "top_k"),
    ] {
        let (status, err) = json_call(&state, "POST", path, &key, "t", Some(body.clone())).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {body}: {err}");
        assert_eq!(err["error"]["param"], param, "{err}");
    }
    let (status, _) = json_call(
        &state,
        "POST",
        "/v1/rag/c/documents",
        &key,
        "t",
        Some(json!({"title": "big", "text": "a ".repeat(1_000_001)})),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);

    // An unknown collection is a 404 everywhere.
    for (method, path, body) in [
        (
            "POST",
            "/v1/rag/nope/documents",
            Some(json!({"title": "a", "text": "b"})),
        ),
        ("GET", "/v1/rag/nope/documents", None),
        ("POST", "/v1/rag/nope/query", Some(json!({"query": "b"}))),
        (
            "DELETE",
            "/v1/rag/nope/documents/doc_0123456789abcdef01234567",
            None,
        ),
    ] {
        let (status, err) = json_call(&state, method, path, &key, "t", body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}: {err}");
        assert_error(&err, "not_found");
    }
    let (status, _) = send(
        &state,
        "POST",
        "/v1/rag/nope/files",
        &key,
        Some("t"),
        Some("text/plain"),
        b"hello".to_vec(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = json_call(
        &state,
        "DELETE",
        "/v1/rag/c/documents/doc_'%20OR%201=1",
        &key,
        "t",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Nothing of all that was stored.
    let (_, list) = json_call(&state, "GET", "/v1/rag/c/documents", &key, "t", None).await;
    assert_eq!(list["data"], json!([]), "{list}");
    let (_, collections) = json_call(&state, "GET", "/v1/rag", &key, "t", None).await;
    assert_eq!(collections["data"][0]["chunks"], 0, "{collections}");
}

#[tokio::test]
async fn a_failed_embedding_leaves_no_document_behind() {
    let (store, _keep) = stores().await.remove(0);
    let dir = tempfile::tempdir().unwrap();
    // Mistral is configured but unreachable: collections get mistral-embed, and every
    // embedding fails.
    let vars = |name: &str| match name {
        "ATRIUM_MISTRAL_BASE_URL" => Some("http://127.0.0.1:9/v1".to_owned()),
        "ATRIUM_MISTRAL_API_KEY" => Some("k".to_owned()),
        _ => None,
    };
    let embedders = Embedders::from_config(&atrium_inference::InferenceConfig::default(), &vars);
    let state = rag_state(&store, dir.path(), embedders).await;
    let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
    let (_, created) = json_call(&state, "POST", "/v1/rag/c", &key, "t", None).await;
    assert_eq!(created["embedder"]["model"], "mistral-embed");
    let (status, err) = json_call(
        &state,
        "POST",
        "/v1/rag/c/documents",
        &key,
        "t",
        Some(json!({"title": "a", "text": "some text"})),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{err}");
    assert_error(&err, "embedding_failed");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("mistral"),
        "{err}"
    );
    let (_, list) = json_call(&state, "GET", "/v1/rag/c/documents", &key, "t", None).await;
    assert_eq!(list["data"], json!([]));
    // A collection whose embedder the host no longer has says so.
    let local = rag_state(&store, dir.path(), Embedders::default()).await;
    let (status, err) = json_call(
        &local,
        "POST",
        "/v1/rag/c/query",
        &key,
        "t",
        Some(json!({"query": "text"})),
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{err}");
    assert_error(&err, "embedder_unavailable");
}

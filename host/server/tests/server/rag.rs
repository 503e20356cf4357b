//! `/v1/rag`: collections, documents, files (text and PDF, multipart and raw), hybrid query,
//! isolation between tenants and organizations, and bad inputs — with the local embedder.

use atrium_inference::embed::Embedders;
use atrium_retrieval::{Retrieval, RetrievalConfig};
use atrium_server::{HostState, router};
use atrium_store::Store;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::{assert_error, call_on, stores, unique};

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

#[tokio::test]
async fn collections_are_created_once_and_listed_per_tenant() {
    for (store, _keep) in stores().await {
        let dir = tempfile::tempdir().unwrap();
        let state = rag_state(&store, dir.path(), Embedders::default()).await;
        let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
        let (status, created) =
            json_call(&state, "POST", "/v1/rag/handbook", &key, "t1", None).await;
        assert_eq!(status, StatusCode::CREATED, "{created}");
        assert_eq!(created["name"], "handbook");
        assert_eq!(created["created"], true);
        assert_eq!(created["embedder"]["model"], "atrium-local-lexical");
        assert_eq!(created["dimensions"], 1024);
        let (status, again) = json_call(&state, "POST", "/v1/rag/handbook", &key, "t1", None).await;
        assert_eq!(status, StatusCode::OK, "{again}");
        assert_eq!(again["created"], false);
        assert_eq!(again["created_at"], created["created_at"]);
        json_call(&state, "POST", "/v1/rag/contracts", &key, "t1", None).await;
        add(
            &state,
            &key,
            "t1",
            "handbook",
            "Leave",
            "Employees take leave with two weeks of notice.",
        )
        .await;
        let (status, list) = json_call(&state, "GET", "/v1/rag", &key, "t1", None).await;
        assert_eq!(status, StatusCode::OK, "{list}");
        let names: Vec<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["contracts", "handbook"]);
        assert_eq!(list["data"][1]["documents"], 1);
        assert_eq!(list["data"][1]["chunks"], 1);
        let (_, other) = json_call(&state, "GET", "/v1/rag", &key, "t2", None).await;
        assert_eq!(other["data"], json!([]));
        for bad in ["bad%20name", "a%2Fb", &"x".repeat(129)] {
            let (status, body) =
                json_call(&state, "POST", &format!("/v1/rag/{bad}"), &key, "t1", None).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
            assert_error(&body, "invalid_request");
        }
        let (status, _) = call_on(&state, "POST", "/v1/rag/handbook", None, None, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
}

#[tokio::test]
async fn documents_are_added_listed_found_and_deleted() {
    for (store, _keep) in stores().await {
        let dir = tempfile::tempdir().unwrap();
        let state = rag_state(&store, dir.path(), Embedders::default()).await;
        let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
        json_call(&state, "POST", "/v1/rag/kb", &key, "t", None).await;
        let long =
            "The travel policy covers trains, flights and hotels for business trips. ".repeat(40);
        let (status, added) = json_call(
            &state,
            "POST",
            "/v1/rag/kb/documents",
            &key,
            "t",
            Some(json!({"title": "Travel policy", "text": long})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{added}");
        assert_eq!(added["status"], "indexed");
        assert_eq!(added["chars"], long.chars().count());
        assert!(added["chunks"].as_i64().unwrap() >= 3, "{added}");
        let travel = added["document_id"].as_str().unwrap().to_owned();
        assert!(travel.starts_with("doc_"));
        let espresso = add(
            &state,
            &key,
            "t",
            "kb",
            "Coffee machine",
            "Descale the espresso machine every Friday with citric acid.",
        )
        .await;

        let (_, list) = json_call(&state, "GET", "/v1/rag/kb/documents", &key, "t", None).await;
        let docs = list["data"].as_array().unwrap();
        assert_eq!(docs.len(), 2, "{list}");
        assert_eq!(docs[0]["id"], travel.as_str());
        assert_eq!(docs[0]["title"], "Travel policy");
        assert_eq!(docs[0]["status"], "indexed");
        assert!(docs[0]["created_at"].as_i64().unwrap() > 1_700_000_000);

        let matches = top(&state, &key, "t", "kb", "espresso descaling").await;
        assert_eq!(matches[0]["document_id"], espresso.as_str(), "{matches:?}");
        assert_eq!(matches[0]["title"], "Coffee machine");
        assert!(matches[0]["text"].as_str().unwrap().contains("citric acid"));
        let score = matches[0]["score"].as_f64().unwrap();
        assert!(score > 0.0 && score <= 1.0, "{score}");
        assert!(
            matches
                .windows(2)
                .all(|w| w[0]["score"].as_f64() >= w[1]["score"].as_f64())
        );
        assert!(matches.len() <= 5);
        let (_, two) = json_call(
            &state,
            "POST",
            "/v1/rag/kb/query",
            &key,
            "t",
            Some(json!({"query": "policy", "top_k": 2})),
        )
        .await;
        assert_eq!(two["matches"].as_array().unwrap().len(), 2, "{two}");
        assert_eq!(two["model"], "atrium-local-lexical");

        let (status, deleted) = json_call(
            &state,
            "DELETE",
            &format!("/v1/rag/kb/documents/{espresso}"),
            &key,
            "t",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{deleted}");
        assert_eq!(deleted["deleted"], true);
        let after = top(&state, &key, "t", "kb", "espresso descaling citric acid").await;
        assert!(
            after.iter().all(|m| m["document_id"] != espresso.as_str()),
            "{after:?}"
        );
        let (_, list) = json_call(&state, "GET", "/v1/rag/kb/documents", &key, "t", None).await;
        assert_eq!(list["data"].as_array().unwrap().len(), 1);
        let (status, body) = json_call(
            &state,
            "DELETE",
            &format!("/v1/rag/kb/documents/{espresso}"),
            &key,
            "t",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_error(&body, "not_found");

        // Ingestion and queries are metered to the tenant.
        let (_, usage) = call_on(&state, "GET", "/v1/usage?tenant=t", Some(&key), None, None).await;
        // Two documents added and three queries.
        assert_eq!(usage["tenant"]["calls"], 5, "{usage}");
        assert!(
            usage["tenant"]["prompt_tokens"].as_i64().unwrap() > 100,
            "{usage}"
        );
    }
}

#[tokio::test]
async fn text_and_pdf_files_arrive_as_multipart_or_raw_bodies() {
    let (store, _keep) = stores().await.remove(0);
    let dir = tempfile::tempdir().unwrap();
    let state = rag_state(&store, dir.path(), Embedders::default()).await;
    let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
    json_call(&state, "POST", "/v1/rag/files", &key, "t", None).await;

    let notes = "Release notes.\n\nVersion 4 adds offline mode and a darker theme."
        .as_bytes()
        .to_vec();
    let (status, raw_text) = send(
        &state,
        "POST",
        "/v1/rag/files/files?title=Release%20notes",
        &key,
        Some("t"),
        Some("text/plain; charset=utf-8"),
        notes,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{raw_text}");
    assert_eq!(raw_text["status"], "indexed");
    assert_eq!(raw_text["title"], "Release notes");
    assert_eq!(raw_text["source"], "text");
    assert_eq!(raw_text["chunks"], 1);

    let manual = pdf(&[
        &[
            "Warehouse safety manual",
            "Forklifts must be inspected before every shift.",
        ],
        &[
            "Helmets are required in aisle seven.",
            "Report spills to the floor supervisor.",
        ],
    ]);
    let (content_type, body) = multipart(
        &manual,
        "safety.pdf",
        "application/pdf",
        Some("Safety manual"),
    );
    let (status, from_pdf) = send(
        &state,
        "POST",
        "/v1/rag/files/files",
        &key,
        Some("t"),
        Some(&content_type),
        body,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{from_pdf}");
    assert_eq!(from_pdf["title"], "Safety manual");
    assert_eq!(from_pdf["source"], "pdf");
    assert!(from_pdf["chars"].as_i64().unwrap() > 60, "{from_pdf}");
    let pdf_id = from_pdf["document_id"].as_str().unwrap().to_owned();

    // Without a title part, the file name is the title; octet-stream is sniffed.
    let (content_type, body) = multipart(
        &pdf(&[&["Quarterly figures: revenue grew by nine percent."]]),
        "q3-report.pdf",
        "application/octet-stream",
        None,
    );
    let (status, sniffed) = send(
        &state,
        "POST",
        "/v1/rag/files/files",
        &key,
        Some("t"),
        Some(&content_type),
        body,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{sniffed}");
    assert_eq!(sniffed["title"], "q3-report.pdf");
    assert_eq!(sniffed["source"], "pdf");

    let (status, raw_pdf) = send(
        &state,
        "POST",
        "/v1/rag/files/files",
        &key,
        Some("t"),
        Some("application/pdf"),
        pdf(&[&["Parking permits renew every January."]]),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{raw_pdf}");
    assert_eq!(raw_pdf["title"], "untitled");

    let matches = top(
        &state,
        &key,
        "t",
        "files",
        "forklift inspection before the shift",
    )
    .await;
    assert_eq!(matches[0]["document_id"], pdf_id.as_str(), "{matches:?}");
    assert!(matches[0]["text"].as_str().unwrap().contains("Forklifts"));
    let matches = top(&state, &key, "t", "files", "helmets aisle seven").await;
    assert_eq!(
        matches[0]["document_id"],
        pdf_id.as_str(),
        "text of the second page: {matches:?}"
    );
}

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
async fn tenants_and_organizations_never_see_each_other() {
    for (store, _keep) in stores().await {
        let dir = tempfile::tempdir().unwrap();
        let state = rag_state(&store, dir.path(), Embedders::default()).await;
        let acme = store.create_key(&unique("acme"), "k").await.unwrap().secret;
        let globex = store
            .create_key(&unique("globex"), "k")
            .await
            .unwrap()
            .secret;
        json_call(&state, "POST", "/v1/rag/docs", &acme, "alice", None).await;
        let secret = add(
            &state,
            &acme,
            "alice",
            "docs",
            "Merger",
            "Project zephyr: the merger closes on the ninth of March.",
        )
        .await;

        // Same organization, another tenant: the collection does not exist for it.
        let (status, _) = json_call(
            &state,
            "POST",
            "/v1/rag/docs/query",
            &acme,
            "bob",
            Some(json!({"query": "zephyr merger"})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) =
            json_call(&state, "GET", "/v1/rag/docs/documents", &acme, "bob", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        // Its own collection of the same name is a different one.
        json_call(&state, "POST", "/v1/rag/docs", &acme, "bob", None).await;
        add(
            &state,
            &acme,
            "bob",
            "docs",
            "Menu",
            "Soup of the day is tomato.",
        )
        .await;
        let found = top(&state, &acme, "bob", "docs", "zephyr merger March").await;
        assert!(
            found.iter().all(|m| m["document_id"] != secret.as_str()),
            "{found:?}"
        );
        let (status, _) = json_call(
            &state,
            "DELETE",
            &format!("/v1/rag/docs/documents/{secret}"),
            &acme,
            "bob",
            None,
        )
        .await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "bob cannot delete alice's document"
        );
        let (_, listed) =
            json_call(&state, "GET", "/v1/rag/docs/documents", &acme, "bob", None).await;
        assert_eq!(listed["data"].as_array().unwrap().len(), 1);

        // Another organization with a tenant of the same name sees nothing either.
        let (status, _) = json_call(
            &state,
            "POST",
            "/v1/rag/docs/query",
            &globex,
            "alice",
            Some(json!({"query": "zephyr"})),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (status, _) = send(
            &state,
            "POST",
            "/v1/rag/docs/files",
            &globex,
            Some("alice"),
            Some("text/plain"),
            b"intrusion".to_vec(),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        let (_, none) = json_call(&state, "GET", "/v1/rag", &globex, "alice", None).await;
        assert_eq!(none["data"], json!([]));

        // Alice's document is intact.
        let mine = top(&state, &acme, "alice", "docs", "zephyr merger").await;
        assert_eq!(mine[0]["document_id"], secret.as_str());
        assert_eq!(mine.len(), 1);
    }
}

/// A small corpus written for this test: each document is about one thing.
const CORPUS: &[(&str, &str)] = &[
    (
        "Expense reports",
        "Submit expense reports within thirty days. Attach every receipt; the finance team reimburses approved expenses with the next salary payment.",
    ),
    (
        "Parental leave",
        "Parents receive sixteen weeks of paid parental leave after a birth or an adoption. Tell your manager at least two months before the leave starts.",
    ),
    (
        "Password rules",
        "Passwords need at least fourteen characters. Change your password when a breach is suspected; the password manager generates strong ones.",
    ),
    (
        "Office heating",
        "The heating in the Lyon office runs from October to April. Report a cold radiator to facilities through the building portal.",
    ),
    (
        "Security incidents",
        "Report a phishing email or a lost laptop to the security team at once. The incident hotline answers day and night.",
    ),
    (
        "Company cars",
        "Company cars are booked in the fleet calendar. Refuel before returning the car and log the mileage in the car's booklet.",
    ),
    (
        "Remote work",
        "Employees may work from home up to three days a week. Agree the remote days with your team and keep your calendar current.",
    ),
    (
        "Onboarding",
        "New hires receive a laptop, a badge and a buddy on their first day. The onboarding checklist lists the trainings to finish in the first month.",
    ),
];

#[tokio::test]
async fn the_relevant_document_ranks_first_for_exact_and_paraphrased_queries() {
    let (store, _keep) = stores().await.remove(0);
    let dir = tempfile::tempdir().unwrap();
    let state = rag_state(&store, dir.path(), Embedders::default()).await;
    let key = store.create_key(&unique("acme"), "k").await.unwrap().secret;
    json_call(&state, "POST", "/v1/rag/handbook", &key, "t", None).await;
    let mut ids = std::collections::HashMap::new();
    for (title, text) in CORPUS {
        ids.insert(
            *title,
            add(&state, &key, "t", "handbook", title, text).await,
        );
    }
    // Exact terms from the document.
    for (query, expected) in [
        ("expense reports receipt", "Expense reports"),
        ("parental leave", "Parental leave"),
        ("password manager", "Password rules"),
        ("radiator Lyon office", "Office heating"),
        ("phishing email", "Security incidents"),
        ("fleet calendar mileage", "Company cars"),
        ("onboarding checklist", "Onboarding"),
    ] {
        let matches = top(&state, &key, "t", "handbook", query).await;
        assert_eq!(
            matches[0]["document_id"],
            ids[expected].as_str(),
            "`{query}` should find {expected}: {matches:?}"
        );
    }
    // The same needs, said another way: other word forms, other order, other words around.
    for (query, expected) in [
        (
            "how do I get reimbursed for what I expensed?",
            "Expense reports",
        ),
        (
            "how many weeks off do parents get when adopting a child",
            "Parental leave",
        ),
        ("how long must my passwords be", "Password rules"),
        (
            "who do I tell when the heater is cold in winter",
            "Office heating",
        ),
        (
            "I lost my work laptop, whom should I report it to",
            "Security incidents",
        ),
        ("booking a car from the company fleet", "Company cars"),
        ("can I work from home on some days", "Remote work"),
        ("what do new hires get on their first day", "Onboarding"),
    ] {
        let matches = top(&state, &key, "t", "handbook", query).await;
        assert_eq!(
            matches[0]["document_id"],
            ids[expected].as_str(),
            "`{query}` should find {expected}: {matches:?}"
        );
    }
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

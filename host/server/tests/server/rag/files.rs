//! Files: text and PDF, sent as multipart or as a raw body, titled from a part, the query or
//! the file name, and found by what their pages say.

use atrium_inference::embed::Embedders;
use axum::http::StatusCode;

use super::{json_call, multipart, pdf, rag_state, send, top};
use crate::{stores, unique};

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

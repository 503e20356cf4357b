//! Collections on S3-compatible object storage, configured the way `atrium serve` reads it
//! (`ATRIUM_RAG_URI=s3://...` and `ATRIUM_RAG_STORAGE_*`), against a real S3 server: moto's,
//! installed from PyPI into the build cache on first use and run on a free local port.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use atrium_store::TenantKey;
use std::time::Duration;

use atrium_inference::embed::Embedders;
use atrium_retrieval::{Retrieval, RetrievalConfig};
use atrium_store::Store;
use atrium_test_artifacts::s3::S3Server;

const BUCKET: &str = "atrium-rag";

/// Text of about `sentences` sentences on `topic`.
fn text(topic: &str, sentences: usize) -> String {
    const WORDS: &[&str] = &[
        "ledger", "harbor", "violet", "engine", "meadow", "copper", "signal", "orchard", "canvas",
        "pillar", "summit", "lantern", "quarry", "falcon", "timber", "glacier",
    ];
    (0..sentences)
        .map(|i| {
            let a = WORDS[i % WORDS.len()];
            let b = WORDS[(i * 7 + 3) % WORDS.len()];
            format!("The {a} beside the {b} records {topic} once more, line {i}. ")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collections_live_on_s3_compatible_storage() {
    let mut s3 = tokio::task::spawn_blocking(|| S3Server::start(BUCKET))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let vars: Vec<(String, String)> = [
        ("ATRIUM_RAG_URI", format!("s3://{BUCKET}/collections")),
        ("ATRIUM_RAG_STORAGE_AWS_ENDPOINT", s3.endpoint().into()),
        ("ATRIUM_RAG_STORAGE_AWS_REGION", "us-east-1".into()),
        ("ATRIUM_RAG_STORAGE_AWS_ACCESS_KEY_ID", "test".into()),
        ("ATRIUM_RAG_STORAGE_AWS_SECRET_ACCESS_KEY", "test".into()),
        ("ATRIUM_RAG_STORAGE_ALLOW_HTTP", "true".into()),
        ("UNRELATED", "ignored".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mut config = RetrievalConfig::from_env(dir.path(), &vars).unwrap();
    assert_eq!(config.uri, format!("s3://{BUCKET}/collections"));
    assert_eq!(
        config.storage_options.len(),
        5,
        "{:?}",
        config.storage_options
    );
    assert_eq!(config.read_consistency, Some(Duration::from_secs(1)));
    config.vector_index_rows = 200;

    let store = Store::open_sqlite(dir.path()).await.unwrap();
    let org = store.create_key("acme", "k").await.unwrap().org_id;
    let retrieval = Retrieval::open(store.clone(), Embedders::default(), config.clone())
        .await
        .unwrap();
    retrieval
        .create_collection(&TenantKey::new(&org, "t"), "notes")
        .await
        .unwrap();
    let mut ids = Vec::new();
    let mut chunks = 0;
    for topic in [
        "aardvark", "bison", "caracal", "dugong", "echidna", "fossa", "gharial", "hoatzin",
    ] {
        let added = retrieval
            .add_document(
                &TenantKey::new(&org, "t"),
                "notes",
                topic,
                text(topic, 500),
                "text",
            )
            .await
            .unwrap();
        chunks += added.document.chunks;
        ids.push(added.document.id);
    }
    assert!(chunks >= 300, "{chunks} chunks");
    let found = retrieval
        .query(&TenantKey::new(&org, "t"), "notes", "dugong", 3)
        .await
        .unwrap();
    assert_eq!(found.matches[0].document_id, ids[3], "{:?}", found.matches);

    // The tables are objects in the bucket; nothing went to the local data directory.
    assert!(!s3.keys("collections/").is_empty());
    assert!(!dir.path().join("rag").exists());

    // Upkeep works on object storage too: the vector index, compaction, old versions.
    let report = retrieval.upkeep_once().await.unwrap();
    assert_eq!(
        (report.tables, report.vector_indexes, report.failed),
        (1, 1, 0),
        "{report:?}"
    );
    retrieval
        .delete_document(&TenantKey::new(&org, "t"), "notes", &ids[3])
        .await
        .unwrap();
    let found = retrieval
        .query(&TenantKey::new(&org, "t"), "notes", "dugong", 3)
        .await
        .unwrap();
    assert!(
        found.matches.iter().all(|m| m.document_id != ids[3]),
        "{:?}",
        found.matches
    );

    // Another host (a new service on the same database and bucket) sees the same data.
    let other = Retrieval::open(store, Embedders::default(), config)
        .await
        .unwrap();
    let found = other
        .query(&TenantKey::new(&org, "t"), "notes", "hoatzin", 3)
        .await
        .unwrap();
    assert_eq!(found.matches[0].document_id, ids[7], "{:?}", found.matches);
    assert_eq!(
        other
            .documents(&TenantKey::new(&org, "t"), "notes")
            .await
            .unwrap()
            .len(),
        7
    );
}

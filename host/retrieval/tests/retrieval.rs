//! The retrieval service below HTTP: index upkeep, recovery of unfinished documents, and the
//! PDF sandbox's limits against hostile files.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use atrium_store::TenantKey;
use std::io::Write;
use std::time::Duration;

use atrium_inference::embed::Embedders;
use atrium_retrieval::pdf::{self, PdfError, PdfLimits};
use atrium_retrieval::{Retrieval, RetrievalConfig};
use atrium_store::Store;
use lopdf::{Document, Object, Stream, dictionary};

async fn open(dir: &std::path::Path, vector_index_rows: usize) -> (Store, Retrieval, String) {
    let store = Store::open_sqlite(dir).await.unwrap();
    let org = store.create_key("acme", "k").await.unwrap().org_id;
    let mut config = RetrievalConfig::local(&dir.join("rag"));
    config.vector_index_rows = vector_index_rows;
    let retrieval = Retrieval::open(store.clone(), Embedders::default(), config)
        .await
        .unwrap();
    (store, retrieval, org)
}

/// A long text about `topic`, in many sentences of varied words.
fn text(topic: &str, seed: usize) -> String {
    const WORDS: &[&str] = &[
        "ledger", "harbor", "violet", "engine", "meadow", "copper", "signal", "orchard", "canvas",
        "pillar", "summit", "lantern", "quarry", "falcon", "timber", "glacier", "saddle", "beacon",
    ];
    (0..60)
        .map(|i| {
            let a = WORDS[(seed * 7 + i) % WORDS.len()];
            let b = WORDS[(seed * 3 + i * 5) % WORDS.len()];
            format!("The {a} near the {b} mentions {topic} in sentence {i}. ")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upkeep_builds_the_vector_index_and_new_rows_are_found_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, retrieval, org) = open(dir.path(), 300).await;
    retrieval
        .create_collection(&TenantKey::new(&org, "t"), "big")
        .await
        .unwrap();
    let mut chunks = 0;
    let mut ids = Vec::new();
    for i in 0..60 {
        let added = retrieval
            .add_document(
                &TenantKey::new(&org, "t"),
                "big",
                &format!("Doc {i}"),
                text(&format!("topic{i}"), i),
                "text",
            )
            .await
            .unwrap();
        chunks += added.document.chunks;
        ids.push(added.document.id);
    }
    assert!(chunks >= 300, "{chunks} chunks");
    let report = retrieval.upkeep_once().await.unwrap();
    assert_eq!(
        (report.tables, report.vector_indexes, report.failed),
        (1, 1, 0),
        "{report:?}"
    );

    let found = retrieval
        .query(&TenantKey::new(&org, "t"), "big", "topic17", 3)
        .await
        .unwrap();
    assert_eq!(
        found.matches[0].document_id, ids[17],
        "{:?}",
        found.matches[0]
    );

    // A document added after the index is found before any upkeep.
    let late = retrieval
        .add_document(
            &TenantKey::new(&org, "t"),
            "big",
            "Late",
            "The quokka census happens every spring.".into(),
            "text",
        )
        .await
        .unwrap();
    let found = retrieval
        .query(&TenantKey::new(&org, "t"), "big", "quokka census", 3)
        .await
        .unwrap();
    assert_eq!(found.matches[0].document_id, late.document.id);

    let again = retrieval.upkeep_once().await.unwrap();
    assert_eq!((again.tables, again.vector_indexes), (1, 0), "{again:?}");
    let idle = retrieval.upkeep_once().await.unwrap();
    assert_eq!(idle.tables, 0, "nothing was written since: {idle:?}");
    let found = retrieval
        .query(&TenantKey::new(&org, "t"), "big", "quokka census", 3)
        .await
        .unwrap();
    assert_eq!(found.matches[0].document_id, late.document.id);

    // Deleting is upkeep work too, and the deleted rows are gone from the index.
    retrieval
        .delete_document(&TenantKey::new(&org, "t"), "big", &late.document.id)
        .await
        .unwrap();
    let report = retrieval.upkeep_once().await.unwrap();
    assert_eq!(report.tables, 1);
    let found = retrieval
        .query(&TenantKey::new(&org, "t"), "big", "quokka census", 3)
        .await
        .unwrap();
    assert!(
        found
            .matches
            .iter()
            .all(|m| m.document_id != late.document.id)
    );
}

#[tokio::test]
async fn documents_a_stopped_writer_left_unfinished_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let (store, retrieval, org) = open(dir.path(), 10_000).await;
    let (collection, _) = retrieval
        .create_collection(&TenantKey::new(&org, "t"), "c")
        .await
        .unwrap();
    let kept = retrieval
        .add_document(
            &TenantKey::new(&org, "t"),
            "c",
            "Kept",
            "This one finished.".into(),
            "text",
        )
        .await
        .unwrap();
    // A writer that stopped between its row and its chunks.
    let stale = store
        .begin_document(&collection.id, "Half", "text", 3, 100)
        .await
        .unwrap();
    assert_eq!(
        retrieval.recover(Duration::from_secs(3600)).await.unwrap(),
        0,
        "not stale yet"
    );
    // Stale means older than the threshold: let the clock pass the row's millisecond.
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(retrieval.recover(Duration::ZERO).await.unwrap(), 1);
    assert!(
        store
            .document(&collection.id, &stale)
            .await
            .unwrap()
            .is_none()
    );
    let listed = retrieval
        .documents(&TenantKey::new(&org, "t"), "c")
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, kept.document.id);
}

fn simple_pdf(text: &str) -> Vec<u8> {
    atrium_test_artifacts::pdf::with_text(text)
}

/// A one-page PDF whose page content stream is `content`, deflated when `deflate`, and whose
/// page has a MediaBox unless `media_box` is false.
fn page_with_content(content: &[u8], deflate: bool, media_box: bool) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let stream = if deflate {
        let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(content).unwrap();
        Stream::new(
            dictionary! {"Filter" => "FlateDecode"},
            encoder.finish().unwrap(),
        )
        .with_compression(false)
    } else {
        Stream::new(dictionary! {}, content.to_vec()).with_compression(false)
    };
    let content_id = doc.add_object(stream);
    let page_id = doc
        .add_object(dictionary! {"Type" => "Page", "Parent" => pages_id, "Contents" => content_id});
    let mut pages = dictionary! {"Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1};
    if media_box {
        pages.set("MediaBox", vec![0.into(), 0.into(), 595.into(), 842.into()]);
    }
    doc.objects.insert(pages_id, Object::Dictionary(pages));
    let catalog_id = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
    doc.trailer.set("Root", catalog_id);
    let mut bytes = Vec::new();
    doc.save_to(&mut bytes).unwrap();
    bytes
}

#[test]
fn the_sandbox_reads_good_pdfs_and_contains_hostile_ones() {
    let limits = PdfLimits::default();
    let text = pdf::extract_text(&simple_pdf("Quarterly revenue grew."), limits).unwrap();
    assert!(text.contains("Quarterly revenue grew."), "{text:?}");

    // Not a PDF, a truncated one, garbage after the header.
    for bad in [
        &b"plain words"[..],
        &simple_pdf("x")[..200],
        b"%PDF-1.7\n\x00\x01\x02 obj << /Type",
    ] {
        let err = pdf::extract_text(bad, limits).unwrap_err();
        assert!(matches!(err, PdfError::Unreadable(_)), "{err:?}");
        assert!(err.is_client_error());
    }

    // A page without a MediaBox makes the parser panic: the panic stays in the sandbox.
    let err = pdf::extract_text(&page_with_content(b"BT ET", false, false), limits).unwrap_err();
    assert!(
        matches!(&err, PdfError::Unreadable(m) if m.contains("panicked")),
        "{err:?}"
    );

    // Deep nesting in a content stream, for a recursive parser's stack: the run ends, the
    // host goes on.
    let nested = page_with_content(&vec![b'['; 500_000], false, true);
    let err = pdf::extract_text(&nested, limits).unwrap_err();
    assert!(err.is_client_error(), "{err:?}");

    // A decompression bomb (200 MiB of spaces in a 200 KiB stream) meets a 64 MiB memory cap.
    let small = PdfLimits {
        memory_bytes: 64 << 20,
        ..limits
    };
    let bomb = page_with_content(&vec![b' '; 200 << 20], true, true);
    assert!(bomb.len() < 2 << 20, "{}", bomb.len());
    let err = pdf::extract_text(&bomb, small).unwrap_err();
    assert_eq!(err, PdfError::TooMuchMemory(64));

    // The instruction budget and the output cap hold.
    let slow = PdfLimits {
        fuel: 100_000,
        ..limits
    };
    assert_eq!(
        pdf::extract_text(&simple_pdf("words"), slow).unwrap_err(),
        PdfError::TooSlow(0)
    );
    let short = PdfLimits {
        max_text_bytes: 8,
        ..limits
    };
    assert_eq!(
        pdf::extract_text(&simple_pdf("a sentence longer than eight bytes"), short).unwrap_err(),
        PdfError::TooLong(8)
    );

    // And a good PDF still reads after all that.
    assert!(
        pdf::extract_text(&simple_pdf("Still fine."), limits)
            .unwrap()
            .contains("Still fine.")
    );
}

#[test]
fn encrypted_pdfs_read_only_when_they_open_without_a_password() {
    let limits = PdfLimits::default();
    let locked =
        atrium_test_artifacts::pdf::encrypted("Board minutes, strictly private.", "user secret");
    assert!(locked.starts_with(b"%PDF-"));
    let err = pdf::extract_text(&locked, limits).unwrap_err();
    assert!(matches!(err, PdfError::Encrypted(_)), "{err:?}");
    assert!(err.is_client_error());
    assert!(err.to_string().contains("encrypted"), "{err}");

    // Encrypted with an empty user password (only an owner password restricting printing or
    // copying): every reader opens it without asking, and so does this one.
    let open = atrium_test_artifacts::pdf::encrypted("Opening hours are nine to five.", "");
    assert!(Document::load_mem(&open).unwrap().was_encrypted());
    let text = pdf::extract_text(&open, limits).unwrap();
    assert!(text.contains("Opening hours are nine to five."), "{text:?}");
}

/// Rows in a collection's LanceDB table, read by a connection of its own.
async fn table_rows(dir: &std::path::Path, collection_id: &str) -> usize {
    let db = lancedb::connect(dir.join("rag").to_str().unwrap())
        .execute()
        .await
        .unwrap();
    let table = db.open_table(collection_id).execute().await.unwrap();
    table.count_rows(None).await.unwrap()
}

#[tokio::test]
async fn a_write_that_fails_after_the_chunks_are_appended_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_store, retrieval, org) = open(dir.path(), 10_000).await;
    let (collection, _) = retrieval
        .create_collection(&TenantKey::new(&org, "t"), "c")
        .await
        .unwrap();
    let kept = retrieval
        .add_document(
            &TenantKey::new(&org, "t"),
            "c",
            "Kept",
            text("kept", 1),
            "text",
        )
        .await
        .unwrap();
    let rows_before = table_rows(dir.path(), &collection.id).await;
    assert_eq!(rows_before, usize::try_from(kept.document.chunks).unwrap());

    // The database refuses to mark any document indexed: the failure comes after the chunks
    // were appended to the table, the last step of a write.
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("atrium.db").display()
    ))
    .await
    .unwrap();
    sqlx::query(
        "CREATE TRIGGER refuse_indexed BEFORE UPDATE OF status ON rag_documents \
         BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
    )
    .execute(&db)
    .await
    .unwrap();
    let failed = retrieval
        .add_document(
            &TenantKey::new(&org, "t"),
            "c",
            "Doomed",
            text("wombat", 2),
            "text",
        )
        .await
        .expect_err("the last step fails");
    let message = failed.to_string();
    assert!(
        message.contains("marking the document indexed") && message.contains("injected failure"),
        "the error names the step: {message}"
    );

    // Nothing of it is left: no row in any state, no chunk, no match.
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM rag_documents")
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(rows, 1, "only the kept document's row");
    assert_eq!(table_rows(dir.path(), &collection.id).await, rows_before);
    let listed = retrieval
        .documents(&TenantKey::new(&org, "t"), "c")
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    let found = retrieval
        .query(&TenantKey::new(&org, "t"), "c", "wombat", 5)
        .await
        .unwrap();
    assert!(
        found.matches.iter().all(|m| m.title == "Kept"),
        "{:?}",
        found.matches
    );

    // Once the database accepts writes again, the same document goes in whole.
    sqlx::query("DROP TRIGGER refuse_indexed")
        .execute(&db)
        .await
        .unwrap();
    let added = retrieval
        .add_document(
            &TenantKey::new(&org, "t"),
            "c",
            "Doomed",
            text("wombat", 2),
            "text",
        )
        .await
        .unwrap();
    assert_eq!(
        table_rows(dir.path(), &collection.id).await,
        rows_before + usize::try_from(added.document.chunks).unwrap()
    );
    let found = retrieval
        .query(&TenantKey::new(&org, "t"), "c", "wombat", 1)
        .await
        .unwrap();
    assert_eq!(found.matches[0].document_id, added.document.id);
}

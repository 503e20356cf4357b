//! `kill -9` of `atrium serve` in the middle of work, then a restart on the same data: what was
//! acknowledged is there, and nothing half-written is visible.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::serve::http;
use crate::{Serve, command};

/// The JSON body of a raw HTTP response, if it has one.
fn body(response: &str) -> Option<Value> {
    serde_json::from_str(response.split_once("\r\n\r\n")?.1).ok()
}

/// A document whose every chunk holds `marker`: six paragraphs of filler around it.
fn document(marker: &str) -> String {
    let paragraph = format!(
        "{marker} The quarterly review of the supply contracts covers delivery times, penalties \
         for late shipments, the warehouse audit and the renewal terms agreed with each carrier. \
         Every figure in this section was checked against the ledger before it was written down. {marker}"
    );
    let text = std::iter::repeat_n(paragraph, 6)
        .collect::<Vec<_>>()
        .join("\n\n");
    serde_json::json!({"title": marker, "text": text}).to_string()
}

fn serve(dir: &std::path::Path, data: &str) -> Serve {
    let mut command = command(dir, &["serve", "--addr", "127.0.0.1:0", "--data-dir", data]);
    command.env("ATRIUM_EMBEDDER", "atrium-local-lexical");
    Serve::spawn(command)
}

#[test]
fn a_kill_during_ingestion_leaves_every_document_whole_or_absent() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let key = crate::create_key(dir.path(), data);
    let mut host = serve(dir.path(), data);
    let created = http(&host.addr, "POST", "/v1/rag/crash", Some(&key), "");
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");

    let mut acknowledged: Vec<(String, u64)> = Vec::new();
    let mut attempted: Vec<String> = Vec::new();
    for round in 0..3u64 {
        // Four writers add documents until the host dies under them.
        let acked = Arc::new(Mutex::new(Vec::new()));
        let tried = Arc::new(Mutex::new(Vec::new()));
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let (addr, key) = (host.addr.clone(), key.clone());
                let (acked, tried) = (acked.clone(), tried.clone());
                std::thread::spawn(move || {
                    for n in 0.. {
                        let marker = format!("mark{round}x{w}x{n}");
                        tried.lock().unwrap().push(marker.clone());
                        let sent = std::panic::catch_unwind(|| {
                            http(
                                &addr,
                                "POST",
                                "/v1/rag/crash/documents",
                                Some(&key),
                                &document(&marker),
                            )
                        });
                        let Ok(response) = sent else { return };
                        if !response.starts_with("HTTP/1.1 201") {
                            return;
                        }
                        let chunks = body(&response).and_then(|b| b["chunks"].as_u64()).unwrap();
                        acked.lock().unwrap().push((marker, chunks));
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300 + 250 * round));
        drop(host); // SIGKILL: the process gets no chance to finish anything.
        for writer in writers {
            let _ = writer.join();
        }
        acknowledged.extend(acked.lock().unwrap().drain(..));
        attempted.extend(tried.lock().unwrap().drain(..));
        assert!(
            !acknowledged.is_empty(),
            "round {round}: nothing was written"
        );
        host = serve(dir.path(), data);

        eprintln!(
            "round {round}: {} documents acknowledged, {} attempted",
            acknowledged.len(),
            attempted.len()
        );
        // Every document listed is indexed, and every acknowledged one is listed whole.
        let listed = http(&host.addr, "GET", "/v1/rag/crash/documents", Some(&key), "");
        let listed = body(&listed).unwrap();
        let listed = listed["data"].as_array().unwrap();
        for document in listed {
            assert_eq!(document["status"], "indexed", "{document}");
        }
        for (marker, chunks) in &acknowledged {
            let entry = listed
                .iter()
                .find(|d| d["title"] == marker.as_str())
                .unwrap_or_else(|| panic!("round {round}: acknowledged {marker} is gone"));
            assert_eq!(entry["chunks"].as_u64(), Some(*chunks), "{entry}");
        }
        // A document is found whole or not at all: every chunk of a listed one, none of one
        // that is not listed (it died half-written and was cleared at the restart).
        for marker in attempted.iter().rev().take(12) {
            let query = serde_json::json!({"query": marker, "top_k": 50}).to_string();
            let found = http(
                &host.addr,
                "POST",
                "/v1/rag/crash/query",
                Some(&key),
                &query,
            );
            let found = body(&found).unwrap();
            let hits = found["matches"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["text"].as_str().unwrap().contains(marker.as_str()))
                .count() as u64;
            match listed.iter().find(|d| d["title"] == marker.as_str()) {
                Some(entry) => assert_eq!(Some(hits), entry["chunks"].as_u64(), "{marker}"),
                None => assert_eq!(
                    hits, 0,
                    "{marker} is not listed but {hits} chunks are found"
                ),
            }
        }
    }
    let (status, _) = host.stop();
    assert_eq!(status.code(), Some(0));
}

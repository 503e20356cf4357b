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

/// Kills `host` with SIGKILL after `wait` (the process gets no chance to finish anything), then
/// waits for the writers, which stop when their requests are cut off.
fn kill_after(host: Serve, wait: Duration, writers: Vec<std::thread::JoinHandle<()>>) {
    std::thread::sleep(wait);
    drop(host);
    for writer in writers {
        writer
            .join()
            .expect("a writer met an answer that was neither a success nor cut off");
    }
}

/// `atrium developers create` (allowed to publish): the account's token.
fn developer(dir: &std::path::Path, data: &str, login: &str) -> String {
    let email = format!("{login}@example.com");
    let created = command(
        dir,
        &[
            "developers",
            "create",
            "--email",
            &email,
            "--login",
            login,
            "--publish-allowed",
            "--data-dir",
            data,
            "--create",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(
        created.status.code(),
        Some(0),
        "{}",
        crate::stderr(&created)
    );
    crate::stdout(&created).lines().last().unwrap().to_owned()
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
        kill_after(host, Duration::from_millis(300 + 250 * round), writers);
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
        // (every page of the list, following its cursor)
        let mut listed: Vec<Value> = Vec::new();
        let mut path = "/v1/rag/crash/documents?limit=200".to_owned();
        loop {
            let page = body(&http(&host.addr, "GET", &path, Some(&key), "")).unwrap();
            listed.extend(page["data"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(cursor) => {
                    path = format!("/v1/rag/crash/documents?limit=200&cursor={cursor}");
                }
                None => break,
            }
        }
        for document in &listed {
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

/// `POST path` with a multipart body of (name, file name, bytes) parts and a bearer token.
fn post_multipart(addr: &str, path: &str, token: &str, parts: &[(&str, &str, &[u8])]) -> String {
    use std::io::{Read, Write};
    let boundary = "atrium-crash-test-boundary";
    let mut body = Vec::new();
    for (name, file, bytes) in parts {
        write!(
            body,
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
        )
        .unwrap();
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    write!(body, "--{boundary}--\r\n").unwrap();
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(&body).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// The files under `dir`, recursively.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                pending.push(entry.path());
            } else {
                files.push(entry.path());
            }
        }
    }
    files
}

/// The minimal app's component with a custom section naming `n`: a component of its own.
fn component(minimal: &[u8], n: u64) -> Vec<u8> {
    let mut bytes = minimal.to_vec();
    let name = b"crash-test";
    let payload = format!("{n:08}");
    bytes.push(0);
    bytes.push(u8::try_from(1 + name.len() + payload.len()).unwrap());
    bytes.push(u8::try_from(name.len()).unwrap());
    bytes.extend_from_slice(name);
    bytes.extend_from_slice(payload.as_bytes());
    bytes
}

fn version_manifest(n: u64) -> String {
    format!(
        "apiVersion: platform/v2\napp_id: crashy\nversion: 1.0.{n}\nname: Crashy\nruntime:\n  image: ghcr.io/acme/crashy:1.0.{n}\n"
    )
}

#[test]
fn a_kill_during_version_registrations_leaves_no_version_without_its_whole_component() {
    use sha2::{Digest, Sha256};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_str = data.to_str().unwrap();
    let token = developer(dir.path(), data_str, "ada");
    // Each version carries a component of its own (the minimal app with a version-specific
    // custom section), so every registration writes a new blob.
    let minimal = Arc::new(std::fs::read(atrium_test_artifacts::MINIMAL).unwrap());
    let mut host = serve(dir.path(), data_str);
    // One registration first: the component is compiled once, then loaded from the cache.
    let first = post_multipart(
        &host.addr,
        "/api/dev/apps/crashy/versions",
        &token,
        &[
            (
                "manifest",
                "atrium.app.yaml",
                version_manifest(0).as_bytes(),
            ),
            ("component", "app.wasm", &component(&minimal, 0)),
        ],
    );
    assert!(first.starts_with("HTTP/1.1 201"), "{first}");
    let mut acknowledged: Vec<String> = vec!["1.0.0".to_owned()];
    let mut next = 1u64;
    for round in 0..3u64 {
        let acked = Arc::new(Mutex::new(Vec::new()));
        let start = next;
        next += 1_000;
        let writers: Vec<_> = (0..2u64)
            .map(|w| {
                let (addr, token, acked) = (host.addr.clone(), token.clone(), acked.clone());
                let minimal = minimal.clone();
                std::thread::spawn(move || {
                    for n in (start + w..).step_by(2) {
                        let (text, bytes) = (version_manifest(n), component(&minimal, n));
                        let sent = std::panic::catch_unwind(|| {
                            post_multipart(
                                &addr,
                                "/api/dev/apps/crashy/versions",
                                &token,
                                &[
                                    ("manifest", "atrium.app.yaml", text.as_bytes()),
                                    ("component", "app.wasm", &bytes),
                                ],
                            )
                        });
                        let Ok(response) = sent else { return };
                        if !response.starts_with("HTTP/1.1 201") {
                            // Cut off by the kill: no answer, or none complete.
                            assert!(!response.contains("\r\n\r\n{"), "{response}");
                            return;
                        }
                        acked.lock().unwrap().push(format!("1.0.{n}"));
                    }
                })
            })
            .collect();
        kill_after(host, Duration::from_millis(1_500 + 400 * round), writers);
        acknowledged.extend(acked.lock().unwrap().drain(..));
        assert!(
            !acknowledged.is_empty(),
            "round {round}: nothing was registered"
        );
        host = serve(dir.path(), data_str);

        let answer =
            crate::serve::http(&host.addr, "GET", "/api/dev/apps/crashy", Some(&token), "");
        let app = body(&answer).unwrap_or_else(|| panic!("{answer}"));
        let versions = app["versions"].as_array().unwrap();
        for version in &acknowledged {
            assert!(
                versions.iter().any(|v| v["version"] == version.as_str()),
                "round {round}: acknowledged version {version} is gone"
            );
        }
        // No stored version refers to a missing or partial component.
        let blobs = files_under(&data.join("artifacts"));
        for version in versions {
            let digest = version["component_digest"].as_str().unwrap();
            let hex = digest.trim_start_matches("sha256:");
            let blob = blobs
                .iter()
                .find(|b| b.ends_with(hex))
                .unwrap_or_else(|| panic!("{} refers to a missing blob", version["version"]));
            let bytes = std::fs::read(blob).unwrap();
            let actual: String = Sha256::digest(&bytes)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            assert_eq!(
                actual, hex,
                "{} has a partial component",
                version["version"]
            );
        }
        eprintln!(
            "round {round}: {} versions acknowledged, {} stored, {} blobs",
            acknowledged.len(),
            versions.len(),
            blobs.len()
        );
    }
    let (status, _) = host.stop();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn a_kill_during_activations_leaves_each_install_whole_or_absent() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let key = crate::create_key(dir.path(), data);
    let dev = developer(dir.path(), data, "bo");
    let mut host = serve(dir.path(), data);
    // An app with a required setting, registered and promoted.
    let manifest = "apiVersion: platform/v2\napp_id: desk\nversion: 1.0.0\nname: Desk\nruntime:\n  image: ghcr.io/acme/desk:1.0.0\ninstall_settings:\n  - {id: region, type: string, label: Region, required: true}\n  - {id: limit, type: number, label: Limit, default: 10}\n";
    let registered = post_multipart(
        &host.addr,
        "/api/dev/apps/desk/versions",
        &dev,
        &[("manifest", "atrium.app.yaml", manifest.as_bytes())],
    );
    assert!(registered.starts_with("HTTP/1.1 201"), "{registered}");
    let promoted = http(
        &host.addr,
        "POST",
        "/api/dev/apps/desk/versions/1.0.0/promote",
        Some(&dev),
        "",
    );
    assert!(promoted.starts_with("HTTP/1.1 200"), "{promoted}");

    let mut acknowledged: Vec<(String, String)> = Vec::new();
    let mut tried: Vec<(String, String)> = Vec::new();
    for round in 0..3u64 {
        let acked = Arc::new(Mutex::new(Vec::new()));
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let writers: Vec<_> = (0..3u64)
            .map(|w| {
                let (addr, key) = (host.addr.clone(), key.clone());
                let (acked, attempts) = (acked.clone(), attempts.clone());
                std::thread::spawn(move || {
                    for n in 0.. {
                        let tenant = format!("t{round}x{w}x{n}");
                        let sent = std::panic::catch_unwind(|| {
                            let issued = http(
                                &addr,
                                "POST",
                                &format!("/api/tenants/{tenant}/tokens"),
                                Some(&key),
                                r#"{"role": "admin"}"#,
                            );
                            let admin = body(&issued)?["token"].as_str()?.to_owned();
                            let region = format!("region-of-{tenant}");
                            attempts
                                .lock()
                                .unwrap()
                                .push((tenant.clone(), admin.clone()));
                            let activated = http(
                                &addr,
                                "POST",
                                "/api/installs/desk/activate",
                                Some(&admin),
                                &serde_json::json!({"settings": {"region": region}}).to_string(),
                            );
                            Some((admin, activated))
                        });
                        let Ok(Some((admin, activated))) = sent else {
                            return;
                        };
                        if !activated.starts_with("HTTP/1.1 201") {
                            assert!(!activated.contains("\r\n\r\n{"), "{activated}");
                            return;
                        }
                        acked.lock().unwrap().push((tenant, admin));
                    }
                })
            })
            .collect();
        kill_after(host, Duration::from_millis(400 + 300 * round), writers);
        acknowledged.extend(acked.lock().unwrap().drain(..));
        tried.extend(attempts.lock().unwrap().drain(..));
        assert!(
            !acknowledged.is_empty(),
            "round {round}: nothing was activated"
        );
        host = serve(dir.path(), data);
        // Every tenant that was told its activation succeeded has it, with its settings; every
        // other one has it whole or not at all.
        for (tenant, admin) in &tried {
            let answer = http(&host.addr, "GET", "/api/installs/desk", Some(admin), "");
            let acked = acknowledged.iter().any(|(t, _)| t == tenant);
            if answer.starts_with("HTTP/1.1 404") {
                assert!(
                    !acked,
                    "round {round}: {tenant}'s acknowledged install is gone"
                );
                continue;
            }
            assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
            let install = body(&answer).unwrap();
            assert_eq!(install["status"], "active", "{tenant}: {install}");
            assert_eq!(
                install["settings"]["region"],
                format!("region-of-{tenant}"),
                "{install}"
            );
            assert_eq!(install["settings"]["limit"], 10, "{install}");
        }
        eprintln!(
            "round {round}: {} activations acknowledged of {} tried",
            acknowledged.len(),
            tried.len()
        );
    }
    let (status, _) = host.stop();
    assert_eq!(status.code(), Some(0));
}

/// A fake Ollama (`POST /api/chat`) that answers every chat after `delay`, counting them: its
/// base URL and the fake.
pub(crate) fn fake_ollama(delay: Duration) -> (String, atrium_fake_llm::Upstream) {
    let llm = atrium_fake_llm::FakeLlm::start_in_thread();
    let ollama = llm.upstream("ollama");
    ollama.delay(delay);
    (llm.base_url("ollama"), ollama)
}

#[test]
fn a_batch_cut_by_kills_resumes_and_finishes_every_item_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let key = crate::create_key(dir.path(), data);
    let (ollama, fake) = fake_ollama(Duration::from_millis(80));
    let start = || {
        let mut command = command(
            dir.path(),
            &["serve", "--addr", "127.0.0.1:0", "--data-dir", data],
        );
        command
            .env("ATRIUM_EMBEDDER", "atrium-local-lexical")
            .env("ATRIUM_OLLAMA_BASE_URL", &ollama);
        Serve::spawn(command)
    };
    let mut host = start();
    let items = 120;
    let requests: Vec<Value> = (0..items)
        .map(|i| {
            serde_json::json!({"custom_id": format!("q{i}"), "provider": "ollama",
                "messages": [{"role": "user", "content": format!("question {i}")}]})
        })
        .collect();
    let created = http(
        &host.addr,
        "POST",
        "/v1/batches",
        Some(&key),
        &serde_json::json!({ "requests": requests }).to_string(),
    );
    assert!(created.starts_with("HTTP/1.1 202"), "{created}");
    let id = body(&created).unwrap()["id"].as_str().unwrap().to_owned();
    // Two kills while the items run, each followed by a restart.
    for round in 0..2u64 {
        std::thread::sleep(Duration::from_millis(400 + 200 * round));
        drop(host); // SIGKILL
        host = start();
    }
    let path = format!("/v1/batches/{id}");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let batch = loop {
        let batch = body(&http(&host.addr, "GET", &path, Some(&key), "")).unwrap();
        if batch["status"] == "completed" {
            break batch;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the batch never finished: {batch}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(batch["request_counts"]["completed"], items, "{batch}");
    let results = batch["results"].as_array().unwrap();
    assert_eq!(results.len(), items);
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["custom_id"], format!("q{i}"), "{result}");
        assert_eq!(result["status"], "completed", "{result}");
        assert_eq!(
            result["response"]["choices"][0]["message"]["content"], "ollama says hi",
            "{result}"
        );
    }
    // Items cut off by a kill ran again; at most the eight in flight each time.
    let upstream = fake.calls();
    eprintln!("{items} items, {upstream} upstream calls");
    assert!(
        (items..=items + 16).contains(&upstream),
        "{upstream} upstream calls"
    );
    let (status, _) = host.stop();
    assert_eq!(status.code(), Some(0));
}

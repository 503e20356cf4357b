//! `atrium serve`, as a process: it listens, answers with the store's keys, and stops cleanly
//! on SIGTERM.

use std::io::{Read, Write};

use crate::{Serve, atrium, command, stderr};

pub(crate) fn http(addr: &str, method: &str, path: &str, key: Option<&str>, body: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let auth = key
        .map(|k| format!("Authorization: Bearer {k}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

fn http_get(addr: &str, path: &str, key: Option<&str>) -> String {
    http(addr, "GET", path, key, "")
}

#[test]
fn serves_the_api_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let key = crate::create_key(dir.path(), data);

    let host = Serve::spawn(command(
        dir.path(),
        &["serve", "--addr", "127.0.0.1:0", "--data-dir", data],
    ));
    let addr = &host.addr;

    let ok = http_get(addr, "/v1/usage", Some(&key));
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.contains(r#""totals""#), "{ok}");
    let denied = http_get(addr, "/v1/usage", None);
    assert!(denied.starts_with("HTTP/1.1 401"), "{denied}");
    // The root says what the host serves; an unknown path is a JSON 404 pointing there.
    let root = http_get(addr, "/", None);
    assert!(
        root.starts_with("HTTP/1.1 200")
            && root.contains(r#""name":"atrium""#)
            && root.contains(r#""/v1""#),
        "{root}"
    );
    let nowhere = http_get(addr, "/nowhere", None);
    assert!(
        nowhere.starts_with("HTTP/1.1 404") && nowhere.contains("GET / lists"),
        "{nowhere}"
    );

    // Retrieval is on, with its data under the data directory.
    let created = http(addr, "POST", "/v1/rag/notes", Some(&key), "");
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    let added = http(
        addr,
        "POST",
        "/v1/rag/notes/documents",
        Some(&key),
        r#"{"title": "Plants", "text": "Water the ficus on Mondays."}"#,
    );
    assert!(added.starts_with("HTTP/1.1 201"), "{added}");
    let found = http(
        addr,
        "POST",
        "/v1/rag/notes/query",
        Some(&key),
        r#"{"query": "ficus"}"#,
    );
    assert!(found.contains("Water the ficus"), "{found}");
    assert!(std::path::Path::new(data).join("rag").is_dir());

    let (status, rest) = host.stop();
    assert_eq!(status.code(), Some(0));
    assert!(rest.iter().any(|l| l.contains("shutting down")), "{rest:?}");
    // At the default level: one line per request, and nothing of the dependencies' internals
    // (lance logs every query plan at info, and warned about its scoring columns).
    assert!(
        rest.iter()
            .any(|l| l.contains("/v1/rag/notes/query") && l.contains("status=200")),
        "{rest:?}"
    );
    // Request lines carry the request target, not the error module's.
    assert!(
        rest.iter()
            .filter(|l| l.contains("status=200"))
            .all(|l| l.contains("atrium::request") && !l.contains("atrium_server::error")),
        "{rest:?}"
    );
    assert!(
        rest.iter()
            .any(|l| l.contains("/v1/usage") && l.contains("status=401")),
        "{rest:?}"
    );
    assert!(
        !rest.iter().any(|l| l.contains("plan_run")
            || l.contains("Deprecation")
            || l.contains(" lance")
            || l.contains("lance::")
            || l.contains("lance_")
            || l.contains("lancedb")),
        "{rest:?}"
    );
}

#[test]
fn a_bad_address_exits_1_and_a_taken_port_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let bad = atrium(
        dir.path(),
        &["serve", "--addr", "localhost-ish", "--data-dir", data],
    );
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("is not HOST:PORT"));

    let config = dir.path().join("atrium.toml");
    std::fs::write(&config, "[providers.azure]\napi_key = \"x\"\n").unwrap();
    let bad_config = atrium(
        dir.path(),
        &[
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--data-dir",
            data,
        ],
    );
    assert_eq!(bad_config.status.code(), Some(1));
    assert!(
        stderr(&bad_config).contains("`azure` is not one of"),
        "{}",
        stderr(&bad_config)
    );

    // A limit that is not a number names its variable (docs/api.md, "Limits and overload").
    let bad_limit = command(dir.path(), &["serve", "--data-dir", data])
        .env("ATRIUM_TENANT_RATE", "lots")
        .output()
        .unwrap();
    assert_eq!(bad_limit.status.code(), Some(1));
    assert!(
        stderr(&bad_limit).contains("ATRIUM_TENANT_RATE must be a number"),
        "{}",
        stderr(&bad_limit)
    );
    let bad_provider_limit = command(dir.path(), &["serve", "--data-dir", data])
        .env("ATRIUM_MISTRAL_MAX_IN_FLIGHT", "0")
        .output()
        .unwrap();
    assert_eq!(bad_provider_limit.status.code(), Some(1));
    assert!(
        stderr(&bad_provider_limit)
            .contains("ATRIUM_MISTRAL_MAX_IN_FLIGHT must be a whole number above 0, not `0`"),
        "{}",
        stderr(&bad_provider_limit)
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let busy = atrium(dir.path(), &["serve", "--addr", &addr, "--data-dir", data]);
    assert_eq!(busy.status.code(), Some(2));
    assert!(
        stderr(&busy).contains(&format!("cannot listen on {addr}")),
        "{}",
        stderr(&busy)
    );
}

#[test]
fn sigterm_answers_the_requests_in_flight_then_stops_the_jobs_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let key = crate::create_key(dir.path(), data);
    let (ollama, fake) = crate::crash::fake_ollama(std::time::Duration::from_millis(1500));
    let start = || {
        let mut command = command(
            dir.path(),
            &["serve", "--addr", "127.0.0.1:0", "--data-dir", data],
        );
        command.env("ATRIUM_OLLAMA_BASE_URL", &ollama);
        Serve::spawn(command)
    };
    let host = start();
    // A chat that takes 1.5 s upstream is in flight when SIGTERM comes.
    let (addr, chat_key) = (host.addr.clone(), key.clone());
    let chat = std::thread::spawn(move || {
        http(
            &addr,
            "POST",
            "/v1/chat/completions",
            Some(&chat_key),
            r#"{"provider": "ollama", "messages": [{"role": "user", "content": "hello"}]}"#,
        )
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while fake.calls() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the chat never reached the upstream"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (status, log) = host.stop();
    assert_eq!(status.code(), Some(0), "{log:#?}");
    let answered = chat.join().unwrap();
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(answered.contains("ollama says hi"), "{answered}");

    // Then the jobs, each after the one started after it; the metering writer last.
    let drained = log
        .iter()
        .position(|l| l.contains("the requests in flight are answered"))
        .unwrap_or_else(|| panic!("{log:#?}"));
    let stopped: Vec<&str> = log
        .iter()
        .skip(drained)
        .filter(|l| l.contains("job stopped"))
        .filter_map(|l| l.split("job=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|name| name.trim_matches('"'))
        .collect();
    assert_eq!(
        stopped,
        [
            "upkeep",
            "containers",
            "heartbeats",
            "room-listener",
            "schedules",
            "batches",
            "queue-delay",
            "changes",
            "metering"
        ],
        "{log:#?}"
    );
    // The usage of the answered chat was stored before the host exited.
    let host = start();
    let usage = http_get(&host.addr, "/v1/usage", Some(&key));
    assert!(usage.contains(r#""calls":1"#), "{usage}");
    let (status, _) = host.stop();
    assert_eq!(status.code(), Some(0));
}

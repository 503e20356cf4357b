//! `atrium serve` with its retrieval store on S3 (moto) taken down and brought back: the host
//! starts without it, retrieval answers 503 naming the cause while the rest of the host
//! serves, and retrieval recovers by itself, at start and during a run.

use std::time::{Duration, Instant};

use atrium_test_artifacts::s3::S3Server;

use crate::serve::http;
use crate::{Serve, command};

const BUCKET: &str = "atrium-outage";
const DOWN_LOG: &str = "retrieval answers 503 until it is back";
const UP_LOG: &str = "the retrieval store is reachable again";

fn status(response: &str) -> &str {
    response.get(9..12).unwrap_or(response)
}

/// Asks until the answer has status `want`, for up to `timeout`; the last answer.
fn until_status(timeout: Duration, want: &str, ask: impl Fn() -> String) -> String {
    let deadline = Instant::now() + timeout;
    loop {
        let answer = ask();
        if status(&answer) == want || Instant::now() >= deadline {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn retrieval_waits_for_its_store_while_the_host_serves() {
    let mut s3 = S3Server::start(BUCKET);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let key = crate::create_key(dir.path(), data);
    let key = Some(key.as_str());

    // The store is down when the host starts.
    s3.stop();
    let mut serve = command(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--data-dir",
            data,
            "--no-demo",
        ],
    );
    serve
        .env("ATRIUM_RAG_URI", format!("s3://{BUCKET}/rag"))
        .env("ATRIUM_RAG_STORAGE_AWS_ENDPOINT", s3.endpoint())
        .env("ATRIUM_RAG_STORAGE_AWS_REGION", "us-east-1")
        .env("ATRIUM_RAG_STORAGE_AWS_ACCESS_KEY_ID", "test")
        .env("ATRIUM_RAG_STORAGE_AWS_SECRET_ACCESS_KEY", "test")
        .env("ATRIUM_RAG_STORAGE_ALLOW_HTTP", "true");
    let host = Serve::spawn(serve);
    let addr = host.addr.as_str();
    let down_at_start = host.startup.iter().filter(|l| l.contains(DOWN_LOG)).count();
    assert!(
        down_at_start == 1 || host.wait_for_log(DOWN_LOG, 1, Duration::from_secs(10)),
        "the host did not log the outage: {:?}",
        host.startup
    );

    // The rest of the host serves; retrieval answers 503, naming the cause, at once.
    let usage = http(addr, "GET", "/v1/usage", key, "");
    assert_eq!(status(&usage), "200", "{usage}");
    let started = Instant::now();
    let down = http(addr, "POST", "/v1/rag/notes", key, "");
    assert_eq!(status(&down), "503", "{down}");
    assert!(down.contains(r#""code":"retrieval_unavailable""#), "{down}");
    assert!(
        down.contains("cannot be reached: connection refused;"),
        "{down}"
    );
    assert!(down.contains("retries every 2 s"), "{down}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let query = http(
        addr,
        "POST",
        "/v1/rag/notes/query",
        key,
        r#"{"query": "ficus"}"#,
    );
    assert_eq!(status(&query), "503", "{query}");
    // Listing reads the host's database only.
    let listed = http(addr, "GET", "/v1/rag", key, "");
    assert_eq!(status(&listed), "200", "{listed}");

    // Back: the host notices by itself, without a call.
    s3.start_again();
    assert!(
        host.wait_for_log(UP_LOG, 1, Duration::from_secs(20)),
        "the host did not notice the store is back"
    );
    let created = http(addr, "POST", "/v1/rag/notes", key, "");
    assert_eq!(status(&created), "201", "{created}");
    let added = http(
        addr,
        "POST",
        "/v1/rag/notes/documents",
        key,
        r#"{"title": "Plants", "text": "Water the ficus on Mondays."}"#,
    );
    assert_eq!(status(&added), "201", "{added}");
    let ask = || {
        http(
            addr,
            "POST",
            "/v1/rag/notes/query",
            key,
            r#"{"query": "ficus"}"#,
        )
    };
    let found = ask();
    assert!(found.contains("Water the ficus"), "{found}");

    // An outage while running: calls fail with 503, the listing from the database still
    // answers, and the document is there when the store is back.
    s3.stop();
    let down = until_status(Duration::from_secs(30), "503", ask);
    assert_eq!(status(&down), "503", "{down}");
    assert!(down.contains(r#""code":"retrieval_unavailable""#), "{down}");
    let listed = http(addr, "GET", "/v1/rag", key, "");
    assert_eq!(status(&listed), "200", "{listed}");
    assert!(listed.contains(r#""notes""#), "{listed}");
    s3.start_again();
    assert!(
        host.wait_for_log(UP_LOG, 2, Duration::from_secs(20)),
        "the host did not notice the store is back"
    );
    let found = ask();
    assert_eq!(status(&found), "200", "{found}");
    assert!(found.contains("Water the ficus"), "{found}");

    let (exit, log) = host.stop();
    assert_eq!(exit.code(), Some(0));
    // Each outage is logged once, where it starts.
    assert_eq!(
        down_at_start + log.iter().filter(|l| l.contains(DOWN_LOG)).count(),
        2,
        "{log:?}"
    );
}

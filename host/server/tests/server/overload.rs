//! Overload over HTTP against a running host: per-key and per-tenant rate limits answer 429
//! with `Retry-After` and keep to their own credential, tenant and organization; past the
//! in-flight cap a request is answered 503 at once (on a new connection by the listener, before
//! the router), and the host recovers when load drops.

use std::time::Duration;

use atrium_server::overload::{Limits, Rate};
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::host::{Body, Host};
use crate::{state, stores, unique};

/// GET /v1/models with a key and a tenant: the status, `Retry-After` and the body.
async fn models(
    base: &str,
    key: &str,
    tenant: &str,
) -> (StatusCode, Option<String>, serde_json::Value) {
    let response = reqwest::Client::new()
        .get(format!("{base}/v1/models"))
        .bearer_auth(key)
        .header("x-service-tenant", tenant)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    (status, retry, response.json().await.unwrap())
}

#[tokio::test]
async fn rate_limits_answer_429_with_retry_after_per_key_and_per_tenant() {
    let (store, _dir) = stores().await.remove(0);
    let limits = Limits {
        per_key: Some(Rate {
            rate: 0.2,
            burst: 3.0,
        }),
        per_tenant: Some(Rate {
            rate: 0.2,
            burst: 5.0,
        }),
        ..Limits::default()
    };
    let host = Host::start(state(&store, vec![]).with_limits(limits)).await;
    let base = host.base();
    let acme = unique("acme");
    let first = store.create_key(&acme, "first").await.unwrap();
    let second = store.create_key(&acme, "second").await.unwrap();
    let other = store.create_key(&unique("other"), "ops").await.unwrap();

    // The key's burst, then 429 naming the key's limit, with a Retry-After of whole seconds.
    for _ in 0..3 {
        assert_eq!(models(base, &first.secret, "shop").await.0, StatusCode::OK);
    }
    let (status, retry, body) = models(base, &first.secret, "shop").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(body["error"]["type"], "requests");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("ATRIUM_KEY_RATE"), "{message}");
    let retry: u64 = retry.expect("Retry-After").parse().unwrap();
    assert!((1..=5).contains(&retry), "{retry}");

    // Another key of the same organization has its own budget, but the tenant's is shared:
    // two more requests for `shop`, then 429 naming the tenant.
    for _ in 0..2 {
        assert_eq!(models(base, &second.secret, "shop").await.0, StatusCode::OK);
    }
    let (status, retry, body) = models(base, &second.secret, "shop").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("tenant `shop`") && message.contains("ATRIUM_TENANT_RATE"),
        "{message}"
    );
    assert!(retry.is_some());

    // Another tenant of the organization, and the same tenant name in another organization,
    // are not held back.
    assert_eq!(
        models(base, &second.secret, "studio").await.0,
        StatusCode::OK
    );
    assert_eq!(models(base, &other.secret, "shop").await.0, StatusCode::OK);
    // A tenant token of `shop` meets the same tenant budget, spent by the keys above.
    let third = store.create_key(&acme, "third").await.unwrap();
    let (status, created) = host
        .post(
            "/api/tenants/shop/tokens",
            &third.secret,
            Body::Json(json!({"role": "user"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let shop_user = created["token"].as_str().unwrap();
    let (status, body) = host.get("/api/installs", shop_user).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("tenant `shop`"),
        "{body}"
    );

    // Requests that fail authentication spend nobody's budget, whatever tenant they name:
    // after ten of them for `lab`, a key of the organization still has all of `lab`'s.
    for _ in 0..10 {
        let (status, _, _) = models(base, "atr_unknown", "lab").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let fourth = store.create_key(&acme, "fourth").await.unwrap();
    for _ in 0..3 {
        assert_eq!(models(base, &fourth.secret, "lab").await.0, StatusCode::OK);
    }
    host.stop().await;
}

/// GET /v1/models every 20 ms until it answers `status` (at most 2 s).
async fn models_until(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    status: StatusCode,
) -> reqwest::Response {
    for _ in 0..100 {
        let response = client
            .get(format!("{base}/v1/models"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        if response.status() == status {
            return response;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("GET /v1/models never answered {status}");
}

/// Writes `request` on `stream` and reads one answer: its head and its `content-length` body.
async fn exchange(stream: &mut tokio::net::TcpStream, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "closed mid-head");
        answer.push(byte[0]);
    }
    let head = String::from_utf8(answer.clone()).unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map_or(0, |n| n.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).await.unwrap();
    answer.extend(body);
    String::from_utf8(answer).unwrap()
}

#[tokio::test]
async fn past_the_in_flight_cap_a_request_is_answered_503_at_once_and_the_host_recovers() {
    let (store, _dir) = stores().await.remove(0);
    let limits = Limits {
        max_in_flight: 1,
        ..Limits::default()
    };
    let host = Host::start(state(&store, vec![]).with_limits(limits)).await;
    let base = host.base().to_owned();
    let key = store.create_key(&unique("acme"), "ops").await.unwrap();

    // A connection opened before the overload, kept open.
    let addr = base.trim_start_matches("http://").to_owned();
    let models_request = format!(
        "GET /v1/models HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\n\r\n",
        key.secret
    );
    let mut kept = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let answer = exchange(&mut kept, &models_request).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    // One request held in flight: its body is announced and not yet sent.
    let mut held = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /v1/embeddings HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: 64\r\n\r\n{{",
        key.secret
    );
    held.write_all(head.as_bytes()).await.unwrap();
    // The held request is counted once the host has its head.
    let client = reqwest::Client::new();
    let shed = models_until(&client, &base, &key.secret, StatusCode::SERVICE_UNAVAILABLE).await;
    assert_eq!(shed.headers()["retry-after"], "1");
    let body: serde_json::Value = shed.json().await.unwrap();
    assert_eq!(body["error"]["code"], "overloaded");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requests are in flight"),
        "{body}"
    );
    // The health check is never shed.
    let health = client.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(health.status(), StatusCode::OK);

    // A new connection's request is refused as the connection is accepted, before the router:
    // the canned answer closes the connection. On a new connection the health check is
    // still answered.
    let mut fresh = tokio::net::TcpStream::connect(&addr).await.unwrap();
    fresh.write_all(models_request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    fresh.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    for part in [
        "connection: close\r\n",
        "retry-after: 1\r\n",
        r#""code":"overloaded""#,
        "requests are in flight (the limit is 1)",
    ] {
        assert!(answer.contains(part), "{part}: {answer}");
    }
    let mut fresh = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let answer = exchange(
        &mut fresh,
        &format!("GET /health HTTP/1.1\r\nhost: {addr}\r\n\r\n"),
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // On the connection opened before, the router sheds the request and keeps the connection.
    let answer = exchange(&mut kept, &models_request).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(!answer.contains("connection: close"), "{answer}");

    // The held request completes (a 400 for its body), and the host takes requests again.
    held.write_all(&[b' '; 63]).await.unwrap();
    let mut answer = vec![0u8; 12];
    held.read_exact(&mut answer).await.unwrap();
    assert!(answer.starts_with(b"HTTP/1.1 400"), "{answer:?}");
    drop(held);
    models_until(&client, &base, &key.secret, StatusCode::OK).await;
    let answer = exchange(&mut kept, &models_request).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    host.stop().await;
}

/// Writes `request` on a new connection from a thread of its own and reads the whole answer;
/// `written` hears when the bytes are out.
fn raw_exchange(
    addr: String,
    request: String,
    written: std::sync::mpsc::Sender<()>,
) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        written.send(()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    })
}

#[tokio::test]
async fn a_request_that_waited_unread_past_the_limit_is_shed_and_a_pipelined_one_is_not() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = crate::chat::start_fakes().await;
    fakes.upstream("ovh").slow();
    let limits = Limits {
        max_queue_delay: Duration::from_millis(100),
        ..Limits::default()
    };
    let gateway = crate::chat::gateway(&fakes);
    let host =
        Host::start(atrium_server::HostState::new(store.clone(), gateway).with_limits(limits))
            .await;
    let base = host.base().to_owned();
    let addr = base.trim_start_matches("http://").to_owned();
    let key = store.create_key(&unique("acme"), "ops").await.unwrap();
    assert_eq!(models(&base, &key.secret, "shop").await.0, StatusCode::OK);

    // The host runs on this test's only thread: while it sleeps, a request's bytes arrive and
    // wait unread for 300 ms, as they do in the socket buffers of a host whose cores are all busy.
    let models_request = format!(
        "GET /v1/models HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\nconnection: close\r\n\r\n",
        key.secret
    );
    let (written, out) = std::sync::mpsc::channel();
    let client = raw_exchange(addr.clone(), models_request.clone(), written);
    out.recv().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let answer = tokio::task::spawn_blocking(move || client.join().unwrap())
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1\r\n"), "{answer}");
    assert!(answer.contains(r#""code":"overloaded""#), "{answer}");
    assert!(
        answer.contains("before the host could read it (the limit is 100 ms)"),
        "{answer}"
    );
    // The next request, read at once, is served.
    assert_eq!(models(&base, &key.secret, "shop").await.0, StatusCode::OK);

    // Two requests pipelined on one connection: the second waits 400 ms behind the first (the
    // upstream is slow), which is not the host's queue: both are answered.
    let chat = r#"{"messages": [{"role": "user", "content": "hi"}]}"#;
    let pipelined = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\nauthorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{chat}{models_request}",
        key.secret,
        chat.len()
    );
    let (written, out) = std::sync::mpsc::channel();
    let client = raw_exchange(addr, pipelined, written);
    out.recv().unwrap();
    let answer = tokio::task::spawn_blocking(move || client.join().unwrap())
        .await
        .unwrap();
    assert_eq!(answer.matches("HTTP/1.1 200").count(), 2, "{answer}");
    assert!(answer.contains("ovh says hi"), "{answer}");
    assert_eq!(fakes.calls("ovh"), 1);
    host.stop().await;
}

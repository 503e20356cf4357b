//! Capabilities: nothing survives a call, and a guest gets no filesystem, no sockets, no host
//! environment, and outbound HTTP only to its egress hosts.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

#[tokio::test]
async fn no_state_survives_from_one_call_to_the_next() {
    let p = platform();
    let app = probe();
    assert_eq!(app.call_tool(&inv(&p), "counter", "{}").await.unwrap(), "1");
    assert_eq!(app.call_tool(&inv(&p), "counter", "{}").await.unwrap(), "1");
    let other_tenant = atrium_runtime::Invocation::new("tenant-b", p.clone());
    assert_eq!(
        app.call_tool(&other_tenant, "counter", "{}").await.unwrap(),
        "1"
    );
}

#[tokio::test]
async fn the_environment_is_only_runtime_env() {
    let out = json(
        &probe()
            .call_tool(&inv(&platform()), "env", "{}")
            .await
            .unwrap(),
    );
    assert_eq!(out, json!([["GREETING", "hello"]]));
}

#[tokio::test]
async fn there_is_no_filesystem() {
    let out = json(
        &probe()
            .call_tool(&inv(&platform()), "filesystem", "{}")
            .await
            .unwrap(),
    );
    assert!(out["read_dir"]["err"].is_string(), "{out}");
    assert!(out["write"]["err"].is_string(), "{out}");
}

#[tokio::test]
async fn there_are_no_sockets() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let out = json(
        &probe()
            .call_tool(
                &inv(&platform()),
                "socket",
                &json!({"address": address}).to_string(),
            )
            .await
            .unwrap(),
    );
    assert!(out["err"].is_string(), "{out}");
}

/// A one-route HTTP server that counts connections.
async fn server() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let connections = Arc::new(AtomicUsize::new(0));
    let seen = connections.clone();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = stream.read(&mut buf).await;
                let body = "hello from the egress host";
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    (port, connections)
}

#[tokio::test]
async fn egress_reaches_declared_hosts_only_and_refuses_others_before_connecting() {
    let (port, connections) = server().await;
    let p = platform();
    let app = probe();
    // `localhost` is in network.egress_hosts.
    let allowed = app
        .call_tool(
            &inv(&p),
            "fetch",
            &json!({"url": format!("http://localhost:{port}/x")}).to_string(),
        )
        .await;
    let allowed = json(&allowed.unwrap());
    assert_eq!(
        allowed,
        json!({"status": 200, "body": "hello from the egress host"})
    );
    assert_eq!(connections.load(Ordering::SeqCst), 1);

    // The same server by address is another host: refused before any connection.
    let refused = app
        .call_tool(
            &inv(&p),
            "fetch",
            &json!({"url": format!("http://127.0.0.1:{port}/x")}).to_string(),
        )
        .await;
    let err = refused.unwrap_err();
    assert!(err.to_string().contains("HttpRequestDenied"), "{err}");
    assert_eq!(connections.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_refusal_is_logged_for_the_developer() {
    let captured = Captured::default();
    let _guard = captured.install();
    let _ = probe()
        .call_tool(
            &inv(&platform()),
            "fetch",
            r#"{"url": "https://example.com/"}"#,
        )
        .await;
    let lines = captured.lines();
    assert!(
        lines.iter().any(|l| l.contains(
            "outbound request to `example.com` refused: the host is not in network.egress_hosts"
        )),
        "{lines:#?}"
    );
    let _: Value = json!(null);
}

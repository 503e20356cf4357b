//! A provider's limit of requests in flight: past it the gateway does not send, falls back to
//! the next backend, and answers 503 `overloaded` with `Retry-After` at once when no backend is
//! left; a stream holds its slot until it ends.

use atrium_inference::ProviderId;
use axum::http::StatusCode;
use http_body_util::BodyExt;

use super::{HELLO, chat, gateway, send_chat, start_fakes};
use crate::{assert_error, stores, unique};

const OVH_ONLY: &str = r#"{"provider": "ovh", "messages": [{"role": "user", "content": "hello"}]}"#;
const OVH_STREAM: &str =
    r#"{"stream": true, "provider": "ovh", "messages": [{"role": "user", "content": "hello"}]}"#;

/// Sends a chat completion through the router and returns the status, the `Retry-After`
/// header and the body.
async fn chat_with_headers(
    state: &atrium_server::HostState,
    key: &str,
    body: &str,
) -> (StatusCode, Option<String>, serde_json::Value) {
    let response = send_chat(state, key, body).await;
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, retry_after, serde_json::from_slice(&bytes).unwrap())
}

async fn wait_until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_at_its_limit_is_not_sent_more_and_alone_is_answered_503_at_once() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    let mut gateway = gateway(&fakes);
    gateway.set_max_in_flight(ProviderId::Ovh, 1);
    let state = atrium_server::HostState::new(store.clone(), gateway);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let other_org = store.create_key(&unique("globex"), "k").await.unwrap();

    // One request holds OVH's only slot: the fake keeps it until opened.
    fakes.upstream("ovh").close();
    let held = {
        let (state, secret) = (state.clone(), key.secret.clone());
        tokio::spawn(async move { chat(&state, &secret, None, OVH_ONLY).await })
    };
    wait_until("the first request reaches OVH", || fakes.calls("ovh") == 1).await;
    assert_eq!(state.gateway.in_flight(ProviderId::Ovh), 1);

    // Asking for OVH alone, from the same organization or another: 503 at once, not sent.
    for secret in [&key.secret, &other_org.secret] {
        let answered = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            chat_with_headers(&state, secret, OVH_ONLY),
        );
        let (status, retry_after, body) = answered
            .await
            .expect("a request past the limit is answered at once, not held");
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_error(&body, "overloaded");
        assert_eq!(retry_after.as_deref(), Some("1"));
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("ovh/") && message.contains("its limit of 1 request in flight"),
            "{message}"
        );
    }
    assert_eq!(
        fakes.calls("ovh"),
        1,
        "a request past the limit is not sent"
    );

    // The default route skips the busy provider and answers from the next EU backend.
    let (status, body) = chat(&state, &key.secret, None, HELLO).await;
    assert_eq!(
        (status, body["provider"].as_str()),
        (StatusCode::OK, Some("mistral")),
        "{body}"
    );
    assert_eq!(fakes.calls("ovh"), 1);

    // Once the held request is answered its slot is free again.
    fakes.upstream("ovh").open();
    let (status, body) = held.await.unwrap();
    assert_eq!(
        (status, body["provider"].as_str()),
        (StatusCode::OK, Some("ovh"))
    );
    assert_eq!(state.gateway.in_flight(ProviderId::Ovh), 0);
    let (status, body) = chat(&state, &other_org.secret, None, OVH_ONLY).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // A stream holds the slot while it runs (the fake pauses after its first piece), and
    // gives it back when the client leaves.
    fakes.upstream("ovh").slow();
    let response = send_chat(&state, &key.secret, OVH_STREAM).await;
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = response.into_body();
    let first = stream.frame().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(first.data_ref().unwrap()).contains("chat.completion.chunk"));
    assert_eq!(state.gateway.in_flight(ProviderId::Ovh), 1);
    let (status, _, body) = chat_with_headers(&state, &other_org.secret, OVH_STREAM).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_error(&body, "overloaded");
    drop(stream);
    wait_until("the stream's slot is given back", || {
        state.gateway.in_flight(ProviderId::Ovh) == 0
    })
    .await;
}

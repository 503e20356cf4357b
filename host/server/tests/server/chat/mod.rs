//! Chat completions against fake upstreams on loopback that speak each provider's protocol:
//! routing, fallback, the PII policy, metering and errors of /v1. What each provider's adapter
//! sends and how it translates answers, streams and errors is the contract suite of the
//! inference crate (`host/inference/tests/providers`).

mod limits;

use std::collections::HashMap;

use atrium_fake_llm::FakeLlm;
use atrium_inference::{Catalog, Gateway, ProviderId};
use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::{assert_error, call_on, stores, unique};

/// Starts the fake upstreams of the five providers: one fake LLM on loopback with an upstream
/// per provider, each answering `"{provider} says hi"` in its protocol (OpenAI's, which
/// Mistral and OVH share, Anthropic's Messages API and Ollama's). Mistral's streams report
/// usage without being asked, as Mistral does.
pub(crate) async fn start_fakes() -> FakeLlm {
    let fakes = FakeLlm::start().await;
    fakes
        .upstream(ProviderId::Mistral.as_str())
        .always_report_usage();
    fakes
}

/// A gateway whose five providers point at `fakes`.
pub(crate) fn gateway(fakes: &FakeLlm) -> Gateway {
    let base =
        |provider: ProviderId, path: &str| format!("{}{path}", fakes.base_url(provider.as_str()));
    let env: HashMap<String, String> = [
        ("ATRIUM_OPENAI_BASE_URL", base(ProviderId::Openai, "/v1")),
        ("ATRIUM_OPENAI_API_KEY", "sk-openai".into()),
        ("ATRIUM_MISTRAL_BASE_URL", base(ProviderId::Mistral, "/v1")),
        ("ATRIUM_MISTRAL_API_KEY", "mistral-key".into()),
        ("ATRIUM_OVH_BASE_URL", base(ProviderId::Ovh, "/v1")),
        ("ATRIUM_OVH_API_KEY", "ovh-key".into()),
        ("ATRIUM_ANTHROPIC_BASE_URL", base(ProviderId::Anthropic, "")),
        ("ATRIUM_ANTHROPIC_API_KEY", "anthropic-key".into()),
        ("ATRIUM_OLLAMA_BASE_URL", base(ProviderId::Ollama, "")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    Gateway::from_env(Catalog::builtin(), |name| env.get(name).cloned())
}

const HELLO: &str = r#"{"messages": [{"role": "user", "content": "hello"}]}"#;

async fn chat(
    state: &atrium_server::HostState,
    key: &str,
    tenant: Option<&str>,
    body: &str,
) -> (StatusCode, Value) {
    call_on(
        state,
        "POST",
        "/v1/chat/completions",
        Some(key),
        tenant,
        Some(body),
    )
    .await
}

#[tokio::test]
async fn the_default_tier_answers_from_an_eu_open_model_and_is_metered() {
    for (store, _dir) in stores().await {
        let fakes = start_fakes().await;
        let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
        let key = store.create_key(&unique("acme"), "k").await.unwrap();
        let (status, body) = chat(&state, &key.secret, None, HELLO).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["object"], "chat.completion");
        let (_, attributed) = chat(&state, &key.secret, Some("t-7"), HELLO).await;
        assert_eq!(attributed["tenant"], "t-7");
        assert_eq!(body["provider"], "ovh");
        assert_eq!(body["model"], "Meta-Llama-3_3-70B-Instruct");
        assert_eq!(body["tenant"], "default");
        assert_eq!(body["choices"][0]["message"]["content"], "ovh says hi");
        // 15 tokens at $0.74 per million: 11.1 micro-dollars, rounded to 11.
        assert_eq!(
            body["usage"],
            json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "cost_usd": 0.000011})
        );
        let sent = fakes.upstream("ovh").last().unwrap().body;
        assert_eq!(sent["model"], "Meta-Llama-3_3-70B-Instruct");

        let (_, usage) = call_on(&state, "GET", "/v1/usage", Some(&key.secret), None, None).await;
        assert_eq!(usage["totals"]["calls"], 2);
        assert_eq!(usage["per_tenant"][0]["tenant_id"], "default");
        assert_eq!(usage["per_tenant"][0]["cost_usd"], 0.000011);
        assert_eq!(usage["per_tenant"][1]["tenant_id"], "t-7");
    }
}

#[tokio::test]
async fn server_errors_fall_back_within_the_eu_and_client_errors_do_not() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    let key = store.create_key(&unique("acme"), "k").await.unwrap();

    fakes.upstream("ovh").fail(503);
    let (status, body) = chat(&state, &key.secret, None, HELLO).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["provider"], "mistral");
    assert_eq!(body["model"], "mistral-small-latest");
    assert_eq!(
        (fakes.calls("ovh"), fakes.calls("mistral")),
        (2, 1),
        "both OVH models were tried first"
    );

    fakes.upstream("mistral").fail(429);
    fakes.upstream("ollama").fail(500);
    let (status, body) = chat(&state, &key.secret, None, HELLO).await;
    assert_eq!(status, StatusCode::BAD_GATEWAY, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("ovh/Meta-Llama-3_3-70B-Instruct")
            && message.contains("ollama/qwen2.5:7b"),
        "{message}"
    );
    assert_eq!(
        fakes.calls("openai") + fakes.calls("anthropic"),
        0,
        "an EU route never falls back to the US"
    );

    let fakes = start_fakes().await;
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    fakes.upstream("ovh").fail(400);
    let (status, body) = chat(&state, &key.secret, None, HELLO).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(fakes.calls("mistral"), 0);
}

#[tokio::test]
async fn personal_data_never_reaches_a_us_model() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    for body in [
        r#"{"tier": "frontier", "contains_pii": true, "messages": [{"role": "user", "content": "my IBAN is ..."}]}"#,
        r#"{"model": "gpt-4.1", "contains_pii": true, "messages": [{"role": "user", "content": "x"}]}"#,
        r#"{"provider": "anthropic", "contains_pii": true, "messages": [{"role": "user", "content": "x"}]}"#,
    ] {
        let (status, response) = chat(&state, &key.secret, None, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{response}");
        assert_error(&response, "policy_violation");
        assert!(
            response["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("personal data may only use an EU-sovereign model")
        );
    }
    assert_eq!(
        fakes.calls("openai") + fakes.calls("anthropic"),
        0,
        "refused before any upstream is contacted"
    );
    let (status, body) = chat(
        &state,
        &key.secret,
        None,
        r#"{"contains_pii": true, "messages": [{"role": "user", "content": "x"}]}"#,
    )
    .await;
    assert_eq!(
        (status, body["provider"].as_str()),
        (StatusCode::OK, Some("ovh"))
    );
}

#[tokio::test]
async fn frontier_goes_to_anthropic_over_the_messages_api_and_names_route_by_prefix() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let body = r#"{"tier": "frontier", "max_tokens": 64, "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]}"#;
    let (status, response) = chat(&state, &key.secret, None, body).await;
    assert_eq!(status, StatusCode::OK, "{response}");
    assert_eq!(
        (response["provider"].as_str(), response["model"].as_str()),
        (Some("anthropic"), Some("claude-sonnet-4-5"))
    );
    assert_eq!(
        response["choices"][0]["message"]["content"],
        "anthropic says hi"
    );
    assert_eq!(response["usage"]["prompt_tokens"], 20);

    let (_, cheapest) = chat(
        &state,
        &key.secret,
        None,
        r#"{"tier": "cheapest", "messages": [{"role": "user", "content": "x"}]}"#,
    )
    .await;
    assert_eq!(
        (cheapest["provider"].as_str(), cheapest["model"].as_str()),
        (Some("ollama"), Some("qwen2.5:7b"))
    );
    assert_eq!(cheapest["usage"]["cost_usd"], 0.0);

    let (_, gpt) = chat(
        &state,
        &key.secret,
        None,
        r#"{"model": "gpt-4o-mini", "seed": 7, "max_tokens": 64, "tool_choice": "required", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "x"}]}"#,
    )
    .await;
    assert_eq!(gpt["provider"], "openai");
    // The standard fields and every message reach the upstream; OpenAI takes them as they
    // are (each provider's translation of them is checked by the inference crate).
    let sent = fakes.upstream("openai").last().unwrap().body;
    assert_eq!(
        (
            sent["seed"].as_u64(),
            sent["max_tokens"].as_u64(),
            sent["tool_choice"].as_str(),
            sent["messages"][0]["content"].as_str()
        ),
        (Some(7), Some(64), Some("required"), Some("Be brief.")),
        "{sent}"
    );
    let (_, qwen) = chat(
        &state,
        &key.secret,
        None,
        r#"{"model": "qwen2.5:7b", "messages": [{"role": "user", "content": "x"}]}"#,
    )
    .await;
    assert_eq!(
        (
            qwen["provider"].as_str(),
            qwen["choices"][0]["message"]["content"].as_str()
        ),
        (Some("ollama"), Some("ollama says hi"))
    );
    let (_, mistral) = chat(&state, &key.secret, None, r#"{"provider": "mistral", "seed": 7, "tool_choice": "required", "messages": [{"role": "user", "content": "x"}]}"#).await;
    assert_eq!(mistral["provider"], "mistral");
}

#[tokio::test]
async fn bad_requests_and_missing_backends_are_named() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let none = crate::state(&store, vec![]);
    let (status, body) = chat(&none, &key.secret, None, HELLO).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_error(&body, "no_backend");

    let fakes = start_fakes().await;
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    for (body, param) in [
        (r#"{"messages": []}"#, "messages"),
        (r#"{"model": "x"}"#, "messages"),
        (r#"{"messages": [{"content": "x"}]}"#, "messages[0]"),
        (
            r#"{"messages": [{"role": "wizard", "content": "x"}]}"#,
            "messages[0]",
        ),
        (
            r#"{"tier": "fastest", "messages": [{"role": "user", "content": "x"}]}"#,
            "tier",
        ),
        (
            r#"{"provider": "azure", "messages": [{"role": "user", "content": "x"}]}"#,
            "provider",
        ),
        (
            r#"{"contains_pii": "yes", "messages": [{"role": "user", "content": "x"}]}"#,
            "contains_pii",
        ),
        (
            r#"{"model": "llama-9", "messages": [{"role": "user", "content": "x"}]}"#,
            "model",
        ),
    ] {
        let (status, response) = chat(&state, &key.secret, None, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {response}");
        assert_eq!(response["error"]["param"], param, "{body}: {response}");
    }
    assert_eq!(fakes.calls("ovh") + fakes.calls("mistral"), 0);
}

#[tokio::test]
async fn models_lists_the_catalog_in_openai_shape() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let state = crate::state(&store, vec![]);
    let (status, body) = call_on(&state, "GET", "/v1/models", Some(&key.secret), None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["object"], "list");
    let llama = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "Meta-Llama-3_3-70B-Instruct")
        .unwrap();
    assert_eq!(
        (
            llama["object"].as_str(),
            llama["owned_by"].as_str(),
            llama["jurisdiction"].as_str()
        ),
        (Some("model"), Some("ovh"), Some("EU"))
    );
    assert_eq!(llama["available"], false);
    assert_eq!(llama["tiers"], json!(["eu-sovereign", "cheapest"]));
    let (status, _) = call_on(&state, "GET", "/v1/models", None, None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// Sends `body` to `/v1/chat/completions` with `key` through the router and returns the
/// response, its body unread.
async fn send_chat(
    state: &atrium_server::HostState,
    key: &str,
    body: &str,
) -> axum::response::Response {
    use tower::ServiceExt;
    let request = axum::http::Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(body.to_owned()))
        .unwrap();
    atrium_server::router(state.clone())
        .oneshot(request)
        .await
        .unwrap()
}

/// Sends a streaming chat request and returns the `data:` payloads, in order.
async fn stream_chat(
    state: &atrium_server::HostState,
    key: &str,
    body: &str,
) -> (StatusCode, Vec<String>) {
    use http_body_util::BodyExt;
    let response = send_chat(state, key, body).await;
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(str::to_owned)
        .collect();
    (status, data)
}

async fn wait_for_calls(store: &atrium_store::Store, org: &str, calls: i64) -> atrium_store::Usage {
    for _ in 0..200 {
        let usage = store.usage(org).await.unwrap();
        if usage.totals.calls >= calls {
            return usage;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the streamed call was not metered");
}

#[tokio::test]
async fn every_provider_streams_openai_chunks_ending_with_done_and_is_metered() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let cases = [
        (r#"{"provider": "ovh"}"#, "ovh", 10, 5),
        (r#"{"provider": "mistral"}"#, "mistral", 10, 5),
        (r#"{"provider": "openai"}"#, "openai", 10, 5),
        (r#"{"provider": "anthropic"}"#, "anthropic", 20, 8),
        (r#"{"provider": "ollama"}"#, "ollama", 6, 3),
    ];
    for (i, (selection, provider, prompt, completion)) in cases.into_iter().enumerate() {
        let mut body: Value = serde_json::from_str(selection).unwrap();
        body["messages"] = json!([{"role": "user", "content": "hello"}]);
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
        let (status, data) = stream_chat(&state, &key.secret, &body.to_string()).await;
        assert_eq!(status, StatusCode::OK, "{provider}: {data:?}");
        assert_eq!(
            data.last().map(String::as_str),
            Some("[DONE]"),
            "{provider}"
        );
        let chunks: Vec<Value> = data[..data.len() - 1]
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        assert!(
            chunks
                .iter()
                .all(|c| c["object"] == "chat.completion.chunk" && c["provider"] == provider),
            "{provider}: {chunks:?}"
        );
        let text: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, format!("{provider} says hi"));
        assert!(
            chunks
                .iter()
                .any(|c| c["choices"][0]["finish_reason"] == "stop"),
            "{provider}: {chunks:?}"
        );
        let usage = &chunks.last().unwrap()["usage"];
        assert_eq!(
            (
                usage["prompt_tokens"].as_u64(),
                usage["completion_tokens"].as_u64()
            ),
            (Some(prompt), Some(completion)),
            "{provider}"
        );
        let metered = wait_for_calls(&store, &key.org_id, i as i64 + 1).await;
        assert_eq!(metered.totals.calls, i as i64 + 1);
    }
    // Without include_usage there is no usage chunk, and the call is metered all the same.
    let (_, data) = stream_chat(
        &state,
        &key.secret,
        r#"{"stream": true, "messages": [{"role": "user", "content": "x"}]}"#,
    )
    .await;
    assert!(data.iter().all(|d| !d.contains("\"usage\"")), "{data:?}");
    wait_for_calls(&store, &key.org_id, 6).await;
}

#[tokio::test]
async fn a_client_leaving_mid_stream_is_still_metered() {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    fakes.upstream("ovh").slow();
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let request = axum::http::Request::post("/v1/chat/completions")
        .header("authorization", format!("Bearer {}", key.secret))
        .header("content-type", "application/json")
        .header("x-service-tenant", "leaver")
        .body(axum::body::Body::from(r#"{"stream": true, "provider": "ovh", "messages": [{"role": "user", "content": "hello there"}]}"#))
        .unwrap();
    let response = atrium_server::router(state.clone())
        .oneshot(request)
        .await
        .unwrap();
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(first.data_ref().unwrap()).contains("chat.completion.chunk"));
    drop(body);
    let usage = wait_for_calls(&store, &key.org_id, 1).await;
    let leaver = &usage.per_tenant[0];
    assert_eq!(leaver.tenant_id, "leaver");
    // The provider never reported counts: estimated from the characters exchanged.
    assert!(leaver.prompt_tokens > 0, "{leaver:?}");
}

#[tokio::test]
async fn streams_fall_back_before_they_start_and_respect_the_policy() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    fakes.upstream("ovh").fail(502);
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let (status, data) = stream_chat(
        &state,
        &key.secret,
        r#"{"stream": true, "messages": [{"role": "user", "content": "x"}]}"#,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(data[0].contains(r#""provider":"mistral""#), "{data:?}");
    let (status, _) =
        stream_chat(&state, &key.secret, r#"{"stream": true, "tier": "frontier", "contains_pii": true, "messages": [{"role": "user", "content": "x"}]}"#).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(fakes.calls("anthropic"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_requests_in_flight_finish() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = start_fakes().await;
    fakes.upstream("ovh").slow();
    let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(atrium_server::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    let in_flight = tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let body = HELLO;
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            key.secret,
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    });
    // The upstream takes 400 ms; stop the server while the request waits for it.
    while fakes.calls("ovh") == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    stop.send(()).unwrap();
    let response = in_flight.await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("ovh says hi"), "{response}");
    server.await.unwrap().unwrap();
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no new connections after shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn usage_stays_exact_under_concurrent_calls() {
    for (store, _dir) in stores().await {
        let fakes = start_fakes().await;
        let state = atrium_server::HostState::new(store.clone(), gateway(&fakes));
        let key = store.create_key(&unique("acme"), "k").await.unwrap();
        let calls: Vec<_> = (0..200)
            .map(|i| {
                let (state, secret) = (state.clone(), key.secret.clone());
                tokio::spawn(async move {
                    let tenant = format!("t-{}", i % 5);
                    let (status, _) = chat(&state, &secret, Some(&tenant), HELLO).await;
                    assert_eq!(status, StatusCode::OK);
                })
            })
            .collect();
        for call in calls {
            call.await.unwrap();
        }
        let (_, usage) = call_on(&state, "GET", "/v1/usage", Some(&key.secret), None, None).await;
        assert_eq!(usage["totals"]["calls"], 200);
        assert_eq!(usage["totals"]["tenants"], 5);
        // 200 calls of 11 micro-dollars each, summed as integers.
        assert_eq!(usage["totals"]["cost_usd"], 0.0022);
        assert_eq!(usage["per_tenant"][0]["calls"], 40);
    }
}

#[tokio::test]
async fn an_unreachable_backend_falls_back_and_all_unreachable_is_503() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    // A port nobody listens on: bind, note it, close it.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let fakes = start_fakes().await;
    let mistral_base = format!("{}/v1", fakes.base_url("mistral"));
    let env = |dead_mistral: bool| {
        let mistral = if dead_mistral {
            format!("http://{dead}/v1")
        } else {
            mistral_base.clone()
        };
        move |name: &str| match name {
            "ATRIUM_OVH_BASE_URL" => Some(format!("http://{dead}/v1")),
            "ATRIUM_OVH_API_KEY" | "ATRIUM_MISTRAL_API_KEY" => Some("k".into()),
            "ATRIUM_MISTRAL_BASE_URL" => Some(mistral.clone()),
            _ => None,
        }
    };
    let state = atrium_server::HostState::new(
        store.clone(),
        Gateway::from_env(Catalog::builtin(), env(false)),
    );
    let (status, body) = chat(&state, &key.secret, None, HELLO).await;
    assert_eq!(
        (status, body["provider"].as_str()),
        (StatusCode::OK, Some("mistral")),
        "{body}"
    );

    let state = atrium_server::HostState::new(
        store.clone(),
        Gateway::from_env(Catalog::builtin(), env(true)),
    );
    let (status, body) = chat(&state, &key.secret, None, HELLO).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_error(&body, "upstream_unavailable");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("connection failed"),
        "{body}"
    );
}

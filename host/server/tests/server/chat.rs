//! Chat completions against fake upstreams on loopback that speak each provider's protocol:
//! routing, fallback, the PII policy, translation, metering, errors.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use atrium_inference::{Catalog, Gateway};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::{assert_error, call_on, stores, unique};

/// One fake provider: counts calls, keeps the last body, fails on demand.
#[derive(Default)]
struct Upstream {
    calls: AtomicUsize,
    fail_with: Mutex<Option<u16>>,
    last: Mutex<Option<(HeaderMap, Value)>>,
}

#[derive(Clone, Default)]
struct Fakes(Arc<HashMap<&'static str, Upstream>>);

impl Fakes {
    fn new() -> Self {
        Fakes(Arc::new(
            ["openai", "anthropic", "mistral", "ollama", "ovh"]
                .into_iter()
                .map(|p| (p, Upstream::default()))
                .collect(),
        ))
    }
    fn calls(&self, provider: &str) -> usize {
        self.0[provider].calls.load(Ordering::SeqCst)
    }
    fn fail(&self, provider: &str, status: u16) {
        *self.0[provider].fail_with.lock().unwrap() = Some(status);
    }
    fn last(&self, provider: &str) -> (HeaderMap, Value) {
        self.0[provider].last.lock().unwrap().clone().unwrap()
    }
}

fn record(fakes: &Fakes, provider: &str, headers: HeaderMap, body: &Value) -> Option<Response> {
    let upstream = &fakes.0[provider];
    upstream.calls.fetch_add(1, Ordering::SeqCst);
    *upstream.last.lock().unwrap() = Some((headers, body.clone()));
    let status = (*upstream.fail_with.lock().unwrap())?;
    Some(
        (
            StatusCode::from_u16(status).unwrap(),
            Json(json!({"error": {"message": format!("injected {status}")}})),
        )
            .into_response(),
    )
}

async fn openai_like(
    State(fakes): State<Fakes>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let provider: &'static str = match provider.as_str() {
        "openai" => "openai",
        "mistral" => "mistral",
        _ => "ovh",
    };
    if let Some(failure) = record(&fakes, provider, headers, &body) {
        return failure;
    }
    let model = body["model"].as_str().unwrap_or_default();
    Json(json!({
        "id": "up-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("{provider} says hi")}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }))
    .into_response()
}

async fn anthropic(
    State(fakes): State<Fakes>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(failure) = record(&fakes, "anthropic", headers, &body) {
        return failure;
    }
    Json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "text", "text": "anthropic says hi"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 8},
    }))
    .into_response()
}

async fn ollama(
    State(fakes): State<Fakes>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(failure) = record(&fakes, "ollama", headers, &body) {
        return failure;
    }
    Json(json!({
        "model": body["model"], "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": "ollama says hi"},
        "done": true, "done_reason": "stop", "prompt_eval_count": 6, "eval_count": 3,
    }))
    .into_response()
}

/// Starts the fakes and returns a gateway whose five providers point at them.
async fn gateway(fakes: &Fakes) -> Gateway {
    let app = axum::Router::new()
        .route(
            "/{provider}/v1/chat/completions",
            axum::routing::post(openai_like),
        )
        .route("/anthropic/v1/messages", axum::routing::post(anthropic))
        .route("/ollama/api/chat", axum::routing::post(ollama))
        .with_state(fakes.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let env: HashMap<String, String> = [
        ("ATRIUM_OPENAI_BASE_URL", format!("http://{addr}/openai/v1")),
        ("ATRIUM_OPENAI_API_KEY", "sk-openai".into()),
        (
            "ATRIUM_MISTRAL_BASE_URL",
            format!("http://{addr}/mistral/v1"),
        ),
        ("ATRIUM_MISTRAL_API_KEY", "mistral-key".into()),
        ("ATRIUM_OVH_BASE_URL", format!("http://{addr}/ovh/v1")),
        ("ATRIUM_OVH_API_KEY", "ovh-key".into()),
        (
            "ATRIUM_ANTHROPIC_BASE_URL",
            format!("http://{addr}/anthropic"),
        ),
        ("ATRIUM_ANTHROPIC_API_KEY", "anthropic-key".into()),
        ("ATRIUM_OLLAMA_BASE_URL", format!("http://{addr}/ollama")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    Gateway::from_env(Catalog::builtin(), |name| env.get(name).cloned())
}

const HELLO: &str = r#"{"messages": [{"role": "user", "content": "hello"}]}"#;

async fn chat(
    state: &atrium_server::AppState,
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
        let fakes = Fakes::new();
        let state = atrium_server::AppState {
            store: store.clone(),
            gateway: Arc::new(gateway(&fakes).await),
        };
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
        let (headers, sent) = fakes.last("ovh");
        assert_eq!(headers["authorization"], "Bearer ovh-key");
        assert_eq!(sent["model"], "Meta-Llama-3_3-70B-Instruct");

        let (_, usage) = crate::call(&store, "GET", "/v1/usage", Some(&key.secret), None).await;
        assert_eq!(usage["totals"]["calls"], 2);
        assert_eq!(usage["per_tenant"][0]["tenant_id"], "default");
        assert_eq!(usage["per_tenant"][0]["cost_usd"], 0.000011);
        assert_eq!(usage["per_tenant"][1]["tenant_id"], "t-7");
    }
}

#[tokio::test]
async fn server_errors_fall_back_within_the_eu_and_client_errors_do_not() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = Fakes::new();
    let state = atrium_server::AppState {
        store: store.clone(),
        gateway: Arc::new(gateway(&fakes).await),
    };
    let key = store.create_key(&unique("acme"), "k").await.unwrap();

    fakes.fail("ovh", 503);
    let (status, body) = chat(&state, &key.secret, None, HELLO).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["provider"], "mistral");
    assert_eq!(body["model"], "mistral-small-latest");
    assert_eq!(
        (fakes.calls("ovh"), fakes.calls("mistral")),
        (2, 1),
        "both OVH models were tried first"
    );

    fakes.fail("mistral", 429);
    fakes.fail("ollama", 500);
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

    let fakes = Fakes::new();
    let state = atrium_server::AppState {
        store: store.clone(),
        gateway: Arc::new(gateway(&fakes).await),
    };
    fakes.fail("ovh", 400);
    let (status, body) = chat(&state, &key.secret, None, HELLO).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(fakes.calls("mistral"), 0);
}

#[tokio::test]
async fn personal_data_never_reaches_a_us_model() {
    let (store, _dir) = stores().await.remove(0);
    let fakes = Fakes::new();
    let state = atrium_server::AppState {
        store: store.clone(),
        gateway: Arc::new(gateway(&fakes).await),
    };
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
    let fakes = Fakes::new();
    let state = atrium_server::AppState {
        store: store.clone(),
        gateway: Arc::new(gateway(&fakes).await),
    };
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
    let (headers, sent) = fakes.last("anthropic");
    assert_eq!(
        (
            headers["x-api-key"].to_str().unwrap(),
            headers["anthropic-version"].to_str().unwrap()
        ),
        ("anthropic-key", "2023-06-01")
    );
    assert_eq!(
        (sent["system"].as_str(), sent["max_tokens"].as_u64()),
        (Some("Be brief."), Some(64))
    );

    let (_, gpt) = chat(
        &state,
        &key.secret,
        None,
        r#"{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x"}]}"#,
    )
    .await;
    assert_eq!(gpt["provider"], "openai");
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
    let (_, sent) = fakes.last("mistral");
    assert_eq!(
        (sent["random_seed"].as_u64(), sent["tool_choice"].as_str()),
        (Some(7), Some("any")),
        "{sent}"
    );
}

#[tokio::test]
async fn bad_requests_and_missing_backends_are_named() {
    let (store, _dir) = stores().await.remove(0);
    let key = store.create_key(&unique("acme"), "k").await.unwrap();
    let none = crate::state(&store, vec![]);
    let (status, body) = chat(&none, &key.secret, None, HELLO).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_error(&body, "no_backend");

    let fakes = Fakes::new();
    let state = atrium_server::AppState {
        store: store.clone(),
        gateway: Arc::new(gateway(&fakes).await),
    };
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

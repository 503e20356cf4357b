//! Fake upstreams on loopback that speak each provider's protocol (OpenAI's, which Mistral and
//! OVH share, Anthropic's Messages API and Ollama's), and a gateway pointed at them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use atrium_inference::{Catalog, Gateway, ProviderId};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};

/// One fake provider: counts calls, keeps the last body, fails on demand, streams slowly on
/// demand (a pause after the first piece, to let a client leave mid-stream), and holds every
/// request at its gate while one is set.
#[derive(Default)]
pub(crate) struct Upstream {
    calls: AtomicUsize,
    fail_with: Mutex<Option<u16>>,
    last: Mutex<Option<(HeaderMap, Value)>>,
    pub(crate) slow: std::sync::atomic::AtomicBool,
    gate: Mutex<Option<Arc<tokio::sync::Semaphore>>>,
}

/// A streamed body: `pieces`, with a long pause after the first when `slow`.
fn streamed(pieces: Vec<String>, slow: bool, content_type: &'static str) -> Response {
    let stream =
        futures::stream::iter(pieces.into_iter().enumerate()).then(move |(i, piece)| async move {
            if slow && i == 1 {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            }
            Ok::<_, std::convert::Infallible>(piece)
        });
    (
        [("content-type", content_type)],
        axum::body::Body::from_stream(stream),
    )
        .into_response()
}

fn sse(events: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    out.push("data: [DONE]\n\n".into());
    out
}

#[derive(Clone, Default)]
pub(crate) struct Fakes(pub(crate) Arc<HashMap<&'static str, Upstream>>);

impl Fakes {
    pub(crate) fn new() -> Self {
        Fakes(Arc::new(
            ProviderId::ALL
                .into_iter()
                .map(|p| (p.as_str(), Upstream::default()))
                .collect(),
        ))
    }
    pub(crate) fn calls(&self, provider: &str) -> usize {
        self.0[provider].calls.load(Ordering::SeqCst)
    }
    pub(crate) fn slow(&self, provider: &str) {
        self.0[provider].slow.store(true, Ordering::SeqCst);
    }
    /// Holds `provider`'s requests, once counted, until [`Fakes::open`].
    pub(crate) fn close(&self, provider: &str) {
        *self.0[provider].gate.lock().unwrap() = Some(Arc::new(tokio::sync::Semaphore::new(0)));
    }
    /// Lets the held requests of `provider` and every later one through.
    pub(crate) fn open(&self, provider: &str) {
        if let Some(gate) = self.0[provider].gate.lock().unwrap().take() {
            gate.close();
        }
    }
    pub(crate) fn fail(&self, provider: &str, status: u16) {
        *self.0[provider].fail_with.lock().unwrap() = Some(status);
    }
    pub(crate) fn last(&self, provider: &str) -> (HeaderMap, Value) {
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
    // OpenAI, Mistral and OVH speak this protocol.
    let provider = ProviderId::parse(&provider).map_or("ovh", ProviderId::as_str);
    if let Some(failure) = record(&fakes, provider, headers, &body) {
        return failure;
    }
    let gate = fakes.0[provider].gate.lock().unwrap().clone();
    if let Some(gate) = gate {
        // Closed by `open`: the wait ends with an error, and the request goes on.
        let _ = gate.acquire().await;
    }
    let model = body["model"].as_str().unwrap_or_default();
    if body["stream"] != true && fakes.0[provider].slow.load(Ordering::SeqCst) {
        tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    }
    if body["stream"] == true {
        let chunk = |delta: Value, finish: Value| json!({"id": "up", "object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        let mut events = vec![
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": provider}), Value::Null),
            chunk(json!({"content": " says hi"}), Value::Null),
            chunk(json!({}), json!("stop")),
        ];
        if body["stream_options"]["include_usage"] == true || provider == "mistral" {
            events.push(json!({"id": "up", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}));
        }
        return streamed(
            sse(&events),
            fakes.0[provider].slow.load(Ordering::SeqCst),
            "text/event-stream",
        );
    }
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
    if body["stream"] == true {
        let events = [
            (
                "message_start",
                json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": [], "usage": {"input_tokens": 20, "output_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ),
            ("ping", json!({"type": "ping"})),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "anthropic"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " says hi"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 8}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ];
        let pieces = events
            .iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect();
        return streamed(pieces, false, "text/event-stream");
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
    if body["stream"] == true {
        let lines = vec![
            format!(
                "{}\n",
                json!({"model": body["model"], "message": {"role": "assistant", "content": "ollama"}, "done": false})
            ),
            format!(
                "{}\n",
                json!({"model": body["model"], "message": {"role": "assistant", "content": " says hi"}, "done": false})
            ),
            format!(
                "{}\n",
                json!({"model": body["model"], "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": 6, "eval_count": 3})
            ),
        ];
        return streamed(lines, false, "application/x-ndjson");
    }
    Json(json!({
        "model": body["model"], "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": "ollama says hi"},
        "done": true, "done_reason": "stop", "prompt_eval_count": 6, "eval_count": 3,
    }))
    .into_response()
}

/// Starts the fakes and returns a gateway whose five providers point at them.
pub(crate) async fn gateway(fakes: &Fakes) -> Gateway {
    gateway_at(start(fakes).await)
}

/// Starts the fake upstreams on loopback.
pub(crate) async fn start(fakes: &Fakes) -> std::net::SocketAddr {
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
    addr
}

/// A gateway whose five providers point at the fakes at `addr`.
pub(crate) fn gateway_at(addr: std::net::SocketAddr) -> Gateway {
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

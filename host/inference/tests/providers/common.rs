//! The contract, written once: a fake upstream on loopback that speaks a provider's wire
//! protocol, and the checks every provider's adapter must pass against it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use atrium_inference::providers::stream::StreamEvent;
use atrium_inference::providers::{
    self, ChatRequest, Provider, ProviderConfig, Requirement, UpstreamError,
};
use atrium_inference::{Catalog, Gateway, ProviderId, Selection};
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};

/// How long a call may take in the checks that do not test timeouts.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The wire protocol a provider speaks: how the fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI's chat completions (`POST {base}/chat/completions`): one JSON answer, or SSE
    /// chunks ending with `[DONE]`. The usage chunk comes when `stream_options.include_usage`
    /// asks for it, or always with `usage_unasked` (as Mistral does).
    ChatCompletions {
        /// Whether the stream reports usage without being asked.
        usage_unasked: bool,
    },
    /// Anthropic's Messages API (`POST {base}/v1/messages`): typed SSE events when streamed.
    Messages,
    /// Ollama's native chat (`POST {base}/api/chat`): newline-delimited JSON when streamed.
    OllamaChat,
}

impl Wire {
    /// The path the adapter posts to, under its base URL.
    pub fn endpoint(self) -> &'static str {
        match self {
            Wire::ChatCompletions { .. } => "/chat/completions",
            Wire::Messages => "/v1/messages",
            Wire::OllamaChat => "/api/chat",
        }
    }
}

/// One provider's row of the contract: its fake and what its adapter must send and answer.
pub struct Case {
    /// The provider.
    pub id: ProviderId,
    /// The protocol its fake speaks.
    pub wire: Wire,
    /// The path of its base URL at the fake.
    pub base_path: &'static str,
    /// Its API base when none is configured.
    pub default_base_url: &'static str,
    /// Its timeout when none is configured.
    pub default_timeout: Duration,
    /// What must be configured for it to be available.
    pub requires: Requirement,
    /// The API key configured, if any.
    pub api_key: Option<&'static str>,
    /// A model it serves.
    pub model: &'static str,
    /// Headers the upstream must see (`None`: must not see).
    pub headers: Vec<(&'static str, Option<&'static str>)>,
    /// Fields of the body of [`shaped_request`] as the upstream must see them: a JSON pointer
    /// and its value (`null`: absent).
    pub sent: Vec<(&'static str, Value)>,
    /// The same for a streamed [`hello`].
    pub sent_streaming: Vec<(&'static str, Value)>,
    /// The token counts the fake reports, as the adapter must read them.
    pub usage: (u64, u64),
}

impl Case {
    fn name(&self) -> &'static str {
        self.id.as_str()
    }

    /// The adapter for this case at `base_url`, built as the gateway builds it.
    fn adapter(&self, base_url: String, timeout: Duration) -> Arc<dyn Provider> {
        providers::build(
            self.id,
            reqwest::Client::new(),
            ProviderConfig {
                base_url,
                api_key: self.api_key.map(str::to_owned),
                timeout,
            },
        )
    }
}

/// A plain request: one user message, no standard fields.
pub fn hello() -> ChatRequest {
    ChatRequest {
        messages: vec![json!({"role": "user", "content": "hello"})],
        params: serde_json::Map::new(),
    }
}

/// A request each provider translates its own way: a system prompt and standard fields.
pub fn shaped_request() -> ChatRequest {
    ChatRequest {
        messages: vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "hi"}),
        ],
        params: json!({"max_tokens": 64, "seed": 7, "tool_choice": "required"})
            .as_object()
            .cloned()
            .unwrap(),
    }
}

/// One request the fake received.
#[derive(Clone)]
pub struct Seen {
    /// The request path.
    pub path: String,
    /// The request headers.
    pub headers: HeaderMap,
    /// The JSON body (`null` when it was not JSON).
    pub body: Value,
}

/// What a fake answers and what it saw.
struct Upstream {
    name: &'static str,
    wire: Wire,
    endpoint: String,
    calls: AtomicUsize,
    fail_with: Mutex<Option<u16>>,
    delay: Mutex<Option<Duration>>,
    last: Mutex<Option<Seen>>,
}

/// A fake upstream on loopback speaking one case's protocol: it records each request, fails
/// with a status on demand and answers late on demand.
pub struct Fake {
    /// The base URL to configure the provider with.
    pub base_url: String,
    upstream: Arc<Upstream>,
}

impl Fake {
    /// Starts the fake of `case`.
    pub async fn start(case: &Case) -> Fake {
        let upstream = Arc::new(Upstream {
            name: case.name(),
            wire: case.wire,
            endpoint: format!("{}{}", case.base_path, case.wire.endpoint()),
            calls: AtomicUsize::new(0),
            fail_with: Mutex::new(None),
            delay: Mutex::new(None),
            last: Mutex::new(None),
        });
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(upstream.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Fake {
            base_url: format!("http://{addr}{}", case.base_path),
            upstream,
        }
    }

    /// Answers every request from now on with `status` and an error body.
    pub fn fail(&self, status: u16) {
        *self.upstream.fail_with.lock().unwrap() = Some(status);
    }

    /// Waits `by` before answering.
    pub fn delay(&self, by: Duration) {
        *self.upstream.delay.lock().unwrap() = Some(by);
    }

    /// How many requests arrived.
    pub fn calls(&self) -> usize {
        self.upstream.calls.load(Ordering::SeqCst)
    }

    /// The last request.
    pub fn last(&self) -> Seen {
        self.upstream.last.lock().unwrap().clone().unwrap()
    }
}

async fn answer(
    State(upstream): State<Arc<Upstream>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    upstream.calls.fetch_add(1, Ordering::SeqCst);
    *upstream.last.lock().unwrap() = Some(Seen {
        path: uri.path().to_owned(),
        headers,
        body: body.clone(),
    });
    if uri.path() != upstream.endpoint {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"message": "no such route"}})),
        )
            .into_response();
    }
    if let Some(status) = *upstream.fail_with.lock().unwrap() {
        return (
            StatusCode::from_u16(status).unwrap(),
            Json(json!({"error": {"message": format!("injected {status}")}})),
        )
            .into_response();
    }
    let delay = *upstream.delay.lock().unwrap();
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    match upstream.wire {
        Wire::ChatCompletions { usage_unasked } => {
            chat_completions(upstream.name, &body, usage_unasked)
        }
        Wire::Messages => messages(upstream.name, &body),
        Wire::OllamaChat => ollama_chat(upstream.name, &body),
    }
}

/// A streamed body of `pieces`.
fn streamed(pieces: Vec<String>, content_type: &'static str) -> Response {
    let stream = futures::stream::iter(pieces.into_iter().map(Ok::<_, std::convert::Infallible>));
    (
        [("content-type", content_type)],
        axum::body::Body::from_stream(stream),
    )
        .into_response()
}

fn chat_completions(name: &str, body: &Value, usage_unasked: bool) -> Response {
    let model = body["model"].as_str().unwrap_or_default();
    if body["stream"] == true {
        let chunk = |delta: Value, finish: Value| json!({"id": "up", "object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        let mut events = vec![
            chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            chunk(json!({"content": name}), Value::Null),
            chunk(json!({"content": " says hi"}), Value::Null),
            chunk(json!({}), json!("stop")),
        ];
        if body["stream_options"]["include_usage"] == true || usage_unasked {
            events.push(json!({"id": "up", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}));
        }
        let mut pieces: Vec<String> = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        pieces.push("data: [DONE]\n\n".into());
        return streamed(pieces, "text/event-stream");
    }
    Json(json!({
        "id": "up-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("{name} says hi")}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }))
    .into_response()
}

fn messages(name: &str, body: &Value) -> Response {
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
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": name}}),
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
            .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
            .collect();
        return streamed(pieces, "text/event-stream");
    }
    Json(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
        "content": [{"type": "text", "text": format!("{name} says hi")}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 20, "output_tokens": 8},
    }))
    .into_response()
}

fn ollama_chat(name: &str, body: &Value) -> Response {
    if body["stream"] == true {
        let lines = [
            json!({"model": body["model"], "message": {"role": "assistant", "content": name}, "done": false}),
            json!({"model": body["model"], "message": {"role": "assistant", "content": " says hi"}, "done": false}),
            json!({"model": body["model"], "message": {"role": "assistant", "content": ""}, "done": true, "done_reason": "stop", "prompt_eval_count": 6, "eval_count": 3}),
        ];
        return streamed(
            lines.iter().map(|l| format!("{l}\n")).collect(),
            "application/x-ndjson",
        );
    }
    Json(json!({
        "model": body["model"], "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": format!("{name} says hi")},
        "done": true, "done_reason": "stop", "prompt_eval_count": 6, "eval_count": 3,
    }))
    .into_response()
}

fn check_request(case: &Case, seen: &Seen, fields: &[(&'static str, Value)]) {
    let name = case.name();
    assert_eq!(
        seen.path,
        format!("{}{}", case.base_path, case.wire.endpoint()),
        "{name}"
    );
    for (header, expected) in &case.headers {
        assert_eq!(
            seen.headers.get(*header).map(|v| v.to_str().unwrap()),
            *expected,
            "{name}: header {header}"
        );
    }
    assert_eq!(seen.body["model"], case.model, "{name}: {}", seen.body);
    for (pointer, expected) in fields {
        assert_eq!(
            seen.body.pointer(pointer).unwrap_or(&Value::Null),
            expected,
            "{name}: {pointer} in {}",
            seen.body
        );
    }
}

/// The provider's own file describes it: default API base, default timeout, what it needs.
pub fn identity(case: &Case) {
    let name = case.name();
    let described = providers::descriptor(case.id);
    assert_eq!(described.id, case.id, "{name}");
    assert_eq!(
        providers::default_base_url(case.id),
        case.default_base_url,
        "{name}"
    );
    assert_eq!(described.default_timeout, case.default_timeout, "{name}");
    assert_eq!(described.requires, case.requires, "{name}");
    assert_eq!(
        case.adapter(case.default_base_url.to_owned(), TIMEOUT).id(),
        case.id,
        "{name}"
    );
}

/// `ATRIUM_<PROVIDER>_BASE_URL` and `ATRIUM_<PROVIDER>_API_KEY` configure the provider in the
/// gateway: it is available once what it requires is set, and then answers for its models.
pub async fn configured(case: &Case) {
    let name = case.name();
    let fake = Fake::start(case).await;
    let upper = name.to_ascii_uppercase();
    let base_var = format!("ATRIUM_{upper}_BASE_URL");
    let key_var = format!("ATRIUM_{upper}_API_KEY");
    let gateway = |vars: Vec<(String, String)>| {
        Gateway::from_env(Catalog::builtin(), move |var| {
            vars.iter().find(|(k, _)| k == var).map(|(_, v)| v.clone())
        })
    };
    assert!(!gateway(vec![]).available(case.id), "{name}");
    assert_eq!(
        gateway(vec![(base_var.clone(), fake.base_url.clone())]).available(case.id),
        case.requires == Requirement::BaseUrl,
        "{name}: with only a base URL"
    );
    assert_eq!(
        gateway(vec![(key_var.clone(), "some-key".into())]).available(case.id),
        case.requires == Requirement::ApiKey,
        "{name}: with only a key"
    );
    let mut vars = vec![(base_var, fake.base_url.clone())];
    if let Some(key) = case.api_key {
        vars.push((key_var, key.to_owned()));
    }
    let gateway = gateway(vars);
    assert!(gateway.available(case.id), "{name}");
    let selection = Selection {
        provider: Some(case.id),
        ..Selection::default()
    };
    let completed = gateway
        .chat(&selection, &hello())
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(completed.model.provider, case.id, "{name}");
    assert!(
        completed.failed.is_empty(),
        "{name}: {:?}",
        completed.failed
    );
    let seen = fake.last();
    assert_eq!(seen.body["model"], completed.model.id.as_str(), "{name}");
    for (header, expected) in &case.headers {
        assert_eq!(
            seen.headers.get(*header).map(|v| v.to_str().unwrap()),
            *expected,
            "{name}: header {header}"
        );
    }
}

/// The request reaches the provider's endpoint with its credentials, translated into its
/// protocol.
pub async fn request_shape(case: &Case) {
    let fake = Fake::start(case).await;
    case.adapter(fake.base_url.clone(), TIMEOUT)
        .chat(&shaped_request(), case.model)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", case.name()));
    assert_eq!(fake.calls(), 1, "{}", case.name());
    check_request(case, &fake.last(), &case.sent);
}

/// The answer comes back in OpenAI's shape with the provider's token counts.
pub async fn answer_shape(case: &Case) {
    let name = case.name();
    let fake = Fake::start(case).await;
    let outcome = case
        .adapter(fake.base_url.clone(), TIMEOUT)
        .chat(&hello(), case.model)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(outcome.message["role"], "assistant", "{name}");
    assert_eq!(
        outcome.message["content"],
        format!("{name} says hi"),
        "{name}"
    );
    assert_eq!(outcome.finish_reason, "stop", "{name}");
    assert_eq!(
        (outcome.prompt_tokens, outcome.completion_tokens),
        case.usage,
        "{name}"
    );
}

/// A stream becomes OpenAI deltas, one finish reason and the provider's token counts (which
/// may come in parts; later values win).
pub async fn streaming(case: &Case) {
    let name = case.name();
    let fake = Fake::start(case).await;
    let events: Vec<StreamEvent> = case
        .adapter(fake.base_url.clone(), TIMEOUT)
        .chat_stream(&hello(), case.model)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .map(|e| e.unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect()
        .await;
    check_request(case, &fake.last(), &case.sent_streaming);
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Delta(delta) => delta["content"].as_str(),
            _ => None,
        })
        .collect();
    assert_eq!(text, format!("{name} says hi"), "{name}: {events:?}");
    let finishes: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Finish(reason) => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(finishes, ["stop"], "{name}: {events:?}");
    let mut usage = (None, None);
    for event in &events {
        if let StreamEvent::Usage {
            prompt_tokens,
            completion_tokens,
        } = event
        {
            usage = (prompt_tokens.or(usage.0), completion_tokens.or(usage.1));
        }
    }
    assert_eq!(
        usage,
        (Some(case.usage.0), Some(case.usage.1)),
        "{name}: {events:?}"
    );
}

fn expect_status(name: &str, error: &UpstreamError, status: u16) {
    match error {
        UpstreamError::Status { status: got, body } => {
            assert_eq!(*got, status, "{name}");
            assert!(
                body.contains(&format!("injected {status}")),
                "{name}: {body}"
            );
        }
        other => panic!("{name}: {status} became {other:?}"),
    }
    assert_eq!(
        error.should_fall_back(),
        status == 429 || status >= 500,
        "{name}: {status}"
    );
}

/// An error status, plain or streamed, is reported with its status and body, so that the
/// gateway falls back on 429 and 5xx only.
pub async fn error_statuses(case: &Case) {
    let name = case.name();
    let fake = Fake::start(case).await;
    let adapter = case.adapter(fake.base_url.clone(), TIMEOUT);
    for status in [400, 401, 404, 422, 429, 500, 502, 503] {
        fake.fail(status);
        let error = adapter.chat(&hello(), case.model).await.unwrap_err();
        expect_status(name, &error, status);
        let Err(error) = adapter.chat_stream(&hello(), case.model).await else {
            panic!("{name}: a stream opened on {status}");
        };
        expect_status(name, &error, status);
    }
}

/// An upstream nobody listens on is a connection error and one that answers too late a
/// timeout, plain or streamed; both make the gateway fall back.
pub async fn unreachable_and_slow(case: &Case) {
    let name = case.name();
    // A port nobody listens on: bind, note it, close it.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap();
    let adapter = case.adapter(format!("http://{dead}{}", case.base_path), TIMEOUT);
    let error = adapter.chat(&hello(), case.model).await.unwrap_err();
    assert!(
        matches!(error, UpstreamError::Connect(_))
            && error.to_string().contains("connection failed"),
        "{name}: {error:?}"
    );
    assert!(error.should_fall_back(), "{name}");
    let Err(error) = adapter.chat_stream(&hello(), case.model).await else {
        panic!("{name}: a stream opened on a dead port");
    };
    assert!(
        matches!(error, UpstreamError::Connect(_)),
        "{name}: {error:?}"
    );

    let fake = Fake::start(case).await;
    fake.delay(Duration::from_millis(500));
    let short = Duration::from_millis(100);
    let adapter = case.adapter(fake.base_url.clone(), short);
    let error = adapter.chat(&hello(), case.model).await.unwrap_err();
    assert_eq!(error, UpstreamError::Timeout(short), "{name}");
    assert!(error.should_fall_back(), "{name}");
    let Err(error) = adapter.chat_stream(&hello(), case.model).await else {
        panic!("{name}: a stream opened after its timeout");
    };
    assert_eq!(error, UpstreamError::Timeout(short), "{name}");
}

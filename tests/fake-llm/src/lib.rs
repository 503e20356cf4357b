//! One fake model for every test: a local LLM upstream on loopback that speaks the providers'
//! wire formats, answers from a script, fails on demand and records every request.
//!
//! [`FakeLlm::start`] serves on `127.0.0.1:0`. The first segment of a request's path names an
//! [`Upstream`] (`/ovh/v1/chat/completions` reaches the upstream `ovh`), so one fake stands in
//! for several providers at once: point each at [`FakeLlm::base_url`] of its own name. The end
//! of the path picks the [`Protocol`]:
//!
//! | Path ends with | Protocol |
//! |---|---|
//! | `/chat/completions` | OpenAI's chat completions: one JSON answer, or SSE chunks ending with `data: [DONE]` |
//! | `/v1/messages` | Anthropic's Messages API: typed SSE events when streamed |
//! | `/api/chat` | Ollama's chat: newline-delimited JSON when streamed |
//! | `/embeddings` | OpenAI's embeddings |
//! | `/api/embed` | Ollama's embeddings |
//!
//! Any other path is answered 404. A request streams when its body has `"stream": true`.
//!
//! Each upstream answers the next [`Reply`] of its script ([`Upstream::push`]): a text, tool
//! calls, an error status, a hang, a stream that stalls or whose connection drops. With the
//! script empty it answers its default reply, `"{upstream} says hi"` unless
//! [`Upstream::answer_by_default`] says otherwise (for instance [`Reply::echo`]). Settings that
//! hold for every request ([`Upstream::fail`], [`Upstream::delay`], [`Upstream::slow`],
//! [`Upstream::close`]) come before the script. Every request is counted and kept
//! ([`Upstream::calls`], [`Upstream::requests`], [`Upstream::last`]).
//!
//! ```
//! use atrium_fake_llm::{FakeLlm, Reply};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let llm = FakeLlm::start().await;
//! let openai = llm.upstream("openai");
//! openai.push(Reply::tool_call("get_weather", json!({"city": "Lyon"})));
//! openai.push(Reply::status(503));
//!
//! let client = reqwest::Client::new();
//! let url = format!("{}/v1/chat/completions", llm.base_url("openai"));
//! let body = json!({"model": "gpt-4.1", "messages": [{"role": "user", "content": "Weather?"}]});
//! let answer: serde_json::Value =
//!     client.post(&url).json(&body).send().await.unwrap().json().await.unwrap();
//! assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
//! let call = &answer["choices"][0]["message"]["tool_calls"][0];
//! assert_eq!(call["function"]["name"], "get_weather");
//! assert_eq!(call["function"]["arguments"], r#"{"city":"Lyon"}"#);
//!
//! let failed = client.post(&url).json(&body).send().await.unwrap();
//! assert_eq!(failed.status(), 503);
//! // The script is used up: the default reply.
//! let answer: serde_json::Value =
//!     client.post(&url).json(&body).send().await.unwrap().json().await.unwrap();
//! assert_eq!(answer["choices"][0]["message"]["content"], "openai says hi");
//!
//! assert_eq!(openai.calls(), 3);
//! let last = openai.last().unwrap();
//! assert_eq!(last.path, "/openai/v1/chat/completions");
//! assert_eq!(last.body["messages"][0]["content"], "Weather?");
//! # }
//! ```

mod reply;
mod wire;

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::Uri;
use axum::response::Response;
use serde_json::Value;
use tokio::sync::Semaphore;

/// The headers of a recorded [`Request`].
pub use axum::http::HeaderMap;
pub use reply::{Reply, ToolCall};
pub use wire::embedding;

/// How long a [`Upstream::slow`] upstream waits before a plain answer.
pub const SLOW_ANSWER: Duration = Duration::from_millis(400);

/// How long a [`Upstream::slow`] upstream pauses a stream after its first piece.
pub const SLOW_STREAM_PAUSE: Duration = Duration::from_secs(30);

/// The vector size of embeddings unless [`Upstream::dimensions`] says otherwise (that of
/// `atrium_inference::embed::DIMENSIONS`).
pub const DEFAULT_DIMENSIONS: usize = 1024;

/// A wire protocol the fake speaks, chosen by the end of the request's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// OpenAI's chat completions (`POST {base}/chat/completions`), which Mistral and OVH
    /// share: one JSON answer, or SSE chunks ending with `data: [DONE]`; the usage chunk comes
    /// when `stream_options.include_usage` asks for it (always with
    /// [`Upstream::always_report_usage`]).
    ChatCompletions,
    /// Anthropic's Messages API (`POST {base}/v1/messages`): typed SSE events when streamed.
    Messages,
    /// Ollama's native chat (`POST {base}/api/chat`): newline-delimited JSON when streamed.
    OllamaChat,
    /// OpenAI's embeddings (`POST {base}/embeddings`): `data` holds one vector per input, in
    /// reverse order (the `index` field decides).
    Embeddings,
    /// Ollama's embeddings (`POST {base}/api/embed`): `embeddings` in the inputs' order.
    OllamaEmbed,
}

impl Protocol {
    /// Every protocol.
    pub const ALL: [Protocol; 5] = [
        Protocol::ChatCompletions,
        Protocol::Messages,
        Protocol::OllamaChat,
        Protocol::Embeddings,
        Protocol::OllamaEmbed,
    ];

    /// The end of the path a client posts to, after its base URL.
    pub fn endpoint(self) -> &'static str {
        match self {
            Protocol::ChatCompletions => "/chat/completions",
            Protocol::Messages => "/v1/messages",
            Protocol::OllamaChat => "/api/chat",
            Protocol::Embeddings => "/embeddings",
            Protocol::OllamaEmbed => "/api/embed",
        }
    }

    /// The protocol of a request at `path`, if the fake speaks one there.
    pub fn of_path(path: &str) -> Option<Protocol> {
        Protocol::ALL
            .into_iter()
            .find(|p| path.ends_with(p.endpoint()))
    }

    /// Whether this is one of the embeddings protocols.
    pub fn embeds(self) -> bool {
        matches!(self, Protocol::Embeddings | Protocol::OllamaEmbed)
    }
}

/// One request an upstream received.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request path, from the fake's root (`/ovh/v1/chat/completions`).
    pub path: String,
    /// The request headers.
    pub headers: HeaderMap,
    /// The JSON body (`null` when it was not JSON).
    pub body: Value,
}

impl Request {
    /// A header's value, if present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Whether the request asked for a stream (`"stream": true`).
    pub fn streams(&self) -> bool {
        self.body["stream"] == true
    }

    /// The text of the last user message (its text parts joined, for a list of parts), if any.
    pub fn last_user_text(&self) -> Option<String> {
        last_user_text(&self.body)
    }
}

/// The text of the last user message of a chat request's `body`.
fn last_user_text(body: &Value) -> Option<String> {
    let message = body["messages"]
        .as_array()?
        .iter()
        .rev()
        .find(|m| m["role"] == "user")?;
    match &message["content"] {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    }
}

/// What an upstream answers and what it saw.
struct Settings {
    calls: usize,
    requests: Vec<Request>,
    keep_requests: bool,
    script: VecDeque<Reply>,
    default: Reply,
    fail_with: Option<u16>,
    delay: Option<Duration>,
    slow: bool,
    gate: Option<Arc<Semaphore>>,
    only: Option<Protocol>,
    always_report_usage: bool,
    usage: Option<(u64, u64)>,
    dimensions: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            calls: 0,
            requests: Vec::new(),
            keep_requests: true,
            script: VecDeque::new(),
            default: Reply::greeting(),
            fail_with: None,
            delay: None,
            slow: false,
            gate: None,
            only: None,
            always_report_usage: false,
            usage: None,
            dimensions: DEFAULT_DIMENSIONS,
        }
    }
}

struct UpstreamState {
    name: String,
    settings: Mutex<Settings>,
}

/// One upstream of a [`FakeLlm`]: the requests whose path starts with `/{name}`. A cheap
/// handle; clones share the upstream.
#[derive(Clone)]
pub struct Upstream(Arc<UpstreamState>);

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.0.name)
            .field("calls", &self.calls())
            .finish_non_exhaustive()
    }
}

impl Upstream {
    fn settings(&self) -> MutexGuard<'_, Settings> {
        // A test that panicked while holding the lock leaves the settings usable.
        self.0
            .settings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The upstream's name: the first segment of its requests' paths.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Adds `reply` to the end of the script: the answer to a later request.
    pub fn push(&self, reply: Reply) {
        self.settings().script.push_back(reply);
    }

    /// Adds `replies` to the end of the script, in order.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.settings().script.extend(replies);
    }

    /// Drops the replies of the script still to be used (a test that cuts runs short starts
    /// each try from the same script).
    pub fn forget_script(&self) {
        self.settings().script.clear();
    }

    /// How many scripted replies are still to be used.
    pub fn scripted(&self) -> usize {
        self.settings().script.len()
    }

    /// What the upstream answers once its script is used up (by default
    /// [`Reply::greeting`]).
    pub fn answer_by_default(&self, reply: Reply) {
        self.settings().default = reply;
    }

    /// Answers every request from now on with `status` and an error body in the protocol's
    /// shape whose message is `injected {status}`, before the script and without waiting.
    pub fn fail(&self, status: u16) {
        self.settings().fail_with = Some(status);
    }

    /// Stops failing every request ([`Upstream::fail`]).
    pub fn recover(&self) {
        self.settings().fail_with = None;
    }

    /// Waits `by` before each answer (plain, or a stream's headers).
    pub fn delay(&self, by: Duration) {
        self.settings().delay = Some(by);
    }

    /// Answers slowly: plain answers after [`SLOW_ANSWER`], streams with a pause of
    /// [`SLOW_STREAM_PAUSE`] after their first piece (to let a client leave mid-stream).
    pub fn slow(&self) {
        self.settings().slow = true;
    }

    /// Holds every request, once counted, until [`Upstream::open`].
    pub fn close(&self) {
        self.settings().gate = Some(Arc::new(Semaphore::new(0)));
    }

    /// Lets the requests held by [`Upstream::close`] and every later one through.
    pub fn open(&self) {
        if let Some(gate) = self.settings().gate.take() {
            gate.close();
        }
    }

    /// Speaks `protocol` only: a request at another protocol's endpoint is answered 404.
    pub fn only(&self, protocol: Protocol) {
        self.settings().only = Some(protocol);
    }

    /// Ends OpenAI streams with a usage chunk even when the request did not ask for one (as
    /// Mistral does).
    pub fn always_report_usage(&self) {
        self.settings().always_report_usage = true;
    }

    /// Reports these token counts instead of the protocol's defaults (chat completions 10 and
    /// 5, Messages 20 and 8, Ollama 6 and 3; embeddings 7 input tokens per input, Ollama's 5).
    /// Embeddings report `prompt` alone.
    pub fn usage(&self, prompt: u64, completion: u64) {
        self.settings().usage = Some((prompt, completion));
    }

    /// Answers embeddings of `dimensions` numbers ([`DEFAULT_DIMENSIONS`] until then).
    pub fn dimensions(&self, dimensions: usize) {
        self.settings().dimensions = dimensions;
    }

    /// Whether requests are kept for [`Upstream::requests`] (they are by default; a benchmark
    /// sending many turns it off). They are counted either way.
    pub fn keep_requests(&self, keep: bool) {
        self.settings().keep_requests = keep;
    }

    /// How many requests arrived, whatever they were answered.
    pub fn calls(&self) -> usize {
        self.settings().calls
    }

    /// Every request kept so far, in the order they arrived.
    pub fn requests(&self) -> Vec<Request> {
        self.settings().requests.clone()
    }

    /// The last request kept, if any.
    pub fn last(&self) -> Option<Request> {
        self.settings().requests.last().cloned()
    }

    /// Forgets the requests kept so far and sets the count back to zero.
    pub fn forget_requests(&self) {
        let mut settings = self.settings();
        settings.requests.clear();
        settings.calls = 0;
    }
}

/// Every upstream of one fake, by name.
#[derive(Default)]
struct Upstreams(Mutex<HashMap<String, Upstream>>);

impl Upstreams {
    fn get(&self, name: &str) -> Upstream {
        let mut upstreams = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(upstream) = upstreams.get(name) {
            return upstream.clone();
        }
        let upstream = Upstream(Arc::new(UpstreamState {
            name: name.to_owned(),
            settings: Mutex::new(Settings::default()),
        }));
        upstreams.insert(name.to_owned(), upstream.clone());
        upstream
    }
}

/// A fake LLM server on loopback. A cheap handle; clones share the server, which serves until
/// its runtime stops ([`FakeLlm::start`]) or the process ends ([`FakeLlm::start_in_thread`]).
#[derive(Clone)]
pub struct FakeLlm {
    addr: SocketAddr,
    upstreams: Arc<Upstreams>,
}

impl std::fmt::Debug for FakeLlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeLlm")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeLlm {
    /// Starts a fake on `127.0.0.1:0`, served by a task of the current Tokio runtime.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound.
    pub async fn start() -> FakeLlm {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("the fake LLM cannot bind a loopback port: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("the fake LLM's port: {e}"));
        let upstreams = Arc::new(Upstreams::default());
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(upstreams.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeLlm { addr, upstreams }
    }

    /// Starts a fake on `127.0.0.1:0` on a thread and Tokio runtime of its own (two workers),
    /// for blocking tests and for benchmarks whose own runtime is busy. It serves until the
    /// process ends.
    ///
    /// # Panics
    ///
    /// When no loopback port can be bound or the thread cannot start.
    pub fn start_in_thread() -> FakeLlm {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("the fake LLM cannot bind a loopback port: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("the fake LLM's port: {e}"));
        listener
            .set_nonblocking(true)
            .unwrap_or_else(|e| panic!("the fake LLM's listener: {e}"));
        let upstreams = Arc::new(Upstreams::default());
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(upstreams.clone());
        std::thread::Builder::new()
            .name("fake-llm".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap_or_else(|e| panic!("the fake LLM's runtime: {e}"));
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)
                        .unwrap_or_else(|e| panic!("the fake LLM's listener: {e}"));
                    let _ = axum::serve(listener, app).await;
                });
            })
            .unwrap_or_else(|e| panic!("the fake LLM's thread: {e}"));
        FakeLlm { addr, upstreams }
    }

    /// The address the fake listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The fake's root URL, `http://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The base URL of the upstream `name`, `http://127.0.0.1:{port}/{name}`: append what the
    /// provider's base URL holds after its host (`/v1` for OpenAI's, nothing for Ollama's).
    pub fn base_url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// The upstream `name` (created empty the first time it is named or reached).
    pub fn upstream(&self, name: &str) -> Upstream {
        self.upstreams.get(name)
    }

    /// How many requests reached the upstream `name`: `self.upstream(name).calls()`.
    pub fn calls(&self, name: &str) -> usize {
        self.upstream(name).calls()
    }
}

/// What one request is answered with, decided as it arrives.
enum Decision {
    NoRoute,
    Fail(Protocol, u16),
    Answer {
        protocol: Protocol,
        reply: Box<Reply>,
        gate: Option<Arc<Semaphore>>,
        delay: Option<Duration>,
        slow: bool,
        context: wire::Context,
    },
}

/// Counts and keeps the request, then picks its answer (the script is read in arrival order).
fn decide(upstream: &Upstream, request: Request) -> Decision {
    let protocol = Protocol::of_path(&request.path);
    let mut settings = upstream.settings();
    settings.calls += 1;
    let streams = request.streams();
    let body = if settings.keep_requests {
        let body = request.body.clone();
        settings.requests.push(request);
        body
    } else {
        request.body
    };
    let Some(protocol) = protocol.filter(|p| settings.only.is_none_or(|only| only == *p)) else {
        return Decision::NoRoute;
    };
    if let Some(status) = settings.fail_with {
        return Decision::Fail(protocol, status);
    }
    let reply = match settings.script.pop_front() {
        Some(reply) => reply,
        None => settings.default.clone(),
    };
    Decision::Answer {
        protocol,
        reply: Box::new(reply),
        gate: settings.gate.clone(),
        delay: settings.delay,
        slow: settings.slow,
        context: wire::Context {
            name: upstream.name().to_owned(),
            body,
            streams,
            always_report_usage: settings.always_report_usage,
            usage: settings.usage,
            dimensions: settings.dimensions,
        },
    }
}

async fn answer(
    State(upstreams): State<Arc<Upstreams>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let name = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let upstream = upstreams.get(name);
    let request = Request {
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        path,
        headers,
    };
    match decide(&upstream, request) {
        Decision::NoRoute => wire::no_route(),
        Decision::Fail(protocol, status) => {
            wire::error(protocol, status, &format!("injected {status}"))
        }
        Decision::Answer {
            protocol,
            reply,
            gate,
            delay,
            slow,
            context,
        } => {
            if let Some(gate) = gate {
                // Closed by `open`: the wait ends with an error, and the request goes on.
                let _ = gate.acquire().await;
            }
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            if slow && !context.streams {
                tokio::time::sleep(SLOW_ANSWER).await;
            }
            let reply = if slow && context.streams {
                reply.stalling_unless_set(1, SLOW_STREAM_PAUSE)
            } else {
                *reply
            };
            wire::render(protocol, reply, &context).await
        }
    }
}

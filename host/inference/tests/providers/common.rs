//! The contract, written once: the checks every provider's adapter must pass against a fake
//! upstream on loopback that speaks its wire protocol (`atrium-fake-llm`).

use std::sync::Arc;
use std::time::Duration;

use atrium_fake_llm::{FakeLlm, Protocol, Request, Upstream};
use atrium_inference::providers::stream::StreamEvent;
use atrium_inference::providers::{
    self, ChatRequest, Provider, ProviderConfig, Requirement, UpstreamError,
};
use atrium_inference::{Catalog, Gateway, ProviderId, Selection};
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
    /// The protocol the fake speaks.
    pub fn protocol(self) -> Protocol {
        match self {
            Wire::ChatCompletions { .. } => Protocol::ChatCompletions,
            Wire::Messages => Protocol::Messages,
            Wire::OllamaChat => Protocol::OllamaChat,
        }
    }

    /// The path the adapter posts to, under its base URL.
    pub fn endpoint(self) -> &'static str {
        self.protocol().endpoint()
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

/// Starts a fake upstream on loopback speaking `case`'s protocol (and answering 404 at any
/// other endpoint) with `"{provider} says hi"`; it records each request and fails or answers
/// late on demand. Returns the base URL to configure the provider with, and the fake.
pub async fn fake(case: &Case) -> (String, Upstream) {
    let llm = FakeLlm::start().await;
    // The base path starts with the provider's name, which names the fake's upstream.
    assert!(
        case.base_path.starts_with(&format!("/{}", case.name())),
        "{}: {}",
        case.name(),
        case.base_path
    );
    let upstream = llm.upstream(case.name());
    upstream.only(case.wire.protocol());
    if let Wire::ChatCompletions {
        usage_unasked: true,
    } = case.wire
    {
        upstream.always_report_usage();
    }
    (format!("{}{}", llm.url(), case.base_path), upstream)
}

fn check_request(case: &Case, seen: &Request, fields: &[(&'static str, Value)]) {
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
    let (base_url, fake) = fake(case).await;
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
        gateway(vec![(base_var.clone(), base_url.clone())]).available(case.id),
        case.requires == Requirement::BaseUrl,
        "{name}: with only a base URL"
    );
    assert_eq!(
        gateway(vec![(key_var.clone(), "some-key".into())]).available(case.id),
        case.requires == Requirement::ApiKey,
        "{name}: with only a key"
    );
    let mut vars = vec![(base_var, base_url.clone())];
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
    let seen = fake.last().unwrap();
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
    let (base_url, fake) = fake(case).await;
    case.adapter(base_url.clone(), TIMEOUT)
        .chat(&shaped_request(), case.model)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", case.name()));
    assert_eq!(fake.calls(), 1, "{}", case.name());
    check_request(case, &fake.last().unwrap(), &case.sent);
}

/// The answer comes back in OpenAI's shape with the provider's token counts.
pub async fn answer_shape(case: &Case) {
    let name = case.name();
    let (base_url, _) = fake(case).await;
    let outcome = case
        .adapter(base_url.clone(), TIMEOUT)
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
    let (base_url, fake) = fake(case).await;
    let events: Vec<StreamEvent> = case
        .adapter(base_url.clone(), TIMEOUT)
        .chat_stream(&hello(), case.model)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .map(|e| e.unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect()
        .await;
    check_request(case, &fake.last().unwrap(), &case.sent_streaming);
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
    let (base_url, fake) = fake(case).await;
    let adapter = case.adapter(base_url.clone(), TIMEOUT);
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

    let (base_url, fake) = fake(case).await;
    fake.delay(Duration::from_millis(500));
    let short = Duration::from_millis(100);
    let adapter = case.adapter(base_url.clone(), short);
    let error = adapter.chat(&hello(), case.model).await.unwrap_err();
    assert_eq!(error, UpstreamError::Timeout(short), "{name}");
    assert!(error.should_fall_back(), "{name}");
    let Err(error) = adapter.chat_stream(&hello(), case.model).await else {
        panic!("{name}: a stream opened after its timeout");
    };
    assert_eq!(error, UpstreamError::Timeout(short), "{name}");
}

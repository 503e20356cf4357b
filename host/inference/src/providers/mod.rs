//! Provider adapters: one file per provider, behind [`Provider`].
//!
//! Each provider's file owns its identity, a [`Descriptor`]: its default API base, its default
//! timeout, what must be configured for it to be available, and how its adapter is built.
//! [`descriptor`] is the one place that maps a [`ProviderId`] to its file (an exhaustive
//! `match`, so a new provider does not compile until it has one); [`build`] and
//! [`default_base_url`] go through it. Nothing here reads the configuration file: the caller
//! passes a [`ProviderConfig`].
//!
//! A [`ChatRequest`] is the OpenAI-shaped request the client sent (messages and the standard
//! fields); each adapter speaks its provider's own wire protocol and answers a
//! [`ChatOutcome`] in OpenAI's shape. Failures are [`UpstreamError`]s, which say whether
//! another backend should be tried.

pub mod anthropic;
pub mod mistral;
pub mod ollama;
pub mod openai;
mod openai_compat;
pub mod ovh;
pub mod stream;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value};

pub use anthropic::Anthropic;
pub use mistral::Mistral;
pub use ollama::Ollama;
pub use openai::OpenAi;
pub use ovh::Ovh;

use crate::ProviderId;

/// How long one upstream call may take when the configuration does not say; every provider
/// uses it today.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// What must be configured for a provider to be available.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement {
    /// An API key (`ATRIUM_<PROVIDER>_API_KEY` or `api_key`); the base URL has a default.
    ApiKey,
    /// A base URL (`ATRIUM_<PROVIDER>_BASE_URL` or `base_url`): a server the operator runs,
    /// which needs no key.
    BaseUrl,
}

/// A provider's identity: what the host knows of it before any configuration. Each provider's
/// file has one, `DESCRIPTOR`.
#[derive(Debug, Clone, Copy)]
pub struct Descriptor {
    /// Which provider.
    pub id: ProviderId,
    /// The API base when none is configured.
    pub default_base_url: &'static str,
    /// How long a call may take when the configuration does not say.
    pub default_timeout: Duration,
    /// What must be configured for the provider to be available.
    pub requires: Requirement,
    /// Builds the adapter for a configuration.
    pub build: fn(reqwest::Client, ProviderConfig) -> Arc<dyn Provider>,
}

/// The descriptor of `id`, from the provider's own file.
pub fn descriptor(id: ProviderId) -> Descriptor {
    match id {
        ProviderId::Openai => openai::DESCRIPTOR,
        ProviderId::Anthropic => anthropic::DESCRIPTOR,
        ProviderId::Mistral => mistral::DESCRIPTOR,
        ProviderId::Ollama => ollama::DESCRIPTOR,
        ProviderId::Ovh => ovh::DESCRIPTOR,
    }
}

/// The adapter of `id` for `config`, sharing `client`'s connection pool.
pub fn build(id: ProviderId, client: reqwest::Client, config: ProviderConfig) -> Arc<dyn Provider> {
    (descriptor(id).build)(client, config)
}

/// The API base of `id` when none is configured.
pub fn default_base_url(id: ProviderId) -> &'static str {
    descriptor(id).default_base_url
}

/// The standard OpenAI request fields passed on (or translated) to providers.
pub const PASSTHROUGH_FIELDS: &[&str] = &[
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "tools",
    "tool_choice",
    "response_format",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "n",
    "user",
    "logprobs",
    "top_logprobs",
    "parallel_tool_calls",
];

/// A chat request in OpenAI's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// `messages`, as sent.
    pub messages: Vec<Value>,
    /// The standard fields that were present (see [`PASSTHROUGH_FIELDS`]).
    pub params: Map<String, Value>,
}

impl ChatRequest {
    /// A standard field, if present.
    pub fn param(&self, name: &str) -> Option<&Value> {
        self.params.get(name)
    }
}

/// A provider's answer in OpenAI's shape.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatOutcome {
    /// The assistant message: `role`, `content` and, when the model calls tools, `tool_calls`.
    pub message: Value,
    /// `stop`, `length`, `tool_calls`, `content_filter`.
    pub finish_reason: String,
    /// Input tokens as the provider counted them.
    pub prompt_tokens: u64,
    /// Output tokens as the provider counted them.
    pub completion_tokens: u64,
}

/// Why an upstream call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// No connection could be made.
    #[error("connection failed: {0}")]
    Connect(String),
    /// The provider did not answer in time.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The provider answered with an error status.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// The answer did not follow the provider's protocol.
    #[error("unexpected answer: {0}")]
    Protocol(String),
    /// The host did not send the request: as many as the provider's limit were already in
    /// flight to it (the provider has fallen behind, or the host's load is past its share).
    #[error("not sent: {}", limit_reached(.limit))]
    Busy {
        /// The provider's limit of requests in flight.
        limit: usize,
    },
}

fn limit_reached(limit: &usize) -> String {
    let plural = if *limit == 1 { "" } else { "s" };
    format!("its limit of {limit} request{plural} in flight was reached")
}

impl UpstreamError {
    /// Whether another backend should be tried: connection errors, timeouts, 429, 5xx, and a
    /// provider that had as many requests in flight as its limit.
    pub fn should_fall_back(&self) -> bool {
        match self {
            UpstreamError::Connect(_) | UpstreamError::Timeout(_) | UpstreamError::Busy { .. } => {
                true
            }
            UpstreamError::Status { status, .. } => *status == 429 || *status >= 500,
            UpstreamError::Protocol(_) => false,
        }
    }
}

/// How to reach a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The API base URL (for example `https://api.mistral.ai/v1`).
    pub base_url: String,
    /// The API key, if the provider needs one.
    pub api_key: Option<String>,
    /// How long a call may take.
    pub timeout: Duration,
}

/// A chat backend.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Which provider this is.
    fn id(&self) -> ProviderId;

    /// Runs one chat completion with `model`.
    async fn chat(&self, request: &ChatRequest, model: &str) -> Result<ChatOutcome, UpstreamError>;

    /// Runs one chat completion with `model`, streamed. An error before the first event is
    /// returned here (so the gateway can fall back); one during the stream ends the stream.
    async fn chat_stream(
        &self,
        request: &ChatRequest,
        model: &str,
    ) -> Result<stream::EventStream, UpstreamError>;
}

/// Sends a JSON request and reads a JSON answer, mapping transport failures.
pub(crate) async fn send_json(
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<Value, UpstreamError> {
    let response = request
        .timeout(timeout)
        .send()
        .await
        .map_err(|e| transport_error(&e, timeout))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|e| transport_error(&e, timeout))?;
    if !status.is_success() {
        let body: String = text.chars().take(500).collect();
        return Err(UpstreamError::Status {
            status: status.as_u16(),
            body,
        });
    }
    serde_json::from_str(&text)
        .map_err(|e| UpstreamError::Protocol(format!("the body is not JSON: {e}")))
}

pub(crate) fn transport_error(error: &reqwest::Error, timeout: Duration) -> UpstreamError {
    if error.is_timeout() {
        UpstreamError::Timeout(timeout)
    } else if error.is_connect() {
        UpstreamError::Connect(error.to_string())
    } else {
        UpstreamError::Connect(format!("{error}"))
    }
}

/// Reads a token count from a usage object.
pub(crate) fn count(usage: Option<&Value>, field: &str) -> u64 {
    usage
        .and_then(|u| u.get(field))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_is_described_by_its_own_file() {
        for id in ProviderId::ALL {
            let described = descriptor(id);
            assert_eq!(described.id, id);
            let config = ProviderConfig {
                base_url: default_base_url(id).to_owned(),
                api_key: None,
                timeout: described.default_timeout,
            };
            assert_eq!(build(id, reqwest::Client::new(), config).id(), id);
        }
    }

    #[test]
    fn connection_errors_timeouts_429_and_5xx_fall_back_and_nothing_else_does() {
        let status = |status| UpstreamError::Status {
            status,
            body: String::new(),
        };
        assert!(UpstreamError::Connect("refused".into()).should_fall_back());
        assert!(UpstreamError::Timeout(std::time::Duration::from_secs(1)).should_fall_back());
        assert!(UpstreamError::Busy { limit: 1 }.should_fall_back());
        for code in [429, 500, 502, 503, 504] {
            assert!(status(code).should_fall_back(), "{code}");
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(!status(code).should_fall_back(), "{code}");
        }
        assert!(!UpstreamError::Protocol("garbage".into()).should_fall_back());
    }
}

//! Mistral AI: the OpenAI-shaped chat API with Mistral's differences: `tool_choice: "required"`
//! is `"any"`, `seed` is `random_seed`, and `max_completion_tokens` is `max_tokens`; fields
//! Mistral does not take (`logprobs`, `top_logprobs`, `user`) are dropped rather than refused.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::{
    ChatOutcome, ChatRequest, DEFAULT_TIMEOUT, Descriptor, Provider, ProviderConfig, Requirement,
    UpstreamError, openai_compat,
};
use crate::ProviderId;

/// The default API base.
pub const DEFAULT_BASE_URL: &str = "https://api.mistral.ai/v1";

/// Mistral AI's identity: a key required.
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: ProviderId::Mistral,
    default_base_url: DEFAULT_BASE_URL,
    default_timeout: DEFAULT_TIMEOUT,
    requires: Requirement::ApiKey,
    build: |client, config| Arc::new(Mistral::new(client, config)),
};

/// Mistral's chat completions.
pub struct Mistral {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl Mistral {
    /// An adapter for `config`.
    pub fn new(client: reqwest::Client, config: ProviderConfig) -> Self {
        Mistral { client, config }
    }
}

#[async_trait]
impl Provider for Mistral {
    fn id(&self) -> ProviderId {
        DESCRIPTOR.id
    }

    async fn chat(&self, request: &ChatRequest, model: &str) -> Result<ChatOutcome, UpstreamError> {
        openai_compat::complete(&self.client, &self.config, mistral_body(request, model)).await
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        model: &str,
    ) -> Result<super::stream::EventStream, UpstreamError> {
        // Mistral reports usage in its last chunk without being asked.
        openai_compat::stream(
            &self.client,
            &self.config,
            mistral_body(request, model),
            false,
        )
        .await
    }
}

fn mistral_body(request: &ChatRequest, model: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut body = openai_compat::body(request, model);
    if body.get("tool_choice").and_then(|v| v.as_str()) == Some("required") {
        body.insert("tool_choice".into(), json!("any"));
    }
    if let Some(seed) = body.remove("seed") {
        body.insert("random_seed".into(), seed);
    }
    if let Some(max) = body.remove("max_completion_tokens") {
        body.entry("max_tokens").or_insert(max);
    }
    for unsupported in ["logprobs", "top_logprobs", "user"] {
        body.remove(unsupported);
    }
    body
}

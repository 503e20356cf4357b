//! OVHcloud AI Endpoints: OpenAI-compatible chat completions on EU infrastructure. The
//! endpoints serve open models; `max_completion_tokens` is sent as `max_tokens`, which they
//! all accept.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    ChatOutcome, ChatRequest, DEFAULT_TIMEOUT, Descriptor, Provider, ProviderConfig, Requirement,
    UpstreamError, openai_compat,
};
use crate::ProviderId;

/// The default API base (the unified OpenAI-compatible endpoint).
pub const DEFAULT_BASE_URL: &str = "https://oai.endpoints.kepler.ai.cloud.ovh.net/v1";

/// OVH AI Endpoints's identity: a key required.
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: ProviderId::Ovh,
    default_base_url: DEFAULT_BASE_URL,
    default_timeout: DEFAULT_TIMEOUT,
    requires: Requirement::ApiKey,
    build: |client, config| Arc::new(Ovh::new(client, config)),
};

/// OVH AI Endpoints' chat completions.
pub struct Ovh {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl Ovh {
    /// An adapter for `config`.
    pub fn new(client: reqwest::Client, config: ProviderConfig) -> Self {
        Ovh { client, config }
    }
}

#[async_trait]
impl Provider for Ovh {
    fn id(&self) -> ProviderId {
        DESCRIPTOR.id
    }

    async fn chat(&self, request: &ChatRequest, model: &str) -> Result<ChatOutcome, UpstreamError> {
        openai_compat::complete(&self.client, &self.config, ovh_body(request, model)).await
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        model: &str,
    ) -> Result<super::stream::EventStream, UpstreamError> {
        openai_compat::stream(&self.client, &self.config, ovh_body(request, model), true).await
    }
}

fn ovh_body(request: &ChatRequest, model: &str) -> serde_json::Map<String, serde_json::Value> {
    let mut body = openai_compat::body(request, model);
    if let Some(max) = body.remove("max_completion_tokens") {
        body.entry("max_tokens").or_insert(max);
    }
    body
}

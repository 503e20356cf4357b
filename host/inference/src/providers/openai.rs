//! OpenAI: the chat-completions API as is.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    ChatOutcome, ChatRequest, DEFAULT_TIMEOUT, Descriptor, Provider, ProviderConfig, Requirement,
    UpstreamError, openai_compat,
};
use crate::ProviderId;

/// The default API base.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// OpenAI's identity: a key required.
pub const DESCRIPTOR: Descriptor = Descriptor {
    id: ProviderId::Openai,
    default_base_url: DEFAULT_BASE_URL,
    default_timeout: DEFAULT_TIMEOUT,
    requires: Requirement::ApiKey,
    build: |client, config| Arc::new(OpenAi::new(client, config)),
};

/// OpenAI's chat completions.
pub struct OpenAi {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl OpenAi {
    /// An adapter for `config`.
    pub fn new(client: reqwest::Client, config: ProviderConfig) -> Self {
        OpenAi { client, config }
    }
}

#[async_trait]
impl Provider for OpenAi {
    fn id(&self) -> ProviderId {
        DESCRIPTOR.id
    }

    async fn chat(&self, request: &ChatRequest, model: &str) -> Result<ChatOutcome, UpstreamError> {
        openai_compat::complete(
            &self.client,
            &self.config,
            openai_compat::body(request, model),
        )
        .await
    }

    async fn chat_stream(
        &self,
        request: &ChatRequest,
        model: &str,
    ) -> Result<super::stream::EventStream, UpstreamError> {
        openai_compat::stream(
            &self.client,
            &self.config,
            openai_compat::body(request, model),
            true,
        )
        .await
    }
}

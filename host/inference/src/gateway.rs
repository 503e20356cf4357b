//! The gateway: providers built from the configuration, and a chat call that walks the routed
//! backends with fallback.
//!
//! Each provider is configured by `ATRIUM_<PROVIDER>_BASE_URL` (default: the provider's public
//! API, [`providers::default_base_url`]) and `ATRIUM_<PROVIDER>_API_KEY`, PROVIDER the
//! upper-case name of a [`ProviderId`], or by the configuration file ([`InferenceConfig`]). A
//! provider without a key is unavailable and routing skips it; Ollama needs no key and is
//! available when its base URL is set (its [`providers::Requirement`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::config::InferenceConfig;
use crate::providers::{self, ChatOutcome, ChatRequest, Provider, UpstreamError};
use crate::{Catalog, ModelInfo, ProviderId, RouteError, Selection, route};

/// One backend tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The provider.
    pub provider: ProviderId,
    /// The model.
    pub model: String,
    /// Why it failed.
    pub error: UpstreamError,
}

/// A completed chat call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    /// The answer.
    pub outcome: ChatOutcome,
    /// The backend that answered.
    pub model: ModelInfo,
    /// The backends that failed before it.
    pub failed: Vec<Attempt>,
}

/// A streamed chat call that has started.
pub struct Streaming {
    /// The events, as the backend sends them.
    pub events: providers::stream::EventStream,
    /// The backend that answers.
    pub model: ModelInfo,
    /// The backends that failed before it.
    pub failed: Vec<Attempt>,
}

/// Why a chat call produced no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GatewayError {
    /// No route (policy, invalid selection, nothing configured).
    #[error(transparent)]
    Route(#[from] RouteError),
    /// A backend refused the request in a way another backend would too (a 4xx other than 429).
    #[error("{} refused the request: {}", .0.provider.as_str(), .0.error)]
    Refused(Attempt),
    /// Every backend failed.
    #[error("no backend could answer; tried {}", describe(.0))]
    Exhausted(Vec<Attempt>),
}

fn describe(attempts: &[Attempt]) -> String {
    attempts
        .iter()
        .map(|a| format!("{}/{} ({})", a.provider.as_str(), a.model, a.error))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The providers and the catalog.
pub struct Gateway {
    catalog: Catalog,
    providers: BTreeMap<ProviderId, Arc<dyn Provider>>,
}

impl Gateway {
    /// A gateway with the given providers.
    pub fn new(catalog: Catalog, providers: Vec<Arc<dyn Provider>>) -> Self {
        Gateway {
            catalog,
            providers: providers.into_iter().map(|p| (p.id(), p)).collect(),
        }
    }

    /// Providers from environment variables, read through `var` (for tests, a map).
    pub fn from_env(catalog: Catalog, var: impl Fn(&str) -> Option<String>) -> Self {
        let mut gateway = Self::from_config(&InferenceConfig::default(), &var);
        gateway.catalog = catalog;
        gateway
    }

    /// Providers from a configuration file, with environment variables (read through `var`)
    /// winning over it, and the file's catalog.
    pub fn from_config(config: &InferenceConfig, var: &dyn Fn(&str) -> Option<String>) -> Self {
        let client = reqwest::Client::new();
        let providers: Vec<Arc<dyn Provider>> = ProviderId::ALL
            .into_iter()
            .filter_map(|id| {
                let settings = config.provider(id, var)?;
                Some(providers::build(id, client.clone(), settings))
            })
            .collect();
        // The file was checked when it was parsed; a catalog error here cannot happen, and
        // the built-in catalog is the safe answer if it did.
        Self::new(config.catalog().unwrap_or_default(), providers)
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Whether a provider is configured.
    pub fn available(&self, provider: ProviderId) -> bool {
        self.providers.contains_key(&provider)
    }

    /// Routes the request and tries the backends in order: a connection error, a timeout, a
    /// 429 or a 5xx moves on to the next; any other failure ends the call.
    pub async fn chat(
        &self,
        selection: &Selection,
        request: &ChatRequest,
    ) -> Result<Completed, GatewayError> {
        let (outcome, model, failed) = self
            .with_fallback(selection, |p, m| async move { p.chat(request, &m).await })
            .await?;
        Ok(Completed {
            outcome,
            model,
            failed,
        })
    }

    /// Like [`Gateway::chat`], streamed: the fallback happens while opening the stream; once
    /// events flow, a failure ends the stream.
    pub async fn chat_stream(
        &self,
        selection: &Selection,
        request: &ChatRequest,
    ) -> Result<Streaming, GatewayError> {
        let (events, model, failed) = self
            .with_fallback(
                selection,
                |p, m| async move { p.chat_stream(request, &m).await },
            )
            .await?;
        Ok(Streaming {
            events,
            model,
            failed,
        })
    }

    /// Runs `call` on each routed backend in turn until one answers or one fails in a way
    /// another backend would not mend.
    async fn with_fallback<T, F, Fut>(
        &self,
        selection: &Selection,
        call: F,
    ) -> Result<(T, ModelInfo, Vec<Attempt>), GatewayError>
    where
        F: Fn(Arc<dyn Provider>, String) -> Fut,
        Fut: Future<Output = Result<T, UpstreamError>>,
    {
        let candidates = route(&self.catalog, selection, &|p| self.available(p))?;
        let mut failed = Vec::new();
        for model in candidates {
            let Some(provider) = self.providers.get(&model.provider) else {
                continue;
            };
            match call(provider.clone(), model.id.clone()).await {
                Ok(answer) => return Ok((answer, model, failed)),
                Err(error) => {
                    tracing::warn!(provider = model.provider.as_str(), model = %model.id, %error, "backend failed");
                    let attempt = Attempt {
                        provider: model.provider,
                        model: model.id.clone(),
                        error,
                    };
                    if !attempt.error.should_fall_back() {
                        return Err(GatewayError::Refused(attempt));
                    }
                    failed.push(attempt);
                }
            }
        }
        Err(GatewayError::Exhausted(failed))
    }
}

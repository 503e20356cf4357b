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
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;

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

/// A configured provider and its count of requests in flight.
struct Backend {
    provider: Arc<dyn Provider>,
    in_flight: Arc<AtomicUsize>,
    limit: usize,
}

/// One request counted in flight to a backend until dropped: at the end of a call, or of a
/// stream's last event.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Backend {
    /// A slot for one more request, or `Busy` when `limit` are in flight: the request is not
    /// sent, and the gateway moves on at once rather than queue behind a provider that has
    /// fallen behind.
    fn slot(&self) -> Result<Slot, UpstreamError> {
        let before = self.in_flight.fetch_add(1, Ordering::Relaxed);
        let slot = Slot(self.in_flight.clone());
        if before >= self.limit {
            return Err(UpstreamError::Busy { limit: self.limit });
        }
        Ok(slot)
    }
}

/// The providers and the catalog.
pub struct Gateway {
    catalog: Catalog,
    providers: BTreeMap<ProviderId, Backend>,
}

impl Gateway {
    /// A gateway with the given providers, each allowed
    /// [`DEFAULT_MAX_IN_FLIGHT`](crate::config::DEFAULT_MAX_IN_FLIGHT) requests in flight.
    pub fn new(catalog: Catalog, providers: Vec<Arc<dyn Provider>>) -> Self {
        Gateway {
            catalog,
            providers: providers
                .into_iter()
                .map(|provider| {
                    let backend = Backend {
                        provider: provider.clone(),
                        in_flight: Arc::default(),
                        limit: crate::config::DEFAULT_MAX_IN_FLIGHT,
                    };
                    (provider.id(), backend)
                })
                .collect(),
        }
    }

    /// Sets how many requests may be in flight to `provider` at once (at least one).
    pub fn set_max_in_flight(&mut self, provider: ProviderId, limit: usize) {
        if let Some(backend) = self.providers.get_mut(&provider) {
            backend.limit = limit.max(1);
        }
    }

    /// How many requests are in flight to `provider` now.
    pub fn in_flight(&self, provider: ProviderId) -> usize {
        self.providers
            .get(&provider)
            .map_or(0, |b| b.in_flight.load(Ordering::Relaxed))
    }

    /// Providers from environment variables, read through `var` (for tests, a map).
    pub fn from_env(catalog: Catalog, var: impl Fn(&str) -> Option<String>) -> Self {
        let mut gateway = Self::from_config(&InferenceConfig::default(), &var);
        gateway.catalog = catalog;
        gateway
    }

    /// Providers from a configuration file, with environment variables (read through `var`)
    /// winning over it, and the file's catalog. A limit of requests in flight that does not
    /// parse ([`InferenceConfig::check_env`] names it) leaves the default.
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
        let mut gateway = Self::new(config.catalog().unwrap_or_default(), providers);
        for id in ProviderId::ALL {
            if let Ok(limit) = config.max_in_flight(id, var) {
                gateway.set_max_in_flight(id, limit);
            }
        }
        gateway
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
        let (outcome, model, failed, _slot) = self
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
        let (events, model, failed, slot) = self
            .with_fallback(
                selection,
                |p, m| async move { p.chat_stream(request, &m).await },
            )
            .await?;
        // The request stays in flight until its stream is dropped.
        let events = Box::pin(events.map(move |event| {
            let _held = &slot;
            event
        }));
        Ok(Streaming {
            events,
            model,
            failed,
        })
    }

    /// Runs `call` on each routed backend in turn until one answers or one fails in a way
    /// another backend would not mend. A backend with as many requests in flight as its limit
    /// is skipped at once (`Busy`, not logged: under a flood that would be a record a request).
    /// The answer comes with its backend's slot, which counts it in flight until dropped.
    async fn with_fallback<T, F, Fut>(
        &self,
        selection: &Selection,
        call: F,
    ) -> Result<(T, ModelInfo, Vec<Attempt>, Slot), GatewayError>
    where
        F: Fn(Arc<dyn Provider>, String) -> Fut,
        Fut: Future<Output = Result<T, UpstreamError>>,
    {
        let candidates = route(&self.catalog, selection, &|p| self.available(p))?;
        let mut failed = Vec::new();
        for model in candidates {
            let Some(backend) = self.providers.get(&model.provider) else {
                continue;
            };
            let answer = match backend.slot() {
                Ok(slot) => call(backend.provider.clone(), model.id.clone())
                    .await
                    .map(|answer| (answer, slot)),
                Err(busy) => Err(busy),
            };
            match answer {
                Ok((answer, slot)) => return Ok((answer, model, failed, slot)),
                Err(error) => {
                    if !matches!(error, UpstreamError::Busy { .. }) {
                        tracing::warn!(provider = model.provider.as_str(), model = %model.id, %error, "backend failed");
                    }
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

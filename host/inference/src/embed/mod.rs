//! Embeddings: 1024 numbers per input, unit-normalised, EU-only.
//!
//! An [`Embedder`] turns texts into vectors. There are five:
//!
//! - [`semantic`]: the built-in semantic embedder (`all-minilm-l6-v2`), a small sentence
//!   model run in-process from weights the build step fetched; the default when no EU
//!   embedding provider is configured and its files are there.
//! - [`local`]: the built-in lexical embedder (`atrium-local-lexical`), no network and no
//!   weights; the default when neither is.
//! - Mistral `mistral-embed` and OVH AI Endpoints `bge-m3`, over the OpenAI embeddings wire
//!   format (`POST {base}/embeddings`).
//! - Ollama `bge-m3`, over Ollama's native `POST {base}/api/embed`.
//!
//! Every remote answer is checked: one vector per input, in order, each of exactly
//! [`DIMENSIONS`] finite numbers. A vector of another length is an error, never padded or cut.
//! Vectors are scaled to unit length (providers already send them so; the scaling only removes
//! rounding).

pub mod local;
mod remote;
pub mod semantic;

use std::sync::Arc;

use async_trait::async_trait;

use crate::ProviderId;
use crate::config::InferenceConfig;
use crate::providers::{ProviderConfig, UpstreamError};

pub use remote::{OllamaEmbedder, OpenAiWireEmbedder};

/// The dimension of every embedding the host returns.
pub const DIMENSIONS: usize = 1024;

/// Mistral's embedding model.
pub const MISTRAL_MODEL: &str = "mistral-embed";
/// The BGE-M3 model, served by OVH AI Endpoints and by Ollama.
pub const BGE_M3: &str = "bge-m3";

/// Vectors for a list of texts.
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    /// One unit vector of [`DIMENSIONS`] numbers per input, in input order.
    pub vectors: Vec<Vec<f32>>,
    /// Input tokens, as the backend counted them (the local embedder counts words).
    pub prompt_tokens: u64,
}

/// Why texts could not be embedded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    /// The backend could not be reached or refused the call.
    #[error("{provider} embeddings ({model}) failed: {error}")]
    Upstream {
        /// The provider.
        provider: &'static str,
        /// The model.
        model: String,
        /// What went wrong.
        error: UpstreamError,
    },
    /// The backend answered with vectors of the wrong size.
    #[error(
        "{provider} embeddings ({model}) returned {got} dimensions; this host needs exactly {DIMENSIONS}"
    )]
    Dimension {
        /// The provider.
        provider: &'static str,
        /// The model.
        model: String,
        /// The length it sent.
        got: usize,
    },
}

impl EmbedError {
    /// Whether the failure is the backend's being unreachable or overloaded (503) rather than
    /// a wrong answer (502).
    pub fn unavailable(&self) -> bool {
        matches!(self, EmbedError::Upstream { error, .. } if error.should_fall_back())
    }
}

/// A backend that embeds texts.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The provider's name: `local`, `mistral`, `ovh` or `ollama`.
    fn provider(&self) -> &'static str;

    /// The model reported in answers.
    fn model(&self) -> &str;

    /// Price of input tokens, in micro-dollars per million.
    fn micros_per_million(&self) -> i64;

    /// Embeds `texts` (at least one), one vector each.
    async fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError>;
}

/// The built-in lexical embedder as an [`Embedder`].
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalEmbedder;

#[async_trait]
impl Embedder for LocalEmbedder {
    fn provider(&self) -> &'static str {
        "local"
    }

    fn model(&self) -> &str {
        local::MODEL
    }

    fn micros_per_million(&self) -> i64 {
        0
    }

    async fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let run = |texts: &[String]| Embedded {
            vectors: texts.iter().map(|t| local::embed(t)).collect(),
            prompt_tokens: texts.iter().map(|t| local::tokens(t)).sum(),
        };
        // A few texts take microseconds; many (a long document) go to a blocking thread so
        // they do not hold up the other requests on this worker.
        if texts.len() <= 8 {
            return Ok(run(texts));
        }
        let owned = texts.to_vec();
        match tokio::task::spawn_blocking(move || run(&owned)).await {
            Ok(embedded) => Ok(embedded),
            Err(e) => Err(EmbedError::Upstream {
                provider: "local",
                model: local::MODEL.to_owned(),
                error: UpstreamError::Protocol(format!("the embedding thread failed: {e}")),
            }),
        }
    }
}

/// The embedders this host offers, the first being the default.
#[derive(Clone)]
pub struct Embedders {
    list: Vec<Arc<dyn Embedder>>,
}

impl std::fmt::Debug for Embedders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(
                self.list
                    .iter()
                    .map(|e| (e.provider(), e.model().to_owned())),
            )
            .finish()
    }
}

impl Default for Embedders {
    fn default() -> Self {
        Embedders::new(Vec::new())
    }
}

impl Embedders {
    /// `list` in order of preference; the lexical embedder is always added last.
    pub fn new(mut list: Vec<Arc<dyn Embedder>>) -> Self {
        if !list.iter().any(|e| e.model() == local::MODEL) {
            list.push(Arc::new(LocalEmbedder));
        }
        Embedders { list }
    }

    /// The EU embedding providers that are configured, in the order OVH, Mistral, Ollama (the
    /// order of the eu-sovereign tier), then the built-in semantic embedder when its files are
    /// there ([`semantic::default_dir`]), then the lexical one. A provider is configured the
    /// way its chat is (`ATRIUM_<PROVIDER>_API_KEY`, `ATRIUM_<PROVIDER>_BASE_URL` or the
    /// config file). `ATRIUM_EMBEDDER` picks the default among them by provider (`ovh`,
    /// `mistral`, `ollama` or `local`, the first built-in one) or by model
    /// (`atrium-local-lexical`, `all-minilm-l6-v2`, ...).
    pub fn from_config(config: &InferenceConfig, var: &dyn Fn(&str) -> Option<String>) -> Self {
        let client = reqwest::Client::new();
        let mut offered: Vec<(u8, Arc<dyn Embedder>)> = Vec::new();
        for id in ProviderId::ALL {
            let Some((rank, build)) = offered_by(id) else {
                continue;
            };
            let Some(settings) = config.provider(id, var) else {
                continue;
            };
            offered.push((rank, build(client.clone(), settings)));
        }
        offered.sort_by_key(|(rank, _)| *rank);
        let mut list: Vec<Arc<dyn Embedder>> = offered.into_iter().map(|(_, e)| e).collect();
        if let Some(dir) = semantic::default_dir(var) {
            let started = std::time::Instant::now();
            match semantic::SemanticEmbedder::load(&dir) {
                Ok(embedder) => {
                    tracing::info!(model = semantic::MODEL, dir = %dir.display(),
                        ms = started.elapsed().as_millis(), "semantic embedder loaded");
                    list.push(Arc::new(embedder));
                }
                Err(error) => tracing::warn!(%error,
                    "the semantic embedder is not offered; set ATRIUM_SEMANTIC_MODEL_DIR to a directory with its files"),
            }
        }
        list.push(Arc::new(LocalEmbedder));
        if let Some(choice) = var("ATRIUM_EMBEDDER").filter(|v| !v.trim().is_empty()) {
            let choice = choice.trim();
            if let Some(i) = list
                .iter()
                .position(|e| e.provider() == choice || e.model() == choice)
            {
                let chosen = list.remove(i);
                list.insert(0, chosen);
            } else {
                tracing::warn!(
                    embedder = choice,
                    "ATRIUM_EMBEDDER names an embedder that is not configured; using {}",
                    list[0].provider()
                );
            }
        }
        Embedders { list }
    }

    /// The default embedder.
    pub fn default_embedder(&self) -> Arc<dyn Embedder> {
        self.list
            .first()
            .cloned()
            .unwrap_or_else(|| Arc::new(LocalEmbedder))
    }

    /// Every embedder, the default first.
    pub fn all(&self) -> &[Arc<dyn Embedder>] {
        &self.list
    }

    /// The embedder for a requested model name (and provider, when two serve the model):
    /// the first configured one that matches.
    pub fn find(&self, model: &str, provider: Option<&str>) -> Option<Arc<dyn Embedder>> {
        self.list
            .iter()
            .find(|e| e.model() == model && provider.is_none_or(|p| p == e.provider()))
            .cloned()
    }

    /// The embedder of a provider.
    pub fn by_provider(&self, provider: &str) -> Option<Arc<dyn Embedder>> {
        self.list.iter().find(|e| e.provider() == provider).cloned()
    }
}

/// Builds a provider's embedder from its settings.
type BuildEmbedder = fn(reqwest::Client, ProviderConfig) -> Arc<dyn Embedder>;

/// The embedder `id` offers and its place in the default order (lower first: the order of the
/// eu-sovereign tier), or `None`: embeddings are EU-only, so the US providers offer none. The
/// `match` is exhaustive so that a new provider is placed here, not taken for another one.
fn offered_by(id: ProviderId) -> Option<(u8, BuildEmbedder)> {
    let (rank, build): (u8, BuildEmbedder) = match id {
        ProviderId::Ovh => (0, |client, settings| {
            Arc::new(OpenAiWireEmbedder::ovh(client, settings))
        }),
        ProviderId::Mistral => (1, |client, settings| {
            Arc::new(OpenAiWireEmbedder::mistral(client, settings))
        }),
        ProviderId::Ollama => (2, |client, settings| {
            Arc::new(OllamaEmbedder::new(client, settings))
        }),
        ProviderId::Openai | ProviderId::Anthropic => return None,
    };
    Some((rank, build))
}

/// Checks one vector from `provider` and scales it to unit length.
pub(crate) fn checked(
    provider: &'static str,
    model: &str,
    mut vector: Vec<f32>,
) -> Result<Vec<f32>, EmbedError> {
    if vector.len() != DIMENSIONS {
        return Err(EmbedError::Dimension {
            provider,
            model: model.to_owned(),
            got: vector.len(),
        });
    }
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if !norm.is_finite() || norm == 0.0 {
        return Err(EmbedError::Upstream {
            provider,
            model: model.to_owned(),
            error: UpstreamError::Protocol("a vector is zero or not finite".into()),
        });
    }
    for x in &mut vector {
        *x /= norm;
    }
    Ok(vector)
}

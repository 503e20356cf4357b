//! The EU embedding providers over HTTP.
//!
//! - Mistral and OVH AI Endpoints speak the OpenAI embeddings format: `POST {base}/embeddings`
//!   with `{"model", "input": [..]}`, answered by `{"data": [{"index", "embedding"}], "usage":
//!   {"prompt_tokens"}}`.
//! - Ollama has its own: `POST {base}/api/embed` with `{"model", "input": [..]}`, answered by
//!   `{"embeddings": [[..]], "prompt_eval_count"}`.
//!
//! Texts go in requests of at most [`BATCH`] inputs, one after the other.

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{BGE_M3, EmbedError, Embedded, Embedder, MISTRAL_MODEL, checked};
use crate::providers::{ProviderConfig, UpstreamError, count, send_json};

/// Inputs per upstream request at most (Mistral caps a request's tokens; 32 chunks of the
/// retrieval splitter stay well under it).
pub const BATCH: usize = 32;

fn protocol(provider: &'static str, model: &str, message: impl Into<String>) -> EmbedError {
    EmbedError::Upstream {
        provider,
        model: model.to_owned(),
        error: UpstreamError::Protocol(message.into()),
    }
}

fn numbers(provider: &'static str, model: &str, value: &Value) -> Result<Vec<f32>, EmbedError> {
    let items = value
        .as_array()
        .ok_or_else(|| protocol(provider, model, "an embedding is not an array of numbers"))?;
    items
        .iter()
        .map(|x| {
            x.as_f64()
                .map(|f| f as f32)
                .ok_or_else(|| protocol(provider, model, "an embedding holds a non-number"))
        })
        .collect()
}

/// Posts `body` to `url` (with the bearer key, when there is one) and reads the JSON answer.
/// The answer's `field`, an array that must hold one entry per input.
fn one_per_input<'a>(
    provider: &'static str,
    model: &str,
    answer: &'a Value,
    field: &str,
    inputs: usize,
) -> Result<&'a Vec<Value>, EmbedError> {
    let list = answer.get(field).and_then(Value::as_array).ok_or_else(|| {
        protocol(
            provider,
            model,
            format!("the answer has no `{field}` array"),
        )
    })?;
    if list.len() != inputs {
        return Err(protocol(
            provider,
            model,
            format!("{} embeddings for {inputs} inputs", list.len()),
        ));
    }
    Ok(list)
}

async fn post(
    client: &reqwest::Client,
    config: &ProviderConfig,
    provider: &'static str,
    model: &str,
    url: String,
    body: Value,
) -> Result<Value, EmbedError> {
    let mut request = client.post(url).json(&body);
    if let Some(key) = &config.api_key {
        request = request.bearer_auth(key);
    }
    send_json(request, config.timeout)
        .await
        .map_err(|error| EmbedError::Upstream {
            provider,
            model: model.to_owned(),
            error,
        })
}

/// Mistral or OVH: the OpenAI embeddings wire format.
pub struct OpenAiWireEmbedder {
    client: reqwest::Client,
    config: ProviderConfig,
    provider: &'static str,
    model: &'static str,
    micros_per_million: i64,
}

impl OpenAiWireEmbedder {
    /// Mistral's `mistral-embed` ($0.10 per million input tokens).
    pub fn mistral(client: reqwest::Client, config: ProviderConfig) -> Self {
        OpenAiWireEmbedder {
            client,
            config,
            provider: "mistral",
            model: MISTRAL_MODEL,
            micros_per_million: 100_000,
        }
    }

    /// OVH AI Endpoints' `bge-m3` ($0.01 per million input tokens).
    pub fn ovh(client: reqwest::Client, config: ProviderConfig) -> Self {
        OpenAiWireEmbedder {
            client,
            config,
            provider: "ovh",
            model: BGE_M3,
            micros_per_million: 10_000,
        }
    }

    async fn call(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let (provider, model) = (self.provider, self.model);
        let url = format!("{}/embeddings", self.config.base_url.trim_end_matches('/'));
        let body = json!({"model": model, "input": texts, "encoding_format": "float"});
        let answer = post(&self.client, &self.config, provider, model, url, body).await?;
        let data = one_per_input(provider, model, &answer, "data", texts.len())?;
        let mut vectors: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (position, item) in data.iter().enumerate() {
            let index = match item.get("index").and_then(Value::as_u64) {
                Some(i) => usize::try_from(i).unwrap_or(usize::MAX),
                None => position,
            };
            let slot = vectors.get_mut(index).ok_or_else(|| {
                protocol(provider, model, format!("index {index} is out of range"))
            })?;
            let raw = numbers(
                provider,
                model,
                item.get("embedding").unwrap_or(&Value::Null),
            )?;
            *slot = Some(checked(provider, model, raw)?);
        }
        let vectors = vectors
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.ok_or_else(|| protocol(provider, model, format!("no embedding for input {i}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Embedded {
            vectors,
            prompt_tokens: count(answer.get("usage"), "prompt_tokens"),
        })
    }
}

#[async_trait]
impl Embedder for OpenAiWireEmbedder {
    fn provider(&self) -> &'static str {
        self.provider
    }

    fn model(&self) -> &str {
        self.model
    }

    fn micros_per_million(&self) -> i64 {
        self.micros_per_million
    }

    async fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        in_batches(texts, |batch| self.call(batch)).await
    }
}

/// Ollama's `bge-m3` through `POST {base}/api/embed` (free: it runs on the operator's machine).
pub struct OllamaEmbedder {
    client: reqwest::Client,
    config: ProviderConfig,
}

impl OllamaEmbedder {
    /// An embedder for the Ollama at `config.base_url`.
    pub fn new(client: reqwest::Client, config: ProviderConfig) -> Self {
        OllamaEmbedder { client, config }
    }

    async fn call(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let provider = "ollama";
        let url = format!("{}/api/embed", self.config.base_url.trim_end_matches('/'));
        let body = json!({"model": BGE_M3, "input": texts, "truncate": true});
        let answer = post(&self.client, &self.config, provider, BGE_M3, url, body).await?;
        let list = one_per_input(provider, BGE_M3, &answer, "embeddings", texts.len())?;
        let vectors = list
            .iter()
            .map(|v| checked(provider, BGE_M3, numbers(provider, BGE_M3, v)?))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Embedded {
            vectors,
            prompt_tokens: answer
                .get("prompt_eval_count")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        })
    }
}

#[async_trait]
impl Embedder for OllamaEmbedder {
    fn provider(&self) -> &'static str {
        "ollama"
    }

    fn model(&self) -> &str {
        BGE_M3
    }

    fn micros_per_million(&self) -> i64 {
        0
    }

    async fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        in_batches(texts, |batch| self.call(batch)).await
    }
}

/// Runs `call` on consecutive slices of at most [`BATCH`] texts and joins the answers.
async fn in_batches<'a, F, Fut>(texts: &'a [String], call: F) -> Result<Embedded, EmbedError>
where
    F: Fn(&'a [String]) -> Fut,
    Fut: std::future::Future<Output = Result<Embedded, EmbedError>>,
{
    let mut all = Embedded {
        vectors: Vec::with_capacity(texts.len()),
        prompt_tokens: 0,
    };
    for batch in texts.chunks(BATCH) {
        let part = call(batch).await?;
        all.vectors.extend(part.vectors);
        all.prompt_tokens += part.prompt_tokens;
    }
    Ok(all)
}

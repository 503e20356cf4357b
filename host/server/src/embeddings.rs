//! `POST /v1/embeddings`, OpenAI-compatible: a string or an array of strings in, 1024
//! unit-length numbers per input out, as floats or (`encoding_format: "base64"`, what the
//! official OpenAI Python client asks for by default) as base64 of little-endian 32-bit floats.
//!
//! Embeddings are EU-only: the host's embedders are Mistral `mistral-embed`, OVH `bge-m3`,
//! Ollama `bge-m3` (each when configured) and the built-in local lexical embedder. `model`
//! (and `provider`, when two serve the model) picks one; without them the default answers.
//! There is no fallback between embedders: vectors of different models do not compare.

use atrium_inference::embed::DIMENSIONS;
use axum::Json;
use axum::extract::State;
use base64::Engine;
use serde_json::{Value, json};

use crate::extract::{JsonBody, TenantHeader};
use crate::principals::Org;
use crate::routing::Routes;
use crate::{ApiError, HostState};

/// Inputs per request at most.
pub const MAX_INPUTS: usize = 2048;
/// Characters per input at most.
pub const MAX_INPUT_CHARS: usize = 100_000;

fn inputs(body: &Value) -> Result<Vec<String>, ApiError> {
    let list: Vec<Value> = match body.get("input") {
        None | Some(Value::Null) => {
            return Err(ApiError::field(
                "input",
                "input is required: a string or an array of strings",
            ));
        }
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(ApiError::field("input", "input must not be empty"));
        }
        Some(Value::Array(items)) if items.len() > MAX_INPUTS => {
            return Err(ApiError::field(
                "input",
                format!(
                    "at most {MAX_INPUTS} inputs per request, got {}",
                    items.len()
                ),
            ));
        }
        Some(Value::Array(items)) => items.clone(),
        Some(_) => {
            return Err(ApiError::field(
                "input",
                "input must be a string or an array of strings",
            ));
        }
    };
    list.into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) if s.trim().is_empty() => {
                Err(ApiError::field("input", format!("input[{i}] is empty")))
            }
            Value::String(s) if s.chars().count() > MAX_INPUT_CHARS => Err(ApiError::field(
                "input",
                format!("input[{i}] is longer than {MAX_INPUT_CHARS} characters"),
            )),
            Value::String(s) => Ok(s),
            Value::Number(_) | Value::Array(_) => Err(ApiError::field(
                "input",
                "token arrays are not accepted; send the text",
            )),
            _ => Err(ApiError::field(
                "input",
                format!("input[{i}] must be a string"),
            )),
        })
        .collect()
}

/// `POST /v1/embeddings`.
pub async fn create(
    State(state): State<HostState>,
    org: Org,
    tenant: TenantHeader,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let texts = inputs(&body)?;
    let provider = match body.get("provider") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(p.as_str()),
        Some(_) => return Err(ApiError::field("provider", "provider must be a string")),
    };
    let embedder = match (body.get("model"), provider) {
        (None | Some(Value::Null), None) => state.embedders.default_embedder(),
        (None | Some(Value::Null), Some(p)) => state.embedders.by_provider(p).ok_or_else(|| {
            ApiError::field(
                "provider",
                format!(
                    "provider `{p}` has no embedder on this host; {}",
                    offered(&state)
                ),
            )
        })?,
        (Some(Value::String(m)), p) => state.embedders.find(m, p).ok_or_else(|| {
            ApiError::field(
                "model",
                format!(
                    "model `{m}` is not an available embedder; {}",
                    offered(&state)
                ),
            )
        })?,
        (Some(_), _) => return Err(ApiError::field("model", "model must be a string")),
    };
    let base64 = match body.get("encoding_format") {
        None | Some(Value::Null) => false,
        Some(Value::String(f)) if f == "float" => false,
        Some(Value::String(f)) if f == "base64" => true,
        Some(_) => {
            return Err(ApiError::field(
                "encoding_format",
                "encoding_format must be `float` or `base64`",
            ));
        }
    };
    match body.get("dimensions") {
        None | Some(Value::Null) => {}
        Some(d) if d.as_u64() == Some(DIMENSIONS as u64) => {}
        Some(_) => {
            return Err(ApiError::field(
                "dimensions",
                format!("embeddings have {DIMENSIONS} dimensions"),
            ));
        }
    }
    let embedded = embedder.embed(&texts).await?;
    let data: Vec<Value> = embedded
        .vectors
        .iter()
        .enumerate()
        .map(|(index, vector)| {
            let embedding = if base64 {
                let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tokens = embedded.prompt_tokens;
    let tenant = tenant.or_default();
    let billed = i64::try_from(tokens).unwrap_or(i64::MAX);
    state
        .metering
        .record(atrium_store::UsageRecord {
            org_id: org.org_id,
            tenant_id: tenant,
            kind: "embedding".into(),
            provider: embedder.provider().into(),
            model: embedder.model().into(),
            prompt_tokens: billed,
            completion_tokens: 0,
            cost_micros: billed.saturating_mul(embedder.micros_per_million()) / 1_000_000,
            batch: false,
            app_slug: None,
            agent: None,
        })
        .await;
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "model": embedder.model(),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })))
}

/// The embedders on offer, for error messages.
fn offered(state: &HostState) -> String {
    let names: Vec<String> = state
        .embedders
        .all()
        .iter()
        .map(|e| format!("`{}` ({})", e.model(), e.provider()))
        .collect();
    format!("this host offers {}", names.join(", "))
}

/// The routes of embeddings.
pub(crate) fn router() -> Routes {
    Routes::new().route("/embeddings", crate::routing::post(create))
}

//! `POST /v1/embeddings`, OpenAI-compatible: a string or an array of strings in, 1024
//! unit-length numbers per input out, as floats or (`encoding_format: "base64"`, what the
//! official OpenAI Python client asks for by default) as base64 of little-endian 32-bit floats.
//!
//! Embeddings are EU-only. The built-in local lexical embedder answers here; the EU provider
//! embedders (Mistral, OVH, Ollama) join it with the retrieval work.

use atrium_inference::embed::{DIMENSIONS, local};
use axum::Json;
use axum::extract::State;
use base64::Engine;
use serde_json::{Value, json};

use crate::extract::{JsonBody, Org, TenantHeader};
use crate::{ApiError, AppState, DEFAULT_TENANT};

/// Inputs per request at most.
pub const MAX_INPUTS: usize = 2048;
/// Characters per input at most.
pub const MAX_INPUT_CHARS: usize = 100_000;

fn bad(param: &str, message: impl Into<String>) -> ApiError {
    ApiError::bad_request(message, Some(param))
}

fn inputs(body: &Value) -> Result<Vec<String>, ApiError> {
    let list: Vec<Value> = match body.get("input") {
        None | Some(Value::Null) => {
            return Err(bad(
                "input",
                "input is required: a string or an array of strings",
            ));
        }
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(bad("input", "input must not be empty"));
        }
        Some(Value::Array(items)) if items.len() > MAX_INPUTS => {
            return Err(bad(
                "input",
                format!(
                    "at most {MAX_INPUTS} inputs per request, got {}",
                    items.len()
                ),
            ));
        }
        Some(Value::Array(items)) => items.clone(),
        Some(_) => {
            return Err(bad(
                "input",
                "input must be a string or an array of strings",
            ));
        }
    };
    list.into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) if s.trim().is_empty() => {
                Err(bad("input", format!("input[{i}] is empty")))
            }
            Value::String(s) if s.chars().count() > MAX_INPUT_CHARS => Err(bad(
                "input",
                format!("input[{i}] is longer than {MAX_INPUT_CHARS} characters"),
            )),
            Value::String(s) => Ok(s),
            Value::Number(_) | Value::Array(_) => {
                Err(bad("input", "token arrays are not accepted; send the text"))
            }
            _ => Err(bad("input", format!("input[{i}] must be a string"))),
        })
        .collect()
}

/// `POST /v1/embeddings`.
pub async fn create(
    State(state): State<AppState>,
    org: Org,
    TenantHeader(tenant): TenantHeader,
    JsonBody(body): JsonBody<Value>,
) -> Result<Json<Value>, ApiError> {
    let texts = inputs(&body)?;
    match body.get("model") {
        None | Some(Value::Null) => {}
        Some(Value::String(m)) if m == local::MODEL => {}
        Some(other) => {
            return Err(bad(
                "model",
                format!(
                    "model {other} is not an available embedder; this host offers `{}`",
                    local::MODEL
                ),
            ));
        }
    }
    let base64 = match body.get("encoding_format") {
        None | Some(Value::Null) => false,
        Some(Value::String(f)) if f == "float" => false,
        Some(Value::String(f)) if f == "base64" => true,
        Some(_) => {
            return Err(bad(
                "encoding_format",
                "encoding_format must be `float` or `base64`",
            ));
        }
    };
    match body.get("dimensions") {
        None | Some(Value::Null) => {}
        Some(d) if d.as_u64() == Some(DIMENSIONS as u64) => {}
        Some(_) => {
            return Err(bad(
                "dimensions",
                format!("embeddings have {DIMENSIONS} dimensions"),
            ));
        }
    }
    let mut tokens = 0u64;
    let data: Vec<Value> = texts
        .iter()
        .enumerate()
        .map(|(index, text)| {
            tokens += local::tokens(text);
            let vector = local::embed(text);
            let embedding = if base64 {
                let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(vector)
            };
            json!({"object": "embedding", "index": index, "embedding": embedding})
        })
        .collect();
    let tenant = tenant.unwrap_or_else(|| DEFAULT_TENANT.to_owned());
    state
        .metering
        .record(atrium_store::UsageRecord {
            org_id: org.org_id,
            tenant_id: tenant,
            kind: "embedding".into(),
            provider: "local".into(),
            model: local::MODEL.into(),
            prompt_tokens: i64::try_from(tokens).unwrap_or(i64::MAX),
            completion_tokens: 0,
            cost_micros: 0,
            batch: false,
        })
        .await;
    Ok(Json(json!({
        "object": "list",
        "data": data,
        "model": local::MODEL,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    })))
}

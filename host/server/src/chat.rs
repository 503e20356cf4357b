//! `POST /v1/chat/completions`: OpenAI-compatible chat with Atrium's `tier`, `provider`,
//! `model` and `contains_pii`, routed with fallback, metered per tenant.

use std::time::{SystemTime, UNIX_EPOCH};

use atrium_inference::providers::{ChatRequest, PASSTHROUGH_FIELDS};
use atrium_inference::{ProviderId, Selection, Tier};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::extract::{JsonBody, Org, TenantHeader};
use crate::{ApiError, HostState};

/// The tenant of calls that name none.
pub const DEFAULT_TENANT: &str = "default";

const ROLES: &[&str] = &["system", "developer", "user", "assistant", "tool"];

/// Checks the request and splits it into the routing selection and the provider request.
pub(crate) fn parse(body: Value) -> Result<Parsed, ApiError> {
    let Value::Object(mut body) = body else {
        return Err(ApiError::bad_request(
            "the body must be a JSON object",
            None,
        ));
    };
    let messages = match body.remove("messages") {
        Some(Value::Array(m)) if !m.is_empty() => m,
        Some(Value::Array(_)) => {
            return Err(ApiError::field("messages", "messages must not be empty"));
        }
        Some(_) => {
            return Err(ApiError::field(
                "messages",
                "messages must be an array of {role, content} objects",
            ));
        }
        None => return Err(ApiError::field("messages", "messages is required")),
    };
    for (i, m) in messages.iter().enumerate() {
        let param = format!("messages[{i}]");
        let role = m
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::field(&param, format!("{param}.role is required")))?;
        if !ROLES.contains(&role) {
            return Err(ApiError::field(
                &param,
                format!("{param}.role `{role}` is not one of {}", ROLES.join(", ")),
            ));
        }
        match m.get("content") {
            Some(Value::String(_) | Value::Array(_)) => {}
            Some(Value::Null) | None if role == "assistant" && m.get("tool_calls").is_some() => {}
            _ => {
                return Err(ApiError::field(
                    &param,
                    format!("{param}.content must be a string or an array of parts"),
                ));
            }
        }
    }
    let tier = match body.remove("tier") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(Tier::parse(&t).ok_or_else(|| {
            ApiError::field(
                "tier",
                format!("tier `{t}` is not one of eu-sovereign, frontier, cheapest"),
            )
        })?),
        Some(_) => return Err(ApiError::field("tier", "tier must be a string")),
    };
    let provider = match body.remove("provider") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(ProviderId::parse(&p).ok_or_else(|| {
            ApiError::field(
                "provider",
                format!("provider `{p}` is not one of {}", ProviderId::names()),
            )
        })?),
        Some(_) => return Err(ApiError::field("provider", "provider must be a string")),
    };
    let model = match body.remove("model") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if !m.trim().is_empty() => Some(m),
        Some(_) => return Err(ApiError::field("model", "model must be a non-empty string")),
    };
    // OpenAI clients must send a model: a tier's name in `model` means that tier.
    let (tier, model) = match (tier, model) {
        (None, Some(name)) if Tier::parse(&name).is_some() => (Tier::parse(&name), None),
        other => other,
    };
    let contains_pii = match body.remove("contains_pii") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => {
            return Err(ApiError::field(
                "contains_pii",
                "contains_pii must be true or false",
            ));
        }
    };
    let stream = match body.remove("stream") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(ApiError::field("stream", "stream must be true or false")),
    };
    let include_usage = match body.remove("stream_options") {
        None | Some(Value::Null) => false,
        Some(options) => match options.get("include_usage") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(ApiError::field(
                    "stream_options",
                    "stream_options.include_usage must be true or false",
                ));
            }
        },
    };
    let mut params = Map::new();
    for field in PASSTHROUGH_FIELDS {
        if let Some(v) = body.remove(*field)
            && !v.is_null()
        {
            params.insert((*field).to_owned(), v);
        }
    }
    Ok(Parsed {
        selection: Selection {
            tier,
            provider,
            model,
            contains_pii,
        },
        request: ChatRequest { messages, params },
        stream,
        include_usage,
    })
}

/// A checked request.
pub(crate) struct Parsed {
    pub selection: Selection,
    pub request: ChatRequest,
    pub stream: bool,
    pub include_usage: bool,
}

fn completion_id() -> String {
    let mut bytes = [0u8; 12];
    let _ = getrandom::fill(&mut bytes);
    format!(
        "chatcmpl-{}",
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// `POST /v1/chat/completions`.
pub async fn completions(
    State(state): State<HostState>,
    org: Org,
    tenant: TenantHeader,
    JsonBody(body): JsonBody<Value>,
) -> Result<Response, ApiError> {
    let Parsed {
        selection,
        request,
        stream,
        include_usage,
    } = parse(body)?;
    let tenant = tenant.or_default();
    if stream {
        let streaming = state
            .gateway
            .chat_stream(&selection, &request)
            .await
            .map_err(ApiError::from)?;
        let prompt_chars = request
            .messages
            .iter()
            .map(|m| m.get("content").map_or(0, |c| c.to_string().len()))
            .sum();
        let sse = crate::stream::respond(
            streaming,
            state.metering.clone(),
            org.org_id,
            tenant,
            prompt_chars,
            include_usage,
            completion_id(),
        );
        return Ok(sse.into_response());
    }
    let completed = state
        .gateway
        .chat(&selection, &request)
        .await
        .map_err(ApiError::from)?;
    let outcome = &completed.outcome;
    let cost = completed
        .model
        .cost_micros(outcome.prompt_tokens, outcome.completion_tokens, false);
    let record = atrium_store::UsageRecord {
        org_id: org.org_id.clone(),
        tenant_id: tenant.clone(),
        kind: "chat".into(),
        provider: completed.model.provider.as_str().into(),
        model: completed.model.id.clone(),
        prompt_tokens: i64::try_from(outcome.prompt_tokens).unwrap_or(i64::MAX),
        completion_tokens: i64::try_from(outcome.completion_tokens).unwrap_or(i64::MAX),
        cost_micros: cost,
        batch: false,
    };
    state.metering.record(record).await;
    Ok(Json(completion_body(&completed, cost, &tenant)).into_response())
}

/// The `chat.completion` body of a completed call, with Atrium's extensions.
pub(crate) fn completion_body(
    completed: &atrium_inference::Completed,
    cost_micros: i64,
    tenant: &str,
) -> Value {
    let outcome = &completed.outcome;
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    json!({
        "id": completion_id(),
        "object": "chat.completion",
        "created": created,
        "model": completed.model.id,
        "choices": [{"index": 0, "message": outcome.message, "finish_reason": outcome.finish_reason, "logprobs": null}],
        "usage": {
            "prompt_tokens": outcome.prompt_tokens,
            "completion_tokens": outcome.completion_tokens,
            "total_tokens": outcome.prompt_tokens + outcome.completion_tokens,
            "cost_usd": cost_micros as f64 / 1_000_000.0,
        },
        "provider": completed.model.provider.as_str(),
        "tenant": tenant,
    })
}

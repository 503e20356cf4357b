//! `POST /v1/chat/completions`: OpenAI-compatible chat with Atrium's `tier`, `provider`,
//! `model` and `contains_pii`, routed with fallback, metered per tenant.

use std::time::{SystemTime, UNIX_EPOCH};

use atrium_inference::{ChatCall, InvalidChat, parse_chat};
use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::extract::{JsonBody, TenantHeader};
use crate::principals::Org;
use crate::routing::Routes;
use crate::{ApiError, HostState};

/// The tenant of calls that name none.
pub const DEFAULT_TENANT: &str = "default";

/// Checks the request and splits it into the routing selection and the provider request.
pub(crate) fn parse(body: Value) -> Result<ChatCall, ApiError> {
    parse_chat(body)
        .map_err(|InvalidChat { param, message }| ApiError::bad_request(message, param.as_deref()))
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
    let ChatCall {
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
        app_slug: None,
        agent: None,
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

/// The routes of chat completions.
pub(crate) fn router() -> Routes {
    Routes::new().route("/chat/completions", crate::routing::post(completions))
}

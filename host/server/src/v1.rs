//! The /v1 routes served so far: tenant registration and usage.

use axum::Json;
use axum::extract::{Query, State};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::extract::JsonBody;
use crate::principals::Org;
use crate::routing::Routes;
use crate::{ApiError, HostState};

/// `POST /v1/tenants`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterTenant {
    id: String,
    name: Option<String>,
    external_id: Option<String>,
}

fn check_text(field: &str, value: Option<&str>) -> Result<(), ApiError> {
    if let Some(v) = value
        && (v.chars().count() > 256 || v.chars().any(char::is_control))
    {
        return Err(ApiError::bad_request(
            format!("{field} must be at most 256 characters without control characters"),
            Some(field),
        ));
    }
    Ok(())
}

fn to_rfc3339(at: jiff::Timestamp) -> String {
    at.round(jiff::Unit::Second)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Registers a tenant up front, or updates its name and external id.
pub async fn register_tenant(
    State(state): State<HostState>,
    org: Org,
    JsonBody(body): JsonBody<RegisterTenant>,
) -> Result<Json<Value>, ApiError> {
    atrium_store::check_tenant_id(&body.id)
        .map_err(|e| ApiError::bad_request(e.to_string(), Some("id")))?;
    check_text("name", body.name.as_deref())?;
    check_text("external_id", body.external_id.as_deref())?;
    let tenant = state
        .store
        .register_tenant(
            &org.org_id,
            &body.id,
            body.name.as_deref(),
            body.external_id.as_deref(),
        )
        .await?;
    Ok(Json(json!({
        "object": "tenant",
        "id": tenant.id,
        "name": tenant.name,
        "external_id": tenant.external_id,
        "created_at": to_rfc3339(tenant.created_at),
        "updated_at": to_rfc3339(tenant.updated_at),
    })))
}

/// `GET /v1/usage` query.
#[derive(Debug, Deserialize)]
pub struct UsageQuery {
    tenant: Option<String>,
}

/// Micro-dollars as a dollar amount.
fn usd(micros: i64) -> f64 {
    micros as f64 / 1_000_000.0
}

/// `labels` (an object naming what was counted) with the counts added.
fn counted(mut labels: Value, calls: i64, prompt: i64, completion: i64, cost_micros: i64) -> Value {
    labels["calls"] = json!(calls);
    labels["prompt_tokens"] = json!(prompt);
    labels["completion_tokens"] = json!(completion);
    labels["tokens"] = json!(prompt + completion);
    labels["cost_usd"] = json!(usd(cost_micros));
    labels
}

fn tenant_entry(t: &atrium_store::TenantUsage) -> Value {
    counted(
        json!({"tenant_id": t.tenant_id, "name": t.name, "external_id": t.external_id}),
        t.calls,
        t.prompt_tokens,
        t.completion_tokens,
        t.cost_micros,
    )
}

/// How long the usage endpoint waits for the metering writer to store the records queued
/// before it, beyond which it answers 503 rather than usage without the latest calls.
const USAGE_FLUSH_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Waits (at most [`USAGE_FLUSH_LIMIT`]) until the usage records queued so far are stored.
async fn flushed(metering: &atrium_store::Metering) -> Result<(), ApiError> {
    let unavailable = |why: String| {
        ApiError::unavailable(
            "usage_unavailable",
            format!(
                "usage cannot be read up to the latest calls: {why}; the records are kept and \
                 stored once the database takes them"
            ),
        )
        .retry_after(5)
    };
    match tokio::time::timeout(USAGE_FLUSH_LIMIT, metering.flush()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(unavailable(e.to_string())),
        Err(_) => Err(unavailable(format!(
            "the metering writer did not store them within {} s",
            USAGE_FLUSH_LIMIT.as_secs()
        ))),
    }
}

/// Organization-wide usage, or one tenant's with `?tenant=ID`.
pub async fn usage(
    State(state): State<HostState>,
    org: Org,
    Query(query): Query<UsageQuery>,
) -> Result<Json<Value>, ApiError> {
    // Read your own calls: store what is queued first, within a limit.
    flushed(&state.metering).await?;
    if let Some(tenant) = query.tenant {
        let usage = state
            .store
            .tenant_usage(&atrium_store::TenantKey::new(&org.org_id, &tenant))
            .await?
            .ok_or_else(|| {
                ApiError::not_found(format!("this organization has no tenant `{tenant}`"))
            })?;
        let key = atrium_store::TenantKey::new(&org.org_id, &tenant);
        let per_app: Vec<Value> = state
            .store
            .tenant_usage_by_app(&key)
            .await?
            .iter()
            .map(|a| {
                counted(
                    json!({"app": a.app_slug}),
                    a.calls,
                    a.prompt_tokens,
                    a.completion_tokens,
                    a.cost_micros,
                )
            })
            .collect();
        let per_agent: Vec<Value> = state
            .store
            .tenant_usage_by_agent(&key)
            .await?
            .iter()
            .map(|a| {
                counted(
                    json!({"app": a.app_slug, "agent": a.agent}),
                    a.calls,
                    a.prompt_tokens,
                    a.completion_tokens,
                    a.cost_micros,
                )
            })
            .collect();
        return Ok(Json(json!({
            "object": "usage",
            "tenant": tenant_entry(&usage),
            "per_app": per_app,
            "per_agent": per_agent,
        })));
    }
    let usage = state.store.usage(&org.org_id).await?;
    Ok(Json(json!({
        "object": "usage",
        "totals": {"tenants": usage.totals.tenants, "calls": usage.totals.calls, "cost_usd": usd(usage.totals.cost_micros)},
        "per_tenant": usage.per_tenant.iter().map(tenant_entry).collect::<Vec<_>>(),
    })))
}

/// `GET /v1/models`: the catalog in OpenAI's list shape, with Atrium's extensions (`provider`,
/// `jurisdiction`, `available`, prices in USD per million tokens, tiers).
pub async fn models(State(state): State<HostState>, _org: Org) -> Json<Value> {
    let gateway = &state.gateway;
    let data: Vec<Value> = gateway
        .catalog()
        .models()
        .iter()
        .map(|m| {
            let mut tiers = Vec::new();
            if m.sovereign_rank.is_some() {
                tiers.push("eu-sovereign");
            }
            if m.frontier_rank.is_some() {
                tiers.push("frontier");
            }
            if m.jurisdiction() == atrium_inference::Jurisdiction::Eu {
                tiers.push("cheapest");
            }
            json!({
                "id": m.id,
                "object": "model",
                "created": 0,
                "owned_by": m.provider.as_str(),
                "provider": m.provider.as_str(),
                "jurisdiction": m.jurisdiction(),
                "available": gateway.available(m.provider),
                "input_usd_per_million_tokens": m.input_micros_per_m as f64 / 1_000_000.0,
                "output_usd_per_million_tokens": m.output_micros_per_m as f64 / 1_000_000.0,
                "tiers": tiers,
            })
        })
        .collect();
    Json(json!({"object": "list", "data": data}))
}

/// The routes of models, tenants and usage.
pub(crate) fn router() -> Routes {
    use crate::routing::{get, post};
    Routes::new()
        .route("/models", get(models))
        .route("/tenants", post(register_tenant))
        .route("/usage", get(usage))
}

#[cfg(test)]
mod tests {
    #[test]
    fn timestamps_are_rfc3339_utc_to_the_second() {
        let at = |ms| jiff::Timestamp::from_millisecond(ms).unwrap();
        assert_eq!(super::to_rfc3339(at(0)), "1970-01-01T00:00:00Z");
        assert_eq!(
            super::to_rfc3339(at(951_782_400_400)),
            "2000-02-29T00:00:00Z"
        );
    }
}

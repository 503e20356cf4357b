//! `/api/llm-settings`: a tenant's model roles (`fast`, `specialist`, `orchestrator`), each a
//! tier, provider and/or model of the /v1 gateway; the rules are `atrium_platform::llm_roles`.
//! Tenant users read them, tenant admins change them.

use atrium_platform::llm_roles::{self, Resolved, Role, Route, UpdateError};
use axum::extract::State;
use axum::{Json, Router};
use serde::{Deserialize, Deserializer, Serialize};

use super::views::time;
use crate::principals::{TenantAdmin, TenantUser};
use crate::{ApiError, HostState, JsonBody};

/// A role as answered.
#[derive(Debug, Serialize)]
pub struct RoleView {
    /// The gateway tier it calls, if it names one.
    pub tier: Option<String>,
    /// The provider, if it names one.
    pub provider: Option<String>,
    /// The model, if it names one.
    pub model: Option<String>,
    /// `tenant` when the tenant set it, `default` otherwise.
    pub source: &'static str,
    /// When the tenant set it (RFC 3339), or null for the default.
    pub updated_at: Option<String>,
}

/// Every role.
#[derive(Debug, Serialize)]
pub struct RolesView {
    /// Quick, cheap steps; the `cheap` heartbeats.
    pub fast: RoleView,
    /// The apps' agents; the `standard` heartbeats.
    pub specialist: RoleView,
    /// Routing conversations; the `premium` heartbeats.
    pub orchestrator: RoleView,
}

/// A heartbeat's `model_tier` values and the roles they resolve to.
#[derive(Debug, Serialize)]
pub struct ModelTiersView {
    /// `cheap` → `fast`.
    pub cheap: &'static str,
    /// `standard` → `specialist`.
    pub standard: &'static str,
    /// `premium` → `orchestrator`.
    pub premium: &'static str,
}

/// The answer of `GET` and `PUT /api/llm-settings`.
#[derive(Debug, Serialize)]
pub struct LlmSettings {
    /// The roles.
    pub roles: RolesView,
    /// How a heartbeat's `model_tier` maps to a role.
    pub model_tiers: ModelTiersView,
}

/// One role in a `PUT`: at least one of the three.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleInput {
    /// A tier value.
    #[serde(default)]
    pub tier: Option<String>,
    /// A provider name.
    #[serde(default)]
    pub provider: Option<String>,
    /// A model name.
    #[serde(default)]
    pub model: Option<String>,
}

/// The roles a `PUT` changes: a role left out keeps what it has, an object replaces it, `null`
/// returns it to the default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolesInput {
    /// `fast`.
    #[serde(default, deserialize_with = "present")]
    pub fast: Option<Option<RoleInput>>,
    /// `specialist`.
    #[serde(default, deserialize_with = "present")]
    pub specialist: Option<Option<RoleInput>>,
    /// `orchestrator`.
    #[serde(default, deserialize_with = "present")]
    pub orchestrator: Option<Option<RoleInput>>,
}

/// The body of `PUT /api/llm-settings`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutLlmSettings {
    /// The roles to change.
    pub roles: RolesInput,
}

/// A field that is present, with its value or null (a field left out stays `None`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// The answer for `resolved`, which holds every role ([`llm_roles::resolve`]).
fn view(resolved: &[Resolved]) -> LlmSettings {
    let role = |role: Role| {
        let default = Resolved {
            role,
            route: llm_roles::default_route(role),
            set_at: None,
        };
        let r = resolved.iter().find(|r| r.role == role).unwrap_or(&default);
        RoleView {
            tier: r.route.tier.clone(),
            provider: r.route.provider.clone(),
            model: r.route.model.clone(),
            source: if r.set_at.is_some() {
                "tenant"
            } else {
                "default"
            },
            updated_at: r.set_at.map(time),
        }
    };
    let role_of = |tier: &str| Role::for_model_tier(tier).map_or("", Role::as_str);
    LlmSettings {
        roles: RolesView {
            fast: role(Role::Fast),
            specialist: role(Role::Specialist),
            orchestrator: role(Role::Orchestrator),
        },
        model_tiers: ModelTiersView {
            cheap: role_of("cheap"),
            standard: role_of("standard"),
            premium: role_of("premium"),
        },
    }
}

/// The caller's tenant's roles.
pub async fn get(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
) -> Result<Json<LlmSettings>, ApiError> {
    let resolved = llm_roles::resolve(&state.store, &tenant.key()).await?;
    Ok(Json(view(&resolved)))
}

/// Changes the caller's tenant's roles; answers them all.
pub async fn put(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    JsonBody(body): JsonBody<PutLlmSettings>,
) -> Result<Json<LlmSettings>, ApiError> {
    let mut set = Vec::new();
    let mut reset = Vec::new();
    for (role, input) in [
        (Role::Fast, body.roles.fast),
        (Role::Specialist, body.roles.specialist),
        (Role::Orchestrator, body.roles.orchestrator),
    ] {
        match input {
            None => {}
            Some(None) => reset.push(role),
            Some(Some(input)) => set.push((
                role,
                Route {
                    tier: input.tier,
                    provider: input.provider,
                    model: input.model,
                },
            )),
        }
    }
    let key = tenant.key();
    llm_roles::update(&state.store, &key, &set, &reset)
        .await
        .map_err(|e| match e {
            UpdateError::Invalid { field, message } => ApiError::field(&field, message),
            UpdateError::Store(e) => ApiError::from(e),
        })?;
    let resolved = llm_roles::resolve(&state.store, &key).await?;
    Ok(Json(view(&resolved)))
}

/// The routes of a tenant's model roles.
pub(super) fn router() -> Router<HostState> {
    Router::new().route("/llm-settings", axum::routing::get(get).put(put))
}

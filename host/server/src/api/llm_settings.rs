//! `/api/llm-settings`: a tenant's model roles (`fast`, `specialist`, `orchestrator`), each a
//! tier, provider and/or model of the /v1 gateway; the rules are `atrium_platform::llm_roles`.
//! Tenant users read them, tenant admins change them.

use atrium_platform::llm_roles::{self, Resolved, Role, Route};
use atrium_platform::runner::{self, Limits};
use atrium_store::{AgentLimitsRow, TenantKey};
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Deserializer, Serialize};

use super::views::time;
use crate::principals::{TenantAdmin, TenantUser};
use crate::routing::Routes;
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

/// The limits of one agent run, as they apply.
#[derive(Debug, Serialize)]
pub struct AgentLimitsView {
    /// The most model steps.
    pub max_steps: u32,
    /// The most a run may cost, in US dollars.
    pub budget_usd: f64,
    /// How long a run may take, model calls and tools included.
    pub timeout_seconds: u64,
    /// The fields the tenant set (the others are the defaults).
    pub set: Vec<&'static str>,
    /// When the tenant last set them (RFC 3339), or null.
    pub updated_at: Option<String>,
}

/// The answer of `GET` and `PUT /api/llm-settings`.
#[derive(Debug, Serialize)]
pub struct LlmSettings {
    /// The roles.
    pub roles: RolesView,
    /// How a heartbeat's `model_tier` maps to a role.
    pub model_tiers: ModelTiersView,
    /// The limits of one agent run.
    pub agent_limits: AgentLimitsView,
}

/// The agent limits a `PUT` changes: a number sets the field, `null` returns it to the
/// default, a field left out keeps what it has.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentLimitsInput {
    /// 1 to 50.
    #[serde(default, deserialize_with = "present")]
    pub max_steps: Option<Option<i64>>,
    /// 0.001 to 100.
    #[serde(default, deserialize_with = "present")]
    pub budget_usd: Option<Option<f64>>,
    /// 5 to 900.
    #[serde(default, deserialize_with = "present")]
    pub timeout_seconds: Option<Option<i64>>,
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
    #[serde(default)]
    pub roles: RolesInput,
    /// The agent limits to change.
    #[serde(default)]
    pub agent_limits: Option<AgentLimitsInput>,
}

/// A field that is present, with its value or null (a field left out stays `None`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

fn limits_view(row: &AgentLimitsRow, limits: &Limits) -> AgentLimitsView {
    let mut set = Vec::new();
    for (name, value) in [
        ("max_steps", row.max_steps),
        ("budget_usd", row.budget_micros),
        ("timeout_seconds", row.timeout_ms),
    ] {
        if value.is_some() {
            set.push(name);
        }
    }
    AgentLimitsView {
        max_steps: limits.max_steps,
        budget_usd: limits.budget_micros as f64 / 1_000_000.0,
        timeout_seconds: limits.timeout.as_secs(),
        set,
        updated_at: row.updated_at.map(time),
    }
}

/// The answer for `resolved`, which holds every role ([`llm_roles::resolve`]), and the agent
/// limits.
async fn settings(state: &HostState, tenant: &TenantKey) -> Result<LlmSettings, ApiError> {
    let resolved = llm_roles::resolve(&state.store, tenant).await?;
    let row = state.store.agent_limits(tenant).await?;
    let limits = runner::tenant_limits(&state.store, tenant).await?;
    Ok(view(&resolved, limits_view(&row, &limits)))
}

/// The answer for `resolved`, which holds every role ([`llm_roles::resolve`]).
fn view(resolved: &[Resolved], agent_limits: AgentLimitsView) -> LlmSettings {
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
        agent_limits,
    }
}

/// The caller's tenant's roles.
pub async fn get(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
) -> Result<Json<LlmSettings>, ApiError> {
    Ok(Json(settings(&state, &tenant.key()).await?))
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
    // The limits are checked before anything is stored, and stored with the roles in one
    // transaction, so a refused field changes nothing.
    let limits = match body.agent_limits {
        Some(input) => {
            let change = runner::LimitsChange {
                max_steps: input.max_steps,
                budget_usd: input.budget_usd,
                timeout_seconds: input.timeout_seconds,
            };
            Some(runner::changed_limits(&state.store, &key, &change).await?)
        }
        None => None,
    };
    llm_roles::update(&state.store, &key, &set, &reset, limits.as_ref()).await?;
    Ok(Json(settings(&state, &key).await?))
}

/// The routes of a tenant's model roles.
pub(super) fn router() -> Routes {
    Routes::new().route("/llm-settings", crate::routing::get(get).put(put))
}

//! Grants between the apps of one tenant (spec section 3): the caller side asks (approved at
//! once), the callee side approves with the agents it admits (`__route__` for its HTTP
//! routes), either side revokes. A grant is honoured only when it exists for the pair, both
//! sides approved, it is not revoked and the target is among its `allowed_agents`; each
//! refusal has its own reason ([`honoured`]). Only a tenant admin moves a grant: an app never
//! approves anything.

use atrium_store::{Grant, Install};
use serde::Serialize;

use crate::Refusal;
use crate::registry::Actor;
use crate::serving::Serving;

/// The marker of `allowed_agents` that admits the callee's declared HTTP routes.
pub const ROUTE: &str = "__route__";

/// Where a grant stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantState {
    /// The caller side approved; the callee side has not.
    PendingCalleeApproval,
    /// Both sides approved.
    Active,
    /// Either side revoked it.
    Revoked,
}

/// The state of `grant`.
#[must_use]
pub fn state(grant: &Grant) -> GrantState {
    if grant.revoked_at.is_some() {
        GrantState::Revoked
    } else if grant.is_active() {
        GrantState::Active
    } else {
        GrantState::PendingCalleeApproval
    }
}

async fn installed(serving: &Serving, tenant: &Actor, app: &str) -> Result<Install, Refusal> {
    serving
        .active_install(tenant, app)
        .await
        .map_err(|_| Refusal::not_found(format!("this tenant has no active install of `{app}`")))
}

/// `agents` checked against what `callee` declares: its agents, or [`ROUTE`].
async fn checked_agents(
    serving: &Serving,
    install: &Install,
    agents: &[String],
) -> Result<Vec<String>, Refusal> {
    if agents.is_empty() {
        return Err(Refusal::Invalid {
            field: "allowed_agents".into(),
            message: format!(
                "allowed_agents must name at least one agent of `{}` (or `{ROUTE}` for its routes)",
                install.app_slug
            ),
        });
    }
    let app = serving
        .app(&install.app_slug, &install.version)
        .await
        .map_err(|e| Refusal::not_found(e.to_string()))?;
    let declared: Vec<&str> = app
        .manifest()
        .agents
        .iter()
        .map(|a| a.id.as_str())
        .collect();
    let mut out: Vec<String> = Vec::new();
    for agent in agents {
        if agent != ROUTE && !declared.contains(&agent.as_str()) {
            return Err(Refusal::Invalid {
                field: "allowed_agents".into(),
                message: format!(
                    "`{agent}` is not an agent of `{}` (its agents: {}; `{ROUTE}` admits its routes)",
                    install.app_slug,
                    atrium_manifest::sandbox::declared_names(&declared)
                ),
            });
        }
        if !out.contains(agent) {
            out.push(agent.clone());
        }
    }
    Ok(out)
}

/// The caller side asks for a grant from `caller` to `callee`'s `agents` (approved by the
/// caller at once). Answers the grant and whether it (re)started: a pending or active grant
/// is left as it is, a revoked one starts over.
pub async fn request(
    serving: &Serving,
    tenant: &Actor,
    caller: &str,
    callee: &str,
    agents: &[String],
) -> Result<(Grant, bool), Refusal> {
    if caller == callee {
        return Err(Refusal::Invalid {
            field: "callee_app".into(),
            message: "an app needs no grant to call itself".into(),
        });
    }
    installed(serving, tenant, caller).await?;
    let callee_install = installed(serving, tenant, callee).await?;
    let agents = checked_agents(serving, &callee_install, agents).await?;
    Ok(serving
        .registry()
        .store()
        .request_grant(tenant, caller, callee, &agents)
        .await?)
}

/// The callee side approves the grant from `caller` to `callee`, admitting `allowed_agents`.
pub async fn approve(
    serving: &Serving,
    tenant: &Actor,
    caller: &str,
    callee: &str,
    allowed_agents: &[String],
) -> Result<Grant, Refusal> {
    let store = serving.registry().store();
    let existing = store
        .grant(tenant, caller, callee)
        .await?
        .ok_or_else(|| Refusal::not_found(format!("no grant from `{caller}` to `{callee}`")))?;
    if existing.revoked_at.is_some() {
        return Err(Refusal::Conflict {
            code: "grant_revoked",
            message: format!(
                "the grant from `{caller}` to `{callee}` was revoked: the caller side asks again first"
            ),
        });
    }
    let callee_install = installed(serving, tenant, callee).await?;
    let agents = checked_agents(serving, &callee_install, allowed_agents).await?;
    let approved = store.approve_grant(tenant, caller, callee, &agents).await?;
    approved.ok_or_else(|| Refusal::not_found(format!("no grant from `{caller}` to `{callee}`")))
}

/// Revokes the grant from `caller` to `callee` (either side).
pub async fn revoke(
    serving: &Serving,
    tenant: &Actor,
    caller: &str,
    callee: &str,
) -> Result<Grant, Refusal> {
    serving
        .registry()
        .store()
        .revoke_grant(tenant, caller, callee)
        .await?
        .ok_or_else(|| Refusal::not_found(format!("no grant from `{caller}` to `{callee}`")))
}

/// Whether `caller` may reach `target` (an agent, or [`ROUTE`]) of `callee` for `tenant`:
/// the callee's active install, or the reason, which names the rule (`callee not installed`,
/// `no grant`, `grant revoked`, `pending callee approval`, `agent not allowed`).
pub async fn honoured(
    serving: &Serving,
    tenant: &Actor,
    caller: &str,
    callee: &str,
    target: &str,
) -> Result<Install, String> {
    let install = serving.active_install(tenant, callee).await.map_err(|_| {
        format!("callee not installed: this tenant has no active install of `{callee}`")
    })?;
    let grant = serving
        .registry()
        .store()
        .grant(tenant, caller, callee)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "reading a grant failed");
            "the platform failed to read the grant; try again".to_owned()
        })?
        .ok_or_else(|| format!("no grant: `{caller}` has no grant to call `{callee}`"))?;
    match state(&grant) {
        GrantState::Revoked => Err(format!(
            "grant revoked: the grant from `{caller}` to `{callee}` was revoked"
        )),
        GrantState::PendingCalleeApproval => Err(format!(
            "pending callee approval: `{callee}`'s side has not approved the grant from `{caller}`"
        )),
        GrantState::Active if !grant.allowed_agents.iter().any(|a| a == target) => Err(format!(
            "agent not allowed: `{target}` is not among the grant's allowed agents ({})",
            grant.allowed_agents.join(", ")
        )),
        GrantState::Active => Ok(install),
    }
}

//! Model roles: which model of the /v1 gateway a tenant's agents call. Three roles, `fast`,
//! `specialist` and `orchestrator`, each mapped by the tenant (`PUT /api/llm-settings`) to a
//! `tier`, a `provider` and/or a `model`, as a chat request names them; a role the tenant did
//! not set has the platform's default ([`default_route`]). A heartbeat's `model_tier` names a
//! role ([`Role::for_model_tier`]). The agent runner, the orchestrator and heartbeats resolve
//! their model here and nowhere else.

use atrium_inference::catalog::ProviderId;
use atrium_inference::router::{Selection, Tier};
use atrium_store::{AgentLimitsRow, LlmRole, Store, TenantKey};

/// The longest model name a role may name.
pub const MAX_MODEL_CHARS: usize = 200;

/// A model role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Quick, cheap steps: the `cheap` heartbeats.
    Fast,
    /// The apps' agents, and the `standard` heartbeats.
    Specialist,
    /// Routing a conversation to an agent, and the `premium` heartbeats.
    Orchestrator,
}

impl Role {
    /// Every role, in the order answers list them.
    pub const ALL: [Role; 3] = [Role::Fast, Role::Specialist, Role::Orchestrator];

    /// The role's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Fast => "fast",
            Role::Specialist => "specialist",
            Role::Orchestrator => "orchestrator",
        }
    }

    /// Parses a role's name.
    pub fn parse(name: &str) -> Option<Role> {
        Self::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The role a heartbeat's `model_tier` resolves to: `cheap` (the default) → `fast`,
    /// `standard` → `specialist`, `premium` → `orchestrator`.
    pub fn for_model_tier(model_tier: &str) -> Option<Role> {
        MODEL_TIERS
            .iter()
            .find(|(tier, _)| *tier == model_tier)
            .map(|(_, role)| *role)
    }
}

/// A heartbeat's `model_tier` values and the roles they resolve to.
pub const MODEL_TIERS: [(&str, Role); 3] = [
    ("cheap", Role::Fast),
    ("standard", Role::Specialist),
    ("premium", Role::Orchestrator),
];

/// What a role calls: the gateway's `tier`, `provider` and `model`, as a chat request names
/// them (at least one is set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// A tier value (`eu-sovereign`, `frontier`, `cheapest`).
    pub tier: Option<String>,
    /// A provider name.
    pub provider: Option<String>,
    /// A model name.
    pub model: Option<String>,
}

impl Route {
    /// The gateway's selection for this route: routing, fallback and the EU data policy then
    /// apply as to any chat request.
    pub fn selection(&self, contains_pii: bool) -> Selection {
        Selection {
            tier: self.tier.as_deref().and_then(Tier::parse),
            provider: self.provider.as_deref().and_then(ProviderId::parse),
            model: self.model.clone(),
            contains_pii,
        }
    }

    /// Checks a route a tenant sets; the error names the field (`tier`, `provider`, `model`)
    /// and says what is wrong.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.tier.is_none() && self.provider.is_none() && self.model.is_none() {
            return Err((
                "tier",
                "a role names a tier, a provider or a model (or is null to return to the default)"
                    .into(),
            ));
        }
        if let Some(tier) = &self.tier
            && Tier::parse(tier).is_none()
        {
            return Err((
                "tier",
                format!("`{tier}` is not one of eu-sovereign, frontier, cheapest"),
            ));
        }
        if let Some(provider) = &self.provider
            && ProviderId::parse(provider).is_none()
        {
            return Err((
                "provider",
                format!("`{provider}` is not one of {}", ProviderId::names()),
            ));
        }
        if let Some(model) = &self.model {
            if model.trim().is_empty() {
                return Err(("model", "the model is empty".into()));
            }
            if model.chars().count() > MAX_MODEL_CHARS {
                return Err((
                    "model",
                    format!("the model name is longer than {MAX_MODEL_CHARS} characters"),
                ));
            }
        }
        Ok(())
    }
}

/// The route of a role the tenant did not set: `fast` the cheapest EU model, `specialist` and
/// `orchestrator` the gateway's default, `eu-sovereign`. So a tenant that set nothing stays in
/// the EU, and `frontier` is only ever the tenant's explicit choice.
pub fn default_route(role: Role) -> Route {
    let tier = match role {
        Role::Fast => Tier::Cheapest,
        Role::Specialist | Role::Orchestrator => Tier::EuSovereign,
    };
    Route {
        tier: Some(tier.as_str().to_owned()),
        provider: None,
        model: None,
    }
}

/// One role as it applies to a tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The role.
    pub role: Role,
    /// What it calls.
    pub route: Route,
    /// When the tenant set it; none for the default.
    pub set_at: Option<jiff::Timestamp>,
}

/// Every role of `tenant`, in [`Role::ALL`]'s order: what it set, else the default. A stored
/// row that no longer names a known role is ignored.
pub async fn resolve(store: &Store, tenant: &TenantKey) -> atrium_store::Result<Vec<Resolved>> {
    let set = store.llm_roles(tenant).await?;
    Ok(Role::ALL
        .into_iter()
        .map(|role| match set.iter().find(|r| r.role == role.as_str()) {
            Some(row) => Resolved {
                role,
                route: Route {
                    tier: row.tier.clone(),
                    provider: row.provider.clone(),
                    model: row.model.clone(),
                },
                set_at: Some(row.updated_at),
            },
            None => Resolved {
                role,
                route: default_route(role),
                set_at: None,
            },
        })
        .collect())
}

/// The route `role` of `tenant` calls.
pub async fn route(store: &Store, tenant: &TenantKey, role: Role) -> atrium_store::Result<Route> {
    Ok(resolve(store, tenant)
        .await?
        .into_iter()
        .find(|r| r.role == role)
        .map_or_else(|| default_route(role), |r| r.route))
}

/// Stores a tenant's changes in one transaction: `set` replaces roles, `reset` returns roles
/// to their defaults, `limits` (checked by [`crate::runner::changed_limits`]) replaces the
/// agent limits. Every route is checked first, so nothing is stored when one is refused.
pub async fn update(
    store: &Store,
    tenant: &TenantKey,
    set: &[(Role, Route)],
    reset: &[Role],
    limits: Option<&AgentLimitsRow>,
) -> Result<(), crate::Refusal> {
    for (role, route) in set {
        route
            .check()
            .map_err(|(field, message)| crate::Refusal::Invalid {
                field: format!("roles.{}.{field}", role.as_str()).into(),
                message,
            })?;
    }
    let rows: Vec<LlmRole> = set
        .iter()
        .map(|(role, route)| LlmRole {
            role: role.as_str().to_owned(),
            tier: route.tier.clone(),
            provider: route.provider.as_deref().map(str::to_ascii_lowercase),
            model: route.model.clone(),
            updated_at: jiff::Timestamp::UNIX_EPOCH,
        })
        .collect();
    let reset: Vec<&str> = reset.iter().map(|r| r.as_str()).collect();
    store.put_llm_roles(tenant, &rows, &reset, limits).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_tiers_resolve_to_roles() {
        assert_eq!(Role::for_model_tier("cheap"), Some(Role::Fast));
        assert_eq!(Role::for_model_tier("standard"), Some(Role::Specialist));
        assert_eq!(Role::for_model_tier("premium"), Some(Role::Orchestrator));
        assert_eq!(Role::for_model_tier("gold"), None);
    }

    #[test]
    fn routes_are_checked_field_by_field() {
        let route = |tier: Option<&str>, provider: Option<&str>, model: Option<&str>| Route {
            tier: tier.map(str::to_owned),
            provider: provider.map(str::to_owned),
            model: model.map(str::to_owned),
        };
        assert!(route(Some("frontier"), None, None).check().is_ok());
        assert!(
            route(None, Some("Mistral"), Some("mistral-small"))
                .check()
                .is_ok()
        );
        assert_eq!(route(None, None, None).check().unwrap_err().0, "tier");
        assert_eq!(
            route(Some("gold"), None, None).check().unwrap_err().0,
            "tier"
        );
        let (field, message) = route(None, Some("azure"), None).check().unwrap_err();
        assert_eq!(field, "provider");
        assert!(message.contains("mistral"), "{message}");
        assert_eq!(route(None, None, Some(" ")).check().unwrap_err().0, "model");
        let long = "m".repeat(MAX_MODEL_CHARS + 1);
        assert_eq!(
            route(None, None, Some(&long)).check().unwrap_err().0,
            "model"
        );
    }

    #[test]
    fn defaults_stay_in_the_eu() {
        for role in Role::ALL {
            let selection = default_route(role).selection(false);
            assert_ne!(selection.tier, Some(Tier::Frontier));
            assert!(selection.tier.is_some());
        }
    }
}

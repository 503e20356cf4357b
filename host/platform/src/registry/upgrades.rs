//! Upgrades: an install stays on its version until it moves. `upgrade_policy: auto` moves it
//! to each newly promoted version unless that version asks for scopes the tenant has not
//! granted (it then waits, `pending_version`, for the tenant's consent); the tenant upgrades
//! with consent; the developer forces installs to a version, bypassing the policy, and may
//! grant new scopes without consent on their own dev tenant only.

use atrium_store::{Developer, Install};
use serde::{Deserialize, Serialize};

use super::{ActivateRequest, Activated, Actor, Registry, RegistryError, Result};

/// What happened to one install in an upgrade run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UpgradeOutcome {
    /// The organization.
    pub organization: String,
    /// The tenant.
    pub tenant: String,
    /// The version it was on.
    pub from: String,
    /// The version it is on now, or waits for.
    pub to: String,
    /// `upgraded`, `pending_consent` (new scopes, no consent) or `current` (already there).
    pub outcome: String,
    /// The scopes the target adds, when it waits for consent or they were force-granted.
    pub new_scopes: Vec<String>,
}

/// The body of the developer's forced upgrade.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForcedUpgrade {
    /// The version to move installs to (default: the app's current version).
    #[serde(default)]
    pub target_version: Option<String>,
    /// Only the installs of this organization (`org_...`, as the outcomes name it); needed
    /// with `tenant`, since a tenant id is unique only within its organization.
    #[serde(default)]
    pub organization: Option<String>,
    /// Only this tenant of `organization`; default: every install.
    #[serde(default)]
    pub tenant: Option<String>,
    /// Grant the target's new scopes without the tenant's consent: the developer's dev tenant
    /// only.
    #[serde(default)]
    pub force_grant_new_scopes: bool,
}

impl Registry {
    /// After `version` of `app_slug` was promoted: moves the auto-upgrading installs.
    pub async fn auto_upgrade(&self, app_slug: &str, version: &str) -> Result<Vec<UpgradeOutcome>> {
        let manifest = self.manifest_of(app_slug, version).await?;
        let mut outcomes = Vec::new();
        for install in self.inner.store.installs_of_app(app_slug).await? {
            if install.upgrade_policy != atrium_store::UpgradePolicy::Auto
                || install.version == version
            {
                continue;
            }
            outcomes.push(
                self.move_install(&install, version, &manifest.required_scopes, false)
                    .await?,
            );
        }
        Ok(outcomes)
    }

    /// The developer's forced upgrade of their app's installs.
    pub async fn force_upgrade(
        &self,
        developer: &Developer,
        app_slug: &str,
        request: &ForcedUpgrade,
    ) -> Result<Vec<UpgradeOutcome>> {
        let app = self.owned_app(developer, app_slug).await?;
        let target = request
            .target_version
            .clone()
            .or(app.current_version)
            .ok_or_else(|| {
                RegistryError::NotFound(format!(
                    "`{app_slug}` has no current version; name target_version"
                ))
            })?;
        let stored = self
            .inner
            .store
            .version(app_slug, &target)
            .await?
            .ok_or_else(|| {
                RegistryError::NotFound(format!(
                    "version {target} of `{app_slug}` is not registered"
                ))
            })?;
        if stored.promoted_at.is_none() {
            return Err(RegistryError::Conflict(format!(
                "version {target} of `{app_slug}` was never promoted; promote it before upgrading installs to it"
            )));
        }
        if let (Some(tenant), None) = (&request.tenant, &request.organization) {
            return Err(RegistryError::BadRequest {
                param: "organization",
                message: format!(
                    "name the organization of tenant `{tenant}` too: a tenant id is unique only within its organization"
                ),
            });
        }
        let dev_tenant = developer.dev_tenant.clone();
        if request.force_grant_new_scopes {
            let Some((org, tenant)) = &dev_tenant else {
                return Err(RegistryError::Forbidden(
                    "force_grant_new_scopes is for dev tenants only, and this developer has none"
                        .into(),
                ));
            };
            let names_other = request.tenant.as_deref().is_some_and(|t| t != tenant)
                || request.organization.as_deref().is_some_and(|o| o != org);
            if names_other {
                return Err(RegistryError::Forbidden(format!(
                    "force_grant_new_scopes is for dev tenants only; the developer's dev tenant is `{tenant}` of {org}"
                )));
            }
        }
        let manifest = self.manifest_of(app_slug, &target).await?;
        let mut outcomes = Vec::new();
        for install in self.inner.store.installs_of_app(app_slug).await? {
            let other_org = request
                .organization
                .as_deref()
                .is_some_and(|o| o != install.org_id);
            let other_tenant = request
                .tenant
                .as_deref()
                .is_some_and(|t| t != install.tenant_id);
            if other_org || other_tenant {
                continue;
            }
            let is_dev = dev_tenant.as_ref().is_some_and(|(org, tenant)| {
                *org == install.org_id && *tenant == install.tenant_id
            });
            let force = request.force_grant_new_scopes && is_dev;
            outcomes.push(
                self.move_install(&install, &target, &manifest.required_scopes, force)
                    .await?,
            );
        }
        Ok(outcomes)
    }

    /// The tenant's upgrade with consent: re-activates on `version` (default the pending
    /// version, else the app's current one) with the scopes granted now.
    pub async fn upgrade(
        &self,
        tenant: &Actor,
        app_slug: &str,
        granted_scopes: Option<Vec<String>>,
        version: Option<String>,
    ) -> Result<Activated> {
        let install = self.tenant_install(tenant, app_slug).await?;
        let app = self.inner.store.app(app_slug).await?;
        let target = version
            .or(install.pending_version.clone())
            .or(app.and_then(|a| a.current_version))
            .ok_or_else(|| {
                RegistryError::NotFound(format!("`{app_slug}` has no version to upgrade to"))
            })?;
        let request = ActivateRequest {
            granted_scopes,
            version: Some(target),
            ..ActivateRequest::default()
        };
        self.activate(tenant, app_slug, &request).await
    }

    async fn move_install(
        &self,
        install: &Install,
        version: &str,
        required: &[String],
        force: bool,
    ) -> Result<UpgradeOutcome> {
        let new_scopes: Vec<String> = required
            .iter()
            .filter(|s| !install.granted_scopes.contains(s))
            .cloned()
            .collect();
        let mut outcome = UpgradeOutcome {
            organization: install.org_id.clone(),
            tenant: install.tenant_id.clone(),
            from: install.version.clone(),
            to: version.to_owned(),
            outcome: "upgraded".to_owned(),
            new_scopes: new_scopes.clone(),
        };
        let store = &self.inner.store;
        if install.version == version {
            outcome.outcome = "current".to_owned();
            return Ok(outcome);
        }
        if !new_scopes.is_empty() && !force {
            store.set_pending_version(&install.key(), version).await?;
            outcome.outcome = "pending_consent".to_owned();
            return Ok(outcome);
        }
        // Scopes the new version no longer asks for are dropped: a grant is for what is asked.
        let granted: Vec<String> = required.to_vec();
        store
            .upgrade_install(&install.key(), version, &granted)
            .await?;
        Ok(outcome)
    }
}

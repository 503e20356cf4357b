//! Upgrades: an install stays on its version until it moves. `upgrade_policy: auto` moves it
//! to each newly promoted version unless that version asks for scopes the tenant has not
//! granted, or needs a required setting the install has no value for (it then waits,
//! `pending_version`, for the tenant's consent and values); the tenant upgrades with consent
//! and the values; the developer forces installs to a version, bypassing the policy, and may
//! grant new scopes without consent on their own dev tenant only (a missing setting still
//! waits: nobody but the tenant can give it a value; in their own dev tenant the developer is
//! that tenant, and gives it with [`Registry::set_dev_settings`]). An install that moves takes
//! the new version's settings checked as activation checks them: new ones at their defaults.
//! Every move carries what activation does (the tenant's upgrade is an activation; a forced or
//! automatic one writes the move, then runs the same code, `declared`): the heartbeat rows,
//! visions and event wires the version declares are created or proposed, and those it no
//! longer declares retired.

use atrium_manifest::{AutoDefault, SettingType};
use atrium_store::{Developer, Install, InstallValueKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{ActivateRequest, Activated, Actor, DevInstall, Registry, RegistryError, Result};

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
    /// `upgraded`, `pending_consent` (new scopes, no consent), `pending_settings` (required
    /// settings without a value; with new scopes as well, `pending_consent`) or `current`
    /// (already there).
    pub outcome: String,
    /// The scopes the target adds, when it waits for consent or they were force-granted.
    pub new_scopes: Vec<String>,
    /// The target's settings the install must be given (required without a value, or a value
    /// the target's rules refuse), when it waits.
    #[serde(default)]
    pub missing_settings: Vec<String>,
}

/// What an install waits for before it moves to its pending version.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Pending {
    /// The version it waits to move to.
    pub version: String,
    /// The scopes that version adds, which the tenant has not granted.
    pub new_scopes: Vec<String>,
    /// The settings it needs values for (`POST /api/installs/{app}/upgrade` takes them).
    pub missing_settings: Vec<String>,
}

/// The body of the tenant's upgrade, `POST /api/installs/{app}/upgrade`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantUpgrade {
    /// The scopes granted now (consent to what the new version adds); omitted keeps them.
    #[serde(default)]
    pub granted_scopes: Option<Vec<String>>,
    /// Values of settings by id, for settings the new version adds or whose values change;
    /// omitted ids keep their stored value (or get their default).
    #[serde(default)]
    pub settings: Map<String, Value>,
    /// The version (default: the pending version, else the app's current one).
    #[serde(default)]
    pub version: Option<String>,
}

/// The body of the developer's forced upgrade.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForcedUpgrade {
    /// The version to move installs to (default: the app's current version).
    #[serde(default)]
    pub target_version: Option<String>,
    /// Only the installs of this organization, by its `org_...` id (as the outcomes name it)
    /// or its name (as the administration commands take it); needed with `tenant`, since a
    /// tenant id is unique only within its organization.
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
            let outcome = self
                .move_install(&install, version, &manifest, false)
                .await?;
            tracing::info!(
                app = app_slug,
                org = %outcome.organization,
                tenant = %outcome.tenant,
                from = %outcome.from,
                to = %outcome.to,
                outcome = %outcome.outcome,
                new_scopes = ?outcome.new_scopes,
                missing_settings = ?outcome.missing_settings,
                "auto-upgrade"
            );
            outcomes.push(outcome);
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
        // By id or by name. A name no organization has is kept as it is: it matches no
        // install, as an unknown id does, and says nothing of which organizations exist.
        let organization = match request.organization.as_deref() {
            Some(reference) => Some(
                self.inner
                    .store
                    .organization_id(reference)
                    .await?
                    .unwrap_or_else(|| reference.to_owned()),
            ),
            None => None,
        };
        let dev_tenant = developer.dev_tenant.clone();
        if request.force_grant_new_scopes {
            let Some((org, tenant)) = &dev_tenant else {
                return Err(RegistryError::Forbidden(
                    "force_grant_new_scopes is for dev tenants only, and this developer has none"
                        .into(),
                ));
            };
            let names_other = request.tenant.as_deref().is_some_and(|t| t != tenant)
                || organization.as_deref().is_some_and(|o| o != org);
            if names_other {
                return Err(RegistryError::Forbidden(format!(
                    "force_grant_new_scopes is for dev tenants only; the developer's dev tenant is `{tenant}` of {org}"
                )));
            }
        }
        let manifest = self.manifest_of(app_slug, &target).await?;
        let mut outcomes = Vec::new();
        for install in self.inner.store.installs_of_app(app_slug).await? {
            let other_org = organization.as_deref().is_some_and(|o| o != install.org_id);
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
                self.move_install(&install, &target, &manifest, force)
                    .await?,
            );
        }
        Ok(outcomes)
    }

    /// The tenant's upgrade with consent: re-activates on `version` (default the pending
    /// version, else the app's current one) with the scopes granted now and the settings given.
    pub async fn upgrade(
        &self,
        tenant: &Actor,
        app_slug: &str,
        request: TenantUpgrade,
    ) -> Result<Activated> {
        let install = self.tenant_install(tenant, app_slug).await?;
        let app = self.inner.store.app(app_slug).await?;
        let target = request
            .version
            .or(install.pending_version.clone())
            .or(app.and_then(|a| a.current_version))
            .ok_or_else(|| {
                RegistryError::NotFound(format!("`{app_slug}` has no version to upgrade to"))
            })?;
        let request = ActivateRequest {
            granted_scopes: request.granted_scopes,
            settings: request.settings,
            version: Some(target),
            ..ActivateRequest::default()
        };
        self.activate(tenant, app_slug, &request).await
    }

    /// Puts `version` of `app_slug` into the developer's dev tenant (see [`DevInstall`]);
    /// `None` without a dev tenant. A failure of the host is logged and reported as the
    /// outcome `failed`: the promotion itself is done.
    pub(super) async fn install_in_dev_tenant(
        &self,
        developer: &Developer,
        app_slug: &str,
        version: &str,
    ) -> Option<DevInstall> {
        let (org, tenant) = developer.dev_tenant.clone()?;
        let actor = Actor {
            tenant: atrium_store::TenantKey::new(&org, &tenant),
            user_id: None,
        };
        let mut report = DevInstall {
            organization: org,
            tenant,
            outcome: String::new(),
            version: None,
            missing: Vec::new(),
            message: None,
        };
        let before = match self.inner.store.install(&actor.install(app_slug)).await {
            Ok(before) => before,
            Err(e) => {
                tracing::warn!(app = app_slug, version, error = %e, "installing in the dev tenant failed");
                report.outcome = "failed".to_owned();
                report.message = Some(e.to_string());
                return Some(report);
            }
        };
        report.version = before.as_ref().map(|i| i.version.clone());
        if before.as_ref().is_some_and(|i| {
            i.version == version && i.status == atrium_store::InstallStatus::Active
        }) {
            report.outcome = "current".to_owned();
            return Some(report);
        }
        let required = match self.manifest_of(app_slug, version).await {
            Ok(manifest) => manifest.required_scopes,
            Err(e) => {
                report.outcome = "failed".to_owned();
                report.message = Some(e.to_string());
                return Some(report);
            }
        };
        let request = ActivateRequest {
            granted_scopes: Some(required),
            version: Some(version.to_owned()),
            ..ActivateRequest::default()
        };
        match self.activate(&actor, app_slug, &request).await {
            Ok(activated) => {
                report.outcome = if before.is_some() {
                    "upgraded"
                } else {
                    "installed"
                }
                .to_owned();
                report.version = Some(activated.install.version);
            }
            Err(RegistryError::Activation {
                outcome,
                message,
                names,
            }) => {
                report.outcome = outcome.to_owned();
                report.missing = names;
                report.message = Some(message);
            }
            Err(e) => {
                tracing::warn!(app = app_slug, version, error = %e, "installing in the dev tenant failed");
                report.outcome = "failed".to_owned();
                report.message = Some(e.to_string());
            }
        }
        Some(report)
    }

    /// The developer's dev tenant `tenant`'s install of their app `app` (the caller checked
    /// that the developer owns it and that `tenant` is their dev tenant, acting as the
    /// developer): the install, the settings of the version it is meant to run and what that
    /// version still needs.
    pub async fn dev_settings(
        &self,
        tenant: &Actor,
        app: &atrium_store::App,
    ) -> Result<DevSettings> {
        let store = &self.inner.store;
        let install = store.install(&tenant.install(&app.slug)).await?;
        let mut view = DevSettings {
            install: None,
            version: None,
            install_settings: Vec::new(),
            secret_settings: Vec::new(),
            missing_settings: Vec::new(),
            outcome: None,
            first: false,
        };
        let Some(version) = dev_version(app, install.as_ref()) else {
            view.install = install;
            return Ok(view);
        };
        let manifest = self.manifest_of(&app.slug, &version).await?;
        let secret_settings = match &install {
            Some(_) => {
                store
                    .install_secret_keys(&tenant.install(&app.slug), InstallValueKind::Setting)
                    .await?
            }
            None => Vec::new(),
        };
        let integrations = self.integrations(&tenant.tenant).await?;
        // What an activation on `version` would refuse for the settings, from the same check.
        let checked = self.check_settings(
            tenant,
            &app.slug,
            &manifest,
            &ActivateRequest::default(),
            install.as_ref(),
            &secret_settings,
            &integrations,
        );
        view.missing_settings = match checked {
            Ok(_) => Vec::new(),
            Err(RegistryError::Activation { names, .. }) => setting_names(names),
            Err(e) => return Err(e),
        };
        view.install = install;
        view.version = Some(version);
        view.install_settings = manifest.install_settings;
        view.secret_settings = secret_settings;
        Ok(view)
    }

    /// The developer sets settings of their app's install in their dev tenant (given ids
    /// only; the others keep their values), with the checks of a tenant admin's change: an
    /// install active on the app's current version is changed as `PATCH /api/installs/{app}`
    /// changes it ([`Registry::update_settings`]); any other (none yet, because the version
    /// needs a setting without a default; an older version the promotion could not move;
    /// an inactive one) is activated on the current version with these settings and the
    /// scopes it asks for, as the promotion would have done ([`Registry::activate`]). The
    /// caller checked what [`Registry::dev_settings`] says it checked.
    pub async fn set_dev_settings(
        &self,
        tenant: &Actor,
        app: &atrium_store::App,
        settings: &Map<String, Value>,
    ) -> Result<DevSettings> {
        let slug = app.slug.as_str();
        let existing = self.inner.store.install(&tenant.install(slug)).await?;
        let target = dev_version(app, existing.as_ref()).ok_or_else(|| {
            RegistryError::NotFound(format!(
                "`{slug}` has no current version to run in the dev tenant: promote a version first"
            ))
        })?;
        let (outcome, first) = match &existing {
            Some(install)
                if install.version == target
                    && install.status == atrium_store::InstallStatus::Active =>
            {
                self.update_settings(tenant, slug, settings).await?;
                ("updated", false)
            }
            _ => {
                let required = self.manifest_of(slug, &target).await?.required_scopes;
                let request = ActivateRequest {
                    granted_scopes: Some(required),
                    settings: settings.clone(),
                    version: Some(target.clone()),
                    ..ActivateRequest::default()
                };
                let activated = self.activate(tenant, slug, &request).await?;
                let outcome = match &existing {
                    None => "installed",
                    Some(install) if install.version != target => "upgraded",
                    Some(_) => "activated",
                };
                (outcome, activated.first)
            }
        };
        let mut view = self.dev_settings(tenant, app).await?;
        view.outcome = Some(outcome);
        view.first = first;
        Ok(view)
    }

    /// What an install with a pending version waits for; `None` without one.
    pub async fn pending(&self, install: &Install) -> Result<Option<Pending>> {
        let Some(version) = &install.pending_version else {
            return Ok(None);
        };
        let manifest = self.manifest_of(&install.app_slug, version).await?;
        let (new_scopes, missing_settings) = match self.needs(install, &manifest).await? {
            Needs::Nothing(_) => (Vec::new(), Vec::new()),
            Needs::Some {
                new_scopes,
                missing_settings,
            } => (new_scopes, missing_settings),
        };
        Ok(Some(Pending {
            version: version.clone(),
            new_scopes,
            missing_settings,
        }))
    }

    /// What moving `install` to the version of `manifest` needs: nothing (then the settings it
    /// would have there), or scopes and settings.
    async fn needs(
        &self,
        install: &Install,
        manifest: &atrium_manifest::Manifest,
    ) -> Result<Needs> {
        let new_scopes: Vec<String> = manifest
            .required_scopes
            .iter()
            .filter(|s| !install.granted_scopes.contains(s))
            .cloned()
            .collect();
        // A promotion checks every auto install: the reads the check may need are made only
        // when the target's settings need them (a secret setting, a mail address default).
        let settings = &manifest.install_settings;
        let sealed_keys = if settings.iter().any(|s| s.kind == SettingType::Secret) {
            self.inner
                .store
                .install_secret_keys(&install.key(), InstallValueKind::Setting)
                .await?
        } else {
            Vec::new()
        };
        let actor = Actor {
            tenant: install.tenant(),
            user_id: install.activated_by.clone(),
        };
        let integrations = if settings
            .iter()
            .any(|s| s.auto_default == Some(AutoDefault::MailPrimaryEmail))
        {
            self.integrations(&actor.tenant).await?
        } else {
            Map::new()
        };
        let checked = self.check_settings(
            &actor,
            &install.app_slug,
            manifest,
            &ActivateRequest::default(),
            Some(install),
            &sealed_keys,
            &integrations,
        );
        let missing_settings = match checked {
            Ok(checked) if new_scopes.is_empty() => return Ok(Needs::Nothing(checked.settings)),
            Ok(_) => Vec::new(),
            Err(RegistryError::Activation { names, .. }) => setting_names(names),
            Err(e) => return Err(e),
        };
        Ok(Needs::Some {
            new_scopes,
            missing_settings,
        })
    }

    async fn move_install(
        &self,
        install: &Install,
        version: &str,
        manifest: &atrium_manifest::Manifest,
        force: bool,
    ) -> Result<UpgradeOutcome> {
        let mut outcome = UpgradeOutcome {
            organization: install.org_id.clone(),
            tenant: install.tenant_id.clone(),
            from: install.version.clone(),
            to: version.to_owned(),
            outcome: "upgraded".to_owned(),
            new_scopes: Vec::new(),
            missing_settings: Vec::new(),
        };
        if install.version == version {
            outcome.outcome = "current".to_owned();
            return Ok(outcome);
        }
        // With the new scopes force-granted, only the settings can hold the install back.
        let mut considered = install.clone();
        if force {
            considered.granted_scopes = manifest.required_scopes.clone();
        }
        let settings = match self.needs(&considered, manifest).await? {
            Needs::Nothing(settings) => settings,
            Needs::Some {
                new_scopes,
                missing_settings,
            } => {
                outcome.outcome = if new_scopes.is_empty() {
                    "pending_settings"
                } else {
                    "pending_consent"
                }
                .to_owned();
                outcome.new_scopes = new_scopes;
                outcome.missing_settings = missing_settings;
                self.inner
                    .store
                    .set_pending_version(&install.key(), version)
                    .await?;
                return Ok(outcome);
            }
        };
        outcome.new_scopes = manifest
            .required_scopes
            .iter()
            .filter(|s| !install.granted_scopes.contains(s))
            .cloned()
            .collect();
        // Scopes the new version no longer asks for are dropped: a grant is for what is asked.
        self.inner
            .store
            .upgrade_install(
                &install.key(),
                version,
                &manifest.required_scopes,
                &settings,
                &self.declared_rows(&install.key(), manifest).heartbeats,
            )
            .await?;
        // What activation carries besides the install, by the same code: the visions and event
        // wires the new version declares, and the retirement of those it no longer does.
        let moved = Install {
            version: version.to_owned(),
            granted_scopes: manifest.required_scopes.clone(),
            settings,
            pending_version: None,
            ..install.clone()
        };
        self.follow_declarations(&moved, manifest).await?;
        Ok(outcome)
    }
}

/// The developer's dev tenant's install of their app, and the settings that apply to it
/// ([`Registry::dev_settings`], [`Registry::set_dev_settings`]).
#[derive(Debug, Clone)]
pub struct DevSettings {
    /// The install; none while the dev tenant has none (a promotion whose version needs a
    /// setting without a default installs nothing).
    pub install: Option<Install>,
    /// The version whose settings apply: the app's current version (a promotion puts the dev
    /// tenant there), else the install's; none before any promotion.
    pub version: Option<String>,
    /// That version's `install_settings`.
    pub install_settings: Vec<atrium_manifest::InstallSetting>,
    /// The ids of the install's secret settings that have a value (values are never answered).
    pub secret_settings: Vec<String>,
    /// The settings that version needs a value for before the install can run it: required
    /// without a value or a default, or with a stored value its rules refuse.
    pub missing_settings: Vec<String>,
    /// What [`Registry::set_dev_settings`] did: `updated` (the install on the current version),
    /// `installed` (its first activation), `upgraded` (moved to the current version) or
    /// `activated` (an inactive install, activated again); none for a read.
    pub outcome: Option<&'static str>,
    /// Whether that was the install's first activation (its `on_install` is due).
    pub first: bool,
}

/// The version the dev tenant's install of `app` is meant to run: the app's current version,
/// else the install's.
fn dev_version(app: &atrium_store::App, install: Option<&Install>) -> Option<String> {
    app.current_version
        .clone()
        .or_else(|| install.map(|i| i.version.clone()))
}

/// What moving an install needs.
enum Needs {
    /// Nothing: the settings it would have on the new version.
    Nothing(Map<String, Value>),
    /// Scopes the tenant has not granted, settings without a value.
    Some {
        new_scopes: Vec<String>,
        missing_settings: Vec<String>,
    },
}

/// The settings an activation refusal names (`name: why` each), without the why.
fn setting_names(names: Vec<String>) -> Vec<String> {
    names
        .into_iter()
        .map(|n| n.split(':').next().unwrap_or_default().to_owned())
        .collect()
}

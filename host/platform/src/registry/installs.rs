//! Activation: a tenant installs a published app version, granting its scopes, filling its
//! settings, binding its knowledge slots and choosing how it follows new versions.
//!
//! Every check of sections 3 and 7 runs before anything is written, and each refusal is one
//! outcome ([`RegistryError::Activation`]) naming everything missing: scopes not granted,
//! settings missing or invalid, integrations not configured (fails closed), knowledge slots
//! unbound, dependencies not installed. Re-activation is idempotent: values the request omits
//! keep what the install had, grants are merged and never weakened, templates are cloned once
//! per (tenant, slug).

use atrium_manifest::{AutoDefault, InstallSetting, Manifest, SettingType};
use atrium_store::{
    Activation, Install, InstallStatus, InstallValueKind, NewGrant, NewTemplate, TenantKey,
    UpgradePolicy,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Registry, RegistryError, Result};
use crate::sealing::Sealed;

/// Who acts on a tenant's installs: the tenant (of an organization), and the user when one
/// acts (a tenant token's user; none for the host's own work, such as a schedule or a public
/// route). It dereferences to its [`TenantKey`], so `actor.install(app)` is the key of the
/// tenant's install of `app`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The tenant.
    pub tenant: TenantKey,
    /// The acting user, when known (fills `auto_default: activator_user_id`).
    pub user_id: Option<String>,
}

impl Actor {
    /// `user_id` of `tenant`.
    #[must_use]
    pub fn user(tenant: TenantKey, user_id: impl Into<String>) -> Self {
        Actor {
            tenant,
            user_id: Some(user_id.into()),
        }
    }

    /// The host itself, on the tenant's behalf (no user).
    #[must_use]
    pub fn host(tenant: TenantKey) -> Self {
        Actor {
            tenant,
            user_id: None,
        }
    }
}

impl std::ops::Deref for Actor {
    type Target = TenantKey;

    fn deref(&self) -> &TenantKey {
        &self.tenant
    }
}

/// The body of `POST /api/installs/{app}/activate`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActivateRequest {
    /// The scopes granted; omitted on a re-activation keeps the granted ones.
    #[serde(default)]
    pub granted_scopes: Option<Vec<String>>,
    /// Setting values by id; omitted ids keep their stored value (or get their default).
    #[serde(default)]
    pub settings: Map<String, Value>,
    /// Knowledge slot name to the name of one of the tenant's collections.
    #[serde(default)]
    pub rag_bindings: Map<String, Value>,
    /// `manual` (default on a first activation) or `auto`.
    #[serde(default)]
    pub upgrade_policy: Option<String>,
    /// A published version; default the app's current version (or, on a re-activation, the
    /// install's version).
    #[serde(default)]
    pub version: Option<String>,
}

/// What an activation did.
#[derive(Debug, Clone)]
pub struct Activated {
    /// The install.
    pub install: Install,
    /// Its first activation ever (`on_install` fires).
    pub first: bool,
    /// The template slugs cloned for the tenant by this or an earlier activation.
    pub templates: Vec<String>,
}

/// Settings as they will be stored: the plain values, and the secret ones sealed.
pub(super) struct CheckedSettings {
    pub(super) settings: Map<String, Value>,
    pub(super) sealed: Vec<(String, String)>,
}

fn outcome(outcome: &'static str, message: String, names: Vec<String>) -> RegistryError {
    RegistryError::Activation {
        outcome,
        message,
        names,
    }
}

impl Registry {
    /// Activates (or re-activates) `app` for a tenant; see the module docs. The visions and
    /// event wires then follow the version, as they do after every upgrade (`declared`).
    pub async fn activate(
        &self,
        tenant: &Actor,
        app_slug: &str,
        request: &ActivateRequest,
    ) -> Result<Activated> {
        let store = &self.inner.store;
        let app = store
            .app(app_slug)
            .await?
            .ok_or_else(|| RegistryError::NotFound(format!("there is no app `{app_slug}`")))?;
        let existing = store.install(&tenant.install(app_slug)).await?;
        let version = match (&request.version, &existing, &app.current_version) {
            (Some(v), _, _) => v.clone(),
            (None, Some(install), _) => install.version.clone(),
            (None, None, Some(current)) if app.status != atrium_store::AppStatus::Archived => {
                current.clone()
            }
            _ => {
                return Err(RegistryError::NotFound(format!(
                    "`{app_slug}` has no published version to install"
                )));
            }
        };
        let stored = store
            .version(app_slug, &version)
            .await?
            .filter(|v| v.promoted_at.is_some())
            .ok_or_else(|| {
                RegistryError::NotFound(format!(
                    "version {version} of `{app_slug}` is not published"
                ))
            })?;
        let manifest = atrium_manifest::parse(&stored.manifest_source)
            .map_err(|e| RegistryError::internal("a stored manifest no longer validates", &e))?;

        let policy = match (&request.upgrade_policy, &existing) {
            (Some(p), _) => UpgradePolicy::parse(p).ok_or_else(|| RegistryError::BadRequest {
                param: "upgrade_policy",
                message: format!("upgrade_policy must be `manual` or `auto`, got `{p}`"),
            })?,
            (None, Some(install)) => install.upgrade_policy,
            (None, None) => UpgradePolicy::Manual,
        };
        let granted = self.check_scopes(&manifest, request, existing.as_ref())?;
        let integrations = self.integrations(&tenant.tenant).await?;
        let missing_integrations: Vec<String> = manifest
            .required_integrations
            .iter()
            .filter(|p| !integrations.contains_key(p.as_str()))
            .cloned()
            .collect();
        if !missing_integrations.is_empty() {
            return Err(outcome(
                "missing_integrations",
                format!(
                    "`{app_slug}` needs integrations this tenant has not configured: {}; configure them with PUT /api/integrations/{{provider}}",
                    missing_integrations.join(", ")
                ),
                missing_integrations,
            ));
        }
        let sealed_keys = match &existing {
            Some(_) => {
                store
                    .install_secret_keys(&tenant.install(app_slug), InstallValueKind::Setting)
                    .await?
            }
            None => Vec::new(),
        };
        let CheckedSettings {
            settings,
            sealed: secrets,
        } = self.check_settings(
            tenant,
            app_slug,
            &manifest,
            request,
            existing.as_ref(),
            &sealed_keys,
            &integrations,
        )?;
        let bindings = self
            .check_bindings(tenant, app_slug, &manifest, request, existing.as_ref())
            .await?;
        let mut missing_apps = Vec::new();
        for dependency in &manifest.cross_app_dependencies {
            let installed = store.install(&tenant.install(&dependency.app_id)).await?;
            if !installed.is_some_and(|i| i.status == InstallStatus::Active) {
                missing_apps.push(dependency.app_id.clone());
            }
        }
        if !missing_apps.is_empty() {
            return Err(outcome(
                "missing_app_dependencies",
                format!(
                    "`{app_slug}` depends on apps this tenant has not installed and activated: {}",
                    missing_apps.join(", ")
                ),
                missing_apps,
            ));
        }

        let grants: Vec<NewGrant> = manifest
            .cross_app_dependencies
            .iter()
            .map(|d| NewGrant {
                caller_app: app_slug.to_owned(),
                callee_app: d.app_id.clone(),
                allowed_agents: vec!["__route__".to_owned()],
            })
            .collect();
        let templates = templates_of(stored.templates.as_deref())?;
        let key = tenant.install(app_slug);
        let declared = self.declared_rows(&key, &manifest);
        let (install, first) = store
            .activate(&Activation {
                install: &tenant.install(app_slug),
                version: &version,
                granted_scopes: &granted,
                settings: &settings,
                sealed_settings: &secrets,
                rag_bindings: &bindings,
                upgrade_policy: policy,
                activated_by: tenant.user_id.as_deref(),
                grants: &grants,
                templates: &templates,
                heartbeats: &declared.heartbeats,
            })
            .await?;
        self.follow_declarations(&install, &manifest).await?;
        Ok(Activated {
            install,
            first,
            templates: templates.into_iter().map(|t| t.slug).collect(),
        })
    }

    fn check_scopes(
        &self,
        manifest: &Manifest,
        request: &ActivateRequest,
        existing: Option<&Install>,
    ) -> Result<Vec<String>> {
        let granted: Vec<String> = match (&request.granted_scopes, existing) {
            (Some(scopes), _) => scopes.clone(),
            (None, Some(install)) => install.granted_scopes.clone(),
            (None, None) => Vec::new(),
        };
        let unrequested: Vec<&String> = granted
            .iter()
            .filter(|s| !manifest.required_scopes.contains(s))
            .collect();
        if !unrequested.is_empty() {
            return Err(RegistryError::BadRequest {
                param: "granted_scopes",
                message: format!(
                    "`{}` does not ask for {}; grant only its required_scopes",
                    manifest.app_id,
                    unrequested
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        let missing: Vec<String> = manifest
            .required_scopes
            .iter()
            .filter(|s| !granted.contains(s))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(outcome(
                "scopes_not_granted",
                format!(
                    "`{}` requires scopes that were not granted: {}",
                    manifest.app_id,
                    missing.join(", ")
                ),
                missing,
            ));
        }
        let mut granted = granted;
        granted.sort();
        granted.dedup();
        Ok(granted)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_settings(
        &self,
        tenant: &Actor,
        app_slug: &str,
        manifest: &Manifest,
        request: &ActivateRequest,
        existing: Option<&Install>,
        sealed_keys: &[String],
        integrations: &Map<String, Value>,
    ) -> Result<CheckedSettings> {
        let mut settings = Map::new();
        let mut secrets = Vec::new();
        let mut missing = Vec::new();
        // Everything at fault is named at once: settings the app does not declare, then the
        // declared ones whose values break their rules.
        let mut invalid: Vec<String> = request
            .settings
            .keys()
            .filter(|k| !manifest.install_settings.iter().any(|s| &s.id == *k))
            .map(|k| format!("{k}: `{app_slug}` declares no such setting"))
            .collect();
        for setting in &manifest.install_settings {
            let given = request
                .settings
                .get(&setting.id)
                .filter(|v| !v.is_null())
                .cloned();
            let value = given
                .or_else(|| {
                    existing
                        .and_then(|i| i.settings.get(&setting.id))
                        .filter(|_| setting.kind != SettingType::Secret)
                        .cloned()
                })
                .or_else(|| auto_default(setting, tenant, manifest, integrations))
                .or_else(|| {
                    setting
                        .default
                        .clone()
                        .filter(|_| setting.kind != SettingType::Secret)
                });
            let Some(value) = value else {
                let kept_secret =
                    setting.kind == SettingType::Secret && sealed_keys.contains(&setting.id);
                if setting.required && !kept_secret {
                    missing.push(setting.id.clone());
                }
                continue;
            };
            if let Err(rule) = check_value(setting, &value) {
                invalid.push(format!("{}: {rule}", setting.id));
                continue;
            }
            if setting.kind == SettingType::Secret {
                let text = value.as_str().unwrap_or_default();
                let install = tenant.install(app_slug);
                let sealed = self.inner.secrets.seal_text(
                    text,
                    Sealed::InstallSetting {
                        install: &install,
                        key: &setting.id,
                    },
                )?;
                secrets.push((setting.id.clone(), sealed));
            } else {
                settings.insert(setting.id.clone(), value);
            }
        }
        if !invalid.is_empty() {
            return Err(outcome(
                "invalid_settings",
                format!(
                    "settings of `{app_slug}` break their rules: {}",
                    invalid.join("; ")
                ),
                invalid,
            ));
        }
        if !missing.is_empty() {
            return Err(outcome(
                "missing_settings",
                format!(
                    "`{app_slug}` needs values for its required settings: {}",
                    missing.join(", ")
                ),
                missing,
            ));
        }
        Ok(CheckedSettings {
            settings,
            sealed: secrets,
        })
    }

    async fn check_bindings(
        &self,
        tenant: &Actor,
        app_slug: &str,
        manifest: &Manifest,
        request: &ActivateRequest,
        existing: Option<&Install>,
    ) -> Result<Map<String, Value>> {
        let mut bindings = existing.map(|i| i.rag_bindings.clone()).unwrap_or_default();
        let mut invalid = Vec::new();
        for (slot, collection) in &request.rag_bindings {
            if !manifest.rag_slots.iter().any(|s| &s.name == slot) {
                invalid.push(format!(
                    "{slot}: `{app_slug}` declares no such knowledge slot"
                ));
                continue;
            }
            match collection {
                Value::Null => {
                    bindings.remove(slot);
                }
                Value::String(name) => {
                    let found = self.inner.store.collection(&tenant.tenant, name).await?;
                    if found.is_some() {
                        bindings.insert(slot.clone(), Value::String(name.clone()));
                    } else {
                        invalid.push(format!("{slot}: the tenant has no collection `{name}`"));
                    }
                }
                other => invalid.push(format!(
                    "{slot}: a binding is a collection name, got {other}"
                )),
            }
        }
        if !invalid.is_empty() {
            return Err(outcome(
                "invalid_rag_bindings",
                format!(
                    "knowledge bindings of `{app_slug}` are invalid: {}",
                    invalid.join("; ")
                ),
                invalid,
            ));
        }
        let missing: Vec<String> = manifest
            .rag_slots
            .iter()
            .filter(|s| s.required && !bindings.contains_key(&s.name))
            .map(|s| s.name.clone())
            .collect();
        if !missing.is_empty() {
            return Err(outcome(
                "missing_rag_bindings",
                format!(
                    "`{app_slug}` needs its required knowledge slots bound: {}",
                    missing.join(", ")
                ),
                missing,
            ));
        }
        Ok(bindings)
    }

    /// Changes an install's settings (given ids only; the others keep their values) with the
    /// checks of activation; the next call sees them.
    pub async fn update_settings(
        &self,
        tenant: &Actor,
        app_slug: &str,
        settings: &Map<String, Value>,
    ) -> Result<Install> {
        let store = &self.inner.store;
        let install = self.tenant_install(tenant, app_slug).await?;
        let manifest = self.manifest_of(app_slug, &install.version).await?;
        let sealed_keys = store
            .install_secret_keys(&tenant.install(app_slug), InstallValueKind::Setting)
            .await?;
        let integrations = self.integrations(&tenant.tenant).await?;
        let request = ActivateRequest {
            settings: settings.clone(),
            ..ActivateRequest::default()
        };
        let checked = self.check_settings(
            tenant,
            app_slug,
            &manifest,
            &request,
            Some(&install),
            &sealed_keys,
            &integrations,
        )?;
        Ok(store
            .update_install_settings(
                &tenant.install(app_slug),
                &checked.settings,
                &checked.sealed,
            )
            .await?)
    }

    /// Sets the tenant's override of one of an app's secrets (it wins over the developer's
    /// default); `true` when it is new.
    pub async fn put_secret_override(
        &self,
        tenant: &Actor,
        app_slug: &str,
        key: &str,
        value: &str,
    ) -> Result<bool> {
        super::secrets::check_key(key)?;
        if value.len() > super::secrets::MAX_SECRET_BYTES {
            return Err(RegistryError::TooLarge {
                param: "value",
                message: format!(
                    "a secret value may be at most {} bytes",
                    super::secrets::MAX_SECRET_BYTES
                ),
            });
        }
        let store = &self.inner.store;
        self.tenant_install(tenant, app_slug).await?;
        let install = tenant.install(app_slug);
        let sealed = self.inner.secrets.seal_text(
            value,
            Sealed::SecretOverride {
                install: &install,
                key,
            },
        )?;
        Ok(store
            .put_install_value(
                &tenant.install(app_slug),
                InstallValueKind::Override,
                key,
                &sealed,
            )
            .await?)
    }

    /// Removes the tenant's override of a secret: the developer's default applies again.
    pub async fn delete_secret_override(
        &self,
        tenant: &Actor,
        app_slug: &str,
        key: &str,
    ) -> Result<()> {
        super::secrets::check_key(key)?;
        if self
            .inner
            .store
            .delete_install_value(&tenant.install(app_slug), InstallValueKind::Override, key)
            .await?
        {
            Ok(())
        } else {
            Err(RegistryError::NotFound(format!(
                "this tenant has no override of {key} for `{app_slug}`"
            )))
        }
    }

    /// The tenant's install of `app_slug`, or 404.
    pub async fn tenant_install(&self, tenant: &Actor, app_slug: &str) -> Result<Install> {
        self.inner
            .store
            .install(&tenant.install(app_slug))
            .await?
            .ok_or_else(|| {
                RegistryError::NotFound(format!("this tenant has no install of `{app_slug}`"))
            })
    }

    /// The validated manifest of a stored version.
    pub async fn manifest_of(&self, app_slug: &str, version: &str) -> Result<Manifest> {
        let stored = self
            .inner
            .store
            .version(app_slug, version)
            .await?
            .ok_or_else(|| {
                RegistryError::NotFound(format!(
                    "version {version} of `{app_slug}` is not registered"
                ))
            })?;
        self.parsed_manifest(app_slug, version, &stored.manifest_source)
            .map(|m| (*m).clone())
    }

    /// Deactivates an install.
    pub async fn deactivate(&self, tenant: &Actor, app_slug: &str) -> Result<Install> {
        Ok(self
            .inner
            .store
            .deactivate(&tenant.install(app_slug))
            .await?)
    }
}

/// The value the platform fills for an `auto_default` setting, when it can.
fn auto_default(
    setting: &InstallSetting,
    tenant: &Actor,
    manifest: &Manifest,
    integrations: &Map<String, Value>,
) -> Option<Value> {
    match setting.auto_default? {
        AutoDefault::ActivatorUserId => tenant.user_id.clone().map(Value::String),
        AutoDefault::MailPrimaryEmail => manifest
            .required_integrations
            .iter()
            .filter(|p| atrium_manifest::rules::is_mail_provider(p))
            .find_map(|p| {
                integrations
                    .get(p)?
                    .get("primary_email")?
                    .as_str()
                    .map(str::to_owned)
            })
            .map(Value::String),
    }
}

/// Checks a value against its setting's type, options and bounds.
fn check_value(setting: &InstallSetting, value: &Value) -> std::result::Result<(), String> {
    match setting.kind {
        SettingType::Number => {
            let n = value.as_f64().ok_or("must be a number")?;
            if setting.min.is_some_and(|min| n < min) || setting.max.is_some_and(|max| n > max) {
                return Err(format!(
                    "must be between {} and {}",
                    setting.min.map_or("-inf".into(), |m| m.to_string()),
                    setting.max.map_or("inf".into(), |m| m.to_string())
                ));
            }
        }
        SettingType::Boolean => {
            value.as_bool().ok_or("must be true or false")?;
        }
        SettingType::Select => {
            let s = value.as_str().ok_or("must be a string")?;
            if !setting.options.iter().any(|o| o == s) {
                return Err(format!("must be one of {}", setting.options.join(", ")));
            }
        }
        SettingType::String
        | SettingType::Text
        | SettingType::SelectOrCustom
        | SettingType::ProjectPicker => {
            value.as_str().ok_or("must be a string")?;
        }
        SettingType::Secret => {
            let s = value.as_str().ok_or("must be a string")?;
            if s.is_empty() {
                return Err("must not be empty".into());
            }
        }
    }
    Ok(())
}

/// The version's template defaults as templates to clone.
fn templates_of(stored: Option<&str>) -> Result<Vec<NewTemplate>> {
    let Some(text) = stored else {
        return Ok(Vec::new());
    };
    let templates: Vec<Value> = serde_json::from_str(text)
        .map_err(|e| RegistryError::internal("stored template defaults are not JSON", &e))?;
    Ok(templates
        .into_iter()
        .filter_map(|t| {
            let slug = t.get("slug")?.as_str()?.to_owned();
            Some(NewTemplate {
                slug,
                body: t.to_string(),
            })
        })
        .collect())
}

//! Installs: a tenant's activation of an app version, with the scopes it granted, its
//! settings, its knowledge bindings and its upgrade policy; the sealed values of an install;
//! cross-app grants; cloned document templates.
//!
//! An activation is written in one transaction: the install row, its sealed settings, the
//! grants of its cross-app dependencies (merged, never weakened) and the templates cloned once
//! per (tenant, slug). Every query names the organization and the tenant.

use jiff::Timestamp;
use serde_json::{Map, Value};
use sqlx::Row;

use crate::changes::Change;
use crate::{
    InstallKey, InstallValueKind, Result, Store, StoreError, TenantKey, millis, now_millis,
    on_pool, opt_millis,
};

/// Whether an install runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallStatus {
    /// Activated: the app is called.
    Active,
    /// Deactivated: kept with its settings for a later re-activation, never called.
    Inactive,
}

impl InstallStatus {
    /// The name used in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            InstallStatus::Active => "active",
            InstallStatus::Inactive => "inactive",
        }
    }
}

/// How an install follows newly promoted versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpgradePolicy {
    /// Stays on its version until the tenant upgrades.
    Manual,
    /// Moves to each newly promoted version, unless it adds scopes (then waits for consent).
    Auto,
}

impl UpgradePolicy {
    /// The name used in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            UpgradePolicy::Manual => "manual",
            UpgradePolicy::Auto => "auto",
        }
    }

    /// The policy called `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "manual" => Some(UpgradePolicy::Manual),
            "auto" => Some(UpgradePolicy::Auto),
            _ => None,
        }
    }
}

/// An install.
#[derive(Debug, Clone, PartialEq)]
pub struct Install {
    /// The organization.
    pub org_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The app.
    pub app_slug: String,
    /// The version it runs.
    pub version: String,
    /// Active or inactive.
    pub status: InstallStatus,
    /// The scopes the tenant granted.
    pub granted_scopes: Vec<String>,
    /// Non-secret settings by id.
    pub settings: Map<String, Value>,
    /// Knowledge slot name to the tenant's collection name.
    pub rag_bindings: Map<String, Value>,
    /// Manual or auto.
    pub upgrade_policy: UpgradePolicy,
    /// A promoted version an auto install waits on (it adds scopes).
    pub pending_version: Option<String>,
    /// The user who activated it last.
    pub activated_by: Option<String>,
    /// First activation.
    pub first_activated_at: Timestamp,
    /// Last activation.
    pub activated_at: Timestamp,
    /// Last deactivation, while inactive.
    pub deactivated_at: Option<Timestamp>,
    /// Last change.
    pub updated_at: Timestamp,
}

impl Install {
    /// The key of this install.
    #[must_use]
    pub fn key(&self) -> InstallKey {
        InstallKey::new(&self.org_id, &self.tenant_id, &self.app_slug)
    }

    /// The tenant that has this install.
    #[must_use]
    pub fn tenant(&self) -> TenantKey {
        TenantKey::new(&self.org_id, &self.tenant_id)
    }
}

/// A cross-app grant to create or widen at activation.
#[derive(Debug, Clone)]
pub struct NewGrant {
    /// The calling app (the one being activated).
    pub caller_app: String,
    /// The app it depends on.
    pub callee_app: String,
    /// Agents (or `__route__`) the grant admits; merged with what exists.
    pub allowed_agents: Vec<String>,
}

/// A template default to clone into the tenant's templates when the slug is free.
#[derive(Debug, Clone)]
pub struct NewTemplate {
    /// The template's slug.
    pub slug: String,
    /// Its JSON.
    pub body: String,
}

/// Everything an activation writes.
#[derive(Debug, Clone)]
pub struct Activation<'a> {
    /// The install.
    pub install: &'a InstallKey,
    /// The version.
    pub version: &'a str,
    /// Granted scopes.
    pub granted_scopes: &'a [String],
    /// Non-secret settings.
    pub settings: &'a Map<String, Value>,
    /// Secret settings, sealed: (id, sealed text).
    pub sealed_settings: &'a [(String, String)],
    /// Slot bindings.
    pub rag_bindings: &'a Map<String, Value>,
    /// Upgrade policy.
    pub upgrade_policy: UpgradePolicy,
    /// The activating user.
    pub activated_by: Option<&'a str>,
    /// Grants of the declared dependencies.
    pub grants: &'a [NewGrant],
    /// Template defaults to clone.
    pub templates: &'a [NewTemplate],
    /// The heartbeats the version's agents declare: their rows are created or kept, the
    /// others retired.
    pub heartbeats: &'a [crate::HeartbeatDecl],
}

pub(crate) const COLUMNS: &str = "org_id, tenant_id, app_slug, version, status, granted_scopes, settings, \
     rag_bindings, upgrade_policy, pending_version, activated_by, first_activated_at, \
     activated_at, deactivated_at, updated_at";

/// The tables whose rows belong to one install (keyed by `org_id`, `tenant_id`, `app_slug`),
/// the install's own row last: removing an install deletes from each. A test holds this list
/// to the schema, with [`OUTLIVE_THE_INSTALL`]: a table keyed by an install that is in
/// neither fails it.
pub(crate) const INSTALL_TABLES: [&str; 11] = [
    "install_secrets",
    "heartbeat_runs",
    "heartbeats",
    "agent_memory",
    "vision_phases",
    "visions",
    "app_records",
    "install_agents",
    "install_workflows",
    "commitments",
    "installs",
];

/// The tables keyed by an install's columns whose rows outlive the install, and why (read by
/// the test that holds [`INSTALL_TABLES`] to the schema).
#[cfg(test)]
pub(crate) const OUTLIVE_THE_INSTALL: [(&str, &str); 5] = [
    (
        "conversations",
        "a conversation is its user's history; it names the agent it was with last",
    ),
    (
        "conversation_messages",
        "what an app's agent answered stays in its user's history after the app is removed",
    ),
    (
        "usage_records",
        "usage is billed to the tenant whatever becomes of the install",
    ),
    (
        "schedule_runs",
        "the claims of past schedule runs, so that a minute never runs twice",
    ),
    (
        "tenant_templates",
        "a template cloned from the app is the tenant's own document from then on",
    ),
];

pub(crate) fn json_list(text: &str) -> Result<Vec<String>> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Corrupt(format!("a stored list is not JSON: {e}")))
}

pub(crate) fn json_object(text: &str) -> Result<Map<String, Value>> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Corrupt(format!("a stored object is not JSON: {e}")))
}

pub(crate) fn install_from<R: Row>(row: &R) -> Result<Install>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let status: String = row.try_get("status")?;
    let policy: String = row.try_get("upgrade_policy")?;
    let scopes: String = row.try_get("granted_scopes")?;
    let settings: String = row.try_get("settings")?;
    let bindings: String = row.try_get("rag_bindings")?;
    Ok(Install {
        org_id: row.try_get("org_id")?,
        tenant_id: row.try_get("tenant_id")?,
        app_slug: row.try_get("app_slug")?,
        version: row.try_get("version")?,
        status: if status == "active" {
            InstallStatus::Active
        } else {
            InstallStatus::Inactive
        },
        granted_scopes: json_list(&scopes)?,
        settings: json_object(&settings)?,
        rag_bindings: json_object(&bindings)?,
        upgrade_policy: UpgradePolicy::parse(&policy).unwrap_or(UpgradePolicy::Manual),
        pending_version: row.try_get("pending_version")?,
        activated_by: row.try_get("activated_by")?,
        first_activated_at: millis(row.try_get("first_activated_at")?)?,
        activated_at: millis(row.try_get("activated_at")?)?,
        deactivated_at: opt_millis(row.try_get("deactivated_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
    })
}

pub(crate) fn to_json(value: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(value)
        .map_err(|e| StoreError::Internal(format!("cannot encode a value as JSON: {e}")))
}

impl Store {
    /// Writes an activation (see the module docs). Returns the install and whether this was
    /// its first activation ever (`on_install` fires then only).
    pub async fn activate(&self, a: &Activation<'_>) -> Result<(Install, bool)> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = a.install;
        crate::check_tenant_id(tenant_id)?;
        self.ensure_tenant(&a.install.tenant()).await?;
        let now = now_millis();
        let scopes = to_json(&a.granted_scopes)?;
        let settings = to_json(a.settings)?;
        let bindings = to_json(a.rag_bindings)?;
        let changed = Change::install(a.install);
        let first = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let existed = sqlx::query(
                "SELECT 1 FROM installs WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3",
            )
            .bind(org_id).bind(tenant_id).bind(app_slug)
            .fetch_optional(&mut *tx).await?.is_some();
            sqlx::query(&format!(
                "INSERT INTO installs ({COLUMNS}) VALUES \
                 ($1, $2, $3, $4, 'active', $5, $6, $7, $8, NULL, $9, $10, $10, NULL, $10) \
                 ON CONFLICT (org_id, tenant_id, app_slug) DO UPDATE SET \
                   version = excluded.version, status = 'active', granted_scopes = excluded.granted_scopes, \
                   settings = excluded.settings, rag_bindings = excluded.rag_bindings, \
                   upgrade_policy = excluded.upgrade_policy, pending_version = NULL, \
                   activated_by = excluded.activated_by, activated_at = excluded.activated_at, \
                   deactivated_at = NULL, updated_at = excluded.updated_at"
            ))
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(a.version)
            .bind(&scopes).bind(&settings).bind(&bindings).bind(a.upgrade_policy.as_str())
            .bind(a.activated_by).bind(now)
            .execute(&mut *tx).await?;
            for (key, sealed) in a.sealed_settings {
                sqlx::query(
                    "INSERT INTO install_secrets (org_id, tenant_id, app_slug, kind, key, sealed, created_at, updated_at) \
                     VALUES ($1, $2, $3, 'setting', $4, $5, $6, $6) \
                     ON CONFLICT (org_id, tenant_id, app_slug, kind, key) DO UPDATE SET \
                       sealed = excluded.sealed, updated_at = excluded.updated_at",
                )
                .bind(org_id).bind(tenant_id).bind(app_slug).bind(key).bind(sealed).bind(now)
                .execute(&mut *tx).await?;
            }
            for grant in a.grants {
                let row = sqlx::query(
                    "SELECT allowed_agents FROM grants WHERE org_id = $1 AND tenant_id = $2 AND caller_app = $3 AND callee_app = $4",
                )
                .bind(org_id).bind(tenant_id).bind(&grant.caller_app).bind(&grant.callee_app)
                .fetch_optional(&mut *tx).await?;
                let mut agents = match &row {
                    Some(row) => json_list(&row.try_get::<String, _>("allowed_agents")?)?,
                    None => Vec::new(),
                };
                for agent in &grant.allowed_agents {
                    if !agents.contains(agent) {
                        agents.push(agent.clone());
                    }
                }
                let agents = to_json(&agents)?;
                // Approvals are topped up, never weakened: a revoked grant is restored only by
                // a declared dependency, which is what activating this app asks for.
                sqlx::query(
                    "INSERT INTO grants (org_id, tenant_id, caller_app, callee_app, allowed_agents, \
                       caller_approved_at, callee_approved_at, revoked_at, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $6, NULL, $6, $6) \
                     ON CONFLICT (org_id, tenant_id, caller_app, callee_app) DO UPDATE SET \
                       allowed_agents = excluded.allowed_agents, \
                       caller_approved_at = COALESCE(grants.caller_approved_at, excluded.caller_approved_at), \
                       callee_approved_at = COALESCE(grants.callee_approved_at, excluded.callee_approved_at), \
                       revoked_at = NULL, updated_at = excluded.updated_at",
                )
                .bind(org_id).bind(tenant_id).bind(&grant.caller_app).bind(&grant.callee_app)
                .bind(&agents).bind(now)
                .execute(&mut *tx).await?;
            }
            for template in a.templates {
                sqlx::query(
                    "INSERT INTO tenant_templates (org_id, tenant_id, slug, app_slug, body, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (org_id, tenant_id, slug) DO NOTHING",
                )
                .bind(org_id).bind(tenant_id).bind(&template.slug).bind(app_slug)
                .bind(&template.body).bind(now)
                .execute(&mut *tx).await?;
            }
            crate::heartbeats::sync_heartbeats!(tx, a.install, a.heartbeats, now);
            crate::changes::record_changes!(tx, std::slice::from_ref(&changed));
            tx.commit().await?;
            !existed
        });
        self.changed(&[changed]);
        let install = self
            .install(a.install)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("the install of {} vanished", app_slug)))?;
        Ok((install, first))
    }

    /// Deactivates an install; its settings are kept for a later activation.
    pub async fn deactivate(&self, install: &InstallKey) -> Result<Install> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let now = now_millis();
        let change = Change::install(install);
        let changed = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let changed = sqlx::query(
                "UPDATE installs SET status = 'inactive', deactivated_at = $1, updated_at = $1 \
                 WHERE org_id = $2 AND tenant_id = $3 AND app_slug = $4 AND status = 'active'",
            )
            .bind(now).bind(org_id).bind(tenant_id).bind(app_slug)
            .execute(&mut *tx).await?.rows_affected();
            if changed > 0 {
                crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            }
            tx.commit().await?;
            changed
        });
        self.changed(&[change]);
        if changed == 0 {
            return Err(StoreError::NotFound(format!(
                "`{app_slug}` is not active for this tenant"
            )));
        }
        self.install(install)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("the install of {app_slug} vanished")))
    }

    /// The install of an app by a tenant.
    pub async fn install(&self, install: &InstallKey) -> Result<Option<Install>> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        on_pool!(self, pool => {
            let row = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM installs WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3"
            ))
            .bind(org_id).bind(tenant_id).bind(app_slug)
            .fetch_optional(pool).await?;
            row.as_ref().map(install_from).transpose()
        })
    }

    /// The keys of an install's sealed values of one kind (`setting` or `override`).
    pub async fn install_secret_keys(
        &self,
        install: &InstallKey,
        kind: InstallValueKind,
    ) -> Result<Vec<String>> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "SELECT key FROM install_secrets WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND kind = $4 ORDER BY key",
            )
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(kind.as_str())
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| row.try_get("key"))
            .collect::<Result<_, sqlx::Error>>()?)
        })
    }

    /// The keys of the sealed values of one kind of every install of a tenant, as (app, key),
    /// in one read.
    pub async fn tenant_install_secret_keys(
        &self,
        tenant: &TenantKey,
        kind: InstallValueKind,
    ) -> Result<Vec<(String, String)>> {
        on_pool!(self, pool => {
            sqlx::query(
                "SELECT app_slug, key FROM install_secrets WHERE org_id = $1 AND tenant_id = $2 AND kind = $3 ORDER BY app_slug, key",
            )
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(kind.as_str())
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| Ok((row.try_get("app_slug")?, row.try_get("key")?)))
            .collect()
        })
    }

    /// Every sealed value of kind `kind` of an install, by key.
    pub async fn sealed_install_values(
        &self,
        install: &InstallKey,
        kind: InstallValueKind,
    ) -> Result<Vec<(String, String)>> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "SELECT key, sealed FROM install_secrets WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND kind = $4 ORDER BY key",
            )
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(kind.as_str())
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| Ok((row.try_get("key")?, row.try_get("sealed")?)))
            .collect::<Result<_, sqlx::Error>>()?)
        })
    }

    /// One sealed value of an install (`setting` or `override`).
    pub async fn sealed_install_value(
        &self,
        install: &InstallKey,
        kind: InstallValueKind,
        key: &str,
    ) -> Result<Option<String>> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        on_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT sealed FROM install_secrets WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND kind = $4 AND key = $5",
            )
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(kind.as_str()).bind(key)
            .fetch_optional(pool).await?;
            Ok(row.map(|r| r.try_get("sealed")).transpose()?)
        })
    }

    /// Replaces an install's settings: the plain values, and the sealed ones given (others
    /// kept).
    pub async fn update_install_settings(
        &self,
        install: &InstallKey,
        settings: &Map<String, Value>,
        sealed: &[(String, String)],
    ) -> Result<Install> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let now = now_millis();
        let text = to_json(settings)?;
        let change = Change::install(install);
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let changed = sqlx::query(
                "UPDATE installs SET settings = $1, updated_at = $2 WHERE org_id = $3 AND tenant_id = $4 AND app_slug = $5",
            )
            .bind(&text).bind(now).bind(org_id).bind(tenant_id).bind(app_slug)
            .execute(&mut *tx).await?.rows_affected();
            if changed == 0 {
                return Err(StoreError::NotFound(format!("this tenant has no install of `{app_slug}`")));
            }
            for (key, value) in sealed {
                sqlx::query(
                    "INSERT INTO install_secrets (org_id, tenant_id, app_slug, kind, key, sealed, created_at, updated_at) \
                     VALUES ($1, $2, $3, 'setting', $4, $5, $6, $6) \
                     ON CONFLICT (org_id, tenant_id, app_slug, kind, key) DO UPDATE SET \
                       sealed = excluded.sealed, updated_at = excluded.updated_at",
                )
                .bind(org_id).bind(tenant_id).bind(app_slug).bind(key).bind(value).bind(now)
                .execute(&mut *tx).await?;
            }
            crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            tx.commit().await?;
        });
        self.changed(&[change]);
        self.install(install)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("the install of {app_slug} vanished")))
    }

    /// Sets one sealed value of an install (`override` for a tenant's secret override);
    /// `true` when it is new.
    pub async fn put_install_value(
        &self,
        install: &InstallKey,
        kind: InstallValueKind,
        key: &str,
        sealed: &str,
    ) -> Result<bool> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let now = now_millis();
        let change = Change::install(install);
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let existed = sqlx::query(
                "SELECT 1 FROM install_secrets WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND kind = $4 AND key = $5",
            )
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(kind.as_str()).bind(key)
            .fetch_optional(&mut *tx).await?.is_some();
            sqlx::query(
                "INSERT INTO install_secrets (org_id, tenant_id, app_slug, kind, key, sealed, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
                 ON CONFLICT (org_id, tenant_id, app_slug, kind, key) DO UPDATE SET \
                   sealed = excluded.sealed, updated_at = excluded.updated_at",
            )
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(kind.as_str()).bind(key).bind(sealed).bind(now)
            .execute(&mut *tx).await?;
            crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            tx.commit().await?;
            self.changed(&[change]);
            Ok(!existed)
        })
    }

    /// Deletes one sealed value of an install; `false` when there was none.
    pub async fn delete_install_value(
        &self,
        install: &InstallKey,
        kind: InstallValueKind,
        key: &str,
    ) -> Result<bool> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let change = Change::install(install);
        let deleted = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let deleted = sqlx::query(
                "DELETE FROM install_secrets WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND kind = $4 AND key = $5",
            )
            .bind(org_id).bind(tenant_id).bind(app_slug).bind(kind.as_str()).bind(key)
            .execute(&mut *tx).await?.rows_affected() == 1;
            if deleted {
                crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            }
            tx.commit().await?;
            deleted
        });
        if deleted {
            self.changed(&[change]);
        }
        Ok(deleted)
    }

    /// Removes an install with everything it owns ([`INSTALL_TABLES`]): what a first
    /// activation whose `on_install` failed leaves behind is nothing.
    pub async fn remove_install(&self, install: &InstallKey) -> Result<()> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let change = Change::install(install);
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            for table in INSTALL_TABLES {
                sqlx::query(&format!("DELETE FROM {table} WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3"))
                    .bind(org_id).bind(tenant_id).bind(app_slug)
                    .execute(&mut *tx).await?;
            }
            crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            tx.commit().await?;
        });
        self.changed(&[change]);
        Ok(())
    }

    /// Every install of an app, across tenants and organizations: for the platform's own
    /// upgrade work, never answered to a tenant.
    pub async fn installs_of_app(&self, app_slug: &str) -> Result<Vec<Install>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM installs WHERE app_slug = $1 ORDER BY org_id, tenant_id"
            ))
            .bind(app_slug)
            .fetch_all(pool).await?;
            rows.iter().map(install_from).collect()
        })
    }

    /// Moves an install to `version` with `granted_scopes` (the scopes it asks for) and its
    /// non-secret `settings` as checked against that version (new settings at their defaults),
    /// and clears its pending version; the heartbeat rows follow `heartbeats`, the version's
    /// (created, kept or retired).
    pub async fn upgrade_install(
        &self,
        install: &InstallKey,
        version: &str,
        granted_scopes: &[String],
        settings: &Map<String, Value>,
        heartbeats: &[crate::HeartbeatDecl],
    ) -> Result<()> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let now = now_millis();
        let scopes = to_json(&granted_scopes)?;
        let settings = to_json(settings)?;
        let change = Change::install(install);
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            sqlx::query(
                "UPDATE installs SET version = $1, granted_scopes = $2, settings = $3, pending_version = NULL, updated_at = $4 \
                 WHERE org_id = $5 AND tenant_id = $6 AND app_slug = $7",
            )
            .bind(version).bind(&scopes).bind(&settings).bind(now).bind(org_id).bind(tenant_id).bind(app_slug)
            .execute(&mut *tx).await?;
            crate::heartbeats::sync_heartbeats!(tx, install, heartbeats, now);
            crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            tx.commit().await?;
        });
        self.changed(&[change]);
        Ok(())
    }

    /// Marks a newer version as waiting for the tenant's consent.
    pub async fn set_pending_version(&self, install: &InstallKey, version: &str) -> Result<()> {
        let InstallKey {
            org_id,
            tenant_id,
            app_slug,
        } = install;
        let now = now_millis();
        let change = Change::install(install);
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            sqlx::query(
                "UPDATE installs SET pending_version = $1, updated_at = $2 WHERE org_id = $3 AND tenant_id = $4 AND app_slug = $5",
            )
            .bind(version).bind(now).bind(org_id).bind(tenant_id).bind(app_slug)
            .execute(&mut *tx).await?;
            crate::changes::record_changes!(tx, std::slice::from_ref(&change));
            tx.commit().await?;
        });
        self.changed(&[change]);
        Ok(())
    }

    /// A page of a tenant's installs, by app: at most `limit`, after app `after`.
    pub async fn installs_page(
        &self,
        tenant: &TenantKey,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<Install>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM installs WHERE org_id = $1 AND tenant_id = $2 AND app_slug > $3 ORDER BY app_slug LIMIT $4"
            ))
            .bind(&tenant.org_id).bind(&tenant.tenant_id).bind(after.unwrap_or("")).bind(limit)
            .fetch_all(pool).await?;
            rows.iter().map(install_from).collect()
        })
    }

    /// A tenant's installs, by app.
    pub async fn installs(&self, tenant: &TenantKey) -> Result<Vec<Install>> {
        self.installs_page(tenant, None, i64::MAX).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_table_keyed_by_an_install_is_removed_with_it_or_said_to_outlive_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(dir.path()).await.unwrap();
        let crate::Pool::Sqlite(pool) = &store.pool else {
            panic!("a SQLite store");
        };
        let keyed: Vec<String> = sqlx::query_scalar(
            "SELECT m.name FROM sqlite_master m WHERE m.type = 'table' \
             AND (SELECT COUNT(*) FROM pragma_table_info(m.name) p \
                  WHERE p.name IN ('org_id', 'tenant_id', 'app_slug')) = 3 \
             ORDER BY m.name",
        )
        .fetch_all(pool)
        .await
        .unwrap();
        assert!(keyed.contains(&"installs".to_owned()), "{keyed:?}");
        for table in &keyed {
            assert!(
                INSTALL_TABLES.contains(&table.as_str())
                    || OUTLIVE_THE_INSTALL.iter().any(|(t, _)| t == table),
                "table `{table}` is keyed by an install: add it to INSTALL_TABLES (removed with \
                 the install) or to OUTLIVE_THE_INSTALL with the reason"
            );
        }
        for table in INSTALL_TABLES
            .iter()
            .chain(OUTLIVE_THE_INSTALL.iter().map(|(t, _)| t))
        {
            assert!(
                keyed.iter().any(|k| k == table),
                "`{table}` is not in the schema"
            );
        }
    }
}

//! The bodies the developer API answers and takes: typed structs, so the shape is written once
//! (the host serializes them, `atrium`'s developer commands read them) and an OpenAPI document
//! can be generated from them.

use atrium_manifest::project::Finding;
use atrium_store::{App, AppVersion, Developer, SecretMeta, VersionFile};
use serde::{Deserialize, Serialize};

/// A time as RFC 3339 (UTC, whole seconds).
pub fn time(at: jiff::Timestamp) -> String {
    at.round(jiff::Unit::Second).unwrap_or(at).to_string()
}

fn opt_time(at: Option<jiff::Timestamp>) -> Option<String> {
    at.map(time)
}

/// `GET /api/dev/me`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Me {
    /// `dev_...`.
    pub id: String,
    /// The email address.
    pub email: String,
    /// The login name.
    pub login: String,
    /// Whether the developer may promote versions.
    pub publish_allowed: bool,
    /// The dev tenant, if any.
    pub tenant: Option<TenantContext>,
    /// Account creation.
    pub created_at: String,
}

/// `GET /api/dev/login`: where developers sign in for a token the host accepts.
#[derive(Debug, Serialize, Deserialize)]
pub struct LoginProvider {
    /// The OpenID Connect issuer (its discovery document is under
    /// `/.well-known/openid-configuration`).
    pub issuer: String,
    /// The client id to sign in with: the audience the host expects of ID tokens.
    pub client_id: String,
}

/// The organization and tenant a developer tries apps in.
#[derive(Debug, Serialize, Deserialize)]
pub struct TenantContext {
    /// The organization's id.
    pub organization: String,
    /// The tenant's id.
    pub tenant: String,
}

impl From<&Developer> for Me {
    fn from(d: &Developer) -> Self {
        Me {
            id: d.id.clone(),
            email: d.email.clone(),
            login: d.login.clone(),
            publish_allowed: d.publish_allowed,
            tenant: d.dev_tenant.as_ref().map(|(org, tenant)| TenantContext {
                organization: org.clone(),
                tenant: tenant.clone(),
            }),
            created_at: time(d.created_at),
        }
    }
}

/// An app.
#[derive(Debug, Serialize, Deserialize)]
pub struct AppView {
    /// The app_id.
    pub slug: String,
    /// Display name of the latest registered version.
    pub name: String,
    /// `draft`, `active` or `archived`.
    pub status: String,
    /// The version new installs get.
    pub current_version: Option<String>,
    /// Creation.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// When archived.
    pub archived_at: Option<String>,
}

impl From<&App> for AppView {
    fn from(a: &App) -> Self {
        AppView {
            slug: a.slug.clone(),
            name: a.name.clone(),
            status: a.status.as_str().to_owned(),
            current_version: a.current_version.clone(),
            created_at: time(a.created_at),
            updated_at: time(a.updated_at),
            archived_at: opt_time(a.archived_at),
        }
    }
}

/// A file a version refers to.
#[derive(Debug, Serialize, Deserialize)]
pub struct FileView {
    /// Relative path.
    pub path: String,
    /// `sha256:...`.
    pub digest: String,
    /// Bytes.
    pub size: i64,
}

impl From<&VersionFile> for FileView {
    fn from(f: &VersionFile) -> Self {
        FileView {
            path: f.path.clone(),
            digest: f.digest.clone(),
            size: f.size,
        }
    }
}

/// A version.
#[derive(Debug, Serialize, Deserialize)]
pub struct VersionView {
    /// The semantic version.
    pub version: String,
    /// `registered` or `published`.
    pub status: String,
    /// Whether it is the app's current version.
    pub current: bool,
    /// `success` (a failed build is refused, never stored).
    pub build_result: String,
    /// `component` or `image`.
    pub kind: String,
    /// The manifest's `runtime.image`; for a container app registered on a host that runs
    /// containers, pinned to the digest its tag named then (`registry/repository@sha256:...`).
    pub image: String,
    /// The component's digest, for a component app.
    pub component_digest: Option<String>,
    /// The component's size.
    pub component_size: Option<i64>,
    /// The manifest's digest.
    pub manifest_digest: String,
    /// The digest over everything registered.
    pub content_digest: String,
    /// The frontend bundle's digest, once uploaded.
    pub bundle_digest: Option<String>,
    /// How many template defaults the version has.
    pub templates: usize,
    /// Registration time.
    pub created_at: String,
    /// First promotion.
    pub promoted_at: Option<String>,
}

impl VersionView {
    /// The view of `v`, current when `current` names it.
    pub fn new(v: &AppVersion, current: Option<&str>) -> Self {
        let templates = v
            .templates
            .as_deref()
            .and_then(|t| serde_json::from_str::<Vec<serde_json::Value>>(t).ok())
            .map_or(0, |t| t.len());
        VersionView {
            version: v.version.clone(),
            status: v.status.as_str().to_owned(),
            current: current == Some(v.version.as_str()),
            build_result: v.build_result.clone(),
            kind: if v.component_digest.is_some() {
                "component"
            } else {
                "image"
            }
            .to_owned(),
            image: v.image.clone(),
            component_digest: v.component_digest.clone(),
            component_size: v.component_size,
            manifest_digest: v.manifest_digest.clone(),
            content_digest: v.content_digest.clone(),
            bundle_digest: v.bundle_digest.clone(),
            templates,
            created_at: time(v.created_at),
            promoted_at: opt_time(v.promoted_at),
        }
    }
}

/// A developer's apps, whole (what the developer tool prints, having read every page of
/// `GET /api/dev/apps`).
#[derive(Debug, Serialize, Deserialize)]
pub struct AppList {
    /// The developer's apps, by slug.
    pub apps: Vec<AppView>,
}

/// `GET /api/dev/apps` answers a page of these, by slug.
impl crate::page::Listed for AppView {
    const KEY: &'static str = "apps";
}

impl crate::page::SortedBy for AppView {
    fn sort_key(&self) -> String {
        self.slug.clone()
    }
}

/// `GET /api/dev/apps/{slug}/versions` answers a page of these, newest first.
impl crate::page::Listed for VersionView {
    const KEY: &'static str = "versions";
}

/// `GET /api/dev/apps/{slug}`.
#[derive(Debug, Serialize, Deserialize)]
pub struct AppDetailView {
    /// The app.
    #[serde(flatten)]
    pub app: AppView,
    /// Its newest versions (the first page of `GET /api/dev/apps/{slug}/versions`), newest
    /// first.
    pub versions: Vec<VersionView>,
    /// The cursor of the next page of versions, null when `versions` holds them all.
    pub versions_next_cursor: Option<String>,
    /// The tools of the current version (none without one), as its manifest declares them.
    #[serde(default)]
    pub tools: Vec<atrium_manifest::Tool>,
}

/// `POST /api/dev/apps/{slug}/tools/{name}`: the tool's answer, and the version that gave it.
#[derive(Debug, Serialize, Deserialize)]
pub struct DevToolResult {
    /// What the tool answered.
    pub result: serde_json::Value,
    /// The version of the dev tenant's install, which answered.
    pub version: String,
    /// The app's current version: another one than `version` when the dev tenant's install
    /// could not follow the promotion (a setting without a default, say).
    pub current_version: Option<String>,
}

/// `GET` and `PATCH /api/dev/apps/{slug}/settings`: the developer's dev tenant's install of
/// their app, with its settings.
#[derive(Debug, Serialize, Deserialize)]
pub struct DevSettingsView {
    /// The dev tenant's organization.
    pub organization: String,
    /// The dev tenant.
    pub tenant: String,
    /// The app.
    pub app: String,
    /// The app's current version: the one a promotion puts into the dev tenant, and the one
    /// `install_settings` are of (else the install's).
    pub current_version: Option<String>,
    /// The version the install runs; null while the dev tenant has no install.
    pub version: Option<String>,
    /// `active` or `inactive`; null without an install.
    pub status: Option<String>,
    /// The settings the version declares: id, type, label, required, default, ...
    pub install_settings: Vec<atrium_manifest::InstallSetting>,
    /// The install's non-secret values by id.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// Ids of the secret settings that have a value (values are never answered).
    pub secret_settings: Vec<String>,
    /// The settings the version needs a value for before the install can run it.
    pub missing_settings: Vec<String>,
    /// What the change did (`PATCH` only): `updated`, `installed`, `upgraded` or `activated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
}

impl DevSettingsView {
    /// The view of `dev`, the install of `app` in the dev tenant `tenant`.
    pub fn new(
        tenant: &atrium_store::TenantKey,
        app: &App,
        dev: atrium_platform::registry::DevSettings,
    ) -> Self {
        let install = dev.install;
        DevSettingsView {
            organization: tenant.org_id.clone(),
            tenant: tenant.tenant_id.clone(),
            app: app.slug.clone(),
            current_version: app.current_version.clone(),
            version: install.as_ref().map(|i| i.version.clone()),
            status: install.as_ref().map(|i| i.status.as_str().to_owned()),
            install_settings: dev.install_settings,
            settings: install.map(|i| i.settings).unwrap_or_default(),
            secret_settings: dev.secret_settings,
            missing_settings: dev.missing_settings,
            outcome: dev.outcome.map(str::to_owned),
        }
    }
}

/// `POST /api/dev/apps/{slug}/versions`.
#[derive(Debug, Serialize, Deserialize)]
pub struct RegistrationView {
    /// The app after registration.
    pub app: AppView,
    /// The version.
    pub version: VersionView,
    /// The docs files stored with it.
    pub docs: Vec<FileView>,
    /// `false` when the same version with the same content was already registered.
    pub created: bool,
    /// Warnings of the checks.
    pub warnings: Vec<Finding>,
}

/// Answers that carry the app after a state change (promote, archive).
#[derive(Debug, Serialize, Deserialize)]
pub struct AppChanged {
    /// The app.
    pub app: AppView,
}

/// `POST .../versions/{v}/promote`: the app, and what the promotion moved.
#[derive(Debug, Serialize, Deserialize)]
pub struct PromotedView {
    /// The app.
    pub app: AppView,
    /// The auto-upgrading installs: moved, or waiting for consent or settings.
    #[serde(default)]
    pub installs: Vec<atrium_platform::registry::UpgradeOutcome>,
    /// The developer's dev tenant's install of the version (none without a dev tenant).
    #[serde(default)]
    pub dev_install: Option<atrium_platform::registry::DevInstall>,
}

/// `POST .../defaults/templates`.
#[derive(Debug, Serialize, Deserialize)]
pub struct TemplatesSet {
    /// The version.
    pub version: String,
    /// How many templates it has.
    pub templates: usize,
    /// Their digest.
    pub templates_digest: Option<String>,
    /// `false` when the same templates were already set.
    pub created: bool,
}

/// `PUT .../bundle`.
#[derive(Debug, Serialize, Deserialize)]
pub struct BundleSet {
    /// The version.
    pub version: String,
    /// The digest of the bundle's file list.
    pub bundle_digest: String,
    /// How many files.
    pub files: usize,
    /// Bytes in all.
    pub bytes: i64,
    /// `false` when the same bundle was already set.
    pub created: bool,
}

/// `POST /api/dev/preflight`.
#[derive(Debug, Serialize, Deserialize)]
pub struct PreflightView {
    /// No error-severity problem.
    pub passed: bool,
    /// How many errors.
    pub errors: usize,
    /// How many warnings.
    pub warnings: usize,
    /// Every problem, in `atrium lint --json`'s shape.
    pub problems: Vec<Finding>,
}

/// `PUT /api/dev/apps/{slug}/secrets/{KEY}`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutSecret {
    /// The value, stored sealed.
    pub value: String,
    /// What it is for; omitted keeps the stored description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `POST /api/dev/apps/{slug}/upgrade`.
#[derive(Debug, Serialize, Deserialize)]
pub struct UpgradeRun {
    /// What happened to each install.
    pub installs: Vec<atrium_platform::registry::UpgradeOutcome>,
}

/// A secret's metadata (never its value).
#[derive(Debug, Serialize, Deserialize)]
pub struct SecretView {
    /// The key.
    pub key: String,
    /// What it is for.
    pub description: Option<String>,
    /// Creation.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl From<&SecretMeta> for SecretView {
    fn from(s: &SecretMeta) -> Self {
        SecretView {
            key: s.key.clone(),
            description: s.description.clone(),
            created_at: time(s.created_at),
            updated_at: time(s.updated_at),
        }
    }
}

/// `GET .../secrets`.
#[derive(Debug, Serialize, Deserialize)]
pub struct SecretList {
    /// By key.
    pub secrets: Vec<SecretView>,
}

/// `GET /api/scopes`.
#[derive(Debug, Serialize)]
pub struct ScopeList {
    /// The catalogue, by name.
    pub scopes: &'static [atrium_platform::scopes::Scope],
}

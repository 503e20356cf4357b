//! The tenant side of the platform: the catalogue of installable apps, activation and
//! deactivation, the tenant's installs and its integrations. Tenant admins change installs;
//! tenant users (and admins) read them. Every query carries the caller's organization and
//! tenant, taken from the token, never from the request.

use crate::routing::{Routes, get, post, put};
use atrium_manifest::{CrossAppDependency, InstallSetting, Manifest, RagSlot};
use atrium_platform::registry::ActivateRequest;
use atrium_platform::scopes;
use atrium_store::Install;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::registry;
use super::views::time;
use crate::extract::JsonArguments;
use crate::page::{Page, PageRequest};
use crate::principals::{TenantAdmin, TenantUser, actor};
use crate::{ApiError, HostState, JsonBody, OptionalJsonBody};

/// A scope as disclosed on the install page.
#[derive(Debug, Serialize)]
pub struct ScopeDisclosure {
    /// The scope.
    pub name: String,
    /// What it grants.
    pub description: &'static str,
    /// `low`, `medium` or `high`.
    pub risk: scopes::Risk,
}

/// An app of the catalogue with everything its install page must disclose.
#[derive(Debug, Serialize)]
pub struct CatalogueApp {
    /// The app_id.
    pub slug: String,
    /// Display name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Category.
    pub category: Option<String>,
    /// Icon.
    pub icon: Option<String>,
    /// The version an install gets.
    pub version: String,
    /// Hosts the app reaches.
    pub egress_hosts: Vec<String>,
    /// Scopes to grant, with what each allows.
    pub required_scopes: Vec<ScopeDisclosure>,
    /// Integrations the tenant must have configured.
    pub required_integrations: Vec<String>,
    /// Apps it calls, with the routes and the reason.
    pub cross_app_dependencies: Vec<CrossAppDependency>,
    /// Knowledge slots to bind.
    pub rag_slots: Vec<RagSlot>,
    /// Settings to fill (`auto_default` ones are filled by the platform).
    pub install_settings: Vec<InstallSetting>,
    /// This tenant's install of it, if any: `active` or `inactive`.
    pub installed: Option<&'static str>,
}

fn disclose(manifest: &Manifest, version: String, installed: Option<&'static str>) -> CatalogueApp {
    CatalogueApp {
        slug: manifest.app_id.clone(),
        name: manifest.name.clone(),
        description: manifest.description.clone(),
        category: manifest.category.clone(),
        icon: manifest.icon.clone(),
        version,
        egress_hosts: manifest.network.egress_hosts.clone(),
        required_scopes: manifest
            .required_scopes
            .iter()
            .map(|name| {
                let known = scopes::find(name);
                ScopeDisclosure {
                    name: name.clone(),
                    description: known.map_or("", |s| s.description),
                    risk: known.map_or(scopes::Risk::High, |s| s.risk),
                }
            })
            .collect(),
        required_integrations: manifest.required_integrations.clone(),
        cross_app_dependencies: manifest.cross_app_dependencies.clone(),
        rag_slots: manifest.rag_slots.clone(),
        install_settings: manifest.install_settings.clone(),
        installed,
    }
}

/// `GET /api/apps`.
#[derive(Debug, Serialize)]
pub struct Catalogue {
    /// Active apps with a current version, by slug.
    pub apps: Vec<CatalogueApp>,
}

/// The apps a tenant can install.
pub async fn catalogue(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
) -> Result<Json<Catalogue>, ApiError> {
    let registry = registry(&state)?;
    let installs = state.store.installs(&tenant.key()).await?;
    let mut apps = Vec::new();
    // Two reads for the whole catalogue; each version's manifest is parsed once per host.
    for (app, version) in state.store.catalogue().await? {
        let Ok(manifest) =
            registry.parsed_manifest(&app.slug, &version.version, &version.manifest_source)
        else {
            tracing::warn!(app = %app.slug, version = %version.version, "a stored manifest no longer validates; left out of the catalogue");
            continue;
        };
        let installed = installs
            .iter()
            .find(|i| i.app_slug == app.slug)
            .map(|i| i.status.as_str());
        apps.push(disclose(&manifest, version.version, installed));
    }
    Ok(Json(Catalogue { apps }))
}

/// An install as answered.
#[derive(Debug, Serialize)]
pub struct InstallView {
    /// The app.
    pub app: String,
    /// The version it runs.
    pub version: String,
    /// `active` or `inactive`.
    pub status: &'static str,
    /// Granted scopes.
    pub granted_scopes: Vec<String>,
    /// Non-secret settings.
    pub settings: Map<String, Value>,
    /// Ids of the secret settings that have a value (values are never answered).
    pub secret_settings: Vec<String>,
    /// Slot name to collection name.
    pub rag_bindings: Map<String, Value>,
    /// `manual` or `auto`.
    pub upgrade_policy: &'static str,
    /// A newer version waiting for consent.
    pub pending_version: Option<String>,
    /// What the install waits for before it moves to `pending_version`: the scopes to grant
    /// and the settings to give (`POST /api/installs/{app}/upgrade` takes both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<atrium_platform::registry::Pending>,
    /// The user who activated it last.
    pub activated_by: Option<String>,
    /// First activation.
    pub first_activated_at: String,
    /// Last activation.
    pub activated_at: String,
    /// Last deactivation, while inactive.
    pub deactivated_at: Option<String>,
    /// The tenant's templates cloned from this app's template defaults (once per slug, at an
    /// activation), by slug.
    pub templates: Vec<String>,
}

/// The install as answered, given its secret settings' ids and the tenant's templates as
/// (slug, app cloned from).
fn view_of(
    install: Install,
    secret_settings: Vec<String>,
    templates: &[(String, Option<String>)],
    pending: Option<atrium_platform::registry::Pending>,
) -> InstallView {
    let templates = templates
        .iter()
        .filter(|(_, app)| app.as_deref() == Some(install.app_slug.as_str()))
        .map(|(slug, _)| slug.clone())
        .collect();
    InstallView {
        app: install.app_slug,
        version: install.version,
        status: install.status.as_str(),
        granted_scopes: install.granted_scopes,
        settings: install.settings,
        secret_settings,
        rag_bindings: install.rag_bindings,
        upgrade_policy: install.upgrade_policy.as_str(),
        pending_version: install.pending_version,
        pending,
        activated_by: install.activated_by,
        first_activated_at: time(install.first_activated_at),
        activated_at: time(install.activated_at),
        deactivated_at: install.deactivated_at.map(time),
        templates,
    }
}

/// One install as answered.
async fn view(state: &HostState, install: Install) -> Result<InstallView, ApiError> {
    let secret_settings = state
        .store
        .install_secret_keys(&install.key(), atrium_store::InstallValueKind::Setting)
        .await?;
    let templates = state.store.tenant_templates(&install.tenant()).await?;
    let pending = registry(state)?.pending(&install).await?;
    Ok(view_of(install, secret_settings, &templates, pending))
}

impl crate::page::Listed for InstallView {
    const KEY: &'static str = "installs";
}

impl crate::page::SortedBy for InstallView {
    fn sort_key(&self) -> String {
        self.app.clone()
    }
}

/// Activates an app for the caller's tenant: the install, 201 on its first activation (its
/// `on_install` ran), 200 after. Like every answer about one install, the install itself.
pub async fn activate(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path(app): Path<String>,
    OptionalJsonBody(request): OptionalJsonBody<ActivateRequest>,
) -> Result<(StatusCode, Json<InstallView>), ApiError> {
    let activated = serving(&state)?
        .activate(&actor(&tenant), &app, &request)
        .await?;
    let status = if activated.first {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(view(&state, activated.install).await?)))
}

/// Deactivates an install.
pub async fn deactivate(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path(app): Path<String>,
) -> Result<Json<InstallView>, ApiError> {
    let install = serving(&state)?.deactivate(&actor(&tenant), &app).await?;
    Ok(Json(view(&state, install).await?))
}

/// The caller's tenant's installs, by app, a page at a time (`crate::page`). Three reads
/// whatever the page's size: the installs, their secret settings' ids, the tenant's templates.
pub async fn list(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
    page: PageRequest,
) -> Result<Json<Page<InstallView>>, ApiError> {
    let key = tenant_key(&tenant);
    let installs = state
        .store
        .installs_page(&key, page.after.as_deref(), page.fetch())
        .await?;
    let secret_keys = state
        .store
        .tenant_install_secret_keys(&key, atrium_store::InstallValueKind::Setting)
        .await?;
    let templates = state.store.tenant_templates(&tenant.key()).await?;
    let mut views = Vec::with_capacity(installs.len());
    for install in installs {
        let secrets = secret_keys
            .iter()
            .filter(|(app, _)| *app == install.app_slug)
            .map(|(_, key)| key.clone())
            .collect();
        // An install waiting for an upgrade (rare) says what for: one cached manifest read.
        let pending = match install.pending_version {
            Some(_) => registry(&state)?.pending(&install).await?,
            None => None,
        };
        views.push(view_of(install, secrets, &templates, pending));
    }
    Ok(Json(Page::of(views, &page)))
}

/// One install of the caller's tenant.
pub async fn show(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
    Path(app): Path<String>,
) -> Result<Json<InstallView>, ApiError> {
    let install = state
        .store
        .install(&tenant.key().install(&app))
        .await?
        .ok_or_else(|| ApiError::not_found(format!("this tenant has no install of `{app}`")))?;
    Ok(Json(view(&state, install).await?))
}

/// `PUT /api/integrations/{provider}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutIntegration {
    /// The provider's configuration (for a mail provider, `primary_email`).
    #[serde(default)]
    pub config: Map<String, Value>,
}

/// An integration as answered: its provider and the names of its configuration fields.
#[derive(Debug, Serialize)]
pub struct IntegrationView {
    /// The provider slug.
    pub provider: String,
    /// The configuration's field names (values may be credentials and are not answered).
    pub fields: Vec<String>,
}

/// `GET /api/integrations`.
#[derive(Debug, Serialize)]
pub struct IntegrationList {
    /// By provider.
    pub integrations: Vec<IntegrationView>,
}

/// Configures one of the tenant's integrations: 201 when new, 200 when replaced.
pub async fn put_integration(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path(provider): Path<String>,
    JsonBody(body): JsonBody<PutIntegration>,
) -> Result<(StatusCode, Json<IntegrationView>), ApiError> {
    let created = registry(&state)?
        .put_integration(&tenant_key(&tenant), &provider, &body.config)
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(IntegrationView {
            provider,
            fields: body.config.keys().cloned().collect(),
        }),
    ))
}

/// The tenant's integrations.
pub async fn list_integrations(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
) -> Result<Json<IntegrationList>, ApiError> {
    let integrations = registry(&state)?.integrations(&tenant_key(&tenant)).await?;
    Ok(Json(IntegrationList {
        integrations: integrations
            .into_iter()
            .map(|(provider, config)| IntegrationView {
                provider,
                fields: config
                    .as_object()
                    .map(|c| c.keys().cloned().collect())
                    .unwrap_or_default(),
            })
            .collect(),
    }))
}

/// `POST /api/apps/{app}/tools/{name}`.
#[derive(Debug, Serialize)]
pub struct ToolResult {
    /// What the tool answered.
    pub result: Value,
}

/// Calls a tool of the caller's tenant's install with the JSON arguments in the body.
pub async fn call_tool(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
    Path((app, tool)): Path<(String, String)>,
    JsonArguments(args): JsonArguments,
) -> Result<Json<ToolResult>, ApiError> {
    let serving = state.serving()?;
    let args = Value::Object(args);
    let result = serving
        .call_tool(&actor(&tenant), &app, &tool, &args)
        .await?;
    Ok(Json(ToolResult { result }))
}

/// The principal's tenant.
fn tenant_key(tenant: &atrium_store::TenantPrincipal) -> atrium_store::TenantKey {
    atrium_store::TenantKey::new(&tenant.org_id, &tenant.tenant_id)
}

/// Serving, or 503 when this host runs without a registry.
fn serving(state: &HostState) -> Result<&atrium_platform::serving::Serving, ApiError> {
    state.serving()
}

/// `PATCH /api/installs/{app}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatchInstall {
    /// Setting values by id; ids not given keep their values.
    pub settings: Map<String, Value>,
}

/// Changes an install's settings; the next call sees them.
pub async fn patch(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path(app): Path<String>,
    JsonBody(body): JsonBody<PatchInstall>,
) -> Result<Json<InstallView>, ApiError> {
    let install = registry(&state)?
        .update_settings(&actor(&tenant), &app, &body.settings)
        .await?;
    Ok(Json(view(&state, install).await?))
}

/// `PUT /api/installs/{app}/secrets/{key}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PutOverride {
    /// The value, stored sealed, never answered.
    pub value: String,
}

/// The answer about a secret override (never its value).
#[derive(Debug, Serialize)]
pub struct OverrideView {
    /// The app.
    pub app: String,
    /// The key.
    pub key: String,
}

/// Sets the tenant's override of an app secret: 201 when new, 200 when replaced.
pub async fn put_override(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((app, key)): Path<(String, String)>,
    JsonBody(body): JsonBody<PutOverride>,
) -> Result<(StatusCode, Json<OverrideView>), ApiError> {
    let created = registry(&state)?
        .put_secret_override(&actor(&tenant), &app, &key, &body.value)
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(OverrideView { app, key })))
}

/// Removes the tenant's override: 204.
pub async fn delete_override(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((app, key)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    registry(&state)?
        .delete_secret_override(&actor(&tenant), &app, &key)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The tenant upgrades its install, consenting to new scopes: activation's checks on the new
/// version.
pub async fn upgrade(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path(app): Path<String>,
    OptionalJsonBody(body): OptionalJsonBody<atrium_platform::registry::TenantUpgrade>,
) -> Result<Json<InstallView>, ApiError> {
    let activated = registry(&state)?
        .upgrade(&actor(&tenant), &app, body)
        .await?;
    Ok(Json(view(&state, activated.install).await?))
}

/// `POST /api/inbound/{channel}`: a message that arrived on a channel.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InboundMessage {
    /// The platform's id of the message (default: a new one).
    #[serde(default)]
    pub message_id: Option<String>,
    /// The sender's address on the channel.
    pub from: String,
    /// The text.
    pub body: String,
    /// The subject, where the channel has one.
    #[serde(default)]
    pub subject: Option<String>,
    /// When it was received, ISO-8601 UTC (default: now).
    #[serde(default)]
    pub received_at: Option<String>,
    /// Ids of attachments stored by the platform.
    #[serde(default)]
    pub attachment_ids: Vec<String>,
    /// Channel-specific details.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// `POST /api/inbound/{channel}`'s answer.
#[derive(Debug, Serialize)]
pub struct Dispatched {
    /// The message id.
    pub message_id: String,
    /// How each install's `on_inbound` ended.
    pub dispatched: Vec<atrium_platform::serving::HookOutcome>,
}

/// Fans an inbound message out to every install of the tenant whose app declares
/// `on_inbound`.
pub async fn inbound(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path(channel): Path<String>,
    JsonBody(body): JsonBody<InboundMessage>,
) -> Result<Json<Dispatched>, ApiError> {
    if !atrium_manifest::rules::is_app_slug_chars(&channel) || channel.len() > 64 {
        return Err(ApiError::bad_request(
            format!("`{channel}` is not a channel name: lowercase letters, digits and hyphens"),
            Some("channel"),
        ));
    }
    let message_id = body.message_id.unwrap_or_else(|| {
        let mut bytes = [0u8; 8];
        let _ = getrandom::fill(&mut bytes);
        format!(
            "msg_{}",
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        )
    });
    let envelope = atrium_runtime::InboundEnvelope {
        message_id: message_id.clone(),
        channel,
        from: body.from,
        body: body.body,
        subject: body.subject,
        received_at: body
            .received_at
            .unwrap_or_else(|| jiff::Timestamp::now().to_string()),
        attachment_ids: body.attachment_ids,
        metadata: Value::Object(body.metadata).to_string(),
    };
    let dispatched = serving(&state)?
        .fan_out_inbound(&actor(&tenant), &envelope)
        .await?;
    Ok(Json(Dispatched {
        message_id,
        dispatched,
    }))
}

/// `GET /api/installs/{app}/agents`.
#[derive(Debug, Serialize)]
pub struct AgentList {
    /// The install's agents with the tenant's edits.
    pub agents: Vec<atrium_platform::registry::InstalledAgent>,
}

/// The agents of the caller's tenant's install, with the tenant's edits.
pub async fn agents(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
    Path(app): Path<String>,
) -> Result<Json<AgentList>, ApiError> {
    let agents = registry(&state)?
        .installed_agents(&actor(&tenant), &app)
        .await?;
    Ok(Json(AgentList { agents }))
}

/// Edits an agent of the caller's tenant's install; kept across re-activations and upgrades.
pub async fn edit_agent(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((app, agent)): Path<(String, String)>,
    JsonBody(edit): JsonBody<atrium_platform::registry::AgentEdit>,
) -> Result<Json<atrium_platform::registry::InstalledAgent>, ApiError> {
    let agent = registry(&state)?
        .edit_agent(&actor(&tenant), &app, &agent, &edit)
        .await?;
    Ok(Json(agent))
}

/// `GET /api/installs/{app}/workflows`.
#[derive(Debug, Serialize)]
pub struct WorkflowList {
    /// The install's workflows with the tenant's overrides.
    pub workflows: Vec<atrium_platform::registry::InstalledWorkflow>,
}

/// The workflows of the caller's tenant's install, with the tenant's overrides.
pub async fn workflows(
    State(state): State<HostState>,
    TenantUser(tenant): TenantUser,
    Path(app): Path<String>,
) -> Result<Json<WorkflowList>, ApiError> {
    let workflows = registry(&state)?
        .installed_workflows(&actor(&tenant), &app)
        .await?;
    Ok(Json(WorkflowList { workflows }))
}

/// Overrides fields of a workflow of the caller's tenant's install, merged by its id.
pub async fn override_workflow(
    State(state): State<HostState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((app, workflow)): Path<(String, String)>,
    JsonBody(o): JsonBody<atrium_platform::registry::WorkflowOverride>,
) -> Result<Json<atrium_platform::registry::InstalledWorkflow>, ApiError> {
    let workflow = registry(&state)?
        .override_workflow(&actor(&tenant), &app, &workflow, &o)
        .await?;
    Ok(Json(workflow))
}

/// The tenant side's routes: the catalogue, installs, integrations, tool calls and inbound
/// messages.
pub(super) fn router() -> Routes {
    Routes::new()
        .route("/apps", get(catalogue))
        .route("/apps/{app}/tools/{name}", post(call_tool))
        .route("/inbound/{channel}", post(inbound))
        .route("/installs", get(list))
        .route("/installs/{app}", get(show).patch(patch))
        .route(
            "/installs/{app}/secrets/{key}",
            put(put_override).delete(delete_override),
        )
        .route("/installs/{app}/activate", post(activate))
        .route("/installs/{app}/deactivate", post(deactivate))
        .route("/installs/{app}/upgrade", post(upgrade))
        .route("/installs/{app}/agents", get(agents))
        .route("/installs/{app}/workflows", get(workflows))
        .route(
            "/installs/{app}/workflows/{workflow}",
            crate::routing::patch(override_workflow),
        )
        .route(
            "/installs/{app}/agents/{agent}",
            crate::routing::patch(edit_agent),
        )
        .route("/integrations", get(list_integrations))
        .route("/integrations/{provider}", put(put_integration))
}

//! A tenant's edits of an installed app's agents. The manifest gives each agent's defaults;
//! the tenant may change its display name, system prompt, allowed skills, tools allowed and
//! routing hints, and these edits survive re-activation and upgrades, field by field.

use atrium_manifest::Manifest;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Actor, Registry, RegistryError, Result};

/// An agent of an install as the tenant sees it: the manifest's, with the tenant's edits.
#[derive(Debug, Clone, Serialize)]
pub struct InstalledAgent {
    /// The agent's id (slug).
    pub id: String,
    /// The display name.
    pub display_name: String,
    /// The system prompt.
    pub system_prompt: String,
    /// Skills it may use (null: all).
    pub allowed_skills: Option<Vec<String>>,
    /// Tools it may call (null: all agent-visible tools).
    pub tools_allowed: Option<Vec<String>>,
    /// Routing hints.
    pub routing_hints: Option<String>,
    /// The fields the tenant edited.
    pub edited: Vec<String>,
}

/// `PATCH /api/installs/{app}/agents/{agent}`: the fields to change; omitted ones keep their
/// value (an earlier edit, or the manifest's).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEdit {
    /// At most 80 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// At most 20,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Skill names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_skills: Option<Vec<String>>,
    /// Tools of the app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_allowed: Option<Vec<String>>,
    /// At most 2,000 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing_hints: Option<String>,
}

pub(crate) fn merged(manifest: &Manifest, edits: &Map<String, Value>) -> Vec<InstalledAgent> {
    manifest
        .agents
        .iter()
        .map(|agent| {
            let edit = edits.get(&agent.id).and_then(Value::as_object);
            let field = |name: &str| edit.and_then(|e| e.get(name)).cloned();
            let string = |name: &str| field(name).and_then(|v| v.as_str().map(str::to_owned));
            let list = |name: &str| {
                field(name).and_then(|v| serde_json::from_value::<Vec<String>>(v).ok())
            };
            InstalledAgent {
                id: agent.id.clone(),
                display_name: string("display_name").unwrap_or_else(|| agent.name.clone()),
                system_prompt: string("system_prompt")
                    .unwrap_or_else(|| agent.system_prompt.clone()),
                allowed_skills: list("allowed_skills").or_else(|| agent.allowed_skills.clone()),
                tools_allowed: list("tools_allowed").or_else(|| agent.tools_allowed.clone()),
                routing_hints: string("routing_hints").or_else(|| agent.routing_hints.clone()),
                edited: edit
                    .map(|e| e.keys().cloned().collect())
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The stored edits of `id` with the fields `given` sets laid over them: an edit changes only
/// what it names.
fn merge_into(
    stored: &Map<String, Value>,
    id: &str,
    given: &impl Serialize,
) -> Result<Map<String, Value>> {
    let mut merged = stored
        .get(id)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Value::Object(given) = serde_json::to_value(given)
        .map_err(|e| RegistryError::internal("encoding an edit failed", &e))?
    {
        merged.extend(given);
    }
    Ok(merged)
}

fn too_long(field: &'static str, value: &str, max: usize) -> Result<()> {
    if value.chars().count() > max {
        return Err(RegistryError::BadRequest {
            param: field,
            message: format!("{field} may be at most {max} characters"),
        });
    }
    Ok(())
}

impl Registry {
    /// The agents of the tenant's install of `app_slug`, with the tenant's edits.
    pub async fn installed_agents(
        &self,
        tenant: &Actor,
        app_slug: &str,
    ) -> Result<Vec<InstalledAgent>> {
        let store = &self.inner.store;
        let install = self.tenant_install(tenant, app_slug).await?;
        let manifest = self.manifest_of(app_slug, &install.version).await?;
        let edits = store.agent_edits(&tenant.install(app_slug)).await?;
        Ok(merged(&manifest, &edits))
    }

    /// Edits one agent of the tenant's install; the edit is merged into earlier ones.
    pub async fn edit_agent(
        &self,
        tenant: &Actor,
        app_slug: &str,
        agent_id: &str,
        edit: &AgentEdit,
    ) -> Result<InstalledAgent> {
        let store = &self.inner.store;
        let install = self.tenant_install(tenant, app_slug).await?;
        let manifest = self.manifest_of(app_slug, &install.version).await?;
        if !manifest.agents.iter().any(|a| a.id == agent_id) {
            return Err(RegistryError::NotFound(format!(
                "`{app_slug}` has no agent `{agent_id}`"
            )));
        }
        if let Some(name) = &edit.display_name {
            if name.trim().is_empty() {
                return Err(RegistryError::BadRequest {
                    param: "display_name",
                    message: "display_name must not be empty".into(),
                });
            }
            too_long("display_name", name, 80)?;
        }
        if let Some(prompt) = &edit.system_prompt {
            too_long("system_prompt", prompt, 20_000)?;
        }
        if let Some(hints) = &edit.routing_hints {
            too_long("routing_hints", hints, 2_000)?;
        }
        if let Some(tools) = &edit.tools_allowed {
            let unknown: Vec<&String> = tools
                .iter()
                .filter(|t| !manifest.tools.iter().any(|d| &d.name == *t))
                .collect();
            if !unknown.is_empty() {
                return Err(RegistryError::BadRequest {
                    param: "tools_allowed",
                    message: format!(
                        "`{app_slug}` declares no tool {}",
                        unknown
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
        let mut edits = store.agent_edits(&tenant.install(app_slug)).await?;
        let this = merge_into(&edits, agent_id, edit)?;
        store
            .put_agent_edits(&tenant.install(app_slug), agent_id, &this)
            .await?;
        edits.insert(agent_id.to_owned(), Value::Object(this));
        merged(&manifest, &edits)
            .into_iter()
            .find(|a| a.id == agent_id)
            .ok_or_else(|| {
                RegistryError::NotFound(format!("`{app_slug}` has no agent `{agent_id}`"))
            })
    }
}

/// A workflow of an install as the tenant sees it: the manifest's, with the tenant's overrides.
#[derive(Debug, Clone, Serialize)]
pub struct InstalledWorkflow {
    /// The workflow's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// The intent it serves.
    pub intent: String,
    /// Its steps.
    pub flow: Vec<String>,
    /// Phrases that route to it.
    pub triggers: Vec<String>,
    /// Phrases that must not.
    pub non_triggers: Vec<String>,
    /// Specific instructions.
    pub specifics: Option<String>,
    /// The tools it needs (the manifest's; not overridden).
    pub tools_required: Vec<String>,
    /// The channels it applies to, `["*"]` for all (the manifest's; not overridden).
    pub channels: Vec<String>,
    /// The fields the tenant overrode.
    pub overridden: Vec<String>,
}

/// `PATCH /api/installs/{app}/workflows/{id}`: the fields to override, within section 8's
/// limits (flow 1 to 50 steps of at most 500 characters, 20 triggers and non-triggers,
/// specifics at most 2,000 characters).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowOverride {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Intent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// Steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<Vec<String>>,
    /// Triggers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub triggers: Option<Vec<String>>,
    /// Non-triggers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub non_triggers: Option<Vec<String>>,
    /// Specifics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specifics: Option<String>,
}

pub(crate) fn merged_workflows(
    manifest: &Manifest,
    overrides: &Map<String, Value>,
) -> Vec<InstalledWorkflow> {
    manifest
        .workflows
        .iter()
        .map(|w| {
            let o = overrides.get(&w.id).and_then(Value::as_object);
            let string = |name: &str| {
                o.and_then(|o| o.get(name))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let list = |name: &str| {
                o.and_then(|o| o.get(name))
                    .and_then(|v| serde_json::from_value::<Vec<String>>(v.clone()).ok())
            };
            InstalledWorkflow {
                id: w.id.clone(),
                name: string("name").unwrap_or_else(|| w.name.clone()),
                intent: string("intent").unwrap_or_else(|| w.intent.clone()),
                flow: list("flow").unwrap_or_else(|| w.flow.clone()),
                triggers: list("triggers").unwrap_or_else(|| w.triggers.clone()),
                non_triggers: list("non_triggers").unwrap_or_else(|| w.non_triggers.clone()),
                specifics: string("specifics").or_else(|| w.specifics.clone()),
                tools_required: w.tools_required.clone(),
                channels: w.channels.clone(),
                overridden: o.map(|o| o.keys().cloned().collect()).unwrap_or_default(),
            }
        })
        .collect()
}

fn check_list(
    field: &'static str,
    items: &[String],
    min: usize,
    max: usize,
    chars: usize,
) -> Result<()> {
    if items.len() < min
        || items.len() > max
        || items
            .iter()
            .any(|i| i.trim().is_empty() || i.chars().count() > chars)
    {
        return Err(RegistryError::BadRequest {
            param: field,
            message: format!(
                "{field} must have {min} to {max} non-empty entries of at most {chars} characters"
            ),
        });
    }
    Ok(())
}

impl Registry {
    /// The workflows of the tenant's install, with the tenant's overrides.
    pub async fn installed_workflows(
        &self,
        tenant: &Actor,
        app_slug: &str,
    ) -> Result<Vec<InstalledWorkflow>> {
        let store = &self.inner.store;
        let install = self.tenant_install(tenant, app_slug).await?;
        let manifest = self.manifest_of(app_slug, &install.version).await?;
        let overrides = store.workflow_overrides(&tenant.install(app_slug)).await?;
        Ok(merged_workflows(&manifest, &overrides))
    }

    /// Overrides fields of one workflow of the tenant's install, merged by the workflow's id.
    pub async fn override_workflow(
        &self,
        tenant: &Actor,
        app_slug: &str,
        workflow_id: &str,
        o: &WorkflowOverride,
    ) -> Result<InstalledWorkflow> {
        let store = &self.inner.store;
        let install = self.tenant_install(tenant, app_slug).await?;
        let manifest = self.manifest_of(app_slug, &install.version).await?;
        if !manifest.workflows.iter().any(|w| w.id == workflow_id) {
            return Err(RegistryError::NotFound(format!(
                "`{app_slug}` has no workflow `{workflow_id}`"
            )));
        }
        if let Some(flow) = &o.flow {
            check_list("flow", flow, 1, 50, 500)?;
        }
        if let Some(triggers) = &o.triggers {
            check_list("triggers", triggers, 0, 20, 500)?;
        }
        if let Some(non_triggers) = &o.non_triggers {
            check_list("non_triggers", non_triggers, 0, 20, 500)?;
        }
        if let Some(specifics) = &o.specifics {
            too_long("specifics", specifics, 2_000)?;
        }
        for (field, value) in [("name", &o.name), ("intent", &o.intent)] {
            if let Some(v) = value {
                check_list(field, std::slice::from_ref(v), 1, 1, 500)?;
            }
        }
        let mut overrides = store.workflow_overrides(&tenant.install(app_slug)).await?;
        let this = merge_into(&overrides, workflow_id, o)?;
        store
            .put_workflow_overrides(&tenant.install(app_slug), workflow_id, &this)
            .await?;
        overrides.insert(workflow_id.to_owned(), Value::Object(this));
        merged_workflows(&manifest, &overrides)
            .into_iter()
            .find(|w| w.id == workflow_id)
            .ok_or_else(|| {
                RegistryError::NotFound(format!("`{app_slug}` has no workflow `{workflow_id}`"))
            })
    }
}

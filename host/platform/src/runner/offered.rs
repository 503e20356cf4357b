//! What the runner offers a model as tools, in OpenAI's `tools` format, and how a name the
//! model calls maps back to what runs.
//!
//! - The app's tools: those declared `agent_visible`, filtered by the agent's `tools_allowed`
//!   (none: all), under their own names.
//! - The platform tools whose skill the agent's `allowed_skills` allows (none: every skill) and
//!   whose scopes the install holds: a skill is a platform tool's family (`records`,
//!   `knowledge`), so `records` allows `records.get`, `records.put`, ...; offered as
//!   `records-get` (a function name cannot hold a dot, and an app's tool name cannot hold a
//!   hyphen, so the two never collide). `chat.complete` is not offered: the agent is already
//!   talking to a model. A call of an allowed platform tool that was not offered for want of a
//!   scope is still checked, and refused `scope_denied`.
//! - `team-delegate`, when the agent has a team: asks a teammate, through the same checks as
//!   `team.delegate`.

use atrium_manifest::Manifest;
use serde_json::{Value, json};

use crate::registry::InstalledAgent;
use crate::tools::{Catalogue, PlatformTool};

/// The function name of team delegation.
pub const DELEGATE: &str = "team-delegate";

/// What a tool name of the model's stands for.
#[derive(Debug, Clone)]
pub enum Target {
    /// A tool of the app (offered or not: one that is not offered is still run as the app's
    /// call would be, and refused there if the agent may not call it).
    App(String),
    /// A platform tool (`records.get`).
    Platform(&'static PlatformTool),
    /// Team delegation.
    Delegate,
}

/// The tools offered to one agent.
#[derive(Debug, Clone)]
pub struct Offered {
    /// The `tools` member of the chat request; empty when nothing is offered.
    pub specs: Vec<Value>,
    /// The agent's `tools_allowed`, when it restricts.
    tools_allowed: Option<Vec<String>>,
    /// The agent's `allowed_skills`, when it restricts.
    allowed_skills: Option<Vec<String>>,
    /// Whether the agent has a team.
    team: bool,
    /// The platform tools of the host.
    tools: Catalogue,
}

/// The skill (family) of platform tool `name`: `records` for `records.get`.
#[must_use]
pub fn skill_of(name: &str) -> &str {
    name.split_once('.').map_or(name, |(family, _)| family)
}

/// Whether `allowed_skills` (none: no restriction) allows platform tool `tool`: its skill or
/// its own name is listed.
fn skill_allowed(allowed_skills: Option<&[String]>, tool: &str) -> bool {
    let skill = skill_of(tool);
    allowed_skills.is_none_or(|skills| skills.iter().any(|s| s == skill || s == tool))
}

/// Takes `field` out of a tool's argument schema: an argument the runner fills itself, which
/// the model is not asked for.
fn hide(schema: &mut Value, field: &str) {
    if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        properties.remove(field);
    }
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.retain(|r| r != field);
    }
}

fn function(name: &str, description: &str, parameters: Value) -> Value {
    json!({
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    })
}

impl Offered {
    /// The tools of `agent` (with the tenant's edits) of an app with `manifest`, installed
    /// with the scopes `granted` holds.
    #[must_use]
    pub fn for_agent(
        tools: Catalogue,
        manifest: &Manifest,
        agent: &InstalledAgent,
        granted: impl Fn(&str) -> bool,
    ) -> Self {
        let mut specs = Vec::new();
        for tool in &manifest.tools {
            let allowed = agent
                .tools_allowed
                .as_ref()
                .is_none_or(|a| a.contains(&tool.name));
            if tool.agent_visible && allowed {
                specs.push(function(
                    &tool.name,
                    &tool.description,
                    json!({"type": "object", "additionalProperties": true}),
                ));
            }
        }
        for tool in tools.all() {
            if tool.offered_to_agents
                && skill_allowed(agent.allowed_skills.as_deref(), tool.name)
                && tool.scopes.iter().all(|s| granted(s))
            {
                let mut parameters = tool.parameters();
                if let Some(field) = tool.runner_fills_agent {
                    hide(&mut parameters, field);
                }
                specs.push(function(
                    &tool.name.replace('.', "-"),
                    tool.description,
                    parameters,
                ));
            }
        }
        let team = manifest
            .agents
            .iter()
            .find(|a| a.id == agent.id)
            .map(|a| a.team.clone())
            .unwrap_or_default();
        if !team.is_empty() {
            let mut parameters = crate::tools::schema_of::<super::team::DelegateArgs>();
            parameters["properties"]["agent"]["enum"] = json!(team);
            specs.push(function(
                DELEGATE,
                &format!(
                    "Asks a teammate to do part of the work and answers what they replied. Teammates: {}.",
                    team.join(", ")
                ),
                parameters,
            ));
        }
        Offered {
            specs,
            tools_allowed: agent.tools_allowed.clone(),
            allowed_skills: agent.allowed_skills.clone(),
            team: !team.is_empty(),
            tools,
        }
    }

    /// What the model's call of `name` runs, or why it runs nothing (a sentence for the model).
    pub fn target(&self, manifest: &Manifest, name: &str) -> Result<Target, String> {
        if name == DELEGATE && self.team {
            return Ok(Target::Delegate);
        }
        if manifest.tool(name).is_some() {
            if let Some(allowed) = &self.tools_allowed
                && !allowed.iter().any(|a| a == name)
            {
                return Err(format!(
                    "tool `{name}` is not in this agent's tools_allowed ({})",
                    allowed.join(", ")
                ));
            }
            return Ok(Target::App(name.to_owned()));
        }
        if let Some(tool) = self
            .tools
            .all()
            .iter()
            .find(|t| t.name.replace('.', "-") == name)
        {
            if tool.offered_to_agents && skill_allowed(self.allowed_skills.as_deref(), tool.name) {
                return Ok(Target::Platform(tool));
            }
            return Err(format!(
                "platform tool `{}` is not among this agent's allowed_skills",
                tool.name
            ));
        }
        Err(format!("no tool `{name}` is offered to this agent"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_not_asked_for_the_agent_the_runner_fills() {
        let tool = crate::composition::platform_tools()
            .find("memory.write")
            .unwrap();
        let mut schema = tool.parameters();
        assert!(schema["properties"].get("agent").is_some(), "{schema}");
        hide(&mut schema, tool.runner_fills_agent.unwrap());
        assert!(schema["properties"].get("agent").is_none(), "{schema}");
        assert!(
            schema["required"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r != "agent"),
            "{schema}"
        );
        assert!(schema["properties"].get("content").is_some(), "{schema}");
    }

    #[test]
    fn a_skill_is_a_platform_tools_family() {
        assert_eq!(skill_of("records.query"), "records");
        assert_eq!(skill_of("knowledge.add"), "knowledge");
        assert_eq!(skill_of("plain"), "plain");
    }
}

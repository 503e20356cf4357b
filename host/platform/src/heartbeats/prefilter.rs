//! The pre-filter of a heartbeat (Appendix A, rule 2): a query without any model call.
//!
//! - `_internal_app_records` (tool `query`): the install's records of `params.record_type`
//!   whose top-level fields equal the other params (what `records.query` answers).
//! - `_internal_agent_memory` (tool `query`): the agent's memory entries of `params.kind`
//!   (every kind when absent), newest first, at most `params.limit` (1 to 100, default 20);
//!   the agent is the heartbeat's own.
//! - Any other skill names a platform tool `<skill>.<tool>` called with `params`, one of
//!   [`atrium_manifest::skills::PLATFORM_TOOLS`] (the list the validator holds heartbeats to):
//!   it must be LOW-risk ([`crate::tools::PlatformTool::risk`]) and the install must hold its
//!   scopes, otherwise the run fails with that reason.
//!
//! What counts as found: the items of an array answer; of an object answer, the items of its
//! array fields (`matches`, `messages`, ...), or one for an object without any; nothing for
//! null.

use atrium_manifest::{Heartbeat, skills};
use atrium_store::Install;
use serde_json::Value;

use crate::registry::Actor;
use crate::scopes::Risk;
use crate::serving::{Serving, knowledge_of};
use crate::tools::Knowledge;

/// The sentinel that queries the app's records.
pub const APP_RECORDS: &str = "_internal_app_records";
/// The sentinel that queries the agent's memory.
pub const AGENT_MEMORY: &str = "_internal_agent_memory";
/// The longest context handed to the agent, in characters.
pub const MAX_CONTEXT_CHARS: usize = 20_000;

/// What the pre-filter found.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Found {
    /// How many records.
    pub count: i64,
    /// The answer, as the agent reads it.
    pub context: Value,
}

impl Found {
    /// The context as JSON text, cut at [`MAX_CONTEXT_CHARS`].
    pub fn context_text(&self) -> String {
        let text = serde_json::to_string_pretty(&self.context).unwrap_or_default();
        if text.chars().count() <= MAX_CONTEXT_CHARS {
            return text;
        }
        let cut: String = text.chars().take(MAX_CONTEXT_CHARS).collect();
        format!("{cut}\n[cut: the records had more than {MAX_CONTEXT_CHARS} characters]")
    }
}

fn count(value: &Value) -> i64 {
    let len = |items: &Vec<Value>| i64::try_from(items.len()).unwrap_or(i64::MAX);
    match value {
        Value::Null => 0,
        Value::Array(items) => len(items),
        Value::Object(map) => {
            let arrays: Vec<i64> = map.values().filter_map(|v| v.as_array().map(len)).collect();
            if arrays.is_empty() {
                i64::from(!map.is_empty())
            } else {
                arrays.iter().sum()
            }
        }
        _ => 1,
    }
}

/// Runs the pre-filter of `heartbeat` of `agent` in `install`: what it found, or why the run
/// fails.
pub(super) async fn run(
    serving: &Serving,
    tenant: &Actor,
    install: &Install,
    agent: &str,
    heartbeat: &Heartbeat,
) -> Result<Found, String> {
    let params = Value::Object(heartbeat.params.clone());
    let services = serving.services();
    let context = match heartbeat.skill.as_str() {
        APP_RECORDS => {
            if !params.get("record_type").is_some_and(Value::is_string) {
                return Err(format!(
                    "the pre-filter `{APP_RECORDS}` needs `params.record_type` (a string)"
                ));
            }
            let knowledge = Knowledge::default();
            services
                .call_tool(
                    tenant,
                    &install.app_slug,
                    &knowledge,
                    "records.query",
                    params,
                )
                .await
                .map_err(|e| format!("the pre-filter `{APP_RECORDS}` failed: {e}"))?
        }
        AGENT_MEMORY => {
            // The memory tool's own query, for the heartbeat's agent whatever the params say.
            let mut args = serde_json::Map::new();
            for field in ["kind", "limit"] {
                if let Some(value) = heartbeat.params.get(field) {
                    args.insert(field.into(), value.clone());
                }
            }
            args.insert("agent".into(), Value::String(agent.to_owned()));
            let knowledge = Knowledge {
                agents: vec![agent.to_owned()],
                ..Knowledge::default()
            };
            let args = Value::Object(args);
            services
                .call_tool(tenant, &install.app_slug, &knowledge, "memory.query", args)
                .await
                .map_err(|e| format!("the pre-filter `{AGENT_MEMORY}` failed: {e}"))?
        }
        skill => {
            // The skills the validator accepts are the ones run here: one list
            // (`atrium_manifest::skills`), which a version published before a skill went away
            // may still name.
            let Some(name) = skills::platform_tool(skill, &heartbeat.tool) else {
                let why = skills::unknown_source(skill, &heartbeat.tool)
                    .map(|u| u.message().to_owned())
                    .unwrap_or_else(|| format!("`{skill}` is not a platform skill"));
                return Err(format!("the pre-filter cannot run: {why}"));
            };
            let Some(tool) = services.tool(name) else {
                return Err(format!(
                    "the pre-filter skill tool `{name}` has no implementation on this host"
                ));
            };
            if tool.risk != Risk::Low {
                return Err(format!(
                    "the pre-filter skill tool `{name}` is {}-risk in the scope catalogue; a heartbeat's pre-filter runs only LOW-risk skills",
                    risk_name(tool.risk)
                ));
            }
            if let Some(missing) = tool
                .scopes
                .iter()
                .find(|s| !install.granted_scopes.iter().any(|g| g == *s))
            {
                return Err(format!(
                    "the pre-filter skill tool `{name}` needs scope `{missing}`, which the tenant has not granted"
                ));
            }
            let manifest = serving
                .registry()
                .manifest_of(&install.app_slug, &install.version)
                .await
                .map_err(|e| format!("the platform failed to read the manifest: {e}"))?;
            serving
                .services()
                .call_tool(
                    tenant,
                    &install.app_slug,
                    &knowledge_of(install, &manifest),
                    name,
                    params,
                )
                .await
                .map_err(|e| format!("the pre-filter `{name}` failed: {e}"))?
        }
    };
    Ok(Found {
        count: count(&context),
        context,
    })
}

fn risk_name(risk: Risk) -> &'static str {
    match risk {
        Risk::Low => "LOW",
        Risk::Medium => "MEDIUM",
        Risk::High => "HIGH",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_counts_as_found() {
        assert_eq!(count(&json!(null)), 0);
        assert_eq!(count(&json!([])), 0);
        assert_eq!(count(&json!([1, 2, 3])), 3);
        assert_eq!(count(&json!({"matches": []})), 0);
        assert_eq!(count(&json!({"matches": [1, 2], "other": [3]})), 3);
        assert_eq!(count(&json!({"id": "rec_1"})), 1);
        assert_eq!(count(&json!({})), 0);
        assert_eq!(count(&json!("text")), 1);
    }

    /// The platform tools the host runs are the manifest's list, which the validator holds a
    /// heartbeat's skill and tool to.
    #[test]
    fn the_catalogue_is_the_list_the_validator_checks() {
        let mut catalogue: Vec<&str> = crate::composition::platform_tools()
            .all()
            .iter()
            .map(|t| t.name)
            .collect();
        catalogue.sort_unstable();
        assert_eq!(catalogue, skills::PLATFORM_TOOLS);
    }

    /// Every heartbeat of every example names a source that runs: a sentinel, or a LOW-risk
    /// platform tool whose scopes the example asks for.
    #[test]
    fn every_example_heartbeat_names_a_source_that_runs() {
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut heartbeats = 0;
        for entry in std::fs::read_dir(&examples).unwrap() {
            let path = entry.unwrap().path().join("atrium.app.yaml");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let manifest = atrium_manifest::validate(&text)
                .manifest
                .unwrap_or_else(|| panic!("{} is valid", path.display()));
            for agent in &manifest.agents {
                for h in &agent.heartbeats {
                    heartbeats += 1;
                    let at = format!("{}: {}/{}", path.display(), agent.id, h.slug);
                    if skills::is_sentinel(&h.skill) {
                        assert_eq!(h.tool, skills::SENTINEL_TOOL, "{at}");
                        continue;
                    }
                    let name = skills::platform_tool(&h.skill, &h.tool).unwrap_or_else(|| {
                        panic!("{at}: `{}.{}` is not provided", h.skill, h.tool)
                    });
                    let tool = crate::composition::platform_tools().find(name).unwrap();
                    assert_eq!(tool.risk, Risk::Low, "{at}: {name}");
                    for scope in tool.scopes {
                        assert!(
                            manifest.required_scopes.iter().any(|s| s == scope),
                            "{at}: {name} needs {scope}"
                        );
                    }
                }
            }
        }
        assert!(
            heartbeats >= 12,
            "the invoice desks' heartbeats: {heartbeats}"
        );
    }
}

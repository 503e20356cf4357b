//! The pre-filter of a heartbeat (Appendix A, rule 2): a query without any model call.
//!
//! - `_internal_app_records` (tool `query`): the install's records of `params.record_type`
//!   whose top-level fields equal the other params (what `records.query` answers).
//! - `_internal_agent_memory` (tool `query`): the agent's memory entries of `params.kind`
//!   (every kind when absent), newest first, at most `params.limit` (1 to 100, default 20);
//!   the agent is the heartbeat's own.
//! - Any other skill names a platform tool `<skill>.<tool>` called with `params`: it must be
//!   LOW-risk ([`crate::serving::PlatformTool::risk`]) and the install must hold its scopes,
//!   otherwise the run fails with that reason.
//!
//! What counts as found: the items of an array answer; of an object answer, the items of its
//! array fields (`matches`, `messages`, ...), or one for an object without any; nothing for
//! null.

use atrium_manifest::Heartbeat;
use atrium_store::Install;
use serde_json::Value;

use crate::registry::Actor;
use crate::scopes::Risk;
use crate::serving::{Serving, TOOLS, knowledge_of, tools};

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
    let store = serving.registry().store();
    let params = Value::Object(heartbeat.params.clone());
    let context = match heartbeat.skill.as_str() {
        APP_RECORDS => {
            if !params.get("record_type").is_some_and(Value::is_string) {
                return Err(format!(
                    "the pre-filter `{APP_RECORDS}` needs `params.record_type` (a string)"
                ));
            }
            tools::records(store, &install.key(), "records.query", &params)
                .await
                .map_err(|e| format!("the pre-filter `{APP_RECORDS}` failed: {e}"))?
        }
        AGENT_MEMORY => {
            // The memory tool's own query, for the heartbeat's agent whatever the params say.
            let mut args = heartbeat.params.clone();
            args.insert("agent".into(), Value::String(agent.to_owned()));
            let agents = [agent.to_owned()];
            tools::memory(
                store,
                &install.key(),
                &agents,
                "memory.query",
                &Value::Object(args),
            )
            .await
            .map_err(|e| format!("the pre-filter `{AGENT_MEMORY}` failed: {e}"))?
        }
        skill => {
            let name = format!("{skill}.{}", heartbeat.tool);
            let Some(tool) = TOOLS.iter().find(|t| t.name == name) else {
                return Err(format!(
                    "the pre-filter skill `{skill}` has no tool `{}` on this platform",
                    heartbeat.tool
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
                    &name,
                    &params,
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
}

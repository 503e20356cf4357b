//! The orchestrator: which agent of the tenant's installed apps answers a user's message.
//!
//! The candidates are the agents of the tenant's active installs (with the tenant's edits);
//! a headless app (no agent) is never one. The workflows that reach the decision are those of
//! the same installs, the tenant's overrides merged by id, whose `tools_required` the app
//! declares and whose `channels` include the conversation's channel (`*`, or none: all).
//!
//! The decision is a model call at the tenant's `orchestrator` role, shown the message, the
//! agent the conversation is with now, each agent's routing hints and each workflow's intent,
//! triggers and non-triggers, and asked for a JSON choice. When there is only one agent to
//! choose there is no call. When the call fails or answers something that is not a candidate,
//! the deterministic [`fallback`] decides.

use atrium_inference::providers::ChatRequest;
use atrium_store::InstallStatus;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::llm_roles::{self, Role};
use crate::registry::{Actor, InstalledWorkflow, merged_agents, merged_workflows};
use crate::runner::RunError;
use crate::serving::Serving;

/// An agent the orchestrator may choose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// The app.
    pub app: String,
    /// The agent's id.
    pub agent: String,
    /// Its display name.
    pub name: String,
    /// Its routing hints.
    pub routing_hints: Option<String>,
    /// Whether it is its app's default agent.
    pub is_default: bool,
}

/// A workflow that reaches the decision, with its app.
#[derive(Debug, Clone)]
pub struct CandidateWorkflow {
    /// The app.
    pub app: String,
    /// The workflow, with the tenant's overrides.
    pub workflow: InstalledWorkflow,
}

/// How a decision was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The orchestrator model chose.
    Model,
    /// There was one agent to choose.
    OnlyCandidate,
    /// The deterministic rules chose (the model failed or answered no candidate).
    Fallback,
}

/// The orchestrator's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Choice {
    /// The app.
    pub app: String,
    /// The agent.
    pub agent: String,
    /// The workflow that applies, if one was chosen.
    pub workflow: Option<String>,
    /// Whether the conversation moves to another agent than the one it was with.
    pub switched: bool,
    /// How it was made.
    pub decided_by: DecidedBy,
    /// Why, in a sentence.
    pub reason: String,
}

/// The agents and workflows of `tenant`'s active installs, for a conversation on `channel`.
pub async fn candidates(
    serving: &Serving,
    tenant: &Actor,
    channel: &str,
) -> Result<(Vec<Candidate>, Vec<CandidateWorkflow>), RunError> {
    let store = serving.registry().store();
    let failed = |e: &dyn std::fmt::Display| {
        tracing::error!(error = %e, "reading the tenant's installs for routing failed");
        RunError {
            reason: "the platform failed to read the tenant's installs; try again".into(),
        }
    };
    let mut installs = store.installs(tenant).await.map_err(|e| failed(&e))?;
    installs.retain(|i| i.status == InstallStatus::Active);
    installs.sort_by(|a, b| a.app_slug.cmp(&b.app_slug));
    let mut agents = Vec::new();
    let mut workflows = Vec::new();
    for install in installs {
        let app = match serving.app(&install.app_slug, &install.version).await {
            Ok(app) => app,
            Err(e) => {
                // A container-image app, or one that no longer loads: not a routing target.
                tracing::debug!(app = %install.app_slug, error = %e, "not routable");
                continue;
            }
        };
        let manifest = app.manifest();
        if manifest.agents.is_empty() {
            continue;
        }
        let key = install.key();
        let edits = store.agent_edits(&key).await.map_err(|e| failed(&e))?;
        for agent in merged_agents(manifest, &edits) {
            let is_default = manifest
                .agents
                .iter()
                .any(|a| a.id == agent.id && a.is_default);
            agents.push(Candidate {
                app: install.app_slug.clone(),
                agent: agent.id,
                name: agent.display_name,
                routing_hints: agent.routing_hints,
                is_default,
            });
        }
        let overrides = store
            .workflow_overrides(&key)
            .await
            .map_err(|e| failed(&e))?;
        for workflow in merged_workflows(manifest, &overrides) {
            let tools_met = workflow
                .tools_required
                .iter()
                .all(|t| manifest.tool(t).is_some());
            let on_channel = workflow.channels.is_empty()
                || workflow.channels.iter().any(|c| c == "*" || c == channel);
            if tools_met && on_channel {
                workflows.push(CandidateWorkflow {
                    app: install.app_slug.clone(),
                    workflow,
                });
            }
        }
    }
    Ok((agents, workflows))
}

/// Whether choosing `chosen` moves a conversation that is with `current` to another agent.
fn switches(current: Option<(&str, &str)>, chosen: &Candidate) -> bool {
    current.is_some_and(|(app, agent)| app != chosen.app || agent != chosen.agent)
}

fn contains(haystack: &str, phrase: &str) -> bool {
    let phrase = phrase.trim().to_lowercase();
    !phrase.is_empty() && haystack.contains(&phrase)
}

/// The default agent of `app` among `agents` (or its first).
fn default_of<'a>(agents: &'a [Candidate], app: &str) -> Option<&'a Candidate> {
    agents
        .iter()
        .filter(|c| c.app == app)
        .max_by_key(|c| c.is_default)
}

/// The deterministic decision, used when the model cannot decide:
///
/// 1. A workflow is out when one of its `non_triggers` occurs in the message (case-insensitive);
///    the others score the number of their `triggers` that occur. The best score above zero
///    wins (a tie goes to the conversation's current app, then to the app and workflow ids in
///    alphabetical order), and its app's default agent answers.
/// 2. Otherwise a follow-up stays with the agent the conversation is with.
/// 3. Otherwise the agent whose `routing_hints` share the most words of four letters or more
///    with the message, when one shares any.
/// 4. Otherwise the default agent of the first app in alphabetical order.
#[must_use]
pub fn fallback(
    message: &str,
    agents: &[Candidate],
    workflows: &[CandidateWorkflow],
    current: Option<(&str, &str)>,
) -> Option<Choice> {
    let text = message.to_lowercase();
    let choice = |c: &Candidate, workflow: Option<String>, reason: String| Choice {
        app: c.app.clone(),
        agent: c.agent.clone(),
        workflow,
        switched: switches(current, c),
        decided_by: DecidedBy::Fallback,
        reason,
    };
    let mut best: Option<(usize, bool, &CandidateWorkflow)> = None;
    for w in workflows {
        if w.workflow.non_triggers.iter().any(|n| contains(&text, n)) {
            continue;
        }
        let score = w
            .workflow
            .triggers
            .iter()
            .filter(|t| contains(&text, t))
            .count();
        if score == 0 {
            continue;
        }
        let is_current = current.is_some_and(|(app, _)| app == w.app);
        let better = match best {
            None => true,
            Some((s, cur, _)) => score > s || (score == s && is_current && !cur),
        };
        if better {
            best = Some((score, is_current, w));
        }
    }
    if let Some((score, _, w)) = best
        && let Some(agent) = default_of(agents, &w.app)
    {
        return Some(choice(
            agent,
            Some(w.workflow.id.clone()),
            format!(
                "{score} trigger(s) of workflow `{}` of `{}` occur in the message",
                w.workflow.id, w.app
            ),
        ));
    }
    if let Some((app, agent)) = current
        && let Some(c) = agents.iter().find(|c| c.app == app && c.agent == agent)
    {
        return Some(choice(
            c,
            None,
            "a follow-up stays with the conversation's agent".into(),
        ));
    }
    let words: Vec<&str> = text
        .split(|ch: char| !ch.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4)
        .collect();
    let hinted = agents
        .iter()
        .map(|c| {
            let hints = c.routing_hints.as_deref().unwrap_or("").to_lowercase();
            let shared = words.iter().filter(|w| hints.contains(**w)).count();
            (shared, c)
        })
        .filter(|(shared, _)| *shared > 0)
        .max_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| (&b.1.app, &b.1.agent).cmp(&(&a.1.app, &a.1.agent)))
        });
    if let Some((shared, c)) = hinted {
        return Some(choice(
            c,
            None,
            format!("its routing hints share {shared} word(s) with the message"),
        ));
    }
    let first = agents.first()?;
    let agent = default_of(agents, &first.app)?;
    Some(choice(
        agent,
        None,
        "no workflow or hint matched: the first app's default agent".into(),
    ))
}

/// The model's answer.
#[derive(Debug, Deserialize)]
struct ModelChoice {
    app: String,
    agent: String,
    #[serde(default)]
    workflow: Option<String>,
    #[serde(default)]
    reason: Option<String>,
}

const INSTRUCTIONS: &str = "You route a user's message to one agent of the apps the user's \
organisation installed. Choose the agent best placed to answer. Workflows describe what each \
app does: a trigger is a cue that the workflow applies, a non-trigger a cue that it does not. \
When the conversation is already with an agent, keep it unless the message clearly belongs \
elsewhere. Answer with one JSON object and nothing else: {\"app\": ..., \"agent\": ..., \
\"workflow\": <a workflow id or null>, \"reason\": <one sentence>}.";

/// Decides which agent answers `message` in a conversation on `channel` that is with
/// `current` now.
pub async fn route(
    serving: &Serving,
    tenant: &Actor,
    message: &str,
    channel: &str,
    current: Option<(&str, &str)>,
) -> Result<Choice, RunError> {
    let (agents, workflows) = candidates(serving, tenant, channel).await?;
    decide(serving, tenant, message, current, &agents, &workflows).await
}

/// [`route`] over candidates already found.
pub async fn decide(
    serving: &Serving,
    tenant: &Actor,
    message: &str,
    current: Option<(&str, &str)>,
    agents: &[Candidate],
    workflows: &[CandidateWorkflow],
) -> Result<Choice, RunError> {
    if agents.is_empty() {
        return Err(RunError {
            reason: "no app of this tenant has an agent to talk to: install one with agents".into(),
        });
    }
    if let [only] = agents {
        let workflow = fallback(message, agents, workflows, current).and_then(|c| c.workflow);
        return Ok(Choice {
            app: only.app.clone(),
            agent: only.agent.clone(),
            workflow,
            switched: switches(current, only),
            decided_by: DecidedBy::OnlyCandidate,
            reason: "the only agent of the tenant's apps".into(),
        });
    }
    let why_not = match ask_the_model(serving, tenant, message, current, agents, workflows).await {
        Ok(choice) => return Ok(choice),
        Err(why) => why,
    };
    let mut choice = fallback(message, agents, workflows, current).ok_or_else(|| RunError {
        reason: "no agent could be chosen".into(),
    })?;
    choice.reason = format!("{} (the orchestrator model {why_not})", choice.reason);
    Ok(choice)
}

/// The model's choice, or why there is none (to complete "the orchestrator model ...").
async fn ask_the_model(
    serving: &Serving,
    tenant: &Actor,
    message: &str,
    current: Option<(&str, &str)>,
    agents: &[Candidate],
    workflows: &[CandidateWorkflow],
) -> Result<Choice, String> {
    let Some(chat) = serving.services().chat() else {
        return Err("is not configured on this host".into());
    };
    let route = llm_roles::route(serving.registry().store(), tenant, Role::Orchestrator)
        .await
        .map_err(|e| format!("could not be read: {e}"))?;
    let listed: Vec<Value> = workflows
        .iter()
        .map(|w| {
            json!({
                "app": w.app, "id": w.workflow.id, "name": w.workflow.name,
                "intent": w.workflow.intent, "triggers": w.workflow.triggers,
                "non_triggers": w.workflow.non_triggers,
            })
        })
        .collect();
    let question = json!({
        "message": message,
        "current": current.map(|(app, agent)| json!({"app": app, "agent": agent})),
        "agents": agents,
        "workflows": listed,
    });
    let mut params = Map::new();
    params.insert("response_format".into(), json!({"type": "json_object"}));
    params.insert("temperature".into(), json!(0));
    let request = ChatRequest {
        messages: vec![
            json!({"role": "system", "content": INSTRUCTIONS}),
            json!({"role": "user", "content": question.to_string()}),
        ],
        params,
    };
    let completed = chat
        .gateway
        .chat(&route.selection(false), &request)
        .await
        .map_err(|e| format!("failed: {e}"))?;
    chat.meter(tenant, &completed, None, None).await;
    let outcome = &completed.outcome;
    let text = outcome
        .message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let answer: ModelChoice =
        serde_json::from_str(text.trim()).map_err(|e| format!("answered no JSON choice ({e})"))?;
    let chosen = agents
        .iter()
        .find(|c| c.app == answer.app && c.agent == answer.agent)
        .ok_or_else(|| {
            format!(
                "chose `{}:{}`, which is not a candidate",
                answer.app, answer.agent
            )
        })?;
    let workflow = answer.workflow.filter(|id| {
        workflows
            .iter()
            .any(|w| w.app == chosen.app && &w.workflow.id == id)
    });
    Ok(Choice {
        app: chosen.app.clone(),
        agent: chosen.agent.clone(),
        workflow,
        switched: switches(current, chosen),
        decided_by: DecidedBy::Model,
        reason: answer
            .reason
            .unwrap_or_else(|| "the orchestrator model chose it".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(app: &str, agent: &str, hints: Option<&str>, is_default: bool) -> Candidate {
        Candidate {
            app: app.into(),
            agent: agent.into(),
            name: agent.into(),
            routing_hints: hints.map(str::to_owned),
            is_default,
        }
    }

    fn workflow(
        app: &str,
        id: &str,
        triggers: &[&str],
        non_triggers: &[&str],
    ) -> CandidateWorkflow {
        CandidateWorkflow {
            app: app.into(),
            workflow: InstalledWorkflow {
                id: id.into(),
                name: id.into(),
                intent: "x".into(),
                flow: vec!["x".into()],
                triggers: triggers.iter().map(|t| (*t).to_owned()).collect(),
                non_triggers: non_triggers.iter().map(|t| (*t).to_owned()).collect(),
                specifics: None,
                tools_required: Vec::new(),
                channels: vec!["*".into()],
                overridden: Vec::new(),
            },
        }
    }

    #[test]
    fn the_fallback_follows_triggers_non_triggers_the_current_agent_and_hints() {
        let agents = [
            agent("books", "clerk", Some("ledgers, bookkeeping entries"), true),
            agent("books", "auditor", None, false),
            agent(
                "invoices",
                "desk",
                Some("invoices and payment reminders"),
                true,
            ),
        ];
        let workflows = [
            workflow(
                "invoices",
                "chase",
                &["overdue invoice", "reminder"],
                &["refund"],
            ),
            workflow("books", "entry", &["book an entry", "ledger"], &[]),
        ];
        let pick = |message: &str, current| {
            let c = fallback(message, &agents, &workflows, current).unwrap();
            (c.app, c.agent, c.workflow)
        };
        let chase = (
            "invoices".to_owned(),
            "desk".to_owned(),
            Some("chase".to_owned()),
        );
        assert_eq!(pick("Send a reminder for the overdue invoice", None), chase);
        assert_eq!(
            pick("SEND A REMINDER", Some(("books", "auditor"))),
            chase,
            "any case; a trigger moves the conversation"
        );
        // A non-trigger takes the workflow out; a follow-up then stays where it is.
        assert_eq!(
            pick("reminder about my refund", Some(("books", "auditor"))),
            ("books".into(), "auditor".into(), None)
        );
        // Equal scores: the current app wins.
        assert_eq!(
            pick("ledger reminder", Some(("books", "clerk"))),
            ("books".into(), "clerk".into(), Some("entry".into()))
        );
        // No workflow: routing hints, then the first app's default agent.
        assert_eq!(
            pick("bookkeeping question", None),
            ("books".into(), "clerk".into(), None)
        );
        assert_eq!(
            pick("payment please", None),
            ("invoices".into(), "desk".into(), None)
        );
        assert_eq!(pick("hello", None), ("books".into(), "clerk".into(), None));
        assert!(fallback("hello", &[], &workflows, None).is_none());
    }
}

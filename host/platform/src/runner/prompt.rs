//! The system prompt of a run: the agent's own, then the workflows that apply.

use crate::registry::{InstalledAgent, InstalledWorkflow};

/// The workflows of an install that apply to a run of `agent` on `channel`: those whose
/// `tools_required` the agent can call and whose `channels` include the channel (`*`: all; a
/// run on no channel takes every channel's). The orchestrator's choice, when it made one, is
/// the only one.
#[must_use]
pub fn applicable_workflows<'a>(
    workflows: &'a [InstalledWorkflow],
    offered: &[&str],
    channel: Option<&str>,
    chosen: Option<&str>,
) -> Vec<&'a InstalledWorkflow> {
    workflows
        .iter()
        .filter(|w| chosen.is_none_or(|id| w.id == id))
        .filter(|w| {
            w.tools_required
                .iter()
                .all(|t| offered.contains(&t.as_str()))
        })
        .filter(|w| {
            channel.is_none_or(|c| {
                w.channels.is_empty() || w.channels.iter().any(|x| x == "*" || x == c)
            })
        })
        .collect()
}

/// The system prompt: the agent's, then each workflow's intent, steps and specifics.
#[must_use]
pub fn system_prompt(agent: &InstalledAgent, workflows: &[&InstalledWorkflow]) -> String {
    let mut prompt = agent.system_prompt.clone();
    for w in workflows {
        prompt.push_str(&format!(
            "\n\n## Workflow: {}\nWhen: {}\nSteps:",
            w.name, w.intent
        ));
        for (i, step) in w.flow.iter().enumerate() {
            prompt.push_str(&format!("\n{}. {step}", i + 1));
        }
        if let Some(specifics) = &w.specifics {
            prompt.push_str(&format!("\nSpecifics: {specifics}"));
        }
    }
    prompt
}

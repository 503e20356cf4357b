//! `emits` and `subscribes_to`.

use std::collections::{HashMap, HashSet};

use super::app_slug;
use super::tools::each;
use crate::model::{Agent, AgentForm, Subscription, SubscriptionTarget};
use crate::problem::Code;
use crate::read::{Cx, Obj, listing};
use crate::rules;

/// Longest event name.
pub const MAX_EVENT_NAME: usize = 64;

const EVENT_RULE: &str =
    "lowercase letters, digits and underscores, starting with a letter, at most 64 characters";

pub(super) fn emits(cx: &mut Cx, parent: &mut Obj<'_>) -> Vec<String> {
    let Some(node) = parent.get("emits") else {
        return Vec::new();
    };
    let path = parent.at("emits");
    let entries = cx.string_list(&path, node);
    for (p, n, name) in &entries {
        if !rules::is_event_name(name) || name.len() > MAX_EVENT_NAME {
            cx.error(
                p,
                n.pos,
                Code::Pattern,
                format!("`{name}` is not a valid event name: {EVENT_RULE}"),
            );
        }
    }
    cx.no_duplicates(&entries, "event");
    entries.into_iter().map(|(_, _, v)| v.to_owned()).collect()
}

pub(super) fn subscribes_to(
    cx: &mut Cx,
    parent: &mut Obj<'_>,
    form: AgentForm,
    agents: &[Agent],
) -> Vec<Subscription> {
    let mut id_set: HashSet<&str> = HashSet::new();
    let agent_ids: Vec<&str> = agents
        .iter()
        .map(|a| a.id.as_str())
        .filter(|id| id_set.insert(id))
        .collect();
    // Heartbeat slug -> the agents that declare it.
    let mut heartbeat_owners: HashMap<&str, Vec<&str>> = HashMap::new();
    for agent in agents {
        for heartbeat in &agent.heartbeats {
            let owners = heartbeat_owners.entry(heartbeat.slug.as_str()).or_default();
            if !owners.contains(&agent.id.as_str()) {
                owners.push(&agent.id);
            }
        }
    }
    let read = each(cx, parent, "subscribes_to", None, |cx, mut obj| {
        let emitter = obj
            .req_string(cx, "emitter_app", "the slug of the emitting app")
            .map(|(node, app)| {
                app_slug(cx, &obj.at("emitter_app"), node, app);
                app.to_owned()
            });
        let event = obj
            .req_string(cx, "event_name", "the event's name")
            .map(|(node, name)| {
                if !rules::is_event_name(name) || name.len() > MAX_EVENT_NAME {
                    cx.error(
                        &obj.at("event_name"),
                        node.pos,
                        Code::Pattern,
                        format!("`{name}` is not a valid event name: {EVENT_RULE}"),
                    );
                }
                name.to_owned()
            });
        let agent = obj.opt_string(cx, "target_agent");
        let heartbeat = obj.opt_string(cx, "target_heartbeat");
        let mut target = None;
        match (agent, heartbeat) {
            (Some(_), Some((node, _))) => {
                let pos = obj.key_pos("target_heartbeat").unwrap_or(node.pos);
                cx.error(
                    &obj.at("target_heartbeat"),
                    pos,
                    Code::MutuallyExclusive,
                    "give either `target_agent` or `target_heartbeat`, not both",
                );
            }
            (None, None) => {
                if !obj.has("target_agent") && !obj.has("target_heartbeat") {
                    cx.error(&obj.path, obj.pos, Code::Required, "one of `target_agent` (an agent to invoke) or `target_heartbeat` (a heartbeat to wake) is required");
                } else {
                    cx.error(
                        &obj.path,
                        obj.pos,
                        Code::Required,
                        "`target_agent` or `target_heartbeat` must have a value",
                    );
                }
            }
            (Some((node, id)), None) => {
                if agent_ids.contains(&id) {
                    target = Some(SubscriptionTarget::Agent(id.to_owned()));
                } else {
                    let declared = match form {
                        AgentForm::None => "the app declares no agent".to_owned(),
                        AgentForm::Singular => "the singular agent's id is `default`".to_owned(),
                        AgentForm::Plural => format!("declared: {}", listing(&agent_ids)),
                    };
                    cx.error(
                        &obj.at("target_agent"),
                        node.pos,
                        Code::UndeclaredReference,
                        format!("agent `{id}` is not declared ({declared})"),
                    );
                }
            }
            (None, Some((node, reference))) => {
                // `slug` names a heartbeat of any agent; `agent:slug` picks the agent when
                // two agents use the same slug.
                let (agent_filter, slug) = match reference.split_once(':') {
                    Some((a, s)) => (Some(a), s),
                    None => (None, reference),
                };
                let owners: Vec<&str> = heartbeat_owners
                    .get(slug)
                    .map(|all| {
                        all.iter()
                            .copied()
                            .filter(|a| agent_filter.is_none_or(|f| f == *a))
                            .collect()
                    })
                    .unwrap_or_default();
                let path = obj.at("target_heartbeat");
                match owners.as_slice() {
                    [owner] => target = Some(SubscriptionTarget::Heartbeat { agent: (*owner).to_owned(), slug: slug.to_owned() }),
                    [] => {
                        let all: Vec<String> = agents.iter().flat_map(|a| a.heartbeats.iter().map(move |h| format!("{}:{}", a.id, h.slug))).collect();
                        let declared = if all.is_empty() { "no agent declares a heartbeat".to_owned() } else { format!("declared: {}", listing(&all)) };
                        cx.error(&path, node.pos, Code::UndeclaredReference, format!("heartbeat `{reference}` is not declared by any agent ({declared})"));
                    }
                    many => cx.error(&path, node.pos, Code::UndeclaredReference, format!("heartbeat `{slug}` is declared by several agents ({}); write `<agent>:{slug}`", listing(many))),
                }
            }
        }
        let (path, pos) = (obj.path.clone(), obj.pos);
        obj.finish(
            cx,
            &[
                "emitter_app",
                "event_name",
                "target_agent",
                "target_heartbeat",
            ],
        );
        let sub = match (emitter, event, target) {
            (Some(emitter_app), Some(event_name), Some(target)) => Some(Subscription {
                emitter_app,
                event_name,
                target,
            }),
            _ => None,
        };
        (sub, path, pos)
    });
    let mut out: Vec<Subscription> = Vec::new();
    let mut seen: HashSet<Subscription> = HashSet::new();
    for (sub, path, pos) in read {
        let Some(sub) = sub else { continue };
        if !seen.insert(sub.clone()) {
            cx.error(
                &path,
                pos,
                Code::Duplicate,
                format!(
                    "the subscription to `{}` from `{}` with this target is listed more than once",
                    sub.event_name, sub.emitter_app
                ),
            );
        } else {
            out.push(sub);
        }
    }
    out
}

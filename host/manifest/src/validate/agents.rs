//! `agent` (singular) and `agents[]` (plural), with team and vision.

use std::collections::HashSet;

use super::heartbeat;
use super::tools::{KeyAt, each, quiet_strings, unique_keys};
use super::{Declared, names};
use crate::model::{Agent, AgentForm, AutonomyMode, Vision};
use crate::problem::Code;
use crate::read::{Cx, Obj, listing};
use crate::rules;
use crate::tree::{Node, Value};

/// Most agents in the plural form.
pub const MAX_AGENTS: usize = 8;
/// The id the platform gives the singular agent.
pub const SINGULAR_AGENT_ID: &str = "default";

const AGENT_FIELDS: &[&str] = &[
    "id",
    "name",
    "system_prompt",
    "allowed_skills",
    "tools_allowed",
    "is_default",
    "routing_hints",
    "team",
    "heartbeats",
    "vision",
];

pub(super) fn agents(
    cx: &mut Cx,
    parent: &mut Obj<'_>,
    declared: &Declared,
) -> (AgentForm, Vec<Agent>) {
    let singular = parent.get("agent");
    let plural = parent.get("agents");
    if singular.is_some()
        && let Some(node) = plural
    {
        cx.error(
            &parent.at("agents"),
            parent.key_pos("agents").unwrap_or(node.pos),
            Code::MutuallyExclusive,
            "`agent` and `agents` are mutually exclusive: use `agent` for a single agent or `agents` for up to 8 specialists",
        );
    }
    if let Some(node) = singular {
        let Some(obj) = Obj::new(cx, parent.at("agent"), node) else {
            return (AgentForm::Singular, Vec::new());
        };
        let agent = agent(cx, obj, declared, false).agent;
        // Both forms present: still check the plural list for its own problems.
        if let Some(node) = plural {
            let _ = plural_agents(cx, parent, node, declared);
        }
        return (AgentForm::Singular, vec![agent]);
    }
    match plural {
        Some(node) => (AgentForm::Plural, plural_agents(cx, parent, node, declared)),
        None => (AgentForm::None, Vec::new()),
    }
}

fn plural_agents(
    cx: &mut Cx,
    parent: &mut Obj<'_>,
    node: &Node,
    declared: &Declared,
) -> Vec<Agent> {
    let path = parent.at("agents");
    let read = each(
        cx,
        parent,
        "agents",
        Some((MAX_AGENTS, "agents")),
        |cx, obj| agent(cx, obj, declared, true),
    );
    unique_keys(cx, read.iter().map(|a| a.key.as_ref()), "agent id");
    let defaults = read.iter().filter(|a| a.agent.is_default).count();
    // A non-list `agents` was already reported as a type problem.
    if defaults != 1 && matches!(node.value, Value::Seq(_)) {
        let found = if defaults == 0 {
            "none has".to_owned()
        } else {
            format!("{defaults} have")
        };
        cx.error(
            &path,
            node.pos,
            Code::ExactlyOneDefault,
            format!("exactly one agent must have `is_default: true` ({found} it)"),
        );
    }
    let mut id_set: HashSet<&str> = HashSet::new();
    let ids: Vec<&str> = read
        .iter()
        .map(|a| a.agent.id.as_str())
        .filter(|id| !id.is_empty() && id_set.insert(id))
        .collect();
    for (i, a) in read.iter().enumerate() {
        let agent_path = path.index(i);
        let Some(team_node) = a.team else { continue };
        let team_path = agent_path.field("team");
        for (p, n, member) in quiet_strings(&team_path, team_node) {
            if member == a.agent.id {
                cx.error(
                    &p,
                    n.pos,
                    Code::SelfReference,
                    format!("agent `{member}` cannot list itself in its team"),
                );
            } else if !id_set.contains(member) {
                cx.error(
                    &p,
                    n.pos,
                    Code::UndeclaredReference,
                    format!(
                        "team member `{member}` is not a declared agent (declared: {})",
                        listing(&ids)
                    ),
                );
            }
        }
    }
    read.into_iter().map(|a| a.agent).collect()
}

struct ReadAgent<'n> {
    agent: Agent,
    key: Option<KeyAt<'n>>,
    team: Option<&'n Node>,
}

fn agent<'n>(cx: &mut Cx, mut obj: Obj<'n>, declared: &Declared, plural: bool) -> ReadAgent<'n> {
    let mut agent = Agent {
        id: SINGULAR_AGENT_ID.to_owned(),
        name: String::new(),
        system_prompt: String::new(),
        allowed_skills: None,
        tools_allowed: None,
        is_default: !plural,
        routing_hints: None,
        team: Vec::new(),
        heartbeats: Vec::new(),
        vision: None,
    };
    let mut key = None;
    if plural {
        if let Some((node, id)) =
            obj.req_string(cx, "id", "a lowercase slug starting with a letter")
        {
            let path = obj.at("id");
            if cx.length(&path, node, id, 1, 64) && !rules::is_letter_slug(id) {
                cx.error(&path, node.pos, Code::Pattern, format!("`{id}` is not a valid agent id: lowercase letters, digits, `-` and `_`, starting with a letter"));
            }
            agent.id = id.to_owned();
            key = Some((id.to_owned(), path, node));
        }
    } else {
        for field in ["id", "is_default"] {
            if let Some(node) = obj.get(field) {
                cx.warning(&obj.at(field), node.pos, Code::Ignored, format!("`{field}` is ignored on the singular `agent`: the platform uses id `{SINGULAR_AGENT_ID}` as the default agent"));
            }
        }
    }
    if let Some((node, name)) = obj.req_string(cx, "name", "the agent's display name") {
        cx.length(&obj.at("name"), node, name, 1, 80);
        agent.name = name.to_owned();
    }
    if let Some((node, prompt)) = obj.req_string(cx, "system_prompt", "the agent's system prompt") {
        cx.length(&obj.at("system_prompt"), node, prompt, 1, 20000);
        agent.system_prompt = prompt.to_owned();
    }
    if let Some(node) = obj.get("allowed_skills") {
        let skills = names(
            cx,
            &obj.at("allowed_skills"),
            node,
            "skill",
            |s| !s.trim().is_empty() && !s.contains(char::is_whitespace),
            "a non-empty name without white space",
        );
        agent.allowed_skills = Some(skills);
    }
    if let Some(node) = obj.get("tools_allowed") {
        let path = obj.at("tools_allowed");
        let tools = names(
            cx,
            &path,
            node,
            "tool",
            rules::is_tool_name,
            "lowercase letters, digits and underscores",
        );
        let tool_set = declared.tool_set();
        for (p, n, tool) in quiet_strings(&path, node) {
            if !tool_set.contains(tool) {
                let list = if declared.tools.is_empty() {
                    "the manifest declares no tools".to_owned()
                } else {
                    format!("declared: {}", listing(&declared.tools))
                };
                cx.error(
                    &p,
                    n.pos,
                    Code::UndeclaredReference,
                    format!("tool `{tool}` is not declared in this app's tools ({list})"),
                );
            }
        }
        agent.tools_allowed = Some(tools);
    }
    if plural {
        agent.is_default = obj.bool_or(cx, "is_default", false);
    }
    agent.routing_hints = obj.opt_text(cx, "routing_hints", 2000);
    let mut team = None;
    if let Some(node) = obj.get("team") {
        let path = obj.at("team");
        if plural {
            agent.team = names(
                cx,
                &path,
                node,
                "team member",
                rules::is_letter_slug,
                "an agent id",
            );
            team = Some(node);
        } else {
            cx.error(&path, obj.key_pos("team").unwrap_or(node.pos), Code::NotAllowed, "`team` is only allowed in the plural `agents` form; the singular agent has no team");
        }
    }
    agent.heartbeats = heartbeat::heartbeats(cx, &mut obj);
    agent.vision = vision(cx, &mut obj);
    obj.finish(cx, AGENT_FIELDS);
    ReadAgent { agent, key, team }
}

fn vision(cx: &mut Cx, parent: &mut Obj<'_>) -> Option<Vision> {
    let node = parent.get("vision")?;
    let mut obj = Obj::new(cx, parent.at("vision"), node)?;
    let mut vision = Vision {
        text: String::new(),
        success_criteria: Vec::new(),
        autonomy_mode: AutonomyMode::Supervised,
        budget_max_goals: 50,
        budget_max_cost_cents: None,
    };
    if let Some((node, text)) = obj.req_string(cx, "text", "the goal the agent pursues") {
        cx.length(&obj.at("text"), node, text, 1, 4000);
        vision.text = text.to_owned();
    }
    vision.success_criteria = super::text_list(
        cx,
        &mut obj,
        "success_criteria",
        20,
        1000,
        "success criteria",
    );
    if let Some((node, mode)) = obj.opt_string(cx, "autonomy_mode") {
        match mode {
            "supervised" => vision.autonomy_mode = AutonomyMode::Supervised,
            "full_autonomy" => vision.autonomy_mode = AutonomyMode::FullAutonomy,
            other => cx.error(
                &obj.at("autonomy_mode"),
                node.pos,
                Code::InvalidValue,
                format!("must be `supervised` or `full_autonomy` (got `{other}`)"),
            ),
        }
    }
    if let Some(node) = obj.get("budget_max_goals")
        && let Some(goals) = cx.integer(&obj.at("budget_max_goals"), node, 1, 500)
    {
        vision.budget_max_goals = u32::try_from(goals).unwrap_or(50);
    }
    if let Some(node) = obj.get("budget_max_cost_cents")
        && let Some(cents) = cx.integer(&obj.at("budget_max_cost_cents"), node, 0, i64::MAX)
    {
        vision.budget_max_cost_cents = u64::try_from(cents).ok();
    }
    obj.finish(
        cx,
        &[
            "text",
            "success_criteria",
            "autonomy_mode",
            "budget_max_goals",
            "budget_max_cost_cents",
        ],
    );
    Some(vision)
}

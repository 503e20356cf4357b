//! `agent`, `agents`, team and vision.

use atrium_manifest::{AgentForm, AutonomyMode, Code};
use serde_json::{Value, json};

use crate::{fails, fails_at, minimal, ok, warns, with, with_agents};

fn agent(id: &str) -> Value {
    json!({ "id": id, "name": id, "system_prompt": "You help." })
}

#[test]
fn singular_agent_becomes_default() {
    let m = ok(&with(
        minimal(),
        "/agent",
        json!({ "name": "Helper", "system_prompt": "You help." }),
    ));
    assert_eq!(m.agent_form, AgentForm::Singular);
    assert_eq!(m.agents.len(), 1);
    assert_eq!(m.agents[0].id, "default");
    assert!(m.agents[0].is_default);
    assert_eq!(m.default_agent().map(|a| a.id.as_str()), Some("default"));
    assert!(m.agents[0].tools_allowed.is_none() && m.agents[0].allowed_skills.is_none());
}

#[test]
fn singular_ignores_id_and_may_not_have_a_team() {
    warns(
        &with(
            minimal(),
            "/agent",
            json!({ "id": "x", "name": "H", "system_prompt": "p" }),
        ),
        "agent.id",
        Code::Ignored,
    );
    fails_at(
        &with(
            minimal(),
            "/agent",
            json!({ "name": "H", "system_prompt": "p", "team": ["x"] }),
        ),
        "agent.team",
        Code::NotAllowed,
    );
}

#[test]
fn forms_are_mutually_exclusive() {
    let v = with(
        with(
            minimal(),
            "/agent",
            json!({ "name": "H", "system_prompt": "p" }),
        ),
        "/agents",
        json!([with(agent("a"), "/is_default", json!(true))]),
    );
    fails_at(&v, "agents", Code::MutuallyExclusive);
}

#[test]
fn plural_needs_exactly_one_default() {
    let m = ok(&with_agents());
    assert_eq!(m.agent_form, AgentForm::Plural);
    assert_eq!(m.default_agent().map(|a| a.id.as_str()), Some("lead"));
    fails_at(
        &with(minimal(), "/agents", json!([agent("a"), agent("b")])),
        "agents",
        Code::ExactlyOneDefault,
    );
    let two = json!([
        with(agent("a"), "/is_default", json!(true)),
        with(agent("b"), "/is_default", json!(true))
    ]);
    fails_at(
        &with(minimal(), "/agents", two),
        "agents",
        Code::ExactlyOneDefault,
    );
    fails_at(
        &with(minimal(), "/agents", json!([])),
        "agents",
        Code::ExactlyOneDefault,
    );
}

#[test]
fn at_most_eight_agents() {
    let mut list: Vec<Value> = (0..8).map(|i| agent(&format!("a{i}"))).collect();
    list[0] = with(list[0].clone(), "/is_default", json!(true));
    ok(&with(minimal(), "/agents", json!(list.clone())));
    list.push(agent("a8"));
    fails_at(
        &with(minimal(), "/agents", json!(list)),
        "agents",
        Code::Count,
    );
}

#[test]
fn agent_field_rules() {
    let one = |a: Value| {
        with(
            minimal(),
            "/agents",
            json!([with(a, "/is_default", json!(true))]),
        )
    };
    fails_at(
        &one(with(agent("a"), "/id", json!("1a"))),
        "agents[0].id",
        Code::Pattern,
    );
    fails_at(
        &one(with(agent("a"), "/name", json!("n".repeat(81)))),
        "agents[0].name",
        Code::Length,
    );
    ok(&one(with(agent("a"), "/name", json!("n".repeat(80)))));
    fails_at(
        &one(with(agent("a"), "/system_prompt", json!("p".repeat(20001)))),
        "agents[0].system_prompt",
        Code::Length,
    );
    ok(&one(with(
        agent("a"),
        "/system_prompt",
        json!("p".repeat(20000)),
    )));
    fails_at(
        &one(with(agent("a"), "/routing_hints", json!("r".repeat(2001)))),
        "agents[0].routing_hints",
        Code::Length,
    );
    let mut no_id = agent("a");
    no_id.as_object_mut().expect("object").remove("id");
    fails_at(&one(no_id), "agents[0].id", Code::Required);
    fails(
        &with(
            minimal(),
            "/agents",
            json!([with(agent("a"), "/is_default", json!(true)), agent("a")]),
        ),
        &[("agents[1].id", Code::Duplicate)],
    );
}

#[test]
fn tools_allowed_names_declared_tools() {
    let m = ok(&with(
        with_agents(),
        "/agents/1/tools_allowed",
        json!(["lookup"]),
    ));
    assert_eq!(
        m.agents[1].tools_allowed.as_deref(),
        Some(&["lookup".to_owned()][..])
    );
    fails_at(
        &with(
            with_agents(),
            "/agents/1/tools_allowed",
            json!(["delete_all"]),
        ),
        "agents[1].tools_allowed[0]",
        Code::UndeclaredReference,
    );
    let m = ok(&with(
        with_agents(),
        "/agents/1/allowed_skills",
        json!(null),
    ));
    assert!(m.agents[1].allowed_skills.is_none());
    let m = ok(&with(with_agents(), "/agents/1/allowed_skills", json!([])));
    assert_eq!(m.agents[1].allowed_skills, Some(vec![]));
}

#[test]
fn team_rules() {
    ok(&with_agents());
    fails_at(
        &with(with_agents(), "/agents/0/team", json!(["lead"])),
        "agents[0].team[0]",
        Code::SelfReference,
    );
    fails_at(
        &with(with_agents(), "/agents/0/team", json!(["ghost"])),
        "agents[0].team[0]",
        Code::UndeclaredReference,
    );
    fails_at(
        &with(with_agents(), "/agents/0/team", json!(["helper", "helper"])),
        "agents[0].team[1]",
        Code::Duplicate,
    );
}

#[test]
fn vision_rules() {
    let m = ok(&with(
        with_agents(),
        "/agents/0/vision",
        json!({ "text": "Grow." }),
    ));
    let v = m.agents[0].vision.as_ref().expect("vision");
    assert_eq!(
        (v.autonomy_mode, v.budget_max_goals),
        (AutonomyMode::Supervised, 50)
    );
    let m = ok(&with(
        with_agents(),
        "/agents/0/vision",
        json!({ "text": "Grow.", "autonomy_mode": "full_autonomy", "budget_max_goals": 500, "budget_max_cost_cents": 100 }),
    ));
    assert_eq!(
        m.agents[0].vision.as_ref().map(|v| v.autonomy_mode),
        Some(AutonomyMode::FullAutonomy)
    );
    let vision = |v: Value| with(with_agents(), "/agents/0/vision", v);
    fails_at(&vision(json!({})), "agents[0].vision.text", Code::Required);
    fails_at(
        &vision(json!({ "text": "t".repeat(4001) })),
        "agents[0].vision.text",
        Code::Length,
    );
    let criteria: Vec<String> = (0..21).map(|i| format!("c{i}")).collect();
    fails_at(
        &vision(json!({ "text": "t", "success_criteria": criteria })),
        "agents[0].vision.success_criteria",
        Code::Count,
    );
    fails_at(
        &vision(json!({ "text": "t", "autonomy_mode": "yolo" })),
        "agents[0].vision.autonomy_mode",
        Code::InvalidValue,
    );
    fails_at(
        &vision(json!({ "text": "t", "budget_max_goals": 501 })),
        "agents[0].vision.budget_max_goals",
        Code::OutOfRange,
    );
    fails_at(
        &vision(json!({ "text": "t", "budget_max_cost_cents": 1.5 })),
        "agents[0].vision.budget_max_cost_cents",
        Code::InvalidType,
    );
}

#[test]
fn vision_without_a_project_picker_setting_warns() {
    let v = with(
        with_agents(),
        "/agents/0/vision",
        json!({ "text": "Grow." }),
    );
    warns(&v, "agents[0].vision", Code::Requires);
    let picker = json!([{ "id": "project", "type": "project_picker", "label": "Project" }]);
    let result = crate::validate(&with(v, "/install_settings", picker));
    assert!(
        result.is_valid() && result.problems.is_empty(),
        "{:?}",
        result.problems
    );
}

//! `tools`, `lifecycle`, `workflows`, `cross_app_dependencies`.

use atrium_manifest::Code;
use serde_json::{Value, json};

use crate::{fails, fails_at, minimal, ok, warns, with};

fn with_tool(tool: Value) -> Value {
    with(
        with(
            minimal(),
            "/required_scopes",
            json!(["crm.read", "crm.write"]),
        ),
        "/tools",
        json!([tool]),
    )
}

#[test]
fn tool_fields_and_defaults() {
    let m = ok(&with_tool(
        json!({ "name": "get_customer", "description": "Gets one customer.", "scopes_required": [] }),
    ));
    assert!(m.tools[0].agent_visible);
    let m = ok(&with_tool(
        json!({ "name": "get_customer", "description": "d", "scopes_required": ["crm.read"], "agent_visible": false }),
    ));
    assert!(!m.tools[0].agent_visible);
}

#[test]
fn tool_name_rules() {
    let tool =
        |name: &str| with_tool(json!({ "name": name, "description": "d", "scopes_required": [] }));
    ok(&tool("abc"));
    ok(&tool(&"a".repeat(64)));
    fails_at(&tool("ab"), "tools[0].name", Code::Length);
    fails_at(&tool(&"a".repeat(65)), "tools[0].name", Code::Length);
    fails_at(&tool("Get-Customer"), "tools[0].name", Code::Pattern);
}

#[test]
fn tool_required_fields() {
    fails_at(
        &with_tool(json!({ "name": "abc", "scopes_required": [] })),
        "tools[0].description",
        Code::Required,
    );
    fails_at(
        &with_tool(json!({ "name": "abc", "description": "d" })),
        "tools[0].scopes_required",
        Code::Required,
    );
    fails_at(
        &with_tool(json!({ "name": "abc", "description": "two\nlines", "scopes_required": [] })),
        "tools[0].description",
        Code::Pattern,
    );
}

#[test]
fn scopes_required_is_a_subset_of_required_scopes() {
    fails_at(
        &with_tool(json!({ "name": "abc", "description": "d", "scopes_required": ["crm.delete"] })),
        "tools[0].scopes_required[0]",
        Code::UndeclaredReference,
    );
}

#[test]
fn duplicate_tool_names() {
    let t = json!({ "name": "abc", "description": "d", "scopes_required": [] });
    fails_at(
        &with(minimal(), "/tools", json!([t.clone(), t])),
        "tools[1].name",
        Code::Duplicate,
    );
}

#[test]
fn lifecycle_and_schedules() {
    let m = ok(&with(
        minimal(),
        "/lifecycle",
        json!({ "on_install": true, "schedules": [{ "name": "nightly", "cron": "0  3 * * *" }] }),
    ));
    assert!(m.lifecycle.on_install && !m.lifecycle.on_uninstall);
    assert_eq!(m.lifecycle.schedules[0].cron, "0 3 * * *");
    fails_at(
        &with(minimal(), "/lifecycle/on_install", json!("yes")),
        "lifecycle.on_install",
        Code::InvalidType,
    );
    fails_at(
        &with(
            minimal(),
            "/lifecycle/schedules",
            json!([{ "name": "n", "cron": "0 3 * *" }]),
        ),
        "lifecycle.schedules[0].cron",
        Code::InvalidCron,
    );
    fails_at(
        &with(
            minimal(),
            "/lifecycle/schedules",
            json!([{ "name": "n", "cron": "61 * * * *" }]),
        ),
        "lifecycle.schedules[0].cron",
        Code::InvalidCron,
    );
    fails_at(
        &with(
            minimal(),
            "/lifecycle/schedules",
            json!([{ "cron": "* * * * *" }]),
        ),
        "lifecycle.schedules[0].name",
        Code::Required,
    );
    fails_at(
        &with(
            minimal(),
            "/lifecycle/schedules",
            json!([{ "name": "n", "cron": "* * * * *" }, { "name": "n", "cron": "0 * * * *" }]),
        ),
        "lifecycle.schedules[1].name",
        Code::Duplicate,
    );
}

fn workflow() -> Value {
    json!({ "id": "refund", "name": "Refund", "intent": "The user wants money back.", "flow": ["Check", "Refund"] })
}

#[test]
fn workflow_defaults_and_limits() {
    let m = ok(&with(minimal(), "/workflows", json!([workflow()])));
    assert_eq!(m.workflows[0].channels, vec!["*"]);
    let twenty: Vec<Value> = (0..20)
        .map(|i| with(workflow(), "/id", json!(format!("w{i}"))))
        .collect();
    ok(&with(minimal(), "/workflows", json!(twenty)));
    let many: Vec<Value> = (0..21)
        .map(|i| with(workflow(), "/id", json!(format!("w{i}"))))
        .collect();
    fails_at(
        &with(minimal(), "/workflows", json!(many)),
        "workflows",
        Code::Count,
    );
}

#[test]
fn workflow_field_rules() {
    let one = |w: Value| with(minimal(), "/workflows", json!([w]));
    fails_at(
        &one(with(workflow(), "/id", json!("Refund Flow"))),
        "workflows[0].id",
        Code::Pattern,
    );
    fails_at(
        &one(with(workflow(), "/id", json!("a".repeat(65)))),
        "workflows[0].id",
        Code::Length,
    );
    fails_at(
        &one(with(workflow(), "/flow", json!([]))),
        "workflows[0].flow",
        Code::Count,
    );
    let fifty: Vec<String> = (0..50).map(|i| format!("step {i}")).collect();
    ok(&one(with(workflow(), "/flow", json!(fifty))));
    let fifty_one: Vec<String> = (0..51).map(|i| format!("step {i}")).collect();
    fails_at(
        &one(with(workflow(), "/flow", json!(fifty_one))),
        "workflows[0].flow",
        Code::Count,
    );
    fails_at(
        &one(with(workflow(), "/flow", json!(["x".repeat(501)]))),
        "workflows[0].flow[0]",
        Code::Length,
    );
    ok(&one(with(workflow(), "/flow", json!(["x".repeat(500)]))));
    let t21: Vec<String> = (0..21).map(|i| format!("t{i}")).collect();
    fails_at(
        &one(with(workflow(), "/triggers", json!(t21.clone()))),
        "workflows[0].triggers",
        Code::Count,
    );
    fails_at(
        &one(with(workflow(), "/non_triggers", json!(t21))),
        "workflows[0].non_triggers",
        Code::Count,
    );
    ok(&one(with(
        workflow(),
        "/specifics",
        json!("s".repeat(2000)),
    )));
    fails_at(
        &one(with(workflow(), "/specifics", json!("s".repeat(2001)))),
        "workflows[0].specifics",
        Code::Length,
    );
    fails_at(
        &one(with(workflow(), "/channels", json!(["*", "email"]))),
        "workflows[0].channels",
        Code::MutuallyExclusive,
    );
    ok(&one(with(
        workflow(),
        "/channels",
        json!(["email", "whatsapp"]),
    )));
    fails_at(
        &one(without_key(workflow(), "intent")),
        "workflows[0].intent",
        Code::Required,
    );
    fails(
        &with(minimal(), "/workflows", json!([workflow(), workflow()])),
        &[("workflows[1].id", Code::Duplicate)],
    );
}

fn without_key(mut v: Value, key: &str) -> Value {
    v.as_object_mut().expect("object").remove(key);
    v
}

#[test]
fn workflow_tools_required_unknown_tool_warns() {
    let m = warns(
        &with(
            minimal(),
            "/workflows",
            json!([with(workflow(), "/tools_required", json!(["lookup"]))]),
        ),
        "workflows[0].tools_required[0]",
        Code::UndeclaredReference,
    );
    assert_eq!(m.workflows[0].tools_required, vec!["lookup"]);
}

#[test]
fn cross_app_dependencies() {
    let m = ok(&with(
        minimal(),
        "/cross_app_dependencies",
        json!([{ "app_id": "ledger", "routes": ["post /entries"], "reason": "Books entries." }]),
    ));
    assert_eq!(m.cross_app_dependencies[0].routes, vec!["POST /entries"]);
    fails_at(
        &with(
            minimal(),
            "/cross_app_dependencies",
            json!([{ "app_id": "Ledger" }]),
        ),
        "cross_app_dependencies[0].app_id",
        Code::Pattern,
    );
    fails_at(
        &with(
            minimal(),
            "/cross_app_dependencies",
            json!([{ "app_id": "ledger", "routes": ["FETCH /x"] }]),
        ),
        "cross_app_dependencies[0].routes[0]",
        Code::Pattern,
    );
    fails_at(
        &with(
            minimal(),
            "/cross_app_dependencies",
            json!([{ "app_id": "demo-app" }]),
        ),
        "cross_app_dependencies[0].app_id",
        Code::SelfReference,
    );
    fails_at(
        &with(
            minimal(),
            "/cross_app_dependencies",
            json!([{ "app_id": "ledger" }, { "app_id": "ledger" }]),
        ),
        "cross_app_dependencies[1].app_id",
        Code::Duplicate,
    );
    fails_at(
        &with(
            minimal(),
            "/cross_app_dependencies",
            json!([{ "routes": [] }]),
        ),
        "cross_app_dependencies[0].app_id",
        Code::Required,
    );
}

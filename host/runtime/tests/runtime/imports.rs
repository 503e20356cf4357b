//! Every import of the atrium:app world, through the probe's `platform` tool.

use std::sync::Arc;

use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{ChainContext, ToolCallError};
use serde_json::json;

use crate::common::*;

#[tokio::test]
async fn context_names_the_tenant_app_version_and_chain() {
    let p = platform();
    let info = op(&probe(), &inv(&p), json!({"op": "info"})).await;
    assert_eq!(info["tenant_id"], "tenant-a");
    assert_eq!(info["app_id"], "probe");
    assert_eq!(info["app_version"], "1.0.0");
    assert_eq!(info["chain_depth"], 1);
    assert_eq!(info["public_route"], false);
    assert!(info["call_id"].as_str().unwrap().starts_with("call-"));
}

#[tokio::test]
async fn tools_call_checks_the_tool_and_the_install_scopes() {
    let p = Arc::new(
        MemoryPlatform::default()
            .with_tool("crm.lookup", &["crm.read"], json!({"name": "Ada"}))
            .with_tool("probe.stats", &["probe.read"], json!({"count": 3})),
    );
    let app = probe();
    let unknown = op(&app, &inv(&p), json!({"op": "tool", "name": "nope"})).await;
    assert_eq!(unknown["err"]["decision"], "unknown_tool");

    let denied = op(&app, &inv(&p), json!({"op": "tool", "name": "probe.stats"})).await;
    assert_eq!(denied["err"]["decision"], "scope_denied");
    assert_eq!(denied["err"]["needed_scopes"], json!(["probe.read"]));
    // A scope the manifest never asked for: the message says to declare it.
    let undeclared = op(
        &app,
        &inv(&p).with_scopes(["probe.read"]),
        json!({"op": "tool", "name": "crm.lookup"}),
    )
    .await;
    assert_eq!(undeclared["err"]["needed_scopes"], json!(["crm.read"]));
    assert!(
        undeclared["err"]["message"]
            .as_str()
            .unwrap()
            .contains("add crm.read to required_scopes")
    );

    let ok = op(
        &app,
        &inv(&p).with_scopes(["probe.read"]),
        json!({"op": "tool", "name": "probe.stats", "args": {"x": 1}}),
    )
    .await;
    assert_eq!(ok["ok"], json!({"count": 3}));
    assert_eq!(
        p.tool_calls(),
        vec![("probe.stats".to_owned(), json!({"x": 1}))]
    );

    let not_object = op(
        &app,
        &inv(&p),
        json!({"op": "tool_raw", "name": "probe.stats", "args": [1]}),
    )
    .await;
    assert_eq!(not_object["err"]["decision"], "invalid_arguments");
}

#[tokio::test]
async fn a_failing_platform_tool_reaches_the_app_as_a_tool_call_error() {
    let error = ToolCallError {
        tool_name: "mail.send".into(),
        decision: "network_error".into(),
        message: "upstream down".into(),
        needed_scopes: vec![],
    };
    let p = Arc::new(MemoryPlatform::default().with_failing_tool("mail.send", &[], error));
    let out = op(
        &probe(),
        &inv(&p),
        json!({"op": "tool", "name": "mail.send"}),
    )
    .await;
    assert_eq!(out["err"]["decision"], "network_error");
}

#[tokio::test]
async fn secrets_are_read_at_call_time_and_bad_keys_read_as_unset() {
    let p = Arc::new(MemoryPlatform::default().with_secret("API_KEY", "s3cret"));
    let app = probe();
    assert_eq!(
        op(&app, &inv(&p), json!({"op": "secret", "key": "API_KEY"})).await["ok"],
        "s3cret"
    );
    assert_eq!(
        op(&app, &inv(&p), json!({"op": "secret", "key": "OTHER"})).await["ok"],
        json!(null)
    );
    // The SDK refuses the key itself; the host refuses it too for any guest.
    assert_eq!(
        op(&app, &inv(&p), json!({"op": "secret", "key": "api_key"})).await["ok"],
        json!(null)
    );
}

#[tokio::test]
async fn config_gives_the_install_settings() {
    let p = platform();
    let settings = json!({"currency": "EUR", "limit": 5})
        .as_object()
        .unwrap()
        .clone();
    let i = inv(&p).with_settings(settings);
    let app = probe();
    assert_eq!(
        op(&app, &i, json!({"op": "config", "key": "limit"})).await["ok"],
        5
    );
    assert_eq!(
        op(&app, &i, json!({"op": "config", "key": "missing"})).await["ok"],
        json!(null)
    );
    assert_eq!(
        op(&app, &i, json!({"op": "config_all"})).await["ok"],
        json!({"currency": "EUR", "limit": 5})
    );
}

#[tokio::test]
async fn rooms_post_is_sent_as_the_apps_own_agent_and_routes_mentions() {
    let p = Arc::new(
        MemoryPlatform::default()
            .with_room("room-1", &["probe:lead", "room-bot:concierge", "user:u-1"]),
    );
    let app = probe();
    let posted = op(
        &app,
        &poster(&p),
        json!({"op": "post", "room": "room-1", "content": "hi **@room-bot:concierge** and @other:x", "from": "lead"}),
    )
    .await;
    assert_eq!(
        posted["ok"]["routed_targets"],
        json!(["room-bot:concierge"])
    );
    assert_eq!(posted["ok"]["message"]["sender_ref"], "probe:lead");
    assert_eq!(posted["ok"]["message"]["sender_display"], "Lead");
    assert_eq!(p.posts().len(), 1);

    let not_member = op(
        &app,
        &poster(&p),
        json!({"op": "post", "room": "room-1", "content": "x", "from": "helper"}),
    )
    .await;
    assert_eq!(not_member["err"]["decision"], "not_member");
    let foreign = op(
        &app,
        &poster(&p),
        json!({"op": "post", "room": "room-1", "content": "x", "from": "concierge"}),
    )
    .await;
    assert_eq!(foreign["err"]["decision"], "unknown_agent");
    let empty = op(
        &app,
        &poster(&p),
        json!({"op": "post", "room": "room-1", "content": "x", "from": ""}),
    )
    .await;
    assert_eq!(empty["err"]["decision"], "invalid_arguments");
    let long = "x".repeat(20_001);
    let too_long = op(
        &app,
        &poster(&p),
        json!({"op": "post", "room": "room-1", "content": long, "from": "lead"}),
    )
    .await;
    assert!(
        too_long["err"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 20000")
    );
    let unknown = op(
        &app,
        &poster(&p),
        json!({"op": "post", "room": "nope", "content": "x", "from": "lead"}),
    )
    .await;
    assert_eq!(unknown["err"]["decision"], "unknown_room");
    // An install without `rooms.write` is refused before the platform sees the post.
    let ungranted = op(
        &app,
        &inv(&p),
        json!({"op": "post", "room": "room-1", "content": "x", "from": "lead"}),
    )
    .await;
    assert_eq!(ungranted["err"]["decision"], "scope_denied");
    assert_eq!(ungranted["err"]["needed_scopes"], json!(["rooms.write"]));
    assert_eq!(p.posts().len(), 1);
}

/// A call of an install that holds `rooms.write`.
fn poster(p: &Arc<MemoryPlatform>) -> atrium_runtime::Invocation {
    inv(p).with_scopes(["rooms.write"])
}

#[tokio::test]
async fn team_delegation_follows_the_team_list_and_advances_the_chain() {
    let p = platform();
    let app = probe();
    let ok = op(
        &app,
        &inv(&p),
        json!({"op": "delegate", "target": "helper", "prompt": "sum it", "from": "lead"}),
    )
    .await;
    assert_eq!(ok["ok"], "[probe:helper] sum it");
    let call = &p.agent_calls()[0];
    assert_eq!(
        call.chain,
        ChainContext {
            depth: 2,
            visited: vec!["probe:helper".into()]
        }
    );

    let no_team = op(
        &app,
        &inv(&p),
        json!({"op": "delegate", "target": "lead", "prompt": "x", "from": "helper"}),
    )
    .await;
    assert!(
        no_team["err"]["reason"]
            .as_str()
            .unwrap()
            .contains("has no team")
    );
    let itself = op(
        &app,
        &inv(&p),
        json!({"op": "delegate", "target": "helper", "prompt": "x", "from": "helper"}),
    )
    .await;
    assert_eq!(itself["ok"], "[probe:helper] x");
    let missing_from = op(
        &app,
        &inv(&p),
        json!({"op": "delegate", "target": "helper", "prompt": "x", "from": ""}),
    )
    .await;
    assert!(
        missing_from["err"]["reason"]
            .as_str()
            .unwrap()
            .contains("from_agent is required")
    );
}

#[tokio::test]
async fn the_chain_rejects_depth_above_eight_and_cycles() {
    let p = Arc::new(MemoryPlatform::default().with_grant("ledger", "booker"));
    let app = probe();
    let deep = inv(&p).with_chain(ChainContext {
        depth: 8,
        visited: vec![],
    });
    for args in [
        json!({"op": "delegate", "target": "helper", "prompt": "x", "from": "lead"}),
        json!({"op": "invoke", "app": "ledger", "agent": "booker", "prompt": "x"}),
        json!({"op": "emit", "name": "probe_event"}),
        json!({"op": "ask", "prompt": "x"}),
    ] {
        let out = op(&app, &deep, args.clone()).await;
        assert!(
            out["err"]["reason"]
                .as_str()
                .unwrap()
                .starts_with("chain depth exceeded"),
            "{args}: {out}"
        );
    }
    let looped = inv(&p).with_chain(ChainContext {
        depth: 3,
        visited: vec!["ledger:booker".into()],
    });
    let out = op(
        &app,
        &looped,
        json!({"op": "invoke", "app": "ledger", "agent": "booker", "prompt": "x"}),
    )
    .await;
    assert!(
        out["err"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("cycle detected"),
        "{out}"
    );
    assert!(p.agent_calls().is_empty());
}

#[tokio::test]
async fn apps_invoke_and_fetch_need_a_grant() {
    let p = Arc::new(
        MemoryPlatform::default()
            .with_grant("ledger", "booker")
            .with_grant("ledger", "__route__"),
    );
    let app = probe();
    let ok = op(
        &app,
        &inv(&p),
        json!({"op": "invoke", "app": "ledger", "agent": "booker", "prompt": "book"}),
    )
    .await;
    assert_eq!(ok["ok"], "[ledger:booker] book");
    let denied = op(
        &app,
        &inv(&p),
        json!({"op": "invoke", "app": "ledger", "agent": "auditor", "prompt": "x"}),
    )
    .await;
    assert!(
        denied["err"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("no grant")
    );
    let fetched = op(
        &app,
        &inv(&p),
        json!({"op": "fetch_app", "app": "ledger", "path": "/entries", "method": "post"}),
    )
    .await;
    assert_eq!(fetched["ok"]["status"], 200);
    assert!(
        fetched["ok"]["body"]
            .as_str()
            .unwrap()
            .contains(r#""method":"POST""#)
    );
    let bad_method = op(
        &app,
        &inv(&p),
        json!({"op": "fetch_app", "app": "ledger", "path": "/x", "method": "BREW"}),
    )
    .await;
    assert!(
        bad_method["err"]["reason"]
            .as_str()
            .unwrap()
            .contains("BREW")
    );
}

#[tokio::test]
async fn events_emit_only_declared_events() {
    let p = Arc::new(MemoryPlatform::default().with_wire("probe_event", 2));
    let app = probe();
    let ok = op(
        &app,
        &inv(&p),
        json!({"op": "emit", "name": "probe_event", "payload": {"n": 1}}),
    )
    .await;
    assert_eq!(
        ok["ok"],
        json!({"wire_count": 2, "dispatched": 2, "failures": 0})
    );
    assert_eq!(
        p.emitted(),
        vec![("probe_event".to_owned(), json!({"n": 1}))]
    );
    let undeclared = op(&app, &inv(&p), json!({"op": "emit", "name": "other_event"})).await;
    assert!(
        undeclared["err"]["reason"]
            .as_str()
            .unwrap()
            .contains("not declared in the manifest's emits")
    );
}

#[tokio::test]
async fn public_routes_refuse_team_invoke_and_emit() {
    let p = Arc::new(MemoryPlatform::default().with_grant("ledger", "booker"));
    let app = probe();
    let public = inv(&p).on_public_route();
    for args in [
        json!({"op": "delegate", "target": "helper", "prompt": "x", "from": "lead"}),
        json!({"op": "invoke", "app": "ledger", "agent": "booker", "prompt": "x"}),
        json!({"op": "emit", "name": "probe_event"}),
    ] {
        let out = op(&app, &public, args.clone()).await;
        assert!(
            out["err"]["reason"]
                .as_str()
                .unwrap()
                .contains("not available on a public route"),
            "{args}: {out}"
        );
    }
}

#[tokio::test]
async fn agent_ask_defaults_to_the_default_agent() {
    let p = platform();
    let app = probe();
    assert_eq!(
        op(&app, &inv(&p), json!({"op": "ask", "prompt": "hi"})).await["ok"],
        "[probe:lead] hi"
    );
    assert_eq!(
        op(
            &app,
            &inv(&p),
            json!({"op": "ask", "prompt": "hi", "agent": "helper"})
        )
        .await["ok"],
        "[probe:helper] hi"
    );
    let unknown = op(
        &app,
        &inv(&p),
        json!({"op": "ask", "prompt": "hi", "agent": "ghost"}),
    )
    .await;
    assert!(
        unknown["err"]["reason"]
            .as_str()
            .unwrap()
            .contains("not an agent of this app")
    );
}

#[tokio::test]
async fn commitments_are_checked_and_recorded() {
    let p = platform();
    let app = probe();
    let ok = op(&app, &inv(&p), json!({"op": "commit", "title": "Call back", "content": "about X", "from": "lead", "due_at": "2026-05-01T09:00:00Z"})).await;
    assert!(ok["ok"].as_str().unwrap().starts_with("commitment-"));
    let bad = op(
        &app,
        &inv(&p),
        json!({"op": "commit", "title": "x", "content": "", "from": "lead", "due_at": "tomorrow"}),
    )
    .await;
    assert_eq!(bad["err"]["decision"], "invalid_arguments");
    let nobody = op(
        &app,
        &inv(&p),
        json!({"op": "commit", "title": "x", "content": "", "from": "ghost"}),
    )
    .await;
    assert_eq!(nobody["err"]["decision"], "unknown_agent");
    assert_eq!(p.commitments().len(), 1);
}

#[tokio::test]
async fn public_callback_urls_only_for_public_routes() {
    let p = platform();
    let app = probe();
    let url = op(&app, &inv(&p), json!({"op": "public_url", "path": "/open"})).await;
    assert_eq!(
        url["ok"],
        "https://atrium.example/api/apps/probe/public/t/tenant-a/open"
    );
    let private = op(
        &app,
        &inv(&p),
        json!({"op": "public_url", "path": "/echo/x"}),
    )
    .await;
    assert!(
        private["err"]
            .as_str()
            .unwrap()
            .contains("matches no public route")
    );
}

#[tokio::test]
async fn logs_and_output_go_to_tracing_with_the_call_tags() {
    let captured = Captured::default();
    let _guard = captured.install();
    let p = platform();
    let i = atrium_runtime::Invocation {
        call_id: Some("call-xyz".into()),
        ..inv(&p)
    };
    op(
        &probe(),
        &i,
        json!({"op": "log", "level": "warn", "message": "disk almost full"}),
    )
    .await;
    let lines = captured.lines();
    let line = lines
        .iter()
        .find(|l| l.contains("disk almost full"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(line.starts_with("atrium::app WARN"), "{line}");
    for tag in [
        "tenant=tenant-a",
        "app=probe",
        "version=1.0.0",
        "call=call-xyz",
        "stream=log",
    ] {
        assert!(line.contains(tag), "{tag} missing in {line}");
    }
}

#[tokio::test]
async fn a_capability_the_platform_goes_without_answers_not_available_naming_it() {
    use atrium_runtime::Capability;
    let mut p = MemoryPlatform::default().with_room("room-1", &["probe:lead"]);
    for c in Capability::ALL {
        p = p.without(c);
    }
    let p = Arc::new(p.with_tool("probe.stats", &[], json!({})));
    let app = probe();
    let tool = |capability: &str, op: serde_json::Value| {
        let (app, p, capability) = (&app, &p, capability.to_owned());
        async move {
            let out = crate::common::op(app, &poster(p), op).await;
            assert_eq!(out["err"]["decision"], "not_available", "{out}");
            assert_eq!(out["err"]["tool_name"], capability.as_str(), "{out}");
            assert_eq!(
                out["err"]["message"],
                format!("`{capability}` is not available on this host")
            );
        }
    };
    tool("tools.call", json!({"op": "tool", "name": "probe.stats"})).await;
    tool(
        "rooms.post",
        json!({"op": "post", "room": "room-1", "content": "x", "from": "lead"}),
    )
    .await;
    tool(
        "commitments.add",
        json!({"op": "commit", "title": "t", "content": "c", "from": "lead"}),
    )
    .await;
    for (capability, op) in [
        (
            "team.delegate",
            json!({"op": "delegate", "target": "helper", "prompt": "p", "from": "lead"}),
        ),
        (
            "apps.invoke",
            json!({"op": "invoke", "app": "ledger", "agent": "clerk", "prompt": "p"}),
        ),
        (
            "apps.fetch",
            json!({"op": "fetch_app", "app": "ledger", "path": "/x", "method": "GET"}),
        ),
        ("events.emit", json!({"op": "emit", "name": "probe_event"})),
        ("agent.ask", json!({"op": "ask", "prompt": "p"})),
    ] {
        let out = crate::common::op(&app, &inv(&p), op).await;
        assert_eq!(
            out["err"]["reason"],
            format!("not_available: `{capability}` is not available on this host"),
            "{out}"
        );
    }
    // The sandbox rules come first: a post from an undeclared agent is refused for that.
    let foreign = crate::common::op(
        &app,
        &inv(&p),
        json!({"op": "post", "room": "room-1", "content": "x", "from": "ghost"}),
    )
    .await;
    assert_eq!(foreign["err"]["decision"], "unknown_agent");
    assert!(p.posts().is_empty() && p.emitted().is_empty() && p.agent_calls().is_empty());
}

//! `emits` and `subscribes_to`.

use atrium_manifest::{Code, SubscriptionTarget};
use serde_json::json;

use crate::{fails, fails_at, minimal, ok, with, with_agents};

#[test]
fn emits_format_and_duplicates() {
    let m = ok(&with(minimal(), "/emits", json!(["invoice_paid", "a1"])));
    assert_eq!(m.emits, vec!["invoice_paid", "a1"]);
    for bad in ["Invoice", "1st", "invoice-paid", "_x"] {
        fails_at(
            &with(minimal(), "/emits", json!([bad])),
            "emits[0]",
            Code::Pattern,
        );
    }
    fails_at(
        &with(minimal(), "/emits", json!(["a", "b", "a"])),
        "emits[2]",
        Code::Duplicate,
    );
}

#[test]
fn subscription_to_an_agent() {
    let v = with(
        with_agents(),
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "entry_booked", "target_agent": "helper" }]),
    );
    assert_eq!(
        ok(&v).subscribes_to[0].target,
        SubscriptionTarget::Agent("helper".into())
    );
    let v = with(
        with_agents(),
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "entry_booked", "target_agent": "ghost" }]),
    );
    fails_at(
        &v,
        "subscribes_to[0].target_agent",
        Code::UndeclaredReference,
    );
    let v = with(
        with(
            minimal(),
            "/agent",
            json!({ "name": "A", "system_prompt": "p" }),
        ),
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "x", "target_agent": "default" }]),
    );
    ok(&v);
}

#[test]
fn subscription_to_a_heartbeat() {
    let hb =
        json!([{ "slug": "sync", "skill": "records", "tool": "query", "interval_minutes": 60 }]);
    let base = with(with_agents(), "/agents/1/heartbeats", hb.clone());
    let v = with(
        base.clone(),
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "x", "target_heartbeat": "sync" }]),
    );
    assert_eq!(
        ok(&v).subscribes_to[0].target,
        SubscriptionTarget::Heartbeat {
            agent: "helper".into(),
            slug: "sync".into()
        }
    );
    let v = with(
        base.clone(),
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "x", "target_heartbeat": "nightly" }]),
    );
    fails_at(
        &v,
        "subscribes_to[0].target_heartbeat",
        Code::UndeclaredReference,
    );
    // The same slug on two agents must be qualified.
    let both = with(base, "/agents/0/heartbeats", hb);
    let v = with(
        both.clone(),
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "x", "target_heartbeat": "sync" }]),
    );
    fails_at(
        &v,
        "subscribes_to[0].target_heartbeat",
        Code::UndeclaredReference,
    );
    let v = with(
        both,
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "x", "target_heartbeat": "lead:sync" }]),
    );
    assert_eq!(
        ok(&v).subscribes_to[0].target,
        SubscriptionTarget::Heartbeat {
            agent: "lead".into(),
            slug: "sync".into()
        }
    );
}

#[test]
fn exactly_one_target() {
    let v = with(
        with_agents(),
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "x" }]),
    );
    fails_at(&v, "subscribes_to[0]", Code::Required);
    let v = with(
        with_agents(),
        "/subscribes_to",
        json!([{ "emitter_app": "ledger", "event_name": "x", "target_agent": "lead", "target_heartbeat": "h" }]),
    );
    fails_at(
        &v,
        "subscribes_to[0].target_heartbeat",
        Code::MutuallyExclusive,
    );
}

#[test]
fn subscription_fields() {
    let v = with(
        with_agents(),
        "/subscribes_to",
        json!([{ "emitter_app": "Ledger", "event_name": "Bad-Name", "target_agent": "lead" }]),
    );
    fails(
        &v,
        &[
            ("subscribes_to[0].emitter_app", Code::Pattern),
            ("subscribes_to[0].event_name", Code::Pattern),
        ],
    );
    let sub = json!({ "emitter_app": "ledger", "event_name": "x", "target_agent": "lead" });
    fails_at(
        &with(with_agents(), "/subscribes_to", json!([sub.clone(), sub])),
        "subscribes_to[1]",
        Code::Duplicate,
    );
}

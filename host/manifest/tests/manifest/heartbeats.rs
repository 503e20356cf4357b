//! `agents[].heartbeats[]`.

use atrium_manifest::{Code, ConversationMode, HeartbeatSchedule, ModelTier, TimeOfDay};
use serde_json::{Value, json};

use crate::{fails, fails_at, ok, warns, with, with_agents};

fn hb(extra: Value) -> Value {
    let mut base =
        json!({ "slug": "watch", "skill": "records", "tool": "query", "interval_minutes": 30 });
    if let (Some(map), Value::Object(extra)) = (base.as_object_mut(), extra) {
        for (k, v) in extra {
            if v.is_null() {
                map.remove(&k);
            } else {
                map.insert(k, v);
            }
        }
    }
    base
}

fn one(h: Value) -> Value {
    with(with_agents(), "/agents/0/heartbeats", json!([h]))
}

const AT: &str = "agents[0].heartbeats[0]";

#[test]
fn interval_is_the_default_schedule() {
    let m = ok(&one(hb(json!({}))));
    let h = &m.agents[0].heartbeats[0];
    assert_eq!(
        h.schedule,
        HeartbeatSchedule::Interval {
            interval_minutes: 30
        }
    );
    assert_eq!(
        (h.conversation_mode, h.model_tier, h.invoke_always),
        (ConversationMode::Dedicated, ModelTier::Cheap, false)
    );
    assert!(h.params.is_empty());
}

#[test]
fn interval_minutes_range_and_requirement() {
    ok(&one(hb(json!({ "interval_minutes": 5 }))));
    ok(&one(hb(json!({ "interval_minutes": 43200 }))));
    fails_at(
        &one(hb(json!({ "interval_minutes": 4 }))),
        &format!("{AT}.interval_minutes"),
        Code::OutOfRange,
    );
    fails_at(
        &one(hb(json!({ "interval_minutes": 43201 }))),
        &format!("{AT}.interval_minutes"),
        Code::OutOfRange,
    );
    fails_at(
        &one(hb(json!({ "interval_minutes": null }))),
        &format!("{AT}.interval_minutes"),
        Code::Required,
    );
}

#[test]
fn daily_weekly_cron_fields() {
    let m = ok(&one(hb(
        json!({ "schedule_type": "daily", "interval_minutes": null, "time_of_day": "07:05" }),
    )));
    assert_eq!(
        m.agents[0].heartbeats[0].schedule,
        HeartbeatSchedule::Daily {
            time_of_day: TimeOfDay { hour: 7, minute: 5 }
        }
    );
    ok(&one(hb(
        json!({ "schedule_type": "weekly", "interval_minutes": null, "time_of_day": "23:59", "day_of_week": 6 }),
    )));
    ok(&one(hb(
        json!({ "schedule_type": "cron", "interval_minutes": null, "cron_expression": "*/10 8-18 * * 1-5" }),
    )));
    fails_at(
        &one(hb(
            json!({ "schedule_type": "daily", "interval_minutes": null }),
        )),
        &format!("{AT}.time_of_day"),
        Code::Required,
    );
    fails_at(
        &one(hb(
            json!({ "schedule_type": "daily", "interval_minutes": null, "time_of_day": "7:00" }),
        )),
        &format!("{AT}.time_of_day"),
        Code::Pattern,
    );
    fails_at(
        &one(hb(
            json!({ "schedule_type": "daily", "interval_minutes": null, "time_of_day": "24:00" }),
        )),
        &format!("{AT}.time_of_day"),
        Code::Pattern,
    );
    fails_at(
        &one(hb(
            json!({ "schedule_type": "weekly", "interval_minutes": null, "time_of_day": "09:00" }),
        )),
        &format!("{AT}.day_of_week"),
        Code::Required,
    );
    fails_at(
        &one(hb(
            json!({ "schedule_type": "weekly", "interval_minutes": null, "time_of_day": "09:00", "day_of_week": 7 }),
        )),
        &format!("{AT}.day_of_week"),
        Code::OutOfRange,
    );
    fails_at(
        &one(hb(
            json!({ "schedule_type": "cron", "interval_minutes": null }),
        )),
        &format!("{AT}.cron_expression"),
        Code::Required,
    );
    fails_at(
        &one(hb(
            json!({ "schedule_type": "cron", "interval_minutes": null, "cron_expression": "0 0 * *" }),
        )),
        &format!("{AT}.cron_expression"),
        Code::InvalidCron,
    );
    fails_at(
        &one(hb(json!({ "schedule_type": "hourly" }))),
        &format!("{AT}.schedule_type"),
        Code::InvalidValue,
    );
}

#[test]
fn fields_of_another_schedule_type_are_refused() {
    fails_at(
        &one(hb(json!({ "cron_expression": "* * * * *" }))),
        &format!("{AT}.cron_expression"),
        Code::NotApplicable,
    );
    fails_at(
        &one(hb(
            json!({ "schedule_type": "daily", "time_of_day": "09:00" }),
        )),
        &format!("{AT}.interval_minutes"),
        Code::NotApplicable,
    );
    fails_at(
        &one(hb(
            json!({ "schedule_type": "daily", "interval_minutes": null, "time_of_day": "09:00", "day_of_week": 1 }),
        )),
        &format!("{AT}.day_of_week"),
        Code::NotApplicable,
    );
}

#[test]
fn sentinel_skills_require_tool_query() {
    ok(&one(hb(
        json!({ "skill": "_internal_app_records", "tool": "query", "params": { "record_type": "invoice" } }),
    )));
    ok(&one(hb(
        json!({ "skill": "_internal_agent_memory", "tool": "query" }),
    )));
    fails_at(
        &one(hb(
            json!({ "skill": "_internal_app_records", "tool": "list" }),
        )),
        &format!("{AT}.tool"),
        Code::Requires,
    );
    fails_at(
        &one(hb(json!({ "skill": "_internal_secrets", "tool": "query" }))),
        &format!("{AT}.skill"),
        Code::InvalidValue,
    );
    fails_at(
        &one(hb(json!({ "skill": null }))),
        &format!("{AT}.skill"),
        Code::Required,
    );
    fails_at(
        &one(hb(json!({ "tool": null }))),
        &format!("{AT}.tool"),
        Code::Required,
    );
}

#[test]
fn slug_rules() {
    fails_at(
        &one(hb(json!({ "slug": "Watch" }))),
        &format!("{AT}.slug"),
        Code::Pattern,
    );
    fails_at(
        &one(hb(json!({ "slug": "1watch" }))),
        &format!("{AT}.slug"),
        Code::Pattern,
    );
    fails(
        &with(
            with_agents(),
            "/agents/0/heartbeats",
            json!([hb(json!({})), hb(json!({}))]),
        ),
        &[("agents[0].heartbeats[1].slug", Code::Duplicate)],
    );
    // The same slug on two agents is fine: slugs are unique per agent.
    ok(&with(
        with(
            with_agents(),
            "/agents/0/heartbeats",
            json!([hb(json!({}))]),
        ),
        "/agents/1/heartbeats",
        json!([hb(json!({}))]),
    ));
}

#[test]
fn active_hours() {
    let m = ok(&one(hb(
        json!({ "active_hours": { "start": "22:00", "end": "06:00" } }),
    )));
    assert_eq!(
        m.agents[0].heartbeats[0]
            .active_hours
            .as_ref()
            .map(|a| a.timezone.as_str()),
        Some("user")
    );
    ok(&one(hb(
        json!({ "active_hours": { "start": "08:00", "end": "18:00", "timezone": "America/New_York" } }),
    )));
    ok(&one(hb(
        json!({ "active_hours": { "start": "08:00", "end": "18:00", "timezone": "user" } }),
    )));
    fails_at(
        &one(hb(
            json!({ "active_hours": { "start": "08:00", "end": "08:00" } }),
        )),
        &format!("{AT}.active_hours.end"),
        Code::EmptyWindow,
    );
    fails_at(
        &one(hb(
            json!({ "active_hours": { "start": "08:00", "end": "18:00", "timezone": "Europe/Atlantis" } }),
        )),
        &format!("{AT}.active_hours.timezone"),
        Code::InvalidValue,
    );
    fails_at(
        &one(hb(
            json!({ "active_hours": { "start": "8am", "end": "18:00" } }),
        )),
        &format!("{AT}.active_hours.start"),
        Code::Pattern,
    );
    fails_at(
        &one(hb(json!({ "active_hours": { "end": "18:00" } }))),
        &format!("{AT}.active_hours.start"),
        Code::Required,
    );
}

#[test]
fn enums_limits_and_types() {
    let m = ok(&one(hb(
        json!({ "conversation_mode": "main", "model_tier": "premium", "invoke_always": true, "cooldown_seconds": 60, "prompt": "p".repeat(8000) }),
    )));
    let h = &m.agents[0].heartbeats[0];
    assert_eq!(
        (h.conversation_mode, h.model_tier, h.cooldown_seconds),
        (ConversationMode::Main, ModelTier::Premium, Some(60))
    );
    fails_at(
        &one(hb(json!({ "conversation_mode": "shared" }))),
        &format!("{AT}.conversation_mode"),
        Code::InvalidValue,
    );
    fails_at(
        &one(hb(json!({ "model_tier": "gold" }))),
        &format!("{AT}.model_tier"),
        Code::InvalidValue,
    );
    fails_at(
        &one(hb(json!({ "prompt": "p".repeat(8001) }))),
        &format!("{AT}.prompt"),
        Code::Length,
    );
    fails_at(
        &one(hb(json!({ "cooldown_seconds": -1 }))),
        &format!("{AT}.cooldown_seconds"),
        Code::OutOfRange,
    );
    fails_at(
        &one(hb(json!({ "params": ["x"] }))),
        &format!("{AT}.params"),
        Code::InvalidType,
    );
    fails_at(
        &one(hb(json!({ "retries": 3 }))),
        &format!("{AT}.retries"),
        Code::UnknownField,
    );
}

/// The problems of `value` at the heartbeat's `field`.
fn problems_at(value: &Value, field: &str) -> Vec<atrium_manifest::Problem> {
    crate::validate(value)
        .problems
        .into_iter()
        .filter(|p| p.path == format!("{AT}.{field}"))
        .collect()
}

#[test]
fn a_skill_is_a_sentinel_or_a_platform_skill_the_host_provides() {
    // Every platform tool the host provides, as a skill and a tool (LOW-risk or not: the
    // platform denies the others at run time).
    for name in atrium_manifest::skills::PLATFORM_TOOLS {
        let (skill, tool) = name.split_once('.').unwrap();
        ok(&one(hb(json!({ "skill": skill, "tool": tool }))));
    }
    // The invoice desk's old heartbeats named a skill nothing provides: refused, the message
    // listing what the host provides.
    let desk = one(hb(
        json!({ "skill": "invoices.search", "tool": "search_overdue" }),
    ));
    fails_at(&desk, &format!("{AT}.skill"), Code::InvalidValue);
    let message = problems_at(&desk, "skill")[0].message.clone();
    for named in [
        "`invoices.search`",
        "`_internal_app_records`",
        "`_internal_agent_memory`",
        "`knowledge`",
        "`memory`",
        "`records`",
        "`rooms`",
    ] {
        assert!(message.contains(named), "{named}: {message}");
    }
    // A whole tool name as the skill: the message says how to write it.
    let joined = one(hb(json!({ "skill": "records.query", "tool": "query" })));
    fails_at(&joined, &format!("{AT}.skill"), Code::InvalidValue);
    assert!(
        problems_at(&joined, "skill")[0]
            .message
            .contains("as skill `records` and tool `query`"),
        "{:?}",
        problems_at(&joined, "skill")
    );
    // A platform skill without that tool: refused at the tool, naming the skill's tools.
    let search = one(hb(json!({ "skill": "records", "tool": "search" })));
    fails_at(&search, &format!("{AT}.tool"), Code::InvalidValue);
    assert!(
        problems_at(&search, "tool")[0]
            .message
            .contains("`delete`, `get`, `put`, `query`, `update`"),
        "{:?}",
        problems_at(&search, "tool")
    );
    // A tool that breaks its pattern is reported once, as a pattern.
    fails_at(
        &one(hb(json!({ "skill": "records", "tool": "two words" }))),
        &format!("{AT}.tool"),
        Code::Pattern,
    );
}

/// A stored version read again (`parse`) keeps loading when it names a skill the host does not
/// provide: publishing refuses it, reading it does not.
#[test]
fn a_stored_manifest_with_an_unknown_skill_still_parses() {
    let text = serde_json::to_string(&one(hb(
        json!({ "skill": "invoices.search", "tool": "search_overdue" }),
    )))
    .unwrap();
    assert!(!atrium_manifest::validate(&text).is_valid());
    let manifest = atrium_manifest::parse(&text).expect("a stored manifest parses");
    assert_eq!(manifest.agents[0].heartbeats[0].skill, "invoices.search");
    // Every other rule still applies.
    let broken = text.replace("\"interval_minutes\":30", "\"interval_minutes\":3");
    assert_ne!(broken, text);
    assert!(atrium_manifest::parse(&broken).is_err());
}

#[test]
fn a_daily_time_outside_the_active_hours_is_a_warning() {
    let daily = |time: &str, start: &str, end: &str| {
        one(hb(json!({
            "schedule_type": "daily", "interval_minutes": null, "time_of_day": time,
            "active_hours": { "start": start, "end": end, "timezone": "Europe/Paris" },
        })))
    };
    // The invoice desk's old `overdue`: 07:30 in a night window never runs.
    let m = warns(
        &daily("07:30", "22:00", "06:00"),
        &format!("{AT}.time_of_day"),
        Code::EmptyWindow,
    );
    assert_eq!(m.agents[0].heartbeats[0].slug, "watch");
    for (time, start, end) in [
        ("07:30", "07:00", "19:00"),
        ("23:00", "22:00", "06:00"),
        ("05:59", "22:00", "06:00"),
    ] {
        let value = daily(time, start, end);
        ok(&value);
        let problems = problems_at(&value, "time_of_day");
        assert!(problems.is_empty(), "{time} in {start}-{end}: {problems:?}");
    }
    // The end is not in the window.
    warns(
        &daily("06:00", "22:00", "06:00"),
        &format!("{AT}.time_of_day"),
        Code::EmptyWindow,
    );
}

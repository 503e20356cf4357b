//! `agents[].heartbeats[]`: recurring background routines.

use super::tools::{Located, cron_rule, each, unique_keys};
use crate::model::{
    ActiveHours, ConversationMode, Heartbeat, HeartbeatSchedule, ModelTier, TimeOfDay,
};
use crate::problem::{Code, Path};
use crate::read::{Cx, Obj};
use crate::rules;
use crate::skills::{self, SENTINEL_SKILLS, UnknownSource};
use crate::tree::{Node, Value};

const FIELDS: &[&str] = &[
    "slug",
    "skill",
    "tool",
    "params",
    "schedule_type",
    "interval_minutes",
    "cron_expression",
    "time_of_day",
    "day_of_week",
    "active_hours",
    "invoke_always",
    "cooldown_seconds",
    "conversation_mode",
    "model_tier",
    "prompt",
];

/// The schedule fields and the schedule types each belongs to.
const SCHEDULE_FIELDS: [(&str, &[&str]); 4] = [
    ("interval_minutes", &["interval"]),
    ("cron_expression", &["cron"]),
    ("time_of_day", &["daily", "weekly"]),
    ("day_of_week", &["weekly"]),
];

pub(super) fn heartbeats(cx: &mut Cx, agent: &mut Obj<'_>) -> Vec<Heartbeat> {
    let read = each(cx, agent, "heartbeats", None, heartbeat);
    unique_keys(
        cx,
        read.iter().map(|h| h.key.as_ref()),
        "heartbeat slug (in this agent)",
    );
    read.into_iter().map(|h| h.value).collect()
}

/// Reads one of a fixed set of spellings, reporting the allowed ones otherwise.
fn choice<T: Copy>(
    cx: &mut Cx,
    obj: &mut Obj<'_>,
    key: &str,
    options: &[(&str, T)],
    default: T,
) -> T {
    let Some((node, value)) = obj.opt_string(cx, key) else {
        return default;
    };
    if let Some((_, v)) = options.iter().find(|(name, _)| *name == value) {
        return *v;
    }
    let allowed: Vec<String> = options.iter().map(|(n, _)| format!("`{n}`")).collect();
    cx.error(
        &obj.at(key),
        node.pos,
        Code::InvalidValue,
        format!("must be one of {} (got `{value}`)", allowed.join(", ")),
    );
    default
}

fn time_of_day(cx: &mut Cx, path: &Path, node: &Node) -> Option<TimeOfDay> {
    let text = cx.string(path, node)?;
    let time = TimeOfDay::parse(text);
    if time.is_none() {
        cx.error(
            path,
            node.pos,
            Code::Pattern,
            format!("`{text}` is not a 24-hour time `HH:MM` (00:00 to 23:59)"),
        );
    }
    time
}

fn heartbeat<'n>(cx: &mut Cx, mut obj: Obj<'n>) -> Located<'n, Heartbeat> {
    let mut key = None;
    let mut slug = String::new();
    if let Some((node, value)) = obj.req_string(cx, "slug", "a lowercase slug, unique in the agent")
    {
        let path = obj.at("slug");
        if cx.length(&path, node, value, 1, 64) && !rules::is_letter_slug(value) {
            cx.error(&path, node.pos, Code::Pattern, format!("`{value}` is not a valid heartbeat slug: lowercase letters, digits, `-` and `_`, starting with a letter"));
        }
        slug = value.to_owned();
        key = Some((value.to_owned(), path, node));
    }
    let skill = obj.req_string(
        cx,
        "skill",
        "a platform skill (`records`, `knowledge`, `memory`, `rooms`) or a sentinel (`_internal_app_records`, `_internal_agent_memory`)",
    );
    let tool = obj.req_string(
        cx,
        "tool",
        "the skill's tool name (`query` for the sentinels)",
    );
    let valid_name = |name: &str| !name.trim().is_empty() && !name.contains(char::is_whitespace);
    if let Some((node, skill)) = skill {
        let path = obj.at("skill");
        if skill.starts_with("_internal_") && !SENTINEL_SKILLS.contains(&skill) {
            cx.error(&path, node.pos, Code::InvalidValue, format!("`{skill}` is not a known sentinel; the sentinels are `_internal_app_records` and `_internal_agent_memory`"));
        } else if !valid_name(skill) {
            cx.error(
                &path,
                node.pos,
                Code::Pattern,
                format!(
                    "`{skill}` is not a valid skill name: a non-empty name without white space"
                ),
            );
        } else if cx.host_rules {
            // A skill nothing provides would fail every run until the heartbeat is disabled.
            let written_tool = tool.map(|(_, t)| t).filter(|t| valid_name(t));
            match (
                skills::unknown_source(skill, written_tool.unwrap_or_default()),
                tool,
            ) {
                (Some(UnknownSource::Skill(message)), _) => {
                    cx.error(&path, node.pos, Code::InvalidValue, message);
                }
                (Some(UnknownSource::Tool(message)), Some((tool_node, _)))
                    if written_tool.is_some() =>
                {
                    cx.error(&obj.at("tool"), tool_node.pos, Code::InvalidValue, message);
                }
                _ => {}
            }
        }
        if SENTINEL_SKILLS.contains(&skill)
            && let Some((tool_node, tool)) = tool
            && tool != "query"
        {
            cx.error(
                &obj.at("tool"),
                tool_node.pos,
                Code::Requires,
                format!("skill `{skill}` is a sentinel and requires tool `query` (got `{tool}`)"),
            );
        }
    }
    if let Some((node, tool)) = tool
        && (tool.trim().is_empty() || tool.contains(char::is_whitespace))
    {
        cx.error(
            &obj.at("tool"),
            node.pos,
            Code::Pattern,
            format!("`{tool}` is not a valid tool name: a non-empty name without white space"),
        );
    }
    let params = match obj.get("params") {
        Some(node) => match (&node.value, node.to_json()) {
            (Value::Map(_), serde_json::Value::Object(map)) => map,
            _ => {
                cx.error(
                    &obj.at("params"),
                    node.pos,
                    Code::InvalidType,
                    format!("expected a mapping, found {}", node.value.kind()),
                );
                serde_json::Map::new()
            }
        },
        None => serde_json::Map::new(),
    };

    let schedule = schedule(cx, &mut obj);
    let active_hours = active_hours(cx, &mut obj);
    // A daily or weekly time outside the active hours (both read in the same zone) is never
    // due inside them: the heartbeat would never run.
    if let (
        HeartbeatSchedule::Daily { time_of_day } | HeartbeatSchedule::Weekly { time_of_day, .. },
        Some(hours),
    ) = (&schedule, &active_hours)
        && !hours.contains(*time_of_day)
        && let Some(node) = obj.get("time_of_day")
    {
        cx.warning(
            &obj.at("time_of_day"),
            node.pos,
            Code::EmptyWindow,
            format!(
                "{time_of_day} is outside the active hours {} to {}: this heartbeat never runs; move time_of_day into the window or widen it",
                hours.start, hours.end
            ),
        );
    }
    let invoke_always = obj.bool_or(cx, "invoke_always", false);
    let cooldown_seconds = obj
        .get("cooldown_seconds")
        .and_then(|node| cx.integer(&obj.at("cooldown_seconds"), node, 0, i64::from(u32::MAX)))
        .and_then(|s| u64::try_from(s).ok());
    let conversation_mode = choice(
        cx,
        &mut obj,
        "conversation_mode",
        &[
            ("dedicated", ConversationMode::Dedicated),
            ("isolated", ConversationMode::Isolated),
            ("main", ConversationMode::Main),
        ],
        ConversationMode::Dedicated,
    );
    let model_tier = choice(
        cx,
        &mut obj,
        "model_tier",
        &[
            ("cheap", ModelTier::Cheap),
            ("standard", ModelTier::Standard),
            ("premium", ModelTier::Premium),
        ],
        ModelTier::Cheap,
    );
    let prompt = obj.opt_text(cx, "prompt", 8000);
    obj.finish(cx, FIELDS);
    Located {
        value: Heartbeat {
            slug,
            skill: skill.map(|(_, s)| s.to_owned()).unwrap_or_default(),
            tool: tool.map(|(_, t)| t.to_owned()).unwrap_or_default(),
            params,
            schedule,
            active_hours,
            invoke_always,
            cooldown_seconds,
            conversation_mode,
            model_tier,
            prompt,
        },
        key,
    }
}

fn schedule(cx: &mut Cx, obj: &mut Obj<'_>) -> HeartbeatSchedule {
    let kind = choice(
        cx,
        obj,
        "schedule_type",
        &[
            ("interval", "interval"),
            ("daily", "daily"),
            ("weekly", "weekly"),
            ("cron", "cron"),
        ],
        "interval",
    );
    for (field, types) in SCHEDULE_FIELDS {
        if !types.contains(&kind)
            && let Some(node) = obj.get(field)
        {
            let used_by = types.join(" and ");
            cx.error(
                &obj.at(field),
                obj.key_pos(field).unwrap_or(node.pos),
                Code::NotApplicable,
                format!("`{field}` applies only to schedule_type {used_by}, not to `{kind}`"),
            );
        }
    }
    let rule = |field: &str| match field {
        "interval_minutes" => "an integer from 5 to 43200",
        "cron_expression" => "a standard 5-field cron expression",
        "time_of_day" => "a 24-hour time HH:MM",
        _ => "0 (Monday) to 6 (Sunday)",
    };
    let mut required = |cx: &mut Cx, field: &str| {
        obj.require(
            cx,
            field,
            &format!("schedule_type `{kind}` needs it: {}", rule(field)),
        )
        .map(|n| (obj.at(field), n))
    };
    match kind {
        "daily" => {
            let time = required(cx, "time_of_day").and_then(|(p, n)| time_of_day(cx, &p, n));
            HeartbeatSchedule::Daily {
                time_of_day: time.unwrap_or(TimeOfDay { hour: 0, minute: 0 }),
            }
        }
        "weekly" => {
            let time = required(cx, "time_of_day").and_then(|(p, n)| time_of_day(cx, &p, n));
            let day = required(cx, "day_of_week").and_then(|(p, n)| cx.integer(&p, n, 0, 6));
            HeartbeatSchedule::Weekly {
                time_of_day: time.unwrap_or(TimeOfDay { hour: 0, minute: 0 }),
                day_of_week: day.and_then(|d| u8::try_from(d).ok()).unwrap_or(0),
            }
        }
        "cron" => {
            let expr = required(cx, "cron_expression")
                .and_then(|(p, n)| cx.string(&p, n).map(|text| cron_rule(cx, &p, n, text)));
            HeartbeatSchedule::Cron {
                cron_expression: expr.unwrap_or_default(),
            }
        }
        _ => {
            let minutes =
                required(cx, "interval_minutes").and_then(|(p, n)| cx.integer(&p, n, 5, 43200));
            HeartbeatSchedule::Interval {
                interval_minutes: minutes.and_then(|m| u32::try_from(m).ok()).unwrap_or(5),
            }
        }
    }
}

fn active_hours(cx: &mut Cx, parent: &mut Obj<'_>) -> Option<ActiveHours> {
    let node = parent.get("active_hours")?;
    let mut obj = Obj::new(cx, parent.at("active_hours"), node)?;
    let start = obj
        .require(cx, "start", "window start, HH:MM")
        .and_then(|n| time_of_day(cx, &obj.at("start"), n));
    let end_node = obj.require(cx, "end", "window end, HH:MM");
    let end = end_node.and_then(|n| time_of_day(cx, &obj.at("end"), n));
    if let (Some(s), Some(e), Some(n)) = (start, end, end_node)
        && s == e
    {
        cx.error(&obj.at("end"), n.pos, Code::EmptyWindow, format!("start and end are both {s}: the window would be empty; windows may cross midnight but start must differ from end"));
    }
    let mut timezone = "user".to_owned();
    if let Some((node, tz)) = obj.opt_string(cx, "timezone") {
        if tz == "user" || jiff::tz::TimeZone::get(tz).is_ok() {
            timezone = tz.to_owned();
        } else {
            cx.error(&obj.at("timezone"), node.pos, Code::InvalidValue, format!("`{tz}` is not an IANA time zone name (for example `Europe/Paris`) nor `user` (the tenant's configured zone)"));
        }
    }
    obj.finish(cx, &["start", "end", "timezone"]);
    Some(ActiveHours {
        start: start?,
        end: end?,
        timezone,
    })
}

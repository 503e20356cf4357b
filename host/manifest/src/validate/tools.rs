//! `tools`, `cross_app_dependencies`, `lifecycle` and `workflows`.

use std::collections::HashSet;

use super::{Declared, app_slug, names, text_list};
use crate::cron::CronExpr;
use crate::model::{CrossAppDependency, Lifecycle, Method, Schedule, Tool, Workflow};
use crate::problem::{Code, Path};
use crate::read::{Cx, Obj, listing};
use crate::rules;
use crate::tree::{Node, Value};

/// Most workflows per manifest.
pub const MAX_WORKFLOWS: usize = 20;

/// Reads every entry of an optional list field with `item`, skipping entries that are not
/// mappings (they are reported).
pub(super) fn each<'n, T>(
    cx: &mut Cx,
    parent: &mut Obj<'n>,
    key: &str,
    max: Option<(usize, &str)>,
    mut item: impl FnMut(&mut Cx, Obj<'n>) -> T,
) -> Vec<T> {
    let Some(node) = parent.get(key) else {
        return Vec::new();
    };
    let path = parent.at(key);
    let items = match max {
        Some((max, what)) => cx.list_max(&path, node, max, what),
        None => cx.list(&path, node),
    };
    let Some(items) = items else {
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, n)| Obj::new(cx, path.index(i), n).map(|obj| item(cx, obj)))
        .collect()
}

/// A declared key (name, id, slug) with where it was written.
pub(super) type KeyAt<'n> = (String, Path, &'n Node);

/// Reports every key that repeats an earlier one as `duplicate`.
pub(super) fn unique_keys<'a, 'n: 'a>(
    cx: &mut Cx,
    keys: impl IntoIterator<Item = Option<&'a KeyAt<'n>>>,
    what: &str,
) {
    let mut seen: HashSet<&str> = HashSet::new();
    for (value, path, node) in keys.into_iter().flatten() {
        if value.is_empty() {
            continue;
        }
        if !seen.insert(value.as_str()) {
            cx.error(
                path,
                node.pos,
                Code::Duplicate,
                format!("{what} `{value}` is declared more than once"),
            );
        }
    }
}

/// A read value together with where it was written, for later cross-checks.
pub(super) struct Located<'n, T> {
    pub(super) value: T,
    pub(super) key: Option<KeyAt<'n>>,
}

pub(super) fn tools(cx: &mut Cx, parent: &mut Obj<'_>, declared: &mut Declared) -> Vec<Tool> {
    let scopes = declared.scopes.clone();
    let scope_set: HashSet<&str> = scopes.iter().map(String::as_str).collect();
    let read = each(cx, parent, "tools", None, |cx, mut obj| {
        let mut tool = Tool {
            name: String::new(),
            description: String::new(),
            scopes_required: Vec::new(),
            agent_visible: true,
        };
        let mut key = None;
        if let Some((node, name)) = obj.req_string(cx, "name", "the tool's name") {
            let path = obj.at("name");
            if cx.length(&path, node, name, 3, 64) && !rules::is_tool_name(name) {
                cx.error(&path, node.pos, Code::Pattern, format!("`{name}` is not a valid tool name: lowercase letters, digits and underscores, 3 to 64 characters"));
            }
            tool.name = name.to_owned();
            key = Some((name.to_owned(), path, node));
        }
        if let Some((node, text)) =
            obj.req_string(cx, "description", "one line shown to the agent planner")
        {
            let path = obj.at("description");
            if cx.length(&path, node, text.trim(), 1, 1000) && text.trim().contains('\n') {
                cx.error(
                    &path,
                    node.pos,
                    Code::Pattern,
                    "must be a single line (it is shown to the agent planner)",
                );
            }
            tool.description = text.trim().to_owned();
        }
        if let Some(node) = obj.require(
            cx,
            "scopes_required",
            "a list of scopes from required_scopes (may be empty)",
        ) {
            let path = obj.at("scopes_required");
            let entries = cx.string_list(&path, node);
            for (p, n, scope) in &entries {
                if !scope_set.contains(scope) {
                    let declared = if scopes.is_empty() {
                        "required_scopes is empty".to_owned()
                    } else {
                        format!("declared: {}", listing(&scopes))
                    };
                    cx.error(
                        p,
                        n.pos,
                        Code::UndeclaredReference,
                        format!(
                            "scope `{scope}` is not in the top-level required_scopes ({declared})"
                        ),
                    );
                }
            }
            cx.no_duplicates(&entries, "scope");
            tool.scopes_required = entries.iter().map(|(_, _, s)| (*s).to_owned()).collect();
            tool.scopes_required.dedup();
        }
        tool.agent_visible = obj.bool_or(cx, "agent_visible", true);
        obj.finish(
            cx,
            &["name", "description", "scopes_required", "agent_visible"],
        );
        Located { value: tool, key }
    });
    unique_keys(cx, read.iter().map(|t| t.key.as_ref()), "tool");
    declared.tools = read
        .iter()
        .filter(|t| !t.value.name.is_empty())
        .map(|t| t.value.name.clone())
        .collect();
    read.into_iter().map(|t| t.value).collect()
}

pub(super) fn cross_app_dependencies(
    cx: &mut Cx,
    parent: &mut Obj<'_>,
    declared: &Declared,
) -> Vec<CrossAppDependency> {
    let read = each(cx, parent, "cross_app_dependencies", None, |cx, mut obj| {
        let mut dep = CrossAppDependency {
            app_id: String::new(),
            routes: Vec::new(),
            reason: None,
        };
        let mut key = None;
        if let Some((node, app)) =
            obj.req_string(cx, "app_id", "the slug of the app this app calls")
        {
            let path = obj.at("app_id");
            app_slug(cx, &path, node, app);
            if declared.app_id.as_deref() == Some(app) {
                cx.error(
                    &path,
                    node.pos,
                    Code::SelfReference,
                    "an app cannot declare a dependency on itself",
                );
            }
            dep.app_id = app.to_owned();
            key = Some((app.to_owned(), path, node));
        }
        if let Some(node) = obj.get("routes") {
            let path = obj.at("routes");
            for (p, n, route) in cx.string_list(&path, node) {
                match route.split_once(' ').map(|(m, rest)| (Method::parse(m), rest.trim())) {
                    Some((Some(method), path)) if path.starts_with('/') && !path.contains(char::is_whitespace) => {
                        dep.routes.push(format!("{} {path}", method.as_str()));
                    }
                    _ => cx.error(&p, n.pos, Code::Pattern, format!("`{route}` must be `<METHOD> <PATH>`, METHOD one of GET, POST, PUT, DELETE, PATCH and PATH starting with `/`")),
                }
            }
        }
        dep.reason = obj.opt_text(cx, "reason", 500);
        obj.finish(cx, &["app_id", "routes", "reason"]);
        Located { value: dep, key }
    });
    unique_keys(cx, read.iter().map(|d| d.key.as_ref()), "dependency on app");
    read.into_iter().map(|d| d.value).collect()
}

pub(super) fn lifecycle(cx: &mut Cx, parent: &mut Obj<'_>) -> Lifecycle {
    let mut lifecycle = Lifecycle::default();
    let Some(node) = parent.get("lifecycle") else {
        return lifecycle;
    };
    let Some(mut obj) = Obj::new(cx, parent.at("lifecycle"), node) else {
        return lifecycle;
    };
    lifecycle.on_install = obj.bool_or(cx, "on_install", false);
    lifecycle.on_uninstall = obj.bool_or(cx, "on_uninstall", false);
    lifecycle.on_inbound = obj.bool_or(cx, "on_inbound", false);
    lifecycle.on_user_added = obj.bool_or(cx, "on_user_added", false);
    let read = each(cx, &mut obj, "schedules", None, |cx, mut obj| {
        let mut schedule = Schedule {
            name: String::new(),
            cron: String::new(),
        };
        let mut key = None;
        if let Some((node, name)) = obj.req_string(
            cx,
            "name",
            "the schedule's name, used to register its handler",
        ) {
            let path = obj.at("name");
            if cx.length(&path, node, name, 1, 64) && name.contains(char::is_whitespace) {
                cx.error(
                    &path,
                    node.pos,
                    Code::Pattern,
                    format!("`{name}` must not contain white space"),
                );
            }
            schedule.name = name.to_owned();
            key = Some((name.to_owned(), path, node));
        }
        if let Some((node, cron)) = obj.req_string(cx, "cron", "a standard 5-field cron expression")
        {
            schedule.cron = cron_rule(cx, &obj.at("cron"), node, cron);
        }
        obj.finish(cx, &["name", "cron"]);
        Located {
            value: schedule,
            key,
        }
    });
    unique_keys(cx, read.iter().map(|s| s.key.as_ref()), "schedule");
    lifecycle.schedules = read.into_iter().map(|s| s.value).collect();
    obj.finish(
        cx,
        &[
            "on_install",
            "on_uninstall",
            "on_inbound",
            "on_user_added",
            "schedules",
        ],
    );
    lifecycle
}

/// Checks a cron expression; returns it with white space normalised.
pub(super) fn cron_rule(cx: &mut Cx, path: &Path, node: &Node, text: &str) -> String {
    match CronExpr::parse(text) {
        Ok(expr) => expr.to_string(),
        Err(message) => {
            cx.error(
                path,
                node.pos,
                Code::InvalidCron,
                format!("`{text}` is not a standard 5-field cron expression: {message}"),
            );
            text.to_owned()
        }
    }
}

pub(super) fn workflows(cx: &mut Cx, parent: &mut Obj<'_>, declared: &Declared) -> Vec<Workflow> {
    let read = each(
        cx,
        parent,
        "workflows",
        Some((MAX_WORKFLOWS, "workflows")),
        |cx, mut obj| {
            let mut wf = Workflow {
                id: String::new(),
                name: String::new(),
                intent: String::new(),
                flow: Vec::new(),
                triggers: Vec::new(),
                non_triggers: Vec::new(),
                specifics: None,
                tools_required: Vec::new(),
                channels: vec!["*".to_owned()],
            };
            let mut key = None;
            if let Some((node, id)) =
                obj.req_string(cx, "id", "a lowercase slug, unique in the manifest")
            {
                let path = obj.at("id");
                if cx.length(&path, node, id, 1, 64) && !rules::is_lower_slug(id) {
                    cx.error(&path, node.pos, Code::Pattern, format!("`{id}` is not a lowercase slug: lowercase letters, digits, `-` and `_`, at most 64 characters"));
                }
                wf.id = id.to_owned();
                key = Some((id.to_owned(), path, node));
            }
            if let Some((node, name)) = obj.req_string(cx, "name", "a short label") {
                cx.length(&obj.at("name"), node, name, 1, 80);
                wf.name = name.to_owned();
            }
            if let Some((node, intent)) =
                obj.req_string(cx, "intent", "one sentence: when the workflow applies")
            {
                cx.length(&obj.at("intent"), node, intent, 1, 500);
                wf.intent = intent.to_owned();
            }
            if let Some(node) = obj.require(cx, "flow", "an ordered list of 1 to 50 steps") {
                let path = obj.at("flow");
                // string_list below reports a non-list `flow` once.
                if let Value::Seq(items) = &node.value
                    && (items.is_empty() || items.len() > 50)
                {
                    cx.error(
                        &path,
                        node.pos,
                        Code::Count,
                        format!("must have 1 to 50 steps (found {})", items.len()),
                    );
                }
                for (p, n, step) in cx.string_list(&path, node) {
                    cx.length(&p, n, step, 1, 500);
                    wf.flow.push(step.to_owned());
                }
            }
            wf.triggers = text_list(cx, &mut obj, "triggers", 20, 500, "triggers");
            wf.non_triggers = text_list(cx, &mut obj, "non_triggers", 20, 500, "non_triggers");
            wf.specifics = obj.opt_text(cx, "specifics", 2000);
            if let Some(node) = obj.get("tools_required") {
                let path = obj.at("tools_required");
                wf.tools_required = names(
                    cx,
                    &path,
                    node,
                    "tool",
                    rules::is_tool_name,
                    "lowercase letters, digits and underscores",
                );
                let tools = declared.tool_set();
                for (p, n, tool) in quiet_strings(&path, node) {
                    if rules::is_tool_name(tool) && !tools.contains(tool) {
                        cx.warning(&p, n.pos, Code::UndeclaredReference, format!("tool `{tool}` is not declared in this manifest's tools; the workflow is filtered out unless the platform provides it"));
                    }
                }
            }
            if let Some(node) = obj.get("channels") {
                let path = obj.at("channels");
                let channels = names(
                    cx,
                    &path,
                    node,
                    "channel",
                    |c| c == "*" || rules::is_letter_slug(c),
                    "`*`, or a lowercase slug starting with a letter",
                );
                if channels.len() > 1 && channels.iter().any(|c| c == "*") {
                    cx.error(
                        &path,
                        node.pos,
                        Code::MutuallyExclusive,
                        "`*` means every channel and cannot be combined with channel names",
                    );
                }
                if channels.is_empty() {
                    cx.error(
                        &path,
                        node.pos,
                        Code::Count,
                        "must name at least one channel, or be `[\"*\"]` (the default) for all",
                    );
                } else {
                    wf.channels = channels;
                }
            }
            obj.finish(
                cx,
                &[
                    "id",
                    "name",
                    "intent",
                    "flow",
                    "triggers",
                    "non_triggers",
                    "specifics",
                    "tools_required",
                    "channels",
                ],
            );
            Located { value: wf, key }
        },
    );
    unique_keys(cx, read.iter().map(|w| w.key.as_ref()), "workflow id");
    read.into_iter().map(|w| w.value).collect()
}

/// The string entries of a list node, without reporting anything (used for a second look at
/// a list that was already checked).
pub(super) fn quiet_strings<'n>(path: &Path, node: &'n Node) -> Vec<(Path, &'n Node, &'n str)> {
    match &node.value {
        Value::Seq(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, n)| match &n.value {
                Value::Str(s) => Some((path.index(i), n, s.as_str())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

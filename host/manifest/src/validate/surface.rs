//! `http_routes`, `chrome` and `rag_slots`.

use std::collections::{HashMap, HashSet};

use super::tools::{Located, each, unique_keys};
use crate::model::{
    BuiltinTab, Chrome, CustomTab, HttpRoute, Method, Panel, RagScope, RagSlot, Tab,
};
use crate::problem::{Code, Path};
use crate::read::{Cx, Obj, listing};
use crate::rules;
use crate::tree::{Node, Value};

/// Most HTTP routes per manifest.
pub const MAX_HTTP_ROUTES: usize = 30;
/// First path segments the platform keeps for itself.
pub const RESERVED_SEGMENTS: [&str; 6] = ["health", "manifest", "tool", "event", "route", "public"];
/// Most panel tabs.
pub const MAX_TABS: usize = 8;
/// Most knowledge slots per app.
pub const MAX_RAG_SLOTS: usize = 10;

/// Checks a route path against the grammar: `/` then segments separated by `/`, each made of
/// literal runs `[a-z0-9_.-]+` and `{name}` placeholders (`name` = `[a-z_][a-z0-9_]*`), with
/// no two placeholders adjacent, no placeholder name twice, no `.`/`..` segment, no empty
/// segment (so no trailing slash, except for the root path `/`).
/// Returns the problem, or the path's shape with placeholders blanked (`/a/{}`), which is what
/// decides whether two routes collide.
pub fn route_shape(path: &str) -> Result<String, String> {
    let Some(rest) = path.strip_prefix('/') else {
        return Err("must start with `/`".into());
    };
    if rest.is_empty() {
        return Ok("/".into());
    }
    let mut shape = String::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for segment in rest.split('/') {
        if segment.is_empty() {
            return Err("has an empty segment (`//` or a trailing `/`)".into());
        }
        if segment == "." || segment == ".." {
            return Err(format!("segment `{segment}` is not allowed"));
        }
        shape.push('/');
        let mut s = segment;
        let mut last_was_placeholder = false;
        while !s.is_empty() {
            if let Some(after) = s.strip_prefix('{') {
                let Some(end) = after.find('}') else {
                    return Err(format!("segment `{segment}` has an unclosed `{{`"));
                };
                let name = &after[..end];
                let valid = name
                    .as_bytes()
                    .first()
                    .is_some_and(|b| b.is_ascii_lowercase() || *b == b'_')
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
                if !valid {
                    return Err(format!(
                        "placeholder `{{{name}}}` must be a name of lowercase letters, digits and `_`, not starting with a digit"
                    ));
                }
                if last_was_placeholder {
                    return Err(format!(
                        "segment `{segment}` has two placeholders side by side; separate them with a literal"
                    ));
                }
                if !seen.insert(name) {
                    return Err(format!("placeholder `{{{name}}}` appears twice"));
                }
                shape.push_str("{}");
                last_was_placeholder = true;
                s = &after[end + 1..];
            } else {
                let end = s.find('{').unwrap_or(s.len());
                let literal = &s[..end];
                if let Some(bad) = literal.chars().find(|c| {
                    !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'))
                }) {
                    return Err(format!(
                        "segment `{segment}` has `{bad}`; literals may use only lowercase letters, digits, `_`, `.` and `-`"
                    ));
                }
                shape.push_str(literal);
                last_was_placeholder = false;
                s = &s[end..];
            }
        }
    }
    Ok(shape)
}

pub(super) fn http_routes(cx: &mut Cx, parent: &mut Obj<'_>) -> Vec<HttpRoute> {
    let read = each(
        cx,
        parent,
        "http_routes",
        Some((MAX_HTTP_ROUTES, "HTTP routes")),
        |cx, mut obj| {
            let mut route = HttpRoute {
                path: String::new(),
                method: Method::Get,
                public: false,
            };
            let mut shape = None;
            if let Some((node, path)) =
                obj.req_string(cx, "path", "the route path, starting with `/`")
            {
                let p = obj.at("path");
                match route_shape(path) {
                    Ok(s) => {
                        let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
                        if RESERVED_SEGMENTS.contains(&first) {
                            cx.error(&p, node.pos, Code::Reserved, format!("the first segment `/{first}` is reserved by the platform (reserved: /health, /manifest, /tool, /event, /route, /public)"));
                        }
                        shape = Some((s, p, node));
                    }
                    Err(problem) => {
                        cx.error(&p, node.pos, Code::Pattern, format!("`{path}` {problem}"))
                    }
                }
                route.path = path.to_owned();
            }
            let mut method_ok = false;
            if let Some((node, method)) =
                obj.req_string(cx, "method", "GET, POST, PUT, DELETE or PATCH")
            {
                match Method::parse(method) {
                    Some(m) => {
                        route.method = m;
                        method_ok = true;
                    }
                    None => cx.error(
                        &obj.at("method"),
                        node.pos,
                        Code::InvalidValue,
                        format!("must be GET, POST, PUT, DELETE or PATCH (got `{method}`)"),
                    ),
                }
            }
            route.public = obj.bool_or(cx, "public", false);
            if route.public && method_ok && route.method != Method::Get {
                let node = obj.get("method");
                let pos = node.map_or(obj.pos, |n| n.pos);
                cx.error(
                    &obj.at("method"),
                    pos,
                    Code::NotAllowed,
                    format!(
                        "a public route must use GET (got {})",
                        route.method.as_str()
                    ),
                );
            }
            obj.finish(cx, &["path", "method", "public"]);
            let key = shape.map(|(s, p, n)| (format!("{} {s}", route.method.as_str()), p, n));
            Located { value: route, key }
        },
    );
    let mut first_by_shape: HashMap<&str, &HttpRoute> = HashMap::new();
    for route in &read {
        let Some((shape, path, node)) = &route.key else {
            continue;
        };
        if let Some(earlier) = first_by_shape.get(shape.as_str()).copied() {
            cx.error(
                path,
                node.pos,
                Code::Duplicate,
                format!(
                    "{} {} duplicates {} {} (same method and path)",
                    route.value.method.as_str(),
                    route.value.path,
                    earlier.method.as_str(),
                    earlier.path
                ),
            );
        } else {
            first_by_shape.insert(shape, &route.value);
        }
    }
    read.into_iter().map(|r| r.value).collect()
}

pub(super) fn chrome(cx: &mut Cx, parent: &mut Obj<'_>) -> Chrome {
    let mut chrome = Chrome::default();
    let Some(node) = parent.get("chrome") else {
        return chrome;
    };
    let Some(mut obj) = Obj::new(cx, parent.at("chrome"), node) else {
        return chrome;
    };
    if let Some(node) = obj.get("panel")
        && let Some(mut panel) = Obj::new(cx, obj.at("panel"), node)
    {
        chrome.panel = read_panel(cx, &mut panel);
        panel.finish(cx, &["enabled", "default_tab", "width", "tabs"]);
    }
    obj.finish(cx, &["panel"]);
    chrome
}

fn read_panel(cx: &mut Cx, obj: &mut Obj<'_>) -> Panel {
    let mut panel = Panel {
        enabled: obj.bool_or(cx, "enabled", false),
        ..Panel::default()
    };
    if let Some(node) = obj.get("width")
        && let Some(width) = cx.integer(&obj.at("width"), node, 280, 720)
    {
        panel.width = u32::try_from(width).unwrap_or(400);
    }
    if let Some(node) = obj.get("tabs") {
        let path = obj.at("tabs");
        if let Some(items) = cx.list_max(&path, node, MAX_TABS, "tabs") {
            let mut tabs: Vec<(Tab, Path, &Node)> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if let Some(tab) = tab(cx, &path.index(i), item) {
                    tabs.push((tab, path.index(i), item));
                }
            }
            let mut ids: HashSet<&str> = HashSet::new();
            for (tab, p, n) in &tabs {
                if !ids.insert(tab.id()) {
                    cx.error(
                        p,
                        n.pos,
                        Code::Duplicate,
                        format!("tab `{}` is listed more than once", tab.id()),
                    );
                }
            }
            if items.is_empty() {
                cx.error(
                    &path,
                    node.pos,
                    Code::Count,
                    "must list at least one tab (the default is [\"chat\"])",
                );
            }
            if !tabs.is_empty() {
                panel.tabs = tabs.into_iter().map(|(t, _, _)| t).collect();
            }
        }
    }
    panel.default_tab = panel
        .tabs
        .first()
        .map_or_else(|| "chat".to_owned(), |t| t.id().to_owned());
    if let Some((node, tab)) = obj.opt_string(cx, "default_tab") {
        if panel.tabs.iter().any(|t| t.id() == tab) {
            panel.default_tab = tab.to_owned();
        } else {
            let ids: Vec<&str> = panel.tabs.iter().map(Tab::id).collect();
            cx.error(
                &obj.at("default_tab"),
                node.pos,
                Code::UndeclaredReference,
                format!("`{tab}` is not one of the panel's tabs ({})", listing(&ids)),
            );
        }
    }
    panel
}

fn tab(cx: &mut Cx, path: &Path, node: &Node) -> Option<Tab> {
    match &node.value {
        Value::Str(name) => match BuiltinTab::parse(name) {
            Some(b) => Some(Tab::Builtin(b)),
            None => {
                cx.error(path, node.pos, Code::InvalidValue, format!("built-in tab must be `chat`, `settings` or `files` (got `{name}`); write a custom tab as a mapping with id and label"));
                None
            }
        },
        Value::Map(_) => {
            let mut obj = Obj::new(cx, path.clone(), node)?;
            let mut custom = CustomTab {
                id: String::new(),
                label: String::new(),
                icon: None,
                path: String::new(),
            };
            if let Some((n, id)) =
                obj.req_string(cx, "id", "a lowercase slug, unique among the tabs")
            {
                let p = obj.at("id");
                if cx.length(&p, n, id, 1, 64) && !rules::is_lower_slug(id) {
                    cx.error(
                        &p,
                        n.pos,
                        Code::Pattern,
                        format!(
                            "`{id}` is not a lowercase slug: lowercase letters, digits, `-` and `_`"
                        ),
                    );
                }
                custom.id = id.to_owned();
            }
            if let Some((n, label)) =
                obj.req_string(cx, "label", "the tab's label, at most 40 characters")
            {
                cx.length(&obj.at("label"), n, label, 1, 40);
                custom.label = label.to_owned();
            }
            custom.icon = obj.opt_text(cx, "icon", 64);
            custom.path = format!("/panel/{}.html", custom.id);
            if let Some((n, p)) = obj.opt_string(cx, "path") {
                if !p.starts_with('/') || p.contains("..") || p.contains(char::is_whitespace) {
                    cx.error(&obj.at("path"), n.pos, Code::Pattern, format!("`{p}` must be a path under the bundle URL: starting with `/`, without `..` or white space"));
                }
                custom.path = p.to_owned();
            }
            obj.finish(cx, &["id", "label", "icon", "path"]);
            Some(Tab::Custom(custom))
        }
        other => {
            cx.error(
                path,
                node.pos,
                Code::InvalidType,
                format!(
                    "a tab is a built-in name (string) or a custom tab (mapping), found {}",
                    other.kind()
                ),
            );
            None
        }
    }
}

pub(super) fn rag_slots(cx: &mut Cx, parent: &mut Obj<'_>) -> Vec<RagSlot> {
    let read = each(
        cx,
        parent,
        "rag_slots",
        Some((MAX_RAG_SLOTS, "rag slots")),
        |cx, mut obj| {
            let mut slot = RagSlot {
                name: String::new(),
                description: None,
                required: false,
                scope: RagScope::Read,
                suggested_tags: Vec::new(),
            };
            let mut key = None;
            if let Some((node, name)) = obj.req_string(
                cx,
                "name",
                "the slot's name, matching ^[a-z][a-z0-9_]{0,31}$",
            ) {
                let path = obj.at("name");
                if !rules::is_rag_slot_name(name) {
                    cx.error(&path, node.pos, Code::Pattern, format!("`{name}` must match ^[a-z][a-z0-9_]{{0,31}}$ (a lowercase letter, then up to 31 lowercase letters, digits or `_`)"));
                }
                slot.name = name.to_owned();
                key = Some((name.to_owned(), path, node));
            }
            slot.description = obj.opt_text(cx, "description", 2000);
            slot.required = obj.bool_or(cx, "required", false);
            if let Some((node, scope)) = obj.opt_string(cx, "scope") {
                match scope {
                    "read" => slot.scope = RagScope::Read,
                    "read_write" => slot.scope = RagScope::ReadWrite,
                    other => cx.error(
                        &obj.at("scope"),
                        node.pos,
                        Code::InvalidValue,
                        format!("must be `read` or `read_write` (got `{other}`)"),
                    ),
                }
            }
            slot.suggested_tags =
                super::text_list(cx, &mut obj, "suggested_tags", 50, 64, "suggested tags");
            obj.finish(
                cx,
                &["name", "description", "required", "scope", "suggested_tags"],
            );
            Located { value: slot, key }
        },
    );
    unique_keys(cx, read.iter().map(|s| s.key.as_ref()), "rag slot");
    read.into_iter().map(|s| s.value).collect()
}

#[cfg(test)]
mod tests {
    use super::route_shape;

    #[test]
    fn route_grammar() {
        assert_eq!(route_shape("/").as_deref(), Ok("/"));
        assert_eq!(route_shape("/invoices/{id}").as_deref(), Ok("/invoices/{}"));
        assert_eq!(
            route_shape("/files/report-{year}.pdf").as_deref(),
            Ok("/files/report-{}.pdf")
        );
        for bad in [
            "invoices",
            "/a//b",
            "/a/",
            "/A",
            "/a/{Id}",
            "/a/{x}{y}",
            "/a/{x}/{x}",
            "/a/..",
            "/a/{x",
            "/a b",
        ] {
            assert!(route_shape(bad).is_err(), "{bad}");
        }
    }
}

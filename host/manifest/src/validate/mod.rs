//! Strict validation of a manifest tree into the typed [`Manifest`](crate::Manifest).
//!
//! One module per manifest section. Every section is read even after an error elsewhere, so
//! one run reports every problem; cross-references (scopes, tools, agents, heartbeats) are
//! checked against what the manifest declares, after all sections are read.

mod agents;
mod events;
mod heartbeat;
mod runtime;
mod settings;
mod surface;
mod tools;

use std::collections::HashSet;

use crate::model::{API_VERSION, Agent, AgentForm, InstallSetting, Manifest, SettingType};
use crate::problem::{Code, Path};
use crate::read::{Cx, Obj};
use crate::rules;
use crate::tree::{Node, Value};

/// Top-level fields, in the order of docs/manifest.md.
const TOP_FIELDS: &[&str] = &[
    "apiVersion",
    "app_id",
    "version",
    "name",
    "description",
    "icon",
    "category",
    "runtime",
    "network",
    "required_scopes",
    "required_integrations",
    "docs_url",
    "seed_doc_templates_from",
    "cross_app_dependencies",
    "tools",
    "lifecycle",
    "workflows",
    "agent",
    "agents",
    "install_settings",
    "http_routes",
    "chrome",
    "rag_slots",
    "emits",
    "subscribes_to",
];

/// Names the manifest declares, for checking references.
#[derive(Default)]
pub(crate) struct Declared {
    pub(crate) app_id: Option<String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) integrations: Vec<String>,
    pub(crate) tools: Vec<String>,
}

impl Declared {
    pub(crate) fn tool_set(&self) -> HashSet<&str> {
        self.tools.iter().map(String::as_str).collect()
    }
}

/// Validates the whole document; returns the manifest when there is no error-severity problem.
pub(crate) fn manifest(cx: &mut Cx, root: &Node) -> Option<Manifest> {
    let mut obj = Obj::new(cx, Path::root(), root)?;
    let mut declared = Declared::default();

    if let Some((node, value)) =
        obj.req_string(cx, "apiVersion", "the manifest format, `platform/v2`")
        && value != API_VERSION
    {
        cx.error(
            &obj.at("apiVersion"),
            node.pos,
            Code::InvalidValue,
            format!("must be `{API_VERSION}` (got `{value}`)"),
        );
    }
    let app_id = obj
        .req_string(cx, "app_id", "the app's slug")
        .map(|(node, value)| {
            app_slug(cx, &obj.at("app_id"), node, value);
            value.to_owned()
        })
        .unwrap_or_default();
    declared.app_id = Some(app_id.clone());
    let version = obj
        .req_string(cx, "version", "a semantic version X.Y.Z or X.Y.Z-pre")
        .map(|(node, value)| {
            version_rule(cx, &obj.at("version"), node, value);
            value.to_owned()
        })
        .unwrap_or_default();
    let name = obj
        .req_string(cx, "name", "the app's display name")
        .map(|(node, value)| {
            cx.length(&obj.at("name"), node, value, 1, 200);
            value.to_owned()
        })
        .unwrap_or_default();
    let description = obj.opt_text(cx, "description", 4000);
    let icon = obj.opt_text(cx, "icon", 2048);
    let category = obj.opt_text(cx, "category", 64);

    let runtime = runtime::runtime(cx, &mut obj);
    let network = runtime::network(cx, &mut obj);
    declared.scopes = name_list(
        cx,
        &mut obj,
        "required_scopes",
        "scope",
        rules::is_scope_name,
        "a letter followed by letters, digits, `_`, `.`, `:`, `/` or `-`, at most 128 characters",
    );
    declared.integrations = name_list(
        cx,
        &mut obj,
        "required_integrations",
        "integration",
        |s| rules::is_letter_slug(s) && s.len() <= 64,
        "a lowercase slug: letters, digits, `-` and `_`, starting with a letter, at most 64 characters",
    );
    let docs_url = docs_url(cx, &mut obj);
    let seed_doc_templates_from = obj.opt_string(cx, "seed_doc_templates_from").map(|(node, value)| {
        let path = obj.at("seed_doc_templates_from");
        cx.warning(
            &path,
            node.pos,
            Code::Deprecated,
            "`seed_doc_templates_from` is deprecated and meant for first-party apps only; ship templates under defaults/templates/ instead",
        );
        app_slug(cx, &path, node, value);
        value.to_owned()
    });

    let tools = tools::tools(cx, &mut obj, &mut declared);
    let cross_app_dependencies = tools::cross_app_dependencies(cx, &mut obj, &declared);
    let lifecycle = tools::lifecycle(cx, &mut obj);
    let workflows = tools::workflows(cx, &mut obj, &declared);
    let (agent_form, agents) = agents::agents(cx, &mut obj, &declared);
    let install_settings = settings::install_settings(cx, &mut obj, &declared);
    vision_needs_project_picker(cx, root, agent_form, &agents, &install_settings);
    let http_routes = surface::http_routes(cx, &mut obj);
    let chrome = surface::chrome(cx, &mut obj);
    let rag_slots = surface::rag_slots(cx, &mut obj);
    let emits = events::emits(cx, &mut obj);
    let subscribes_to = events::subscribes_to(cx, &mut obj, agent_form, &agents);
    obj.finish(cx, TOP_FIELDS);

    if cx.problems.has_errors() {
        return None;
    }
    debug_assert!(
        agent_form != AgentForm::Plural || agents.iter().filter(|a| a.is_default).count() == 1
    );
    Some(Manifest {
        api_version: API_VERSION.to_owned(),
        app_id,
        version,
        name,
        description,
        icon,
        category,
        runtime,
        network,
        required_scopes: declared.scopes,
        required_integrations: declared.integrations,
        docs_url,
        seed_doc_templates_from,
        cross_app_dependencies,
        tools,
        lifecycle,
        workflows,
        agent_form,
        agents,
        install_settings,
        http_routes,
        chrome,
        rag_slots,
        emits,
        subscribes_to,
    })
}

pub(crate) fn app_slug(cx: &mut Cx, path: &Path, node: &Node, value: &str) {
    if !(3..=64).contains(&value.chars().count()) {
        cx.error(
            path,
            node.pos,
            Code::Length,
            format!(
                "must be 3 to 64 characters long (got {})",
                value.chars().count()
            ),
        );
    }
    if !value.is_empty() && !rules::is_app_slug_chars(value) {
        cx.error(
            path,
            node.pos,
            Code::Pattern,
            format!(
                "`{value}` is not a valid app slug: {}",
                rules::APP_SLUG_RULE
            ),
        );
    }
}

fn version_rule(cx: &mut Cx, path: &Path, node: &Node, value: &str) {
    match semver::Version::parse(value) {
        Ok(v) if v.build.is_empty() => {}
        Ok(_) => cx.error(
            path,
            node.pos,
            Code::Pattern,
            format!("`{value}`: build metadata (`+...`) is not allowed; use X.Y.Z or X.Y.Z-pre"),
        ),
        Err(e) => cx.error(
            path,
            node.pos,
            Code::Pattern,
            format!("`{value}` is not a semantic version X.Y.Z or X.Y.Z-pre ({e})"),
        ),
    }
}

fn docs_url(cx: &mut Cx, obj: &mut Obj<'_>) -> Option<String> {
    let (node, value) = obj.opt_string(cx, "docs_url")?;
    match url::Url::parse(value) {
        Ok(url) if matches!(url.scheme(), "https" | "http") && url.host().is_some() => {
            Some(value.to_owned())
        }
        _ => {
            cx.error(
                &obj.at("docs_url"),
                node.pos,
                Code::Pattern,
                format!("`{value}` is not an absolute http(s) URL"),
            );
            None
        }
    }
}

/// A list of unique names that each satisfy `valid` (described by `rule`).
pub(crate) fn name_list(
    cx: &mut Cx,
    obj: &mut Obj<'_>,
    key: &str,
    what: &str,
    valid: impl Fn(&str) -> bool,
    rule: &str,
) -> Vec<String> {
    let Some(node) = obj.get(key) else {
        return Vec::new();
    };
    names(cx, &obj.at(key), node, what, valid, rule)
}

/// The names of a list node, each checked with `valid` and for duplicates.
pub(crate) fn names(
    cx: &mut Cx,
    path: &Path,
    node: &Node,
    what: &str,
    valid: impl Fn(&str) -> bool,
    rule: &str,
) -> Vec<String> {
    let entries = cx.string_list(path, node);
    for (p, n, v) in &entries {
        if !valid(v) {
            cx.error(
                p,
                n.pos,
                Code::Pattern,
                format!("`{v}` is not a valid {what} name: {rule}"),
            );
        }
    }
    cx.no_duplicates(&entries, what);
    let mut seen = HashSet::with_capacity(entries.len());
    let out: Vec<String> = entries
        .into_iter()
        .filter(|(_, _, v)| seen.insert(*v))
        .map(|(_, _, v)| v.to_owned())
        .collect();
    out
}

/// An optional list of free strings, each of at most `max_len` characters, at most `max` entries.
pub(crate) fn text_list(
    cx: &mut Cx,
    obj: &mut Obj<'_>,
    key: &str,
    max: usize,
    max_len: usize,
    what: &str,
) -> Vec<String> {
    let Some(node) = obj.get(key) else {
        return Vec::new();
    };
    let path = obj.at(key);
    if cx.list_max(&path, node, max, what).is_none() {
        return Vec::new();
    }
    let entries = cx.string_list(&path, node);
    entries
        .into_iter()
        .map(|(p, n, v)| {
            cx.length(&p, n, v, 1, max_len);
            v.to_owned()
        })
        .collect()
}

/// A vision record is created at activation only when the tenant picks a project through a
/// `project_picker` setting; without one the vision never runs, which is worth a warning.
fn vision_needs_project_picker(
    cx: &mut Cx,
    root: &Node,
    form: AgentForm,
    agents: &[Agent],
    settings: &[InstallSetting],
) {
    if settings
        .iter()
        .any(|s| s.kind == SettingType::ProjectPicker)
    {
        return;
    }
    for (i, agent) in agents.iter().enumerate() {
        if agent.vision.is_none() {
            continue;
        }
        let (path, node) = match form {
            AgentForm::Singular => (Path::root().field("agent"), field(root, "agent")),
            _ => (
                Path::root().field("agents").index(i),
                field(root, "agents").and_then(|n| item(n, i)),
            ),
        };
        let pos = node
            .and_then(|n| field(n, "vision"))
            .map_or(root.pos, |n| n.pos);
        cx.warning(
            &path.field("vision"),
            pos,
            Code::Requires,
            "a vision is created at activation only when the tenant selects a project through an install setting of type project_picker, and this manifest declares none",
        );
    }
}

fn field<'n>(node: &'n Node, key: &str) -> Option<&'n Node> {
    match &node.value {
        Value::Map(entries) => entries.iter().find(|(k, _)| k.name == key).map(|(_, v)| v),
        _ => None,
    }
}

fn item(node: &Node, index: usize) -> Option<&Node> {
    match &node.value {
        Value::Seq(items) => items.get(index),
        _ => None,
    }
}

//! The typed, normalised manifest.
//!
//! Values here are produced only by validation: every rule has been checked and every default
//! applied, so consumers never handle a missing port or an unknown schedule type. The serde
//! form is the normalised manifest (field names as in the manifest, defaults filled in), used
//! to store a version and to hand it to other components.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod agents;

pub use agents::*;

/// The single accepted `apiVersion`.
pub const API_VERSION: &str = "platform/v2";

/// A validated app manifest with defaults applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// The app's slug, immutable across versions.
    pub app_id: String,
    /// Semantic version `X.Y.Z` or `X.Y.Z-pre`.
    pub version: String,
    /// Display name.
    pub name: String,
    /// Display description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Display icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Free-form category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// How the app runs.
    pub runtime: RuntimeSection,
    /// Outbound network the app may reach.
    pub network: Network,
    /// Scopes the tenant grants on install.
    pub required_scopes: Vec<String>,
    /// Integration providers that must be configured for the tenant.
    pub required_integrations: Vec<String>,
    /// External documentation link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs_url: Option<String>,
    /// Deprecated: first-party app whose default templates are cloned at activation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_doc_templates_from: Option<String>,
    /// Apps this app calls.
    pub cross_app_dependencies: Vec<CrossAppDependency>,
    /// Tools the app serves.
    pub tools: Vec<Tool>,
    /// Lifecycle hooks and named schedules.
    pub lifecycle: Lifecycle,
    /// Orchestrator routing hints.
    pub workflows: Vec<Workflow>,
    /// Which agent form the manifest used.
    pub agent_form: AgentForm,
    /// The app's agents. The singular `agent` form becomes one agent with id `default` and
    /// `is_default: true`; a headless app has none.
    pub agents: Vec<Agent>,
    /// Settings collected from the tenant at install.
    pub install_settings: Vec<InstallSetting>,
    /// HTTP routes the app serves.
    pub http_routes: Vec<HttpRoute>,
    /// Side-panel configuration.
    pub chrome: Chrome,
    /// Knowledge slots bound to tenant collections at activation.
    pub rag_slots: Vec<RagSlot>,
    /// Event names the app emits.
    pub emits: Vec<String>,
    /// Events the app subscribes to.
    pub subscribes_to: Vec<Subscription>,
}

impl Manifest {
    /// The agent that `ctx.agent.ask` reaches without an explicit agent.
    #[must_use]
    pub fn default_agent(&self) -> Option<&Agent> {
        self.agents.iter().find(|a| a.is_default)
    }

    /// A tool by name.
    #[must_use]
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// `runtime`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeSection {
    /// OCI image reference.
    pub image: String,
    /// Port the container listens on (default 8080).
    pub port: u16,
    /// Resource limits.
    pub resources: Resources,
    /// Non-secret environment variables.
    pub env: BTreeMap<String, String>,
}

/// `runtime.resources`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Hard memory cap in MiB (default 256).
    pub memory_mb: u32,
    /// CPU share in cores (default 0.5).
    pub cpu_cores: f64,
}

/// `network`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Network {
    /// Hostnames the app may reach, lower-cased. `*.example.com` matches subdomains.
    pub egress_hosts: Vec<String>,
}

/// `cross_app_dependencies[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossAppDependency {
    /// Slug of the target app.
    pub app_id: String,
    /// Documentation-only `<METHOD> <PATH>` entries, method upper-cased.
    pub routes: Vec<String>,
    /// One-sentence justification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `tools[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// Tool name.
    pub name: String,
    /// One-line description for the agent planner.
    pub description: String,
    /// Scopes needed to call the tool; a subset of `required_scopes`.
    pub scopes_required: Vec<String>,
    /// When false only the app's own handlers may call it (default true).
    pub agent_visible: bool,
}

/// `lifecycle`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Lifecycle {
    /// Fires on first activation.
    pub on_install: bool,
    /// Fires on deactivation.
    pub on_uninstall: bool,
    /// Subscribes to tenant inbound channel events.
    pub on_inbound: bool,
    /// Fires when a new user joins the tenant.
    pub on_user_added: bool,
    /// Named cron schedules.
    pub schedules: Vec<Schedule>,
}

/// `lifecycle.schedules[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Schedule name, used to register its handler.
    pub name: String,
    /// Standard 5-field cron expression.
    pub cron: String,
}

/// `workflows[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workflow {
    /// Unique slug.
    pub id: String,
    /// Short label.
    pub name: String,
    /// When the workflow applies.
    pub intent: String,
    /// Ordered steps.
    pub flow: Vec<String>,
    /// Positive cues.
    pub triggers: Vec<String>,
    /// Negative cues.
    pub non_triggers: Vec<String>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specifics: Option<String>,
    /// Tools the workflow needs.
    pub tools_required: Vec<String>,
    /// Channel names, or `["*"]` for all (default).
    pub channels: Vec<String>,
}

/// `install_settings[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallSetting {
    /// Key in `ctx.config`.
    pub id: String,
    /// Value type.
    #[serde(rename = "type")]
    pub kind: SettingType,
    /// Label in the consent form.
    pub label: String,
    /// Helper text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A missing required value blocks activation.
    pub required: bool,
    /// Default value, matching the type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<serde_json::Value>,
    /// Allowed values for `select` and `select_or_custom`.
    pub options: Vec<String>,
    /// Lower bound for `number`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Upper bound for `number`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Include the value in the frontend bundle's init payload.
    pub expose_to_bundle: bool,
    /// Value the platform fills server-side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_default: Option<AutoDefault>,
}

/// `install_settings[].type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingType {
    /// One-line text.
    String,
    /// Multi-line text.
    Text,
    /// A number.
    Number,
    /// A boolean.
    Boolean,
    /// One of `options`.
    Select,
    /// One of `options` or free text.
    SelectOrCustom,
    /// A project of the tenant.
    ProjectPicker,
    /// A secret value.
    Secret,
}

impl SettingType {
    /// All values, in manifest spelling.
    pub const ALL: [&'static str; 8] = [
        "string",
        "text",
        "number",
        "boolean",
        "select",
        "select_or_custom",
        "project_picker",
        "secret",
    ];
}

/// `install_settings[].auto_default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AutoDefault {
    /// User id of the activating user.
    ActivatorUserId,
    /// Primary address of the connected mail provider.
    MailPrimaryEmail,
}

/// `http_routes[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpRoute {
    /// Path template.
    pub path: String,
    /// Method, upper case.
    pub method: Method,
    /// Reachable without a tenant session (GET only).
    pub public: bool,
}

/// HTTP methods allowed for routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    /// GET.
    Get,
    /// POST.
    Post,
    /// PUT.
    Put,
    /// DELETE.
    Delete,
    /// PATCH.
    Patch,
}

impl Method {
    /// Parses a method case-insensitively.
    #[must_use]
    pub fn parse(text: &str) -> Option<Method> {
        match text.to_ascii_uppercase().as_str() {
            "GET" => Some(Method::Get),
            "POST" => Some(Method::Post),
            "PUT" => Some(Method::Put),
            "DELETE" => Some(Method::Delete),
            "PATCH" => Some(Method::Patch),
            _ => None,
        }
    }

    /// Upper-case name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Patch => "PATCH",
        }
    }
}

/// `chrome`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Chrome {
    /// The side panel.
    pub panel: Panel,
}

/// `chrome.panel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Panel {
    /// Must be true to render the panel (default false).
    pub enabled: bool,
    /// Initially active tab (default: the first tab).
    pub default_tab: String,
    /// Width in pixels (default 400).
    pub width: u32,
    /// Tabs (default `["chat"]`).
    pub tabs: Vec<Tab>,
}

impl Default for Panel {
    fn default() -> Self {
        Panel {
            enabled: false,
            default_tab: "chat".to_owned(),
            width: 400,
            tabs: vec![Tab::Builtin(BuiltinTab::Chat)],
        }
    }
}

/// A panel tab: a built-in name or a custom tab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Tab {
    /// `chat`, `settings` or `files`.
    Builtin(BuiltinTab),
    /// A custom tab served from the bundle.
    Custom(CustomTab),
}

impl Tab {
    /// The tab's id (the built-in name for built-in tabs).
    #[must_use]
    pub fn id(&self) -> &str {
        match self {
            Tab::Builtin(b) => b.as_str(),
            Tab::Custom(c) => &c.id,
        }
    }
}

/// Built-in tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuiltinTab {
    /// The chat tab.
    Chat,
    /// The settings tab.
    Settings,
    /// The files tab.
    Files,
}

impl BuiltinTab {
    /// Parses a built-in tab name.
    #[must_use]
    pub fn parse(text: &str) -> Option<BuiltinTab> {
        match text {
            "chat" => Some(BuiltinTab::Chat),
            "settings" => Some(BuiltinTab::Settings),
            "files" => Some(BuiltinTab::Files),
            _ => None,
        }
    }

    /// Manifest spelling.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            BuiltinTab::Chat => "chat",
            BuiltinTab::Settings => "settings",
            BuiltinTab::Files => "files",
        }
    }
}

/// A custom panel tab.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomTab {
    /// Unique slug.
    pub id: String,
    /// Label, at most 40 chars.
    pub label: String,
    /// Icon name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
    /// Path under the bundle URL (default `/panel/<id>.html`).
    pub path: String,
}

/// `rag_slots[]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RagSlot {
    /// Unique name.
    pub name: String,
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// An unbound required slot blocks activation.
    pub required: bool,
    /// Access (default read).
    pub scope: RagScope,
    /// Tags suggested for binding.
    pub suggested_tags: Vec<String>,
}

/// `rag_slots[].scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RagScope {
    /// Read only.
    Read,
    /// Read and write.
    ReadWrite,
}

/// `subscribes_to[]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Subscription {
    /// App slug of the emitter.
    pub emitter_app: String,
    /// Event name.
    pub event_name: String,
    /// What receives the event.
    pub target: SubscriptionTarget,
}

/// The receiver of a subscribed event.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubscriptionTarget {
    /// The agent is invoked.
    Agent(String),
    /// The heartbeat `slug` of agent `agent` is woken.
    Heartbeat {
        /// Owning agent id.
        agent: String,
        /// Heartbeat slug.
        slug: String,
    },
}

impl HttpRoute {
    /// Matches a request path against this route's pattern and returns the placeholder values
    /// in order, or none when the path does not match. A placeholder matches one or more
    /// characters within a segment; a segment may mix literals and placeholders
    /// (`inv-{id}.pdf`). A trailing slash on the path is ignored.
    #[must_use]
    pub fn match_path(&self, path: &str) -> Option<Vec<(String, String)>> {
        match_route(&self.path, path)
    }
}

/// Matches `path` against a route pattern (see [`HttpRoute::match_path`]).
#[must_use]
pub fn match_route(pattern: &str, path: &str) -> Option<Vec<(String, String)>> {
    let path = path.split(['?', '#']).next().unwrap_or("");
    let trim = |p: &str| -> String {
        let p = p.strip_prefix('/').unwrap_or(p);
        p.strip_suffix('/').unwrap_or(p).to_owned()
    };
    let (pattern, path) = (trim(pattern), trim(path));
    let pattern_segments: Vec<&str> = pattern.split('/').collect();
    let path_segments: Vec<&str> = path.split('/').collect();
    if pattern_segments.len() != path_segments.len() {
        return None;
    }
    let mut params = Vec::new();
    for (pattern, segment) in pattern_segments.iter().zip(&path_segments) {
        match_segment(pattern, segment, &mut params)?;
    }
    Some(params)
}

/// One segment: literal pieces must appear in order and each placeholder takes at least one
/// character; the first assignment found with the shortest leading placeholders wins.
fn match_segment(pattern: &str, segment: &str, params: &mut Vec<(String, String)>) -> Option<()> {
    let mut pieces = Vec::new();
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}')? + open;
        if open > 0 {
            pieces.push(Piece::Literal(&rest[..open]));
        }
        pieces.push(Piece::Param(&rest[open + 1..close]));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Literal(rest));
    }
    // Request paths are untrusted: bound the backtracking.
    if segment.len() > 1024 {
        return None;
    }
    let found = match_pieces(&pieces, segment)?;
    params.extend(found);
    Some(())
}

#[derive(Clone, Copy)]
enum Piece<'a> {
    Literal(&'a str),
    Param(&'a str),
}

fn match_pieces(pieces: &[Piece<'_>], segment: &str) -> Option<Vec<(String, String)>> {
    let Some((first, rest)) = pieces.split_first() else {
        return segment.is_empty().then(Vec::new);
    };
    match *first {
        Piece::Literal(text) => match_pieces(rest, segment.strip_prefix(text)?),
        Piece::Param(name) => segment
            .char_indices()
            .skip(1)
            .map(|(i, _)| i)
            .chain([segment.len()])
            .find_map(|end| {
                if end == 0 {
                    return None;
                }
                let mut found = match_pieces(rest, &segment[end..])?;
                found.insert(0, (name.to_owned(), segment[..end].to_owned()));
                Some(found)
            }),
    }
}

#[cfg(test)]
mod route_tests {
    use super::match_route;

    fn m(pattern: &str, path: &str) -> Option<Vec<(String, String)>> {
        match_route(pattern, path)
    }

    #[test]
    fn literal_and_placeholder_segments() {
        assert_eq!(m("/invoices", "/invoices"), Some(vec![]));
        assert_eq!(m("/invoices", "/invoices/"), Some(vec![]));
        assert_eq!(m("/invoices", "/invoice"), None);
        assert_eq!(
            m("/invoices/{id}", "/invoices/42"),
            Some(vec![("id".into(), "42".into())])
        );
        assert_eq!(
            m("/invoices/{id}", "/invoices/42?x=1"),
            Some(vec![("id".into(), "42".into())])
        );
        assert_eq!(m("/invoices/{id}", "/invoices/"), None);
        assert_eq!(m("/invoices/{id}", "/invoices/4/2"), None);
    }

    #[test]
    fn mixed_segments() {
        assert_eq!(
            m("/files/inv-{id}.pdf", "/files/inv-7.pdf"),
            Some(vec![("id".into(), "7".into())])
        );
        assert_eq!(
            m("/files/inv-{id}.pdf", "/files/inv-7.2.pdf"),
            Some(vec![("id".into(), "7.2".into())])
        );
        assert_eq!(m("/files/inv-{id}.pdf", "/files/inv-.pdf"), None);
        assert_eq!(m("/files/inv-{id}.pdf", "/files/inv-7.txt"), None);
        assert_eq!(
            m("/d/{a}-{b}", "/d/x-y-z"),
            Some(vec![("a".into(), "x".into()), ("b".into(), "y-z".into())])
        );
    }
}

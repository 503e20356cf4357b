//! The app's manifest as the SDK sees it: embedded and validated at build time by
//! [`manifest!`](crate::manifest), or loaded at run time with [`load_manifest`].

use std::path::Path;

/// What the SDK needs from the manifest to check registrations. Built by
/// [`manifest!`](crate::manifest); every field mirrors the manifest.
#[derive(Debug, Clone, Copy)]
pub struct ManifestInfo {
    /// The manifest text as written.
    pub source: &'static str,
    /// `app_id`.
    pub app_id: &'static str,
    /// `version`.
    pub version: &'static str,
    /// `required_scopes`.
    pub required_scopes: &'static [&'static str],
    /// `tools`.
    pub tools: &'static [ToolInfo],
    /// `lifecycle`.
    pub lifecycle: LifecycleInfo,
    /// `agents` (the single `agent` has the slug `default`).
    pub agents: &'static [AgentInfo],
    /// `emits`.
    pub emits: &'static [&'static str],
    /// `subscribes_to`.
    pub subscriptions: &'static [SubscriptionInfo],
    /// `http_routes`.
    pub routes: &'static [RouteInfo],
    /// `install_settings` ids.
    pub settings: &'static [&'static str],
    /// `network.egress_hosts`.
    pub egress_hosts: &'static [&'static str],
}

/// One entry of `tools`.
#[derive(Debug, Clone, Copy)]
pub struct ToolInfo {
    /// `name`.
    pub name: &'static str,
    /// `scopes_required`.
    pub scopes_required: &'static [&'static str],
    /// `agent_visible`.
    pub agent_visible: bool,
}

/// One declared agent.
#[derive(Debug, Clone, Copy)]
pub struct AgentInfo {
    /// The slug (`default` for the single `agent`).
    pub id: &'static str,
    /// The display name.
    pub name: &'static str,
    /// `team`: the agents it may delegate to.
    pub team: &'static [&'static str],
    /// Whether it is the app's default agent.
    pub is_default: bool,
}

/// `lifecycle`.
#[derive(Debug, Clone, Copy)]
pub struct LifecycleInfo {
    /// `on_install`.
    pub on_install: bool,
    /// `on_uninstall`.
    pub on_uninstall: bool,
    /// `on_inbound`.
    pub on_inbound: bool,
    /// `on_user_added`.
    pub on_user_added: bool,
    /// Names in `schedules`.
    pub schedules: &'static [&'static str],
}

/// One entry of `subscribes_to`.
#[derive(Debug, Clone, Copy)]
pub struct SubscriptionInfo {
    /// `emitter_app`.
    pub emitter_app: &'static str,
    /// `event_name`.
    pub event_name: &'static str,
    /// `target_agent`, when the subscription targets an agent.
    pub target_agent: Option<&'static str>,
}

/// One entry of `http_routes`.
#[derive(Debug, Clone, Copy)]
pub struct RouteInfo {
    /// Upper-case method.
    pub method: &'static str,
    /// The path pattern.
    pub path: &'static str,
    /// `public`.
    pub public: bool,
}

/// The sandbox rules read the embedded manifest through this, as the host reads its own.
impl atrium_manifest::sandbox::Declarations for ManifestInfo {
    fn app_id(&self) -> &str {
        self.app_id
    }

    fn agent_ids(&self) -> Vec<&str> {
        self.agents.iter().map(|a| a.id).collect()
    }

    fn agent_name(&self, slug: &str) -> Option<&str> {
        self.agents.iter().find(|a| a.id == slug).map(|a| a.name)
    }

    fn agent_team(&self, slug: &str) -> Vec<&str> {
        self.agents
            .iter()
            .find(|a| a.id == slug)
            .map(|a| a.team.to_vec())
            .unwrap_or_default()
    }

    fn default_agent(&self) -> Option<&str> {
        self.agents.iter().find(|a| a.is_default).map(|a| a.id)
    }

    fn emits(&self) -> Vec<&str> {
        self.emits.to_vec()
    }

    fn required_scopes(&self) -> Vec<&str> {
        self.required_scopes.to_vec()
    }

    fn public_routes(&self) -> Vec<&str> {
        self.routes
            .iter()
            .filter(|r| r.public)
            .map(|r| r.path)
            .collect()
    }

    fn declares_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name).collect()
    }

    fn lifecycle_enabled(&self, hook: &str) -> bool {
        let l = &self.lifecycle;
        atrium_manifest::sandbox::registration::hook_enabled(
            hook,
            [l.on_install, l.on_uninstall, l.on_inbound, l.on_user_added],
        )
    }

    fn schedules(&self) -> Vec<&str> {
        self.lifecycle.schedules.to_vec()
    }

    fn subscribed_events(&self) -> Vec<&str> {
        self.subscriptions.iter().map(|s| s.event_name).collect()
    }

    fn routes(&self) -> Vec<(&str, &str)> {
        self.routes.iter().map(|r| (r.method, r.path)).collect()
    }
}

/// The manifest could not be loaded: it does not parse or breaks the schema (docs/sdk.md).
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestError {
    /// One line per problem: `path: message [code] (line L, column C)`.
    pub problems: Vec<String>,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "invalid manifest: {}", self.problems.join("; "))
    }
}

impl std::error::Error for ManifestError {}

/// Loads and strictly validates a manifest from text (`loadManifestFromString` in docs/sdk.md).
pub fn load_manifest_from_str(text: &str) -> Result<atrium_manifest::Manifest, ManifestError> {
    let validation = atrium_manifest::validate(text);
    let problems: Vec<String> = validation.errors().map(ToString::to_string).collect();
    match validation.manifest {
        Some(manifest) if problems.is_empty() => Ok(manifest),
        _ => Err(ManifestError { problems }),
    }
}

/// Loads and strictly validates a manifest file (`loadManifest` in docs/sdk.md).
pub fn load_manifest(path: impl AsRef<Path>) -> Result<atrium_manifest::Manifest, ManifestError> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path).map_err(|e| ManifestError {
        problems: vec![format!("cannot read {}: {e}", path.display())],
    })?;
    load_manifest_from_str(&text)
}

//! The sandbox rules: what the host checks on every call an app makes into the platform.
//!
//! A component's import (`rooms.post`), the Rust SDK's native test double and the container
//! shim's callback endpoints all refuse the same inputs with the same decision and the same
//! words, because they all call the functions of this module. Nothing here does I/O: the
//! checks take what the manifest declares (through [`Declarations`]) and the call's chain, and
//! answer either the checked values to hand to the platform or a [`ToolRefusal`] /
//! [`AgentRefusal`]. What only the platform can know (room membership, grants, the tool
//! catalogue) stays with the platform, which uses the same [`Decision`] vocabulary.
//!
//! ```
//! use atrium_manifest::sandbox::{self, ChainContext, Decision};
//!
//! let manifest = atrium_manifest::parse(
//!     "apiVersion: platform/v2\napp_id: desk\nversion: 1.0.0\nname: Desk\n\
//!      runtime:\n  image: a/b:1\nagent:\n  name: Clerk\n  system_prompt: Help.\n",
//! ).unwrap();
//! let granted = |scope: &str| scope == "rooms.write";
//! let refused = sandbox::room_post(&manifest, "", "hello", None, granted).unwrap_err();
//! assert_eq!(refused.decision, Decision::InvalidArguments);
//! let post = sandbox::room_post(&manifest, "default", "hello", None, granted).unwrap();
//! assert_eq!(post.sender_ref, "desk:default");
//! let refused = sandbox::room_post(&manifest, "default", "hello", None, |_| false).unwrap_err();
//! assert_eq!(refused.decision, Decision::ScopeDenied);
//! assert!(ChainContext::root().enter(Some("desk:default")).is_ok());
//! ```

mod capability;
mod chain;
mod checks;
mod egress;
mod mentions;
pub mod registration;

use std::fmt;

pub use capability::{Capability, ErrorKind, reason_decision, unavailable_capability};
pub use chain::{
    ChainContext, ChainHeaderError, ENV_CHAIN_DEPTH, ENV_VISITED_AGENTS, HEADER_CHAIN_DEPTH,
    HEADER_VISITED_AGENTS, MAX_CHAIN_DEPTH,
};
pub use checks::{
    CheckedPost, MAX_COMMITMENT_CONTENT_CHARS, MAX_COMMITMENT_TITLE_CHARS, MAX_EVENT_PAYLOAD_BYTES,
    MAX_ROOM_MESSAGE_CHARS, ROOMS_WRITE_SCOPE, ask, commitment, declared_names, delegate, emit,
    fetch, invoke, public_callback_path, room_post, secret_key, tool_arguments, tool_scopes,
};
pub use egress::EgressPolicy;
pub use mentions::{MAX_ROUTED_MENTIONS, extract_mentions};

use crate::Manifest;

/// Why a tool call, room post or commitment was refused: the `decision` of
/// `ToolCallError` (docs/wit.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The install lacks a scope the tool needs (`needed_scopes` lists them).
    ScopeDenied,
    /// The platform has no tool of that name.
    UnknownTool,
    /// The arguments are malformed (not JSON, not an object, an empty required field, ...).
    InvalidArguments,
    /// The tool's result does not have the shape the caller asked for (SDK side).
    InvalidResult,
    /// `from_agent` is not an agent of the calling app.
    UnknownAgent,
    /// The room does not exist for the call's tenant.
    UnknownRoom,
    /// The sender is not a member of the room.
    NotMember,
    /// The platform could not be reached.
    NetworkError,
    /// The local runner or a test has no mock for the tool.
    Unmocked,
    /// The host does not offer the capability (`rooms.post`, `agent.ask`, ...): the same call
    /// may succeed on another host or a later version ([`Capability`]).
    NotAvailable,
    /// The platform failed while serving a well-formed call (a store or upstream fault); the
    /// same call may succeed later.
    Failed,
}

impl Decision {
    /// Every decision, in declaration order.
    pub const ALL: [Decision; 11] = [
        Decision::ScopeDenied,
        Decision::UnknownTool,
        Decision::InvalidArguments,
        Decision::InvalidResult,
        Decision::UnknownAgent,
        Decision::UnknownRoom,
        Decision::NotMember,
        Decision::NetworkError,
        Decision::Unmocked,
        Decision::NotAvailable,
        Decision::Failed,
    ];

    /// The wire name, as in `ToolCallError.decision`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::ScopeDenied => "scope_denied",
            Decision::UnknownTool => "unknown_tool",
            Decision::InvalidArguments => "invalid_arguments",
            Decision::InvalidResult => "invalid_result",
            Decision::UnknownAgent => "unknown_agent",
            Decision::UnknownRoom => "unknown_room",
            Decision::NotMember => "not_member",
            Decision::NetworkError => "network_error",
            Decision::Unmocked => "unmocked",
            Decision::NotAvailable => "not_available",
            Decision::Failed => "failed",
        }
    }

    /// The decision with this wire name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Decision> {
        Decision::ALL.into_iter().find(|d| d.as_str() == name)
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused tool call, room post or commitment (`ToolCallError`, docs/wit.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRefusal {
    /// The tool, or `rooms.post` / `commitments.add`.
    pub tool_name: String,
    /// Why.
    pub decision: Decision,
    /// A sentence for the developer.
    pub message: String,
    /// The scopes the install lacks, for [`Decision::ScopeDenied`].
    pub needed_scopes: Vec<String>,
    /// The argument at fault, when the refusal is about one (`content`, `from_agent`): what an
    /// HTTP caller's error names as its `param`.
    pub argument: Option<&'static str>,
}

impl ToolRefusal {
    /// A refusal that needs no scope.
    #[must_use]
    pub fn new(tool_name: &str, decision: Decision, message: impl Into<String>) -> Self {
        ToolRefusal {
            tool_name: tool_name.to_owned(),
            decision,
            message: message.into(),
            needed_scopes: Vec::new(),
            argument: None,
        }
    }

    /// The same refusal, about `argument`.
    #[must_use]
    pub fn at(mut self, argument: &'static str) -> Self {
        self.argument = Some(argument);
        self
    }
}

/// A refused agent call: delegation, cross-app invocation or fetch, emit, ask (`AgentCallError`,
/// docs/wit.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRefusal {
    /// A sentence saying why.
    pub reason: String,
}

impl AgentRefusal {
    /// A refusal with this reason.
    #[must_use]
    pub fn new(reason: impl Into<String>) -> Self {
        AgentRefusal {
            reason: reason.into(),
        }
    }
}

/// What the checks need to know of the calling app's manifest. [`Manifest`] implements it for
/// the host; the SDK implements it for the manifest it embeds at build time.
pub trait Declarations {
    /// `app_id`.
    fn app_id(&self) -> &str;
    /// The slugs of the declared agents (`default` for the single `agent`).
    fn agent_ids(&self) -> Vec<&str>;
    /// The display name of agent `slug`, or none when the app declares no such agent.
    fn agent_name(&self, slug: &str) -> Option<&str>;
    /// The `team` of agent `slug` (empty when it has none or does not exist).
    fn agent_team(&self, slug: &str) -> Vec<&str>;
    /// The slug of the default agent, if the app has agents.
    fn default_agent(&self) -> Option<&str>;
    /// `emits`.
    fn emits(&self) -> Vec<&str>;
    /// `required_scopes`.
    fn required_scopes(&self) -> Vec<&str>;
    /// The path patterns of the routes declared `public: true`.
    fn public_routes(&self) -> Vec<&str>;
    /// Whether `tools` has an entry named `name`.
    fn declares_tool(&self, name: &str) -> bool;
    /// The names in `tools`.
    fn tool_names(&self) -> Vec<&str>;
    /// Whether `lifecycle.<hook>` is true; false for a name that is no lifecycle hook.
    fn lifecycle_enabled(&self, hook: &str) -> bool;
    /// The names in `lifecycle.schedules`.
    fn schedules(&self) -> Vec<&str>;
    /// The `event_name` of every `subscribes_to` entry, in order.
    fn subscribed_events(&self) -> Vec<&str>;
    /// `http_routes` as (upper-case method, path pattern).
    fn routes(&self) -> Vec<(&str, &str)>;
}

impl Declarations for Manifest {
    fn app_id(&self) -> &str {
        &self.app_id
    }

    fn agent_ids(&self) -> Vec<&str> {
        self.agents.iter().map(|a| a.id.as_str()).collect()
    }

    fn agent_name(&self, slug: &str) -> Option<&str> {
        self.agents
            .iter()
            .find(|a| a.id == slug)
            .map(|a| a.name.as_str())
    }

    fn agent_team(&self, slug: &str) -> Vec<&str> {
        self.agents
            .iter()
            .find(|a| a.id == slug)
            .map(|a| a.team.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    fn default_agent(&self) -> Option<&str> {
        Manifest::default_agent(self).map(|a| a.id.as_str())
    }

    fn emits(&self) -> Vec<&str> {
        self.emits.iter().map(String::as_str).collect()
    }

    fn required_scopes(&self) -> Vec<&str> {
        self.required_scopes.iter().map(String::as_str).collect()
    }

    fn public_routes(&self) -> Vec<&str> {
        self.http_routes
            .iter()
            .filter(|r| r.public)
            .map(|r| r.path.as_str())
            .collect()
    }

    fn declares_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    fn lifecycle_enabled(&self, hook: &str) -> bool {
        let l = &self.lifecycle;
        registration::hook_enabled(
            hook,
            [l.on_install, l.on_uninstall, l.on_inbound, l.on_user_added],
        )
    }

    fn schedules(&self) -> Vec<&str> {
        self.lifecycle
            .schedules
            .iter()
            .map(|s| s.name.as_str())
            .collect()
    }

    fn subscribed_events(&self) -> Vec<&str> {
        self.subscribes_to
            .iter()
            .map(|s| s.event_name.as_str())
            .collect()
    }

    fn routes(&self) -> Vec<(&str, &str)> {
        self.http_routes
            .iter()
            .map(|r| (r.method.as_str(), r.path.as_str()))
            .collect()
    }
}

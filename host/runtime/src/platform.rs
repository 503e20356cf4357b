//! The platform side of the contract, as a trait.
//!
//! The runtime does not know the platform: it applies the sandbox rules
//! ([`atrium_manifest::sandbox`]: scopes, chain depth, cycles, declared names, sizes) and hands
//! everything else to a [`Platform`]. The host's platform implements it over the SQL store;
//! [`crate::memory::MemoryPlatform`] implements it in memory for tests and the local runner.
//!
//! Every capability has a default that answers decision `not_available` naming it
//! ([`Capability`]), so a platform implements what it offers and nothing else, and an app
//! sees one typed answer for whatever its host does not offer.

use async_trait::async_trait;
use serde_json::Value;

use atrium_manifest::sandbox::{AgentRefusal, Capability, ToolRefusal};

use crate::{
    AgentCallError, CallInfo, ChainContext, EmitResult, FetchResponse, RoomPost, ToolCallError,
};

/// A room post the runtime has checked: the sender is one of the calling app's agents.
#[derive(Debug, Clone, PartialEq)]
pub struct RoomPostRequest {
    /// The room id.
    pub room_id: String,
    /// The text (at most 20,000 characters).
    pub content: String,
    /// The sender's canonical key, built by the host as `<app_id>:<from_agent>`.
    pub sender_ref: String,
    /// The sending agent's display name from the manifest.
    pub sender_display: String,
    /// A JSON object.
    pub metadata: Value,
}

/// What a refused delegation or cross-app call asked for ([`Platform::refused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused<'a> {
    /// `team.delegate(target, _, from_agent)`.
    Delegate {
        /// The teammate asked for.
        target: &'a str,
        /// The agent delegating.
        from_agent: &'a str,
    },
    /// `apps.invoke(app, agent, _)`.
    Invoke {
        /// The callee.
        app: &'a str,
        /// Its agent asked for.
        agent: &'a str,
    },
    /// `apps.fetch(app, path, method, _)`.
    Fetch {
        /// The callee.
        app: &'a str,
        /// The method as the app gave it.
        method: &'a str,
        /// The path.
        path: &'a str,
    },
}

/// A commitment the runtime has checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Commitment {
    /// A short title.
    pub title: String,
    /// The details.
    pub content: String,
    /// The committing agent's slug.
    pub from_agent: String,
    /// When it is due, ISO-8601, if given.
    pub due_at: Option<String>,
}

/// What the platform provides to apps. Every method gets the call being served; nested agent
/// calls also get the chain context the callee must run with, already advanced and checked.
///
/// Each capability's default answers `not_available` ([`tool_not_available`],
/// [`agent_not_available`]); only [`Platform::public_callback_url`] must be implemented.
#[async_trait]
pub trait Platform: Send + Sync + 'static {
    /// The scopes a platform tool needs, or none when no such tool exists (the default: the
    /// platform has no tools, so every tool is `unknown_tool`).
    fn tool_scopes(&self, _tool: &str) -> Option<Vec<String>> {
        None
    }

    /// Runs a platform tool whose scopes the install holds.
    async fn call_tool(
        &self,
        _call: &CallInfo,
        _tool: &str,
        _args: Value,
    ) -> Result<Value, ToolCallError> {
        Err(tool_not_available(Capability::ToolsCall))
    }

    /// A secret's value for the call's tenant and app, or none. Failures also give none.
    async fn secret(&self, _call: &CallInfo, _key: &str) -> Option<String> {
        None
    }

    /// Stores a room message and routes its mentions.
    async fn post_to_room(
        &self,
        _call: &CallInfo,
        _post: RoomPostRequest,
    ) -> Result<RoomPost, ToolCallError> {
        Err(tool_not_available(Capability::RoomsPost))
    }

    /// Runs agent `target` of the calling app (team delegation, team checks already passed).
    async fn delegate(
        &self,
        _call: &CallInfo,
        _chain: &ChainContext,
        _target: &str,
        _prompt: &str,
        _from_agent: &str,
    ) -> Result<String, AgentCallError> {
        Err(agent_not_available(Capability::TeamDelegate))
    }

    /// A delegation or cross-app call the sandbox refused (`reason`) before it reached the
    /// platform: nothing runs, and the platform records it with the calls it runs.
    async fn refused(
        &self,
        _call: &CallInfo,
        _chain: &ChainContext,
        _what: Refused<'_>,
        _reason: &str,
    ) {
    }

    /// Invokes an agent of another app; the platform checks the grant.
    async fn invoke_app(
        &self,
        _call: &CallInfo,
        _chain: &ChainContext,
        _app: &str,
        _agent: &str,
        _prompt: &str,
    ) -> Result<String, AgentCallError> {
        Err(agent_not_available(Capability::AppsInvoke))
    }

    /// Calls a route of another app; the platform checks the `__route__` grant.
    async fn fetch_app(
        &self,
        _call: &CallInfo,
        _chain: &ChainContext,
        _app: &str,
        _path: &str,
        _method: &str,
        _body: Option<Vec<u8>>,
    ) -> Result<FetchResponse, AgentCallError> {
        Err(agent_not_available(Capability::AppsFetch))
    }

    /// Fans an event out to the approved wires.
    async fn emit(
        &self,
        _call: &CallInfo,
        _chain: &ChainContext,
        _name: &str,
        _payload: Value,
    ) -> Result<EmitResult, AgentCallError> {
        Err(agent_not_available(Capability::EventsEmit))
    }

    /// Asks one of the calling app's agents.
    async fn ask(
        &self,
        _call: &CallInfo,
        _chain: &ChainContext,
        _agent: &str,
        _prompt: &str,
    ) -> Result<String, AgentCallError> {
        Err(agent_not_available(Capability::AgentAsk))
    }

    /// Records a commitment and returns its id.
    async fn add_commitment(
        &self,
        _call: &CallInfo,
        _commitment: Commitment,
    ) -> Result<String, ToolCallError> {
        Err(tool_not_available(Capability::CommitmentsAdd))
    }

    /// The public address of a public route of the calling app for the call's tenant.
    fn public_callback_url(&self, call: &CallInfo, path: &str) -> String;

    /// The credential with which an app outside the runtime calls the platform back during
    /// `call` (its `APP_MCP_TOKEN`, naming the call's tenant, app, version, call and chain),
    /// or why none can be issued. A platform that serves no such app issues none (the
    /// default).
    ///
    /// # Errors
    ///
    /// The reason, for the call's error.
    fn callback_token(&self, _call: &CallInfo) -> Result<String, String> {
        Err("this platform issues no tokens to apps outside the runtime".into())
    }
}

/// The `ToolCallError` for a capability the host does not offer: decision `not_available`.
#[must_use]
pub fn tool_not_available(capability: Capability) -> ToolCallError {
    ToolRefusal::not_available(capability).into()
}

/// The `AgentCallError` for a capability the host does not offer: reason
/// `not_available: ...`.
#[must_use]
pub fn agent_not_available(capability: Capability) -> AgentCallError {
    AgentRefusal::not_available(capability).into()
}

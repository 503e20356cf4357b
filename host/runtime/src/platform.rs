//! The platform side of the contract, as a trait.
//!
//! The runtime does not know the platform: it applies the sandbox rules
//! ([`atrium_manifest::sandbox`]: scopes, chain depth, cycles, declared names, sizes) and hands
//! everything else to a [`Platform`]. The host's platform implements it over the SQL store;
//! [`crate::memory::MemoryPlatform`] implements it in memory for tests and the local runner.

use async_trait::async_trait;
use serde_json::Value;

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
#[async_trait]
pub trait Platform: Send + Sync + 'static {
    /// The scopes a platform tool needs, or none when no such tool exists.
    fn tool_scopes(&self, tool: &str) -> Option<Vec<String>>;

    /// Runs a platform tool whose scopes the install holds.
    async fn call_tool(
        &self,
        call: &CallInfo,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolCallError>;

    /// A secret's value for the call's tenant and app, or none. Failures also give none.
    async fn secret(&self, call: &CallInfo, key: &str) -> Option<String>;

    /// Stores a room message and routes its mentions.
    async fn post_to_room(
        &self,
        call: &CallInfo,
        post: RoomPostRequest,
    ) -> Result<RoomPost, ToolCallError>;

    /// Runs agent `target` of the calling app (team delegation, team checks already passed).
    async fn delegate(
        &self,
        call: &CallInfo,
        chain: &ChainContext,
        target: &str,
        prompt: &str,
        from_agent: &str,
    ) -> Result<String, AgentCallError>;

    /// Invokes an agent of another app; the platform checks the grant.
    async fn invoke_app(
        &self,
        call: &CallInfo,
        chain: &ChainContext,
        app: &str,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError>;

    /// Calls a route of another app; the platform checks the `__route__` grant.
    async fn fetch_app(
        &self,
        call: &CallInfo,
        chain: &ChainContext,
        app: &str,
        path: &str,
        method: &str,
        body: Option<Vec<u8>>,
    ) -> Result<FetchResponse, AgentCallError>;

    /// Fans an event out to the approved wires.
    async fn emit(
        &self,
        call: &CallInfo,
        chain: &ChainContext,
        name: &str,
        payload: Value,
    ) -> Result<EmitResult, AgentCallError>;

    /// Asks one of the calling app's agents.
    async fn ask(
        &self,
        call: &CallInfo,
        chain: &ChainContext,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError>;

    /// Records a commitment and returns its id.
    async fn add_commitment(
        &self,
        call: &CallInfo,
        commitment: Commitment,
    ) -> Result<String, ToolCallError>;

    /// The public address of a public route of the calling app for the call's tenant.
    fn public_callback_url(&self, call: &CallInfo, path: &str) -> String;
}

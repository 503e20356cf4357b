//! An in-memory [`Platform`] for tests and the local runner.
//!
//! It answers like the platform will, from data given up front: platform tools with their
//! scopes and canned answers, secrets, rooms with members (mentions are routed to members, at
//! most 20), event wires, cross-app grants. It records every call an app makes, so a test can
//! assert what happened.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use atrium_manifest::sandbox::{
    Capability, Decision, MAX_ROUTED_MENTIONS, ToolRefusal, extract_mentions,
};
use serde_json::{Value, json};

use crate::platform::{
    Commitment, Platform, RoomPostRequest, agent_not_available, tool_not_available,
};
use crate::{
    AgentCallError, CallInfo, ChainContext, EmitResult, FetchResponse, RoomMessage, RoomPost,
    SenderType, ToolCallError,
};

/// A platform tool: the scopes it needs and its answer.
#[derive(Debug, Clone)]
struct MockTool {
    scopes: Vec<String>,
    answer: Result<Value, ToolCallError>,
}

/// A nested agent call the app made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCall {
    /// `delegate`, `invoke`, `fetch`, `ask`.
    pub kind: &'static str,
    /// The canonical key (or `<app>` for a fetch) reached.
    pub target: String,
    /// The prompt, or the path of a fetch.
    pub prompt: String,
    /// The chain the callee runs with.
    pub chain: ChainContext,
}

#[derive(Debug, Default)]
struct State {
    tools: BTreeMap<String, MockTool>,
    secrets: BTreeMap<String, String>,
    rooms: BTreeMap<String, Vec<String>>,
    wires: BTreeMap<String, u32>,
    grants: BTreeSet<(String, String)>,
    tool_calls: Vec<(String, Value)>,
    posts: Vec<RoomPost>,
    emitted: Vec<(String, Value)>,
    agent_calls: Vec<AgentCall>,
    commitments: Vec<Commitment>,
    next_id: u64,
    /// Whether a tool without a mock is a tool the platform has (answering `unmocked`)
    /// rather than an unknown one.
    unmocked: bool,
    /// The capabilities this platform answers `not_available`, as a host without them.
    unavailable: Vec<Capability>,
}

/// The in-memory platform.
#[derive(Debug, Default)]
pub struct MemoryPlatform {
    state: Mutex<State>,
    platform_url: String,
}

impl MemoryPlatform {
    /// An empty platform whose public URLs start with `platform_url`.
    pub fn new(platform_url: impl Into<String>) -> Self {
        MemoryPlatform {
            state: Mutex::default(),
            platform_url: platform_url.into(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Answers every platform tool without a mock with decision `unmocked`, as the developer
    /// tool's mock file does (the spec's dev mock), instead of `unknown_tool`.
    #[must_use]
    pub fn answering_unmocked(self) -> Self {
        self.lock().unmocked = true;
        self
    }

    /// Answers `capability` with decision `not_available`, as a host that does not offer it
    /// (a test of how an app copes with such a host).
    #[must_use]
    pub fn without(self, capability: Capability) -> Self {
        self.lock().unavailable.push(capability);
        self
    }

    /// The `ToolCallError` for `capability` when this platform goes without it.
    fn tool_refusal(&self, capability: Capability) -> Result<(), ToolCallError> {
        if self.lock().unavailable.contains(&capability) {
            return Err(tool_not_available(capability));
        }
        Ok(())
    }

    /// The `AgentCallError` for `capability` when this platform goes without it.
    fn agent_refusal(&self, capability: Capability) -> Result<(), AgentCallError> {
        if self.lock().unavailable.contains(&capability) {
            return Err(agent_not_available(capability));
        }
        Ok(())
    }

    /// Adds a platform tool that needs `scopes` and answers `result`.
    #[must_use]
    pub fn with_tool(self, name: &str, scopes: &[&str], result: Value) -> Self {
        self.put_tool(name, scopes, Ok(result));
        self
    }

    /// Adds a platform tool that needs `scopes` and fails with `error`.
    #[must_use]
    pub fn with_failing_tool(self, name: &str, scopes: &[&str], error: ToolCallError) -> Self {
        self.put_tool(name, scopes, Err(error));
        self
    }

    fn put_tool(&self, name: &str, scopes: &[&str], answer: Result<Value, ToolCallError>) {
        let scopes = scopes.iter().map(|s| (*s).to_owned()).collect();
        self.lock()
            .tools
            .insert(name.to_owned(), MockTool { scopes, answer });
    }

    /// Sets a secret.
    #[must_use]
    pub fn with_secret(self, key: &str, value: &str) -> Self {
        self.lock().secrets.insert(key.to_owned(), value.to_owned());
        self
    }

    /// Adds a room with members given by canonical key (`<app>:<agent>` or `user:<uuid>`).
    #[must_use]
    pub fn with_room(self, room_id: &str, members: &[&str]) -> Self {
        self.lock().rooms.insert(
            room_id.to_owned(),
            members.iter().map(|m| (*m).to_owned()).collect(),
        );
        self
    }

    /// Declares `subscribers` approved wires for event `name`.
    #[must_use]
    pub fn with_wire(self, name: &str, subscribers: u32) -> Self {
        self.lock().wires.insert(name.to_owned(), subscribers);
        self
    }

    /// Grants calls to `agent` of `app` (`__route__` for its routes).
    #[must_use]
    pub fn with_grant(self, app: &str, agent: &str) -> Self {
        self.lock()
            .grants
            .insert((app.to_owned(), agent.to_owned()));
        self
    }

    /// Platform tool calls made so far, with their arguments.
    pub fn tool_calls(&self) -> Vec<(String, Value)> {
        self.lock().tool_calls.clone()
    }

    /// Room posts made so far.
    pub fn posts(&self) -> Vec<RoomPost> {
        self.lock().posts.clone()
    }

    /// Events emitted so far.
    pub fn emitted(&self) -> Vec<(String, Value)> {
        self.lock().emitted.clone()
    }

    /// Nested agent calls made so far.
    pub fn agent_calls(&self) -> Vec<AgentCall> {
        self.lock().agent_calls.clone()
    }

    /// Commitments recorded so far.
    pub fn commitments(&self) -> Vec<Commitment> {
        self.lock().commitments.clone()
    }

    fn record_agent_call(
        &self,
        kind: &'static str,
        target: String,
        prompt: &str,
        chain: &ChainContext,
    ) {
        self.lock().agent_calls.push(AgentCall {
            kind,
            target,
            prompt: prompt.to_owned(),
            chain: chain.clone(),
        });
    }
}

#[async_trait]
impl Platform for MemoryPlatform {
    fn tool_scopes(&self, tool: &str) -> Option<Vec<String>> {
        let state = self.lock();
        match state.tools.get(tool) {
            Some(t) => Some(t.scopes.clone()),
            None if state.unmocked => Some(Vec::new()),
            None => None,
        }
    }

    async fn call_tool(
        &self,
        _call: &CallInfo,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolCallError> {
        let mut state = self.lock();
        state.tool_calls.push((tool.to_owned(), args));
        if state.unavailable.contains(&Capability::ToolsCall) {
            return Err(tool_not_available(Capability::ToolsCall));
        }
        match state.tools.get(tool) {
            Some(t) => t.answer.clone(),
            None => Err(ToolCallError {
                tool_name: tool.to_owned(),
                decision: Decision::Unmocked.as_str().into(),
                message: format!("no mock for tool `{tool}`"),
                needed_scopes: Vec::new(),
            }),
        }
    }

    async fn secret(&self, _call: &CallInfo, key: &str) -> Option<String> {
        self.lock().secrets.get(key).cloned()
    }

    async fn post_to_room(
        &self,
        call: &CallInfo,
        post: RoomPostRequest,
    ) -> Result<RoomPost, ToolCallError> {
        self.tool_refusal(Capability::RoomsPost)?;
        let refuse = |decision: Decision, message: String| {
            ToolCallError::from(ToolRefusal::new("rooms.post", decision, message))
        };
        let mut state = self.lock();
        let Some(members) = state.rooms.get(&post.room_id).cloned() else {
            return Err(refuse(
                Decision::UnknownRoom,
                format!("there is no room `{}`", post.room_id),
            ));
        };
        if !members.contains(&post.sender_ref) {
            return Err(refuse(
                Decision::NotMember,
                format!(
                    "`{}` is not a member of room `{}`",
                    post.sender_ref, post.room_id
                ),
            ));
        }
        let mentions = extract_mentions(&post.content);
        let routed: Vec<String> = mentions
            .iter()
            .filter(|m| members.contains(m))
            .take(MAX_ROUTED_MENTIONS)
            .cloned()
            .collect();
        state.next_id += 1;
        let message = RoomMessage {
            id: format!("00000000-0000-4000-8000-{:012x}", state.next_id),
            room_id: post.room_id,
            tenant_id: call.tenant_id.clone(),
            sender_type: SenderType::Agent,
            sender_ref: post.sender_ref,
            sender_display: post.sender_display,
            content: post.content,
            mentions,
            metadata: post.metadata.to_string(),
            created_at: jiff::Timestamp::now().to_string(),
        };
        let result = RoomPost {
            message,
            routed_targets: routed,
        };
        state.posts.push(result.clone());
        Ok(result)
    }

    async fn delegate(
        &self,
        call: &CallInfo,
        chain: &ChainContext,
        target: &str,
        prompt: &str,
        _from: &str,
    ) -> Result<String, AgentCallError> {
        self.agent_refusal(Capability::TeamDelegate)?;
        let key = format!("{}:{target}", call.app_id);
        self.record_agent_call("delegate", key.clone(), prompt, chain);
        Ok(format!("[{key}] {prompt}"))
    }

    async fn invoke_app(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        app: &str,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError> {
        self.agent_refusal(Capability::AppsInvoke)?;
        if !self
            .lock()
            .grants
            .contains(&(app.to_owned(), agent.to_owned()))
        {
            return Err(AgentCallError {
                reason: format!("no grant: no active grant names agent `{agent}` of app `{app}`"),
            });
        }
        let key = format!("{app}:{agent}");
        self.record_agent_call("invoke", key.clone(), prompt, chain);
        Ok(format!("[{key}] {prompt}"))
    }

    async fn fetch_app(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        app: &str,
        path: &str,
        method: &str,
        body: Option<Vec<u8>>,
    ) -> Result<FetchResponse, AgentCallError> {
        self.agent_refusal(Capability::AppsFetch)?;
        if !self
            .lock()
            .grants
            .contains(&(app.to_owned(), "__route__".to_owned()))
        {
            return Err(AgentCallError {
                reason: format!("no grant: no active grant names __route__ of app `{app}`"),
            });
        }
        self.record_agent_call("fetch", app.to_owned(), path, chain);
        let echo = json!({"app": app, "path": path, "method": method, "body_bytes": body.map_or(0, |b| b.len())});
        Ok(FetchResponse {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: echo.to_string().into_bytes(),
        })
    }

    async fn emit(
        &self,
        _call: &CallInfo,
        _chain: &ChainContext,
        name: &str,
        payload: Value,
    ) -> Result<EmitResult, AgentCallError> {
        self.agent_refusal(Capability::EventsEmit)?;
        let mut state = self.lock();
        state.emitted.push((name.to_owned(), payload));
        let wires = state.wires.get(name).copied().unwrap_or(0);
        Ok(EmitResult {
            wire_count: wires,
            dispatched: wires,
            failures: 0,
        })
    }

    async fn ask(
        &self,
        call: &CallInfo,
        chain: &ChainContext,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError> {
        self.agent_refusal(Capability::AgentAsk)?;
        let key = format!("{}:{agent}", call.app_id);
        self.record_agent_call("ask", key.clone(), prompt, chain);
        Ok(format!("[{key}] {prompt}"))
    }

    async fn add_commitment(
        &self,
        _call: &CallInfo,
        commitment: Commitment,
    ) -> Result<String, ToolCallError> {
        self.tool_refusal(Capability::CommitmentsAdd)?;
        let mut state = self.lock();
        state.commitments.push(commitment);
        state.next_id += 1;
        Ok(format!("commitment-{}", state.next_id))
    }

    fn public_callback_url(&self, call: &CallInfo, path: &str) -> String {
        let base = if self.platform_url.is_empty() {
            "http://127.0.0.1:8787"
        } else {
            &self.platform_url
        };
        format!(
            "{}/api/apps/{}/public/t/{}{path}",
            base.trim_end_matches('/'),
            call.app_id,
            call.tenant_id
        )
    }
}

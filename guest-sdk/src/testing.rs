//! Native test helpers: run an app's handlers without wasm, against mock tools, secrets,
//! settings and rooms (mock tools and secrets, `MockRooms`, `simulate_event`; docs/sdk.md).
//!
//! ```ignore
//! let client = TestClient::new(app()).unwrap()
//!     .mock_tool("crm.lookup", json!({"name": "Ada"}))
//!     .mock_secret("STRIPE_KEY", "sk_test");
//! let result = client.call_tool("create_invoice", json!({"amount": 10})).unwrap();
//! assert_eq!(client.rooms.posts().len(), 0);
//! ```
//!
//! Every call the app makes goes through the host's own sandbox rules
//! ([`atrium_manifest::sandbox`]), so a native test fails where the real host would refuse, with
//! the same decision and message: a post from an agent the manifest does not declare, empty or
//! oversized content, non-object metadata, a delegation outside the caller's team, an emit of
//! an event not in `emits`, a chain deeper than the host allows. Beyond those rules the mocks
//! answer: a tool that is not mocked fails with decision `unmocked`; a tool mocked with scopes
//! the test did not grant fails with `scope_denied`.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use atrium_manifest::sandbox::{
    self, AgentRefusal, Capability, ChainContext, Decision, EgressPolicy, ToolRefusal,
};
use serde::Serialize;
use serde_json::Value;

use crate::http::{Request, Response};
use crate::{
    AgentCallError, App, AppEvent, Backend, CallInfo, Ctx, EmitResult, FetchResponse, HandlerError,
    InboundEnvelope, LogLevel, OutboundRequest, RegistrationError, RoomMessage, RoomPost,
    SenderType, ToolCallError, UserAdded,
};

/// A recorded room post.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedPost {
    /// The room.
    pub room_id: String,
    /// The text.
    pub content: String,
    /// The posting agent's slug.
    pub from_agent: String,
    /// The metadata object, if any.
    pub metadata: Option<Value>,
}

/// Records every `ctx.rooms.post` call (`MockRooms`, docs/sdk.md).
#[derive(Debug, Clone, Default)]
pub struct MockRooms {
    posts: Rc<RefCell<Vec<RecordedPost>>>,
}

impl MockRooms {
    /// Every post made so far, in order.
    pub fn posts(&self) -> Vec<RecordedPost> {
        self.posts.borrow().clone()
    }
}

/// A mock tool's answer.
#[derive(Debug, Clone)]
struct MockTool {
    scopes: Vec<String>,
    answer: Result<Value, ToolCallError>,
}

#[derive(Debug, Default)]
struct MockState {
    tools: BTreeMap<String, MockTool>,
    secrets: BTreeMap<String, String>,
    settings: serde_json::Map<String, Value>,
    granted: BTreeSet<String>,
    tool_calls: Vec<(String, Value)>,
    emitted: Vec<(String, Value)>,
    logs: Vec<(LogLevel, String)>,
    agent_calls: Vec<String>,
    commitments: Vec<(String, String, String, Option<String>)>,
    http_mocks: BTreeMap<String, Response>,
    http_requests: Vec<OutboundRequest>,
    /// The capabilities answered `not_available`, as on a host without them.
    unavailable: Vec<Capability>,
}

/// The mock platform behind a [`TestClient`].
struct MockBackend {
    manifest: &'static crate::ManifestInfo,
    info: CallInfo,
    state: RefCell<MockState>,
    rooms: MockRooms,
}

impl MockBackend {
    /// The chain the call runs in, as the host would hand it to the app.
    fn chain(&self) -> ChainContext {
        ChainContext {
            depth: self.info.chain_depth,
            visited: self.info.visited_agents.clone(),
        }
    }

    fn record_agent_call(&self, call: String) {
        self.state.borrow_mut().agent_calls.push(call);
    }

    /// `not_available` for `capability` when the test goes without it.
    fn tool_refusal(&self, capability: Capability) -> Result<(), ToolCallError> {
        if self.state.borrow().unavailable.contains(&capability) {
            return Err(ToolRefusal::not_available(capability).into());
        }
        Ok(())
    }

    /// `not_available` for `capability` when the test goes without it.
    fn agent_refusal(&self, capability: Capability) -> Result<(), AgentCallError> {
        if self.state.borrow().unavailable.contains(&capability) {
            return Err(AgentRefusal::not_available(capability).into());
        }
        Ok(())
    }
}

impl Backend for MockBackend {
    fn call_info(&self) -> CallInfo {
        self.info.clone()
    }

    fn public_callback_url(&self, path: &str) -> Result<String, String> {
        sandbox::public_callback_path(self.manifest, path)?;
        Ok(format!(
            "http://127.0.0.1:8787/api/apps/{}/public/t/{}{path}",
            self.info.app_id, self.info.tenant_id
        ))
    }

    fn call_tool(&self, name: &str, args: &str) -> Result<String, ToolCallError> {
        let args = sandbox::tool_arguments(name, args)?;
        let mut state = self.state.borrow_mut();
        state.tool_calls.push((name.to_owned(), args));
        let Some(tool) = state.tools.get(name) else {
            return Err(ToolRefusal::new(
                name,
                Decision::Unmocked,
                format!("tool `{name}` is not mocked"),
            )
            .into());
        };
        sandbox::tool_scopes(self.manifest, name, &tool.scopes, |s| {
            state.granted.contains(s)
        })?;
        // As on the host: the scopes are checked before the platform answers.
        if state.unavailable.contains(&Capability::ToolsCall) {
            return Err(ToolRefusal::not_available(Capability::ToolsCall).into());
        }
        let answer = tool.answer.clone();
        answer.map(|v| v.to_string())
    }

    fn secret(&self, key: &str) -> Option<String> {
        self.state.borrow().secrets.get(key).cloned()
    }

    fn config_get(&self, key: &str) -> Option<String> {
        self.state.borrow().settings.get(key).map(Value::to_string)
    }

    fn config_all(&self) -> String {
        Value::Object(self.state.borrow().settings.clone()).to_string()
    }

    fn room_post(
        &self,
        room_id: &str,
        content: &str,
        from_agent: &str,
        metadata: Option<&str>,
    ) -> Result<RoomPost, ToolCallError> {
        let checked = sandbox::room_post(self.manifest, from_agent, content, metadata, |s| {
            self.state.borrow().granted.contains(s)
        })?;
        self.tool_refusal(Capability::RoomsPost)?;
        let mut posts = self.rooms.posts.borrow_mut();
        posts.push(RecordedPost {
            room_id: room_id.to_owned(),
            content: content.to_owned(),
            from_agent: from_agent.to_owned(),
            metadata: metadata.map(|_| checked.metadata.clone()),
        });
        Ok(RoomPost {
            message: RoomMessage {
                id: format!("00000000-0000-4000-8000-{:012x}", posts.len()),
                room_id: room_id.to_owned(),
                tenant_id: self.info.tenant_id.clone(),
                sender_type: SenderType::Agent,
                sender_ref: checked.sender_ref,
                sender_display: checked.sender_display,
                content: content.to_owned(),
                mentions: sandbox::extract_mentions(content),
                metadata: checked.metadata.to_string(),
                created_at: "2026-01-01T00:00:00Z".into(),
            },
            routed_targets: Vec::new(),
        })
    }

    fn delegate(
        &self,
        target: &str,
        prompt: &str,
        from_agent: &str,
    ) -> Result<String, AgentCallError> {
        sandbox::delegate(
            self.manifest,
            &self.chain(),
            self.info.public_route,
            target,
            from_agent,
        )?;
        self.agent_refusal(Capability::TeamDelegate)?;
        self.record_agent_call(format!("delegate {target}"));
        Ok(format!("[{}:{target}] {prompt}", self.info.app_id))
    }

    fn invoke(&self, app: &str, agent: &str, prompt: &str) -> Result<String, AgentCallError> {
        sandbox::invoke(&self.chain(), self.info.public_route, app, agent)?;
        self.agent_refusal(Capability::AppsInvoke)?;
        self.record_agent_call(format!("invoke {app}:{agent}"));
        Ok(format!("[{app}:{agent}] {prompt}"))
    }

    fn fetch(
        &self,
        app: &str,
        path: &str,
        method: &str,
        _body: Option<&[u8]>,
    ) -> Result<FetchResponse, AgentCallError> {
        let (method, _) = sandbox::fetch(&self.chain(), path, method)?;
        self.agent_refusal(Capability::AppsFetch)?;
        self.record_agent_call(format!("fetch {app} {} {path}", method.as_str()));
        Ok(FetchResponse {
            status: 200,
            headers: Vec::new(),
            body: b"{}".to_vec(),
        })
    }

    fn emit(&self, name: &str, payload: &str) -> Result<EmitResult, AgentCallError> {
        let (payload, _) = sandbox::emit(
            self.manifest,
            &self.chain(),
            self.info.public_route,
            name,
            payload,
        )?;
        self.agent_refusal(Capability::EventsEmit)?;
        self.state
            .borrow_mut()
            .emitted
            .push((name.to_owned(), payload));
        Ok(EmitResult {
            wire_count: 0,
            dispatched: 0,
            failures: 0,
        })
    }

    fn ask(&self, prompt: &str, agent: Option<&str>) -> Result<String, AgentCallError> {
        let (slug, _) = sandbox::ask(self.manifest, &self.chain(), agent)?;
        self.agent_refusal(Capability::AgentAsk)?;
        self.record_agent_call(format!("ask {slug}"));
        Ok(format!("[{}:{slug}] {prompt}", self.info.app_id))
    }

    fn add_commitment(
        &self,
        title: &str,
        content: &str,
        from_agent: &str,
        due_at: Option<&str>,
    ) -> Result<String, ToolCallError> {
        sandbox::commitment(self.manifest, title, content, from_agent, due_at)?;
        self.tool_refusal(Capability::CommitmentsAdd)?;
        let mut state = self.state.borrow_mut();
        state.commitments.push((
            title.to_owned(),
            content.to_owned(),
            from_agent.to_owned(),
            due_at.map(str::to_owned),
        ));
        Ok(format!("commitment-{}", state.commitments.len()))
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.state
            .borrow_mut()
            .logs
            .push((level, message.to_owned()));
    }

    fn http_send(&self, request: &OutboundRequest) -> Result<Response, String> {
        let host = request
            .url
            .split("://")
            .nth(1)
            .unwrap_or("")
            .split(['/', '?'])
            .next()
            .unwrap_or("");
        // Strip the port, keeping a bracketed IPv6 address whole.
        let host = match host.rsplit_once(':') {
            Some((name, port)) if !port.contains(']') => name,
            _ => host,
        };
        if !EgressPolicy::new(self.manifest.egress_hosts.iter().copied()).allows(host) {
            return Err(format!(
                "request refused: HttpRequestDenied (`{host}` is not in network.egress_hosts)"
            ));
        }
        let mut state = self.state.borrow_mut();
        state.http_requests.push(request.clone());
        state
            .http_mocks
            .get(&request.url)
            .cloned()
            .ok_or_else(|| format!("no mock response for {}", request.url))
    }
}

/// Runs an app natively against mocks.
pub struct TestClient {
    app: App,
    backend: MockBackend,
    /// The room posts the app made.
    pub rooms: MockRooms,
}

impl TestClient {
    /// A client for an app as its build function returns it (registration errors are returned
    /// as they would fail the component's health check).
    pub fn new(app: Result<App, RegistrationError>) -> Result<Self, RegistrationError> {
        let app = app?;
        let manifest = app.manifest();
        let rooms = MockRooms::default();
        let backend = MockBackend {
            manifest,
            info: CallInfo {
                tenant_id: "tenant-test".into(),
                app_id: manifest.app_id.into(),
                app_version: manifest.version.into(),
                call_id: "call-test".into(),
                chain_depth: 1,
                visited_agents: Vec::new(),
                public_route: false,
            },
            state: RefCell::default(),
            rooms: rooms.clone(),
        };
        Ok(TestClient {
            app,
            backend,
            rooms,
        })
    }

    /// Sets the tenant id the app sees.
    #[must_use]
    pub fn tenant(mut self, tenant_id: &str) -> Self {
        self.backend.info.tenant_id = tenant_id.to_owned();
        self
    }

    /// Sets the chain depth the app sees (to test the depth limit).
    #[must_use]
    pub fn chain_depth(mut self, depth: u32) -> Self {
        self.backend.info.chain_depth = depth;
        self
    }

    /// Marks calls as arriving on a public route.
    #[must_use]
    pub fn public_route(mut self) -> Self {
        self.backend.info.public_route = true;
        self
    }

    /// Mocks a platform tool that needs no scope.
    #[must_use]
    pub fn mock_tool(self, name: &str, result: Value) -> Self {
        self.mock_tool_with_scopes(name, &[], result)
    }

    /// Mocks a platform tool that needs `scopes`; the call fails with `scope_denied` unless
    /// they are granted with [`TestClient::grant`].
    #[must_use]
    pub fn mock_tool_with_scopes(self, name: &str, scopes: &[&str], result: Value) -> Self {
        let tool = MockTool {
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            answer: Ok(result),
        };
        self.backend
            .state
            .borrow_mut()
            .tools
            .insert(name.to_owned(), tool);
        self
    }

    /// Mocks a platform tool that fails.
    #[must_use]
    pub fn mock_tool_error(self, name: &str, error: ToolCallError) -> Self {
        self.backend.state.borrow_mut().tools.insert(
            name.to_owned(),
            MockTool {
                scopes: Vec::new(),
                answer: Err(error),
            },
        );
        self
    }

    /// Loads mocks from the developer tool's mock file (see `atrium_manifest::devmock`): tool
    /// names mapped to `{"ok": true, "result": ...}` or `{"ok": false, "error": {"decision",
    /// "message", "neededScopes"}}`, with an optional `scopes` list.
    pub fn mock_file(self, text: &str) -> Result<Self, String> {
        for tool in atrium_manifest::devmock::parse_mock_file(text)? {
            let answer = tool.answer.map_err(|f| ToolCallError {
                tool_name: tool.name.clone(),
                decision: f.decision,
                message: f.message,
                needed_scopes: f.needed_scopes,
            });
            self.backend.state.borrow_mut().tools.insert(
                tool.name,
                MockTool {
                    scopes: tool.scopes,
                    answer,
                },
            );
        }
        Ok(self)
    }

    /// Answers outbound requests to `url` (the host must still be in `network.egress_hosts`).
    #[must_use]
    pub fn mock_http(self, url: &str, response: Response) -> Self {
        self.backend
            .state
            .borrow_mut()
            .http_mocks
            .insert(url.to_owned(), response);
        self
    }

    /// Outbound requests made so far.
    pub fn http_requests(&self) -> Vec<OutboundRequest> {
        self.backend.state.borrow().http_requests.clone()
    }

    /// Answers `capability` with decision `not_available`, as a host that does not offer it
    /// does, after the sandbox rules: a test of the app's fallback.
    #[must_use]
    pub fn without(self, capability: Capability) -> Self {
        self.backend.state.borrow_mut().unavailable.push(capability);
        self
    }

    /// Grants scopes to the install.
    #[must_use]
    pub fn grant(self, scopes: &[&str]) -> Self {
        self.backend
            .state
            .borrow_mut()
            .granted
            .extend(scopes.iter().map(|s| (*s).to_owned()));
        self
    }

    /// Sets a secret.
    #[must_use]
    pub fn mock_secret(self, key: &str, value: &str) -> Self {
        self.backend
            .state
            .borrow_mut()
            .secrets
            .insert(key.to_owned(), value.to_owned());
        self
    }

    /// Fills in an install setting.
    #[must_use]
    pub fn setting(self, key: &str, value: Value) -> Self {
        self.backend
            .state
            .borrow_mut()
            .settings
            .insert(key.to_owned(), value);
        self
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx::new(&self.backend)
    }

    /// Calls a tool with arguments that serialize to a JSON object.
    pub fn call_tool(&self, name: &str, args: impl Serialize) -> Result<Value, HandlerError> {
        let args =
            serde_json::to_string(&args).map_err(|e| HandlerError::InvalidInput(e.to_string()))?;
        let result = self.app.call_tool(&self.ctx(), name, &args)?;
        serde_json::from_str(&result).map_err(|e| HandlerError::Failed(e.to_string()))
    }

    /// Delivers an event as the platform would (`simulate_event`, docs/sdk.md). Without
    /// `emitter_app_id`, the emitter is the first the manifest subscribes to for that name.
    pub fn simulate_event(
        &self,
        event_name: &str,
        payload: Value,
        emitter_app_id: Option<&str>,
    ) -> Result<Value, HandlerError> {
        // The emitter's own subscription (its `target_agent`), else the first of the event's.
        let subscription = self.app.manifest().subscriptions.iter().find(|s| {
            s.event_name == event_name && emitter_app_id.is_none_or(|e| s.emitter_app == e)
        });
        let emitter = emitter_app_id
            .map(str::to_owned)
            .or_else(|| subscription.map(|s| s.emitter_app.to_owned()))
            .unwrap_or_default();
        let event = AppEvent {
            event_name: event_name.to_owned(),
            emitter_app_id: emitter,
            payload: payload.to_string(),
            target_agent_slug: subscription.and_then(|s| s.target_agent).map(str::to_owned),
        };
        let result = self.app.event(&self.ctx(), event)?;
        serde_json::from_str(&result).map_err(|e| HandlerError::Failed(e.to_string()))
    }

    /// Runs `on_install`.
    pub fn install(&self) -> Result<(), HandlerError> {
        self.app.lifecycle(&self.ctx(), "on_install")
    }

    /// Runs `on_uninstall`.
    pub fn uninstall(&self) -> Result<(), HandlerError> {
        self.app.lifecycle(&self.ctx(), "on_uninstall")
    }

    /// Runs `on_inbound`.
    pub fn inbound(&self, envelope: InboundEnvelope) -> Result<(), HandlerError> {
        self.app.inbound(&self.ctx(), envelope)
    }

    /// Runs `on_user_added`.
    pub fn user_added(&self, user: UserAdded) -> Result<(), HandlerError> {
        self.app.user_added(&self.ctx(), user)
    }

    /// Runs schedule `name`.
    pub fn schedule(&self, name: &str) -> Result<(), HandlerError> {
        self.app.schedule(&self.ctx(), name)
    }

    /// Delivers a room message that mentions agent `agent`.
    pub fn room_message(&self, agent: &str, message: RoomMessage) -> Result<(), HandlerError> {
        self.app.room_message(&self.ctx(), agent, message)
    }

    /// Sends an HTTP request to the app's routes.
    pub fn request(&self, method: &str, path_and_query: &str, body: &[u8]) -> Response {
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
            None => (path_and_query.to_owned(), None),
        };
        let request = Request {
            method: method.to_ascii_uppercase(),
            path,
            query,
            headers: Vec::new(),
            body: body.to_vec(),
            params: Vec::new(),
        };
        self.app.serve(&self.ctx(), request)
    }

    /// Platform tool calls made so far.
    pub fn tool_calls(&self) -> Vec<(String, Value)> {
        self.backend.state.borrow().tool_calls.clone()
    }

    /// Events emitted so far.
    pub fn emitted(&self) -> Vec<(String, Value)> {
        self.backend.state.borrow().emitted.clone()
    }

    /// Log records written so far.
    pub fn logs(&self) -> Vec<(LogLevel, String)> {
        self.backend.state.borrow().logs.clone()
    }

    /// Nested agent calls made so far, as `delegate <agent>`, `invoke <app>:<agent>`, ...
    pub fn agent_calls(&self) -> Vec<String> {
        self.backend.state.borrow().agent_calls.clone()
    }

    /// Commitments added so far: (title, content, from_agent, due_at).
    pub fn commitments(&self) -> Vec<(String, String, String, Option<String>)> {
        self.backend.state.borrow().commitments.clone()
    }
}

/// A room message for tests: posted by a user, mentioning `@<app>:<agent>`.
pub fn room_message(room_id: &str, content: &str) -> RoomMessage {
    RoomMessage {
        id: "00000000-0000-4000-8000-000000000001".into(),
        room_id: room_id.to_owned(),
        tenant_id: "tenant-test".into(),
        sender_type: SenderType::User,
        sender_ref: "user:00000000-0000-4000-8000-0000000000aa".into(),
        sender_display: "Test User".into(),
        content: content.to_owned(),
        mentions: Vec::new(),
        metadata: "{}".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
    }
}

//! [`InstallPlatform`]: the runtime's `Platform` for calls into one install, a thin adapter:
//! the install's identity and a handle on the [`Services`], each method one call into the
//! capability's service; `agent.ask` and `team.delegate` run the agent in the agent runner
//! ([`crate::runner`]) with the chain the sandbox advanced. `apps.invoke` runs the callee's
//! agent and `apps.fetch` calls its route once its grant is honoured
//! ([`crate::grants::honoured`]); `events.emit` fans out over the event's active wires
//! ([`Serving::emit_event`]); `rooms.post` stores the post and routes its mentions
//! ([`Serving::post_as_agent`]).

use std::time::Instant;

use async_trait::async_trait;
use atrium_runtime::{
    AgentCallError, CallInfo, ChainContext, Commitment, EmitResult, FetchResponse, Platform,
    RoomPost, RoomPostRequest, ToolCallError,
};
use serde_json::Value;

use super::Serving;
use super::tools::{Knowledge, TOOLS};
use crate::audit;
use crate::registry::Actor;
use crate::runner::AgentRun;
use crate::services::Services;

/// The platform of one install: the tenant (of its organization) and the app are fixed when
/// the call starts, so nothing the app sends can name another tenant or app.
pub struct InstallPlatform {
    serving: Serving,
    tenant: Actor,
    app_slug: String,
    knowledge: Knowledge,
}

impl InstallPlatform {
    /// The platform of `app_slug`'s install for `tenant`, whose knowledge slots are bound as
    /// `knowledge` says.
    pub(crate) fn new(
        serving: Serving,
        tenant: Actor,
        app_slug: String,
        knowledge: Knowledge,
    ) -> Self {
        InstallPlatform {
            serving,
            tenant,
            app_slug,
            knowledge,
        }
    }
}

impl InstallPlatform {
    fn services(&self) -> &Services {
        self.serving.services()
    }

    /// Records a cross-app call of this install in the tenant's audit log.
    async fn audit(&self, call: &audit::Call<'_>, started: Instant, outcome: &audit::Outcome) {
        audit::record(
            self.serving.registry().store(),
            &self.tenant,
            call,
            started,
            outcome,
        )
        .await;
    }

    /// Whether the grant to `call`'s callee admits its target (an agent, or `__route__` for
    /// `route`); a refusal is recorded and answered.
    async fn granted(
        &self,
        call: &audit::Call<'_>,
        started: Instant,
        target: &str,
    ) -> Result<(), AgentCallError> {
        let honoured = crate::grants::honoured(
            &self.serving,
            &self.tenant,
            &self.app_slug,
            call.callee_app,
            target,
        )
        .await;
        match honoured {
            Ok(_) => Ok(()),
            Err(reason) => {
                self.audit(call, started, &audit::Outcome::Refused(reason.clone()))
                    .await;
                Err(AgentCallError { reason })
            }
        }
    }

    /// Runs `agent` of `app`'s install for this tenant, asked `prompt`, on `chain` (the
    /// sandbox's checks passed and the chain entered at the agent): this app's own agent for
    /// `agent.ask` and `team.delegate`, a callee's (under its own install) for `apps.invoke`.
    async fn run_agent_of(
        &self,
        app: &str,
        chain: &ChainContext,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError> {
        let mut run = AgentRun::new(self.tenant.clone(), app, Some(agent.to_owned()), prompt);
        run.chain = Some(chain.clone());
        self.serving
            .run_agent(run)
            .await
            .map(|reply| reply.content)
            .map_err(AgentCallError::from)
    }
}

#[async_trait]
impl Platform for InstallPlatform {
    fn tool_scopes(&self, tool: &str) -> Option<Vec<String>> {
        TOOLS
            .iter()
            .find(|t| t.name == tool)
            .map(|t| t.scopes.iter().map(|s| (*s).to_owned()).collect())
    }

    async fn call_tool(
        &self,
        _call: &CallInfo,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolCallError> {
        self.services()
            .call_tool(&self.tenant, &self.app_slug, &self.knowledge, tool, &args)
            .await
    }

    async fn secret(&self, _call: &CallInfo, key: &str) -> Option<String> {
        self.services()
            .secret(&self.tenant, &self.app_slug, key)
            .await
    }

    async fn ask(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError> {
        self.run_agent_of(&self.app_slug, chain, agent, prompt)
            .await
    }

    async fn delegate(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        target: &str,
        prompt: &str,
        from_agent: &str,
    ) -> Result<String, AgentCallError> {
        let started = Instant::now();
        let answer = self
            .run_agent_of(&self.app_slug, chain, target, prompt)
            .await;
        let call = audit::Call {
            kind: audit::Kind::Delegate,
            caller_app: &self.app_slug,
            caller_agent: Some(from_agent),
            callee_app: &self.app_slug,
            target,
            chain,
        };
        self.audit(&call, started, &ran(&answer)).await;
        answer
    }

    async fn invoke_app(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        app: &str,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError> {
        let started = Instant::now();
        let call = audit::Call {
            kind: audit::Kind::Invoke,
            caller_app: &self.app_slug,
            // The chain ends with the callee; the agent before it called.
            caller_agent: audit::agent_on_chain(chain, 1),
            callee_app: app,
            target: agent,
            chain,
        };
        self.granted(&call, started, agent).await?;
        // The callee's agent runs under the callee's install: its scopes, settings, tools and
        // model bill.
        let answer = self.run_agent_of(app, chain, agent, prompt).await;
        self.audit(&call, started, &ran(&answer)).await;
        answer
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
        let started = Instant::now();
        let target = format!("{method} {path}");
        let call = audit::Call {
            kind: audit::Kind::Fetch,
            caller_app: &self.app_slug,
            caller_agent: audit::agent_on_chain(chain, 0),
            callee_app: app,
            target: &target,
            chain,
        };
        self.granted(&call, started, crate::grants::ROUTE).await?;
        let answer = self
            .serving
            .app_fetch(&self.tenant, &self.app_slug, app, method, path, body, chain)
            .await;
        let outcome = match &answer {
            Ok(response) if response.status < 500 => audit::Outcome::Ok,
            Ok(response) => {
                audit::Outcome::Failed(format!("the route answered {}", response.status))
            }
            Err(reason) => audit::Outcome::Failed(reason.clone()),
        };
        self.audit(&call, started, &outcome).await;
        answer.map_err(|reason| AgentCallError { reason })
    }

    async fn emit(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        name: &str,
        payload: Value,
    ) -> Result<EmitResult, AgentCallError> {
        self.serving
            .emit_event(&self.tenant, &self.app_slug, name, &payload, chain)
            .await
    }

    async fn post_to_room(
        &self,
        call: &CallInfo,
        post: RoomPostRequest,
    ) -> Result<RoomPost, ToolCallError> {
        let chain = ChainContext {
            depth: call.chain_depth,
            visited: call.visited_agents.clone(),
        };
        let posted = self
            .serving
            .post_as_agent(&self.tenant, &self.app_slug, post, &chain)
            .await?;
        Ok(RoomPost {
            message: crate::rooms::runtime_message(&self.tenant.tenant_id, &posted.message),
            routed_targets: posted.routed_targets,
        })
    }

    async fn add_commitment(
        &self,
        _call: &CallInfo,
        commitment: Commitment,
    ) -> Result<String, ToolCallError> {
        self.services()
            .add_commitment(&self.tenant, &self.app_slug, &commitment)
            .await
    }

    fn public_callback_url(&self, _call: &CallInfo, path: &str) -> String {
        super::routes::public_route_path(&self.app_slug, &self.tenant, path)
    }
}

/// How an agent call that ran ended, for the audit log.
fn ran<T>(answer: &Result<T, AgentCallError>) -> audit::Outcome {
    match answer {
        Ok(_) => audit::Outcome::Ok,
        Err(e) => audit::Outcome::Failed(e.reason.clone()),
    }
}

//! [`InstallPlatform`]: the runtime's `Platform` for calls into one install, a thin adapter:
//! the install's identity and a handle on the [`Services`], each method one call into the
//! capability's service; `agent.ask` and `team.delegate` run the agent in the agent runner
//! ([`crate::runner`]) with the chain the sandbox advanced. The capabilities this host does not
//! offer yet (rooms, events) keep the trait's default, decision
//! `not_available` naming the capability. `apps.invoke` runs the callee's agent and `apps.fetch`
//! calls its route once its grant is honoured ([`crate::grants::honoured`]).

use async_trait::async_trait;
use atrium_runtime::{
    AgentCallError, CallInfo, ChainContext, Commitment, FetchResponse, Platform, ToolCallError,
};
use serde_json::Value;

use super::Serving;
use super::tools::{Knowledge, TOOLS};
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
        _from_agent: &str,
    ) -> Result<String, AgentCallError> {
        self.run_agent_of(&self.app_slug, chain, target, prompt)
            .await
    }

    async fn invoke_app(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        app: &str,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError> {
        crate::grants::honoured(&self.serving, &self.tenant, &self.app_slug, app, agent)
            .await
            .map_err(|reason| AgentCallError { reason })?;
        // The callee's agent runs under the callee's install: its scopes, settings, tools and
        // model bill.
        self.run_agent_of(app, chain, agent, prompt).await
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
        self.serving
            .app_fetch(&self.tenant, &self.app_slug, app, method, path, body, chain)
            .await
            .map_err(|reason| AgentCallError { reason })
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

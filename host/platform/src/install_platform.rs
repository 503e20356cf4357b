//! [`InstallPlatform`]: the runtime's `Platform` for calls into one install, a thin adapter
//! above every capability, which the composition gives the serving core
//! ([`crate::serving::PlatformFor`]):
//! the install's identity and a handle on the [`Services`], each method one call into the
//! capability: `agent.ask` runs the agent in the agent runner ([`crate::runner`]) with the
//! chain the sandbox advanced; `team.delegate`, `apps.invoke`, `apps.fetch` and the calls the
//! sandbox refused go to [`crate::calls`], the function every other entry point of those calls
//! reaches too; `events.emit` fans out over the event's active wires
//! ([`crate::events::Events::emit`]); `rooms.post` stores the post and routes its mentions
//! ([`crate::rooms::Rooms::post_as_agent`]).

use async_trait::async_trait;
use atrium_runtime::{
    AgentCallError, CallInfo, ChainContext, Commitment, EmitResult, FetchResponse, Platform,
    Refused, RoomPost, RoomPostRequest, ToolCallError,
};
use serde_json::Value;

use crate::calls;
use crate::registry::Actor;
use crate::runner::AgentRun;
use crate::services::Services;
use crate::serving::Serving;
use crate::tools::Knowledge;

/// The platform of one install: the tenant (of its organization) and the app are fixed when
/// the call starts, so nothing the app sends can name another tenant or app.
pub struct InstallPlatform {
    serving: Serving,
    tenant: Actor,
    app_slug: String,
    knowledge: Knowledge,
}

/// The platform of `app_slug`'s install for `tenant`, whose knowledge slots are bound as
/// `knowledge` says: what the serving core gives each call ([`crate::serving::PlatformFor`]).
pub fn for_install(
    serving: Serving,
    tenant: Actor,
    app_slug: String,
    knowledge: Knowledge,
) -> std::sync::Arc<dyn Platform> {
    std::sync::Arc::new(InstallPlatform::new(serving, tenant, app_slug, knowledge))
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
}

#[async_trait]
impl Platform for InstallPlatform {
    fn tool_scopes(&self, tool: &str) -> Option<Vec<String>> {
        self.services()
            .tool(tool)
            .map(|t| t.scopes.iter().map(|s| (*s).to_owned()).collect())
    }

    async fn call_tool(
        &self,
        _call: &CallInfo,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolCallError> {
        self.services()
            .call_tool(&self.tenant, &self.app_slug, &self.knowledge, tool, args)
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
        let mut run = AgentRun::new(
            self.tenant.clone(),
            &self.app_slug,
            Some(agent.to_owned()),
            prompt,
        );
        run.chain = Some(chain.clone());
        crate::runner::Runner::of(&self.serving)
            .run_agent(run)
            .await
            .map(|reply| reply.content)
            .map_err(AgentCallError::from)
    }

    async fn delegate(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        target: &str,
        prompt: &str,
        from_agent: &str,
    ) -> Result<String, AgentCallError> {
        let delegation = calls::Delegation {
            app: &self.app_slug,
            from_agent,
            target,
            prompt,
        };
        calls::delegate(
            &self.serving,
            &self.tenant,
            delegation,
            calls::Chain::Entered(chain),
            calls::RunBounds::default(),
        )
        .await
        .map(|reply| reply.content)
        .map_err(AgentCallError::from)
    }

    async fn refused(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        what: Refused<'_>,
        reason: &str,
    ) {
        calls::refused(
            &self.serving,
            &self.tenant,
            &self.app_slug,
            chain,
            what,
            reason,
        )
        .await;
    }

    async fn invoke_app(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        app: &str,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError> {
        let chain = calls::Chain::Entered(chain);
        calls::invoke(
            &self.serving,
            &self.tenant,
            &self.app_slug,
            app,
            agent,
            prompt,
            chain,
        )
        .await
        .map(|reply| reply.content)
        .map_err(AgentCallError::from)
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
        let fetch = calls::Fetch {
            caller: &self.app_slug,
            callee: app,
            method,
            path,
        };
        calls::fetch(
            &self.serving,
            &self.tenant,
            fetch,
            body,
            calls::Chain::Entered(chain),
        )
        .await
        .map_err(AgentCallError::from)
    }

    async fn emit(
        &self,
        _call: &CallInfo,
        chain: &ChainContext,
        name: &str,
        payload: Value,
    ) -> Result<EmitResult, AgentCallError> {
        crate::events::Events::of(&self.serving)
            .emit(&self.tenant, &self.app_slug, name, &payload, chain)
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
        let posted = crate::rooms::Rooms::of(&self.serving)
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
        crate::serving::routes::public_route_path(&self.app_slug, &self.tenant, path)
    }

    fn callback_token(&self, call: &CallInfo) -> Result<String, String> {
        self.services()
            .app_token(&crate::identity::app_token::AppToken {
                org_id: self.tenant.org_id.clone(),
                tenant_id: self.tenant.tenant_id.clone(),
                user_id: self.tenant.user_id.clone(),
                app_slug: self.app_slug.clone(),
                version: call.app_version.clone(),
                call_id: call.call_id.clone(),
                chain_depth: call.chain_depth,
                visited_agents: call.visited_agents.clone(),
                public_route: call.public_route,
            })
    }
}

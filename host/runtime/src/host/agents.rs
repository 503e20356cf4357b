//! `team`, `apps`, `events` and `agent`: calls that reach agents, under the chain rules.
//!
//! Every one of them advances the chain (depth + 1, rejected above 8) and, when it reaches an
//! agent, checks the visited set for a cycle. On a public route team delegation, cross-app
//! invocation and event emission are refused: there is no tenant principal to act for.

use crate::bindings::atrium::app::{agent, apps, events, team};
use crate::state::CallState;
use crate::{AgentCallError, EmitResult, FetchResponse};

fn refuse(reason: impl Into<String>) -> AgentCallError {
    AgentCallError {
        reason: reason.into(),
    }
}

impl CallState {
    fn refuse_on_public_route(&self, what: &str) -> Result<(), AgentCallError> {
        if self.call.public_route {
            return Err(refuse(format!(
                "{what} is not available on a public route: there is no caller agent identity and no tenant principal"
            )));
        }
        Ok(())
    }

    fn check_own_agent(&self, slug: &str, role: &str) -> Result<(), AgentCallError> {
        if slug.is_empty() {
            return Err(refuse(format!("{role} is required")));
        }
        if self.agent(slug).is_none() {
            return Err(refuse(format!(
                "{role} `{slug}` is not an agent of this app ({})",
                self.declared_agents()
            )));
        }
        Ok(())
    }

    async fn delegate(
        &mut self,
        target: String,
        prompt: String,
        from_agent: String,
    ) -> Result<String, AgentCallError> {
        self.refuse_on_public_route("team delegation")?;
        self.check_own_agent(&from_agent, "from_agent")?;
        // Spec 4.2: the caller's team list decides, except for a delegation to itself.
        if target != from_agent {
            let team = self
                .agent(&from_agent)
                .map(|a| a.team.clone())
                .unwrap_or_default();
            if team.is_empty() {
                return Err(refuse(format!(
                    "team delegation denied: agent `{from_agent}` has no team"
                )));
            }
            if !team.contains(&target) {
                return Err(refuse(format!(
                    "team delegation denied: `{target}` is not in the team of `{from_agent}` ({})",
                    team.join(", ")
                )));
            }
        }
        let chain = self.chain.enter(Some(&self.agent_key(&target)))?;
        self.platform
            .delegate(&self.call, &chain, &target, &prompt, &from_agent)
            .await
    }

    async fn invoke_app(
        &mut self,
        app: String,
        agent: String,
        prompt: String,
    ) -> Result<String, AgentCallError> {
        self.refuse_on_public_route("apps.invoke")?;
        if app.is_empty() || agent.is_empty() {
            return Err(refuse("apps.invoke needs an app and an agent"));
        }
        let chain = self.chain.enter(Some(&format!("{app}:{agent}")))?;
        self.platform
            .invoke_app(&self.call, &chain, &app, &agent, &prompt)
            .await
    }

    async fn fetch_app(
        &mut self,
        app: String,
        path: String,
        method: String,
        body: Option<Vec<u8>>,
    ) -> Result<FetchResponse, AgentCallError> {
        let Some(method) = atrium_manifest::Method::parse(&method) else {
            return Err(refuse(format!(
                "apps.fetch: `{method}` is not one of GET, POST, PUT, DELETE, PATCH"
            )));
        };
        if !path.starts_with('/') {
            return Err(refuse(format!(
                "apps.fetch: the path `{path}` must start with /"
            )));
        }
        let chain = self.chain.enter(None)?;
        self.platform
            .fetch_app(&self.call, &chain, &app, &path, method.as_str(), body)
            .await
    }

    async fn emit(&mut self, name: String, payload: String) -> Result<EmitResult, AgentCallError> {
        self.refuse_on_public_route("events.emit")?;
        if !self.manifest.emits.contains(&name) {
            let emits = &self.manifest.emits;
            return Err(refuse(format!(
                "event `{name}` is not declared in the manifest's emits ({})",
                if emits.is_empty() {
                    "it declares none".to_owned()
                } else {
                    emits.join(", ")
                }
            )));
        }
        let payload = super::parse_json("the event payload", &payload).map_err(refuse)?;
        let chain = self.chain.enter(None)?;
        self.platform.emit(&self.call, &chain, &name, payload).await
    }

    async fn ask(
        &mut self,
        prompt: String,
        agent: Option<String>,
    ) -> Result<String, AgentCallError> {
        let slug = match agent {
            Some(slug) => {
                self.check_own_agent(&slug, "agent")?;
                slug
            }
            None => match self.manifest.default_agent() {
                Some(agent) => agent.id.clone(),
                None => return Err(refuse("agent.ask: this app declares no agent")),
            },
        };
        let chain = self.chain.enter(Some(&self.agent_key(&slug)))?;
        self.platform.ask(&self.call, &chain, &slug, &prompt).await
    }
}

impl team::Host for CallState {
    async fn delegate(
        &mut self,
        target: String,
        prompt: String,
        from_agent: String,
    ) -> wasmtime::Result<Result<String, AgentCallError>> {
        Ok(CallState::delegate(self, target, prompt, from_agent).await)
    }
}

impl apps::Host for CallState {
    async fn invoke(
        &mut self,
        app: String,
        agent: String,
        prompt: String,
    ) -> wasmtime::Result<Result<String, AgentCallError>> {
        Ok(self.invoke_app(app, agent, prompt).await)
    }

    async fn fetch(
        &mut self,
        app: String,
        path: String,
        method: String,
        body: Option<Vec<u8>>,
    ) -> wasmtime::Result<Result<FetchResponse, AgentCallError>> {
        Ok(self.fetch_app(app, path, method, body).await)
    }
}

impl events::Host for CallState {
    async fn emit(
        &mut self,
        name: String,
        payload: String,
    ) -> wasmtime::Result<Result<EmitResult, AgentCallError>> {
        Ok(CallState::emit(self, name, payload).await)
    }
}

impl agent::Host for CallState {
    async fn ask(
        &mut self,
        prompt: String,
        agent: Option<String>,
    ) -> wasmtime::Result<Result<String, AgentCallError>> {
        Ok(CallState::ask(self, prompt, agent).await)
    }
}

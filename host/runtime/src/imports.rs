//! The platform calls of an app that runs outside the runtime: a container behind the
//! compatibility shim calls the platform back over HTTP (`/api/mcp/...`), and each of its
//! calls is one method of [`Imports`].
//!
//! An [`Imports`] is the context a component's call has (who calls, the chain, the manifest,
//! the install's scopes and settings, the [`Platform`]), and each method runs the very host
//! import a component reaches (`crate::host`): the sandbox rule of
//! [`atrium_manifest::sandbox`], then the platform's method. A rule is never enforced for one
//! kind of app and forgotten for the other.

use std::collections::BTreeSet;
use std::sync::Arc;

use atrium_manifest::Manifest;
use serde_json::{Map, Value};

use crate::bindings::atrium::app::{
    agent::Host as _, apps::Host as _, commitments::Host as _, config::Host as _,
    context::Host as _, events::Host as _, rooms::Host as _, secrets::Host as _, team::Host as _,
    tools::Host as _,
};
use crate::host::{agent, apps, commitments, config, context, events, rooms, secrets, team, tools};
use crate::logs::{CallTags, LogSink};
use crate::state::CallContext;
use crate::{
    AgentCallError, CallInfo, EmitResult, FetchResponse, Invocation, RoomPost, ToolCallError,
};

/// The most log bytes the secrets import's warnings of one callback may write.
const LOG_BUDGET: usize = 4096;

/// One call's platform imports, for an app outside the runtime.
pub struct Imports {
    call: CallContext,
    granted_scopes: BTreeSet<String>,
    settings: Map<String, Value>,
    log: LogSink,
}

impl std::fmt::Debug for Imports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Imports")
            .field("info", &self.call.info)
            .field("chain", &self.call.chain)
            .finish_non_exhaustive()
    }
}

/// An import whose host side failed outside its contract (it never does: every host import
/// answers its own error type); kept typed rather than panicking.
fn tool_fault(error: &wasmtime::Error) -> ToolCallError {
    ToolCallError {
        tool_name: String::new(),
        decision: "failed".into(),
        message: format!("{error:#}"),
        needed_scopes: Vec::new(),
    }
}

fn agent_fault(error: &wasmtime::Error) -> AgentCallError {
    AgentCallError {
        reason: format!("failed: {error:#}"),
    }
}

impl Imports {
    /// The imports of a call of the app `manifest` describes, made by `inv` (its tenant,
    /// chain, scopes, settings, platform and whether it arrived on a public route).
    #[must_use]
    pub fn new(manifest: Arc<Manifest>, inv: &Invocation) -> Self {
        let info = inv.info(&manifest);
        let log = LogSink::new(
            CallTags {
                tenant: info.tenant_id.clone(),
                app: info.app_id.clone(),
                version: info.app_version.clone(),
                call: info.call_id.clone(),
            },
            LOG_BUDGET,
        );
        Imports {
            call: CallContext {
                info,
                chain: inv.chain.clone(),
                manifest,
                platform: inv.platform.clone(),
            },
            granted_scopes: inv.granted_scopes.clone(),
            settings: inv.settings.clone(),
            log,
        }
    }

    /// `context.current`: the facts of the call.
    #[must_use]
    pub fn info(&self) -> &CallInfo {
        &self.call.info
    }

    /// `tools.call`: a platform tool behind the install's scopes; the JSON result.
    ///
    /// # Errors
    ///
    /// The tool's refusal or failure, as a component's import answers it.
    pub async fn tools_call(&self, name: &str, args: &str) -> Result<String, ToolCallError> {
        let mut view = tools::Tools {
            call: &self.call,
            granted_scopes: &self.granted_scopes,
        };
        view.call(name.to_owned(), args.to_owned())
            .await
            .unwrap_or_else(|e| Err(tool_fault(&e)))
    }

    /// `secrets.get`: none for a malformed key, an unset one or a failure.
    pub async fn secret(&self, key: &str) -> Option<String> {
        let mut view = secrets::Secrets {
            call: &self.call,
            log: &self.log,
        };
        let value = view.get(key.to_owned()).await.ok().flatten();
        self.log.finish();
        value
    }

    /// `config.get`: one install setting, as JSON text.
    pub async fn config(&self, key: &str) -> Option<String> {
        let mut view = config::Config {
            settings: &self.settings,
        };
        view.get(key.to_owned()).await.ok().flatten()
    }

    /// `config.all`: every install setting, as a JSON object.
    pub async fn config_all(&self) -> String {
        let mut view = config::Config {
            settings: &self.settings,
        };
        view.all().await.unwrap_or_else(|_| "{}".into())
    }

    /// `context.public-callback-url`.
    ///
    /// # Errors
    ///
    /// The path is not one of the app's public routes.
    pub async fn public_callback_url(&self, path: &str) -> Result<String, String> {
        let mut view = context::Context { call: &self.call };
        view.public_callback_url(path.to_owned())
            .await
            .unwrap_or_else(|e| Err(format!("{e:#}")))
    }

    /// `rooms.post` as `from_agent`, `metadata` a JSON object's text.
    ///
    /// # Errors
    ///
    /// The sandbox's or the room's refusal.
    pub async fn rooms_post(
        &self,
        room_id: &str,
        content: &str,
        from_agent: &str,
        metadata: Option<String>,
    ) -> Result<RoomPost, ToolCallError> {
        let mut view = rooms::Rooms {
            call: &self.call,
            granted_scopes: &self.granted_scopes,
        };
        view.post(
            room_id.to_owned(),
            content.to_owned(),
            from_agent.to_owned(),
            metadata,
        )
        .await
        .unwrap_or_else(|e| Err(tool_fault(&e)))
    }

    /// `team.delegate`: agent `target` of this app, from `from_agent`'s team.
    ///
    /// # Errors
    ///
    /// The sandbox's or the team's refusal, or a run that failed.
    pub async fn team_delegate(
        &self,
        target: &str,
        prompt: &str,
        from_agent: &str,
    ) -> Result<String, AgentCallError> {
        let mut view = team::Team { call: &self.call };
        view.delegate(target.to_owned(), prompt.to_owned(), from_agent.to_owned())
            .await
            .unwrap_or_else(|e| Err(agent_fault(&e)))
    }

    /// `apps.invoke`: agent `agent` of app `app`, through a grant.
    ///
    /// # Errors
    ///
    /// The sandbox's or the grant's refusal, or a run that failed.
    pub async fn apps_invoke(
        &self,
        app: &str,
        agent: &str,
        prompt: &str,
    ) -> Result<String, AgentCallError> {
        let mut view = apps::Apps { call: &self.call };
        view.invoke(app.to_owned(), agent.to_owned(), prompt.to_owned())
            .await
            .unwrap_or_else(|e| Err(agent_fault(&e)))
    }

    /// `apps.fetch`: a route of app `app`, through its `__route__` grant.
    ///
    /// # Errors
    ///
    /// The sandbox's or the grant's refusal, or a route that failed.
    pub async fn apps_fetch(
        &self,
        app: &str,
        path: &str,
        method: &str,
        body: Option<Vec<u8>>,
    ) -> Result<FetchResponse, AgentCallError> {
        let mut view = apps::Apps { call: &self.call };
        view.fetch(app.to_owned(), path.to_owned(), method.to_owned(), body)
            .await
            .unwrap_or_else(|e| Err(agent_fault(&e)))
    }

    /// `events.emit`: event `name` with a JSON payload's text.
    ///
    /// # Errors
    ///
    /// The sandbox's refusal (an undeclared event, a public route, a payload too large).
    pub async fn events_emit(
        &self,
        name: &str,
        payload: &str,
    ) -> Result<EmitResult, AgentCallError> {
        let mut view = events::Events { call: &self.call };
        view.emit(name.to_owned(), payload.to_owned())
            .await
            .unwrap_or_else(|e| Err(agent_fault(&e)))
    }

    /// `agent.ask`: one of this app's agents (its only one when `agent` is none).
    ///
    /// # Errors
    ///
    /// The sandbox's refusal or a run that failed.
    pub async fn agent_ask(
        &self,
        prompt: &str,
        agent: Option<&str>,
    ) -> Result<String, AgentCallError> {
        let mut view = agent::Agent { call: &self.call };
        view.ask(prompt.to_owned(), agent.map(str::to_owned))
            .await
            .unwrap_or_else(|e| Err(agent_fault(&e)))
    }

    /// `commitments.add`: the new commitment's id.
    ///
    /// # Errors
    ///
    /// The sandbox's refusal (lengths, an unknown agent, a bad due time) or the store's.
    pub async fn commitments_add(
        &self,
        title: &str,
        content: &str,
        from_agent: &str,
        due_at: Option<&str>,
    ) -> Result<String, ToolCallError> {
        let mut view = commitments::Commitments { call: &self.call };
        view.add(
            title.to_owned(),
            content.to_owned(),
            from_agent.to_owned(),
            due_at.map(str::to_owned),
        )
        .await
        .unwrap_or_else(|e| Err(tool_fault(&e)))
    }
}

//! The handler calls of `atrium:app/handlers`: tools, lifecycle hooks, schedules, events and
//! room messages. Each is checked against the manifest before any instance is made, then all
//! run through one function, `run`, each on a fresh instance.

use atrium_manifest::sandbox::declared_names;
use wasmtime::Store;

use super::call::{finish, release};
use super::{App, Code, Component};
use crate::bindings::exports::atrium::app::handlers::Guest as Handlers;
use crate::state::CallState;
use crate::{
    AppEvent, CallError, Caller, HandlerError, InboundEnvelope, Invocation, Registration,
    RoomMessage, UserAdded,
};

/// The handler calls, in one type so that one function drives them all. The manifest's
/// checks have passed when a backend ([`crate::External`]) is handed one.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerCall {
    /// `describe`: what the app registers (a component's registration check; an app outside
    /// the runtime is never asked).
    Describe,
    /// A declared tool with a JSON object's text as its arguments.
    Tool {
        /// The tool.
        name: String,
        /// Its arguments, a JSON object's text.
        args: String,
    },
    /// `on_install`.
    Install,
    /// `on_uninstall`.
    Uninstall,
    /// `on_inbound`.
    Inbound(InboundEnvelope),
    /// `on_user_added`.
    UserAdded(UserAdded),
    /// A declared schedule, by name.
    Schedule(String),
    /// An event the manifest subscribes to.
    Event(AppEvent),
    /// A room message that mentions one of the app's agents.
    Message {
        /// The agent mentioned.
        agent: String,
        /// The message.
        message: RoomMessage,
    },
}

impl HandlerCall {
    /// The reply this call expects: JSON for a tool and an event, nothing for the rest.
    #[must_use]
    pub fn answers_json(&self) -> bool {
        matches!(self, HandlerCall::Tool { .. } | HandlerCall::Event(_))
    }
}

/// What a handler call answered.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerReply {
    /// `describe`'s registration.
    Registration(Registration),
    /// A tool's or an event handler's JSON result.
    Json(String),
    /// A handler with no result.
    Unit,
}

impl App {
    /// Runs tool `name` with JSON arguments and returns its JSON result.
    pub async fn call_tool(
        &self,
        inv: &Invocation,
        name: &str,
        args: &str,
    ) -> Result<String, CallError> {
        let m = self.manifest();
        let Some(tool) = m.tool(name) else {
            let names: Vec<&str> = m.tools.iter().map(|t| t.name.as_str()).collect();
            return Err(CallError::NotDeclared(format!(
                "tool `{name}` is not declared in the manifest's tools ({})",
                declared_names(&names)
            )));
        };
        if inv.caller == Caller::Agent && !tool.agent_visible {
            return Err(CallError::NotAgentVisible(name.to_owned()));
        }
        let needed: Vec<String> = tool
            .scopes_required
            .iter()
            .filter(|s| !inv.granted_scopes.contains(*s))
            .cloned()
            .collect();
        if !needed.is_empty() {
            return Err(CallError::ScopeDenied {
                tool: name.to_owned(),
                needed,
            });
        }
        // Validated without building a value: the guest parses the arguments itself.
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(args) {
            return Err(CallError::InvalidInput(format!(
                "tool arguments are not valid JSON: {e}"
            )));
        }
        if !args.trim_start().starts_with('{') {
            return Err(CallError::InvalidInput(
                "tool arguments must be a JSON object".into(),
            ));
        }
        let call = HandlerCall::Tool {
            name: name.to_owned(),
            args: args.to_owned(),
        };
        self.json_reply(self.run(inv, call).await?)
    }

    /// `on_install`: the app was activated for the tenant.
    pub async fn on_install(&self, inv: &Invocation) -> Result<(), CallError> {
        self.lifecycle(
            inv,
            "on_install",
            self.manifest().lifecycle.on_install,
            HandlerCall::Install,
        )
        .await
    }

    /// `on_uninstall`: the app was deactivated for the tenant.
    pub async fn on_uninstall(&self, inv: &Invocation) -> Result<(), CallError> {
        self.lifecycle(
            inv,
            "on_uninstall",
            self.manifest().lifecycle.on_uninstall,
            HandlerCall::Uninstall,
        )
        .await
    }

    /// `on_inbound`: a message arrived on an inbound channel.
    pub async fn on_inbound(
        &self,
        inv: &Invocation,
        envelope: InboundEnvelope,
    ) -> Result<(), CallError> {
        self.lifecycle(
            inv,
            "on_inbound",
            self.manifest().lifecycle.on_inbound,
            HandlerCall::Inbound(envelope),
        )
        .await
    }

    /// `on_user_added`: a user joined the tenant.
    pub async fn on_user_added(&self, inv: &Invocation, user: UserAdded) -> Result<(), CallError> {
        self.lifecycle(
            inv,
            "on_user_added",
            self.manifest().lifecycle.on_user_added,
            HandlerCall::UserAdded(user),
        )
        .await
    }

    /// A named schedule is due.
    pub async fn on_schedule(&self, inv: &Invocation, name: &str) -> Result<(), CallError> {
        let schedules = &self.manifest().lifecycle.schedules;
        if !schedules.iter().any(|s| s.name == name) {
            let names: Vec<&str> = schedules.iter().map(|s| s.name.as_str()).collect();
            return Err(CallError::NotDeclared(format!(
                "schedule `{name}` is not declared in lifecycle.schedules ({})",
                declared_names(&names)
            )));
        }
        self.run(inv, HandlerCall::Schedule(name.to_owned()))
            .await
            .map(|_| ())
    }

    /// An event arrived over a wire; returns the handler's JSON result.
    pub async fn on_event(&self, inv: &Invocation, event: AppEvent) -> Result<String, CallError> {
        let m = self.manifest();
        if !m
            .subscribes_to
            .iter()
            .any(|s| s.event_name == event.event_name && s.emitter_app == event.emitter_app_id)
        {
            return Err(CallError::NotDeclared(format!(
                "the manifest does not subscribe to event `{}` of app `{}`",
                event.event_name, event.emitter_app_id
            )));
        }
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&event.payload) {
            return Err(CallError::InvalidInput(format!(
                "the event payload is not valid JSON: {e}"
            )));
        }
        self.json_reply(self.run(inv, HandlerCall::Event(event)).await?)
    }

    /// A room message mentioned the app's agent `agent`.
    pub async fn on_message(
        &self,
        inv: &Invocation,
        agent: &str,
        message: RoomMessage,
    ) -> Result<(), CallError> {
        if !self.manifest().agents.iter().any(|a| a.id == agent) {
            return Err(CallError::NotDeclared(format!(
                "`{agent}` is not an agent of this app"
            )));
        }
        self.run(
            inv,
            HandlerCall::Message {
                agent: agent.to_owned(),
                message,
            },
        )
        .await
        .map(|_| ())
    }

    async fn lifecycle(
        &self,
        inv: &Invocation,
        hook: &str,
        enabled: bool,
        call: HandlerCall,
    ) -> Result<(), CallError> {
        if !enabled {
            return Err(CallError::NotDeclared(format!(
                "lifecycle.{hook} is not true in the manifest"
            )));
        }
        self.run(inv, call).await.map(|_| ())
    }

    fn json_reply(&self, reply: HandlerReply) -> Result<String, CallError> {
        let HandlerReply::Json(json) = reply else {
            return Err(CallError::Internal(
                "handler answered the wrong shape".into(),
            ));
        };
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&json) {
            return Err(CallError::Contract(format!(
                "the result is not valid JSON: {e}"
            )));
        }
        Ok(json)
    }

    pub(super) async fn run(
        &self,
        inv: &Invocation,
        call: HandlerCall,
    ) -> Result<HandlerReply, CallError> {
        if !matches!(call, HandlerCall::Describe) {
            // Boxed: the check itself runs `describe` through here.
            Box::pin(self.verify()).await?;
        }
        let reply = match &self.inner.code {
            Code::Component(component) => self.run_component(component, inv, call).await?,
            Code::External(external) => {
                let deadline = self.inner.runtime.config.deadline;
                let limit = self.inner.runtime.config.max_result_bytes;
                tokio::time::timeout(deadline, external.handle(inv, call, limit))
                    .await
                    .map_err(|_| CallError::Deadline(deadline))??
            }
        };
        let limit = self.inner.runtime.config.max_result_bytes;
        if let HandlerReply::Json(json) = &reply
            && json.len() > limit
        {
            return Err(CallError::TooLarge {
                what: "result",
                limit,
            });
        }
        Ok(reply)
    }

    async fn run_component(
        &self,
        component: &Component,
        inv: &Invocation,
        call: HandlerCall,
    ) -> Result<HandlerReply, CallError> {
        let Some(indices) = component.handlers.clone() else {
            return Err(CallError::NotSupported(
                "the app serves no handler calls (it does not export atrium:app/handlers)".into(),
            ));
        };
        let runtime = &self.inner.runtime;
        let deadline = runtime.config.deadline;
        let (mut store, instance) = self.instantiate(component, inv).await?;
        let guest = indices
            .load(&mut store, &instance)
            .map_err(|e| CallError::Internal(format!("{e:#}")))?;
        let cpu = self.call_cpu(inv);
        let account = cpu.account();
        // The guest runs on the first lane, or in the background once it has computed for
        // long (docs/runtime.md, "Fair shares"); the instance is made and dropped here, so
        // that the pool's locks are never held at the background's low priority. The epoch
        // stops a guest that computes; the timeout stops one that waits on the host.
        let ((store, outcome), used) = runtime
            .background
            .run(&runtime.tenants, &inv.tenant_id, cpu, async move {
                let outcome =
                    tokio::time::timeout(deadline, dispatch(&guest, &mut store, call)).await;
                (store, outcome)
            })
            .await?;
        let Ok(result) = outcome else {
            store.data().log.finish();
            release(runtime, store, account);
            return Err(CallError::Deadline(deadline));
        };
        let reply = finish(&store, &used, result, deadline);
        release(runtime, store, account);
        reply
    }
}

async fn dispatch(
    guest: &Handlers,
    store: &mut Store<CallState>,
    call: HandlerCall,
) -> wasmtime::Result<Result<HandlerReply, HandlerError>> {
    use HandlerReply::{Json, Unit};
    Ok(match call {
        HandlerCall::Describe => guest
            .call_describe(store)
            .await?
            .map(HandlerReply::Registration),
        HandlerCall::Tool { name, args } => {
            guest.call_call_tool(store, &name, &args).await?.map(Json)
        }
        HandlerCall::Install => guest.call_on_install(store).await?.map(|()| Unit),
        HandlerCall::Uninstall => guest.call_on_uninstall(store).await?.map(|()| Unit),
        HandlerCall::Inbound(envelope) => guest
            .call_on_inbound(store, &envelope)
            .await?
            .map(|()| Unit),
        HandlerCall::UserAdded(user) => {
            guest.call_on_user_added(store, &user).await?.map(|()| Unit)
        }
        HandlerCall::Schedule(name) => guest.call_on_schedule(store, &name).await?.map(|()| Unit),
        HandlerCall::Event(event) => guest.call_on_event(store, &event).await?.map(Json),
        HandlerCall::Message { agent, message } => guest
            .call_on_message(store, &agent, &message)
            .await?
            .map(|()| Unit),
    })
}

//! `App`: the registry of an app's handlers, checked against its manifest.

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;

use atrium_manifest::sandbox::registration::{self as rules, RegistrationRefusal};

use crate::error::RegistrationError;
use crate::http::{Request, Response};
use crate::{
    AppEvent, Ctx, Error, HandlerError, InboundEnvelope, ManifestInfo, Registration, RoomMessage,
    UserAdded,
};

type Handler<A, R> = Box<dyn Fn(&Ctx<'_>, A) -> Result<R, Error>>;
/// A tool: JSON arguments in, JSON text out. Arguments are deserialized straight from the
/// call's text, without an intermediate `Value`.
type ToolHandler = Box<dyn Fn(&Ctx<'_>, &str) -> Result<String, Error>>;
type RoomHandler = Box<dyn Fn(&Ctx<'_>, &str, RoomMessage) -> Result<(), Error>>;

/// Options of [`App::tool_with`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ToolOptions<'s> {
    /// Scopes the tool needs; must be a subset of the manifest's `required_scopes`.
    pub scopes_required: &'s [&'s str],
}

/// The lifecycle hooks, named as in the manifest.
const HOOKS: [&str; 4] = rules::LIFECYCLE_HOOKS;

/// An app: its manifest and the handlers registered for it. Every registration is checked
/// against the manifest (docs/sdk.md, "Registration rules") and fails with a
/// [`RegistrationError`] that names the rule.
pub struct App {
    manifest: &'static ManifestInfo,
    /// Registration happens at the start of every call (each call is a fresh instance), so
    /// tools live in a small vector keyed by the manifest's own `&'static str` names: no
    /// allocation per name, and a linear scan over a handful of entries.
    tools: Vec<(&'static str, ToolHandler)>,
    install: Option<Handler<(), ()>>,
    uninstall: Option<Handler<(), ()>>,
    inbound: Option<Handler<InboundEnvelope, ()>>,
    user_added: Option<Handler<UserAdded, ()>>,
    schedules: BTreeMap<String, Handler<(), ()>>,
    events: BTreeMap<String, Handler<AppEvent, serde_json::Value>>,
    room_message: Option<RoomHandler>,
    routes: Vec<(&'static str, &'static str, Handler<Request, Response>)>,
}

/// The rules live with the host's sandbox rules (`atrium_manifest::sandbox::registration`),
/// which the host applies again to what a component reports at load.
fn fail(refusal: RegistrationRefusal) -> RegistrationError {
    RegistrationError {
        kind: refusal.rule,
        message: refusal.message,
    }
}

impl App {
    /// An app with no handlers, for the manifest embedded by [`manifest!`](crate::manifest).
    pub fn new(manifest: &'static ManifestInfo) -> Self {
        App {
            manifest,
            tools: Vec::new(),
            install: None,
            uninstall: None,
            inbound: None,
            user_added: None,
            schedules: BTreeMap::new(),
            events: BTreeMap::new(),
            room_message: None,
            routes: Vec::new(),
        }
    }

    /// The manifest.
    pub fn manifest(&self) -> &'static ManifestInfo {
        self.manifest
    }

    /// Registers the handler of tool `name`, declared in the manifest's `tools`. Arguments are
    /// deserialized from the call's JSON object; the result is serialized to JSON.
    pub fn tool<A, R, F>(&mut self, name: &str, handler: F) -> Result<&mut Self, RegistrationError>
    where
        A: DeserializeOwned + 'static,
        R: Serialize + 'static,
        F: Fn(&Ctx<'_>, A) -> Result<R, Error> + 'static,
    {
        self.tool_with(name, ToolOptions::default(), handler)
    }

    /// Registers a tool handler with options (the TypeScript SDK's `scopesRequired`).
    pub fn tool_with<A, R, F>(
        &mut self,
        name: &str,
        options: ToolOptions<'_>,
        handler: F,
    ) -> Result<&mut Self, RegistrationError>
    where
        A: DeserializeOwned + 'static,
        R: Serialize + 'static,
        F: Fn(&Ctx<'_>, A) -> Result<R, Error> + 'static,
    {
        let m = self.manifest;
        let Some(declared) = m.tools.iter().find(|t| t.name == name) else {
            return Err(fail(rules::unknown_tool(m, name)));
        };
        rules::tool(m, name, options.scopes_required).map_err(fail)?;
        if self.tools.iter().any(|(n, _)| *n == name) {
            return Err(double("tool", name));
        }
        let wrapped: ToolHandler = Box::new(move |ctx, args| {
            let args: A = serde_json::from_str(args)
                .map_err(|e| Error::InvalidInput(format!("the arguments do not match: {e}")))?;
            let result = handler(ctx, args)?;
            serde_json::to_string(&result)
                .map_err(|e| Error::Failed(format!("the result does not serialize: {e}")))
        });
        self.tools.push((declared.name, wrapped));
        Ok(self)
    }

    fn check_hook(&self, hook: &str, present: bool) -> Result<(), RegistrationError> {
        rules::lifecycle_hook(self.manifest, hook).map_err(fail)?;
        if present {
            return Err(double("lifecycle hook", hook));
        }
        Ok(())
    }

    /// Registers the `on_install` handler; needs `lifecycle.on_install: true`.
    pub fn on_install(
        &mut self,
        handler: impl Fn(&Ctx<'_>) -> Result<(), Error> + 'static,
    ) -> Result<&mut Self, RegistrationError> {
        self.check_hook(HOOKS[0], self.install.is_some())?;
        self.install = Some(Box::new(move |ctx, ()| handler(ctx)));
        Ok(self)
    }

    /// Registers the `on_uninstall` handler; needs `lifecycle.on_uninstall: true`.
    pub fn on_uninstall(
        &mut self,
        handler: impl Fn(&Ctx<'_>) -> Result<(), Error> + 'static,
    ) -> Result<&mut Self, RegistrationError> {
        self.check_hook(HOOKS[1], self.uninstall.is_some())?;
        self.uninstall = Some(Box::new(move |ctx, ()| handler(ctx)));
        Ok(self)
    }

    /// Registers the `on_inbound` handler; needs `lifecycle.on_inbound: true`.
    pub fn on_inbound(
        &mut self,
        handler: impl Fn(&Ctx<'_>, InboundEnvelope) -> Result<(), Error> + 'static,
    ) -> Result<&mut Self, RegistrationError> {
        self.check_hook(HOOKS[2], self.inbound.is_some())?;
        self.inbound = Some(Box::new(handler));
        Ok(self)
    }

    /// Registers the `on_user_added` handler; needs `lifecycle.on_user_added: true`.
    pub fn on_user_added(
        &mut self,
        handler: impl Fn(&Ctx<'_>, UserAdded) -> Result<(), Error> + 'static,
    ) -> Result<&mut Self, RegistrationError> {
        self.check_hook(HOOKS[3], self.user_added.is_some())?;
        self.user_added = Some(Box::new(handler));
        Ok(self)
    }

    /// Registers the handler of schedule `name`, declared in `lifecycle.schedules`.
    pub fn on_schedule(
        &mut self,
        name: &str,
        handler: impl Fn(&Ctx<'_>) -> Result<(), Error> + 'static,
    ) -> Result<&mut Self, RegistrationError> {
        rules::schedule(self.manifest, name).map_err(fail)?;
        if self.schedules.contains_key(name) {
            return Err(double("schedule", name));
        }
        self.schedules
            .insert(name.to_owned(), Box::new(move |ctx, ()| handler(ctx)));
        Ok(self)
    }

    /// Registers the handler of event `name`; one handler per event name, shared by every
    /// emitter the manifest subscribes to (told apart by `emitter_app_id`).
    pub fn on_event<R: Serialize + 'static>(
        &mut self,
        name: &str,
        handler: impl Fn(&Ctx<'_>, AppEvent) -> Result<R, Error> + 'static,
    ) -> Result<&mut Self, RegistrationError> {
        rules::event(self.manifest, name).map_err(fail)?;
        if self.events.contains_key(name) {
            return Err(double("event", name));
        }
        self.events.insert(
            name.to_owned(),
            Box::new(move |ctx, event| {
                let result = handler(ctx, event)?;
                serde_json::to_value(result)
                    .map_err(|e| Error::Failed(format!("the result does not serialize: {e}")))
            }),
        );
        Ok(self)
    }

    /// Registers the room `on_message` handler: it gets the slug of the mentioned agent and
    /// the message. The app must declare at least one agent.
    pub fn on_message(
        &mut self,
        handler: impl Fn(&Ctx<'_>, &str, RoomMessage) -> Result<(), Error> + 'static,
    ) -> Result<&mut Self, RegistrationError> {
        rules::room_handler(self.manifest).map_err(fail)?;
        if self.room_message.is_some() {
            return Err(double("room handler", "on_message"));
        }
        self.room_message = Some(Box::new(handler));
        Ok(self)
    }

    /// Registers the handler of a route declared in `http_routes` (same method and path).
    pub fn route(
        &mut self,
        method: &str,
        path: &str,
        handler: impl Fn(&Ctx<'_>, Request) -> Result<Response, Error> + 'static,
    ) -> Result<&mut Self, RegistrationError> {
        let method_upper = method.to_ascii_uppercase();
        let Some(route) = self
            .manifest
            .routes
            .iter()
            .find(|r| r.method == method_upper && r.path == path)
        else {
            return Err(fail(rules::unknown_route(self.manifest, method, path)));
        };
        if self
            .routes
            .iter()
            .any(|(m, p, _)| *m == route.method && *p == route.path)
        {
            return Err(double("route", &format!("{method_upper} {path}")));
        }
        self.routes
            .push((route.method, route.path, Box::new(handler)));
        Ok(self)
    }

    /// What is registered, as the host's health check reads it.
    pub fn registration(&self) -> Registration {
        let hooks = [
            self.install.is_some(),
            self.uninstall.is_some(),
            self.inbound.is_some(),
            self.user_added.is_some(),
        ];
        Registration {
            manifest: self.manifest.source.to_owned(),
            tools: {
                let mut names: Vec<String> =
                    self.tools.iter().map(|(n, _)| (*n).to_owned()).collect();
                names.sort();
                names
            },
            lifecycle: HOOKS
                .iter()
                .zip(hooks)
                .filter(|(_, on)| *on)
                .map(|(h, _)| (*h).to_owned())
                .collect(),
            schedules: self.schedules.keys().cloned().collect(),
            events: self.events.keys().cloned().collect(),
            room_messages: self.room_message.is_some(),
            routes: self
                .routes
                .iter()
                .map(|(m, p, _)| format!("{m} {p}"))
                .collect(),
        }
    }

    /// The app of a component exported without `wasi:http/incoming-handler`
    /// (`export!(app, without_http)`): refused when it registered a route, which no request
    /// could reach, with the host's words for the same rule.
    pub(crate) fn served_without_http(self) -> Result<Self, RegistrationError> {
        match self.routes.first() {
            Some((method, path, _)) => Err(fail(rules::route_not_served(method, path))),
            None => Ok(self),
        }
    }

    /// Runs tool `name` with JSON arguments.
    pub fn call_tool(&self, ctx: &Ctx<'_>, name: &str, args: &str) -> Result<String, HandlerError> {
        let (_, handler) = self
            .tools
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| HandlerError::NoHandler(format!("tool `{name}`")))?;
        Ok(handler(ctx, args)?)
    }

    /// Runs a lifecycle hook by its manifest name.
    pub fn lifecycle(&self, ctx: &Ctx<'_>, hook: &str) -> Result<(), HandlerError> {
        let handler = match hook {
            "on_install" => self.install.as_ref(),
            "on_uninstall" => self.uninstall.as_ref(),
            _ => None,
        };
        let handler = handler.ok_or_else(|| HandlerError::NoHandler(hook.to_owned()))?;
        Ok(handler(ctx, ())?)
    }

    /// Runs the `on_inbound` handler.
    pub fn inbound(&self, ctx: &Ctx<'_>, envelope: InboundEnvelope) -> Result<(), HandlerError> {
        let handler = self
            .inbound
            .as_ref()
            .ok_or_else(|| HandlerError::NoHandler("on_inbound".into()))?;
        Ok(handler(ctx, envelope)?)
    }

    /// Runs the `on_user_added` handler.
    pub fn user_added(&self, ctx: &Ctx<'_>, user: UserAdded) -> Result<(), HandlerError> {
        let handler = self
            .user_added
            .as_ref()
            .ok_or_else(|| HandlerError::NoHandler("on_user_added".into()))?;
        Ok(handler(ctx, user)?)
    }

    /// Runs the handler of schedule `name`.
    pub fn schedule(&self, ctx: &Ctx<'_>, name: &str) -> Result<(), HandlerError> {
        let handler = self
            .schedules
            .get(name)
            .ok_or_else(|| HandlerError::NoHandler(format!("schedule `{name}`")))?;
        Ok(handler(ctx, ())?)
    }

    /// Runs the handler of an event; `no-handler` when none is registered (the platform turns
    /// it into `{ok: false, no_handler: true}` of docs/wit.md).
    pub fn event(&self, ctx: &Ctx<'_>, event: AppEvent) -> Result<String, HandlerError> {
        let handler = self
            .events
            .get(&event.event_name)
            .ok_or_else(|| HandlerError::NoHandler(format!("event `{}`", event.event_name)))?;
        Ok(handler(ctx, event)?.to_string())
    }

    /// Runs the room `on_message` handler for the mentioned agent.
    pub fn room_message(
        &self,
        ctx: &Ctx<'_>,
        agent: &str,
        message: RoomMessage,
    ) -> Result<(), HandlerError> {
        let handler = self
            .room_message
            .as_ref()
            .ok_or_else(|| HandlerError::NoHandler("on_message".into()))?;
        Ok(handler(ctx, agent, message)?)
    }

    /// Serves a request on the registered routes: 404 when no declared route matches the path,
    /// 405 when one matches with another method.
    pub fn serve(&self, ctx: &Ctx<'_>, mut request: Request) -> Response {
        let mut path_matched = false;
        for (method, pattern, handler) in &self.routes {
            let Some(params) = atrium_manifest::match_route(pattern, &request.path) else {
                continue;
            };
            path_matched = true;
            if !method.eq_ignore_ascii_case(&request.method) {
                continue;
            }
            request.params = params;
            return match handler(ctx, request) {
                Ok(response) => response,
                Err(Error::InvalidInput(m)) => Response::text(400, &m),
                Err(e) => Response::text(500, &e.to_string()),
            };
        }
        if path_matched {
            Response::text(405, "method not allowed")
        } else {
            Response::text(404, "no such route")
        }
    }
}

fn double(what: &str, name: &str) -> RegistrationError {
    fail(rules::double_registration(what, name))
}

//! `Ctx`: what a handler reaches the platform through (`ctx`, docs/sdk.md).

use std::cell::OnceCell;

use atrium_manifest::sandbox::{Decision, ToolRefusal};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::http::Response;
use crate::{
    AgentCallError, CallInfo, EmitResult, Error, FetchResponse, LogLevel, RoomPost, ToolCallError,
};

/// How a context reaches the platform: a backend through its table of methods, or, in a
/// component, the component's imports called directly. Direct calls let the linker keep only
/// the imports an app's code uses, where a table of every method would keep them all: a
/// component that never posts to a room or sends a request does not import `rooms.post` or
/// `wasi:http`, and each of its instances starts faster for it (docs/sdk.md, "Lean
/// components").
#[derive(Clone, Copy)]
pub(crate) enum Via<'a> {
    Backend(&'a dyn Backend),
    #[cfg(target_arch = "wasm32")]
    Imports,
}

/// Declares [`Backend`] and, for each of its methods, the same method on [`Via`].
macro_rules! backend {
    ($(#[doc = $doc:literal] fn $name:ident(&self $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)?;)*) => {
        /// The platform as the SDK reaches it: the component's imports in wasm, mocks in tests.
        pub trait Backend {
            $(#[doc = $doc] fn $name(&self $(, $arg: $ty)*) $(-> $ret)?;)*
        }

        impl Via<'_> {
            $(
                fn $name(self $(, $arg: $ty)*) $(-> $ret)? {
                    match self {
                        Via::Backend(backend) => backend.$name($($arg),*),
                        #[cfg(target_arch = "wasm32")]
                        Via::Imports => Backend::$name(&crate::wasm::Imports $(, $arg)*),
                    }
                }
            )*
        }
    };
}

backend! {
    /// `context.current`.
    fn call_info(&self) -> CallInfo;
    /// `context.public-callback-url`.
    fn public_callback_url(&self, path: &str) -> Result<String, String>;
    /// `tools.call`.
    fn call_tool(&self, name: &str, args: &str) -> Result<String, ToolCallError>;
    /// `secrets.get`.
    fn secret(&self, key: &str) -> Option<String>;
    /// `config.get`.
    fn config_get(&self, key: &str) -> Option<String>;
    /// `config.all`.
    fn config_all(&self) -> String;
    /// `rooms.post`.
    fn room_post(&self, room_id: &str, content: &str, from_agent: &str, metadata: Option<&str>) -> Result<RoomPost, ToolCallError>;
    /// `team.delegate`.
    fn delegate(&self, target: &str, prompt: &str, from_agent: &str) -> Result<String, AgentCallError>;
    /// `apps.invoke`.
    fn invoke(&self, app: &str, agent: &str, prompt: &str) -> Result<String, AgentCallError>;
    /// `apps.fetch`.
    fn fetch(&self, app: &str, path: &str, method: &str, body: Option<&[u8]>) -> Result<FetchResponse, AgentCallError>;
    /// `events.emit`.
    fn emit(&self, name: &str, payload: &str) -> Result<EmitResult, AgentCallError>;
    /// `agent.ask`.
    fn ask(&self, prompt: &str, agent: Option<&str>) -> Result<String, AgentCallError>;
    /// `commitments.add`.
    fn add_commitment(&self, title: &str, content: &str, from_agent: &str, due_at: Option<&str>) -> Result<String, ToolCallError>;
    /// `logging.log`.
    fn log(&self, level: LogLevel, message: &str);
    /// Outbound HTTP (`wasi:http/outgoing-handler`), allowed only to `network.egress_hosts`.
    fn http_send(&self, request: &OutboundRequest) -> Result<Response, String>;
}

/// An outbound HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundRequest {
    /// Upper-case method.
    pub method: String,
    /// `http://` or `https://` URL.
    pub url: String,
    /// Header names and values.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// The context of one call. Its fields mirror `ctx` of docs/sdk.md: `ctx.tools.call(...)`,
/// `ctx.secrets.get(...)`, `ctx.rooms.post(...)`, and so on.
pub struct Ctx<'a> {
    via: Via<'a>,
    info: OnceCell<CallInfo>,
    /// Platform tools.
    pub tools: Tools<'a>,
    /// Secrets.
    pub secrets: Secrets<'a>,
    /// Install settings.
    pub config: Config<'a>,
    /// Group rooms.
    pub rooms: Rooms<'a>,
    /// Team delegation.
    pub team: Team<'a>,
    /// Other apps.
    pub apps: Apps<'a>,
    /// Events.
    pub events: Events<'a>,
    /// The app's agents.
    pub agent: Agent<'a>,
    /// Commitments.
    pub commitments: Commitments<'a>,
    /// Structured logs.
    pub logger: Logger<'a>,
    /// Outbound HTTP to the hosts in `network.egress_hosts`.
    pub http: HttpClient<'a>,
}

impl<'a> Ctx<'a> {
    /// A context over a backend.
    pub fn new(backend: &'a dyn Backend) -> Self {
        Self::via(Via::Backend(backend))
    }

    /// The context of a call into the component: the platform through its imports.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn in_component() -> Self {
        Self::via(Via::Imports)
    }

    fn via(via: Via<'a>) -> Self {
        Ctx {
            via,
            info: OnceCell::new(),
            tools: Tools(via),
            secrets: Secrets(via),
            config: Config(via),
            rooms: Rooms(via),
            team: Team(via),
            apps: Apps(via),
            events: Events(via),
            agent: Agent(via),
            commitments: Commitments(via),
            logger: Logger(via),
            http: HttpClient(via),
        }
    }

    fn info(&self) -> &CallInfo {
        self.info.get_or_init(|| self.via.call_info())
    }

    /// The tenant the call is for.
    pub fn tenant_id(&self) -> &str {
        &self.info().tenant_id
    }

    /// The app's slug.
    pub fn app_id(&self) -> &str {
        &self.info().app_id
    }

    /// The app version serving the call.
    pub fn app_version(&self) -> &str {
        &self.info().app_version
    }

    /// The call's id, as in the host's logs.
    pub fn call_id(&self) -> &str {
        &self.info().call_id
    }

    /// How many agent hops led to this call.
    pub fn chain_depth(&self) -> u32 {
        self.info().chain_depth
    }

    /// Whether the call arrived on a public route (no tenant principal).
    pub fn is_public_route(&self) -> bool {
        self.info().public_route
    }

    /// The public URL of one of the app's public routes for this tenant.
    pub fn public_callback_url(&self, path: &str) -> Result<String, Error> {
        self.via.public_callback_url(path).map_err(Error::Failed)
    }
}

/// `ctx.tools`.
#[derive(Clone, Copy)]
pub struct Tools<'a>(Via<'a>);

impl Tools<'_> {
    /// Calls a platform tool with arguments that serialize to a JSON object.
    pub fn call(&self, name: &str, args: impl Serialize) -> Result<Value, ToolCallError> {
        self.call_as(name, args)
    }

    /// Calls a platform tool and deserializes its result.
    pub fn call_as<T: DeserializeOwned>(
        &self,
        name: &str,
        args: impl Serialize,
    ) -> Result<T, ToolCallError> {
        let bad = |message: String| ToolRefusal::new(name, Decision::InvalidArguments, message);
        let args = serde_json::to_string(&args).map_err(|e| {
            ToolCallError::from(bad(format!("the arguments do not serialize: {e}")))
        })?;
        let result = self.0.call_tool(name, &args)?;
        serde_json::from_str(&result).map_err(|e| {
            ToolRefusal::new(
                name,
                Decision::InvalidResult,
                format!("the result does not have the expected shape: {e}"),
            )
            .into()
        })
    }
}

/// `ctx.secrets`.
#[derive(Clone, Copy)]
pub struct Secrets<'a>(Via<'a>);

impl Secrets<'_> {
    /// A secret's value, or none when it is not set, the key is malformed, or the platform
    /// cannot be reached (`get` returns none and never fails, docs/sdk.md).
    pub fn get(&self, key: &str) -> Option<String> {
        atrium_manifest::rules::is_secret_key(key)
            .then(|| self.0.secret(key))
            .flatten()
    }
}

/// `ctx.config`: the install settings.
#[derive(Clone, Copy)]
pub struct Config<'a>(Via<'a>);

impl Config<'_> {
    /// A setting's value, or none when it is not filled in.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.0
            .config_get(key)
            .and_then(|v| serde_json::from_str(&v).ok())
    }

    /// A setting's value as a type, or none when it is not filled in or has another shape.
    pub fn get_as<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.get(key).and_then(|v| serde_json::from_value(v).ok())
    }

    /// Every filled-in setting.
    pub fn all(&self) -> serde_json::Map<String, Value> {
        match serde_json::from_str(&self.0.config_all()) {
            Ok(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        }
    }
}

/// `ctx.rooms`.
#[derive(Clone, Copy)]
pub struct Rooms<'a>(Via<'a>);

impl Rooms<'_> {
    /// Posts to a room as the app's agent `from_agent`.
    pub fn post(
        &self,
        room_id: &str,
        content: &str,
        from_agent: &str,
    ) -> Result<RoomPost, ToolCallError> {
        self.0.room_post(room_id, content, from_agent, None)
    }

    /// Posts with a metadata object.
    pub fn post_with_metadata(
        &self,
        room_id: &str,
        content: &str,
        from_agent: &str,
        metadata: &Value,
    ) -> Result<RoomPost, ToolCallError> {
        self.0
            .room_post(room_id, content, from_agent, Some(&metadata.to_string()))
    }
}

/// `ctx.team`.
#[derive(Clone, Copy)]
pub struct Team<'a>(Via<'a>);

impl Team<'_> {
    /// Delegates `prompt` to agent `target` of this app on behalf of `from_agent`.
    pub fn delegate(
        &self,
        target: &str,
        prompt: &str,
        from_agent: &str,
    ) -> Result<String, AgentCallError> {
        self.0.delegate(target, prompt, from_agent)
    }
}

/// `ctx.apps`.
#[derive(Clone, Copy)]
pub struct Apps<'a>(Via<'a>);

impl Apps<'_> {
    /// Invokes agent `agent` of app `app`.
    pub fn invoke(&self, app: &str, agent: &str, prompt: &str) -> Result<String, AgentCallError> {
        self.0.invoke(app, agent, prompt)
    }

    /// Calls an HTTP route of app `app`.
    pub fn fetch(
        &self,
        app: &str,
        path: &str,
        method: &str,
        body: Option<&[u8]>,
    ) -> Result<FetchResponse, AgentCallError> {
        self.0.fetch(app, path, method, body)
    }
}

/// `ctx.events`.
#[derive(Clone, Copy)]
pub struct Events<'a>(Via<'a>);

impl Events<'_> {
    /// Emits event `name` (declared in `emits`) with a payload.
    pub fn emit(&self, name: &str, payload: impl Serialize) -> Result<EmitResult, AgentCallError> {
        let payload = serde_json::to_string(&payload).map_err(|e| AgentCallError {
            reason: format!("the payload does not serialize: {e}"),
        })?;
        self.0.emit(name, &payload)
    }
}

/// `ctx.agent`.
#[derive(Clone, Copy)]
pub struct Agent<'a>(Via<'a>);

impl Agent<'_> {
    /// Asks one of the app's agents (the default one when `agent` is none).
    pub fn ask(&self, prompt: &str, agent: Option<&str>) -> Result<String, AgentCallError> {
        self.0.ask(prompt, agent)
    }
}

/// `ctx.commitments`.
#[derive(Clone, Copy)]
pub struct Commitments<'a>(Via<'a>);

impl Commitments<'_> {
    /// Records a commitment of agent `from_agent`; `due_at` is ISO-8601.
    pub fn add(
        &self,
        title: &str,
        content: &str,
        from_agent: &str,
        due_at: Option<&str>,
    ) -> Result<String, ToolCallError> {
        self.0.add_commitment(title, content, from_agent, due_at)
    }
}

/// `ctx.logger`.
#[derive(Clone, Copy)]
pub struct Logger<'a>(Via<'a>);

impl Logger<'_> {
    /// Debugging detail.
    pub fn debug(&self, message: &str) {
        self.0.log(LogLevel::Debug, message);
    }

    /// Normal operation.
    pub fn info(&self, message: &str) {
        self.0.log(LogLevel::Info, message);
    }

    /// Something unexpected that was handled.
    pub fn warn(&self, message: &str) {
        self.0.log(LogLevel::Warn, message);
    }

    /// A failure.
    pub fn error(&self, message: &str) {
        self.0.log(LogLevel::Error, message);
    }
}

/// `ctx.http`: outbound HTTP. Only hosts in `network.egress_hosts` are reachable; the host
/// refuses any other before connecting.
#[derive(Clone, Copy)]
pub struct HttpClient<'a>(Via<'a>);

impl HttpClient<'_> {
    /// Sends a request.
    pub fn send(&self, request: &OutboundRequest) -> Result<Response, Error> {
        self.0.http_send(request).map_err(Error::Failed)
    }

    /// A GET request.
    pub fn get(&self, url: &str) -> Result<Response, Error> {
        self.send(&OutboundRequest {
            method: "GET".into(),
            url: url.to_owned(),
            headers: Vec::new(),
            body: Vec::new(),
        })
    }
}

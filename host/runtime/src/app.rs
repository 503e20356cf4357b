//! A loaded app: its compiled component, ready to instantiate, and the calls into it.

use std::sync::Arc;

use atrium_manifest::Manifest;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use wasmtime::component::InstancePre;
use wasmtime::{PoolConcurrencyLimitError, Store, Trap};
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::exports::wasi::http::incoming_handler::GuestIndices as HttpIndices;

use atrium_manifest::sandbox::{declared_names, registration};

use crate::EgressPolicy;
use crate::bindings::exports::atrium::app::handlers::{
    Guest as Handlers, GuestIndices as HandlerIndices,
};
use crate::cache::CacheOutcome;
use crate::engine::{MAX_MEMORY_MB, RuntimeInner};
use crate::limits::{CallCpu, CpuAccount, CpuUse, DeadlineExceeded, MemoryCapExceeded};
use crate::memory::MemoryPlatform;
use crate::state::{CallState, VersionParts};
use crate::{
    AppEvent, CallError, Caller, HandlerError, InboundEnvelope, Invocation, LoadError,
    Registration, RoomMessage, Runtime, UserAdded,
};

/// An app version loaded into the runtime. Cheap to clone; every call gets a fresh instance.
#[derive(Clone)]
pub struct App {
    inner: Arc<AppInner>,
}

struct AppInner {
    runtime: Arc<RuntimeInner>,
    pre: InstancePre<CallState>,
    handlers: Option<HandlerIndices>,
    http: Option<HttpIndices>,
    manifest: Arc<Manifest>,
    egress: Arc<EgressPolicy>,
    env: Vec<(String, String)>,
    cache: CacheOutcome,
    preinitialized: bool,
    /// The outcome of the registration check, once it has run (see [`App::verify`]).
    verified: tokio::sync::OnceCell<Result<(), CallError>>,
}

/// The handler calls, in one type so that one function drives them all.
enum HandlerCall {
    Describe,
    Tool { name: String, args: String },
    Install,
    Uninstall,
    Inbound(InboundEnvelope),
    UserAdded(UserAdded),
    Schedule(String),
    Event(AppEvent),
    Message { agent: String, message: RoomMessage },
}

enum HandlerReply {
    Registration(Registration),
    Json(String),
    Unit,
}

/// What an HTTP route answered.
pub type RouteResponse = http::Response<Bytes>;

impl Runtime {
    /// Loads an app from the bytes of its component and its manifest: compiles it (or loads the
    /// cached compilation), pre-initialised when it exports `wizer-initialize`, checks that it
    /// targets the `atrium:app` world, and prepares it for instantiation.
    pub fn load(&self, bytes: &[u8], manifest: Manifest) -> Result<App, LoadError> {
        let inner = &self.inner;
        if is_core_module(bytes) {
            return Err(LoadError::NotAComponent(
                "this is a core WebAssembly module; build the app as a component (target wasm32-wasip2)".into(),
            ));
        }
        if !bytes.starts_with(b"\0asm") {
            return Err(LoadError::NotAComponent(
                "the file does not start with the WebAssembly magic bytes".into(),
            ));
        }
        let memory_mb = u64::from(manifest.runtime.resources.memory_mb);
        if memory_mb > MAX_MEMORY_MB {
            return Err(LoadError::Manifest(format!(
                "runtime.resources.memory_mb is {memory_mb}; this host allows at most {MAX_MEMORY_MB}"
            )));
        }
        let manifest = Arc::new(manifest);
        let egress = Arc::new(EgressPolicy::new(
            manifest.network.egress_hosts.iter().map(String::as_str),
        ));
        let env: Vec<(String, String)> = manifest
            .runtime
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let version = VersionParts {
            manifest: &manifest,
            egress: &egress,
            env: &env,
        };
        let compiled = crate::preinit::compile(inner, bytes, &version)
            .map_err(|e| LoadError::Compile(format!("{e:#}")))?;
        let pre = inner
            .linker
            .instantiate_pre(&compiled.component)
            .map_err(|e| LoadError::WrongWorld(format!("{e:#}")))?;
        let handlers = HandlerIndices::new(&pre).ok();
        let http = HttpIndices::new(&pre).ok();
        if handlers.is_none() && http.is_none() {
            return Err(LoadError::WrongWorld(
                "it exports neither atrium:app/handlers@0.1.0 nor wasi:http/incoming-handler@0.2"
                    .into(),
            ));
        }
        Ok(App {
            inner: Arc::new(AppInner {
                runtime: inner.clone(),
                pre,
                handlers,
                http,
                manifest,
                egress,
                env,
                cache: compiled.outcome,
                preinitialized: compiled.preinitialized,
                verified: tokio::sync::OnceCell::new(),
            }),
        })
    }

    /// Loads an app from a component file.
    pub fn load_file(&self, path: &std::path::Path, manifest: Manifest) -> Result<App, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
            path: path.to_owned(),
            source,
        })?;
        self.load(&bytes, manifest)
    }
}

/// A core module's header: magic then version 1; a component's layer field is 1.
fn is_core_module(bytes: &[u8]) -> bool {
    bytes.len() >= 8 && bytes.starts_with(b"\0asm") && bytes[4..8] == [1, 0, 0, 0]
}

impl App {
    /// The manifest the app was loaded with.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// Whether the compiled component came from the on-disk cache.
    pub fn loaded_from_cache(&self) -> bool {
        self.inner.cache == CacheOutcome::Loaded
    }

    /// Whether calls start from a pre-initialised snapshot of the component (it exports
    /// `wizer-initialize` and its initialisation succeeded; docs/runtime.md).
    pub fn preinitialized(&self) -> bool {
        self.inner.preinitialized
    }

    /// Whether the app serves handler calls (exports `atrium:app/handlers`).
    pub fn has_handlers(&self) -> bool {
        self.inner.handlers.is_some()
    }

    /// Whether the app serves HTTP routes (exports `wasi:http/incoming-handler`).
    pub fn has_http(&self) -> bool {
        self.inner.http.is_some()
    }

    /// The health check: a fresh instance starts and, when the app exports handlers, its
    /// registrations are valid for this manifest and were built from it. Returns what it
    /// registered.
    pub async fn health(&self, inv: &Invocation) -> Result<Option<Registration>, CallError> {
        let Some(registration) = self.checked_registration(inv).await? else {
            return Ok(None);
        };
        let built = atrium_manifest::parse(&registration.manifest).map_err(|e| {
            CallError::Registration(format!(
                "the manifest embedded in the component is invalid: {e}"
            ))
        })?;
        let m = self.manifest();
        if built.app_id != m.app_id || built.version != m.version {
            return Err(CallError::Registration(format!(
                "the component was built from the manifest of {}@{} but is loaded as {}@{}",
                built.app_id, built.version, m.app_id, m.version
            )));
        }
        Ok(Some(registration))
    }

    /// A fresh instance starts and, when the app exports handlers, what it registers is held
    /// to the registration rules against the manifest it is loaded with.
    async fn checked_registration(
        &self,
        inv: &Invocation,
    ) -> Result<Option<Registration>, CallError> {
        if self.inner.handlers.is_none() {
            let (mut store, _) = self.instantiate(inv).await?;
            store.data_mut().log.finish();
            return Ok(None);
        }
        let HandlerReply::Registration(registration) = self.run(inv, HandlerCall::Describe).await?
        else {
            return Err(CallError::Internal(
                "describe answered the wrong shape".into(),
            ));
        };
        // The SDK checks each registration as the app builds itself; the host checks the whole
        // of it again, so a component written without the SDK is held to the same rules.
        let registered = registration::Registered {
            tools: &registration.tools,
            lifecycle: &registration.lifecycle,
            schedules: &registration.schedules,
            events: &registration.events,
            room_messages: registration.room_messages,
            routes: &registration.routes,
            serves_http: self.has_http(),
        };
        registration::check(self.manifest(), &registered)
            .map_err(|e| CallError::Registration(e.message))?;
        Ok(Some(registration))
    }

    /// The registration check of a loaded app, run once: what it registers, in an instance of
    /// its own without a tenant, against the manifest it is loaded with (the component may
    /// have been built from another app id; the rules are the loaded manifest's). Every call
    /// waits for it, and an app whose registration breaks the rules answers every call with
    /// that error, as does one whose check trapped or ran out of time. Only a check that found
    /// no free instance slot is tried again.
    pub async fn verify(&self) -> Result<(), CallError> {
        let outcome = self
            .inner
            .verified
            .get_or_try_init(|| async {
                let mut inv = Invocation::new("", Arc::new(MemoryPlatform::default()));
                inv.call_id = Some("registration-check".into());
                match self.checked_registration(&inv).await {
                    Err(e @ CallError::Capacity(_)) => Err(e),
                    outcome => Ok(outcome.map(drop)),
                }
            })
            .await?;
        outcome.clone()
    }

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

    /// Serves an HTTP request on one of the routes in `http_routes`.
    pub async fn handle_http(
        &self,
        inv: &Invocation,
        request: http::Request<Bytes>,
    ) -> Result<RouteResponse, CallError> {
        let Some(indices) = self.inner.http.clone() else {
            return Err(CallError::NotSupported(
                "the app serves no HTTP routes (it does not export wasi:http/incoming-handler)"
                    .into(),
            ));
        };
        self.verify().await?;
        let method = request.method().as_str().to_owned();
        let path = request.uri().path().to_owned();
        let route = self
            .manifest()
            .http_routes
            .iter()
            .find(|r| r.method.as_str() == method && r.match_path(&path).is_some())
            .ok_or_else(|| {
                CallError::NotDeclared(format!(
                    "no route `{method} {path}` is declared in http_routes"
                ))
            })?;
        if inv.public_route && !route.public {
            return Err(CallError::NotDeclared(format!(
                "route `{method} {}` is not public",
                route.path
            )));
        }
        let request = with_authority(request)?;
        let deadline = self.inner.runtime.config.deadline;
        let limit = self.inner.runtime.config.max_result_bytes;
        let (mut store, instance) = self.instantiate(inv).await?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (req, out) = {
            let mut http = store.data_mut().http();
            let body = Full::new(request.body().clone())
                .map_err(|never| -> wasmtime_wasi_http::Error { match never {} });
            let req = http
                .new_incoming_request(
                    wasmtime_wasi_http::p2::bindings::http::types::Scheme::Http,
                    request.map(|_| body),
                )
                .map_err(|e| CallError::Internal(format!("{e:#}")))?;
            let out = http
                .new_response_outparam(tx)
                .map_err(|e| CallError::Internal(format!("{e:#}")))?;
            (req, out)
        };
        let guest = indices
            .load(&mut store, &instance)
            .map_err(|e| CallError::Internal(format!("{e:#}")))?;
        let runtime = self.inner.runtime.clone();
        let tenant = inv.tenant_id.clone();
        let cpu = self.call_cpu(inv);
        let account = cpu.account();
        let task = tokio::spawn(async move {
            let ((store, outcome), used) = runtime
                .background
                .run(&runtime.tenants, &tenant, cpu, async move {
                    let handled = guest.call_handle(&mut store, req, out);
                    let outcome = tokio::time::timeout(deadline, handled).await;
                    (store, outcome)
                })
                .await?;
            let result = match outcome {
                Ok(result) => finish(&store, &used, result.map(Ok::<(), HandlerError>), deadline),
                Err(_) => {
                    store.data().log.finish();
                    Err(CallError::Deadline(deadline))
                }
            };
            release(&runtime, store, account);
            result
        });
        let abort = task.abort_handle();
        let served = tokio::time::timeout(deadline, async move {
            let response = match rx.await {
                Ok(Ok(response)) => response,
                Ok(Err(code)) => {
                    task.await
                        .map_err(|e| CallError::Internal(e.to_string()))??;
                    return Err(CallError::Failed(format!(
                        "the route answered with an error: {code:?}"
                    )));
                }
                // The guest dropped the outparam without answering: its own error explains why.
                Err(_) => {
                    task.await
                        .map_err(|e| CallError::Internal(e.to_string()))??;
                    return Err(CallError::Contract(
                        "the route returned without setting a response".into(),
                    ));
                }
            };
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, limit).collect().await.map_err(|e| {
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    CallError::TooLarge {
                        what: "response body",
                        limit,
                    }
                } else {
                    CallError::Failed(format!("reading the response body failed: {e}"))
                }
            })?;
            task.await
                .map_err(|e| CallError::Internal(e.to_string()))??;
            Ok(http::Response::from_parts(parts, body.to_bytes()))
        })
        .await;
        match served {
            Ok(result) => result,
            Err(_) => {
                abort.abort();
                Err(CallError::Deadline(deadline))
            }
        }
    }

    /// What one call of `inv`'s tenant may use of its install's CPU share and its tenant's.
    fn call_cpu(&self, inv: &Invocation) -> CallCpu {
        let runtime = &self.inner.runtime;
        let manifest = &self.inner.manifest;
        let tenants = &runtime.tenants;
        let account = CpuAccount {
            install: tenants.share(&inv.tenant_id, &manifest.app_id),
            install_cores: manifest.runtime.resources.cpu_cores,
            tenant: runtime
                .config
                .max_cpu_cores_per_tenant
                .map(|cores| (tenants.tenant_share(&inv.tenant_id), cores)),
        };
        CallCpu::new(account, runtime.config.deadline)
    }

    /// Creates a fresh store and instance for one call.
    async fn instantiate(
        &self,
        inv: &Invocation,
    ) -> Result<(Store<CallState>, wasmtime::component::Instance), CallError> {
        let app = &self.inner;
        let reaper = &app.runtime.reaper;
        // How long a call may wait for the reaper in all, however busy the pool.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        loop {
            let slot = app
                .runtime
                .tenants
                .take(&inv.tenant_id, app.runtime.config.max_instances_per_tenant)?;
            let mut store = crate::state::new_store(
                &app.runtime,
                &crate::state::VersionParts {
                    manifest: &app.manifest,
                    egress: &app.egress,
                    env: &app.env,
                },
                inv,
            );
            store.data_mut().tenant_slot = Some(slot);
            let mark = reaper.drops();
            match app.pre.instantiate_async(&mut store).await {
                Ok(instance) => return Ok((store, instance)),
                Err(error) => {
                    let pool_full = error.is::<PoolConcurrencyLimitError>();
                    let refused = classify(error, store.data(), app.runtime.config.deadline);
                    drop(store);
                    // A full pool whose slots are partly held by finished calls waiting for
                    // the reaper is not full: the call waits (a second at most in all) for
                    // the reaper to give one back.
                    let left = until.saturating_duration_since(std::time::Instant::now());
                    if pool_full && !left.is_zero() && reaper.progress(mark, left).await {
                        continue;
                    }
                    return Err(refused);
                }
            }
        }
    }

    async fn run(&self, inv: &Invocation, call: HandlerCall) -> Result<HandlerReply, CallError> {
        let Some(indices) = self.inner.handlers.clone() else {
            return Err(CallError::NotSupported(
                "the app serves no handler calls (it does not export atrium:app/handlers)".into(),
            ));
        };
        if !matches!(call, HandlerCall::Describe) {
            // Boxed: the check itself runs `describe` through here.
            Box::pin(self.verify()).await?;
        }
        let runtime = &self.inner.runtime;
        let deadline = runtime.config.deadline;
        let (mut store, instance) = self.instantiate(inv).await?;
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
        let reply = reply?;
        let limit = runtime.config.max_result_bytes;
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

/// Drops the store of a finished call: on the reaper's thread when its memory grew past the
/// part of a pool slot kept resident (giving that back unmaps it, charged to `account`, the
/// call's install and tenant), here otherwise.
fn release(runtime: &RuntimeInner, store: Store<CallState>, account: CpuAccount) {
    if store.data().memory.peak_bytes > crate::engine::KEEP_RESIDENT_BYTES {
        runtime.reaper.drop_later(store, Some(account));
    }
}

/// Ends a call: flushes its logs and turns the guest's outcome into the caller's result.
fn finish<T>(
    store: &Store<CallState>,
    used: &CpuUse,
    result: wasmtime::Result<Result<T, HandlerError>>,
    deadline: std::time::Duration,
) -> Result<T, CallError> {
    let state = store.data();
    state.log.finish();
    let tags = state.log.tags();
    tracing::debug!(
        target: "atrium::call",
        tenant = %tags.tenant, app = %tags.app, version = %tags.version, call = %tags.call,
        busy_us = used.computed.as_micros() as u64,
        throttled = used.throttled,
        throttled_us = used.throttled_for.as_micros() as u64,
        peak_memory_bytes = state.memory.peak_bytes,
        dropped_log_records = state.log.dropped().records,
        dropped_log_bytes = state.log.dropped().bytes,
        ok = matches!(result, Ok(Ok(_))),
        "call finished"
    );
    match result {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(error)) => Err(match error {
            HandlerError::NoHandler(what) => CallError::NoHandler(what),
            HandlerError::Registration(message) => CallError::Registration(message),
            HandlerError::InvalidInput(message) => CallError::InvalidInput(message),
            HandlerError::Tool(error) => CallError::Tool(error),
            HandlerError::Agent(error) => CallError::Agent(error),
            HandlerError::Failed(message) => CallError::Failed(message),
        }),
        Err(error) => Err(classify(error, state, deadline)),
    }
}

/// Turns a wasmtime error (trap, limit, pool exhaustion) into a typed [`CallError`].
fn classify(error: wasmtime::Error, state: &CallState, deadline: std::time::Duration) -> CallError {
    if let Some(cap) = error.downcast_ref::<MemoryCapExceeded>() {
        return CallError::MemoryLimit {
            limit_mb: cap.limit_mb,
        };
    }
    if error.downcast_ref::<DeadlineExceeded>().is_some() {
        return CallError::Deadline(deadline);
    }
    if let Some(limit) = error.downcast_ref::<PoolConcurrencyLimitError>() {
        return CallError::Capacity(limit.to_string());
    }
    if let Some(trap) = error.downcast_ref::<Trap>() {
        return match trap {
            Trap::StackOverflow => CallError::StackOverflow,
            Trap::UnreachableCodeReached => match state.log.panic_message() {
                Some(message) => CallError::Panic(message),
                None => CallError::Trap(trap.to_string().trim_start_matches("wasm trap: ").to_owned()),
            },
            Trap::MemoryOutOfBounds => CallError::Trap(
                "out of bounds memory access (in a Rust app, often an overflow of its stack in linear memory)".into(),
            ),
            other => CallError::Trap(other.to_string().trim_start_matches("wasm trap: ").to_owned()),
        };
    }
    CallError::Trap(format!("{error:#}"))
}

/// wasi:http needs an authority; requests from the platform's proxy carry only a path.
fn with_authority(request: http::Request<Bytes>) -> Result<http::Request<Bytes>, CallError> {
    if request.uri().authority().is_some() {
        return Ok(request);
    }
    let (mut parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    parts.uri = http::Uri::builder()
        .scheme("http")
        .authority("app.localhost")
        .path_and_query(path)
        .build()
        .map_err(|e| CallError::InvalidInput(format!("invalid request path: {e}")))?;
    Ok(http::Request::from_parts(parts, body))
}

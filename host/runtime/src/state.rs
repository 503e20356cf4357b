//! What one call's store holds: its WASI context, its limits, and each capability's state.
//!
//! The host imports do not see this struct: each capability in [`crate::host`] has its own
//! context type, and [`crate::host::add_to_linker`] says which fields each one borrows.

use std::collections::BTreeSet;
use std::sync::Arc;

use atrium_manifest::Manifest;
use serde_json::{Map, Value};
use wasmtime::Store;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::egress::EgressHooks;
use crate::engine::RuntimeInner;
use crate::fairness::TenantSlot;
use crate::limits::{CpuClock, MemoryCap};
use crate::logs::{CallTags, LogPipe, LogSink, Stream};
use crate::{CallInfo, ChainContext, EgressPolicy, Invocation, Platform};

/// Who is calling and on whose behalf: what every capability that reaches the platform needs.
pub(crate) struct CallContext {
    /// The facts `context.current` answers.
    pub info: CallInfo,
    /// The chain the call is part of; nested calls advance it.
    pub chain: ChainContext,
    /// The calling app's manifest (what it declares).
    pub manifest: Arc<Manifest>,
    /// The platform behind the imports.
    pub platform: Arc<dyn Platform>,
}

/// The store data of one call.
pub(crate) struct CallState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub http: WasiHttpCtx,
    pub hooks: EgressHooks,
    pub memory: MemoryCap,
    pub clock: CpuClock,
    pub log: LogSink,
    pub call: CallContext,
    /// The `tools` capability's grant.
    pub granted_scopes: Arc<BTreeSet<String>>,
    /// The `config` capability's settings.
    pub settings: Arc<Map<String, Value>>,
    /// The tenant's share of the pool this call holds, given back with the store.
    pub tenant_slot: Option<TenantSlot>,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            hooks: &mut self.hooks,
            table: &mut self.table,
            ctx: &mut self.http,
        }
    }
}

/// What every call into one app version shares.
pub(crate) struct VersionParts<'a> {
    pub manifest: &'a Arc<Manifest>,
    pub egress: &'a Arc<EgressPolicy>,
    /// `runtime.env`.
    pub env: &'a [(String, String)],
}

/// A fresh store for one call: its WASI context (environment from `runtime.env`, output to the
/// call's log, no sockets, no files), its memory cap, its deadline and CPU share.
pub(crate) fn new_store(
    runtime: &RuntimeInner,
    version: &VersionParts<'_>,
    inv: &Invocation,
) -> Store<CallState> {
    let m = version.manifest;
    let config = &runtime.config;
    let call = inv.info(m);
    let log = LogSink::new(
        CallTags {
            tenant: call.tenant_id.clone(),
            app: call.app_id.clone(),
            version: call.app_version.clone(),
            call: call.call_id.clone(),
        },
        config.max_log_bytes,
    );
    let wasi = WasiCtxBuilder::new()
        .envs(version.env)
        .stdout(LogPipe::new(log.clone(), Stream::Stdout))
        .stderr(LogPipe::new(log.clone(), Stream::Stderr))
        .allow_ip_name_lookup(false)
        .allow_tcp(false)
        .allow_udp(false)
        .build();
    let state = CallState {
        wasi,
        table: ResourceTable::new(),
        http: WasiHttpCtx::new(),
        hooks: EgressHooks {
            policy: version.egress.clone(),
            log: log.clone(),
        },
        memory: MemoryCap {
            limit_mb: u64::from(m.runtime.resources.memory_mb),
            peak_bytes: 0,
        },
        clock: CpuClock::new(config.deadline),
        log,
        call: CallContext {
            info: call,
            chain: inv.chain.clone(),
            manifest: m.clone(),
            platform: inv.platform.clone(),
        },
        granted_scopes: Arc::new(inv.granted_scopes.clone()),
        settings: Arc::new(inv.settings.clone()),
        tenant_slot: None,
    };
    let mut store = Store::new(&runtime.engine, state);
    store.limiter(|s| &mut s.memory);
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut cx| cx.data_mut().clock.tick());
    store
}

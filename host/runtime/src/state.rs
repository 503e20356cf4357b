//! What one call's store holds: its WASI context, its limits, and each capability's state.
//!
//! The host imports do not see this struct: each capability in [`crate::host`] has its own
//! context type, and [`crate::host::add_to_linker`] says which fields each one borrows.

use std::collections::BTreeSet;
use std::sync::Arc;

use atrium_manifest::Manifest;
use serde_json::{Map, Value};
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::egress::EgressHooks;
use crate::limits::{CpuClock, MemoryCap};
use crate::logs::LogSink;
use crate::{CallInfo, ChainContext, Platform};

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

//! What one call's store holds: its WASI context, its limits, and what the host imports read.

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

/// The store data of one call.
pub(crate) struct CallState {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub http: WasiHttpCtx,
    pub hooks: EgressHooks,
    pub memory: MemoryCap,
    pub clock: CpuClock,
    pub log: LogSink,
    pub call: CallInfo,
    pub chain: ChainContext,
    pub manifest: Arc<Manifest>,
    pub granted_scopes: Arc<BTreeSet<String>>,
    pub settings: Arc<Map<String, Value>>,
    pub platform: Arc<dyn Platform>,
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

impl CallState {
    /// The canonical key of one of this app's agents.
    pub fn agent_key(&self, slug: &str) -> String {
        format!("{}:{slug}", self.manifest.app_id)
    }

    /// The declared agent with this slug.
    pub fn agent(&self, slug: &str) -> Option<&atrium_manifest::Agent> {
        self.manifest.agents.iter().find(|a| a.id == slug)
    }

    /// A message naming the declared agents, for errors.
    pub fn declared_agents(&self) -> String {
        let names: Vec<&str> = self.manifest.agents.iter().map(|a| a.id.as_str()).collect();
        if names.is_empty() {
            "the manifest declares no agent".to_owned()
        } else {
            format!("declared agents: {}", names.join(", "))
        }
    }
}

//! What every call shares: a fresh store and instance (waiting briefly for the reaper when
//! the pool is full), the call's CPU share, and its end: logs flushed, the store released, and
//! the guest's outcome or wasmtime's error turned into a typed [`CallError`].

use wasmtime::{PoolConcurrencyLimitError, Store, Trap};

use super::{App, Component};
use crate::engine::RuntimeInner;
use crate::limits::{CallCpu, CpuAccount, CpuUse, DeadlineExceeded, MemoryCapExceeded};
use crate::state::CallState;
use crate::{CallError, HandlerError, Invocation};

impl App {
    /// What one call of `inv`'s tenant may use of its install's CPU share and its tenant's.
    pub(super) fn call_cpu(&self, inv: &Invocation) -> CallCpu {
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
    pub(super) async fn instantiate(
        &self,
        component: &Component,
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
                    egress: &component.egress,
                    env: &component.env,
                },
                inv,
            );
            store.data_mut().tenant_slot = Some(slot);
            let mark = reaper.drops();
            match component.pre.instantiate_async(&mut store).await {
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
}

/// Drops the store of a finished call: on the reaper's thread when its memory grew past the
/// part of a pool slot kept resident (giving that back unmaps it, charged to `account`, the
/// call's install and tenant), here otherwise.
pub(super) fn release(runtime: &RuntimeInner, store: Store<CallState>, account: CpuAccount) {
    if store.data().memory.peak_bytes > crate::engine::KEEP_RESIDENT_BYTES {
        runtime.reaper.drop_later(store, Some(account));
    }
}

/// Ends a call: flushes its logs and turns the guest's outcome into the caller's result.
pub(super) fn finish<T>(
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

//! Pre-initialisation: a component that exports `wizer-initialize` (the Rust SDK's do) has it
//! run once per app version, and the state it leaves (linear memories and globals) becomes the
//! initial state of the component every call instantiates.
//!
//! The SDK's `wizer-initialize` builds the app (registers its handlers and checks them against
//! the manifest), so a call starts with the app built instead of building it again; that is
//! about half the cost of a trivial call. The snapshot is made with `wasmtime-wizer`: the
//! component is instrumented with exports that read its state, instantiated with the same
//! linker, limits and environment (`runtime.env`) as a call, initialised, read, and rewritten
//! with that state as data segments. It is compiled and cached as `<sha256>-<engine>-init.cwasm`
//! keyed by the component as published, so a restart neither runs the initialisation nor
//! compiles again.
//!
//! The initialisation sees an empty platform (tenant `""`, no grants, no settings, no secrets).
//! It must leave no resource open: a handle from the initialising store would mean nothing in a
//! call's store, so such a component is refused pre-initialisation. So is one whose
//! initialisation traps or runs out of time or memory: those are served as published, and build
//! the app at every call as before (a warning names the cause).

use std::sync::Arc;

use wasmtime::component::{Component, Instance, Lift, WasmList};
use wasmtime::{Store, bail, format_err};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

use crate::Invocation;
use crate::cache::{CacheKey, CacheOutcome, Variant};
use crate::engine::RuntimeInner;
use crate::memory::MemoryPlatform;
use crate::state::{CallState, VersionParts, new_store};

/// The export that initialises a component.
pub(crate) const INIT_EXPORT: &str = "wizer-initialize";

/// A compiled component and how it was obtained.
pub(crate) struct Compiled {
    pub component: Component,
    pub outcome: CacheOutcome,
    /// Whether the component runs from a pre-initialised snapshot.
    pub preinitialized: bool,
}

/// Compiles a component, pre-initialised when it exports [`INIT_EXPORT`] and its initialisation
/// succeeds, through the on-disk cache when there is one.
pub(crate) fn compile(
    runtime: &RuntimeInner,
    bytes: &[u8],
    version: &VersionParts<'_>,
) -> wasmtime::Result<Compiled> {
    let engine = &runtime.engine;
    let key = runtime.cache.as_ref().map(|_| CacheKey::of(bytes));
    // Only a component that exports the initialiser ever has a pre-initialised artifact, so a
    // cached one is looked for before the component is parsed.
    if let (Some(cache), Some(key)) = (&runtime.cache, &key)
        && let Some(component) = cache.load(engine, key, Variant::Preinitialized)
    {
        return Ok(Compiled {
            component,
            outcome: CacheOutcome::Loaded,
            preinitialized: true,
        });
    }
    if exports_init(bytes) {
        match snapshot(runtime, bytes, version) {
            Ok(snapshot) => {
                let component = match (&runtime.cache, &key) {
                    (Some(cache), Some(key)) => {
                        cache.compile_and_store(engine, key, Variant::Preinitialized, &snapshot)?
                    }
                    _ => Component::new(engine, &snapshot)?,
                };
                return Ok(Compiled {
                    component,
                    outcome: CacheOutcome::Compiled,
                    preinitialized: true,
                });
            }
            Err(error) => {
                let m = version.manifest;
                tracing::warn!(app = %m.app_id, version = %m.version, error = %format!("{error:#}"),
                    "the component's pre-initialisation failed; it is served as published and builds the app at every call");
            }
        }
    }
    let (component, outcome) = match (&runtime.cache, &key) {
        (Some(cache), Some(key)) => cache.load_or_compile(engine, key, bytes)?,
        _ => (Component::new(engine, bytes)?, CacheOutcome::Compiled),
    };
    Ok(Compiled {
        component,
        outcome,
        preinitialized: false,
    })
}

/// Whether the component (not a component nested in it) exports [`INIT_EXPORT`].
pub(crate) fn exports_init(bytes: &[u8]) -> bool {
    use wasmparser::{Parser, Payload};
    // Nested modules and components are parsed inline; only depth 0 is the component itself.
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        let Ok(payload) = payload else {
            return false;
        };
        match payload {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => match depth.checked_sub(1) {
                Some(outer) => depth = outer,
                None => return false,
            },
            Payload::ComponentExportSection(exports) if depth == 0 => {
                for export in exports.into_iter().flatten() {
                    if export.name.name == INIT_EXPORT {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Runs the initialisation and returns the snapshotted component. It runs on a thread of its
/// own with a single-threaded executor, so that loading stays a plain blocking call (like
/// compiling) whether or not the caller is inside an async runtime.
fn snapshot(
    runtime: &RuntimeInner,
    bytes: &[u8],
    version: &VersionParts<'_>,
) -> wasmtime::Result<Vec<u8>> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("atrium-preinit".into())
            .spawn_scoped(scope, || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format_err!("cannot start the initialisation's executor: {e}"))?
                    .block_on(initialize(runtime, bytes, version))
            })
            .map_err(|e| format_err!("cannot start the initialisation's thread: {e}"))?;
        worker
            .join()
            .unwrap_or_else(|_| Err(format_err!("the initialisation panicked in the host")))
    })
}

async fn initialize(
    runtime: &RuntimeInner,
    bytes: &[u8],
    version: &VersionParts<'_>,
) -> wasmtime::Result<Vec<u8>> {
    let mut wizer = Wizer::new();
    // Removing the export would leave the component's lift of it dangling (wasmtime-wizer
    // removes it from the core module only); kept, calling it again is a no-op for the SDK.
    wizer.keep_init_func(true);
    let (cx, instrumented) = wizer.instrument_component(bytes)?;
    let component = Component::new(&runtime.engine, &instrumented)?;
    let pre = runtime.linker.instantiate_pre(&component)?;
    let mut inv = Invocation::new("", Arc::new(MemoryPlatform::default()));
    inv.call_id = Some("pre-initialisation".into());
    let mut store = new_store(runtime, version, &inv);
    let instance = pre.instantiate_async(&mut store).await?;
    let init = instance.get_typed_func::<(), ()>(&mut store, INIT_EXPORT)?;
    let ran = init.call_async(&mut store, ()).await;
    store.data().log.finish();
    if let Err(trap) = ran {
        bail!("`{INIT_EXPORT}` failed: {trap:#}");
    }
    if !store.data().table.is_empty() {
        bail!("`{INIT_EXPORT}` left resources (streams, requests, pollables) open");
    }
    let mut access = Access {
        store: &mut store,
        instance,
        failed: None,
    };
    let snapshot = wizer.snapshot_component(&cx, &mut access).await?;
    match access.failed {
        Some(error) => Err(error),
        None => Ok(snapshot),
    }
}

/// How `wasmtime-wizer` reads the initialised instance: through the exports its
/// instrumentation added. Its trait returns plain values, so the first failure is kept here and
/// fails the snapshot afterwards.
struct Access<'a> {
    store: &'a mut Store<CallState>,
    instance: Instance,
    failed: Option<wasmtime::Error>,
}

impl Access<'_> {
    async fn call<R>(&mut self, instance: &str, func: &str) -> Option<R>
    where
        R: Lift + Send + Sync + 'static,
    {
        if self.failed.is_some() {
            return None;
        }
        match self.try_call(instance, func).await {
            Ok(value) => Some(value),
            Err(error) => {
                self.failed = Some(error);
                None
            }
        }
    }

    async fn try_call<R>(&mut self, instance: &str, func: &str) -> wasmtime::Result<R>
    where
        R: Lift + Send + Sync + 'static,
    {
        let store = &mut *self.store;
        let (_, outer) = self
            .instance
            .get_export(&mut *store, None, instance)
            .ok_or_else(|| format_err!("the instrumented component lacks `{instance}`"))?;
        let (_, inner) = self
            .instance
            .get_export(&mut *store, Some(&outer), func)
            .ok_or_else(|| format_err!("the instrumented component lacks `{instance}#{func}`"))?;
        let func = self
            .instance
            .get_typed_func::<(), (R,)>(&mut *store, inner)?;
        Ok(func.call_async(&mut *store, ()).await?.0)
    }
}

impl ComponentInstanceState for Access<'_> {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        match self.call::<WasmList<u8>>(instance, func).await {
            Some(list) => contents(list.as_le_slice(&*self.store)),
            None => contents(&[]),
        }
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func).await.unwrap_or_default()
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func).await.unwrap_or_default()
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call::<f32>(instance, func)
            .await
            .map(f32::to_bits)
            .unwrap_or_default()
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call::<f64>(instance, func)
            .await
            .map(f64::to_bits)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{EgressPolicy, Runtime, RuntimeConfig};

    const MANIFEST: &str = "apiVersion: platform/v2\napp_id: preinit-test\nversion: 1.0.0\n\
        name: Preinit Test\nruntime:\n  image: ghcr.io/atrium-examples/preinit-test:1.0.0\n";

    /// A component whose `wizer-initialize` runs `init` (given as WAT instructions) and whose
    /// `get` returns the sum of memory word 16 and a mutable global.
    fn counter(init: &str) -> Vec<u8> {
        component(&format!(
            r#"(component
                (core module $m
                    (memory (export "memory") 1)
                    (global $g (mut i32) (i32.const 0))
                    (func (export "init") {init})
                    (func (export "get") (result i32)
                        (i32.add (i32.load (i32.const 16)) (global.get $g))))
                (core instance $i (instantiate $m))
                (func (export "wizer-initialize") (canon lift (core func $i "init")))
                (func (export "get") (result u32) (canon lift (core func $i "get")))
            )"#
        ))
    }

    /// A runtime and the parts of an app version, for [`compile`].
    struct Fixture {
        runtime: Runtime,
        manifest: Arc<atrium_manifest::Manifest>,
        egress: Arc<EgressPolicy>,
    }

    impl Fixture {
        fn new(config: RuntimeConfig) -> Self {
            Fixture {
                runtime: Runtime::new(config).unwrap(),
                manifest: Arc::new(atrium_manifest::parse(MANIFEST).unwrap()),
                egress: Arc::new(EgressPolicy::new(std::iter::empty())),
            }
        }

        fn version(&self) -> VersionParts<'_> {
            VersionParts {
                manifest: &self.manifest,
                egress: &self.egress,
                env: &[],
            }
        }

        fn compile(&self, bytes: &[u8]) -> Compiled {
            compile(&self.runtime.inner, bytes, &self.version()).unwrap()
        }
    }

    /// Compiles `bytes` through [`compile`] and calls `get` on a fresh instance.
    async fn compile_and_get(bytes: &[u8]) -> (bool, u32) {
        let fixture = Fixture::new(RuntimeConfig::default());
        let compiled = fixture.compile(bytes);
        let inner = &fixture.runtime.inner;
        let pre = inner.linker.instantiate_pre(&compiled.component).unwrap();
        let inv = Invocation::new("tenant-a", Arc::new(MemoryPlatform::default()));
        let mut store = new_store(inner, &fixture.version(), &inv);
        let instance = pre.instantiate_async(&mut store).await.unwrap();
        let get = instance
            .get_typed_func::<(), (u32,)>(&mut store, "get")
            .unwrap();
        let (value,) = get.call_async(&mut store, ()).await.unwrap();
        (compiled.preinitialized, value)
    }

    #[tokio::test]
    async fn an_instance_of_the_snapshot_starts_where_the_initialisation_left_off() {
        let bytes =
            counter("(i32.store (i32.const 16) (i32.const 42)) (global.set $g (i32.const 7))");
        assert_eq!(compile_and_get(&bytes).await, (true, 49));
    }

    #[tokio::test]
    async fn an_initialisation_that_traps_leaves_the_component_as_published() {
        let bytes = counter("(i32.store (i32.const 16) (i32.const 42)) unreachable");
        assert_eq!(compile_and_get(&bytes).await, (false, 0));
    }

    #[tokio::test]
    async fn an_initialisation_past_the_deadline_leaves_the_component_as_published() {
        let bytes = counter("(loop $forever (br $forever))");
        let fixture = Fixture::new(RuntimeConfig {
            deadline: std::time::Duration::from_millis(200),
            ..RuntimeConfig::default()
        });
        let compiled = fixture.compile(&bytes);
        assert!(!compiled.preinitialized);
    }

    fn component(wat: &str) -> Vec<u8> {
        wat::parse_str(wat).expect("valid wat")
    }

    #[test]
    fn the_init_export_is_found_at_the_top_level_only() {
        let top = component(
            r#"(component
                (core module $m (func (export "init")))
                (core instance $i (instantiate $m))
                (func (export "wizer-initialize") (canon lift (core func $i "init")))
            )"#,
        );
        assert!(exports_init(&top));
        let nested = component(
            r#"(component
                (component $inner
                    (core module $m (func (export "init")))
                    (core instance $i (instantiate $m))
                    (func (export "wizer-initialize") (canon lift (core func $i "init")))
                )
                (instance (instantiate $inner))
            )"#,
        );
        assert!(!exports_init(&nested));
        let other = component(
            r#"(component
                (core module $m (func (export "init")))
                (core instance $i (instantiate $m))
                (func (export "initialize") (canon lift (core func $i "init")))
            )"#,
        );
        assert!(!exports_init(&other));
        assert!(!exports_init(b"\0asm\x0d\0\x01\0garbage"));
    }
}

//! The process-wide engine: configuration, the epoch ticker, the linker, the component cache.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::LoadError;
use crate::cache::DiskCache;
use crate::fairness::{Background, Reaper, TenantSlots};
use crate::state::CallState;

/// How the runtime is set up. Every field has a default fit for one host.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Where compiled components are cached; none compiles at every load.
    pub cache_dir: Option<PathBuf>,
    /// How long one call may run (default 30 s).
    pub deadline: Duration,
    /// How many instances may exist at once across all apps (default 1,000); a call beyond
    /// that fails with [`crate::CallError::Capacity`].
    pub max_instances: u32,
    /// How many of them one tenant may hold at once (default 250, a quarter of the pool); a
    /// call beyond fails with [`crate::CallError::Capacity`] (docs/runtime.md, "Fair shares").
    pub max_instances_per_tenant: u32,
    /// How much of the machine's cores one tenant's calls may use together, across all its
    /// installs and whatever their manifests' `cpu_cores` (default a quarter of the cores, like
    /// its quarter of the pool; none: each install has its `cpu_cores`, and nothing caps the
    /// tenant). See docs/runtime.md, "What `cpu_cores` means".
    pub max_cpu_cores_per_tenant: Option<f64>,
    /// Threads of the background lane, where calls that compute for long run at the lowest
    /// priority (default: one fewer than the cores, at least one; 0 keeps every call on its
    /// caller's runtime).
    pub background_threads: usize,
    /// The largest result a handler may return, and the largest HTTP response body (default 1 MiB).
    pub max_result_bytes: usize,
    /// How much output (stdout, stderr, log records) one call may write (default 64 KiB).
    pub max_log_bytes: usize,
    /// How often the engine's epoch advances: the granularity of deadlines and of the CPU share
    /// (default 1 ms).
    pub tick: Duration,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            cache_dir: None,
            deadline: Duration::from_secs(30),
            max_instances: 1000,
            max_instances_per_tenant: 250,
            max_cpu_cores_per_tenant: Some(available_cores() as f64 / 4.0),
            // One core fewer than the machine has: a core is always left to the first lane,
            // so a short call never waits for a background thread to be preempted.
            background_threads: available_cores().saturating_sub(1).max(1),
            max_result_bytes: 1024 * 1024,
            max_log_bytes: 64 * 1024,
            tick: Duration::from_millis(1),
        }
    }
}

/// The cores this process may run on (one where that cannot be told).
fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// How much of a linear memory stays resident in a free pool slot.
pub(crate) const KEEP_RESIDENT_BYTES: usize = 4 << 20;

/// The largest memory any app may ask for (`runtime.resources.memory_mb` maximum).
pub const MAX_MEMORY_MB: u64 = 4096;

/// The component runtime of one host process. Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<RuntimeInner>,
}

pub(crate) struct RuntimeInner {
    pub engine: Engine,
    pub linker: Linker<CallState>,
    pub config: RuntimeConfig,
    pub cache: Option<DiskCache>,
    /// The instances each tenant holds.
    pub tenants: Arc<TenantSlots>,
    /// Where long calls go on computing at the lowest priority.
    pub background: Background,
    /// Where instances that are expensive to give back are dropped.
    pub reaper: Reaper,
    ticker: Ticker,
}

impl Drop for RuntimeInner {
    fn drop(&mut self) {
        self.ticker.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.ticker.handle.take() {
            let _ = handle.join();
        }
    }
}

struct Ticker {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Runtime {
    /// Creates the engine, the linker with every host import, and starts the epoch ticker.
    pub fn new(config: RuntimeConfig) -> Result<Self, LoadError> {
        let engine = Engine::new(&engine_config(&config))
            .map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        let mut linker = Linker::new(&engine);
        add_imports(&mut linker).map_err(|e| LoadError::Engine(format!("{e:#}")))?;
        let cache = match &config.cache_dir {
            Some(dir) => Some(DiskCache::new(dir.clone(), &engine).map_err(|e| {
                LoadError::Engine(format!(
                    "cannot use the cache directory {}: {e}",
                    dir.display()
                ))
            })?),
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let (engine, stop, tick) = (engine.clone(), stop.clone(), config.tick);
            std::thread::Builder::new()
                .name("atrium-epoch".into())
                .spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(tick);
                        engine.increment_epoch();
                    }
                })
                .map_err(|e| LoadError::Engine(format!("cannot start the epoch thread: {e}")))?
        };
        let ticker = Ticker {
            stop,
            handle: Some(handle),
        };
        let background = Background::start(config.background_threads)
            .map_err(|e| LoadError::Engine(format!("cannot start the background lane: {e}")))?;
        let reaper = Reaper::start()
            .map_err(|e| LoadError::Engine(format!("cannot start the reaper thread: {e}")))?;
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                config,
                cache,
                tenants: Arc::default(),
                background,
                reaper,
                ticker,
            }),
        })
    }

    /// The configuration the runtime was made with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.config
    }
}

fn engine_config(config: &RuntimeConfig) -> Config {
    engine_config_with(pooling(config.max_instances))
}

fn engine_config_with(pool: PoolingAllocationConfig) -> Config {
    let mut c = Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    c
}

/// The instance pool for `n` component instances (docs/runtime.md, "The instance pool").
///
/// Nothing of one call may reach the next in the same slot (wasmtime's GHSA-wh6w-3828-g9qf is
/// the class of bug ruled out): every memory slot is reset when its instance is dropped, to
/// its module's copy-on-write image or to zeros, and an image left in a slot is replaced or
/// removed when the next instance is of another module. The reset covers the dirty pages kept
/// resident and unmaps the rest; tables are reset the same way, and globals live in the
/// instance's own vmctx, written from the module's initialisers at every instantiation. The
/// tests below run the sequence with one slot of everything.
fn pooling(n: u32) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(n);
    // A Rust component is a handful of core instances (the program plus adapter shims).
    pool.total_core_instances(n.saturating_mul(8));
    pool.total_memories(n.saturating_mul(2));
    pool.total_tables(n.saturating_mul(4));
    pool.total_stacks(n);
    pool.max_memory_size(usize::try_from(MAX_MEMORY_MB << 20).unwrap_or(usize::MAX));
    pool.max_memories_per_component(4);
    pool.max_tables_per_component(8);
    // A slot is reset for the next call by restoring only the pages the last call dirtied
    // (PAGEMAP_SCAN on Linux 6.7+, else memset of the low addresses) instead of unmapping
    // them: the next call neither faults its stack and heap back in nor takes the address
    // space lock for an madvise, which is what limits calls per second across cores.
    pool.linear_memory_keep_resident(KEEP_RESIDENT_BYTES);
    pool.table_keep_resident(64 * 1024);
    pool.pagemap_scan(wasmtime::Enabled::Auto);
    // Copy-on-write images are wasmtime's default (`memory_init_cow`); stated here because
    // the reset above relies on them.
    pool
}

fn add_imports(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    // All of WASI p2 is linked so that any Rust program links, but the context of each call
    // grants nothing: no preopened directory, no socket address, no name lookup, environment
    // only from runtime.env. Outbound HTTP goes through the egress hooks.
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    crate::host::add_to_linker(linker)
}

#[cfg(test)]
mod tests {
    use wasmtime::{Instance, Module, Store, Val};

    use super::*;

    /// A module with a heap image (a data segment) that grows its memory past the resident
    /// part of the slot and leaves a marker in memory, in a global and in its table.
    const MARKING: &str = r#"(module
        (memory (export "memory") 1 200)
        (table 4 funcref)
        (global $g (mut i64) (i64.const 0))
        (func $f (result i32) (i32.const 7))
        (elem declare func $f)
        (data (i32.const 1024) "the first tenant's heap image")
        (func (export "leave") (param $m i64)
            (drop (memory.grow (i32.const 199)))
            (i64.store (i32.const 2048) (local.get $m))
            (i64.store (i32.const 3276800) (local.get $m))
            (i64.store (i32.const 13107192) (local.get $m))
            (global.set $g (local.get $m))
            (table.set (i32.const 2) (ref.func $f)))
        (func (export "global") (result i64) (global.get $g))
        (func (export "tables") (result i32)
            (i32.add
                (i32.add (ref.is_null (table.get (i32.const 0))) (ref.is_null (table.get (i32.const 1))))
                (i32.add (ref.is_null (table.get (i32.const 2))) (ref.is_null (table.get (i32.const 3)))))))"#;

    /// A module without a heap image (no data segment) whose memory covers all the first one
    /// reached.
    const SCANNING: &str = r#"(module
        (memory (export "memory") 200 200)
        (table 4 funcref)
        (global $g (mut i64) (i64.const 0))
        (func (export "global") (result i64) (global.get $g))
        (func (export "tables") (result i32)
            (i32.add
                (i32.add (ref.is_null (table.get (i32.const 0))) (ref.is_null (table.get (i32.const 1))))
                (i32.add (ref.is_null (table.get (i32.const 2))) (ref.is_null (table.get (i32.const 3)))))))"#;

    const MARKER: i64 = 0x5EC2_E7AB_C0FF_EE42;

    fn one_slot_engine() -> Engine {
        let mut pool = pooling(1);
        pool.total_core_instances(1);
        pool.total_memories(1);
        pool.total_tables(1);
        Engine::new(&engine_config_with(pool)).unwrap()
    }

    fn compile(engine: &Engine, wat: &str) -> Module {
        Module::new(engine, wat::parse_str(wat).unwrap()).unwrap()
    }

    struct Seen {
        markers: usize,
        image: bool,
        nonzero: usize,
        global: i64,
        null_table_entries: i32,
    }

    /// Instantiates `module` in the one slot, optionally leaves the marker, and reports what
    /// the instance found before it did.
    async fn visit(engine: &Engine, module: &Module, leave: bool) -> Seen {
        let mut store = Store::new(engine, ());
        store.set_epoch_deadline(1_000_000);
        let instance = Instance::new_async(&mut store, module, &[]).await.unwrap();
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        let data = memory.data(&store);
        let needle = MARKER.to_le_bytes();
        let markers = data.windows(8).filter(|w| *w == needle).count();
        let image = data.windows(11).any(|w| w == b"first tenan");
        let nonzero = data.iter().filter(|b| **b != 0).count();
        let mut results = [Val::I64(0)];
        instance
            .get_func(&mut store, "global")
            .unwrap()
            .call_async(&mut store, &[], &mut results)
            .await
            .unwrap();
        let global = results[0].unwrap_i64();
        let mut results = [Val::I32(0)];
        instance
            .get_func(&mut store, "tables")
            .unwrap()
            .call_async(&mut store, &[], &mut results)
            .await
            .unwrap();
        let null_table_entries = results[0].unwrap_i32();
        if leave {
            instance
                .get_func(&mut store, "leave")
                .unwrap()
                .call_async(&mut store, &[Val::I64(MARKER)], &mut [])
                .await
                .unwrap();
        }
        Seen {
            markers,
            image,
            nonzero,
            global,
            null_table_entries,
        }
    }

    #[tokio::test]
    async fn nothing_of_one_instance_reaches_the_next_in_the_same_slot() {
        let engine = one_slot_engine();
        let marking = compile(&engine, MARKING);
        let scanning = compile(&engine, SCANNING);
        // The same module again: its own image is back, the marker and its writes are gone.
        for round in 0..3 {
            let seen = visit(&engine, &marking, true).await;
            assert_eq!(seen.markers, 0, "round {round}");
            assert!(seen.image, "round {round}: the module's own image is there");
            assert_eq!(seen.global, 0, "round {round}");
            assert_eq!(seen.null_table_entries, 4, "round {round}");
        }
        // Another module, without a heap image, in the slot the marking module left: all of
        // its memory is zero (no marker, and none of the other module's image), its global is
        // its own initialiser and its table is empty. Then the marking module again, which
        // must find its image and nothing else.
        for round in 0..3 {
            let seen = visit(&engine, &scanning, false).await;
            assert_eq!(seen.markers, 0, "round {round}");
            assert!(!seen.image, "round {round}: another module's image leaked");
            assert_eq!(seen.nonzero, 0, "round {round}");
            assert_eq!(seen.global, 0, "round {round}");
            assert_eq!(seen.null_table_entries, 4, "round {round}");
            let seen = visit(&engine, &marking, true).await;
            assert_eq!(seen.markers, 0, "round {round}");
            assert!(seen.image, "round {round}");
            assert_eq!(seen.global, 0, "round {round}");
        }
    }

    #[tokio::test]
    async fn the_pool_has_exactly_one_slot_in_this_test() {
        let engine = one_slot_engine();
        let module = compile(&engine, SCANNING);
        let mut first = Store::new(&engine, ());
        Instance::new_async(&mut first, &module, &[]).await.unwrap();
        let mut second = Store::new(&engine, ());
        let err = Instance::new_async(&mut second, &module, &[])
            .await
            .unwrap_err();
        assert!(
            err.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                .is_some(),
            "{err:#}"
        );
    }
}

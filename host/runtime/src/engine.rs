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
            max_result_bytes: 1024 * 1024,
            max_log_bytes: 64 * 1024,
            tick: Duration::from_millis(1),
        }
    }
}

/// How much of a linear memory stays resident in a free pool slot.
const KEEP_RESIDENT_BYTES: usize = 4 << 20;

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
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                config,
                cache,
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
    let mut c = Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    let mut pool = PoolingAllocationConfig::default();
    let n = config.max_instances;
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
    c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    c
}

fn add_imports(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    // All of WASI p2 is linked so that any Rust program links, but the context of each call
    // grants nothing: no preopened directory, no socket address, no name lookup, environment
    // only from runtime.env. Outbound HTTP goes through the egress hooks.
    wasmtime_wasi::p2::add_to_linker_async(linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(linker)?;
    crate::host::add_to_linker(linker)
}

//! The three SDKs side by side: component size, cold load (compiling with cranelift, no
//! cache), cached load, and a trivial tool call with a fresh instance per call (p50, p99) for
//! the same `echo` tool written in Rust (`probe`), Python (`tests/guests/python-limits`, built
//! with componentize-py) and TypeScript (`tests/guests/ts-limits`, componentize-js).
//!
//! `cargo bench -p atrium-runtime --bench sdks` prints one Markdown table.
//! `ATRIUM_BENCH_CPU_CORES` sets every app's `runtime.resources.cpu_cores` (the guests' own
//! manifests ask for 1.0).
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{Invocation, Runtime, RuntimeConfig};
use atrium_test_artifacts::sdk;

fn manifest(path: &Path) -> atrium_manifest::Manifest {
    atrium_manifest::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The process's minor page faults so far (`/proc/self/stat`, field 10).
fn minor_faults() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit(')').next().unwrap_or("");
    after_name
        .split_whitespace()
        .nth(7)
        .and_then(|f| f.parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let apps: Vec<(&str, PathBuf, PathBuf)> = vec![
        (
            "Rust (probe)",
            PathBuf::from(atrium_test_artifacts::PROBE),
            PathBuf::from(atrium_test_artifacts::PROBE_MANIFEST),
        ),
        (
            "Python (componentize-py)",
            sdk::python_component("tests/guests/python-limits"),
            root.join("tests/guests/python-limits/atrium.app.yaml"),
        ),
        (
            "TypeScript (componentize-js)",
            sdk::typescript_component("tests/guests/ts-limits"),
            root.join("tests/guests/ts-limits/atrium.app.yaml"),
        ),
    ];
    let calls = 2_000;
    println!(
        "| SDK | Component | Cold load (compile) | Cached load | First call | Trivial call p50 | p99 | max | Page faults per call | Health check (mean) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (name, component, manifest_path) in apps {
        let bytes = std::fs::read(&component).unwrap();
        let mut m = manifest(&manifest_path);
        if let Ok(cores) = std::env::var("ATRIUM_BENCH_CPU_CORES") {
            m.runtime.resources.cpu_cores =
                cores.parse().expect("ATRIUM_BENCH_CPU_CORES is a number");
        }
        // Cold: a runtime without a cache compiles the component; the median of three.
        let mut cold = Vec::new();
        for _ in 0..3 {
            let uncached = Runtime::new(RuntimeConfig::default()).unwrap();
            let start = Instant::now();
            uncached.load(&bytes, m.clone()).unwrap();
            cold.push(start.elapsed());
        }
        cold.sort();
        let dir = tempfile::tempdir().unwrap();
        let runtime = Runtime::new(RuntimeConfig {
            cache_dir: Some(dir.path().to_owned()),
            // What a call costs, not how a tenant is capped: one tenant makes every call.
            max_cpu_cores_per_tenant: None,
            ..RuntimeConfig::default()
        })
        .unwrap();
        runtime.load(&bytes, m.clone()).unwrap();
        let mut cached = Vec::new();
        let mut app = None;
        for _ in 0..5 {
            let start = Instant::now();
            let loaded = runtime.load(&bytes, m.clone()).unwrap();
            cached.push(start.elapsed());
            assert!(loaded.loaded_from_cache());
            app = Some(loaded);
        }
        cached.sort();
        let app = app.unwrap();
        let inv = Invocation::new("tenant-bench", Arc::new(MemoryPlatform::default()));
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (first, mut samples, faults, health) = tokio.block_on(async {
            let start = Instant::now();
            app.call_tool(&inv, "echo", "{}").await.unwrap();
            let first = start.elapsed();
            for _ in 0..50 {
                app.call_tool(&inv, "echo", "{}").await.unwrap();
            }
            let mut samples = Vec::with_capacity(calls);
            let faults = minor_faults();
            for _ in 0..calls {
                let start = Instant::now();
                app.call_tool(&inv, "echo", "{}").await.unwrap();
                samples.push(start.elapsed());
            }
            let faults = (minor_faults() - faults) as f64 / calls as f64;
            let start = Instant::now();
            for _ in 0..200 {
                app.health(&inv).await.unwrap();
            }
            let health = start.elapsed() / 200;
            (first, samples, faults, health)
        });
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
        println!(
            "| {name} | {:.1} MB | {} | {} | {} | {} | {} | {} | {faults:.0} | {} |",
            bytes.len() as f64 / 1e6,
            ms(cold[1]),
            ms(cached[2]),
            ms(first),
            us(at(0.5)),
            us(at(0.99)),
            us(at(1.0)),
            us(health),
        );
    }
    println!("({calls} calls per SDK, each in a fresh instance, one thread)");
}

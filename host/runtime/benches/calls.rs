//! Runtime benchmarks: compile, cached load, one tool call with a fresh instance, calls per
//! second on two threads, and memory per concurrent instance.
//!
//! `cargo bench -p atrium-runtime --bench calls` runs the criterion groups, then prints the
//! latency percentiles, the throughput and the memory figures that criterion does not give.
//! Two other modes, for comparing two builds: `ATRIUM_BENCH_THROUGHPUT_RUNS=K` runs only the
//! throughput, K times; `ATRIUM_BENCH_INSTRUCTIONS=N` makes N calls of each kind for callgrind
//! (below).
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use atrium_runtime::memory::MemoryPlatform;
use atrium_runtime::{App, CallInfo, Invocation, Platform, Runtime, RuntimeConfig};
use criterion::{Criterion, criterion_group};

/// What a call costs, not how a tenant is capped: one tenant makes every call here.
fn config() -> RuntimeConfig {
    // Under valgrind the pool is small: it cannot reserve the default pool's address space.
    let pool = env_number("ATRIUM_BENCH_POOL").map(|n| n as u32);
    RuntimeConfig {
        max_cpu_cores_per_tenant: None,
        max_instances: pool.unwrap_or(1000),
        max_instances_per_tenant: pool.unwrap_or(250),
        ..RuntimeConfig::default()
    }
}

fn manifest(path: &str) -> atrium_manifest::Manifest {
    atrium_manifest::parse(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn load(runtime: &Runtime, component: &str, manifest_path: &str) -> App {
    runtime
        .load_file(std::path::Path::new(component), manifest(manifest_path))
        .unwrap()
}

fn probe(runtime: &Runtime) -> App {
    load(
        runtime,
        atrium_test_artifacts::PROBE,
        atrium_test_artifacts::PROBE_MANIFEST,
    )
}

/// The trivial app: `echo` alone, exported `without_http` (no `wasi:http` import).
fn echo(runtime: &Runtime) -> App {
    load(
        runtime,
        atrium_test_artifacts::ECHO,
        atrium_test_artifacts::ECHO_MANIFEST,
    )
}

fn bench_compile(c: &mut Criterion) {
    let bytes = std::fs::read(atrium_test_artifacts::INVOICES).unwrap();
    let m = manifest(atrium_test_artifacts::INVOICES_MANIFEST);
    let mut group = c.benchmark_group("load");
    group.sample_size(10);
    let uncached = Runtime::new(config()).unwrap();
    group.bench_function("compile invoice-desk (558 KB component)", |b| {
        b.iter(|| uncached.load(&bytes, m.clone()).unwrap());
    });
    let dir = tempfile::tempdir().unwrap();
    let cached = Runtime::new(RuntimeConfig {
        cache_dir: Some(dir.path().to_owned()),
        ..config()
    })
    .unwrap();
    cached.load(&bytes, m.clone()).unwrap();
    group.bench_function("cached load invoice-desk", |b| {
        b.iter(|| {
            let app = cached.load(&bytes, m.clone()).unwrap();
            assert!(app.loaded_from_cache());
        });
    });
    group.finish();
}

fn bench_call(c: &mut Criterion) {
    let runtime = Runtime::new(config()).unwrap();
    let app = probe(&runtime);
    let platform = Arc::new(MemoryPlatform::default());
    let inv = Invocation::new("tenant-bench", platform);
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("call");
    group.bench_function("trivial tool call, fresh instance (probe echo)", |b| {
        b.to_async(&tokio)
            .iter(|| async { app.call_tool(&inv, "echo", "{}").await.unwrap() });
    });
    let lean = echo(&runtime);
    group.bench_function(
        "trivial tool call, fresh instance (echo, without_http)",
        |b| {
            b.to_async(&tokio)
                .iter(|| async { lean.call_tool(&inv, "echo", "{}").await.unwrap() });
        },
    );
    let minimal = load(
        &runtime,
        atrium_test_artifacts::MINIMAL,
        atrium_test_artifacts::MINIMAL_MANIFEST,
    );
    group.bench_function("health check, fresh instance (hello-minimal)", |b| {
        b.to_async(&tokio)
            .iter(|| async { minimal.health(&inv).await.unwrap() });
    });
    group.finish();
}

criterion_group!(benches, bench_compile, bench_call);

/// Latency percentiles of the trivial call on one thread.
fn percentiles(app: &App, inv: &Invocation, label: &str) {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut samples: Vec<Duration> = Vec::with_capacity(20_000);
    tokio.block_on(async {
        for _ in 0..2_000 {
            app.call_tool(inv, "echo", "{}").await.unwrap();
        }
        for _ in 0..20_000 {
            let start = Instant::now();
            app.call_tool(inv, "echo", "{}").await.unwrap();
            samples.push(start.elapsed());
        }
    });
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    println!(
        "trivial tool call, fresh instance ({label}): p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, max {:.1} µs ({} calls)",
        at(0.50).as_secs_f64() * 1e6,
        at(0.90).as_secs_f64() * 1e6,
        at(0.99).as_secs_f64() * 1e6,
        at(1.0).as_secs_f64() * 1e6,
        samples.len()
    );
}

/// Where the time of a call goes: instantiation alone (an HTTP-only component's health check),
/// a call into a component written with wit-bindgen alone, and the same through the SDK.
fn breakdown(runtime: &Runtime, inv: &Invocation) {
    let plain = load(
        runtime,
        atrium_test_artifacts::PLAIN_HTTP,
        atrium_test_artifacts::PLAIN_HTTP_MANIFEST,
    );
    let only = load(
        runtime,
        atrium_test_artifacts::HANDLERS_ONLY,
        atrium_test_artifacts::HANDLERS_ONLY_MANIFEST,
    );
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let p50 = |samples: &mut Vec<Duration>| {
        samples.sort();
        samples[samples.len() / 2].as_secs_f64() * 1e6
    };
    tokio.block_on(async {
        let mut instantiate = Vec::new();
        let mut bare = Vec::new();
        for i in 0..22_000 {
            let start = Instant::now();
            plain.health(inv).await.unwrap();
            let mid = Instant::now();
            only.call_tool(inv, "hello", "{}").await.unwrap();
            if i >= 2_000 {
                instantiate.push(mid - start);
                bare.push(mid.elapsed());
            }
        }
        println!(
            "breakdown: instantiate only p50 {:.1} µs; tool call without the SDK p50 {:.1} µs",
            p50(&mut instantiate),
            p50(&mut bare)
        );
    });
}

/// Calls per second with two worker threads, each running many calls concurrently.
fn throughput(app: &App, inv: &Invocation, label: &str) {
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let per_task = 5_000;
    let tasks = 8;
    let elapsed = tokio.block_on(async {
        let start = Instant::now();
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let (app, inv) = (app.clone(), inv.clone());
                tokio::spawn(async move {
                    for _ in 0..per_task {
                        app.call_tool(&inv, "echo", "{}").await.unwrap();
                    }
                })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        start.elapsed()
    });
    let calls = per_task * tasks;
    println!(
        "throughput ({label}), 2 worker threads: {calls} calls in {:.2} s = {:.0} calls/s",
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64()
    );
}

/// A platform whose secrets never answer until released: holds instances alive mid-call.
struct Holding {
    release: tokio::sync::Semaphore,
}

#[async_trait]
impl Platform for Holding {
    async fn secret(&self, _: &CallInfo, _: &str) -> Option<String> {
        let _permit = self.release.acquire().await.ok()?;
        None
    }
    fn public_callback_url(&self, _: &CallInfo, _: &str) -> String {
        String::new()
    }
}

fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Resident memory added per instance held open mid-call.
fn memory_per_instance(runtime: &Runtime) {
    let app = probe(runtime);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let count = 500;
    tokio.block_on(async {
        let holding = Arc::new(Holding { release: tokio::sync::Semaphore::new(0) });
        let inv = Invocation::new("tenant-bench", holding.clone());
        // Warm the pool's first slots and the allocator.
        let warm = Arc::new(Holding { release: tokio::sync::Semaphore::new(1_000_000) });
        let warm_inv = Invocation::new("tenant-bench", warm);
        app.call_tool(&warm_inv, "platform", r#"{"op":"secret","key":"K"}"#).await.unwrap();
        let before = rss_bytes();
        // Spread over four tenants: one tenant may hold a quarter of the pool at most.
        let handles: Vec<_> = (0..count)
            .map(|i| {
                let (app, mut inv) = (app.clone(), inv.clone());
                inv.tenant_id = format!("tenant-bench-{}", i % 4);
                tokio::spawn(async move { app.call_tool(&inv, "platform", r#"{"op":"secret","key":"K"}"#).await })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let during = rss_bytes();
        holding.release.add_permits(count);
        for h in handles {
            h.await.unwrap().unwrap();
        }
        let per = (during.saturating_sub(before)) as f64 / count as f64;
        println!(
            "memory: {count} instances held mid-call add {:.1} MiB resident = {:.0} KiB per instance (probe, 64 MiB cap)",
            (during - before) as f64 / (1 << 20) as f64,
            per / 1024.0
        );
    });
}

fn main() {
    if let Some(k) = env_number("ATRIUM_BENCH_THROUGHPUT_RUNS") {
        let runtime = Runtime::new(config()).unwrap();
        let inv = Invocation::new("tenant-bench", Arc::new(MemoryPlatform::default()));
        let (app, lean) = (probe(&runtime), echo(&runtime));
        for _ in 0..k {
            throughput(&app, &inv, "probe");
            throughput(&lean, &inv, "echo, without_http");
        }
        return;
    }
    if let Some(n) = env_number("ATRIUM_BENCH_INSTRUCTIONS") {
        counted_calls(n);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    let runtime = Runtime::new(config()).unwrap();
    let app = probe(&runtime);
    let inv = Invocation::new("tenant-bench", Arc::new(MemoryPlatform::default()));
    let lean = echo(&runtime);
    percentiles(&app, &inv, "probe");
    percentiles(&lean, &inv, "echo, without_http");
    breakdown(&runtime, &inv);
    throughput(&app, &inv, "probe");
    throughput(&lean, &inv, "echo, without_http");
    memory_per_instance(&runtime);
}

fn env_number(name: &str) -> Option<usize> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

// Instruction counts (`ATRIUM_BENCH_INSTRUCTIONS=N`): N calls of each kind, each kind in a
// function of its own, for callgrind, whose counts do not depend on the machine's load or on
// where the code lies in memory (docs/benchmarks.md, "Before and after in one sitting"):
//
//   ATRIUM_BENCH_POOL=2 ATRIUM_BENCH_INSTRUCTIONS=300 valgrind --tool=callgrind <bench executable>
//   callgrind_annotate --inclusive=yes --threshold=100 callgrind.out.* | grep counted_

#[inline(never)]
fn counted_echo(app: &App, inv: &Invocation, tokio: &tokio::runtime::Runtime, n: usize) {
    for _ in 0..n {
        tokio.block_on(app.call_tool(inv, "echo", "{}")).unwrap();
    }
}

#[inline(never)]
fn counted_probe(app: &App, inv: &Invocation, tokio: &tokio::runtime::Runtime, n: usize) {
    for _ in 0..n {
        tokio.block_on(app.call_tool(inv, "echo", "{}")).unwrap();
    }
}

#[inline(never)]
fn counted_health(app: &App, inv: &Invocation, tokio: &tokio::runtime::Runtime, n: usize) {
    for _ in 0..n {
        tokio.block_on(app.health(inv)).unwrap();
    }
}

fn counted_calls(n: usize) {
    let runtime = Runtime::new(config()).unwrap();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let inv = Invocation::new("tenant-bench", Arc::new(MemoryPlatform::default()));
    let lean = echo(&runtime);
    let app = probe(&runtime);
    let minimal = load(
        &runtime,
        atrium_test_artifacts::MINIMAL,
        atrium_test_artifacts::MINIMAL_MANIFEST,
    );
    // The first calls fill the caches and the pool's slots.
    for _ in 0..50 {
        tokio.block_on(lean.call_tool(&inv, "echo", "{}")).unwrap();
        tokio.block_on(app.call_tool(&inv, "echo", "{}")).unwrap();
        tokio.block_on(minimal.health(&inv)).unwrap();
    }
    counted_echo(&lean, &inv, &tokio, n);
    counted_probe(&app, &inv, &tokio, n);
    counted_health(&minimal, &inv, &tokio, n);
}

//! Retrieval benchmarks with the local embedder: ingestion throughput (chunks per second),
//! hybrid query latency at 10k and 100k chunks (p50, p99), index build time, memory and disk.
//!
//! `cargo bench -p atrium-retrieval --bench retrieval` runs the criterion group (a hybrid query
//! at 10k chunks), then prints the figures criterion does not give. `ATRIUM_BENCH_CHUNKS`
//! (default `10000,100000`) sets the collection sizes; `ATRIUM_BENCH_EMBEDDER=semantic` uses
//! the built-in semantic embedder (`all-minilm-l6-v2`) instead of the lexical one.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use atrium_store::TenantKey;
use std::time::{Duration, Instant};

use atrium_inference::embed::{Embedders, semantic};
use atrium_retrieval::{Retrieval, RetrievalConfig};
use atrium_store::Store;
use criterion::Criterion;

/// A deterministic vocabulary of 4,000 made-up words.
fn vocabulary() -> Vec<String> {
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "ren", "to", "sa", "vel", "dor", "qui", "ba", "ne", "ust", "pra", "lim",
        "zo", "her", "an", "tis", "gro", "ve",
    ];
    let mut words = Vec::new();
    for a in SYLLABLES {
        for b in SYLLABLES {
            for c in ["", "n", "s", "ter", "ly", "ment", "ing", "al", "er", "ic"] {
                words.push(format!("{a}{b}{c}"));
            }
        }
    }
    words
}

/// A pseudo-random generator (xorshift), so every run writes the same corpus.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as usize
    }
}

/// A document of about `chunks` chunks: sentences of 8 to 16 words, Zipf-like word choice.
fn document(words: &[String], rng: &mut Rng, chunks: usize) -> String {
    let mut text = String::new();
    // Chunks of up to 1,000 characters with 150 shared advance about 600 characters each.
    while text.len() < chunks * 600 {
        let n = 8 + rng.next() % 9;
        for i in 0..n {
            // Skewed towards the first words, as natural text is.
            let r = rng.next() % words.len();
            let w = &words[(r * r) / words.len()];
            if i == 0 {
                let mut c = w.chars();
                if let Some(f) = c.next() {
                    text.extend(f.to_uppercase());
                    text.push_str(c.as_str());
                }
            } else {
                text.push(' ');
                text.push_str(w);
            }
        }
        text.push_str(". ");
        if rng.next().is_multiple_of(6) {
            text.push_str("\n\n");
        }
    }
    text
}

fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            / 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn disk(path: &std::path::Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            let p = e.path();
            total += if p.is_dir() {
                disk(&p)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            };
        }
    }
    total
}

struct Setup {
    _dir: tempfile::TempDir,
    retrieval: Retrieval,
    org: String,
    chunks: i64,
}

/// The lexical embedder, or the semantic one with `ATRIUM_BENCH_EMBEDDER=semantic`.
fn embedders() -> Embedders {
    if std::env::var("ATRIUM_BENCH_EMBEDDER").as_deref() != Ok("semantic") {
        return Embedders::default();
    }
    let dir = semantic::default_dir(&|name: &str| std::env::var(name).ok())
        .expect("the build step fetched the semantic model");
    Embedders::new(vec![std::sync::Arc::new(
        semantic::SemanticEmbedder::load(&dir).unwrap(),
    )])
}

/// A collection of about `target` chunks; prints the ingestion figures.
async fn build(target: i64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path()).await.unwrap();
    let org = store.create_key("bench", "k").await.unwrap().org_id;
    let embedders = embedders();
    let model = embedders.default_embedder().model().to_owned();
    let retrieval = Retrieval::open(
        store.clone(),
        embedders,
        // The host's defaults, or what ATRIUM_RAG_* in the environment say.
        RetrievalConfig::from_env(dir.path(), &std::env::vars().collect::<Vec<_>>()).unwrap(),
    )
    .await
    .unwrap();
    retrieval
        .create_collection(&TenantKey::new(&org, "t"), "corpus")
        .await
        .unwrap();
    let words = vocabulary();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    // Documents of about 50 chunks, written by 4 concurrent writers.
    let docs: Vec<String> = (0..(target / 50).max(1))
        .map(|_| document(&words, &mut rng, 50))
        .collect();
    let started = Instant::now();
    let mut chunks = 0;
    let titles: Vec<String> = (0..docs.len()).map(|i| format!("Document {i}")).collect();
    let tenant = TenantKey::new(&org, "t");
    for (batch, names) in docs.chunks(4).zip(titles.chunks(4)) {
        let results = futures::future::join_all(batch.iter().zip(names).map(|(text, title)| {
            retrieval.add_document(&tenant, "corpus", title, text.clone(), "text")
        }))
        .await;
        for r in results {
            chunks += r.unwrap().document.chunks;
        }
    }
    let took = started.elapsed();
    println!(
        "ingest {chunks} chunks in {} documents: {:.2} s, {:.0} chunks/s (split, {} embedding, LanceDB append, 4 writers)",
        docs.len(),
        took.as_secs_f64(),
        chunks as f64 / took.as_secs_f64(),
        model
    );
    let (rss, peak) = memory();
    println!("after ingesting: RSS {rss} MiB, peak {peak} MiB");
    let started = Instant::now();
    let report = retrieval.upkeep_once().await.unwrap();
    println!(
        "upkeep (vector index: {}, compaction, index optimisation): {:.2} s",
        report.vector_indexes,
        started.elapsed().as_secs_f64()
    );
    let (rss, peak) = memory();
    println!(
        "after {chunks} chunks: RSS {rss} MiB, peak {peak} MiB, on disk {} MiB",
        disk(dir.path()) >> 20
    );
    Setup {
        _dir: dir,
        retrieval,
        org,
        chunks,
    }
}

fn queries(n: usize) -> Vec<String> {
    let words = vocabulary();
    let mut rng = Rng(42);
    (0..n)
        .map(|_| {
            let k = 2 + rng.next() % 4;
            (0..k)
                .map(|_| words[rng.next() % 800].clone())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

async fn latency(setup: &Setup) {
    let qs = queries(200);
    for q in qs.iter().take(20) {
        setup
            .retrieval
            .query(&TenantKey::new(&setup.org, "t"), "corpus", q, 5)
            .await
            .unwrap();
    }
    let mut times = Vec::new();
    for q in qs.iter().cycle().take(1000) {
        let started = Instant::now();
        let found = setup
            .retrieval
            .query(&TenantKey::new(&setup.org, "t"), "corpus", q, 5)
            .await
            .unwrap();
        times.push(started.elapsed());
        assert!(!found.matches.is_empty());
    }
    times.sort();
    let at = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    println!(
        "hybrid query, top 5, {} chunks: p50 {:.2} ms, p99 {:.2} ms (1000 queries, 200 distinct)",
        setup.chunks,
        at(0.50).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3
    );
    let (rss, peak) = memory();
    println!("after the queries: RSS {rss} MiB, peak {peak} MiB");
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let sizes: Vec<i64> = std::env::var("ATRIUM_BENCH_CHUNKS")
        .unwrap_or_else(|_| "10000,100000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    for (n, size) in sizes.iter().enumerate() {
        let setup = runtime.block_on(build(*size));
        if n == 0 {
            let mut criterion = Criterion::default()
                .configure_from_args()
                .measurement_time(Duration::from_secs(5));
            let qs = queries(50);
            let mut i = 0;
            criterion.bench_function(
                &format!("hybrid query, top 5, {} chunks", setup.chunks),
                |b| {
                    b.to_async(&runtime).iter(|| {
                        i = (i + 1) % qs.len();
                        let q = qs[i].clone();
                        let s = &setup;
                        async move {
                            s.retrieval
                                .query(&TenantKey::new(&s.org, "t"), "corpus", &q, 5)
                                .await
                                .unwrap()
                        }
                    });
                },
            );
        }
        runtime.block_on(latency(&setup));
    }
}

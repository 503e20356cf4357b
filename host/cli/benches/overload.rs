//! Overload, measured from outside: `atrium serve` runs as its own process (SQLite in a
//! temporary directory, the Mistral adapter pointed at a fake OpenAI-compatible upstream in
//! this process) and this load tool sends it chat completions open-loop, at rising rates past
//! what the host can serve, to show what a client meets there: an answer, or a 429 or 503 at
//! once with `Retry-After`, and never a queue that grows until clients time out.
//!
//! `cargo bench --workspace --profile dev --bench overload` runs it against the main job's
//! build (the case: the dev profile, where the host's capacity is lowest);
//! `cargo bench -p atrium-cli --bench overload` against the release build. Two scenarios, each
//! rate for `ATRIUM_BENCH_SECONDS` (default 10):
//!
//! 1. **one key**: every request with one organization key for one tenant, so the per-key and
//!    per-tenant rate limits (default 1,000 a second, bursts of 2,000) answer 429 past them;
//! 2. **many keys**: 32 keys, each for a tenant of its own, taking turns, so that no rate limit
//!    binds and the host's own capacity does: past it, 503 `overloaded`.
//!
//! `ATRIUM_BENCH_RATES` (default `500,1000,2000,4000`) are the rates, `ATRIUM_BENCH_UPSTREAM_MS`
//! (default 0) the fake upstream's answer time (it runs on two threads of its own), and
//! `ATRIUM_BENCH_ENDPOINT=embeddings` sends embeddings by the built-in lexical embedder instead
//! of chat completions: the host's own work, with no upstream in the loop.
//! `ATRIUM_BENCH_HOST_NICE` (default 0) runs the host at that scheduling priority, below the
//! tool's, so that the tool, which stands for clients elsewhere, is not the one starved of the
//! cores. `ATRIUM_BENCH_HOST_CPUS` (a `taskset` list, say `0`) runs the host on those cores only
//! and moves the tool to the others, so that neither takes the other's core: the host's
//! capacity is then that of its cores, and the tool sends and reads on time. Latency counts from the moment a request was due (the generator's lateness included:
//! a host that falls behind cannot hide it) and from the moment it was sent. A request the
//! client gives up on after 30 s counts as a timeout.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs
)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;
use support::HostProcess;

const KEYS: usize = 32;

/// The fake upstream: OpenAI's chat completion, answered after `delay`, on a thread and
/// runtime of its own. Returns its base URL.
fn upstream(delay: Duration) -> String {
    let llm = atrium_fake_llm::FakeLlm::start_in_thread();
    let mistral = llm.upstream("mistral");
    // Counted, not kept: a run sends hundreds of thousands.
    mistral.keep_requests(false);
    if !delay.is_zero() {
        mistral.delay(delay);
    }
    format!("{}/v1", llm.base_url("mistral"))
}

/// What one request met.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Outcome {
    Answered,
    RateLimited,
    Overloaded,
    OtherStatus(u16),
    TimedOut,
    Failed,
}

struct Sample {
    outcome: Outcome,
    retry_after: bool,
    from_due: Duration,
    from_send: Duration,
}

/// Sends `rate` requests a second for `seconds`, open-loop, taking the keys in turn.
/// What the load asks for.
#[derive(Clone, Copy, Debug)]
enum Endpoint {
    /// A chat completion, answered by the fake upstream.
    Chat,
    /// An embedding by the built-in lexical embedder: the host's own work, no upstream.
    Embeddings,
}

async fn load(
    base: &str,
    endpoint: Endpoint,
    keys: &[(String, String)],
    rate: u64,
    seconds: u64,
) -> Vec<Sample> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(1024)
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let (url, body) = match endpoint {
        Endpoint::Chat => (
            format!("{base}/v1/chat/completions"),
            json!({"provider": "mistral", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        Endpoint::Embeddings => (
            format!("{base}/v1/embeddings"),
            json!({"model": "atrium-local-lexical", "input": "an invoice for the quarterly rent of the office"}),
        ),
    };
    let total = rate * seconds;
    let interval = Duration::from_secs(1) / u32::try_from(rate).unwrap();
    let start = Instant::now();
    let mut handles = Vec::with_capacity(usize::try_from(total).unwrap());
    for i in 0..total {
        let due = start + interval * u32::try_from(i).unwrap();
        tokio::time::sleep_until(due.into()).await;
        let (key, tenant) = keys[usize::try_from(i).unwrap() % keys.len()].clone();
        let (client, url, body) = (client.clone(), url.clone(), body.clone());
        handles.push(tokio::spawn(async move {
            let sent = Instant::now();
            let response = client
                .post(url)
                .bearer_auth(key)
                .header("x-service-tenant", tenant)
                .json(&body)
                .send()
                .await;
            let (outcome, retry_after) = match response {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let retry_after = response.headers().contains_key("retry-after");
                    let body = response.bytes().await.unwrap_or_default();
                    // Only an error's body is read: an answer's is left unparsed, to keep the
                    // generator's share of the two cores small.
                    let code = (status != 200)
                        .then(|| serde_json::from_slice::<Value>(&body).ok())
                        .flatten()
                        .and_then(|v| v["error"]["code"].as_str().map(str::to_owned));
                    let outcome = match (status, code.as_deref()) {
                        (200, _) => Outcome::Answered,
                        (429, Some("rate_limit_exceeded")) => Outcome::RateLimited,
                        (503, Some("overloaded")) => Outcome::Overloaded,
                        (other, _) => Outcome::OtherStatus(other),
                    };
                    (outcome, retry_after)
                }
                Err(e) if e.is_timeout() => (Outcome::TimedOut, false),
                Err(_) => (Outcome::Failed, false),
            };
            Sample {
                outcome,
                retry_after,
                from_due: due.elapsed(),
                from_send: sent.elapsed(),
            }
        }));
    }
    support::join_all(handles).await
}

fn quantiles(mut latencies: Vec<Duration>) -> String {
    latencies.sort();
    let at = |q: f64| support::quantile_ms(&latencies, q);
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        at(0.5),
        at(0.99),
        at(1.0)
    )
}

fn report(label: &str, samples: &[Sample]) {
    println!("{label}: {} requests", samples.len());
    let mut outcomes: Vec<Outcome> = samples.iter().map(|s| s.outcome).collect();
    outcomes.sort();
    outcomes.dedup();
    for outcome in outcomes {
        let of: Vec<&Sample> = samples.iter().filter(|s| s.outcome == outcome).collect();
        let with_retry = of.iter().filter(|s| s.retry_after).count();
        println!(
            "  {outcome:?}: {} ({:.1}%), from sending {}, from due {}{}",
            of.len(),
            100.0 * of.len() as f64 / samples.len() as f64,
            quantiles(of.iter().map(|s| s.from_send).collect()),
            quantiles(of.iter().map(|s| s.from_due).collect()),
            if matches!(outcome, Outcome::RateLimited | Outcome::Overloaded) {
                format!(", Retry-After on {with_retry}")
            } else {
                String::new()
            }
        );
    }
    println!(
        "  all: from sending {}",
        quantiles(samples.iter().map(|s| s.from_send).collect())
    );
}

fn main() {
    let seconds = support::env_number::<u64>("ATRIUM_BENCH_SECONDS", 10);
    let upstream_ms = support::env_number::<u64>("ATRIUM_BENCH_UPSTREAM_MS", 0);
    let rates: Vec<u64> = std::env::var("ATRIUM_BENCH_RATES")
        .unwrap_or_else(|_| "500,1000,2000,4000".into())
        .split(',')
        .map(|r| {
            r.trim()
                .parse()
                .expect("ATRIUM_BENCH_RATES: a list of numbers")
        })
        .collect();
    let endpoint = match std::env::var("ATRIUM_BENCH_ENDPOINT").as_deref() {
        Ok("embeddings") => Endpoint::Embeddings,
        Ok("chat") | Err(_) => Endpoint::Chat,
        Ok(other) => panic!("ATRIUM_BENCH_ENDPOINT: `chat` or `embeddings`, not `{other}`"),
    };
    let placement = support::Placement::from_env();
    let base = upstream(Duration::from_millis(upstream_ms));
    // The generator's own runtime: two workers, as many as the machine has cores.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let data = tempfile::tempdir().unwrap();
        let store = atrium_store::Store::open_sqlite(data.path()).await.unwrap();
        let mut keys = Vec::new();
        for k in 0..KEYS {
            let key = store
                .create_key("bench-org", &format!("key-{k}"))
                .await
                .unwrap();
            keys.push((key.secret, format!("tenant-{k}")));
        }
        drop(store);
        let host = HostProcess::start(
            data.path(),
            &[
                ("ATRIUM_MISTRAL_API_KEY", "bench"),
                ("ATRIUM_MISTRAL_BASE_URL", base.as_str()),
            ],
            &placement,
        )
        .await;
        // Warm the connections and the host's remembered keys.
        let warm = load(&host.base, endpoint, &keys, 200, 1).await;
        assert!(
            warm.iter().all(|s| s.outcome == Outcome::Answered),
            "the warm-up was not answered; see {}",
            data.path().join("host.log").display()
        );
        println!(
            "atrium serve ({} build, {}), fake upstream answering in {upstream_ms} ms, {seconds} s per rate",
            if cfg!(debug_assertions) { "dev" } else { "release" },
            placement.describe()
        );
        for (scenario, keys) in [("one key", &keys[..1]), ("many keys", &keys[..])] {
            for &rate in &rates {
                let samples = load(&host.base, endpoint, keys, rate, seconds).await;
                report(&format!("{endpoint:?}, {scenario}, {rate}/s"), &samples);
                // Let the host drain before the next step.
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
        }
        println!(
            "host peak RSS: {:.1} MiB",
            host.rss().1 as f64 / 1024.0
        );
        host.stop();
    });
}

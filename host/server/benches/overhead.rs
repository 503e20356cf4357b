//! The gateway's own overhead: latency of a chat completion through the host minus the latency
//! of the same request sent straight to the (fake, loopback) upstream, at a fixed request rate.
//!
//! `cargo bench -p atrium-server --bench overhead` (release). It starts an OpenAI-compatible
//! fake upstream and the host (SQLite store in a temporary directory, metering every call) on
//! loopback, then sends requests open-loop at 500 per second for 10 seconds to each, and prints
//! p50, p99 and max for both and the difference.
#![allow(clippy::expect_used, clippy::unwrap_used, missing_docs)]

use atrium_store::TenantKey;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const RATE: u64 = 1000;
const SECONDS: u64 = 10;

async fn load(
    client: &reqwest::Client,
    url: &str,
    key: Option<&str>,
    body: &Value,
) -> Vec<Duration> {
    let total = RATE * SECONDS;
    let interval = Duration::from_micros(1_000_000 / RATE);
    let start = Instant::now();
    let mut handles = Vec::with_capacity(usize::try_from(total).unwrap());
    for i in 0..total {
        let due = start + interval * u32::try_from(i).unwrap();
        tokio::time::sleep_until(due.into()).await;
        let (client, url, body) = (client.clone(), url.to_owned(), body.clone());
        let key = key.map(str::to_owned);
        handles.push(tokio::spawn(async move {
            let sent = Instant::now();
            let mut request = client.post(url).json(&body);
            if let Some(key) = key {
                request = request.bearer_auth(key).header("x-service-tenant", "bench");
            }
            let response = request.send().await.unwrap();
            assert!(response.status().is_success(), "{}", response.status());
            let _ = response.bytes().await.unwrap();
            sent.elapsed()
        }));
    }
    let mut latencies = Vec::with_capacity(handles.len());
    for h in handles {
        latencies.push(h.await.unwrap());
    }
    latencies.sort();
    latencies
}

fn at(latencies: &[Duration], q: f64) -> f64 {
    latencies[((latencies.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // The upstream answers at once; its requests are counted, not kept.
    let fake = atrium_fake_llm::FakeLlm::start().await;
    fake.upstream("mistral").keep_requests(false);

    let dir = tempfile::tempdir().unwrap();
    let store = atrium_store::Store::open_sqlite(dir.path()).await.unwrap();
    let key = store.create_key("bench", "bench").await.unwrap();
    let base = format!("{}/v1", fake.base_url("mistral"));
    let gateway = atrium_inference::Gateway::from_env(
        atrium_inference::Catalog::builtin(),
        |name| match name {
            "ATRIUM_MISTRAL_BASE_URL" => Some(base.clone()),
            "ATRIUM_MISTRAL_API_KEY" => Some("k".into()),
            _ => None,
        },
    );
    let host_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host_addr = host_listener.local_addr().unwrap();
    let state = atrium_server::HostState::new(store.clone(), gateway);
    let metering = state.metering.clone();
    tokio::spawn(atrium_server::serve(
        host_listener,
        state,
        std::future::pending(),
    ));

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let direct_body =
        json!({"model": "mistral-small-latest", "messages": [{"role": "user", "content": "hi"}]});
    let host_body = json!({"provider": "mistral", "messages": [{"role": "user", "content": "hi"}]});
    // Warm both paths (connections, the SQLite page cache).
    for _ in 0..200 {
        client
            .post(format!("{base}/chat/completions"))
            .json(&direct_body)
            .send()
            .await
            .unwrap();
        client
            .post(format!("http://{host_addr}/v1/chat/completions"))
            .bearer_auth(&key.secret)
            .json(&host_body)
            .send()
            .await
            .unwrap();
    }
    let direct = load(
        &client,
        &format!("{base}/chat/completions"),
        None,
        &direct_body,
    )
    .await;
    let through = load(
        &client,
        &format!("http://{host_addr}/v1/chat/completions"),
        Some(&key.secret),
        &host_body,
    )
    .await;
    println!(
        "{} requests each, open loop at {RATE}/s over {SECONDS} s",
        direct.len()
    );
    for (name, l) in [
        ("direct to the upstream", &direct),
        ("through the host", &through),
    ] {
        println!(
            "{name:>24}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            at(l, 0.5),
            at(l, 0.99),
            at(l, 1.0)
        );
    }
    println!(
        "{:>24}: p50 {:.3} ms, p99 {:.3} ms",
        "added by the host",
        at(&through, 0.5) - at(&direct, 0.5),
        at(&through, 0.99) - at(&direct, 0.99)
    );
    metering
        .flush()
        .await
        .expect("the usage records are stored");
    let usage = store
        .tenant_usage(&TenantKey::new(&key.org_id, "bench"))
        .await
        .unwrap()
        .unwrap();
    println!(
        "metered calls: {} (every request through the host)",
        usage.calls
    );
}

//! The platform under load, measured from outside: `atrium serve` runs as its own process (a
//! SQLite store in a temporary directory) and this load tool talks to it over HTTP.
//!
//! `cargo bench -p atrium-cli --bench platform` (release). Setup: 10 apps (the `probe` test
//! component under ten slugs; five of them with a second version), 1,000 tenants with an admin
//! and a user token each, and every tenant installing every app (10,000 installs over 15
//! versions, half of each two-version app's installs on each version). Then the host is
//! restarted, so that what it holds comes from the database alone, and:
//!
//! 1. idle: its resident memory (`VmRSS`) after 10 seconds without a request;
//! 2. tool calls: `echo` through `POST /api/apps/{app}/tools/echo` with a user token, open-loop
//!    at 1,000 requests per second for 15 seconds, over random installs: p50, p90, p99, max;
//! 3. mixed load: 1,000 requests per second for 20 seconds over random installs, 50% `echo`,
//!    20% `records.put`, 10% `records.query` (through the `platform` tool), 20% a custom route
//!    (`GET /api/apps/{app}/routes/echo/{word}`): latency per kind and the peak resident memory;
//! 4. idle again, 10 seconds later.
//!
//! `ATRIUM_BENCH_TENANTS` (default 1,000) and `ATRIUM_BENCH_RATE` (default 1,000) change the
//! scale, and `ATRIUM_BENCH_HOST_NICE` and `ATRIUM_BENCH_HOST_CPUS` where the host runs beside
//! this tool (as in the overload bench). Each request's latency is from the moment it was due,
//! so a slow host cannot hide its queueing (no coordinated omission).
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

#[path = "support/publish.rs"]
// Shared by the load tools; this one uses part of it.
#[allow(dead_code)]
mod publish;
mod support;
use publish::{LOG, expect};
use support::HostProcess;

const APPS: usize = 10;
const TWO_VERSIONS: usize = 5;

/// A small deterministic generator, so that runs pick the same installs.
struct Pick(u64);

impl Pick {
    fn next(&mut self, below: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        usize::try_from(self.0 % below as u64).unwrap()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Echo,
    Put,
    Query,
    Route,
}

struct Fixture {
    apps: Vec<String>,
    /// Per tenant: (admin token, user token).
    tenants: Vec<(String, String)>,
}

async fn setup(host: &HostProcess, data: &Path, tenants: usize) -> Fixture {
    let client = reqwest::Client::new();
    let base = &host.base;
    let (dev, org) = publish::developer_and_org(data).await;
    let mut apps = Vec::new();
    for i in 0..APPS {
        let slug = format!("bench-app-{i}");
        let versions: &[&str] = if i < TWO_VERSIONS {
            &["1.0.0", "1.1.0"]
        } else {
            &["1.0.0"]
        };
        for version in versions {
            publish::publish(&client, base, &dev, &slug, version).await;
        }
        apps.push(slug);
    }

    let started = Instant::now();
    let tokens: Vec<(String, String)> = futures::stream::iter(0..tenants)
        .map(|t| {
            let (client, base, key) = (client.clone(), base.clone(), org.secret.clone());
            async move {
                let mut pair = Vec::new();
                for role in ["admin", "user"] {
                    let r = client
                        .post(format!("{base}/api/tenants/tenant-{t}/tokens"))
                        .bearer_auth(&key)
                        .json(&json!({"role": role}))
                        .send()
                        .await
                        .unwrap();
                    pair.push(
                        expect(r, "token").await["token"]
                            .as_str()
                            .unwrap()
                            .to_owned(),
                    );
                }
                (pair[0].clone(), pair[1].clone())
            }
        })
        .buffered(8)
        .collect()
        .await;
    println!(
        "setup: {tenants} tenants, 2 tokens each, in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    let jobs: Vec<(usize, usize)> = (0..tenants)
        .flat_map(|t| (0..APPS).map(move |a| (t, a)))
        .collect();
    let activated = futures::stream::iter(jobs)
        .map(|(t, a)| {
            let (client, base) = (client.clone(), base.clone());
            let admin = tokens[t].0.clone();
            let app = apps[a].clone();
            async move {
                let mut body = json!({"granted_scopes": ["tasks.read", "tasks.write"]});
                if a < TWO_VERSIONS && t % 2 == 0 {
                    body["version"] = json!("1.0.0");
                }
                let r = client
                    .post(format!("{base}/api/installs/{app}/activate"))
                    .bearer_auth(admin)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                expect(r, "activate").await;
            }
        })
        .buffer_unordered(8)
        .count()
        .await;
    println!(
        "setup: {activated} installs activated in {:.1} s ({:.0} per second)",
        started.elapsed().as_secs_f64(),
        activated as f64 / started.elapsed().as_secs_f64()
    );
    Fixture {
        apps,
        tenants: tokens,
    }
}

/// One request's kind and latencies: from the moment it was due, and from the moment the
/// generator sent it. The two differ by the generator's own lateness: Tokio's timer wakes it
/// at a millisecond's granularity, so a request due at any point within a millisecond leaves
/// at the next tick; with the host's queueing included in both (requests are sent on time,
/// whatever the host does), the second is the host's latency.
struct Sample {
    kind: Kind,
    from_due: Duration,
    from_send: Duration,
}

/// Sends `rate` requests per second for `seconds`, open-loop, each a random install and a
/// kind drawn from `mix`.
async fn load(
    base: &str,
    fixture: &Arc<Fixture>,
    rate: usize,
    seconds: u64,
    mix: &[(Kind, usize)],
    mut on_tick: impl FnMut(),
) -> Vec<Sample> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()
        .unwrap();
    let total = rate * usize::try_from(seconds).unwrap();
    let interval = Duration::from_secs(1) / u32::try_from(rate).unwrap();
    let weight: usize = mix.iter().map(|(_, w)| w).sum();
    let mut pick = Pick(0x9e37_79b9_7f4a_7c15);
    let start = Instant::now();
    let mut handles = Vec::with_capacity(total);
    for i in 0..total {
        let due = start + interval * u32::try_from(i).unwrap();
        tokio::time::sleep_until(due.into()).await;
        if i % rate.max(1) == 0 {
            on_tick();
        }
        let mut w = pick.next(weight);
        let kind = mix
            .iter()
            .find(|(_, share)| {
                if w < *share {
                    true
                } else {
                    w -= share;
                    false
                }
            })
            .map_or(Kind::Echo, |(k, _)| *k);
        let tenant = pick.next(fixture.tenants.len());
        let app = pick.next(fixture.apps.len());
        let (client, fixture, base) = (client.clone(), fixture.clone(), base.to_owned());
        handles.push(tokio::spawn(async move {
            let sent = Instant::now();
            let user = &fixture.tenants[tenant].1;
            let app = &fixture.apps[app];
            let tool = |args: Value| {
                client
                    .post(format!("{base}/api/apps/{app}/tools/{}", args["__tool"].as_str().unwrap()))
                    .bearer_auth(user)
                    .json(&args["args"])
            };
            let request = match kind {
                Kind::Echo => tool(json!({"__tool": "echo", "args": {"word": "hello", "n": i}})),
                Kind::Put => tool(json!({"__tool": "platform", "args": {"op": "tool", "name": "records.put", "args": {"record_type": "note", "record": {"n": i, "status": "open"}}}})),
                Kind::Query => tool(json!({"__tool": "platform", "args": {"op": "tool", "name": "records.query", "args": {"record_type": "note", "status": "open"}}})),
                Kind::Route => client
                    .get(format!("{base}/api/apps/{app}/routes/echo/w{i}"))
                    .bearer_auth(user),
            };
            let response = request.send().await.unwrap();
            let status = response.status();
            let body = response.bytes().await.unwrap();
            assert!(
                status.is_success(),
                "{kind:?}: {status} {}",
                String::from_utf8_lossy(&body)
            );
            Sample {
                kind,
                from_due: due.elapsed(),
                from_send: sent.elapsed(),
            }
        }));
    }
    support::join_all(handles).await
}

/// Reports the latencies from due and from send, and the generator's lateness.
fn report_both(label: &str, samples: &[Sample]) {
    let mut due: Vec<Duration> = samples.iter().map(|s| s.from_due).collect();
    let mut sent: Vec<Duration> = samples.iter().map(|s| s.from_send).collect();
    let mut late: Vec<Duration> = samples
        .iter()
        .map(|s| s.from_due.saturating_sub(s.from_send))
        .collect();
    report(&format!("{label} (due)"), &mut due);
    report(&format!("{label} (sent)"), &mut sent);
    report(&format!("{label} (generator late)"), &mut late);
}

fn report(label: &str, latencies: &mut [Duration]) {
    if latencies.is_empty() {
        return;
    }
    latencies.sort();
    let at = |q: f64| support::quantile_ms(latencies, q);
    println!(
        "{label:<44} n={:<6} p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms  max {:.3} ms",
        latencies.len(),
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0),
    );
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn main() {
    let tenants = support::env_number::<usize>("ATRIUM_BENCH_TENANTS", 1_000);
    let rate = support::env_number::<usize>("ATRIUM_BENCH_RATE", 1_000);
    // Before the runtime starts a thread: with host cores named, this process moves off them.
    let placement = support::Placement::from_env();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let data = tempfile::tempdir().unwrap();
        let _ = LOG.set(data.path().join("host.log"));
        let host = HostProcess::start(data.path(), &[], &placement).await;
        let (rss, _) = host.rss();
        println!(
            "atrium serve ({}); empty host: RSS {:.1} MiB",
            placement.describe(),
            mib(rss)
        );
        let fixture = Arc::new(setup(&host, data.path(), tenants).await);
        host.stop();

        let host = HostProcess::start(data.path(), &[], &placement).await;
        tokio::time::sleep(Duration::from_secs(10)).await;
        let (idle, _) = host.rss();
        println!(
            "idle, {} installs, restarted: RSS {:.1} MiB",
            tenants * APPS,
            mib(idle)
        );

        // The first calls after the restart find nothing in memory (each install's row and
        // each token read once); the next ones find most installs remembered.
        for phase in ["cold", "warm"] {
            let results = load(&host.base, &fixture, rate, 15, &[(Kind::Echo, 1)], || {}).await;
            report_both(&format!("tool call at {rate}/s, {phase}"), &results);
        }
        let (after, _) = host.rss();
        println!("after tool calls: RSS {:.1} MiB", mib(after));

        let mut peak = 0;
        let results = load(
            &host.base,
            &fixture,
            rate,
            20,
            &[
                (Kind::Echo, 50),
                (Kind::Put, 20),
                (Kind::Query, 10),
                (Kind::Route, 20),
            ],
            || peak = peak.max(host.rss().0),
        )
        .await;
        let (now, hwm) = host.rss();
        for kind in [Kind::Echo, Kind::Put, Kind::Query, Kind::Route] {
            let mut of: Vec<Duration> = results
                .iter()
                .filter(|s| s.kind == kind)
                .map(|s| s.from_send)
                .collect();
            report(&format!("mixed: {kind:?} (sent)"), &mut of);
        }
        report_both(&format!("mixed: all at {rate}/s"), &results);
        println!(
            "under mixed load: RSS peak sampled {:.1} MiB, at the end {:.1} MiB, high-water mark {:.1} MiB",
            mib(peak.max(now)),
            mib(now),
            mib(hwm)
        );
        tokio::time::sleep(Duration::from_secs(10)).await;
        let (rest, _) = host.rss();
        println!("idle again after 10 s: RSS {:.1} MiB", mib(rest));
        host.stop();
    });
}

//! The heartbeat scheduler measured on a running host: `atrium serve` runs as its own process
//! (SQLite in a temporary directory), ticking every second (`ATRIUM_HEARTBEAT_TICK_MS=1000`).
//!
//! `cargo bench --workspace --profile dev --bench heartbeats` (or the release profile). Setup: the probe component with
//! five heartbeats on its `lead` agent (`_internal_app_records`, every 30 days, so none comes
//! due by itself during the bench), installed for `ATRIUM_BENCH_TENANTS` tenants (default
//! 2,000): 10,000 active heartbeat rows. The host's first tick computes their next runs; the
//! bench waits for it. Then:
//!
//! 1. **tick, nothing due**: what a tick does when nothing is due, timed on the same database
//!    file from the bench process (`ATRIUM_BENCH_RUNS` times, default 200): the three queries
//!    of a tick (runs past their lost-after time, due rows, due visions).
//! 2. **RSS, nothing due**: the host's resident memory after 10 idle ticks, and before the
//!    installs (the host with its embedders, runtime and the one app, no heartbeat row).
//! 3. **1,000 due at once**: 1,000 rows (200 tenants' five) woken at once, as an event's
//!    `target_heartbeat` wakes them; the time until the host's ticks have claimed and run all
//!    of them (each an idle run: the pre-filter finds nothing, no model call), and a check
//!    that every woken row ran exactly once.
//!
//! `ATRIUM_BENCH_HOST_NICE` and `ATRIUM_BENCH_HOST_CPUS` place the host as in the other load
//! tools.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs
)]

use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

#[path = "support/publish.rs"]
#[allow(dead_code)]
mod publish;
#[allow(dead_code)]
mod support;
use publish::{LOG, report, timed};
use support::HostProcess;

const HEARTBEATS: usize = 5;
const WOKEN_TENANTS: usize = 200;

/// The probe with five heartbeats on `lead`.
fn manifest(slug: &str) -> String {
    let mut beats = String::from("    team: [helper]\n    heartbeats:\n");
    for i in 0..HEARTBEATS {
        beats.push_str(&format!(
            "      - {{slug: beat{i}, skill: _internal_app_records, tool: query, params: {{record_type: nothing}}, interval_minutes: 43200}}\n"
        ));
    }
    publish::manifest(slug, "1.0.0").replace("    team: [helper]\n", &beats)
}

fn main() {
    let tenants = support::env_number::<usize>("ATRIUM_BENCH_TENANTS", 2_000);
    let runs = support::env_number::<usize>("ATRIUM_BENCH_RUNS", 200);
    let placement = support::Placement::from_env();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let data = tempfile::tempdir().unwrap();
        let _ = LOG.set(data.path().join("host.log"));
        let host = HostProcess::start(
            data.path(),
            &[
                ("ATRIUM_HEARTBEAT_TICK_MS", "1000"),
                ("ATRIUM_KEY_RATE", "0"),
                ("ATRIUM_TENANT_RATE", "0"),
            ],
            &placement,
        )
        .await;
        let base = host.base.clone();
        let client = reqwest::Client::new();
        let (dev, org) = publish::developer_and_org(data.path()).await;
        let app = "bench-beats";
        publish::publish_manifest(&client, &base, &dev, app, "1.0.0", &manifest(app)).await;
        // The host's memory before any heartbeat row (the embedders, the runtime, one app).
        tokio::time::sleep(Duration::from_secs(3)).await;
        let (baseline, _) = host.rss();
        let started = Instant::now();
        let installs = futures::stream::iter(0..tenants)
            .map(|i| {
                let (client, base, org) = (client.clone(), base.clone(), org.secret.clone());
                async move {
                    let (_, token) = timed(
                        client
                            .post(format!("{base}/api/tenants/t{i}/tokens"))
                            .bearer_auth(&org)
                            .json(&json!({"role": "admin"})),
                        "token",
                    )
                    .await;
                    let admin = token["token"].as_str().unwrap().to_owned();
                    timed(
                        client
                            .post(format!("{base}/api/installs/{app}/activate"))
                            .bearer_auth(&admin)
                            .json(&json!({"granted_scopes": ["tasks.read", "tasks.write"]})),
                        "activate",
                    )
                    .await;
                }
            })
            .buffer_unordered(8)
            .collect::<Vec<()>>()
            .await;
        assert_eq!(installs.len(), tenants);
        let rows = tenants * HEARTBEATS;
        println!(
            "setup: {tenants} installs, {rows} heartbeat rows, in {:.1} s",
            started.elapsed().as_secs_f64()
        );

        // The bench reads the host's database file beside it.
        let store = atrium_store::Store::open_sqlite(data.path()).await.unwrap();
        let keys: Vec<atrium_store::InstallKey> = (0..tenants)
            .map(|i| atrium_store::InstallKey::new(&org.org_id, format!("t{i}"), app))
            .collect();
        // Wait for the host's first tick over them (every row gets its next run).
        let waited = Instant::now();
        loop {
            let far = jiff::Timestamp::now() + jiff::SignedDuration::from_millis(86_400_000);
            let unscheduled = store
                .due_heartbeats(far, 1)
                .await
                .unwrap()
                .iter()
                .filter(|d| d.row.next_run_at.is_none())
                .count();
            if unscheduled == 0 {
                break;
            }
            assert!(waited.elapsed() < Duration::from_secs(600), "the rows were never scheduled");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        println!(
            "first tick scheduled every row within {:.1} s",
            waited.elapsed().as_secs_f64()
        );

        // 1. A tick's own cost with nothing due.
        let mut samples = Vec::with_capacity(runs);
        let mut came_due = 0;
        for _ in 0..runs {
            let now = jiff::Timestamp::now();
            let t = Instant::now();
            let lost = now - jiff::SignedDuration::from_millis(1_200_000);
            let stale = store.stale_heartbeat_runs(lost, 100).await.unwrap();
            let due = store.due_heartbeats(now, 1_000).await.unwrap();
            let visions = store.due_visions(now, 100).await.unwrap();
            samples.push(t.elapsed());
            assert!(stale.is_empty() && visions.is_empty());
            // A row of the 30-day grid may come due meanwhile (a few in ten minutes).
            came_due += due.len();
        }
        report(&format!("tick, nothing due ({rows} rows)"), &mut samples);
        println!("(rows found due during the samples: {came_due})");

        // 2. The host's memory after ten idle ticks.
        tokio::time::sleep(Duration::from_secs(10)).await;
        let (rss, peak) = host.rss();
        println!(
            "host RSS, nothing due ({rows} rows): {:.1} MiB (peak {:.1} MiB); before the installs {:.1} MiB",
            rss as f64 / 1024.0,
            peak as f64 / 1024.0,
            baseline as f64 / 1024.0
        );

        // 3. 1,000 due at once: woken, drained by the host's ticks.
        let woken: Vec<_> = keys.iter().take(WOKEN_TENANTS).collect();
        let wake_started = Instant::now();
        for key in &woken {
            for i in 0..HEARTBEATS {
                store
                    .wake_heartbeat(key, "lead", &format!("beat{i}"), "bench/wake")
                    .await
                    .unwrap();
            }
        }
        let expected = woken.len() * HEARTBEATS;
        let woke_in = wake_started.elapsed();
        let drained = Instant::now();
        let mut ran;
        loop {
            ran = 0;
            let mut running = 0;
            for key in &woken {
                for run in store.heartbeat_runs(key, 100).await.unwrap() {
                    if run.trigger == "wake" {
                        if run.outcome == "running" {
                            running += 1;
                        } else {
                            assert_eq!(run.outcome, "idle", "{run:?}");
                            ran += 1;
                        }
                    }
                }
            }
            if ran == expected && running == 0 {
                break;
            }
            assert!(ran <= expected, "a woken row ran twice: {ran} runs");
            assert!(
                drained.elapsed() < Duration::from_secs(300),
                "only {ran} of {expected} ran"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "{expected} due at once (woken in {:.0} ms): all claimed and run once in {:.2} s after the wakes",
            woke_in.as_secs_f64() * 1000.0,
            drained.elapsed().as_secs_f64()
        );
        host.stop();
    });
}

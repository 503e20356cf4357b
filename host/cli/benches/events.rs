//! `events.emit` fan-out and `apps.fetch`, measured from outside: `atrium serve` runs as its
//! own process (SQLite in a temporary directory).
//!
//! `cargo bench -p atrium-cli --bench events` (release). Setup: the probe component as an
//! emitter (`bench-em`, which emits `entry_booked`) and as 100 subscribers (`bench-sub-<i>`,
//! whose `lead` agent subscribes to it with an `on_event` handler), all installed for one
//! tenant; activation proposes the wires, and the bench approves them as it goes. Then, each
//! `ATRIUM_BENCH_RUNS` times (default 200), one after the other:
//!
//! 1. **emit, 0 wires**: the emitter's `platform` tool emitting an event nobody is wired to,
//!    the time of the tool call itself;
//! 2. **emit to 1, 10, 100**: the same emit with that many active wires, answered when every
//!    subscriber's `on_event` (each in a fresh sandboxed instance) has answered:
//!    `dispatched` = the count. The fan-out's own time is the difference to (1).
//! 3. **route, direct** and **route, apps.fetch**: the subscriber's `GET /echo/{word}` route
//!    called by a tenant's user, and the same route called from the emitter's `platform` tool
//!    through `apps.fetch` (the `__route__` grant honoured, the route served through the same
//!    floor); **tool** the emitter's `echo` tool, the cost of the call that makes the fetch.
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

use serde_json::json;

// Shared by the load tools; this one uses part of each.
#[path = "support/publish.rs"]
#[allow(dead_code)]
mod publish;
#[allow(dead_code)]
mod support;
use publish::{LOG, report, timed};
use support::HostProcess;

const SUBSCRIBERS: usize = 100;

/// The probe as `slug`, emitting `entry_booked` and subscribing to `emitter`'s.
fn manifest(slug: &str, emitter: &str) -> String {
    publish::manifest(slug, "1.0.0")
        .replace("emits: [probe_event]", "emits: [probe_event, entry_booked]")
        .replace("emitter_app: ledger", &format!("emitter_app: {emitter}"))
}

fn main() {
    let runs = support::env_number::<usize>("ATRIUM_BENCH_RUNS", 200);
    let placement = support::Placement::from_env();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let data = tempfile::tempdir().unwrap();
        let _ = LOG.set(data.path().join("host.log"));
        let host = HostProcess::start(data.path(), &[], &placement).await;
        let base = host.base.clone();
        let client = reqwest::Client::new();
        let (dev, org) = publish::developer_and_org(data.path()).await;
        let emitter = "bench-em";
        let subs: Vec<String> = (0..SUBSCRIBERS).map(|i| format!("bench-sub-{i}")).collect();
        publish::publish_manifest(
            &client,
            &base,
            &dev,
            emitter,
            "1.0.0",
            &manifest(emitter, "nobody"),
        )
        .await;
        for sub in &subs {
            publish::publish_manifest(&client, &base, &dev, sub, "1.0.0", &manifest(sub, emitter))
                .await;
        }
        let (_, token) = timed(
            client
                .post(format!("{base}/api/tenants/shop/tokens"))
                .bearer_auth(&org.secret)
                .json(&json!({"role": "admin"})),
            "token",
        )
        .await;
        let admin = token["token"].as_str().unwrap().to_owned();
        for app in std::iter::once(emitter).chain(subs.iter().map(String::as_str)) {
            timed(
                client
                    .post(format!("{base}/api/installs/{app}/activate"))
                    .bearer_auth(&admin)
                    .json(&json!({"granted_scopes": ["tasks.read", "tasks.write"]})),
                "activate",
            )
            .await;
        }
        // The wires activation proposed, by subscriber.
        let mut wires: Vec<(String, String)> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url =
                format!("{base}/api/wires?emitter_app={emitter}&event_name=entry_booked&limit=200");
            if let Some(c) = &cursor {
                url.push_str(&format!("&cursor={c}"));
            }
            let (_, page) = timed(client.get(url).bearer_auth(&admin), "wires").await;
            for w in page["wires"].as_array().unwrap() {
                wires.push((
                    w["subscriber_app"].as_str().unwrap().to_owned(),
                    w["id"].as_str().unwrap().to_owned(),
                ));
            }
            match page["next_cursor"].as_str() {
                Some(c) => cursor = Some(c.to_owned()),
                None => break,
            }
        }
        assert_eq!(wires.len(), SUBSCRIBERS, "one wire per subscriber");
        println!(
            "atrium serve ({}): 1 emitter and {SUBSCRIBERS} subscribers installed for one tenant",
            placement.describe()
        );

        let tool = format!("{base}/api/apps/{emitter}/tools/platform");
        let emit = |name: &str| json!({"op": "emit", "name": name, "payload": {"n": 1}});
        let emit_samples = |name: &'static str, expected: usize| {
            let (client, tool, admin) = (client.clone(), tool.clone(), admin.clone());
            let body = emit(name);
            async move {
                let mut samples = Vec::with_capacity(runs);
                for _ in 0..runs {
                    let (t, answer) =
                        timed(client.post(&tool).bearer_auth(&admin).json(&body), "emit").await;
                    assert_eq!(
                        answer["result"]["ok"]["dispatched"].as_u64(),
                        Some(expected as u64),
                        "{answer}"
                    );
                    samples.push(t);
                }
                samples
            }
        };
        let baseline = report("emit, 0 wires", &mut emit_samples("probe_event", 0).await);
        let mut approved = 0;
        for n in [1usize, 10, 100] {
            for (_, id) in &wires[approved..n] {
                timed(
                    client
                        .post(format!("{base}/api/wires/{id}/approve"))
                        .bearer_auth(&admin),
                    "approve",
                )
                .await;
            }
            approved = n;
            let q = report(
                &format!("emit to {n}"),
                &mut emit_samples("entry_booked", n).await,
            );
            println!(
                "  fan-out to {n}: p50 {:.3} ms, p99 {:.3} ms above the tool call",
                q[0] - baseline[0],
                q[2] - baseline[2]
            );
        }

        // apps.fetch against a direct call of the same route.
        let callee = &subs[0];
        timed(
            client
                .post(format!("{base}/api/grants"))
                .bearer_auth(&admin)
                .json(&json!({"caller_app": emitter, "callee_app": callee, "allowed_agents": ["__route__"]})),
            "grant",
        )
        .await;
        timed(
            client
                .post(format!("{base}/api/grants/{emitter}/{callee}/approve"))
                .bearer_auth(&admin)
                .json(&json!({"allowed_agents": ["__route__"]})),
            "approve grant",
        )
        .await;
        let (mut direct, mut fetched, mut echo) = (Vec::new(), Vec::new(), Vec::new());
        let route = format!("{base}/api/apps/{callee}/routes/echo/hi");
        let fetch = json!({"op": "fetch_app", "app": callee, "path": "/echo/hi", "method": "GET"});
        let echo_url = format!("{base}/api/apps/{emitter}/tools/echo");
        for _ in 0..runs {
            let (t, _) = timed(client.get(&route).bearer_auth(&admin), "route").await;
            direct.push(t);
            let (t, body) = timed(client.post(&tool).bearer_auth(&admin).json(&fetch), "fetch").await;
            assert_eq!(body["result"]["ok"]["status"], 200, "{body}");
            fetched.push(t);
            let (t, _) = timed(
                client.post(&echo_url).bearer_auth(&admin).json(&json!({"n": 1})),
                "echo",
            )
            .await;
            echo.push(t);
        }
        let direct = report("route, direct", &mut direct);
        let fetched = report("route, apps.fetch", &mut fetched);
        let echo = report("tool", &mut echo);
        for (i, name) in ["p50", "p90", "p99"].iter().enumerate() {
            println!(
                "{name}: apps.fetch costs {:.3} ms above the tool call that makes it; the direct call {:.3} ms",
                fetched[i] - echo[i],
                direct[i]
            );
        }
        host.stop();
    });
}

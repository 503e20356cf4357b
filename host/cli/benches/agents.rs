//! The agent runner and the orchestrator, measured from outside: `atrium serve` runs as its
//! own process (SQLite in a temporary directory) with its Mistral adapter pointed at the fake
//! model upstream, which runs on a thread of this process and answers at once.
//!
//! `cargo bench -p atrium-cli --bench agents` (release). Setup: the probe component under ten
//! slugs, all installed for one tenant (20 agents), the tenant's `specialist` role on Mistral
//! (the fake) and its `orchestrator` role on a provider this host has no key for, so that
//! routing never waits for a model. Then, each `ATRIUM_BENCH_RUNS` times (default 300), one
//! after the other:
//!
//! 1. **upstream**: a chat completion sent straight to the fake, the time a model step costs
//!    before the host does anything;
//! 2. **1 step**: `agent.ask` of the `lead` agent through the probe's `platform` tool, the model
//!    answering at once (one model step);
//! 3. **11 steps**: the same, the model calling the trivial tool `echo` ten times before it
//!    answers (eleven model steps, ten tool calls in fresh sandboxed instances);
//! 4. **turn**: a conversation message routed by the orchestrator's fallback among the 20
//!    agents (every install's agents and workflows read, no model call) and answered in one
//!    model step, the three messages stored.
//!
//! A model step's cost above the upstream is `(11 steps − 1 step) / 10 − upstream`, at each
//! quantile: the runner's own work per step with a trivial tool (the tool call included). The
//! orchestrator's overhead is `turn − 1 step`: routing without the model call, and storing the
//! turn. `ATRIUM_BENCH_HOST_NICE` and `ATRIUM_BENCH_HOST_CPUS` place the host as in the other
//! load tools.
#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::cast_precision_loss,
    missing_docs
)]

use atrium_fake_llm::{FakeLlm, Reply};
use serde_json::json;

#[path = "support/publish.rs"]
mod publish;
// Shared by the load tools; this one uses part of it.
#[allow(dead_code)]
mod support;
use publish::{LOG, report, timed};
use support::HostProcess;

const APPS: usize = 10;

fn main() {
    let runs = support::env_number::<usize>("ATRIUM_BENCH_RUNS", 300);
    let placement = support::Placement::from_env();
    let fake = FakeLlm::start_in_thread();
    let model = fake.upstream("mistral");
    model.keep_requests(false);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let data = tempfile::tempdir().unwrap();
        let _ = LOG.set(data.path().join("host.log"));
        let mistral = format!("{}/v1", fake.base_url("mistral"));
        let env = [
            ("ATRIUM_MISTRAL_BASE_URL", mistral.as_str()),
            ("ATRIUM_MISTRAL_API_KEY", "bench"),
        ];
        let host = HostProcess::start(data.path(), &env, &placement).await;
        let base = host.base.clone();
        let client = reqwest::Client::new();
        let (dev, org) = publish::developer_and_org(data.path()).await;
        let apps: Vec<String> = (0..APPS).map(|i| format!("bench-agents-{i}")).collect();
        for app in &apps {
            publish::publish(&client, &base, &dev, app, "1.0.0").await;
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
        for app in &apps {
            timed(
                client
                    .post(format!("{base}/api/installs/{app}/activate"))
                    .bearer_auth(&admin)
                    .json(&json!({"granted_scopes": ["tasks.read", "tasks.write"]})),
                "activate",
            )
            .await;
        }
        timed(
            client
                .put(format!("{base}/api/llm-settings"))
                .bearer_auth(&admin)
                .json(&json!({
                    "roles": {"specialist": {"provider": "mistral"}, "orchestrator": {"provider": "openai"}},
                    "agent_limits": {"max_steps": 50},
                })),
            "llm-settings",
        )
        .await;
        println!(
            "atrium serve ({}): {APPS} apps installed for one tenant, {} agents",
            placement.describe(),
            APPS * 2
        );

        let upstream_url = format!("{mistral}/chat/completions");
        let ask = json!({"op": "ask", "agent": "lead", "prompt": "Go"});
        let tool = format!("{base}/api/apps/{}/tools/platform", apps[0]);
        let (_, conversation) = timed(
            client
                .post(format!("{base}/api/conversations"))
                .bearer_auth(&admin),
            "conversation",
        )
        .await;
        let turn_url = format!(
            "{base}/api/conversations/{}/messages",
            conversation["id"].as_str().unwrap()
        );
        let (mut upstream, mut one, mut eleven, mut turn) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let (t, _) = timed(
                client.post(&upstream_url).bearer_auth("bench").json(
                    &json!({"model": "mistral-small-latest", "messages": [{"role": "user", "content": "Go"}]}),
                ),
                "upstream",
            )
            .await;
            upstream.push(t);
            model.push(Reply::text("done"));
            let (t, body) = timed(client.post(&tool).bearer_auth(&admin).json(&ask), "ask").await;
            assert_eq!(body["result"]["ok"], "done", "{body}");
            one.push(t);
            for _ in 0..10 {
                model.push(Reply::tool_call("echo", json!({"n": 1})));
            }
            model.push(Reply::text("done"));
            let (t, body) = timed(client.post(&tool).bearer_auth(&admin).json(&ask), "ask").await;
            assert_eq!(body["result"]["ok"], "done", "{body}");
            eleven.push(t);
            model.push(Reply::text("done"));
            let (t, body) = timed(
                client
                    .post(&turn_url)
                    .bearer_auth(&admin)
                    .json(&json!({"content": "hello"})),
                "turn",
            )
            .await;
            assert_eq!(body["reply"]["content"], "done", "{body}");
            assert_eq!(body["routing"]["data"]["decided_by"], "fallback", "{body}");
            turn.push(t);
        }
        let upstream = report("upstream", &mut upstream);
        let one = report("1 step", &mut one);
        let eleven = report("11 steps", &mut eleven);
        let turn = report("turn", &mut turn);
        let names = ["p50", "p90", "p99"];
        for (i, name) in names.iter().enumerate() {
            let per_step = (eleven[i] - one[i]) / 10.0;
            println!(
                "{name}: a model step with a trivial tool {per_step:.3} ms, of which the upstream {:.3} ms: \
                 the runner's overhead {:.3} ms; routing and storing a turn {:.3} ms",
                upstream[i],
                per_step - upstream[i],
                turn[i] - one[i]
            );
        }
        host.stop();
    });
}

//! Heartbeat claims by three hosts on one database: each due run claimed and run once, memory
//! kept per tenant, and a host that dies mid-run leaving nothing stuck (its run marked lost
//! once, counted as a failure, the next run claimed by another host).

use atrium_platform::heartbeats::{HeartbeatsConfig, Scheduler};
use atrium_platform::sealing::SecretsKey;
use atrium_platform::serving::Serving;
use atrium_store::Store;
use serde_json::json;

use super::heartbeats::{SCOPES, at, manifest, minutes, own_stores, rows};
use super::{Host, open_registry, slug};
use crate::unique;

#[tokio::test]
async fn three_hosts_claim_each_due_run_once_and_a_dead_host_leaves_nothing_stuck() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, dir, url) in own_stores("heartbeat_claims").await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let (app, emitter) = (slug("claims"), slug("emitter"));
        host.publish(&app, &dev, &manifest(&app, &emitter), &component)
            .await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let mut tenants = Vec::new();
        for t in 0..4 {
            let tenant = format!("shop{t}");
            let admin = host.tenant_token(&acme.secret, &tenant, "admin").await;
            host.activate(&app, &admin, SCOPES).await;
            tenants.push((tenant, admin));
        }
        // Memory is per (tenant, install, agent): one tenant's entries are not another's,
        // and an agent the app does not declare is refused.
        let remember = json!({"op": "tool", "name": "memory.write", "args": {"agent": "lead", "kind": "note", "content": "shop0 only"}});
        let written = host.probe(&app, &tenants[0].1, remember).await;
        assert!(
            written["ok"]["id"]
                .as_str()
                .is_some_and(|id| id.starts_with("mem_")),
            "{written}"
        );
        let recall = |agent: &str| json!({"op": "tool", "name": "memory.query", "args": {"agent": agent, "kind": "note"}});
        let mine = host.probe(&app, &tenants[0].1, recall("lead")).await;
        assert_eq!(mine["ok"]["entries"][0]["content"], "shop0 only", "{mine}");
        let theirs = host.probe(&app, &tenants[1].1, recall("lead")).await;
        assert_eq!(theirs["ok"]["entries"], json!([]), "{theirs}");
        let helper = host.probe(&app, &tenants[0].1, recall("helper")).await;
        assert_eq!(helper["ok"]["entries"], json!([]), "{helper}");
        let stranger = host.probe(&app, &tenants[0].1, recall("stranger")).await;
        assert_eq!(stranger["err"]["decision"], "unknown_agent", "{stranger}");

        // Three hosts: each its own registry, runtime and scheduler, one database.
        let mut schedulers = Vec::new();
        let mut stores_held = Vec::new();
        for i in 0..3 {
            let store = match (i, &dir, &url) {
                (0, _, _) => store.clone(),
                (_, Some(dir), _) => Store::open_sqlite(dir.path()).await.unwrap(),
                (_, None, Some(url)) => Store::open_url(url).await.unwrap(),
                (_, None, None) => unreachable!("a store is SQLite or PostgreSQL"),
            };
            let registry = open_registry(
                &store,
                host.data(),
                SecretsKey::load_or_create(host.data(), None).unwrap(),
            );
            let services = atrium_platform::services::Services::new(
                atrium_platform::services::ServicesConfig {
                    registry,
                    retrieval: None,
                    gateway: None,
                    metering: None,
                    tools: atrium_platform::composition::platform_tools(),
                    app_tokens: None,
                },
            );
            let config = HeartbeatsConfig {
                lost_after: std::time::Duration::from_secs(60),
                ..HeartbeatsConfig::default()
            };
            schedulers.push(Scheduler::new(
                Serving::new(services, 8, atrium_platform::install_platform::for_install),
                config,
                format!("host-{i}"),
            ));
            stores_held.push(store);
        }
        // All three tick the same instants of a day; every due run of every tenant's
        // heartbeats (idle or failing: no model here) is claimed by exactly one of them.
        let start = at("2031-06-02T08:00:00Z");
        let mut total = 0;
        let mut idle_runs = 0;
        for step in 0..=25 {
            let now = start + minutes(5 * step);
            let (a, b, c) = tokio::join!(
                schedulers[0].tick(now),
                schedulers[1].tick(now),
                schedulers[2].tick(now),
            );
            for report in [a.unwrap(), b.unwrap(), c.unwrap()] {
                let ours: Vec<_> = report
                    .runs
                    .iter()
                    .filter(|r| r.install.app_slug == app)
                    .collect();
                total += ours.len();
                idle_runs += ours.iter().filter(|r| r.slug == "daytime").count();
            }
        }
        let mut recorded = 0;
        for (tenant, _) in &tenants {
            let runs = store
                .heartbeat_runs(
                    &atrium_store::InstallKey::new(&acme.org_id, tenant, &app),
                    1000,
                )
                .await
                .unwrap();
            let mut keys: Vec<_> = runs.iter().map(|r| (r.slug.clone(), r.due_at)).collect();
            let before = keys.len();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), before, "a duplicate run: {runs:?}");
            assert!(runs.iter().all(|r| r.outcome != "running"), "{runs:?}");
            recorded += before;
        }
        assert_eq!(total, recorded, "every claimed run is recorded once");
        // `daytime` (every 5 minutes from 09:00 to 17:00 UTC, 15 minutes cooldown) ran five
        // times for each tenant: its first next run is its first grid time inside the window
        // (09:00 and the tenant's offset), claimed at the tick at or after it, then every
        // third tick (the cooldown skips two), up to the tick of 10:05.
        assert_eq!(idle_runs, 4 * 5, "total {total}");

        // A host that dies mid-run: its claim stays `running`; the row has already moved on,
        // so the next due run is claimed by another host, and once the lost-after time has
        // passed the dead run is marked lost and counted as a failure, once.
        let (tenant, admin) = &tenants[0];
        let key = atrium_store::InstallKey::new(&acme.org_id, tenant, &app);
        let stored = store.heartbeat_rows(&key).await.unwrap();
        let overdue = stored.iter().find(|r| r.slug == "overdue").unwrap();
        let due = overdue.next_run_at.unwrap();
        let later = due + minutes(60);
        let claimed = store
            .claim_heartbeat_run(atrium_store::HeartbeatClaim {
                heartbeat: atrium_store::HeartbeatRef {
                    install: &key,
                    agent: "lead",
                    slug: "overdue",
                },
                due_at: due,
                trigger: "schedule",
                host: "doomed-host",
                at: due,
                advance: Some((Some(due), later)),
            })
            .await
            .unwrap();
        assert!(claimed);
        let overdue_row = || async {
            rows(&host, admin, &app)
                .await
                .into_iter()
                .find(|r| r["slug"] == "overdue")
                .unwrap()
        };
        // A minute before its next run, the dead host's run is past the lost-after time
        // (a minute here): marked lost once, whichever hosts tick, and counted as a failure.
        let before = later - minutes(1);
        let (a, b, c) = tokio::join!(
            schedulers[0].tick(before),
            schedulers[1].tick(before),
            schedulers[2].tick(before),
        );
        assert_eq!(a.unwrap().reaped + b.unwrap().reaped + c.unwrap().reaped, 1);
        let runs = store.heartbeat_runs(&key, 1000).await.unwrap();
        let lost = runs.iter().find(|r| r.host == "doomed-host").unwrap();
        assert_eq!(lost.outcome, "lost", "{lost:?}");
        let overdue = overdue_row().await;
        assert_eq!(overdue["consecutive_failures"], 1, "{overdue}");
        assert!(
            overdue["last_error"]
                .as_str()
                .is_some_and(|e| e.contains("doomed-host")),
            "{overdue}"
        );
        // Its next run is not stuck: another host claims it, and the success resets the count.
        let report = schedulers[1].tick(later).await.unwrap();
        assert!(
            report
                .runs
                .iter()
                .any(|r| r.install == key && r.slug == "overdue"),
            "{report:?}"
        );
        let overdue = overdue_row().await;
        assert_eq!(overdue["consecutive_failures"], 0, "{overdue}");
        assert_eq!(overdue["state"], "active", "{overdue}");
        drop(stores_held);
        host.stop().await;
    }
}

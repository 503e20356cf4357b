//! Two hosts sharing one database. Named schedules: both scan the same minute, and each due
//! schedule of each install runs once, on one of them; a declared schedule without a handler
//! is recorded as failed. Installs: a settings change or a deactivation through one host
//! reaches the other's memory of the install through the change feed.

use atrium_platform::sealing::SecretsKey;
use atrium_platform::serving::Serving;
use reqwest::StatusCode;
use serde_json::json;

use atrium_platform::registry::Actor;

use super::{Body, Host, open_registry, slug};
use crate::{stores, unique};

#[tokio::test]
async fn each_due_schedule_runs_once_across_two_hosts() {
    let component = std::fs::read(atrium_test_artifacts::PROBE).unwrap();
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("ada", true).await;
        let app = slug("probe");
        let text = std::fs::read_to_string(atrium_test_artifacts::PROBE_MANIFEST)
            .unwrap()
            .replace("app_id: probe", &format!("app_id: {app}"))
            .replace("probe.read", "tasks.read")
            .replace("probe.write", "tasks.write")
            + "install_settings:\n  - {id: greeting, type: string, label: Greeting, default: hi}\n";
        let (status, body) = host
            .register(
                &app,
                &dev,
                &[
                    ("manifest", None, text.as_bytes()),
                    ("component", None, &component),
                ],
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        host.post(
            &format!("/api/dev/apps/{app}/versions/1.0.0/promote"),
            &dev,
            Body::None,
        )
        .await;
        let acme = store.create_key(&unique("acme"), "ops").await.unwrap();
        let (_, created) = host
            .post(
                "/api/tenants/shop/tokens",
                &acme.secret,
                Body::Json(json!({"role": "admin"})),
            )
            .await;
        let admin = created["token"].as_str().unwrap().to_owned();
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/activate"),
                &admin,
                Body::Json(json!({"granted_scopes": ["tasks.read", "tasks.write"]})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");

        // Two hosts: each its own registry, runtime and loaded apps, one database.
        let other = crate::reopen(&store, dir.as_ref()).await;
        let mut hosts = Vec::new();
        for (i, store) in [&store, &other].into_iter().enumerate() {
            let registry = open_registry(
                store,
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
            hosts.push((
                format!("host-{i}"),
                Serving::new(services, 8, atrium_platform::install_platform::for_install),
            ));
        }
        // 10:00 UTC: `tick` (every minute) and `unhandled` (hourly, no handler) are due.
        let ten: jiff::Timestamp = "2031-05-06T10:00:23Z".parse().unwrap();
        let (a, b) = tokio::join!(
            hosts[0].1.scan_schedules(ten, &hosts[0].0),
            hosts[1].1.scan_schedules(ten, &hosts[1].0),
        );
        let ours = |runs: Vec<atrium_platform::serving::ScheduledRun>| -> Vec<_> {
            runs.into_iter().filter(|r| r.app_slug == app).collect()
        };
        let (a, b) = (ours(a.unwrap()), ours(b.unwrap()));
        assert_eq!(a.len() + b.len(), 2, "each due schedule once: {a:?} {b:?}");
        let runs = store
            .schedule_runs(
                &atrium_store::InstallKey::new(&acme.org_id, "shop", &app),
                10,
            )
            .await
            .unwrap();
        assert_eq!(runs.len(), 2, "{runs:?}");
        let tick = runs.iter().find(|r| r.schedule == "tick").unwrap();
        assert_eq!(tick.outcome, "ok", "{tick:?}");
        let unhandled = runs.iter().find(|r| r.schedule == "unhandled").unwrap();
        assert_eq!(unhandled.outcome, "failed", "{unhandled:?}");
        assert!(
            unhandled.error.as_deref().unwrap().contains("unhandled"),
            "{unhandled:?}"
        );
        // The same minute again: nothing more. The next minute: `tick` only.
        assert!(ours(hosts[1].1.scan_schedules(ten, "late-host").await.unwrap()).is_empty());
        let next = ten + jiff::SignedDuration::from_secs(60);
        let (a, b) = tokio::join!(
            hosts[0].1.scan_schedules(next, &hosts[0].0),
            hosts[1].1.scan_schedules(next, &hosts[1].0),
        );
        let (a, b) = (ours(a.unwrap()), ours(b.unwrap()));
        assert_eq!(a.len() + b.len(), 1, "{a:?} {b:?}");
        assert_eq!(a.iter().chain(&b).next().unwrap().schedule, "tick");

        // Scopes are also checked at call time: this version does not ask for knowledge.read,
        // so the platform tool that needs it is refused, naming the scope.
        let (status, body) = host
            .post(
                &format!("/api/apps/{app}/tools/platform"),
                &admin,
                Body::Json(json!({"op": "tool", "name": "knowledge.query", "args": {"slot": "x", "query": "y"}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["result"]["err"]["decision"], "scope_denied", "{body}");
        assert_eq!(
            body["result"]["err"]["needed_scopes"],
            json!(["knowledge.read"]),
            "{body}"
        );

        // The other host remembers the install (its change feed polled), until a settings
        // change through this host reaches it, at its next poll.
        let poller = tokio::spawn(other.clone().watch_changes());
        let shop = Actor::host(atrium_store::TenantKey::new(&acme.org_id, "shop"));
        let there = &hosts[1].1;
        until(|| async { other.changes_fresh() }).await;
        for _ in 0..2 {
            assert_eq!(greeting(there, &shop, &app).await, Some("hi".into()));
        }
        assert_eq!(there.cached_installs(), 1);
        let (status, body) = host
            .send(
                "PATCH",
                &format!("/api/installs/{app}"),
                Some(&admin),
                Body::Json(json!({"settings": {"greeting": "bonjour"}})),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        until(|| async { greeting(there, &shop, &app).await == Some("bonjour".into()) }).await;

        // A deactivated install is not scheduled, nor called on the other host.
        host.post(
            &format!("/api/installs/{app}/deactivate"),
            &admin,
            Body::None,
        )
        .await;
        until(|| async { greeting(there, &shop, &app).await.is_none() }).await;
        assert_eq!(there.cached_installs(), 0);
        poller.abort();
        let later = ten + jiff::SignedDuration::from_secs(120);
        assert!(ours(hosts[0].1.scan_schedules(later, &hosts[0].0).await.unwrap()).is_empty());
        host.stop().await;
        drop(dir);
    }
}

/// The greeting setting an install of `app` sees when called on `serving`; `None` when the
/// call is refused (no active install).
async fn greeting(serving: &Serving, tenant: &Actor, app: &str) -> Option<String> {
    let config = json!({"op": "config_all"});
    let result = serving
        .call_tool(tenant, app, "platform", &config)
        .await
        .ok()?;
    Some(result["ok"]["greeting"].as_str()?.to_owned())
}

/// Waits until `check` holds, polling every 10 ms; fails when it still does not after three
/// quarters of [`atrium_store::STALE_AFTER`]: a change must reach another host by its
/// poller, before its feed could go stale and bypass its memory.
async fn until<F: std::future::Future<Output = bool>>(check: impl Fn() -> F) {
    let deadline = std::time::Instant::now() + atrium_store::STALE_AFTER * 3 / 4;
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "the other host did not see the change through its change feed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

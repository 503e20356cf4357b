//! Heartbeat rows and runs: a row per declared heartbeat, kept with its state across
//! activations and upgrades; a due run claimed once, in the transaction that moves the row's
//! next run on; runs ended once and counted on their row, five failures in a row disabling it.

use atrium_store::{
    HeartbeatClaim, HeartbeatDecl, HeartbeatEnd, HeartbeatRef, HeartbeatRow, HeartbeatRun,
    InstallKey, MAX_CONSECUTIVE_FAILURES, Store, StoreError, TenantKey,
};
use jiff::Timestamp;

use super::{Tenants, activate_app, ms, register_app, stores, tenants};

/// A time of the far future (4,000,000,000,000 ms): the runs these tests claim never look
/// lost, and the rows they schedule never look due, to a scheduler of the present sharing the
/// database.
const T: Timestamp = Timestamp::constant(4_000_000_000, 0);

fn decl(slug: &str, schedule_key: &str) -> HeartbeatDecl {
    HeartbeatDecl {
        agent: "triage".into(),
        slug: slug.into(),
        id: format!("hb_triage_{slug}"),
        schedule_key: schedule_key.into(),
    }
}

fn declared() -> Vec<HeartbeatDecl> {
    vec![
        decl("digest", "every 15m|"),
        decl("cleanup", "daily 03:00|"),
    ]
}

/// The tenants, and the tenant's install of an app whose agent `triage` declares
/// [`declared`].
async fn setup(store: &Store) -> (Tenants, InstallKey) {
    let t = tenants(store).await;
    let slug = register_app(store, "helpdesk").await;
    let install = activate_app(store, &t.tenant, &slug, &declared()).await;
    (t, install)
}

fn heartbeat<'a>(install: &'a InstallKey, slug: &'a str) -> HeartbeatRef<'a> {
    HeartbeatRef {
        install,
        agent: "triage",
        slug,
    }
}

/// A claim that moves nothing (a run asked for now), at its due time.
fn run_now<'a>(
    heartbeat: HeartbeatRef<'a>,
    due_at: Timestamp,
    host: &'a str,
) -> HeartbeatClaim<'a> {
    HeartbeatClaim {
        heartbeat,
        due_at,
        trigger: "run_now",
        host,
        at: due_at,
        advance: None,
    }
}

fn ended(outcome: &str) -> HeartbeatEnd<'_> {
    HeartbeatEnd {
        outcome,
        error: None,
        records: None,
        reply: None,
        escalated: false,
        cost_micros: 0,
    }
}

/// Claims a run of `heartbeat` due at `due_at` and ends it with `end`: the row after it.
async fn run_once(
    store: &Store,
    heartbeat: HeartbeatRef<'_>,
    due_at: Timestamp,
    end: HeartbeatEnd<'_>,
) -> HeartbeatRow {
    assert!(claims(store, run_now(heartbeat, due_at, "host-a")).await);
    finish(store, heartbeat, due_at, end).await.unwrap()
}

async fn row(store: &Store, install: &InstallKey, slug: &str) -> HeartbeatRow {
    let rows = store.heartbeat_rows(install).await.unwrap();
    rows.into_iter().find(|r| r.slug == slug).unwrap()
}

/// The slugs of `install`'s rows due at `now`, in the store's order.
async fn due(store: &Store, install: &InstallKey, now: Timestamp) -> Vec<String> {
    let due = store.due_heartbeats(now, i64::MAX).await.unwrap();
    due.into_iter()
        .filter(|d| &d.install == install)
        .map(|d| d.row.slug)
        .collect()
}

async fn claims(store: &Store, claim: HeartbeatClaim<'_>) -> bool {
    store.claim_heartbeat_run(claim).await.unwrap()
}

async fn advances(
    store: &Store,
    heartbeat: HeartbeatRef<'_>,
    from: Option<Timestamp>,
    to: Timestamp,
) -> bool {
    store.advance_heartbeat(heartbeat, from, to).await.unwrap()
}

async fn set_state(
    store: &Store,
    tenant: &TenantKey,
    id: &str,
    state: &str,
) -> Option<HeartbeatRow> {
    store.set_heartbeat_state(tenant, id, state).await.unwrap()
}

async fn runs(store: &Store, install: &InstallKey, limit: i64) -> Vec<HeartbeatRun> {
    store.heartbeat_runs(install, limit).await.unwrap()
}

async fn finish(
    store: &Store,
    heartbeat: HeartbeatRef<'_>,
    due_at: Timestamp,
    end: HeartbeatEnd<'_>,
) -> Option<HeartbeatRow> {
    store
        .finish_heartbeat_run(heartbeat, due_at, end)
        .await
        .unwrap()
}

/// A row's state and next run.
fn place(row: &HeartbeatRow) -> (&str, Option<Timestamp>) {
    (row.state.as_str(), row.next_run_at)
}

#[tokio::test]
async fn activation_creates_an_active_row_per_declared_heartbeat_found_by_its_id() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let rows = store.heartbeat_rows(&install).await.unwrap();
        let slugs: Vec<&str> = rows.iter().map(|r| r.slug.as_str()).collect();
        assert_eq!(slugs, ["cleanup", "digest"], "by agent and slug");
        let digest = HeartbeatRow {
            id: Some("hb_triage_digest".into()),
            agent: "triage".into(),
            slug: "digest".into(),
            state: "active".into(),
            next_run_at: None,
            schedule_key: Some("every 15m|".into()),
            consecutive_failures: 0,
            last_run_at: None,
            last_ok_at: None,
            last_error: None,
            woken_at: None,
            woken_by: None,
        };
        assert_eq!(rows[1], digest);
        let by_id = async |tenant, id| store.heartbeat_by_id(tenant, id).await.unwrap();
        let found = by_id(&t.tenant, "hb_triage_digest").await;
        assert_eq!(found, Some((install.app_slug.clone(), digest)));
        assert_eq!(by_id(&t.tenant, "hb_nope").await, None);
        for other in t.others() {
            assert_eq!(by_id(other, "hb_triage_digest").await, None);
            let theirs = other.install(&install.app_slug);
            assert!(store.heartbeat_rows(&theirs).await.unwrap().is_empty());
        }
        activate_app(&store, &t.tenant, &install.app_slug, &declared()).await;
        let again = store.heartbeat_rows(&install).await.unwrap();
        assert_eq!(again, rows, "activating again keeps the rows as they are");
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn a_row_an_event_woke_keeps_its_wake_when_an_activation_syncs_it() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        let by = "shop/order.placed";
        let at = store.wake_heartbeat(&install, "triage", "digest", by).await;
        let at = at.unwrap();
        let woken = row(&store, &install, "digest").await;
        assert_eq!(place(&woken), ("active", Some(at)));
        assert_eq!((woken.id, woken.schedule_key), (None, None));

        activate_app(&store, &t.tenant, &slug, &declared()).await;
        let synced = row(&store, &install, "digest").await;
        assert_eq!(synced.id.as_deref(), Some("hb_triage_digest"));
        assert_eq!(synced.schedule_key.as_deref(), Some("every 15m|"));
        assert_eq!(synced.next_run_at, Some(at), "the wake is not lost");
        assert_eq!(synced.woken_by.as_deref(), Some(by));
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn an_upgrade_keeps_states_retires_the_undeclared_and_recomputes_a_changed_schedule() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        for slug in ["digest", "cleanup"] {
            assert!(advances(&store, heartbeat(&install, slug), None, T).await);
        }
        set_state(&store, &t.tenant, "hb_triage_digest", "disabled").await;
        let empty = serde_json::Map::new();
        let changed = [decl("digest", "every 30m|")];
        store
            .upgrade_install(&install, "1.0.0", &[], &empty, &changed)
            .await
            .unwrap();
        // Disabled stays disabled; the new schedule's next run is computed again.
        let digest = row(&store, &install, "digest").await;
        assert_eq!(place(&digest), ("disabled", None));
        assert_eq!(digest.schedule_key.as_deref(), Some("every 30m|"));
        let cleanup = row(&store, &install, "cleanup").await;
        assert_eq!(place(&cleanup), ("retired", Some(T)));
        assert!(due(&store, &install, T).await.is_empty());
        let refused = set_state(&store, &t.tenant, "hb_triage_cleanup", "active").await;
        assert_eq!(refused.unwrap().state, "retired", "not enabled");

        // Declared again with its schedule unchanged: active, its next run kept.
        activate_app(&store, &t.tenant, &install.app_slug, &declared()).await;
        let cleanup = row(&store, &install, "cleanup").await;
        assert_eq!(place(&cleanup), ("active", Some(T)));
        assert_eq!(row(&store, &install, "digest").await.state, "disabled");
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn due_rows_are_the_active_rows_of_active_installs_the_most_overdue_first() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let not_computed = due(&store, &install, T).await;
        assert_eq!(not_computed, ["cleanup", "digest"], "due until computed");
        let digest = heartbeat(&install, "digest");
        let cleanup = heartbeat(&install, "cleanup");
        assert!(advances(&store, digest, None, T + ms(20)).await);
        assert_eq!(
            due(&store, &install, T + ms(30)).await,
            ["cleanup", "digest"],
            "a row not computed yet comes first, on both databases"
        );
        assert!(advances(&store, cleanup, None, T + ms(10)).await);
        let late = advances(&store, cleanup, None, T + ms(11)).await;
        assert!(!late, "another host moved it first");
        assert!(due(&store, &install, T + ms(9)).await.is_empty());
        assert_eq!(due(&store, &install, T + ms(10)).await, ["cleanup"]);
        assert_eq!(
            due(&store, &install, T + ms(30)).await,
            ["cleanup", "digest"]
        );
        let all = store.due_heartbeats(T + ms(30), i64::MAX).await.unwrap();
        let first = all.into_iter().find(|d| d.install == install).unwrap();
        let seen = (first.version.as_str(), first.row.next_run_at);
        assert_eq!(seen, ("1.0.0", Some(T + ms(10))));

        set_state(&store, &t.tenant, "hb_triage_digest", "disabled").await;
        assert_eq!(due(&store, &install, T + ms(30)).await, ["cleanup"]);
        store.deactivate(&install).await.unwrap();
        let inactive = due(&store, &install, T + ms(30)).await;
        assert!(inactive.is_empty(), "an inactive install runs nothing");
        activate_app(&store, &t.tenant, &install.app_slug, &declared()).await;
        assert_eq!(due(&store, &install, T + ms(30)).await, ["cleanup"]);
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn a_due_run_is_claimed_once_in_the_move_of_the_next_run() {
    for (store, _dir) in stores().await {
        let (_, install) = setup(&store).await;
        let digest = heartbeat(&install, "digest");
        assert!(advances(&store, digest, None, T).await);
        let next = T + ms(900_000);
        let claim = |host| HeartbeatClaim {
            heartbeat: digest,
            due_at: T,
            trigger: "schedule",
            host,
            at: T + ms(5),
            advance: Some((Some(T), next)),
        };
        assert!(claims(&store, claim("host-a")).await);
        assert!(!claims(&store, claim("host-b")).await, "claimed once");
        // A host that read the row before it last moved claims nothing and leaves no run.
        let stale = HeartbeatClaim {
            due_at: T - ms(60_000),
            advance: Some((Some(T - ms(60_000)), T)),
            ..claim("host-b")
        };
        assert!(!claims(&store, stale).await);
        let claimed = row(&store, &install, "digest").await;
        let moved = (claimed.next_run_at, claimed.last_run_at);
        assert_eq!(moved, (Some(next), Some(T + ms(5))));
        let first = HeartbeatRun {
            agent: "triage".into(),
            slug: "digest".into(),
            due_at: T,
            trigger: "schedule".into(),
            host: "host-a".into(),
            outcome: "running".into(),
            records: None,
            error: None,
            reply: None,
            escalated: false,
            cost_micros: 0,
            claimed_at: T + ms(5),
            finished_at: None,
        };
        assert_eq!(runs(&store, &install, 10).await, [first]);

        // The next run is claimed at its own due time; runs are listed newest first.
        let then = HeartbeatClaim {
            due_at: next,
            at: next,
            advance: Some((Some(next), next + ms(900_000))),
            ..claim("host-b")
        };
        assert!(claims(&store, then).await);
        let listed = runs(&store, &install, 10).await;
        let keys: Vec<(Timestamp, &str)> =
            listed.iter().map(|r| (r.due_at, r.host.as_str())).collect();
        assert_eq!(keys, [(next, "host-b"), (T, "host-a")]);
        assert_eq!(runs(&store, &install, 1).await.len(), 1);
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn a_run_now_leaves_the_schedule_and_a_taken_due_time_is_refused() {
    for (store, _dir) in stores().await {
        let (_, install) = setup(&store).await;
        let digest = heartbeat(&install, "digest");
        assert!(advances(&store, digest, None, T).await);
        assert!(claims(&store, run_now(digest, T + ms(7), "host-a")).await);
        let taken = claims(&store, run_now(digest, T + ms(7), "host-b")).await;
        assert!(!taken, "that due time is taken");
        assert!(claims(&store, run_now(digest, T + ms(8), "host-b")).await);
        let after = row(&store, &install, "digest").await;
        let kept = (after.next_run_at, after.last_run_at);
        assert_eq!(kept, (Some(T), Some(T + ms(8))));
        let unknown = run_now(heartbeat(&install, "nope"), T + ms(7), "host-a");
        assert!(!claims(&store, unknown).await, "no such row");
        let listed = runs(&store, &install, 10).await;
        let keys: Vec<(Timestamp, &str)> = listed
            .iter()
            .map(|r| (r.due_at, r.trigger.as_str()))
            .collect();
        assert_eq!(keys, [(T + ms(8), "run_now"), (T + ms(7), "run_now")]);
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn a_run_ends_once_and_five_failures_in_a_row_disable_its_heartbeat() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        let digest = heartbeat(&install, "digest");
        let reply = "Two tickets wait for an answer.";
        let end = HeartbeatEnd {
            records: Some(3),
            reply: Some(reply),
            escalated: true,
            cost_micros: 1_250,
            ..ended("ok")
        };
        let after = run_once(&store, digest, T, end).await;
        assert_eq!((after.consecutive_failures, after.last_error), (0, None));
        assert!(after.last_ok_at.is_some());
        let run = runs(&store, &install, 1).await.remove(0);
        let kept = (run.outcome.as_str(), run.records, run.error.as_deref());
        assert_eq!(kept, ("ok", Some(3), None));
        assert_eq!(run.reply.as_deref(), Some(reply));
        assert_eq!((run.escalated, run.cost_micros), (true, 1_250));
        assert!(run.finished_at.is_some());
        // Ended once: a late `lost` (another host's reaper) changes nothing.
        assert_eq!(finish(&store, digest, T, ended("lost")).await, None);
        assert_eq!(runs(&store, &install, 1).await, [run]);
        let never = finish(&store, digest, T + ms(1), ended("ok")).await;
        assert_eq!(never, None, "a run never claimed does not end");

        let failed = |outcome| HeartbeatEnd {
            error: Some("the model timed out"),
            ..ended(outcome)
        };
        let after = run_once(&store, digest, T + ms(11), failed("failed")).await;
        assert_eq!(after.consecutive_failures, 1);
        assert_eq!(after.last_error.as_deref(), Some("the model timed out"));
        let after = run_once(&store, digest, T + ms(12), ended("idle")).await;
        let counted = (after.consecutive_failures, after.last_error);
        assert_eq!(counted, (0, None), "a success starts the count over");
        for i in 1..=MAX_CONSECUTIVE_FAILURES {
            let outcome = if i == 1 { "lost" } else { "failed" };
            let after = run_once(&store, digest, T + ms(20 + i), failed(outcome)).await;
            let disabled = i == MAX_CONSECUTIVE_FAILURES;
            let state = if disabled { "disabled" } else { "active" };
            assert_eq!(
                (after.state.as_str(), after.consecutive_failures),
                (state, i)
            );
        }
        let slugs = due(&store, &install, T + ms(100)).await;
        assert!(!slugs.contains(&"digest".to_owned()));
        let scheduled = HeartbeatClaim {
            trigger: "schedule",
            advance: Some((None, T + ms(200))),
            ..run_now(digest, T + ms(100), "host-a")
        };
        assert!(!claims(&store, scheduled).await, "disabled");

        let enabled = set_state(&store, &t.tenant, "hb_triage_digest", "active").await;
        let enabled = enabled.unwrap();
        assert_eq!(
            (enabled.state.as_str(), enabled.consecutive_failures),
            ("active", 0)
        );
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn states_are_set_by_id_within_the_tenant() {
    for (store, _dir) in stores().await {
        let (t, install) = setup(&store).await;
        // The neighbour runs the same app, whose heartbeats have the same ids there.
        let theirs = activate_app(&store, &t.neighbour, &install.app_slug, &declared()).await;
        let id = "hb_triage_digest";
        let disabled = set_state(&store, &t.tenant, id, "disabled").await;
        assert_eq!(disabled.unwrap().state, "disabled");
        assert_eq!(row(&store, &theirs, "digest").await.state, "active");
        assert_eq!(set_state(&store, &t.stranger, id, "active").await, None);
        assert_eq!(row(&store, &install, "digest").await.state, "disabled");
        let unknown = set_state(&store, &t.tenant, "hb_nope", "active").await;
        assert_eq!(unknown, None);
        let refused = store.set_heartbeat_state(&t.tenant, id, "retired").await;
        let internal = matches!(refused, Err(StoreError::Internal(_)));
        assert!(internal, "{refused:?}");
        store.remove_install(&theirs).await.unwrap();
        store.remove_install(&install).await.unwrap();
    }
}

#[tokio::test]
async fn stale_runs_are_those_still_running_claimed_before_the_cutoff() {
    for (store, _dir) in stores().await {
        let (_, install) = setup(&store).await;
        let digest = heartbeat(&install, "digest");
        for due_at in [T + ms(100), T + ms(200), T + ms(300)] {
            assert!(claims(&store, run_now(digest, due_at, "host-a")).await);
        }
        finish(&store, digest, T + ms(300), ended("ok")).await;
        let stale = async |before| {
            let runs = store.stale_heartbeat_runs(before, i64::MAX).await.unwrap();
            let ours = runs.into_iter().filter(|(key, _)| key == &install);
            ours.map(|(_, run)| run.due_at).collect::<Vec<_>>()
        };
        assert_eq!(
            stale(T + ms(350)).await,
            [T + ms(100), T + ms(200)],
            "oldest first"
        );
        assert_eq!(stale(T + ms(150)).await, [T + ms(100)]);
        assert!(
            stale(T + ms(100)).await.is_empty(),
            "claimed before, not at"
        );
        let lost = finish(&store, digest, T + ms(100), ended("lost")).await;
        assert_eq!(lost.unwrap().consecutive_failures, 1);
        assert_eq!(stale(T + ms(350)).await, [T + ms(200)]);
        store.remove_install(&install).await.unwrap();
    }
}

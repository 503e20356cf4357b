//! Event wires: proposed by the subscriber side (approved at once), approved by the emitter
//! side, revoked by either; only active wires carry events, a revoked one starts over only
//! when the proposal says so, and nothing of a wire is seen from another tenant. A wake
//! makes a heartbeat due at once and records what woke it.

use atrium_store::{HeartbeatWake, NewWire, Store, TenantKey, Wire, WireFilter};

use super::{activate_app, next_millisecond, register_app, stores, tenants};

const PLACED: NewWire<'static> = NewWire {
    emitter_app: "shop",
    event_name: "order.placed",
    subscriber_app: "crm",
    target_agent: "sync",
    target_heartbeat: None,
};

async fn propose(store: &Store, tenant: &TenantKey, wire: &NewWire<'_>) -> (Wire, bool) {
    store.propose_wire(tenant, wire, true).await.unwrap()
}

async fn approve(store: &Store, tenant: &TenantKey, id: &str) -> Option<Wire> {
    store.approve_wire(tenant, id).await.unwrap()
}

async fn revoke(store: &Store, tenant: &TenantKey, id: &str) -> Option<Wire> {
    store.revoke_wire(tenant, id).await.unwrap()
}

/// The active wires of `shop`'s `order.placed` in `tenant`.
async fn carrying(store: &Store, tenant: &TenantKey) -> Vec<Wire> {
    let active = store.active_wires(tenant, "shop", "order.placed").await;
    active.unwrap()
}

/// The ids of `tenant`'s wires that `filter` matches, in a page of at most `limit` after
/// `after`.
async fn ids(
    store: &Store,
    tenant: &TenantKey,
    filter: WireFilter<'_>,
    after: Option<&str>,
    limit: i64,
) -> Vec<String> {
    let page = store.wires_page(tenant, &filter, after, limit).await;
    page.unwrap().into_iter().map(|w| w.id).collect()
}

#[tokio::test]
async fn a_proposed_wire_waits_for_the_emitter_and_carries_events_once_approved() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let (proposed, started) = propose(&store, &t.tenant, &PLACED).await;
        assert!(started);
        assert!(proposed.id.starts_with("wir_"), "{}", proposed.id);
        let expected = Wire {
            id: proposed.id.clone(),
            emitter_app: "shop".into(),
            event_name: "order.placed".into(),
            subscriber_app: "crm".into(),
            target_agent: "sync".into(),
            target_heartbeat: None,
            subscriber_approved_at: Some(proposed.created_at),
            emitter_approved_at: None,
            revoked_at: None,
            created_at: proposed.created_at,
            updated_at: proposed.created_at,
        };
        assert_eq!(proposed, expected);
        assert!(!proposed.is_active());
        let read = store.wire(&t.tenant, &proposed.id).await.unwrap();
        assert_eq!(read, Some(proposed.clone()));
        let pending = carrying(&store, &t.tenant).await;
        assert!(pending.is_empty(), "a pending wire carries nothing");

        let approved = approve(&store, &t.tenant, &proposed.id).await.unwrap();
        assert!(approved.is_active());
        assert_eq!(approved.emitter_approved_at, Some(approved.updated_at));
        assert_eq!(
            carrying(&store, &t.tenant).await,
            std::slice::from_ref(&approved)
        );
        let shipped = store.active_wires(&t.tenant, "shop", "order.shipped").await;
        assert!(shipped.unwrap().is_empty(), "another event");
        next_millisecond().await;
        let again = approve(&store, &t.tenant, &proposed.id).await.unwrap();
        let first = approved.emitter_approved_at;
        assert_eq!(again.emitter_approved_at, first, "the first time is kept");
    }
}

#[tokio::test]
async fn a_heartbeat_target_is_another_wire_than_the_agent_target_and_proposing_again_keeps_it() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let to_heartbeat = NewWire {
            target_heartbeat: Some("digest"),
            ..PLACED
        };
        let (agent, _) = propose(&store, &t.tenant, &PLACED).await;
        let (heartbeat, started) = propose(&store, &t.tenant, &to_heartbeat).await;
        assert!(started);
        assert_ne!(agent.id, heartbeat.id);
        assert_eq!(heartbeat.target_heartbeat.as_deref(), Some("digest"));
        let read = store.wire(&t.tenant, &heartbeat.id).await.unwrap();
        assert_eq!(read, Some(heartbeat.clone()));

        // Pending or active, a wire proposed again is left as it is.
        let pending = propose(&store, &t.tenant, &to_heartbeat).await;
        assert_eq!(pending, (heartbeat, false));
        let active = approve(&store, &t.tenant, &agent.id).await.unwrap();
        assert_eq!(propose(&store, &t.tenant, &PLACED).await, (active, false));
    }
}

#[tokio::test]
async fn a_revoked_wire_carries_nothing_and_only_a_restarting_proposal_starts_it_over() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let (proposed, _) = propose(&store, &t.tenant, &PLACED).await;
        approve(&store, &t.tenant, &proposed.id).await;
        let revoked = revoke(&store, &t.tenant, &proposed.id).await.unwrap();
        let at = revoked.revoked_at.unwrap();
        assert!(!revoked.is_active());
        assert!(carrying(&store, &t.tenant).await.is_empty());
        next_millisecond().await;
        let approved = approve(&store, &t.tenant, &proposed.id).await;
        assert_eq!(
            approved,
            Some(revoked),
            "approving a revoked wire changes nothing"
        );
        let twice = revoke(&store, &t.tenant, &proposed.id).await.unwrap();
        assert_eq!(twice.revoked_at, Some(at), "the first time is kept");

        // What an activation proposes never undoes a revoke.
        let kept = store.propose_wire(&t.tenant, &PLACED, false).await.unwrap();
        assert_eq!((kept.0.revoked_at, kept.1), (Some(at), false));

        let (restarted, started) = propose(&store, &t.tenant, &PLACED).await;
        assert!(started);
        assert_eq!(restarted.id, proposed.id, "the same wire, started over");
        assert_eq!(restarted.created_at, proposed.created_at);
        let approvals = (restarted.emitter_approved_at, restarted.revoked_at);
        assert_eq!(approvals, (None, None));
        assert_eq!(restarted.subscriber_approved_at, Some(restarted.updated_at));
    }
}

#[tokio::test]
async fn nothing_changes_a_wire_that_does_not_exist() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        assert_eq!(store.wire(&t.tenant, "wir_nope").await.unwrap(), None);
        assert_eq!(approve(&store, &t.tenant, "wir_nope").await, None);
        assert_eq!(revoke(&store, &t.tenant, "wir_nope").await, None);
        let all = WireFilter::default();
        assert!(ids(&store, &t.tenant, all, None, 10).await.is_empty());
    }
}

#[tokio::test]
async fn wires_stay_in_their_tenant() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let (ours, _) = propose(&store, &t.tenant, &PLACED).await;
        for other in t.others() {
            assert_eq!(store.wire(other, &ours.id).await.unwrap(), None);
            assert_eq!(approve(&store, other, &ours.id).await, None);
            assert_eq!(revoke(&store, other, &ours.id).await, None);
            let all = WireFilter::default();
            assert!(ids(&store, other, all, None, 10).await.is_empty());
        }
        let read = store.wire(&t.tenant, &ours.id).await.unwrap();
        assert_eq!(read, Some(ours.clone()), "untouched by the others");

        // The same wire in the neighbour is a wire of its own, active on its own.
        let (theirs, started) = propose(&store, &t.neighbour, &PLACED).await;
        assert!(started);
        assert_ne!(theirs.id, ours.id);
        approve(&store, &t.neighbour, &theirs.id).await;
        assert!(carrying(&store, &t.tenant).await.is_empty());
        assert_eq!(carrying(&store, &t.neighbour).await.len(), 1);
    }
}

#[tokio::test]
async fn wires_are_listed_in_creation_order_by_filter_and_in_pages() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let mut made = Vec::new();
        for (emitter_app, event_name, subscriber_app) in [
            ("shop", "order.placed", "crm"),
            ("shop", "order.shipped", "crm"),
            ("shop", "order.placed", "mail"),
            ("billing", "invoice.paid", "crm"),
        ] {
            let wire = NewWire {
                emitter_app,
                event_name,
                subscriber_app,
                ..PLACED
            };
            made.push(propose(&store, &t.tenant, &wire).await.0.id);
            next_millisecond().await;
        }
        let pick = |i: &[usize]| i.iter().map(|&i| made[i].clone()).collect::<Vec<_>>();
        let listed = async |filter| ids(&store, &t.tenant, filter, None, 100).await;
        let all = WireFilter::default();
        assert_eq!(listed(all).await, made);
        let from_shop = WireFilter {
            emitter_app: Some("shop"),
            ..all
        };
        assert_eq!(listed(from_shop).await, pick(&[0, 1, 2]));
        let to_crm = WireFilter {
            subscriber_app: Some("crm"),
            ..all
        };
        assert_eq!(listed(to_crm).await, pick(&[0, 1, 3]));
        let placed = WireFilter {
            event_name: Some("order.placed"),
            ..all
        };
        assert_eq!(listed(placed).await, pick(&[0, 2]));
        let placed_to_crm = WireFilter {
            subscriber_app: Some("crm"),
            ..placed
        };
        assert_eq!(listed(placed_to_crm).await, pick(&[0]));

        // Pages of three after the last id seen: every wire once.
        let first = ids(&store, &t.tenant, all, None, 3).await;
        assert_eq!(first, pick(&[0, 1, 2]));
        let second = ids(&store, &t.tenant, all, Some(first[2].as_str()), 3).await;
        assert_eq!(second, pick(&[3]));
        assert!(
            ids(&store, &t.tenant, all, Some(made[3].as_str()), 3)
                .await
                .is_empty()
        );
    }
}

#[tokio::test]
async fn a_wake_makes_the_heartbeat_due_now_and_records_what_woke_it() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "crm").await;
        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        assert!(store.heartbeat_wakes(&install).await.unwrap().is_empty());
        let wake = async |slug, by| store.wake_heartbeat(&install, "sync", slug, by).await;

        let at = wake("digest", "shop/order.placed").await.unwrap();
        let woken = HeartbeatWake {
            agent: "sync".into(),
            slug: "digest".into(),
            next_run_at: Some(at),
            woken_at: Some(at),
            woken_by: Some("shop/order.placed".into()),
        };
        let wakes = store.heartbeat_wakes(&install).await.unwrap();
        assert_eq!(wakes, std::slice::from_ref(&woken));

        next_millisecond().await;
        let later = wake("digest", "billing/invoice.paid").await.unwrap();
        assert!(later > at);
        wake("alerts", "shop/order.placed").await.unwrap();
        let wakes = store.heartbeat_wakes(&install).await.unwrap();
        let slugs: Vec<&str> = wakes.iter().map(|w| w.slug.as_str()).collect();
        assert_eq!(slugs, ["alerts", "digest"], "by agent and slug");
        let again = HeartbeatWake {
            next_run_at: Some(later),
            woken_at: Some(later),
            woken_by: Some("billing/invoice.paid".into()),
            ..woken
        };
        assert_eq!(wakes[1], again);
        for other in t.others() {
            let theirs = store.heartbeat_wakes(&other.install(&slug)).await;
            assert!(theirs.unwrap().is_empty());
        }
        store.remove_install(&install).await.unwrap();
    }
}

//! Cross-app grants: asked for by the caller side (approved at once), approved by the callee
//! side, revoked by either. Each move is one statement that leaves a state the lifecycle
//! allows, a grant has a direction, and nothing of a grant is seen from another tenant.

use super::{next_millisecond, stores, tenants};

fn agents(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

#[tokio::test]
async fn a_requested_grant_waits_for_the_callee_and_is_honoured_once_approved() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let (asked, started) = store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap();
        assert!(started);
        assert_eq!(
            (asked.caller_app.as_str(), asked.callee_app.as_str()),
            ("crm", "mail")
        );
        assert_eq!(asked.allowed_agents, ["send"]);
        assert_eq!(asked.caller_approved_at, Some(asked.created_at));
        assert_eq!((asked.callee_approved_at, asked.revoked_at), (None, None));
        assert_eq!(asked.updated_at, asked.created_at);
        assert!(!asked.is_active(), "pending the callee's approval");
        assert_eq!(
            store.grant(&t.tenant, "crm", "mail").await.unwrap(),
            Some(asked.clone())
        );

        let approved = store
            .approve_grant(&t.tenant, "crm", "mail", &agents(&["send", "__route__"]))
            .await
            .unwrap()
            .unwrap();
        assert!(approved.is_active());
        assert_eq!(approved.allowed_agents, ["send", "__route__"]);
        assert_eq!(approved.callee_approved_at, Some(approved.updated_at));
        assert!(approved.updated_at >= asked.created_at);
        assert_eq!(
            (approved.caller_approved_at, approved.created_at),
            (asked.caller_approved_at, asked.created_at)
        );
        assert_eq!(
            store.grant(&t.tenant, "crm", "mail").await.unwrap(),
            Some(approved.clone())
        );

        // Approving again sets the agents and keeps the time of the first approval.
        next_millisecond().await;
        let again = store
            .approve_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(again.allowed_agents, ["send"]);
        assert_eq!(again.callee_approved_at, approved.callee_approved_at);
        assert!(again.is_active());
    }
}

#[tokio::test]
async fn asking_again_leaves_a_pending_or_active_grant_as_it_is() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let (first, _) = store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap();
        let (pending, started) = store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["send", "archive"]))
            .await
            .unwrap();
        assert!(!started);
        assert_eq!(pending, first, "the pending grant is kept as it was");

        let active = store
            .approve_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap()
            .unwrap();
        let (kept, started) = store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["archive"]))
            .await
            .unwrap();
        assert!(!started);
        assert_eq!(kept, active, "the active grant is kept as it was");
    }
}

#[tokio::test]
async fn a_revoked_grant_is_not_honoured_and_stays_listed() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap();
        store
            .approve_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap();
        let revoked = store
            .revoke_grant(&t.tenant, "crm", "mail")
            .await
            .unwrap()
            .unwrap();
        let at = revoked.revoked_at.unwrap();
        assert_eq!(revoked.updated_at, at);
        assert!(!revoked.is_active());
        assert!(
            revoked.caller_approved_at.is_some() && revoked.callee_approved_at.is_some(),
            "the approvals are kept"
        );

        next_millisecond().await;
        assert_eq!(
            store
                .approve_grant(&t.tenant, "crm", "mail", &agents(&["send", "archive"]))
                .await
                .unwrap(),
            Some(revoked.clone()),
            "approving a revoked grant changes nothing"
        );
        let twice = store
            .revoke_grant(&t.tenant, "crm", "mail")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            twice.revoked_at,
            Some(at),
            "revoking twice keeps the first time"
        );
        assert_eq!(
            store.grants_page(&t.tenant, None, 10).await.unwrap(),
            [twice]
        );
    }
}

#[tokio::test]
async fn asking_again_after_a_revoke_starts_the_grant_over() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let (first, _) = store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap();
        store
            .approve_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap();
        store.revoke_grant(&t.tenant, "crm", "mail").await.unwrap();

        next_millisecond().await;
        let (restarted, started) = store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["archive"]))
            .await
            .unwrap();
        assert!(started);
        assert_eq!(restarted.allowed_agents, ["archive"]);
        assert_eq!(
            (restarted.callee_approved_at, restarted.revoked_at),
            (None, None),
            "pending the callee again"
        );
        assert_eq!(restarted.caller_approved_at, Some(restarted.updated_at));
        assert_eq!(restarted.created_at, first.created_at, "the same grant");
        assert!(restarted.updated_at > first.updated_at);
        assert!(!restarted.is_active());
    }
}

#[tokio::test]
async fn nothing_changes_a_grant_that_does_not_exist_and_a_grant_has_a_direction() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        assert_eq!(store.grant(&t.tenant, "crm", "mail").await.unwrap(), None);
        assert_eq!(
            store
                .approve_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            store.revoke_grant(&t.tenant, "crm", "mail").await.unwrap(),
            None
        );
        assert!(
            store
                .grants_page(&t.tenant, None, 10)
                .await
                .unwrap()
                .is_empty(),
            "approving or revoking creates nothing"
        );

        let (asked, _) = store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap();
        assert_eq!(store.grant(&t.tenant, "mail", "crm").await.unwrap(), None);
        assert_eq!(
            store
                .approve_grant(&t.tenant, "mail", "crm", &agents(&["triage"]))
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            store.grant(&t.tenant, "crm", "mail").await.unwrap(),
            Some(asked)
        );
    }
}

#[tokio::test]
async fn grants_stay_in_their_tenant() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let (asked, _) = store
            .request_grant(&t.tenant, "crm", "mail", &agents(&["send"]))
            .await
            .unwrap();
        for other in t.others() {
            assert_eq!(store.grant(other, "crm", "mail").await.unwrap(), None);
            assert!(store.grants_page(other, None, 10).await.unwrap().is_empty());
            assert_eq!(
                store
                    .approve_grant(other, "crm", "mail", &agents(&["send"]))
                    .await
                    .unwrap(),
                None
            );
            assert_eq!(
                store.revoke_grant(other, "crm", "mail").await.unwrap(),
                None
            );
        }
        assert_eq!(
            store.grant(&t.tenant, "crm", "mail").await.unwrap(),
            Some(asked.clone()),
            "the others' approvals and revokes did not reach it"
        );

        // The same pair in the neighbour is a grant of its own.
        let (theirs, started) = store
            .request_grant(&t.neighbour, "crm", "mail", &agents(&["archive"]))
            .await
            .unwrap();
        assert!(started);
        assert_eq!(theirs.allowed_agents, ["archive"]);
        store
            .approve_grant(&t.neighbour, "crm", "mail", &agents(&["archive"]))
            .await
            .unwrap();
        assert_eq!(
            store.grant(&t.tenant, "crm", "mail").await.unwrap(),
            Some(asked),
            "still pending here"
        );
    }
}

#[tokio::test]
async fn grants_are_listed_by_caller_then_callee_in_pages() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        for (caller, callee) in [
            ("mail", "crm"),
            ("crm", "shop"),
            ("crm", "mail"),
            ("shop", "crm"),
        ] {
            store
                .request_grant(&t.tenant, caller, callee, &agents(&["triage"]))
                .await
                .unwrap();
        }
        let mut seen = Vec::new();
        let mut after: Option<(String, String)> = None;
        loop {
            let page = store
                .grants_page(
                    &t.tenant,
                    after.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                    3,
                )
                .await
                .unwrap();
            assert!(page.len() <= 3);
            let Some(last) = page.last() else {
                break;
            };
            after = Some((last.caller_app.clone(), last.callee_app.clone()));
            seen.extend(
                page.iter()
                    .map(|g| format!("{}->{}", g.caller_app, g.callee_app)),
            );
        }
        assert_eq!(seen, ["crm->mail", "crm->shop", "mail->crm", "shop->crm"]);
    }
}

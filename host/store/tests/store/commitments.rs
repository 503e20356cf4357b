//! Commitments: stored open with every field, closed by a user who is recorded (reopening
//! forgets them), listed oldest first in pages and by app, agent and status, refused for an
//! install that does not exist, and nothing of them seen or changed from another tenant.

use atrium_store::{
    CommitmentFilter, CommitmentStatus, NewCommitment, Store, StoreError, StoredCommitment,
    TenantKey,
};

use super::{activate_app, next_millisecond, register_app, stores, tenants};

fn promise<'a>(agent: &'a str, title: &'a str) -> NewCommitment<'a> {
    NewCommitment {
        agent,
        user_id: None,
        title,
        content: "",
        due_at: None,
    }
}

/// The titles of `tenant`'s commitments that `filter` matches, oldest first.
async fn titles(store: &Store, tenant: &TenantKey, filter: CommitmentFilter<'_>) -> Vec<String> {
    let page = store.commitments_page(tenant, &filter, None, 100).await;
    page.unwrap().into_iter().map(|c| c.title).collect()
}

#[tokio::test]
async fn a_commitment_is_stored_open_with_every_field() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        let due = jiff::Timestamp::from_millisecond(1_767_225_600_000).unwrap();
        let new = NewCommitment {
            agent: "triage",
            user_id: Some("3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b"),
            title: "Call the customer back",
            content: "About the delayed order 42, before Friday.",
            due_at: Some(due),
        };
        let added = store.add_commitment(&install, &new).await.unwrap();
        assert!(added.id.starts_with("cmt_"), "{}", added.id);
        let expected = StoredCommitment {
            id: added.id.clone(),
            app_slug: slug.clone(),
            agent: "triage".into(),
            user_id: Some("3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b".into()),
            title: "Call the customer back".into(),
            content: "About the delayed order 42, before Friday.".into(),
            due_at: Some(due),
            status: CommitmentStatus::Open,
            created_at: added.created_at,
            updated_at: added.created_at,
            closed_by: None,
        };
        assert_eq!(added, expected);
        assert_eq!(
            store.commitment(&t.tenant, &added.id).await.unwrap(),
            Some(expected)
        );

        let bare = store
            .add_commitment(&install, &promise("triage", "Follow up"))
            .await
            .unwrap();
        let read = store
            .commitment(&t.tenant, &bare.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (read.user_id, read.due_at, read.content),
            (None, None, String::new())
        );
    }
}

#[tokio::test]
async fn closing_a_commitment_records_who_and_reopening_forgets_them() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        let c = store
            .add_commitment(&install, &promise("triage", "Call back"))
            .await
            .unwrap();
        let set = async |status, user: &str| {
            let pending = store.set_commitment_status(&t.tenant, &c.id, status, user);
            pending.await.unwrap()
        };
        next_millisecond().await;
        let done = set(CommitmentStatus::Done, "user-2").await;
        assert_eq!(
            (done.status, done.closed_by.as_deref()),
            (CommitmentStatus::Done, Some("user-2"))
        );
        assert!(done.updated_at > c.updated_at);
        assert_eq!(
            (done.created_at, done.title.as_str()),
            (c.created_at, "Call back")
        );

        next_millisecond().await;
        let again = set(CommitmentStatus::Done, "user-3").await;
        assert_eq!(again, done, "setting the status it has changes nothing");

        let dismissed = set(CommitmentStatus::Dismissed, "user-3").await;
        assert_eq!(dismissed.status, CommitmentStatus::Dismissed);
        assert_eq!(dismissed.closed_by.as_deref(), Some("user-3"));
        let reopened = set(CommitmentStatus::Open, "user-4").await;
        assert_eq!(
            (reopened.status, reopened.closed_by),
            (CommitmentStatus::Open, None)
        );
    }
}

#[tokio::test]
async fn a_commitment_of_another_tenant_is_neither_seen_nor_changed() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        let c = store
            .add_commitment(&install, &promise("triage", "Call back"))
            .await
            .unwrap();
        for other in t.others() {
            assert_eq!(store.commitment(other, &c.id).await.unwrap(), None);
            assert!(
                titles(&store, other, CommitmentFilter::default())
                    .await
                    .is_empty()
            );
            let refused = store
                .set_commitment_status(other, &c.id, CommitmentStatus::Done, "user-9")
                .await;
            assert!(
                matches!(refused, Err(StoreError::NotFound(_))),
                "{refused:?}"
            );
        }
        let unknown = store
            .set_commitment_status(&t.tenant, "cmt_nope", CommitmentStatus::Done, "user-9")
            .await;
        assert!(
            matches!(unknown, Err(StoreError::NotFound(_))),
            "{unknown:?}"
        );
        assert_eq!(store.commitment(&t.tenant, &c.id).await.unwrap(), Some(c));
    }
}

#[tokio::test]
async fn commitments_are_listed_oldest_first_in_pages() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        for title in ["c1", "c2", "c3", "c4", "c5"] {
            store
                .add_commitment(&install, &promise("triage", title))
                .await
                .unwrap();
            next_millisecond().await;
        }
        let all = CommitmentFilter::default();
        let mut pages = Vec::new();
        let mut after: Option<(jiff::Timestamp, String)> = None;
        loop {
            let cursor = after.as_ref().map(|(at, id)| (*at, id.as_str()));
            let page = store
                .commitments_page(&t.tenant, &all, cursor, 2)
                .await
                .unwrap();
            let Some(last) = page.last() else { break };
            after = Some((last.created_at, last.id.clone()));
            let titles: Vec<&str> = page.iter().map(|c| c.title.as_str()).collect();
            pages.push(titles.join(" "));
        }
        assert_eq!(pages, ["c1 c2", "c3 c4", "c5"]);
    }
}

#[tokio::test]
async fn commitment_lists_filter_by_app_agent_and_status() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let helpdesk = register_app(&store, "helpdesk").await;
        let billing = register_app(&store, "billing").await;
        let desk = activate_app(&store, &t.tenant, &helpdesk, &[]).await;
        let bills = activate_app(&store, &t.tenant, &billing, &[]).await;
        for (install, agent, title) in [
            (&desk, "triage", "desk triage"),
            (&desk, "scout", "desk scout"),
            (&bills, "triage", "bills triage"),
        ] {
            store
                .add_commitment(install, &promise(agent, title))
                .await
                .unwrap();
            next_millisecond().await;
        }
        let none = CommitmentFilter::default();
        let all = titles(&store, &t.tenant, none).await;
        assert_eq!(all, ["desk triage", "desk scout", "bills triage"]);
        let page = store.commitments_page(&t.tenant, &none, None, 10).await;
        let scout = page.unwrap().remove(1);
        store
            .set_commitment_status(&t.tenant, &scout.id, CommitmentStatus::Done, "user-2")
            .await
            .unwrap();

        let of_desk = CommitmentFilter {
            app_slug: Some(helpdesk.as_str()),
            ..none
        };
        assert_eq!(
            titles(&store, &t.tenant, of_desk).await,
            ["desk triage", "desk scout"]
        );
        let triage = CommitmentFilter {
            agent: Some("triage"),
            ..none
        };
        assert_eq!(
            titles(&store, &t.tenant, triage).await,
            ["desk triage", "bills triage"]
        );
        let bills_triage = CommitmentFilter {
            app_slug: Some(billing.as_str()),
            ..triage
        };
        assert_eq!(
            titles(&store, &t.tenant, bills_triage).await,
            ["bills triage"]
        );
        let done = CommitmentFilter {
            status: Some(CommitmentStatus::Done),
            ..none
        };
        assert_eq!(titles(&store, &t.tenant, done).await, ["desk scout"]);
        let open = CommitmentFilter {
            status: Some(CommitmentStatus::Open),
            ..none
        };
        assert_eq!(
            titles(&store, &t.tenant, open).await,
            ["desk triage", "bills triage"]
        );
        let dismissed_at_desk = CommitmentFilter {
            status: Some(CommitmentStatus::Dismissed),
            ..of_desk
        };
        assert!(
            titles(&store, &t.tenant, dismissed_at_desk)
                .await
                .is_empty()
        );
    }
}

#[tokio::test]
async fn a_commitment_needs_the_install_and_goes_with_it() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let missing = t.neighbour.install(&slug);
        let refused = store
            .add_commitment(&missing, &promise("triage", "x"))
            .await;
        assert!(refused.is_err(), "no install: {refused:?}");
        assert!(
            titles(&store, &t.neighbour, CommitmentFilter::default())
                .await
                .is_empty()
        );

        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        let kept = store
            .add_commitment(&install, &promise("triage", "Call back"))
            .await
            .unwrap();
        store.remove_install(&install).await.unwrap();
        assert_eq!(store.commitment(&t.tenant, &kept.id).await.unwrap(), None);
    }
}

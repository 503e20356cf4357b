//! The audit log of cross-app calls: every field kept, entries listed newest first in pages
//! that neither skip nor repeat (entries recorded together share one time), filtered by
//! kind, caller, callee and outcome, and kept to their tenant.

use atrium_store::{AuditEntry, AuditFilter, NewAuditEntry, Store, TenantKey};

use super::{next_millisecond, stores, tenants};

fn entry<'a>(
    kind: &'a str,
    caller_app: &'a str,
    callee_app: &'a str,
    target: &'a str,
    outcome: &'a str,
) -> NewAuditEntry<'a> {
    NewAuditEntry {
        kind,
        caller_app,
        caller_agent: None,
        callee_app,
        target,
        outcome,
        reason: None,
        duration_ms: 12,
        chain_depth: 1,
        visited_agents: &[],
    }
}

/// Every entry of `tenant` that `filter` matches, read in pages of `size`.
async fn read_all(
    store: &Store,
    tenant: &TenantKey,
    filter: &AuditFilter<'_>,
    size: i64,
) -> Vec<AuditEntry> {
    let mut seen: Vec<AuditEntry> = Vec::new();
    loop {
        let after = seen.last().map(|e| (e.created_at, e.id.as_str()));
        let page = store.audit_page(tenant, filter, after, size).await.unwrap();
        assert!(page.len() <= usize::try_from(size).unwrap());
        if page.is_empty() {
            return seen;
        }
        seen.extend(page);
    }
}

#[tokio::test]
async fn an_audit_entry_keeps_every_field() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let visited = vec!["crm/triage".to_owned(), "mail/send".to_owned()];
        let reason = "agent not allowed: `send` is not among the grant's allowed agents (draft)";
        let full = NewAuditEntry {
            caller_agent: Some("triage"),
            reason: Some(reason),
            duration_ms: 37,
            chain_depth: 2,
            visited_agents: &visited,
            ..entry("invoke", "crm", "mail", "send", "refused")
        };
        store.record_audit(&t.tenant, &full).await.unwrap();
        next_millisecond().await;
        let bare = entry("fetch", "crm", "shop", "GET /orders", "ok");
        store.record_audit(&t.tenant, &bare).await.unwrap();

        let all = AuditFilter::default();
        let listed = store.audit_page(&t.tenant, &all, None, 10).await.unwrap();
        let [newest, oldest] = &listed[..] else {
            panic!("{listed:?}");
        };
        assert!(oldest.id.starts_with("aud_") && newest.id != oldest.id);
        assert!(newest.created_at > oldest.created_at, "newest first");
        let expected = AuditEntry {
            id: oldest.id.clone(),
            kind: "invoke".into(),
            caller_app: "crm".into(),
            caller_agent: Some("triage".into()),
            callee_app: "mail".into(),
            target: "send".into(),
            outcome: "refused".into(),
            reason: Some(reason.into()),
            duration_ms: 37,
            chain_depth: 2,
            visited_agents: visited.clone(),
            created_at: oldest.created_at,
        };
        assert_eq!(oldest, &expected);
        let expected = AuditEntry {
            id: newest.id.clone(),
            kind: "fetch".into(),
            callee_app: "shop".into(),
            target: "GET /orders".into(),
            outcome: "ok".into(),
            caller_agent: None,
            reason: None,
            duration_ms: 12,
            chain_depth: 1,
            visited_agents: Vec::new(),
            created_at: newest.created_at,
            ..expected
        };
        assert_eq!(newest, &expected);
    }
}

#[tokio::test]
async fn audit_entries_are_listed_newest_first_in_pages_without_gaps() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        for i in 0..5 {
            let target = format!("agent-{i}");
            let call = entry("invoke", "crm", "mail", &target, "ok");
            store.record_audit(&t.tenant, &call).await.unwrap();
            next_millisecond().await;
        }
        let all = AuditFilter::default();
        let first = store.audit_page(&t.tenant, &all, None, 2).await.unwrap();
        let targets: Vec<&str> = first.iter().map(|e| e.target.as_str()).collect();
        assert_eq!(targets, ["agent-4", "agent-3"]);
        let seen = read_all(&store, &t.tenant, &all, 2).await;
        let targets: Vec<&str> = seen.iter().map(|e| e.target.as_str()).collect();
        assert_eq!(
            targets,
            ["agent-4", "agent-3", "agent-2", "agent-1", "agent-0"]
        );
    }
}

#[tokio::test]
async fn entries_recorded_together_share_one_time_and_still_page_exactly() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let targets = [
            "order.placed -> sync",
            "order.placed -> notify",
            "order.placed -> heartbeat triage:digest",
        ];
        let batch: Vec<_> = targets
            .iter()
            .map(|target| entry("event", "shop", "crm", target, "ok"))
            .collect();
        store.record_audits(&t.tenant, &batch).await.unwrap();
        store.record_audits(&t.tenant, &[]).await.unwrap();

        let all = AuditFilter::default();
        let listed = store.audit_page(&t.tenant, &all, None, 10).await.unwrap();
        assert_eq!(listed.len(), 3, "an empty batch records nothing");
        assert!(
            listed
                .windows(2)
                .all(|w| w[0].created_at == w[1].created_at && w[0].id > w[1].id),
            "one time, then by id: {listed:?}"
        );
        let paged = read_all(&store, &t.tenant, &all, 1).await;
        assert_eq!(paged, listed, "pages of one across one instant");
    }
}

#[tokio::test]
async fn audit_filters_match_kind_caller_callee_and_outcome() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let calls = [
            entry("invoke", "crm", "mail", "send", "ok"),
            entry("fetch", "crm", "shop", "GET /orders", "refused"),
            entry("event", "shop", "crm", "order.placed -> sync", "ok"),
            entry("delegate", "crm", "mail", "draft", "failed"),
        ];
        store.record_audits(&t.tenant, &calls).await.unwrap();
        let targets = async |filter: AuditFilter<'_>| {
            let mut found: Vec<String> = read_all(&store, &t.tenant, &filter, 10)
                .await
                .into_iter()
                .map(|e| e.target)
                .collect();
            found.sort();
            found
        };
        let none = AuditFilter::default();
        let kind = AuditFilter {
            kind: Some("invoke"),
            ..none
        };
        assert_eq!(targets(kind).await, ["send"]);
        let by_crm = AuditFilter {
            caller_app: Some("crm"),
            ..none
        };
        assert_eq!(targets(by_crm).await, ["GET /orders", "draft", "send"]);
        let to_mail = AuditFilter {
            callee_app: Some("mail"),
            ..none
        };
        assert_eq!(targets(to_mail).await, ["draft", "send"]);
        let ok = AuditFilter {
            outcome: Some("ok"),
            ..none
        };
        assert_eq!(targets(ok).await, ["order.placed -> sync", "send"]);
        let failed_by_crm = AuditFilter {
            outcome: Some("failed"),
            ..by_crm
        };
        assert_eq!(targets(failed_by_crm).await, ["draft"]);
        let fetched_from_crm = AuditFilter {
            kind: Some("fetch"),
            callee_app: Some("crm"),
            ..none
        };
        assert!(targets(fetched_from_crm).await.is_empty());
    }
}

#[tokio::test]
async fn the_audit_log_stays_in_its_tenant() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let ours = entry("invoke", "crm", "mail", "send", "ok");
        store.record_audit(&t.tenant, &ours).await.unwrap();
        let all = AuditFilter::default();
        for other in t.others() {
            assert!(read_all(&store, other, &all, 10).await.is_empty());
        }
        let theirs = entry("invoke", "crm", "mail", "archive", "ok");
        store.record_audit(&t.neighbour, &theirs).await.unwrap();
        let mine = read_all(&store, &t.tenant, &all, 10).await;
        assert_eq!(
            mine.iter().map(|e| e.target.as_str()).collect::<Vec<_>>(),
            ["send"]
        );
        let neighbours = read_all(&store, &t.neighbour, &all, 10).await;
        assert_eq!(neighbours.len(), 1);
        assert!(read_all(&store, &t.stranger, &all, 10).await.is_empty());
    }
}

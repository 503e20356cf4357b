//! Conversations: messages numbered from 1 in the order they were stored and read back so,
//! the agent a conversation is with now, a user's conversations newest first, the latest
//! user-facing conversation with an agent, and nothing of them seen from another tenant.

use atrium_store::{Conversation, NewMessage, Store, StoreError, StoredMessage, TenantKey};
use serde_json::{Map, Value, json};

use super::{next_millisecond, stores, tenants};

const ADA: &str = "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b";
const BEA: &str = "5c7d2e0f-1a3b-4e8b-9a61-3f2b9c1e0d4a";

fn message(kind: &'static str, content: &str) -> NewMessage {
    NewMessage {
        kind,
        content: content.to_owned(),
        app_slug: None,
        agent: None,
        data: Map::new(),
    }
}

/// The contents of the messages read.
fn contents(read: Result<Vec<StoredMessage>, StoreError>) -> Vec<String> {
    read.unwrap().into_iter().map(|m| m.content).collect()
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

/// A new conversation of `user` on the web.
async fn start(store: &Store, tenant: &TenantKey, user: &str, title: Option<&str>) -> Conversation {
    let started = store.create_conversation(tenant, user, "web", title).await;
    started.unwrap()
}

async fn append(
    store: &Store,
    tenant: &TenantKey,
    id: &str,
    messages: &[NewMessage],
    agent: Option<(&str, &str)>,
) -> Vec<StoredMessage> {
    let appended = store.append_messages(tenant, id, messages, agent).await;
    appended.unwrap()
}

async fn conversation(store: &Store, tenant: &TenantKey, id: &str) -> Conversation {
    store.conversation(tenant, id).await.unwrap().unwrap()
}

#[tokio::test]
async fn a_conversation_round_trips_and_is_with_the_agent_it_was_routed_to() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let c = start(&store, &t.tenant, ADA, Some("Orders")).await;
        assert!(c.id.starts_with("cnv_"), "{}", c.id);
        let expected = Conversation {
            id: c.id.clone(),
            user_id: ADA.into(),
            channel: "web".into(),
            title: Some("Orders".into()),
            app_slug: None,
            agent: None,
            messages: 0,
            created_at: c.created_at,
            updated_at: c.created_at,
        };
        assert_eq!(c, expected);
        assert_eq!(conversation(&store, &t.tenant, &c.id).await, c);

        let routing = NewMessage {
            app_slug: Some("crm".into()),
            agent: Some("triage".into()),
            data: object(json!({"reason": "asks about an order", "candidates": ["crm", "mail"]})),
            ..message("routing", "")
        };
        let pair = [message("user", "Where is order 42?"), routing];
        let stored = append(&store, &t.tenant, &c.id, &pair, Some(("crm", "triage"))).await;
        let expected: Vec<StoredMessage> = pair
            .iter()
            .zip(1..)
            .map(|(m, seq)| StoredMessage {
                seq,
                kind: m.kind.into(),
                content: m.content.clone(),
                app_slug: m.app_slug.clone(),
                agent: m.agent.clone(),
                data: m.data.clone(),
                created_at: stored[0].created_at,
            })
            .collect();
        assert_eq!(stored, expected);
        let read = store.conversation_messages(&t.tenant, &c.id, 0, 100).await;
        assert_eq!(read.unwrap(), stored);
        let after = conversation(&store, &t.tenant, &c.id).await;
        let with = Conversation {
            messages: 2,
            app_slug: Some("crm".into()),
            agent: Some("triage".into()),
            updated_at: after.updated_at,
            ..c.clone()
        };
        assert_eq!(after, with);
        assert!(after.updated_at >= c.updated_at);

        // Appended without an agent, the conversation stays with the one it has.
        let answer = [message("assistant", "It ships today.")];
        assert_eq!(
            append(&store, &t.tenant, &c.id, &answer, None).await[0].seq,
            3
        );
        let after = conversation(&store, &t.tenant, &c.id).await;
        assert_eq!(
            (after.messages, after.agent.as_deref()),
            (3, Some("triage"))
        );
    }
}

#[tokio::test]
async fn messages_are_numbered_in_order_and_read_in_pages() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let c = start(&store, &t.tenant, ADA, None).await;
        for i in 1..=5 {
            let one = [message("user", &format!("m{i}"))];
            append(&store, &t.tenant, &c.id, &one, None).await;
        }
        let three = ["m6", "m7", "m8"].map(|content| message("user", content));
        let stored = append(&store, &t.tenant, &c.id, &three, None).await;
        assert_eq!(stored.iter().map(|m| m.seq).collect::<Vec<_>>(), [6, 7, 8]);
        let mut pages = Vec::new();
        let mut after = 0;
        loop {
            let page = store
                .conversation_messages(&t.tenant, &c.id, after, 3)
                .await;
            let page = page.unwrap();
            let Some(last) = page.last() else { break };
            after = last.seq;
            let texts: Vec<&str> = page.iter().map(|m| m.content.as_str()).collect();
            pages.push(texts.join(" "));
        }
        assert_eq!(pages, ["m1 m2 m3", "m4 m5 m6", "m7 m8"]);
    }
}

#[tokio::test]
async fn the_last_messages_are_those_of_the_kinds_asked_in_order() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let c = start(&store, &t.tenant, ADA, None).await;
        let history = [
            message("user", "q1"),
            message("routing", "r1"),
            message("assistant", "a1"),
            message("error", "e1"),
            message("user", "q2"),
            message("assistant", "a2"),
        ];
        append(&store, &t.tenant, &c.id, &history, None).await;
        let last = |kinds, count| store.last_conversation_messages(&t.tenant, &c.id, kinds, count);
        let asked: &[&str] = &["user", "assistant"];
        assert_eq!(contents(last(asked, 3).await), ["a1", "q2", "a2"]);
        assert_eq!(contents(last(asked, 10).await), ["q1", "a1", "q2", "a2"]);
        let others: &[&str] = &["routing", "error"];
        assert_eq!(contents(last(others, 10).await), ["r1", "e1"]);
        let none: &[&str] = &["heartbeat"];
        assert!(contents(last(none, 10).await).is_empty());
        let no_kind: &[&str] = &[];
        assert!(
            contents(last(no_kind, 10).await).is_empty(),
            "no kind asked"
        );
    }
}

#[tokio::test]
async fn conversations_stay_in_their_tenant() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let c = start(&store, &t.tenant, ADA, None).await;
        let pair = [message("user", "q"), message("assistant", "a")];
        append(&store, &t.tenant, &c.id, &pair, Some(("crm", "triage"))).await;
        for other in t.others() {
            assert_eq!(store.conversation(other, &c.id).await.unwrap(), None);
            let messages = store.conversation_messages(other, &c.id, 0, 100).await;
            assert!(messages.unwrap().is_empty());
            let last = store
                .last_conversation_messages(other, &c.id, &["user"], 10)
                .await;
            assert!(last.unwrap().is_empty());
            let page = store.conversations_page(other, ADA, None, 10).await;
            assert!(page.unwrap().is_empty());
            let latest = store.latest_conversation_with(other, "crm", "triage").await;
            assert_eq!(latest.unwrap(), None);
            let refused = store.append_messages(other, &c.id, &pair, None).await;
            assert!(
                matches!(refused, Err(StoreError::NotFound(_))),
                "{refused:?}"
            );
        }
        let unknown = store
            .append_messages(&t.tenant, "cnv_nope", &pair, None)
            .await;
        assert!(
            matches!(unknown, Err(StoreError::NotFound(_))),
            "{unknown:?}"
        );
        let ours = conversation(&store, &t.tenant, &c.id).await;
        assert_eq!(ours.messages, 2, "nothing was appended to it");

        // The same id in the neighbour is a conversation of its own.
        let theirs = store.ensure_conversation(&t.neighbour, &c.id, BEA, "web", None);
        let theirs = theirs.await.unwrap();
        assert_eq!((theirs.user_id.as_str(), theirs.messages), (BEA, 0));
    }
}

#[tokio::test]
async fn a_users_conversations_are_listed_newest_first_in_pages() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let mut adas = Vec::new();
        for title in ["one", "two", "three"] {
            adas.push(start(&store, &t.tenant, ADA, Some(title)).await.id);
            next_millisecond().await;
        }
        let bea = start(&store, &t.tenant, BEA, None).await;
        let page = async |user, after, limit| {
            let page = store
                .conversations_page(&t.tenant, user, after, limit)
                .await;
            page.unwrap()
        };
        let first = page(ADA, None, 2).await;
        let ids: Vec<&String> = first.iter().map(|c| &c.id).collect();
        assert_eq!(ids, [&adas[2], &adas[1]]);
        let second = page(ADA, Some((first[1].created_at, first[1].id.as_str())), 2).await;
        let ids: Vec<&String> = second.iter().map(|c| &c.id).collect();
        assert_eq!(ids, [&adas[0]]);
        let after = Some((second[0].created_at, second[0].id.as_str()));
        assert!(page(ADA, after, 2).await.is_empty());
        assert_eq!(page(BEA, None, 10).await, [bea]);
    }
}

#[tokio::test]
async fn ensuring_a_conversation_creates_it_once_and_keeps_it() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let (id, user) = ("cnv_thread_triage", "agent:crm/triage");
        let title = Some("Heartbeats of triage");
        let thread = store.ensure_conversation(&t.tenant, id, user, "heartbeat", title);
        let thread = thread.await.unwrap();
        assert_eq!((thread.id.as_str(), thread.user_id.as_str()), (id, user));
        let shown = (thread.channel.as_str(), thread.title.as_deref());
        assert_eq!((shown, thread.messages), (("heartbeat", title), 0));
        let tick = [message("heartbeat", "tick")];
        append(&store, &t.tenant, id, &tick, None).await;
        let again = store.ensure_conversation(&t.tenant, id, ADA, "web", Some("Other"));
        let again = again.await.unwrap();
        let kept = (
            again.user_id.as_str(),
            again.channel.as_str(),
            again.title.as_deref(),
        );
        assert_eq!(
            (kept, again.messages),
            ((user, "heartbeat", title), 1),
            "kept"
        );
    }
}

#[tokio::test]
async fn the_latest_conversation_with_an_agent_is_the_last_written_and_never_a_heartbeat_thread() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let latest = async |app, agent| {
            let found = store.latest_conversation_with(&t.tenant, app, agent).await;
            found.unwrap().map(|c| c.id)
        };
        let one = start(&store, &t.tenant, ADA, None).await;
        let two = start(&store, &t.tenant, BEA, None).await;
        assert_eq!(latest("crm", "triage").await, None, "none is with it yet");
        let say = |content| [message("user", content)];
        let triage = Some(("crm", "triage"));
        append(&store, &t.tenant, &one.id, &say("q"), triage).await;
        next_millisecond().await;
        append(&store, &t.tenant, &two.id, &say("q"), triage).await;
        assert_eq!(latest("crm", "triage").await.as_ref(), Some(&two.id));
        next_millisecond().await;
        append(&store, &t.tenant, &one.id, &say("again"), None).await;
        let last_written = latest("crm", "triage").await;
        assert_eq!(last_written.as_ref(), Some(&one.id), "written last");

        next_millisecond().await;
        let thread = "cnv_thread_triage";
        let ensured =
            store.ensure_conversation(&t.tenant, thread, "agent:crm/triage", "heartbeat", None);
        ensured.await.unwrap();
        append(
            &store,
            &t.tenant,
            thread,
            &[message("heartbeat", "tick")],
            triage,
        )
        .await;
        let not_thread = latest("crm", "triage").await;
        assert_eq!(
            not_thread.as_ref(),
            Some(&one.id),
            "never the heartbeat thread"
        );

        next_millisecond().await;
        append(
            &store,
            &t.tenant,
            &one.id,
            &say("mail"),
            Some(("mail", "send")),
        )
        .await;
        let moved_on = latest("crm", "triage").await;
        assert_eq!(
            moved_on.as_ref(),
            Some(&two.id),
            "one is with another agent now"
        );
        assert_eq!(latest("mail", "send").await, Some(one.id));
    }
}

//! An agent's memory: entries written with their data and read back newest first, by kind
//! and limit, for one agent of one install of one tenant only; gone with the install.

use atrium_store::{InstallKey, MemoryEntry, Store};
use serde_json::{Map, Value, json};

use super::{activate_app, next_millisecond, register_app, stores, tenants};

fn data(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

async fn contents(
    store: &Store,
    install: &InstallKey,
    agent: &str,
    kind: Option<&str>,
    limit: i64,
) -> Vec<String> {
    let entries = store.memories(install, agent, kind, limit).await.unwrap();
    entries.into_iter().map(|e| e.content).collect()
}

#[tokio::test]
async fn a_memory_entry_round_trips_with_its_data() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        let written = store
            .put_memory(
                &install,
                "triage",
                "observation",
                "Three tickets wait for an answer.",
                &data(json!({"heartbeat": "digest", "records": 3, "ids": ["t-1", "t-2"]})),
            )
            .await
            .unwrap();
        assert!(written.id.starts_with("mem_"), "{}", written.id);
        let expected = MemoryEntry {
            id: written.id.clone(),
            agent: "triage".into(),
            kind: "observation".into(),
            content: "Three tickets wait for an answer.".into(),
            data: data(json!({"heartbeat": "digest", "records": 3, "ids": ["t-1", "t-2"]})),
            created_at: written.created_at,
        };
        assert_eq!(written, expected);
        let read = store.memories(&install, "triage", None, 10).await.unwrap();
        assert_eq!(read, [expected]);

        let bare = store
            .put_memory(&install, "triage", "note", "", &Map::new())
            .await
            .unwrap();
        let read = store.memories(&install, "triage", Some("note"), 10).await;
        assert_eq!(read.unwrap(), [bare]);
    }
}

#[tokio::test]
async fn memory_entries_are_read_newest_first_by_kind_and_limit() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        for (kind, content) in [
            ("observation", "first"),
            ("decision", "second"),
            ("observation", "third"),
            ("observation", "fourth"),
        ] {
            store
                .put_memory(&install, "triage", kind, content, &Map::new())
                .await
                .unwrap();
            next_millisecond().await;
        }
        let all = contents(&store, &install, "triage", None, 10).await;
        assert_eq!(all, ["fourth", "third", "second", "first"]);
        let newest = contents(&store, &install, "triage", Some("observation"), 2).await;
        assert_eq!(newest, ["fourth", "third"]);
        let decisions = contents(&store, &install, "triage", Some("decision"), 10).await;
        assert_eq!(decisions, ["second"]);
        assert!(
            contents(&store, &install, "triage", Some("plan"), 10)
                .await
                .is_empty()
        );
        assert!(
            contents(&store, &install, "triage", None, 0)
                .await
                .is_empty()
        );
    }
}

#[tokio::test]
async fn memory_belongs_to_one_agent_of_one_install_of_one_tenant() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let helpdesk = register_app(&store, "helpdesk").await;
        let billing = register_app(&store, "billing").await;
        let ours = activate_app(&store, &t.tenant, &helpdesk, &[]).await;
        let other_app = activate_app(&store, &t.tenant, &billing, &[]).await;
        let neighbour = activate_app(&store, &t.neighbour, &helpdesk, &[]).await;
        let stranger = activate_app(&store, &t.stranger, &helpdesk, &[]).await;
        store
            .put_memory(&ours, "triage", "observation", "ours", &Map::new())
            .await
            .unwrap();
        for (install, agent) in [
            (&ours, "scout"),
            (&other_app, "triage"),
            (&neighbour, "triage"),
            (&stranger, "triage"),
        ] {
            assert!(
                contents(&store, install, agent, None, 10).await.is_empty(),
                "{install} {agent}"
            );
            let content = format!("{install} {agent}");
            store
                .put_memory(install, agent, "observation", &content, &Map::new())
                .await
                .unwrap();
            assert_eq!(contents(&store, install, agent, None, 10).await, [content]);
        }
        assert_eq!(contents(&store, &ours, "triage", None, 10).await, ["ours"]);
    }
}

#[tokio::test]
async fn memory_is_written_for_an_install_only_and_goes_with_it() {
    for (store, _dir) in stores().await {
        let t = tenants(&store).await;
        let slug = register_app(&store, "helpdesk").await;
        let missing = t.neighbour.install(&slug);
        let refused = store
            .put_memory(&missing, "triage", "observation", "x", &Map::new())
            .await;
        assert!(refused.is_err(), "no install: {refused:?}");
        assert!(
            contents(&store, &missing, "triage", None, 10)
                .await
                .is_empty()
        );

        let install = activate_app(&store, &t.tenant, &slug, &[]).await;
        store
            .put_memory(&install, "triage", "observation", "kept", &Map::new())
            .await
            .unwrap();
        store.remove_install(&install).await.unwrap();
        assert!(
            contents(&store, &install, "triage", None, 10)
                .await
                .is_empty()
        );
    }
}

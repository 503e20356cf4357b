//! Store writes cut off at every await point, on each backend: a write transaction whose
//! caller is dropped (a deadline, a client that disconnects) rolls back whole or ends
//! committed, and leaves no connection of the pool inside a transaction. Every connection then
//! takes a write at once: on SQLite a connection left inside `BEGIN IMMEDIATE` would keep the
//! write lock for ever (`database is locked`) and fail its own next `begin` (`attempted to
//! call begin_with at non-zero transaction depth`).

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use atrium_store::{NewMessage, Store, TenantKey};

use crate::{record, stores, unique};

/// Drops `make()`'s future at its first await point, a new one at its second, and so on,
/// until one completes; `check` runs after each cut. Answers the number of cuts.
async fn cut_everywhere<F: Future>(
    mut make: impl FnMut() -> F,
    mut check: impl AsyncFnMut(usize),
) -> usize {
    let mut at = 1;
    loop {
        // Boxed, so that the drop below drops the future itself, there and then.
        let mut future = Box::pin(make());
        let mut pending = 0;
        let completed = std::future::poll_fn(|cx| match future.as_mut().poll(cx) {
            Poll::Ready(_) => Poll::Ready(true),
            Poll::Pending => {
                pending += 1;
                if pending >= at {
                    Poll::Ready(false)
                } else {
                    Poll::Pending
                }
            }
        })
        .await;
        // Cut here, at its `at`th await point, unless it completed.
        drop(future);
        if completed {
            return at - 1;
        }
        check(at).await;
        at += 1;
    }
}

/// Every connection of the pool takes a write, many at once.
async fn every_connection_writes(store: &Store, after: &str) {
    let mut probes = tokio::task::JoinSet::new();
    for _ in 0..24 {
        let store = store.clone();
        probes.spawn(async move { store.probe_write().await });
    }
    let done = tokio::time::timeout(Duration::from_secs(60), probes.join_all())
        .await
        .unwrap_or_else(|_| panic!("{after}: the store takes no writes"));
    for result in done {
        result.unwrap_or_else(|e| panic!("{after}: a write failed: {e}"));
    }
}

/// Waits (at most 10 s) for `whole` to hold.
async fn settled(after: &str, mut whole: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if whole().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{after}: the store stays half-written");
}

#[tokio::test]
async fn a_write_cut_at_any_await_point_rolls_back_or_commits_whole_and_the_pool_writes_on() {
    for (store, _dir) in stores().await {
        let org = store
            .create_key(&unique("cut"), "ops")
            .await
            .unwrap()
            .org_id;
        let key = TenantKey::new(&org, "shop");
        let conversation = store
            .create_conversation(&key, "u1", "web", None)
            .await
            .unwrap();
        // Two messages in one transaction: either both are stored or neither.
        let pair = [
            NewMessage {
                kind: "user",
                content: "q".into(),
                app_slug: None,
                agent: None,
                data: serde_json::Map::new(),
            },
            NewMessage {
                kind: "assistant",
                content: "a".into(),
                app_slug: None,
                agent: None,
                data: serde_json::Map::new(),
            },
        ];
        let cuts = cut_everywhere(
            || store.append_messages(&key, &conversation.id, &pair, None),
            async |at| {
                every_connection_writes(&store, &format!("append cut at {at}")).await;
                // A write cut while committing may still be ending: the store must come to a
                // whole state, never stay in half of one.
                settled(&format!("append cut at {at}"), async || {
                    let messages = store
                        .conversation_messages(&key, &conversation.id, 0, 1000)
                        .await
                        .unwrap();
                    let counted = store
                        .conversation(&key, &conversation.id)
                        .await
                        .unwrap()
                        .unwrap();
                    messages.len() % 2 == 0
                        && usize::try_from(counted.messages).unwrap() == messages.len()
                })
                .await;
            },
        )
        .await;
        assert!(cuts >= 2, "{} cuts on {}", cuts, store.backend());

        // A batch of usage, the metering writer's transaction.
        let batch: Vec<_> = (0..20).map(|i| record(&org, "shop", i)).collect();
        cut_everywhere(
            || store.record_usage_batch(&batch),
            async |at| {
                every_connection_writes(&store, &format!("usage cut at {at}")).await;
                settled(&format!("usage cut at {at}"), async || {
                    store.usage(&org).await.unwrap().totals.calls % 20 == 0
                })
                .await;
            },
        )
        .await;
        every_connection_writes(&store, "the last cut").await;
    }
}

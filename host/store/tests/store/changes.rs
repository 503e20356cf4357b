//! The change feed between two handles on one database, as two hosts (or a host and a
//! command) hold them: a cache over one drops what a write through the other changed at its
//! next poll, and what a write through itself changed at once.

use atrium_store::TenantKey;
use atrium_store::{Affected, Cache, Change, KeyOwner, NewTenantToken, STALE_AFTER, TenantRole};

use super::{stores, unique};

/// Another handle on the database of a [`stores`] entry: its SQLite directory, or (`None`)
/// the test PostgreSQL, as another host or a command opens it.
async fn another_handle(dir: Option<&tempfile::TempDir>) -> atrium_store::Store {
    match dir {
        Some(dir) => atrium_store::Store::open_sqlite(dir.path()).await.unwrap(),
        None => atrium_store::Store::open_url(&std::env::var("ATRIUM_TEST_DATABASE_URL").unwrap())
            .await
            .unwrap(),
    }
}

/// A cache of key owners by key id, as a host keeps them.
fn key_cache(store: &atrium_store::Store) -> Cache<String, KeyOwner> {
    Cache::new(store, 100, |change| match change {
        Change::Key { key_id } => Affected::Key(key_id.clone()),
        _ => Affected::Nothing,
    })
}

#[tokio::test]
async fn caches_drop_what_other_handles_change_at_their_next_poll() {
    for (one, dir) in stores().await {
        let two = another_handle(dir.as_ref()).await;
        let org = unique("feed");
        let key = one.create_key(&org, "ci").await.unwrap();
        let owner = one.authenticate(&key.secret).await.unwrap().unwrap();
        let cache = key_cache(&one);

        // Before the first poll the feed is not fresh: nothing is answered from memory.
        cache.fill(key.id.clone(), owner.clone(), cache.epoch());
        assert_eq!(cache.get(&key.id), None);
        assert!(!one.changes_fresh());
        one.poll_changes().await.unwrap();
        assert!(one.changes_fresh());
        cache.fill(key.id.clone(), owner.clone(), cache.epoch());
        assert_eq!(cache.get(&key.id), Some(owner.clone()));

        // Revoked through the other handle: held here until this handle polls.
        two.revoke_key(&key.id).await.unwrap();
        assert_eq!(cache.get(&key.id), Some(owner.clone()));
        assert!(one.poll_changes().await.unwrap() >= 1);
        assert_eq!(cache.get(&key.id), None);

        // Revoked through this handle: dropped at once, before any poll.
        let second = one.create_key(&org, "laptop").await.unwrap();
        let second_owner = one.authenticate(&second.secret).await.unwrap().unwrap();
        cache.fill(second.id.clone(), second_owner, cache.epoch());
        assert!(cache.get(&second.id).is_some());
        one.revoke_key(&second.id).await.unwrap();
        assert_eq!(cache.get(&second.id), None);

        // A value read before a change and remembered after it is not kept.
        let third = one.create_key(&org, "build").await.unwrap();
        let read_at = cache.epoch();
        let third_owner = one.authenticate(&third.secret).await.unwrap().unwrap();
        two.revoke_key(&third.id).await.unwrap();
        one.poll_changes().await.unwrap();
        cache.fill(third.id.clone(), third_owner, read_at);
        assert_eq!(cache.get(&third.id), None);

        two.close().await;
        drop(dir);
    }
}

#[tokio::test]
async fn tenant_changes_reach_the_other_handle_and_stale_feeds_answer_nothing() {
    for (one, dir) in stores().await {
        let two = another_handle(dir.as_ref()).await;
        let org = one
            .create_key(&unique("feed-tenants"), "ci")
            .await
            .unwrap()
            .org_id;
        let new = NewTenantToken {
            role: TenantRole::User,
            user_id: None,
            display_name: Some("Ada"),
        };
        let created = one
            .create_tenant_token(&TenantKey::new(&org, "shop"), &new)
            .await
            .unwrap();
        let principal = one
            .authenticate_tenant_token(&created.secret)
            .await
            .unwrap()
            .unwrap();
        let cache: Cache<String, atrium_store::TenantPrincipal> =
            Cache::new(&one, 100, |change| match change.clone() {
                Change::TenantToken { token_id } => {
                    Affected::Matching(Box::new(move |p: &atrium_store::TenantPrincipal| {
                        p.token_id == token_id
                    }))
                }
                Change::TenantUser {
                    org_id,
                    tenant_id,
                    user_id,
                } => Affected::Matching(Box::new(move |p: &atrium_store::TenantPrincipal| {
                    (&p.org_id, &p.tenant_id, &p.user_id) == (&org_id, &tenant_id, &user_id)
                })),
                _ => Affected::Nothing,
            });
        one.poll_changes().await.unwrap();
        cache.fill(created.secret.clone(), principal.clone(), cache.epoch());
        assert_eq!(cache.get(&created.secret), Some(principal.clone()));

        // Renaming the user through the other handle (a new token with another display name)
        // reaches this cache at its next poll.
        let renamed = NewTenantToken {
            role: TenantRole::Admin,
            user_id: Some(&principal.user_id),
            display_name: Some("Ada L."),
        };
        two.create_tenant_token(&TenantKey::new(&org, "shop"), &renamed)
            .await
            .unwrap();
        one.poll_changes().await.unwrap();
        assert_eq!(cache.get(&created.secret), None);
        let principal = one
            .authenticate_tenant_token(&created.secret)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(principal.display_name, "Ada L.");
        cache.fill(created.secret.clone(), principal.clone(), cache.epoch());

        // Revoked through the other handle.
        two.revoke_tenant_token(&TenantKey::new(&org, "shop"), &principal.token_id)
            .await
            .unwrap();
        one.poll_changes().await.unwrap();
        assert_eq!(cache.get(&created.secret), None);

        // A feed whose last poll is older than STALE_AFTER answers nothing, and the next
        // poll drops everything held.
        let key = one.create_key(&unique("feed-stale"), "ci").await.unwrap();
        let owners = key_cache(&one);
        let owner = one.authenticate(&key.secret).await.unwrap().unwrap();
        one.poll_changes().await.unwrap();
        owners.fill(key.id.clone(), owner.clone(), owners.epoch());
        assert_eq!(owners.get(&key.id), Some(owner));
        tokio::time::sleep(STALE_AFTER + std::time::Duration::from_millis(50)).await;
        assert!(!one.changes_fresh());
        assert_eq!(owners.get(&key.id), None);
        one.poll_changes().await.unwrap();
        assert!(owners.is_empty());

        two.close().await;
        drop(dir);
    }
}

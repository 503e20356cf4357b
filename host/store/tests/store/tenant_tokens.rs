//! Tenant tokens: issued per tenant, authenticated by digest, scoped revocation.

use atrium_store::TenantKey;
use atrium_store::{NewTenantToken, StoreError, TenantRole};

use super::{stores, unique};

#[tokio::test]
async fn tenant_tokens_authenticate_until_revoked_and_stay_in_their_tenant() {
    for (store, _dir) in stores().await {
        let org = store.create_key(&unique("acme"), "k").await.unwrap().org_id;
        let other_org = store
            .create_key(&unique("umbrella"), "k")
            .await
            .unwrap()
            .org_id;

        let admin = store
            .create_tenant_token(
                &TenantKey::new(&org, "shop"),
                &NewTenantToken {
                    role: TenantRole::Admin,
                    user_id: None,
                    display_name: None,
                },
            )
            .await
            .unwrap();
        assert!(admin.user_created);
        assert!(
            admin.secret.starts_with("att_") && admin.secret.len() == 68,
            "{}",
            admin.secret
        );
        assert!(admin.token.id.starts_with("ttk_"), "{}", admin.token.id);
        assert_eq!(admin.token.prefix, admin.secret[..12]);
        assert_eq!(admin.token.display_name, "Admin");
        assert!(
            store
                .tenant(&TenantKey::new(&org, "shop"))
                .await
                .unwrap()
                .is_some(),
            "the tenant is created"
        );

        let principal = store
            .authenticate_tenant_token(&admin.secret)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(principal.token_id, admin.token.id);
        assert_eq!(
            (principal.org_id.as_str(), principal.tenant_id.as_str()),
            (org.as_str(), "shop")
        );
        assert_eq!(principal.role, TenantRole::Admin);
        assert_eq!(principal.user_id, admin.token.user_id);

        // A given user id (any case) is stored lower-cased; a second token for the same user
        // is not a new user, and a given display name renames them.
        let user_id = "3F2B9C1E-0D4A-4E8B-9A61-5C7D2E0F1A3B";
        let first = store
            .create_tenant_token(
                &TenantKey::new(&org, "shop"),
                &NewTenantToken {
                    role: TenantRole::User,
                    user_id: Some(user_id),
                    display_name: Some("Ada"),
                },
            )
            .await
            .unwrap();
        assert!(first.user_created);
        assert_eq!(first.token.user_id, user_id.to_ascii_lowercase());
        let second = store
            .create_tenant_token(
                &TenantKey::new(&org, "shop"),
                &NewTenantToken {
                    role: TenantRole::User,
                    user_id: Some(&user_id.to_ascii_lowercase()),
                    display_name: None,
                },
            )
            .await
            .unwrap();
        assert!(!second.user_created);
        assert_eq!(second.token.display_name, "Ada", "None keeps the name");
        let renamed = store
            .create_tenant_token(
                &TenantKey::new(&org, "shop"),
                &NewTenantToken {
                    role: TenantRole::User,
                    user_id: Some(user_id),
                    display_name: Some("Ada L."),
                },
            )
            .await
            .unwrap();
        assert!(!renamed.user_created);
        let principal = store
            .authenticate_tenant_token(&first.secret)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(principal.display_name, "Ada L.");
        assert_eq!(principal.role, TenantRole::User);

        // The same user id in another tenant is another user.
        let elsewhere = store
            .create_tenant_token(
                &TenantKey::new(&org, "warehouse"),
                &NewTenantToken {
                    role: TenantRole::User,
                    user_id: Some(user_id),
                    display_name: None,
                },
            )
            .await
            .unwrap();
        assert!(elsewhere.user_created);
        assert_eq!(elsewhere.token.display_name, "User");

        // Oldest first; tokens issued within the same millisecond are ordered by id.
        let listed = store
            .tenant_tokens(&TenantKey::new(&org, "shop"))
            .await
            .unwrap();
        let mut expected = [&admin.token, &first.token, &second.token, &renamed.token]
            .map(|t| (t.created_at, t.id.as_str()));
        expected.sort_unstable();
        assert_eq!(
            listed
                .iter()
                .map(|t| (t.created_at, t.id.as_str()))
                .collect::<Vec<_>>(),
            expected
        );
        assert_eq!(
            store
                .tenant_tokens(&TenantKey::new(&other_org, "shop"))
                .await
                .unwrap(),
            []
        );

        // Revocation is scoped to the organization and tenant of the token.
        for (o, t) in [(&other_org, "shop"), (&org, "warehouse")] {
            let refused = store
                .revoke_tenant_token(&TenantKey::new(o, t), &first.token.id)
                .await;
            assert!(
                matches!(refused, Err(StoreError::NotFound(_))),
                "{refused:?}"
            );
        }
        assert!(
            store
                .authenticate_tenant_token(&first.secret)
                .await
                .unwrap()
                .is_some()
        );
        let revoked = store
            .revoke_tenant_token(&TenantKey::new(&org, "shop"), &first.token.id)
            .await
            .unwrap();
        let at = revoked.revoked_at.unwrap();
        let again = store
            .revoke_tenant_token(&TenantKey::new(&org, "shop"), &first.token.id)
            .await
            .unwrap();
        assert_eq!(
            again.revoked_at,
            Some(at),
            "the first revocation time is kept"
        );
        assert_eq!(
            store
                .authenticate_tenant_token(&first.secret)
                .await
                .unwrap(),
            None
        );
        assert!(
            store
                .authenticate_tenant_token(&second.secret)
                .await
                .unwrap()
                .is_some(),
            "other tokens of the user keep working"
        );

        // Organization keys are not tenant tokens and the other way round.
        let key = store.create_key(&unique("acme"), "k").await.unwrap();
        assert_eq!(
            store.authenticate_tenant_token(&key.secret).await.unwrap(),
            None
        );
        assert_eq!(store.authenticate(&admin.secret).await.unwrap(), None);
        assert_eq!(
            store
                .authenticate_tenant_token(&format!("att_{}", "0".repeat(64)))
                .await
                .unwrap(),
            None
        );
    }
}

#[tokio::test]
async fn bad_tenant_token_input_writes_nothing() {
    for (store, _dir) in stores().await {
        let org = store.create_key(&unique("acme"), "k").await.unwrap().org_id;
        let cases = [
            (Some("not-a-uuid"), None, "user_id"),
            (Some("3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3"), None, "user_id"),
            (None, Some(""), "display_name"),
            (None, Some("a\u{7}b"), "display_name"),
        ];
        let long = "x".repeat(101);
        for (user_id, display_name, field) in
            cases
                .into_iter()
                .chain([(None, Some(long.as_str()), "display_name")])
        {
            let refused = store
                .create_tenant_token(
                    &TenantKey::new(&org, "shop"),
                    &NewTenantToken {
                        role: TenantRole::User,
                        user_id,
                        display_name,
                    },
                )
                .await;
            match refused {
                Err(StoreError::Invalid(message)) => {
                    assert!(message.contains(field), "{message}");
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(
            store
                .tenant(&TenantKey::new(&org, "shop"))
                .await
                .unwrap()
                .is_none()
        );
        let refused = store
            .create_tenant_token(
                &TenantKey::new(&org, ""),
                &NewTenantToken {
                    role: TenantRole::Admin,
                    user_id: None,
                    display_name: None,
                },
            )
            .await;
        assert!(
            matches!(refused, Err(StoreError::Invalid(_))),
            "{refused:?}"
        );
    }
}

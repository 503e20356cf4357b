//! The store on SQLite, and on PostgreSQL when `ATRIUM_TEST_DATABASE_URL` is set: every test
//! runs against each backend available.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod audit;
mod cancel;
mod changes;
mod commitments;
mod conversations;
mod grants;
mod heartbeats;
mod memory;
mod rooms;
mod tenant_tokens;
mod visions;
mod wires;

use atrium_store::TenantKey;
use atrium_store::{
    Activation, HeartbeatDecl, InstallKey, NewDeveloper, NewVersion, Store, StoreError,
    UpgradePolicy, UsageRecord,
};

/// The stores to test: a fresh SQLite file, and the test PostgreSQL database if configured.
/// Each test uses organization names of its own, so tests never see each other's data.
async fn stores() -> Vec<(Store, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let mut stores = vec![(Store::open_sqlite(dir.path()).await.unwrap(), Some(dir))];
    if let Ok(url) = std::env::var("ATRIUM_TEST_DATABASE_URL") {
        stores.push((
            Store::open_url(&url)
                .await
                .expect("the test PostgreSQL database opens"),
            None,
        ));
    }
    stores
}

fn unique(name: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}-{n}", std::process::id())
}

/// A tenant to test with, and the two that must see nothing of it: another tenant of its
/// organization, and the tenant of the same id in another organization. All three exist.
struct Tenants {
    tenant: TenantKey,
    neighbour: TenantKey,
    stranger: TenantKey,
}

impl Tenants {
    /// The neighbour and the stranger.
    fn others(&self) -> [&TenantKey; 2] {
        [&self.neighbour, &self.stranger]
    }
}

/// Two organizations of the test's own, with [`Tenants`] in them.
async fn tenants(store: &Store) -> Tenants {
    let org = store.create_key(&unique("acme"), "k").await.unwrap().org_id;
    let other = store
        .create_key(&unique("globex"), "k")
        .await
        .unwrap()
        .org_id;
    let tenants = Tenants {
        tenant: TenantKey::new(&org, "shop"),
        neighbour: TenantKey::new(&org, "warehouse"),
        stranger: TenantKey::new(&other, "shop"),
    };
    for key in [&tenants.tenant, &tenants.neighbour, &tenants.stranger] {
        store.ensure_tenant(key).await.unwrap();
    }
    tenants
}

/// Registers version 1.0.0 of an app of the test's own (apps are global to the host), by a
/// developer of its own; answers the app's slug.
async fn register_app(store: &Store, name: &str) -> String {
    let login = unique("dev");
    let email = format!("{login}@example.com");
    let developer = store
        .create_developer(&NewDeveloper {
            email: &email,
            login: &login,
            publish_allowed: true,
            dev_tenant: None,
        })
        .await
        .unwrap();
    let slug = unique(name);
    let image = format!("ghcr.io/acme/{slug}:1.0.0");
    store
        .register_version(&NewVersion {
            app_slug: &slug,
            version: "1.0.0",
            name,
            developer_id: &developer.id,
            manifest_source: "app_id: test",
            manifest_digest: "sha256:m",
            content_digest: "sha256:c",
            component: None,
            image: &image,
            templates: None,
            docs: &[],
            build_inputs: None,
        })
        .await
        .unwrap();
    slug
}

/// Activates version 1.0.0 of `slug` for `tenant` (by `user-1`), its agents declaring
/// `heartbeats`; answers the install's key. A test whose install holds rows a scheduler would
/// find due (heartbeats, visions) removes it at its end: the test PostgreSQL database outlives
/// the run, and other binaries' schedulers read it.
async fn activate_app(
    store: &Store,
    tenant: &TenantKey,
    slug: &str,
    heartbeats: &[HeartbeatDecl],
) -> InstallKey {
    let install = tenant.install(slug);
    let empty = serde_json::Map::new();
    store
        .activate(&Activation {
            install: &install,
            version: "1.0.0",
            granted_scopes: &[],
            settings: &empty,
            sealed_settings: &[],
            rag_bindings: &empty,
            upgrade_policy: UpgradePolicy::Manual,
            activated_by: Some("user-1"),
            grants: &[],
            templates: &[],
            heartbeats,
        })
        .await
        .unwrap();
    install
}

/// Waits until the store's clock (ms) has moved on, so that what is written next is later.
async fn next_millisecond() {
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
}

/// `n` milliseconds, to move a time by.
fn ms(n: i64) -> jiff::SignedDuration {
    jiff::SignedDuration::from_millis(n)
}

fn record(org: &str, tenant: &str, cost_micros: i64) -> UsageRecord {
    UsageRecord {
        org_id: org.to_owned(),
        tenant_id: tenant.to_owned(),
        kind: "chat".into(),
        provider: "mistral".into(),
        model: "mistral-small-latest".into(),
        prompt_tokens: 10,
        completion_tokens: 5,
        cost_micros,
        batch: false,
        app_slug: None,
        agent: None,
    }
}

#[tokio::test]
async fn keys_authenticate_until_revoked() {
    for (store, _dir) in stores().await {
        let org = unique("acme");
        let key = store.create_key(&org, "ci").await.unwrap();
        assert!(
            key.secret.starts_with("atr_") && key.secret.len() == 68,
            "{}",
            key.secret
        );
        let owner = store.authenticate(&key.secret).await.unwrap().unwrap();
        assert_eq!(
            (owner.key_id.as_str(), owner.org_id.as_str()),
            (key.id.as_str(), key.org_id.as_str())
        );

        let second = store.create_key(&org, "laptop").await.unwrap();
        assert_eq!(second.org_id, key.org_id, "one organization per name");
        let listed: Vec<_> = store
            .list_keys()
            .await
            .unwrap()
            .into_iter()
            .filter(|k| k.org_id == key.org_id)
            .collect();
        assert_eq!(listed.len(), 2);
        // Two keys made in the same millisecond list in the order of their random ids.
        let first = listed.iter().find(|k| k.id == key.id).unwrap();
        assert_eq!(first.prefix, key.secret[..12]);
        assert!(
            listed
                .iter()
                .all(|k| k.revoked_at.is_none() && k.org_name == org)
        );

        let revoked = store.revoke_key(&key.id).await.unwrap();
        let at = revoked.revoked_at.unwrap();
        assert_eq!(store.authenticate(&key.secret).await.unwrap(), None);
        assert_eq!(
            store.revoke_key(&key.id).await.unwrap().revoked_at,
            Some(at),
            "revoking twice keeps the first time"
        );
        assert!(store.authenticate(&second.secret).await.unwrap().is_some());

        assert!(matches!(
            store.revoke_key("key_nope").await,
            Err(StoreError::NotFound(_))
        ));
        assert_eq!(store.authenticate("atr_0000").await.unwrap(), None);
        assert_eq!(store.authenticate("Bearer x").await.unwrap(), None);
        assert!(matches!(
            store.create_key("", "x").await,
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(
            store.create_key(&org, "bad\nname").await,
            Err(StoreError::Invalid(_))
        ));
    }
}

#[tokio::test]
async fn secrets_are_never_stored_in_clear() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path()).await.unwrap();
    let key = store.create_key("acme", "ci").await.unwrap();
    store.close().await;
    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let haystack = String::from_utf8_lossy(&bytes);
    assert!(
        haystack.contains(&key.secret[..12]),
        "the prefix is kept to recognise the key"
    );
    assert!(
        !haystack.contains(&key.secret[12..]),
        "the secret must not be in the database files"
    );
}

#[tokio::test]
async fn tenants_are_created_on_first_use_and_registered_with_names() {
    for (store, _dir) in stores().await {
        let org = store.create_key(&unique("acme"), "k").await.unwrap().org_id;
        store
            .ensure_tenant(&TenantKey::new(&org, "t-1"))
            .await
            .unwrap();
        let t = store
            .tenant(&TenantKey::new(&org, "t-1"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!((t.name, t.external_id), (None, None));

        let t = store
            .register_tenant(&org, "t-1", Some("Beta GmbH"), Some("crm-42"))
            .await
            .unwrap();
        assert_eq!(
            (t.name.as_deref(), t.external_id.as_deref()),
            (Some("Beta GmbH"), Some("crm-42"))
        );
        // An update that leaves a field out keeps it.
        let t = store
            .register_tenant(&org, "t-1", Some("Beta AG"), None)
            .await
            .unwrap();
        assert_eq!(
            (t.name.as_deref(), t.external_id.as_deref()),
            (Some("Beta AG"), Some("crm-42"))
        );
        store
            .ensure_tenant(&TenantKey::new(&org, "t-1"))
            .await
            .unwrap();
        assert_eq!(
            store
                .tenant(&TenantKey::new(&org, "t-1"))
                .await
                .unwrap()
                .unwrap()
                .name
                .as_deref(),
            Some("Beta AG")
        );

        let other = store
            .create_key(&unique("globex"), "k")
            .await
            .unwrap()
            .org_id;
        assert_eq!(
            store.tenant(&TenantKey::new(&other, "t-1")).await.unwrap(),
            None,
            "organizations never share tenants"
        );
        assert!(matches!(
            store.ensure_tenant(&TenantKey::new(&org, "")).await,
            Err(StoreError::Invalid(_))
        ));
        assert!(matches!(
            store
                .ensure_tenant(&TenantKey::new(&org, "x".repeat(257)))
                .await,
            Err(StoreError::Invalid(_))
        ));
    }
}

#[tokio::test]
async fn usage_rolls_up_per_tenant_and_per_organization() {
    for (store, _dir) in stores().await {
        let org = store.create_key(&unique("acme"), "k").await.unwrap().org_id;
        store
            .register_tenant(&org, "idle", Some("Idle Ltd"), None)
            .await
            .unwrap();
        store
            .record_usage(&record(&org, "t-a", 1_500))
            .await
            .unwrap();
        store
            .record_usage(&record(&org, "t-a", 2_500))
            .await
            .unwrap();
        store
            .record_usage(&UsageRecord {
                batch: true,
                app_slug: None,
                agent: None,
                ..record(&org, "t-b", 750)
            })
            .await
            .unwrap();

        let usage = store.usage(&org).await.unwrap();
        assert_eq!(
            (
                usage.totals.tenants,
                usage.totals.calls,
                usage.totals.cost_micros
            ),
            (3, 3, 4_750)
        );
        let ids: Vec<&str> = usage
            .per_tenant
            .iter()
            .map(|t| t.tenant_id.as_str())
            .collect();
        assert_eq!(ids, ["idle", "t-a", "t-b"]);
        assert_eq!(usage.per_tenant[0].calls, 0);
        assert_eq!(usage.per_tenant[0].name.as_deref(), Some("Idle Ltd"));
        let a = &usage.per_tenant[1];
        assert_eq!(
            (a.calls, a.prompt_tokens, a.completion_tokens, a.cost_micros),
            (2, 20, 10, 4_000)
        );

        assert_eq!(
            store
                .tenant_usage(&TenantKey::new(&org, "t-b"))
                .await
                .unwrap()
                .unwrap()
                .cost_micros,
            750
        );
        assert_eq!(
            store
                .tenant_usage(&TenantKey::new(&org, "nobody"))
                .await
                .unwrap(),
            None
        );

        let other = store
            .create_key(&unique("globex"), "k")
            .await
            .unwrap()
            .org_id;
        let theirs = store.usage(&other).await.unwrap();
        assert_eq!((theirs.totals.tenants, theirs.totals.calls), (0, 0));
        assert_eq!(
            store
                .tenant_usage(&TenantKey::new(&other, "t-a"))
                .await
                .unwrap(),
            None
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_metering_stays_exact() {
    for (store, _dir) in stores().await {
        let org = store.create_key(&unique("acme"), "k").await.unwrap().org_id;
        let tasks: Vec<_> = (0..200i64)
            .map(|i| {
                let (store, org) = (store.clone(), org.clone());
                tokio::spawn(async move {
                    store
                        .record_usage(&record(&org, &format!("t-{}", i % 7), 1_000 + i))
                        .await
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let usage = store.usage(&org).await.unwrap();
        assert_eq!(usage.totals.calls, 200);
        assert_eq!(usage.totals.tenants, 7);
        assert_eq!(
            usage.totals.cost_micros,
            (0..200i64).map(|i| 1_000 + i).sum::<i64>()
        );
    }
}

#[tokio::test]
async fn data_survives_a_reopen_and_migrations_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_sqlite(dir.path()).await.unwrap();
    let key = store.create_key("acme", "ci").await.unwrap();
    store
        .record_usage(&record(&key.org_id, "t", 42))
        .await
        .unwrap();
    store.close().await;
    let again = Store::open_sqlite(dir.path()).await.unwrap();
    assert!(again.authenticate(&key.secret).await.unwrap().is_some());
    assert_eq!(
        again.usage(&key.org_id).await.unwrap().totals.cost_micros,
        42
    );
    assert_eq!(again.backend(), "sqlite");
}

#[tokio::test]
async fn bad_urls_are_refused_with_the_password_hidden() {
    let err = Store::open_url("mysql://root:hunter2@localhost/db")
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("unsupported database URL `mysql://root:***@localhost/db`"),
        "{err}"
    );
    let err = Store::open_url("postgres://nobody:hunter2@127.0.0.1:notaport/none")
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Open { .. }), "{err}");
    assert!(!err.to_string().contains("hunter2"), "{err}");
}

/// Registrations racing for one new app: exactly one developer owns it, and the same version
/// registered concurrently with the same content is stored once.
#[tokio::test]
async fn racing_registrations_leave_one_owner_and_one_version() {
    use atrium_store::{NewDeveloper, NewVersion, Registered};
    for (store, _dir) in stores().await {
        // Login names and slugs allow letters, digits and single hyphens.
        let digits: String = unique("race")
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        let suffix = &digits[digits.len() - 12..];
        let mut developers = Vec::new();
        for who in ["ada", "bob"] {
            let login = format!("{who}-{suffix}");
            let email = format!("{login}@example.com");
            let new = NewDeveloper {
                email: &email,
                login: &login,
                publish_allowed: true,
                dev_tenant: None,
            };
            developers.push(store.create_developer(&new).await.unwrap());
        }
        let slug = format!("race-{suffix}");
        let register = |developer: String, slug: String| {
            let store = store.clone();
            async move {
                store
                    .register_version(&NewVersion {
                        app_slug: &slug,
                        version: "1.0.0",
                        name: "Race",
                        developer_id: &developer,
                        manifest_source: "same",
                        manifest_digest: "sha256:m",
                        content_digest: "sha256:c",
                        component: None,
                        image: "ghcr.io/acme/race:1.0.0",
                        templates: None,
                        docs: &[],
                        build_inputs: None,
                    })
                    .await
            }
        };
        let runs: Vec<_> = (0..6)
            .map(|i| tokio::spawn(register(developers[i % 2].id.clone(), slug.clone())))
            .collect();
        let mut created = 0;
        let mut unchanged = 0;
        let mut forbidden = 0;
        for run in runs {
            match run.await.unwrap() {
                Ok(Registered::Created { app_created }) => {
                    assert!(app_created);
                    created += 1;
                }
                Ok(Registered::Unchanged) => unchanged += 1,
                Err(StoreError::Forbidden(_)) => forbidden += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(created, 1);
        assert_eq!(
            created + unchanged,
            3,
            "the owner's three registrations succeed"
        );
        assert_eq!(forbidden, 3, "the other developer's three are refused");
        assert_eq!(store.versions(&slug).await.unwrap().len(), 1);
    }
}

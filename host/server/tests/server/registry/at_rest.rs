//! Secrets at rest and in the logs: known app secrets, secret settings, tenant overrides and
//! tokens go through the API, then the SQLite files, the PostgreSQL tables, the artifact store
//! and every log record at the most verbose level are searched for their plaintext.

use std::path::Path;
use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use serde_json::json;

use super::{Body, Host, manifest, slug};
use crate::{stores, unique};

/// Every log record, at every level, of every target, as text.
#[derive(Clone, Default)]
struct Everything(Arc<Mutex<Vec<String>>>);

struct Fields<'s>(&'s mut String);

impl tracing::field::Visit for Fields<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Everything {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut line = format!("{} {}", event.metadata().target(), event.metadata().level());
        event.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push(line);
    }

    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut line = format!("span {}", attrs.metadata().name());
        attrs.record(&mut Fields(&mut line));
        self.0.lock().unwrap().push(line);
    }
}

/// The files under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Every row of every table of the PostgreSQL schema, as text.
async fn postgres_rows() -> String {
    let url = std::env::var("ATRIUM_TEST_DATABASE_URL").unwrap();
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(tables.len() > 10, "{tables:?}");
    let mut text = String::new();
    for table in tables {
        let rows: Vec<String> =
            sqlx::query_scalar(&format!("SELECT CAST(t AS text) FROM \"{table}\" t"))
                .fetch_all(&pool)
                .await
                .unwrap();
        for row in rows {
            text.push_str(&row);
            text.push('\n');
        }
    }
    pool.close().await;
    text
}

/// The records of the whole test process, every level of every target. A subscriber for this
/// thread alone would miss records whose callsites other tests' threads disabled first, so
/// this one is the process's default: the records of other tests come along, and only this
/// test's secrets are searched for.
fn everything() -> &'static Everything {
    static LOGS: std::sync::OnceLock<Everything> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let logs = Everything::default();
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(logs.clone()))
            .expect("no other test sets the process's subscriber");
        logs
    })
}

#[tokio::test]
async fn secrets_and_tokens_are_nowhere_in_plaintext_at_rest_or_in_the_logs() {
    let logs = everything();
    let mut every_plaintext = Vec::new();
    for (store, dir) in stores().await {
        let host = Host::start(&store).await;
        let (_, dev) = host.sign_up("keeper", true).await;
        let app = slug("keeper");
        let text = manifest(
            &app,
            "1.0.0",
            "install_settings:\n  - {id: api_key, type: secret, label: API key, required: true}\n",
        );
        let (status, body) = host
            .register(&app, &dev, &[("manifest", None, text.as_bytes())])
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, body) = host
            .post(
                &format!("/api/dev/apps/{app}/versions/1.0.0/promote"),
                &dev,
                Body::None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");

        let app_secret = format!("app-secret-{}", unique("plain"));
        let setting_secret = format!("setting-secret-{}", unique("plain"));
        let override_secret = format!("override-secret-{}", unique("plain"));
        let (status, body) = host
            .put(
                &format!("/api/dev/apps/{app}/secrets/STRIPE_KEY"),
                &dev,
                Body::Json(json!({"value": app_secret})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");

        let key = store.create_key(&unique("acme"), "ops").await.unwrap();
        let (status, body) = host
            .post(
                "/api/tenants/shop/tokens",
                &key.secret,
                Body::Json(json!({"role": "admin"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let admin = body["token"].as_str().unwrap().to_owned();
        let (status, body) = host
            .post(
                &format!("/api/installs/{app}/activate"),
                &admin,
                Body::Json(json!({"settings": {"api_key": setting_secret}})),
            )
            .await;
        assert!(status.is_success(), "{body}");
        assert_eq!(body["secret_settings"], json!(["api_key"]));
        let (status, body) = host
            .put(
                &format!("/api/installs/{app}/secrets/STRIPE_KEY"),
                &admin,
                Body::Json(json!({"value": override_secret})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        // An integration's configuration (credentials, the docs say) is sealed like a secret;
        // the listing names its fields only.
        let integration_secret = format!("integration-secret-{}", unique("plain"));
        let (status, body) = host
            .put(
                "/api/integrations/crm",
                &admin,
                Body::Json(json!({"config": {"api_token": integration_secret}})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let (status, body) = host.get("/api/integrations", &admin).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["integrations"],
            json!([{"provider": "crm", "fields": ["api_token"]}])
        );
        // Every credential is used once more, so that it passes through the checks too.
        for (token, path) in [
            (dev.as_str(), format!("/api/dev/apps/{app}")),
            (key.secret.as_str(), "/v1/usage".to_owned()),
            (admin.as_str(), "/api/installs".to_owned()),
        ] {
            let (status, body) = host.get(&path, token).await;
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
        }

        let plaintexts = [
            ("the app secret", app_secret.as_str()),
            ("the secret setting", setting_secret.as_str()),
            ("the tenant's override", override_secret.as_str()),
            (
                "the integration's configuration",
                integration_secret.as_str(),
            ),
            ("the organization key", key.secret.as_str()),
            ("the tenant token", admin.as_str()),
            ("the developer token", dev.as_str()),
        ];
        every_plaintext.extend(plaintexts.iter().map(|(what, p)| (*what, (*p).to_owned())));
        // The database: SQLite's files (the database, its WAL), or every PostgreSQL row.
        match &dir {
            Some(dir) => {
                let files = files_under(dir.path());
                assert!(files.iter().any(|f| f.ends_with("atrium.db")), "{files:?}");
                for file in files {
                    let bytes = std::fs::read(&file).unwrap();
                    for (what, plain) in plaintexts {
                        assert!(!holds(&bytes, plain), "{} holds {what}", file.display());
                    }
                }
            }
            None => {
                let rows = postgres_rows().await;
                // The rows are there, sealed or hashed: the search is not of an empty dump.
                assert!(rows.contains(&app), "the dump holds the app");
                for (what, plain) in plaintexts {
                    assert!(!rows.contains(plain), "a PostgreSQL row holds {what}");
                }
            }
        }
        // The host's data directory: artifacts, keys, retrieval.
        for file in files_under(host.data()) {
            let bytes = std::fs::read(&file).unwrap();
            for (what, plain) in plaintexts {
                assert!(!holds(&bytes, plain), "{} holds {what}", file.display());
            }
        }
        host.stop().await;
    }
    let lines = logs.0.lock().unwrap().clone();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("/api/installs") && l.contains("status=200")),
        "the requests were logged: {} records",
        lines.len()
    );
    for line in &lines {
        for (what, plain) in &every_plaintext {
            assert!(
                !line.contains(plain.as_str()),
                "a log record holds {what}: {line}"
            );
        }
    }
}

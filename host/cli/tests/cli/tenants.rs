//! `atrium tenants tokens`, on SQLite and (when `ATRIUM_TEST_DATABASE_URL` is set) PostgreSQL.

use std::path::Path;
use std::process::Output;

use atrium_store::Store;

use crate::{command, stderr, stdout};

/// The stores to run against: `None` is SQLite in the data directory.
fn databases() -> Vec<Option<String>> {
    let mut databases = vec![None];
    if let Ok(url) = std::env::var("ATRIUM_TEST_DATABASE_URL") {
        databases.push(Some(url));
    }
    databases
}

fn unique(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{name}-{}-{nanos}", std::process::id())
}

struct Atrium<'a> {
    dir: &'a Path,
    data: String,
    database: Option<&'a str>,
}

impl Atrium<'_> {
    fn run(&self, args: &[&str]) -> Output {
        let mut command = command(self.dir, args);
        // The first command of a test makes the store.
        command.args(["--data-dir", &self.data, "--create"]);
        if let Some(url) = self.database {
            command.env("ATRIUM_DATABASE_URL", url);
        }
        command.output().expect("run atrium")
    }

    /// Whether `secret` authenticates as a tenant token in the store the commands use.
    fn authenticates(&self, secret: &str) -> bool {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let store = match self.database {
                Some(url) => Store::open_url(url).await.unwrap(),
                None => Store::open_sqlite(Path::new(&self.data)).await.unwrap(),
            };
            let found = store.authenticate_tenant_token(secret).await.unwrap();
            store.close().await;
            found.is_some()
        })
    }
}

fn last_line(out: &Output) -> String {
    stdout(out).lines().last().unwrap_or_default().to_owned()
}

#[test]
fn tenant_tokens_are_created_listed_and_revoked() {
    for database in databases() {
        let dir = tempfile::tempdir().unwrap();
        let atrium = Atrium {
            dir: dir.path(),
            data: dir.path().join("data").to_str().unwrap().to_owned(),
            database: database.as_deref(),
        };
        let org = unique("acme");
        let key = atrium.run(&["keys", "create", "--org", &org]);
        assert_eq!(key.status.code(), Some(0), "{}", stderr(&key));
        let keys: serde_json::Value =
            serde_json::from_str(&stdout(&atrium.run(&["keys", "list", "--json"]))).unwrap();
        let org_id = keys
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["organization"] == org.as_str())
            .unwrap()["org_id"]
            .as_str()
            .unwrap()
            .to_owned();

        let admin = atrium.run(&[
            "tenants", "tokens", "create", "--org", &org, "--tenant", "shop", "--role", "admin",
        ]);
        assert_eq!(admin.status.code(), Some(0), "{}", stderr(&admin));
        let admin_secret = last_line(&admin);
        assert!(
            admin_secret.starts_with("att_") && admin_secret.len() == 68,
            "the last line is the token alone: {}",
            stdout(&admin)
        );
        // The organization by id works as by name.
        let user = atrium.run(&[
            "tenants",
            "tokens",
            "create",
            "--org",
            &org_id,
            "--tenant",
            "shop",
            "--role",
            "user",
            "--user-id",
            "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b",
            "--display-name",
            "Ada",
        ]);
        assert_eq!(user.status.code(), Some(0), "{}", stderr(&user));
        let user_secret = last_line(&user);
        assert!(stdout(&user).contains("a new user"), "{}", stdout(&user));
        assert!(atrium.authenticates(&admin_secret) && atrium.authenticates(&user_secret));

        let list = [
            "tenants", "tokens", "list", "--org", &org, "--tenant", "shop",
        ];
        let listed = atrium.run(&[&list[..], &["--json"]].concat());
        assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
        let tokens: serde_json::Value = serde_json::from_str(&stdout(&listed)).unwrap();
        let tokens = tokens.as_array().unwrap();
        assert_eq!(tokens.len(), 2, "{tokens:?}");
        assert_eq!(tokens[0]["role"], "admin");
        assert_eq!(tokens[0]["display_name"], "Admin");
        assert_eq!(tokens[1]["role"], "user");
        assert_eq!(tokens[1]["user_id"], "3f2b9c1e-0d4a-4e8b-9a61-5c7d2e0f1a3b");
        assert_eq!(tokens[1]["display_name"], "Ada");
        assert_eq!(tokens[0]["prefix"], admin_secret[..12]);
        for secret in [&admin_secret, &user_secret] {
            assert!(
                !stdout(&listed).contains(&secret[12..]),
                "list never shows a secret"
            );
        }

        let user_id = tokens[1]["id"].as_str().unwrap();
        let elsewhere = atrium.run(&[
            "tenants",
            "tokens",
            "revoke",
            "--org",
            &org,
            "--tenant",
            "warehouse",
            user_id,
        ]);
        assert_eq!(elsewhere.status.code(), Some(1), "{}", stderr(&elsewhere));
        assert!(
            stderr(&elsewhere).contains("has no token"),
            "{}",
            stderr(&elsewhere)
        );
        let revoked = atrium.run(&[
            "tenants", "tokens", "revoke", "--org", &org, "--tenant", "shop", user_id,
        ]);
        assert_eq!(revoked.status.code(), Some(0), "{}", stderr(&revoked));
        assert!(!atrium.authenticates(&user_secret));
        assert!(atrium.authenticates(&admin_secret));
        let table = atrium.run(&list);
        assert_eq!(table.status.code(), Some(0), "{}", stderr(&table));
        let text = stdout(&table);
        assert!(
            text.contains("revoked") && text.contains("active"),
            "{text}"
        );
    }
}

#[test]
fn bad_input_exits_1_and_an_unusable_store_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let atrium = Atrium {
        dir: dir.path(),
        data: dir.path().join("data").to_str().unwrap().to_owned(),
        database: None,
    };
    let key = atrium.run(&["keys", "create", "--org", "acme"]);
    assert_eq!(key.status.code(), Some(0), "{}", stderr(&key));
    let create = [
        "tenants", "tokens", "create", "--org", "acme", "--tenant", "shop",
    ];
    for (args, says) in [
        (
            vec![
                "tenants", "tokens", "create", "--org", "nope", "--tenant", "shop", "--role",
                "user",
            ],
            "there is no organization `nope`",
        ),
        (
            [&create[..], &["--role", "owner"]].concat(),
            "invalid value 'owner'",
        ),
        (create.to_vec(), "--role <ROLE>"),
        (
            [&create[..], &["--role", "user", "--user-id", "ada"]].concat(),
            "user_id must be a UUID",
        ),
        (
            [&create[..], &["--role", "user", "--display-name", ""]].concat(),
            "display_name must be 1 to 100 characters",
        ),
        (
            vec![
                "tenants", "tokens", "list", "--org", "acme", "--tenant", "nowhere",
            ],
            "has no tenant `nowhere`",
        ),
        (
            vec![
                "tenants", "tokens", "revoke", "--org", "acme", "--tenant", "shop", "ttk_nope",
            ],
            "has no token with id `ttk_nope`",
        ),
    ] {
        let out = atrium.run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }

    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let unusable = Atrium {
        dir: dir.path(),
        data: file.to_str().unwrap().to_owned(),
        database: None,
    }
    .run(&[
        "tenants", "tokens", "list", "--org", "acme", "--tenant", "shop",
    ]);
    assert_eq!(unusable.status.code(), Some(2), "{}", stderr(&unusable));
    assert!(
        stderr(&unusable).contains("cannot open the database"),
        "{}",
        stderr(&unusable)
    );
}

//! `atrium keys`, and how the administration commands choose their store.

use std::path::Path;

use crate::{Serve, atrium, command, stderr, stdout};

#[test]
fn create_list_and_revoke() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let created = atrium(
        dir.path(),
        &[
            "keys",
            "create",
            "--name",
            "ci",
            "--data-dir",
            data,
            "--create",
        ],
    );
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));
    assert!(
        stderr(&created).contains(&format!("store: {data}/atrium.db (new, --create)")),
        "{}",
        stderr(&created)
    );
    let out = stdout(&created);
    let secret = out.lines().last().unwrap();
    assert!(
        secret.starts_with("atr_") && secret.len() == 68,
        "the last line is the key alone: {out}"
    );

    let listed = atrium(dir.path(), &["keys", "list", "--json", "--data-dir", data]);
    let keys: serde_json::Value = serde_json::from_str(&stdout(&listed)).unwrap();
    assert_eq!(keys[0]["name"], "ci");
    assert_eq!(keys[0]["organization"], "default");
    assert!(keys[0]["revoked_at"].is_null());
    assert!(
        !stdout(&listed).contains(&secret[12..]),
        "list never shows a secret"
    );

    let id = keys[0]["id"].as_str().unwrap();
    let revoked = atrium(dir.path(), &["keys", "revoke", id, "--data-dir", data]);
    assert_eq!(revoked.status.code(), Some(0), "{}", stderr(&revoked));
    let listed = atrium(dir.path(), &["keys", "list", "--data-dir", data]);
    assert!(stdout(&listed).contains("revoked"), "{}", stdout(&listed));
}

#[test]
fn bad_input_exits_1_and_an_unusable_store_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let unknown = atrium(
        dir.path(),
        &["keys", "revoke", "key_nope", "--data-dir", data, "--create"],
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("there is no key with id `key_nope`"));
    let empty = atrium(
        dir.path(),
        &["keys", "create", "--name", "", "--data-dir", data],
    );
    assert_eq!(empty.status.code(), Some(1));

    // A data directory without a store is refused unless --create: nothing is made there.
    let elsewhere = dir.path().join("elsewhere");
    let refused = atrium(
        dir.path(),
        &["keys", "list", "--data-dir", elsewhere.to_str().unwrap()],
    );
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--create"),
        "{}",
        stderr(&refused)
    );
    assert!(!elsewhere.exists());

    // A store that is not a database.
    let broken = dir.path().join("broken");
    std::fs::create_dir(&broken).unwrap();
    std::fs::write(broken.join("atrium.db"), vec![b'x'; 4096]).unwrap();
    let unusable = atrium(
        dir.path(),
        &["keys", "list", "--data-dir", broken.to_str().unwrap()],
    );
    assert_eq!(unusable.status.code(), Some(2), "{}", stderr(&unusable));
    assert!(
        stderr(&unusable).contains("cannot open"),
        "{}",
        stderr(&unusable)
    );
}

/// `atrium <args>` in `dir` with the host records of `state`.
fn admin(dir: &Path, state: &Path, args: &[&str]) -> std::process::Output {
    command(dir, args)
        .env_remove("ATRIUM_DATA_DIR")
        .env("ATRIUM_STATE_DIR", state)
        .output()
        .unwrap()
}

/// Run in another directory than the host's, an administration command finds the running
/// host's store (and says so) instead of making a new one; with no host it refuses.
#[test]
fn administration_commands_find_the_running_hosts_store() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let data = dir.path().join("host-data");
    let other = dir.path().join("somewhere-else");
    std::fs::create_dir(&other).unwrap();

    let none = admin(&other, &state, &["keys", "list"]);
    assert_eq!(none.status.code(), Some(1), "{}", stderr(&none));
    assert!(
        stderr(&none).contains("no running host") && stderr(&none).contains("--create"),
        "{}",
        stderr(&none)
    );
    assert!(!other.join(".atrium").exists(), "no store was made");

    let mut serve = command(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
            "--no-demo",
        ],
    );
    serve.env("ATRIUM_STATE_DIR", &state);
    let host = Serve::spawn(serve);
    let created = admin(&other, &state, &["keys", "create", "--name", "found"]);
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));
    assert!(
        stderr(&created).contains(&format!("the host running on {}", host.addr))
            && stderr(&created).contains("host-data/atrium.db"),
        "{}",
        stderr(&created)
    );
    assert!(!other.join(".atrium").exists(), "no second store");
    let listed = admin(
        dir.path(),
        &state,
        &[
            "keys",
            "list",
            "--json",
            "--data-dir",
            data.to_str().unwrap(),
        ],
    );
    assert!(stdout(&listed).contains("\"found\""), "{}", stdout(&listed));

    // The host answers (its signal handler is in place) before it is stopped.
    let health = crate::serve::http(&host.addr, "GET", "/health", None, "");
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let (status, log) = host.stop();
    assert_eq!(status.code(), Some(0), "{log:?}");
    let gone = admin(&other, &state, &["keys", "list"]);
    assert_eq!(gone.status.code(), Some(1), "{}", stderr(&gone));
    assert_eq!(
        std::fs::read_dir(state.join("hosts")).unwrap().count(),
        0,
        "the host removed its record"
    );
}

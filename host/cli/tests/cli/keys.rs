//! `atrium keys`.

use crate::{atrium, stderr, stdout};

#[test]
fn create_list_and_revoke() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let created = atrium(
        dir.path(),
        &["keys", "create", "--name", "ci", "--data-dir", data],
    );
    assert_eq!(created.status.code(), Some(0), "{}", stderr(&created));
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
        &["keys", "revoke", "key_nope", "--data-dir", data],
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("there is no key with id `key_nope`"));
    let empty = atrium(
        dir.path(),
        &["keys", "create", "--name", "", "--data-dir", data],
    );
    assert_eq!(empty.status.code(), Some(1));

    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let unusable = atrium(
        dir.path(),
        &["keys", "list", "--data-dir", file.to_str().unwrap()],
    );
    assert_eq!(unusable.status.code(), Some(2), "{}", stderr(&unusable));
    assert!(
        stderr(&unusable).contains("cannot open the database"),
        "{}",
        stderr(&unusable)
    );
}

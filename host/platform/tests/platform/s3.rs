//! Artifacts on S3-compatible object storage, configured the way `atrium serve` reads it
//! (`ATRIUM_ARTIFACTS_URI=s3://...` and `ATRIUM_ARTIFACTS_STORAGE_*`), against a real S3
//! server: moto's, installed from PyPI into the build cache on first use and run on a free
//! local port.

use atrium_platform::artifacts::{self, ArtifactError, Artifacts};
use atrium_test_artifacts::s3::S3Server;
use bytes::Bytes;

const BUCKET: &str = "atrium-artifacts";

fn key_of(digest: &str) -> String {
    let hex = &digest[artifacts::DIGEST_PREFIX.len()..];
    format!("artifacts/sha256/{}/{hex}", &hex[..2])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_live_on_s3_compatible_storage() {
    // Blocking work (pip on first use, the server's start) off the runtime's threads.
    let mut s3 = tokio::task::spawn_blocking(|| S3Server::start(BUCKET))
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let vars: Vec<(String, String)> = [
        ("ATRIUM_ARTIFACTS_URI", format!("s3://{BUCKET}/artifacts")),
        (
            "ATRIUM_ARTIFACTS_STORAGE_AWS_ENDPOINT",
            s3.endpoint().into(),
        ),
        ("ATRIUM_ARTIFACTS_STORAGE_AWS_REGION", "us-east-1".into()),
        ("ATRIUM_ARTIFACTS_STORAGE_AWS_ACCESS_KEY_ID", "test".into()),
        (
            "ATRIUM_ARTIFACTS_STORAGE_AWS_SECRET_ACCESS_KEY",
            "test".into(),
        ),
        ("ATRIUM_ARTIFACTS_STORAGE_AWS_ALLOW_HTTP", "true".into()),
        ("UNRELATED", "ignored".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let artifacts = Artifacts::from_env(data.path(), &vars).unwrap();
    assert_eq!(artifacts.location(), format!("s3://{BUCKET}/artifacts"));

    let component = Bytes::from(vec![7u8; 300 << 10]);
    let bundle = Bytes::from_static(b"<h1>hello</h1>");
    let stored = artifacts.put(component.clone()).await.unwrap();
    assert_eq!(stored.digest, artifacts::digest(&component));
    assert_eq!((stored.size, stored.created), (300 << 10, true));
    let other = artifacts.put(bundle.clone()).await.unwrap();
    assert!(other.created);

    // One object per artifact, at `<prefix>/sha256/<2 hex>/<64 hex>`; nothing on local disk.
    let mut expected = vec![key_of(&stored.digest), key_of(&other.digest)];
    expected.sort();
    assert_eq!(s3.keys("artifacts/"), expected);
    assert!(!data.path().join("artifacts").exists());

    // Storing the same bytes again, from this host or another one, writes nothing.
    assert!(!artifacts.put(component.clone()).await.unwrap().created);
    let another_host = Artifacts::from_env(data.path(), &vars).unwrap();
    assert!(!another_host.put(bundle.clone()).await.unwrap().created);
    assert_eq!(s3.keys("artifacts/").len(), 2);

    assert!(artifacts.exists(&stored.digest).await.unwrap());
    assert_eq!(another_host.get(&stored.digest).await.unwrap(), component);

    // A damaged object is reported, not served.
    s3.damage(&key_of(&other.digest));
    assert!(matches!(
        artifacts.get(&other.digest).await,
        Err(ArtifactError::Corrupt { digest }) if digest == other.digest
    ));

    artifacts.delete(&other.digest).await.unwrap();
    artifacts.delete(&other.digest).await.unwrap();
    assert!(!artifacts.exists(&other.digest).await.unwrap());
    assert!(matches!(
        artifacts.get(&other.digest).await,
        Err(ArtifactError::Missing(_))
    ));
    assert_eq!(s3.keys("artifacts/"), [key_of(&stored.digest)]);
}

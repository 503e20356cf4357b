//! A registry whose artifacts live on S3-compatible storage (moto's server): the component,
//! the docs and the bundle files land in the bucket by digest, nothing on the local disk, and
//! a refused registration removes what it wrote there too.

use atrium_platform::artifacts::Artifacts;
use atrium_test_artifacts::s3::S3Server;
use reqwest::StatusCode;

use super::{Body, Host, manifest, slug, zip_of};
use crate::stores;

#[tokio::test]
async fn versions_and_bundles_are_stored_in_the_bucket() {
    let mut s3 = tokio::task::spawn_blocking(|| S3Server::start("atrium-registry"))
        .await
        .unwrap();
    let component = std::fs::read(atrium_test_artifacts::MINIMAL).unwrap();
    // The SQLite store is enough: the metadata's backends are covered by the other tests.
    let (store, _dir) = stores().await.remove(0);
    let vars: Vec<(String, String)> = [
        ("ATRIUM_ARTIFACTS_URI", "s3://atrium-registry/artifacts"),
        ("ATRIUM_ARTIFACTS_STORAGE_AWS_ENDPOINT", s3.endpoint()),
        ("ATRIUM_ARTIFACTS_STORAGE_AWS_ALLOW_HTTP", "true"),
        ("ATRIUM_ARTIFACTS_STORAGE_AWS_ACCESS_KEY_ID", "test"),
        ("ATRIUM_ARTIFACTS_STORAGE_AWS_SECRET_ACCESS_KEY", "test"),
        ("ATRIUM_ARTIFACTS_STORAGE_AWS_REGION", "us-east-1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let unused = tempfile::tempdir().unwrap();
    let artifacts = Artifacts::from_env(unused.path(), &vars).unwrap();
    let host = Host::start_with(&store, Some(artifacts)).await;
    let (_, token) = host.sign_up("ada", true).await;
    let app = slug("bucket");

    let text = manifest(&app, "1.0.0", "");
    let (status, body) = host
        .register(
            &app,
            &token,
            &[
                ("manifest", None, text.as_bytes()),
                ("component", None, &component),
                ("app_docs", Some("user.md"), b"# Bucket\n"),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let key = |digest: &str| {
        let hex = digest.trim_start_matches("sha256:");
        format!("artifacts/sha256/{}/{hex}", &hex[..2])
    };
    let component_key = key(body["version"]["component_digest"].as_str().unwrap());
    let docs_key = key(body["docs"][0]["digest"].as_str().unwrap());
    let stored = s3.keys("artifacts/");
    assert!(stored.contains(&component_key), "{stored:?}");
    assert!(stored.contains(&docs_key), "{stored:?}");

    let bundle = zip_of(&[("index.html", b"<p>bucket</p>")]);
    let (status, body) = host
        .put(
            &format!("/api/dev/apps/{app}/versions/1.0.0/bundle"),
            &token,
            Body::Raw("application/zip".into(), bundle),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(s3.keys("artifacts/").len(), 3);

    // A conflicting registration wrote a new docs blob to the bucket before the database
    // refused it; the blob is gone again.
    let (status, body) = host
        .register(
            &app,
            &token,
            &[
                (
                    "manifest",
                    None,
                    text.replace("name: Test", "name: Other").as_bytes(),
                ),
                (
                    "app_docs",
                    Some("user.md"),
                    b"# Only in the refused version\n",
                ),
            ],
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(s3.keys("artifacts/").len(), 3);
    assert!(
        host.blobs().is_empty(),
        "nothing on the local disk: {:?}",
        host.blobs()
    );
    host.stop().await;
}

//! Content-addressed blobs (components, bundle and docs files) on the local disk or an
//! S3-compatible bucket, through `object_store`.
//!
//! A blob is named by the SHA-256 of its bytes ([`digest`]: `sha256:<64 hex>`) and stored at
//! `<prefix>/sha256/<first 2 hex>/<64 hex>`. Since a name can only ever mean one content, a
//! blob is written at most once, several hosts can share one bucket without coordination, and
//! every read is checked against its name, so a damaged object is reported, never served.
//!
//! Digests are the only keys callers choose, and they are checked to be exactly
//! `sha256:` + 64 lowercase hex digits before the store is touched.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use atrium_platform::artifacts::{self, Artifacts};
//!
//! let dir = tempfile::tempdir()?;
//! let artifacts = Artifacts::local(dir.path())?;
//! let stored = artifacts.put(bytes::Bytes::from_static(b"hello")).await?;
//! assert_eq!(stored.digest, artifacts::digest(b"hello"));
//! assert_eq!(artifacts.get(&stored.digest).await?, "hello");
//! # Ok(())
//! # }
//! ```

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::local::LocalFileSystem;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use sha2::{Digest, Sha256};

/// The start of every digest: the hash function's name.
pub const DIGEST_PREFIX: &str = "sha256:";

/// The environment variable that says where artifacts live.
const URI_VAR: &str = "ATRIUM_ARTIFACTS_URI";
/// The prefix of the environment variables passed to the object store as options.
const STORAGE_VAR_PREFIX: &str = "ATRIUM_ARTIFACTS_STORAGE_";

/// The digest of `bytes`: `sha256:` and the 64 lowercase hex digits of their SHA-256.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut digest = String::with_capacity(DIGEST_PREFIX.len() + 64);
    digest.push_str(DIGEST_PREFIX);
    for byte in hash {
        digest.push(hex_digit(byte >> 4));
        digest.push(hex_digit(byte & 0xf));
    }
    digest
}

fn hex_digit(nibble: u8) -> char {
    char::from_digit(u32::from(nibble), 16).unwrap_or('0')
}

/// What went wrong with an artifact.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    /// The artifact store is misconfigured (its URI or options).
    #[error("artifact storage is misconfigured: {0}")]
    Config(String),
    /// A digest that is not `sha256:` and 64 lowercase hex digits.
    #[error("`{0}` is not a digest: expected `sha256:` and 64 lowercase hex digits")]
    InvalidDigest(String),
    /// The store failed (disk, network, permissions).
    #[error("artifact storage failed: {0}")]
    Storage(String),
    /// No artifact has this digest.
    #[error("no artifact has the digest {0}")]
    Missing(String),
    /// The stored bytes do not hash to their digest.
    #[error("the artifact {digest} is corrupt: its bytes do not match its digest")]
    Corrupt {
        /// The digest that was asked for.
        digest: String,
    },
}

impl From<object_store::Error> for ArtifactError {
    fn from(error: object_store::Error) -> Self {
        ArtifactError::Storage(error.to_string())
    }
}

/// What [`Artifacts::put`] stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The artifact's digest, its name from now on.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether this call wrote it (`false`: it was already there).
    pub created: bool,
}

/// The artifact store: a directory or a bucket, and a key prefix in it.
#[derive(Clone)]
pub struct Artifacts {
    store: Arc<dyn ObjectStore>,
    prefix: Key,
    /// Where the artifacts are, for people: a directory or `s3://bucket/prefix`.
    location: String,
}

/// Only the location: a store's own `Debug` may show its options, credentials included.
impl fmt::Debug for Artifacts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Artifacts")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Artifacts {
    /// Artifacts in the directory `dir` on the local disk, created if needed.
    pub fn local(dir: &Path) -> Result<Self, ArtifactError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            ArtifactError::Config(format!("cannot create `{}`: {e}", dir.display()))
        })?;
        let store = LocalFileSystem::new_with_prefix(dir)
            .map_err(|e| ArtifactError::Config(format!("`{}`: {e}", dir.display())))?;
        Ok(Artifacts {
            store: Arc::new(store),
            prefix: Key::default(),
            location: dir.display().to_string(),
        })
    }

    /// The artifact store from the environment: `ATRIUM_ARTIFACTS_URI` is `s3://bucket/prefix`,
    /// or a directory (`file:///path` or a plain path); unset, `<data_dir>/artifacts`. For S3,
    /// every `ATRIUM_ARTIFACTS_STORAGE_<OPTION>` is an option of `object_store`'s S3 client,
    /// its name lower-cased (`ATRIUM_ARTIFACTS_STORAGE_AWS_ENDPOINT=http://minio:9000` is
    /// `aws_endpoint`; also `_AWS_REGION`, `_AWS_ACCESS_KEY_ID`, `_AWS_SECRET_ACCESS_KEY`,
    /// `_AWS_ALLOW_HTTP`, ...), the convention of `ATRIUM_RAG_STORAGE_*`. An option the client
    /// does not know is an error, so a typo does not silently fall back to a default.
    pub fn from_env(data_dir: &Path, vars: &[(String, String)]) -> Result<Self, ArtifactError> {
        let uri = vars
            .iter()
            .find(|(name, _)| name == URI_VAR)
            .map(|(_, value)| value.trim())
            .filter(|value| !value.is_empty());
        let options: Vec<(String, String)> = vars
            .iter()
            .filter_map(|(name, value)| {
                name.strip_prefix(STORAGE_VAR_PREFIX)
                    .map(|option| (option.to_ascii_lowercase(), value.clone()))
            })
            .collect();
        let Some(uri) = uri else {
            return Self::local(&data_dir.join("artifacts"));
        };
        if !uri.contains("://") {
            return Self::local(Path::new(uri));
        }
        let url = url::Url::parse(uri)
            .map_err(|e| ArtifactError::Config(format!("{URI_VAR} `{uri}`: {e}")))?;
        match url.scheme() {
            "s3" => Self::s3(&url, &options),
            "file" => {
                let dir = url.to_file_path().map_err(|()| {
                    ArtifactError::Config(format!("{URI_VAR} `{uri}` is not a local path"))
                })?;
                Self::local(&dir)
            }
            scheme => Err(ArtifactError::Config(format!(
                "{URI_VAR}: the scheme `{scheme}` is not supported; use `s3://` or `file://`"
            ))),
        }
    }

    fn s3(url: &url::Url, options: &[(String, String)]) -> Result<Self, ArtifactError> {
        let bucket = url
            .host_str()
            .filter(|bucket| !bucket.is_empty())
            .ok_or_else(|| {
                ArtifactError::Config(format!(
                    "{URI_VAR} must name a bucket: `s3://bucket/prefix`"
                ))
            })?;
        // `new`, not `from_env`: the options come from `vars`, never from the process's own
        // `AWS_*` variables behind the caller's back.
        let mut builder = AmazonS3Builder::new();
        for (option, value) in options {
            let key = AmazonS3ConfigKey::from_str(option).map_err(|_| {
                ArtifactError::Config(format!(
                    "{STORAGE_VAR_PREFIX}{}: `{option}` is not an S3 option",
                    option.to_ascii_uppercase()
                ))
            })?;
            builder = builder.with_config(key, value);
        }
        // After the options, so the URI's bucket wins over an `AWS_BUCKET` option.
        let store = builder
            .with_bucket_name(bucket)
            .build()
            .map_err(|e| ArtifactError::Config(e.to_string()))?;
        let prefix = Key::from_url_path(url.path())
            .map_err(|e| ArtifactError::Config(format!("{URI_VAR}: {e}")))?;
        // Built from the bucket and prefix alone: the URI may carry a user and password.
        let location = if prefix.is_root() {
            format!("s3://{bucket}")
        } else {
            format!("s3://{bucket}/{prefix}")
        };
        Ok(Artifacts {
            store: Arc::new(store),
            prefix,
            location,
        })
    }

    /// Where the artifacts are (a directory or `s3://bucket/prefix`), for logs; never
    /// credentials.
    pub fn location(&self) -> String {
        self.location.clone()
    }

    /// Stores `bytes` under their digest. An artifact already stored is not written again.
    pub async fn put(&self, bytes: Bytes) -> Result<Stored, ArtifactError> {
        let digest = digest(&bytes);
        let key = self.key(&digest)?;
        let size = bytes.len() as u64;
        let stored = |created| Stored {
            digest: digest.clone(),
            size,
            created,
        };
        match self.store.head(&key).await {
            // Same name, same content, unless the object was damaged: a wrong size is repaired
            // by the overwrite below.
            Ok(meta) if meta.size == size => return Ok(stored(false)),
            Ok(_) => {
                self.store.put(&key, PutPayload::from(bytes)).await?;
                return Ok(stored(true));
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        // Another host may be storing the same artifact right now: whichever write lands
        // first wins, and the other is told so instead of rewriting it.
        let options = PutOptions::from(PutMode::Create);
        match self
            .store
            .put_opts(&key, PutPayload::from(bytes.clone()), options)
            .await
        {
            Ok(_) => Ok(stored(true)),
            Err(object_store::Error::AlreadyExists { .. }) => Ok(stored(false)),
            // A bucket configured without conditional writes: overwriting with the same bytes
            // is just as correct, only not as cheap.
            Err(object_store::Error::NotImplemented { .. }) => {
                self.store.put(&key, PutPayload::from(bytes)).await?;
                Ok(stored(true))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The bytes of the artifact `digest`, checked against it.
    pub async fn get(&self, digest: &str) -> Result<Bytes, ArtifactError> {
        let key = self.key(digest)?;
        let bytes = match self.store.get(&key).await {
            Ok(result) => result.bytes().await?,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(ArtifactError::Missing(digest.to_owned()));
            }
            Err(e) => return Err(e.into()),
        };
        if self::digest(&bytes) != digest {
            return Err(ArtifactError::Corrupt {
                digest: digest.to_owned(),
            });
        }
        Ok(bytes)
    }

    /// Whether the artifact `digest` is stored.
    pub async fn exists(&self, digest: &str) -> Result<bool, ArtifactError> {
        let key = self.key(digest)?;
        match self.store.head(&key).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes the artifact `digest`; deleting one that is not stored is not an error.
    pub async fn delete(&self, digest: &str) -> Result<(), ArtifactError> {
        let key = self.key(digest)?;
        match self.store.delete(&key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// The object key of `digest`: `<prefix>/sha256/<first 2 hex>/<64 hex>`; the shard
    /// directory keeps local directories small.
    fn key(&self, digest: &str) -> Result<Key, ArtifactError> {
        let hex = digest
            .strip_prefix(DIGEST_PREFIX)
            .filter(|hex| {
                hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            })
            .ok_or_else(|| ArtifactError::InvalidDigest(digest.to_owned()))?;
        Ok(self.prefix.clone().join("sha256").join(&hex[..2]).join(hex))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_vars as vars;

    #[test]
    fn digests_are_sha256_in_lowercase_hex() {
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[tokio::test]
    async fn put_get_exists_delete() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = Artifacts::local(&dir.path().join("artifacts")).unwrap();
        let bytes = Bytes::from_static(b"\0asm component");
        let digest = digest(&bytes);
        assert!(!artifacts.exists(&digest).await.unwrap());
        assert!(matches!(
            artifacts.get(&digest).await,
            Err(ArtifactError::Missing(d)) if d == digest
        ));

        let stored = artifacts.put(bytes.clone()).await.unwrap();
        assert_eq!(
            stored,
            Stored {
                digest: digest.clone(),
                size: 14,
                created: true
            }
        );
        assert!(artifacts.exists(&digest).await.unwrap());
        assert_eq!(artifacts.get(&digest).await.unwrap(), bytes);
        let hex = &digest[DIGEST_PREFIX.len()..];
        let file = dir
            .path()
            .join("artifacts/sha256")
            .join(&hex[..2])
            .join(hex);
        assert_eq!(std::fs::read(&file).unwrap(), bytes);

        artifacts.delete(&digest).await.unwrap();
        assert!(!artifacts.exists(&digest).await.unwrap());
        assert!(!file.exists());
        // Deleting what is not there is fine.
        artifacts.delete(&digest).await.unwrap();
    }

    #[tokio::test]
    async fn a_second_put_does_not_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = Artifacts::local(dir.path()).unwrap();
        let first = artifacts.put(Bytes::from_static(b"same")).await.unwrap();
        let second = artifacts.put(Bytes::from_static(b"same")).await.unwrap();
        assert!(first.created);
        assert!(!second.created);
        assert_eq!(first.digest, second.digest);
        assert_eq!(artifacts.get(&first.digest).await.unwrap(), "same");
    }

    #[tokio::test]
    async fn a_damaged_file_is_reported_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = Artifacts::local(dir.path()).unwrap();
        let stored = artifacts
            .put(Bytes::from_static(b"original"))
            .await
            .unwrap();
        let hex = &stored.digest[DIGEST_PREFIX.len()..];
        let file = dir.path().join("sha256").join(&hex[..2]).join(hex);
        std::fs::write(&file, b"tampered").unwrap();
        assert!(matches!(
            artifacts.get(&stored.digest).await,
            Err(ArtifactError::Corrupt { digest }) if digest == stored.digest
        ));

        // Put does not rewrite an object of the right size, but repairs a truncated one.
        std::fs::write(&file, b"orig").unwrap();
        assert!(
            artifacts
                .put(Bytes::from_static(b"original"))
                .await
                .unwrap()
                .created
        );
        assert_eq!(artifacts.get(&stored.digest).await.unwrap(), "original");
    }

    #[tokio::test]
    async fn bad_digests_are_refused_before_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let artifacts = Artifacts::local(dir.path()).unwrap();
        let good = digest(b"x");
        let hex = &good[DIGEST_PREFIX.len()..];
        for bad in [
            String::new(),
            hex.to_owned(),
            format!("sha512:{hex}"),
            format!("sha256:{}", hex.to_uppercase()),
            format!("sha256:{}", &hex[..63]),
            format!("{good}0"),
            format!("sha256:../../{}", &hex[6..]),
            format!("sha256:{}/x", &hex[..62]),
        ] {
            assert!(
                matches!(artifacts.get(&bad).await, Err(ArtifactError::InvalidDigest(d)) if d == bad),
                "{bad}"
            );
            assert!(matches!(
                artifacts.exists(&bad).await,
                Err(ArtifactError::InvalidDigest(_))
            ));
            assert!(matches!(
                artifacts.delete(&bad).await,
                Err(ArtifactError::InvalidDigest(_))
            ));
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_environment_chooses_the_store() {
        let data = tempfile::tempdir().unwrap();
        let local = Artifacts::from_env(data.path(), &[]).unwrap();
        assert_eq!(
            local.location(),
            data.path().join("artifacts").display().to_string()
        );
        assert!(data.path().join("artifacts").is_dir());

        let elsewhere = data.path().join("elsewhere");
        let uri = format!("file://{}", elsewhere.display());
        let file =
            Artifacts::from_env(data.path(), &vars(&[("ATRIUM_ARTIFACTS_URI", &uri)])).unwrap();
        assert_eq!(file.location(), elsewhere.display().to_string());

        let s3 = Artifacts::from_env(
            data.path(),
            &vars(&[
                (
                    "ATRIUM_ARTIFACTS_URI",
                    "s3://key:secret@bucket/some/prefix/",
                ),
                ("ATRIUM_ARTIFACTS_STORAGE_AWS_REGION", "eu-west-3"),
                ("ATRIUM_ARTIFACTS_STORAGE_AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
                ("ATRIUM_ARTIFACTS_STORAGE_AWS_SECRET_ACCESS_KEY", "hunter2"),
                ("ATRIUM_ARTIFACTS_STORAGE_AWS_ALLOW_HTTP", "true"),
                ("ATRIUM_RAG_STORAGE_NOT_OURS", "ignored"),
            ]),
        )
        .unwrap();
        assert_eq!(s3.location(), "s3://bucket/some/prefix");
        let debug = format!("{s3:?}");
        assert!(
            !debug.contains("hunter2") && !debug.contains("secret"),
            "{debug}"
        );

        let err = Artifacts::from_env(
            data.path(),
            &vars(&[
                ("ATRIUM_ARTIFACTS_URI", "s3://bucket"),
                ("ATRIUM_ARTIFACTS_STORAGE_AWS_ENDPOINTT", "http://x"),
            ]),
        )
        .unwrap_err();
        assert!(
            matches!(&err, ArtifactError::Config(m) if m.contains("ATRIUM_ARTIFACTS_STORAGE_AWS_ENDPOINTT")),
            "{err}"
        );
        for uri in ["gs://bucket/x", "s3:///no-bucket"] {
            let err = Artifacts::from_env(data.path(), &vars(&[("ATRIUM_ARTIFACTS_URI", uri)]))
                .unwrap_err();
            assert!(matches!(err, ArtifactError::Config(_)), "{uri}: {err}");
        }
    }
}

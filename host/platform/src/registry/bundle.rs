//! The frontend bundle of a version: a tar, tar.gz or zip archive, read without trusting its
//! paths, stored file by file in the artifact store, listed in the database, and unpacked under
//! the host's bundles directory for serving. Immutable per version.

use atrium_store::{AppVersion, Developer, VersionFile};
use bytes::Bytes;

use super::{Registry, RegistryError, Result, hex};
use crate::archive::{self, Limits};
use crate::artifacts::DIGEST_PREFIX;

/// The largest bundle archive accepted (the request body of the upload).
pub const BUNDLE_ARCHIVE_BYTES: usize = 25 * 1024 * 1024;

/// What a bundle may hold once unpacked: 2,000 files, 10 MiB per file, 50 MiB in all.
pub const BUNDLE_LIMITS: Limits = Limits {
    max_files: 2_000,
    max_file_bytes: 10 * 1024 * 1024,
    max_total_bytes: 50 * 1024 * 1024,
};

/// A bundle as stored.
#[derive(Debug, Clone)]
pub struct BundleUpload {
    /// The version.
    pub version: AppVersion,
    /// `sha256:` over the file list (paths and digests).
    pub digest: String,
    /// The files.
    pub files: Vec<VersionFile>,
    /// `false` when the same bundle was already set.
    pub created: bool,
}

impl Registry {
    /// Sets the frontend bundle of a version from an archive.
    pub async fn set_bundle(
        &self,
        developer: &Developer,
        slug: &str,
        version: &str,
        archive_bytes: &[u8],
    ) -> Result<BundleUpload> {
        self.owned_app(developer, slug).await?;
        self.owned_version(slug, version).await?;
        if archive_bytes.len() > BUNDLE_ARCHIVE_BYTES {
            return Err(RegistryError::TooLarge {
                param: "bundle",
                message: format!("the bundle archive is larger than {BUNDLE_ARCHIVE_BYTES} bytes"),
            });
        }
        let entries = archive::read(archive_bytes, &BUNDLE_LIMITS)?;
        if entries.is_empty() {
            return Err(RegistryError::InvalidArchive {
                param: "bundle",
                message: "the bundle archive holds no files".into(),
            });
        }
        let mut written = Vec::new();
        let mut files = Vec::with_capacity(entries.len());
        for entry in &entries {
            match self
                .put_blob(
                    &entry.path,
                    Bytes::copy_from_slice(&entry.bytes),
                    &mut written,
                )
                .await
            {
                Ok(file) => files.push(file),
                Err(e) => {
                    self.forget(&written).await;
                    return Err(e);
                }
            }
        }
        let digest = listing_digest(&files);
        let created = match self
            .inner
            .store
            .set_bundle(slug, version, &digest, &files)
            .await
        {
            Ok(created) => created,
            Err(e) => {
                self.forget(&written).await;
                return Err(e.into());
            }
        };
        // The unpacked copy is a cache of what the artifact store holds: a failure here is
        // logged and the copy is made again when the bundle is first served.
        let root = self.inner.bundles_dir.clone();
        let name = digest.trim_start_matches(DIGEST_PREFIX).to_owned();
        let unpacked = tokio::task::spawn_blocking(move || {
            let borrowed: Vec<(&str, &[u8])> = entries
                .iter()
                .map(|e| (e.path.as_str(), e.bytes.as_slice()))
                .collect();
            crate::files::materialize(&root, &name, &borrowed)
        })
        .await;
        match unpacked {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(app = slug, version, error = %e, "unpacking the bundle failed")
            }
            Err(e) => {
                tracing::warn!(app = slug, version, error = %e, "unpacking the bundle failed")
            }
        }
        let version = self.owned_version(slug, version).await?;
        Ok(BundleUpload {
            version,
            digest,
            files,
            created,
        })
    }
}

/// The digest of a file list: the same files under the same paths give the same digest
/// whatever the archive's format, order or timestamps.
fn listing_digest(files: &[VersionFile]) -> String {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<&VersionFile> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    let mut hash = Sha256::new();
    for file in sorted {
        hash.update(file.path.as_bytes());
        hash.update(b"\0");
        hash.update(file.digest.as_bytes());
        hash.update(b"\n");
    }
    format!("{DIGEST_PREFIX}{}", hex(&hash.finalize()))
}

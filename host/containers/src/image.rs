//! Pulling images: a tag pinned to its digest at registration, then, on first use, the image
//! at that digest pulled once per host into a read-only root filesystem.
//!
//! The on-disk layout under [`Images::open`]'s directory:
//!
//! - `rootfs/<hex>/`: the unpacked root filesystem of the image whose pinned digest is
//!   `sha256:<hex>`, with `image.json` beside it (what [`Image`] holds). A directory there is
//!   complete: it is unpacked under `tmp/` and renamed into place as its last step.
//! - `tmp/`: layers being downloaded and root filesystems being unpacked; emptied at open, so
//!   a pull cut off by a crash leaves nothing behind.
//!
//! A layer is streamed to a file in `tmp/` (memory stays bounded whatever its size), its
//! digest checked by the client as it arrives and by [`Images`] again against its descriptor,
//! its size held to the descriptor's and to [`PullLimits`], then unpacked by
//! [`crate::unpack`] (which checks the uncompressed digest against the configuration's
//! `diff_ids`) and deleted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use oci_client::Reference;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWrite;

pub use crate::credentials::Credentials;
use crate::unpack::{self, Compression, IdShift, Limits, Unpacked};

/// Why an image could not be pinned or pulled.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The reference does not parse.
    #[error("`{reference}` is not an image reference: {reason}")]
    Reference {
        /// What was given.
        reference: String,
        /// Why it does not parse.
        reason: String,
    },
    /// The registry refused the credentials, or asks for some and none are configured.
    #[error("the registry refused access to `{reference}`: {reason}")]
    Auth {
        /// The image.
        reference: String,
        /// What the registry said.
        reason: String,
    },
    /// The registry has no such image.
    #[error("the registry has no image `{reference}`: {reason}")]
    NotFound {
        /// The image.
        reference: String,
        /// What the registry said.
        reason: String,
    },
    /// A blob or manifest is not what its digest says.
    #[error("{what} of `{reference}` does not match its digest: {reason}")]
    Digest {
        /// The image.
        reference: String,
        /// The manifest or blob.
        what: String,
        /// The digests.
        reason: String,
    },
    /// The image breaks a rule of this host (its size, a layer type, a layer entry).
    #[error("the image `{reference}` cannot run here: {reason}")]
    Refused {
        /// The image.
        reference: String,
        /// What is wrong.
        reason: String,
    },
    /// The registry could not be reached or answered something else.
    #[error("pulling `{reference}` failed: {reason}")]
    Registry {
        /// The image.
        reference: String,
        /// What happened.
        reason: String,
    },
    /// The local disk failed.
    #[error("the image store failed: {0}")]
    Io(#[from] std::io::Error),
}

/// What a pull may take.
#[derive(Debug, Clone, Copy)]
pub struct PullLimits {
    /// One compressed layer, in bytes.
    pub max_layer_bytes: u64,
    /// Layers per image.
    pub max_layers: usize,
    /// The image configuration, in bytes.
    pub max_config_bytes: u64,
    /// What the layers unpack to in all.
    pub unpacked: Limits,
}

impl Default for PullLimits {
    fn default() -> Self {
        PullLimits {
            max_layer_bytes: 4 << 30,
            max_layers: 128,
            max_config_bytes: 1 << 20,
            unpacked: Limits::default(),
        }
    }
}

/// How the image store reaches registries.
#[derive(Debug, Clone, Default)]
pub struct PullConfig {
    /// Credentials per registry.
    pub credentials: Credentials,
    /// Registries spoken to over plain HTTP (`host:port`), such as a local one on loopback.
    pub insecure: Vec<String>,
    /// Size limits.
    pub limits: PullLimits,
    /// How image owners map onto host ids (the containers' user namespace).
    pub shift: Option<IdShift>,
}

/// What the image configuration says about running it (the OCI image config's `config`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunConfig {
    /// `Entrypoint`.
    #[serde(default)]
    pub entrypoint: Vec<String>,
    /// `Cmd`.
    #[serde(default)]
    pub cmd: Vec<String>,
    /// `Env`, as `KEY=value`.
    #[serde(default)]
    pub env: Vec<String>,
    /// `WorkingDir`.
    #[serde(default)]
    pub working_dir: Option<String>,
    /// `User`.
    #[serde(default)]
    pub user: Option<String>,
}

/// An image pulled and unpacked on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// The pinned reference (`registry/repository@sha256:...`).
    pub reference: String,
    /// Its digest.
    pub digest: String,
    /// The unpacked root filesystem.
    pub rootfs: PathBuf,
    /// How to run it.
    pub run: RunConfig,
    /// Bytes of files unpacked.
    pub bytes: u64,
}

type Pulling = Arc<tokio::sync::OnceCell<Arc<Image>>>;

/// The images of this host: pinned at registration, pulled once per digest.
#[derive(Clone)]
pub struct Images {
    inner: Arc<ImagesInner>,
}

struct ImagesInner {
    dir: PathBuf,
    client: oci_client::Client,
    config: PullConfig,
    pulling: Mutex<HashMap<String, Pulling>>,
    pulls: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Images {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Images")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

/// A manifest's media types this host accepts.
const MANIFEST_TYPES: &[&str] = &[
    oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
    oci_client::manifest::OCI_IMAGE_INDEX_MEDIA_TYPE,
    oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE,
    oci_client::manifest::IMAGE_MANIFEST_LIST_MEDIA_TYPE,
];

impl Images {
    /// The image store in `dir` (created if missing; its `tmp/` emptied).
    ///
    /// # Errors
    ///
    /// The directory cannot be made.
    pub fn open(dir: impl Into<PathBuf>, config: PullConfig) -> Result<Self, ImageError> {
        let dir = dir.into();
        std::fs::create_dir_all(dir.join("rootfs"))?;
        let tmp = dir.join("tmp");
        if tmp.exists() {
            std::fs::remove_dir_all(&tmp)?;
        }
        std::fs::create_dir_all(&tmp)?;
        let client = oci_client::Client::new(ClientConfig {
            protocol: if config.insecure.is_empty() {
                ClientProtocol::Https
            } else {
                ClientProtocol::HttpsExcept(config.insecure.clone())
            },
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(60)),
            ..ClientConfig::default()
        });
        Ok(Images {
            inner: Arc::new(ImagesInner {
                dir,
                client,
                config,
                pulling: Mutex::default(),
                pulls: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// How many pulls this store has started (each digest once, whatever asks).
    pub fn pulls(&self) -> u64 {
        self.inner.pulls.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Pins `reference` to the digest its tag names now: `registry/repository@sha256:...`.
    /// A reference that names a digest is checked against the registry and kept.
    ///
    /// # Errors
    ///
    /// [`ImageError`]: a bad reference, refused credentials, an unknown image, a manifest
    /// that does not match its digest.
    pub async fn pin(&self, reference: &str) -> Result<String, ImageError> {
        let parsed = parse(reference)?;
        let auth = self.inner.config.credentials.of(&parsed);
        let (body, _) = self
            .inner
            .client
            .pull_manifest_raw(&parsed, &auth, MANIFEST_TYPES)
            .await
            .map_err(|e| registry_error(reference, "the manifest", e))?;
        let digest = format!("sha256:{}", unpack::hex(&Sha256::digest(&body)));
        if let Some(named) = parsed.digest()
            && named != digest
        {
            return Err(ImageError::Digest {
                reference: reference.to_owned(),
                what: "the manifest".into(),
                reason: format!("the reference names {named}, the registry sent {digest}"),
            });
        }
        Ok(format!(
            "{}/{}@{digest}",
            parsed.registry(),
            parsed.repository()
        ))
    }

    /// The image at `pinned` (a reference with a digest, as [`Images::pin`] makes), pulled
    /// and unpacked on first use; concurrent first uses wait for one pull.
    ///
    /// # Errors
    ///
    /// [`ImageError`]; a failed pull is not remembered, the next use tries again.
    pub async fn get(&self, pinned: &str) -> Result<Arc<Image>, ImageError> {
        let parsed = parse(pinned)?;
        let Some(digest) = parsed.digest().map(str::to_owned) else {
            return Err(ImageError::Reference {
                reference: pinned.to_owned(),
                reason: "a pinned reference names its digest (`@sha256:...`)".into(),
            });
        };
        let cell = {
            let mut pulling = self.lock();
            pulling.entry(digest.clone()).or_default().clone()
        };
        let result = cell
            .get_or_try_init(|| self.load_or_pull(pinned, &parsed, &digest))
            .await
            .cloned();
        if result.is_err() {
            let mut pulling = self.lock();
            if pulling.get(&digest).is_some_and(|c| Arc::ptr_eq(c, &cell)) {
                pulling.remove(&digest);
            }
        }
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Pulling>> {
        self.inner
            .pulling
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn place(&self, digest: &str) -> Result<PathBuf, ImageError> {
        let hex = digest
            .strip_prefix("sha256:")
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| ImageError::Reference {
                reference: digest.to_owned(),
                reason: "only sha256 digests are pulled".into(),
            })?;
        Ok(self.inner.dir.join("rootfs").join(hex))
    }

    async fn load_or_pull(
        &self,
        pinned: &str,
        parsed: &Reference,
        digest: &str,
    ) -> Result<Arc<Image>, ImageError> {
        let place = self.place(digest)?;
        if let Ok(text) = tokio::fs::read(place.join("image.json")).await
            && let Ok(image) = serde_json::from_slice::<Image>(&text)
        {
            return Ok(Arc::new(image));
        }
        self.inner
            .pulls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.pull(pinned, parsed, digest, &place)
            .await
            .map(Arc::new)
    }

    async fn pull(
        &self,
        pinned: &str,
        parsed: &Reference,
        digest: &str,
        place: &Path,
    ) -> Result<Image, ImageError> {
        let config = &self.inner.config;
        let limits = config.limits;
        let client = &self.inner.client;
        let auth = config.credentials.of(parsed);
        let (manifest, _) = client
            .pull_image_manifest(parsed, &auth)
            .await
            .map_err(|e| registry_error(pinned, "the manifest", e))?;
        check_layers(pinned, &manifest, limits)?;
        let image_config = self.pull_config(pinned, parsed, &manifest.config).await?;
        let diff_ids = image_config.rootfs().diff_ids().clone();
        if diff_ids.len() != manifest.layers.len() {
            return Err(refused(
                pinned,
                format!(
                    "the manifest has {} layers, its configuration {} diff_ids",
                    manifest.layers.len(),
                    diff_ids.len()
                ),
            ));
        }
        // Removed whatever ends the pull (an error, a cancelled call), unless it moved into
        // place.
        let mut work = Scratch(Some(tempdir_in(&self.inner.dir.join("tmp"))?));
        let dir = work.path();
        let root = dir.join("rootfs");
        tokio::fs::create_dir(&root).await?;
        let mut unpacked = Unpacked::default();
        for (layer, diff_id) in manifest.layers.iter().zip(&diff_ids) {
            let file = dir.join("layer");
            self.pull_layer(pinned, parsed, layer, &file).await?;
            let compression = Compression::of_media_type(&layer.media_type)
                .ok_or_else(|| refused(pinned, format!("layer type `{}`", layer.media_type)))?;
            let (root2, diff_id, shift) = (
                root.clone(),
                diff_id.clone(),
                config.shift.unwrap_or(IdShift::NONE),
            );
            let file2 = file.clone();
            unpacked = tokio::task::spawn_blocking(move || {
                let reader = std::io::BufReader::new(std::fs::File::open(&file2)?);
                unpack::unpack_layer(
                    reader,
                    compression,
                    &root2,
                    Some(&diff_id),
                    limits.unpacked,
                    shift,
                    &mut unpacked,
                )
                .map(|()| unpacked)
            })
            .await
            .map_err(|e| refused(pinned, format!("unpacking stopped: {e}")))?
            .map_err(|e| match e {
                unpack::UnpackError::Io(e) => ImageError::Io(e),
                unpack::UnpackError::DiffId { .. } => ImageError::Digest {
                    reference: pinned.to_owned(),
                    what: format!("layer {}", layer.digest),
                    reason: e.to_string(),
                },
                other => refused(pinned, other.to_string()),
            })?;
            tokio::fs::remove_file(&file).await?;
        }
        prepare_root(&root, config.shift.unwrap_or(IdShift::NONE))?;
        let run = run_config(&image_config);
        let image = Image {
            reference: pinned.to_owned(),
            digest: digest.to_owned(),
            rootfs: place.join("rootfs"),
            run,
            bytes: unpacked.bytes,
        };
        tokio::fs::write(
            dir.join("image.json"),
            serde_json::to_vec(&image).map_err(std::io::Error::other)?,
        )
        .await?;
        // Into place in one step; another process that got there first wins.
        match tokio::fs::rename(&dir, place).await {
            Ok(()) => work.0 = None,
            Err(_) if place.join("image.json").exists() => {}
            Err(e) => return Err(e.into()),
        }
        tracing::info!(image = %pinned, bytes = unpacked.bytes, entries = unpacked.entries, skipped = unpacked.skipped, "image pulled");
        Ok(image)
    }

    async fn pull_config(
        &self,
        pinned: &str,
        parsed: &Reference,
        descriptor: &OciDescriptor,
    ) -> Result<oci_spec::image::ImageConfiguration, ImageError> {
        let max = self.inner.config.limits.max_config_bytes;
        if u64::try_from(descriptor.size).unwrap_or(u64::MAX) > max {
            return Err(refused(
                pinned,
                format!("its configuration is larger than {max} bytes"),
            ));
        }
        let mut out = Bounded::new(Vec::new(), max);
        self.inner
            .client
            .pull_blob(parsed, descriptor, &mut out)
            .await
            .map_err(|e| registry_error(pinned, "the configuration", e))?;
        let bytes = out.finish(pinned, descriptor)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            refused(
                pinned,
                format!("its configuration is not an OCI image configuration: {e}"),
            )
        })
    }

    async fn pull_layer(
        &self,
        pinned: &str,
        parsed: &Reference,
        layer: &OciDescriptor,
        file: &Path,
    ) -> Result<(), ImageError> {
        let max = self.inner.config.limits.max_layer_bytes;
        let out = tokio::io::BufWriter::new(tokio::fs::File::create(file).await?);
        let mut out = Bounded::new(out, max);
        self.inner
            .client
            .pull_blob(parsed, layer, &mut out)
            .await
            .map_err(|e| registry_error(pinned, &format!("layer {}", layer.digest), e))?;
        let mut file_out = out.finish(pinned, layer)?;
        tokio::io::AsyncWriteExt::flush(&mut file_out).await?;
        Ok(())
    }
}

fn parse(reference: &str) -> Result<Reference, ImageError> {
    reference
        .parse::<Reference>()
        .map_err(|e| ImageError::Reference {
            reference: reference.to_owned(),
            reason: e.to_string(),
        })
}

fn refused(reference: &str, reason: impl Into<String>) -> ImageError {
    ImageError::Refused {
        reference: reference.to_owned(),
        reason: reason.into(),
    }
}

fn check_layers(
    pinned: &str,
    manifest: &OciImageManifest,
    limits: PullLimits,
) -> Result<(), ImageError> {
    if manifest.layers.len() > limits.max_layers {
        return Err(refused(
            pinned,
            format!(
                "it has {} layers, more than {}",
                manifest.layers.len(),
                limits.max_layers
            ),
        ));
    }
    for layer in &manifest.layers {
        if Compression::of_media_type(&layer.media_type).is_none() {
            return Err(refused(
                pinned,
                format!(
                    "layer {} has type `{}`, which this host does not unpack",
                    layer.digest, layer.media_type
                ),
            ));
        }
        if u64::try_from(layer.size).unwrap_or(u64::MAX) > limits.max_layer_bytes {
            return Err(refused(
                pinned,
                format!(
                    "layer {} is larger than {} bytes",
                    layer.digest, limits.max_layer_bytes
                ),
            ));
        }
    }
    Ok(())
}

fn run_config(config: &oci_spec::image::ImageConfiguration) -> RunConfig {
    let Some(c) = config.config() else {
        return RunConfig::default();
    };
    RunConfig {
        entrypoint: c.entrypoint().clone().unwrap_or_default(),
        cmd: c.cmd().clone().unwrap_or_default(),
        env: c.env().clone().unwrap_or_default(),
        working_dir: c.working_dir().clone().filter(|w| !w.is_empty()),
        user: c.user().clone().filter(|u| !u.is_empty()),
    }
}

/// Sorts a client error into what the caller can act on.
fn registry_error(
    reference: &str,
    what: &str,
    e: oci_client::errors::OciDistributionError,
) -> ImageError {
    use oci_client::errors::OciDistributionError as E;
    let reason = e.to_string();
    let reference = reference.to_owned();
    match e {
        E::AuthenticationFailure(_) | E::UnauthorizedError { .. } => {
            ImageError::Auth { reference, reason }
        }
        E::ImageManifestNotFoundError(_) => ImageError::NotFound { reference, reason },
        E::DigestError(_) => ImageError::Digest {
            reference,
            what: what.to_owned(),
            reason,
        },
        E::RegistryError { ref envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::Unauthorized
                        | oci_client::errors::OciErrorCode::Denied
                )
            }) =>
        {
            ImageError::Auth { reference, reason }
        }
        E::RegistryError { ref envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::ManifestUnknown
                        | oci_client::errors::OciErrorCode::NotFound
                        | oci_client::errors::OciErrorCode::NameUnknown
                        | oci_client::errors::OciErrorCode::BlobUnknown
                )
            }) =>
        {
            ImageError::NotFound { reference, reason }
        }
        _ => ImageError::Registry { reference, reason },
    }
}

/// A writer that refuses more than `max` bytes and hashes what it is given, so that a blob is
/// checked against its descriptor here too, not only by the client.
struct Bounded<W> {
    inner: W,
    max: u64,
    written: u64,
    hasher: Sha256,
}

impl<W> Bounded<W> {
    fn new(inner: W, max: u64) -> Self {
        Bounded {
            inner,
            max,
            written: 0,
            hasher: Sha256::new(),
        }
    }

    fn finish(self, pinned: &str, descriptor: &OciDescriptor) -> Result<W, ImageError> {
        let actual = format!("sha256:{}", unpack::hex(&self.hasher.finalize()));
        if actual != descriptor.digest {
            return Err(ImageError::Digest {
                reference: pinned.to_owned(),
                what: format!("blob {}", descriptor.digest),
                reason: format!("received {actual}"),
            });
        }
        if i64::try_from(self.written).ok() != Some(descriptor.size) {
            return Err(ImageError::Digest {
                reference: pinned.to_owned(),
                what: format!("blob {}", descriptor.digest),
                reason: format!(
                    "received {} bytes, the manifest says {}",
                    self.written, descriptor.size
                ),
            });
        }
        Ok(self.inner)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Bounded<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.written.saturating_add(buf.len() as u64) > self.max {
            return Poll::Ready(Err(std::io::Error::other(format!(
                "the blob is larger than {} bytes",
                self.max
            ))));
        }
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(Ok(n)) => {
                this.hasher.update(&buf[..n]);
                this.written += n as u64;
                Poll::Ready(Ok(n))
            }
            other => other,
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Makes the mount points the runtime needs (a read-only root cannot get them later) and
/// gives the root directory to the container's root user.
fn prepare_root(root: &Path, shift: IdShift) -> Result<(), ImageError> {
    use std::os::unix::fs::PermissionsExt;
    for dir in ["proc", "dev", "sys", "tmp"] {
        let at = root.join(dir);
        if std::fs::symlink_metadata(&at).is_err() {
            std::fs::create_dir(&at)?;
            std::fs::set_permissions(&at, std::fs::Permissions::from_mode(0o755))?;
            std::os::unix::fs::lchown(&at, Some(shift.base), Some(shift.base))?;
        }
    }
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755))?;
    std::os::unix::fs::lchown(root, Some(shift.base), Some(shift.base))?;
    Ok(())
}

/// A pull's working directory, removed when dropped unless it was moved into place (`None`).
struct Scratch(Option<PathBuf>);

impl Scratch {
    fn path(&self) -> PathBuf {
        self.0.clone().unwrap_or_default()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A fresh directory under `parent`.
fn tempdir_in(parent: &Path) -> Result<PathBuf, ImageError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = parent.join(format!("pull-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

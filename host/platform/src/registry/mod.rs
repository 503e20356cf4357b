//! The app registry: developers register immutable versions of their apps, attach a frontend
//! bundle and template defaults to them, promote one to current, and archive apps they retire.
//!
//! Every operation takes the [`Developer`] the request was authenticated as and checks
//! ownership itself: an app belongs to the developer who registered its first version, and
//! nobody else may read or change it. A version's blobs (component, docs files, bundle files)
//! go to the [`Artifacts`] store by digest before its rows are written in one transaction; when
//! the rows fail, the blobs this call wrote and no row refers to are deleted again.

mod agents;
mod bundle;
pub(crate) mod declared;
mod errors;
mod installs;
mod integrations;
mod preflight;
mod secrets;
mod upgrades;

use std::path::PathBuf;
use std::sync::Arc;

use atrium_manifest::project::{self, Finding};
use atrium_manifest::{Code, Manifest, Severity};
use atrium_runtime::Runtime;
use atrium_store::{App, AppVersion, Developer, NewVersion, Registered, Store, VersionFile};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use agents::{AgentEdit, InstalledAgent, InstalledWorkflow, WorkflowOverride};
pub(crate) use agents::{merged as merged_agents, merged_workflows};
pub use bundle::{BUNDLE_ARCHIVE_BYTES, BUNDLE_LIMITS, BundleUpload};
pub use errors::RegistryError;
pub use installs::{ActivateRequest, Activated, Actor};
pub use integrations::MAX_PROVIDER_CHARS;
pub use preflight::{PreflightFile, PreflightRequest};
pub use upgrades::{DevSettings, ForcedUpgrade, Pending, TenantUpgrade, UpgradeOutcome};

use crate::artifacts::{self, Artifacts};
use crate::sealing::SecretsKey;

/// The largest component accepted.
pub const MAX_COMPONENT_BYTES: usize = 64 * 1024 * 1024;

/// The result of registry operations.
pub type Result<T, E = RegistryError> = std::result::Result<T, E>;

/// A version registration as uploaded.
#[derive(Debug, Clone, Default)]
pub struct Upload {
    /// The manifest's file name as sent (`atrium.app.yaml`), for findings and the format.
    pub manifest_file: String,
    /// The manifest text.
    pub manifest: Bytes,
    /// The WASI component; none for a container-image app.
    pub component: Option<Bytes>,
    /// End-user docs: (path under `app_docs/`, bytes).
    pub docs: Vec<(String, Bytes)>,
    /// Template defaults: (file name, bytes), each a template object or an array of them.
    pub templates: Vec<(String, Bytes)>,
    /// The digest of the component's build inputs as the developer tool computed them (a Rust
    /// project's files), kept for preflight's comparison; a component's own record
    /// ([`atrium_runtime::build_inputs`]) takes precedence. Ignored without a component.
    pub build_inputs: Option<String>,
}

/// What a promotion did.
#[derive(Debug, Clone)]
pub struct Promoted {
    /// The app after it.
    pub app: App,
    /// The auto-upgrading installs it moved, or that wait (for consent or settings).
    pub installs: Vec<UpgradeOutcome>,
    /// The developer's dev tenant's install of the version, when the developer has a dev
    /// tenant.
    pub dev_install: Option<DevInstall>,
}

/// The developer's dev tenant's install after a promotion: activated on the version with the
/// scopes it asks for (the developer's own sandbox consents) and the settings' defaults, or
/// what keeps it from that.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DevInstall {
    /// The organization.
    pub organization: String,
    /// The dev tenant.
    pub tenant: String,
    /// `installed` (its first activation), `upgraded`, `current` (already on the version), or
    /// the activation's refusal: `missing_settings`, `invalid_settings`,
    /// `missing_integrations`, `missing_rag_bindings`, `missing_app_dependencies`.
    pub outcome: String,
    /// The version the install is on now.
    pub version: Option<String>,
    /// What the refusal names (settings, integrations, slots, apps).
    #[serde(default)]
    pub missing: Vec<String>,
    /// The refusal's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What a registration answered.
#[derive(Debug, Clone)]
pub struct Registration {
    /// The app after the registration.
    pub app: App,
    /// The version.
    pub version: AppVersion,
    /// `false` when the same version with the same content was already registered.
    pub created: bool,
    /// Warnings of the checks (errors refuse the registration).
    pub warnings: Vec<Finding>,
}

/// An app with its versions.
#[derive(Debug, Clone)]
pub struct AppDetail {
    /// The app.
    pub app: App,
    /// A page of its versions, newest first.
    pub versions: Vec<AppVersion>,
}

/// The registry of one host (all hosts on one database share it).
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    artifacts: Artifacts,
    runtime: Runtime,
    secrets: SecretsKey,
    bundles_dir: PathBuf,
    /// Parsed manifests by (app, version): a version is immutable, so an entry never goes
    /// stale; the cache starts over when full.
    manifests: std::sync::Mutex<std::collections::HashMap<(String, String), Arc<Manifest>>>,
    /// What the capabilities do when an install lands on a version, given by the composition.
    hooks: std::sync::OnceLock<declared::InstallHooks>,
    /// Pins a container app's image to its digest at registration, given by the composition
    /// when the host runs containers.
    images: std::sync::OnceLock<atrium_containers::Images>,
}

/// The most parsed manifests kept.
const MANIFESTS_CACHED: usize = 4096;

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("artifacts", &self.inner.artifacts.location())
            .field("bundles_dir", &self.inner.bundles_dir)
            .finish_non_exhaustive()
    }
}

/// What a registry is made of, by name.
pub struct RegistryParts {
    /// The store.
    pub store: Store,
    /// Where components and bundles are kept.
    pub artifacts: Artifacts,
    /// Loads components at registration (compiling them into its cache).
    pub runtime: Runtime,
    /// Seals and opens secrets and integration configurations.
    pub secrets: SecretsKey,
    /// Where bundles are unpacked for serving.
    pub bundles_dir: PathBuf,
}

impl Registry {
    /// A registry of `parts`.
    pub fn new(parts: RegistryParts) -> Self {
        let RegistryParts {
            store,
            artifacts,
            runtime,
            secrets,
            bundles_dir,
        } = parts;
        Registry {
            inner: Arc::new(Inner {
                store,
                artifacts,
                runtime,
                secrets,
                bundles_dir,
                manifests: std::sync::Mutex::default(),
                hooks: std::sync::OnceLock::new(),
                images: std::sync::OnceLock::new(),
            }),
        }
    }

    /// The validated manifest of a stored version, parsed once per host: `source` is the
    /// version's stored manifest text (immutable, like the version).
    pub fn parsed_manifest(
        &self,
        slug: &str,
        version: &str,
        source: &str,
    ) -> Result<Arc<Manifest>> {
        let key = (slug.to_owned(), version.to_owned());
        let cached = self
            .inner
            .manifests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .cloned();
        if let Some(manifest) = cached {
            return Ok(manifest);
        }
        let manifest =
            Arc::new(atrium_manifest::parse(source).map_err(|e| {
                RegistryError::internal("a stored manifest no longer validates", &e)
            })?);
        let mut manifests = self
            .inner
            .manifests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if manifests.len() >= MANIFESTS_CACHED {
            manifests.clear();
        }
        manifests.insert(key, manifest.clone());
        Ok(manifest)
    }

    /// The artifact store.
    pub fn artifacts(&self) -> &Artifacts {
        &self.inner.artifacts
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// The component runtime (shared with serving).
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// The host's secrets key, which seals every value the platform keeps secret.
    pub(crate) fn secrets_key(&self) -> &SecretsKey {
        &self.inner.secrets
    }

    /// The app `slug` when `developer` owns it: 404 when there is none, 403 when another
    /// developer does.
    pub async fn owned_app(&self, developer: &Developer, slug: &str) -> Result<App> {
        check_slug(slug)?;
        let app = self
            .inner
            .store
            .app(slug)
            .await?
            .ok_or_else(|| RegistryError::NotFound(format!("there is no app `{slug}`")))?;
        if app.owner_id != developer.id {
            return Err(RegistryError::Forbidden(format!(
                "the app `{slug}` belongs to another developer"
            )));
        }
        Ok(app)
    }

    /// A page of the developer's apps, by slug: at most `limit`, after slug `after`.
    pub async fn apps(
        &self,
        developer: &Developer,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<App>> {
        Ok(self
            .inner
            .store
            .apps_of_page(&developer.id, after, limit)
            .await?)
    }

    /// One of the developer's apps with a page of its versions, newest first: at most
    /// `limit`, older than the version registered at `after.0` named `after.1`.
    pub async fn app(
        &self,
        developer: &Developer,
        slug: &str,
        after: Option<(jiff::Timestamp, &str)>,
        limit: i64,
    ) -> Result<AppDetail> {
        let app = self.owned_app(developer, slug).await?;
        let versions = self.inner.store.versions_page(slug, after, limit).await?;
        Ok(AppDetail { app, versions })
    }

    /// Pins the images of container apps registered from now on with `images` (the
    /// composition's call, once, on a host that runs containers).
    pub fn pin_images_with(&self, images: atrium_containers::Images) {
        let _ = self.inner.images.set(images);
    }

    /// The directory the registry's files are under (the host's data directory).
    #[must_use]
    pub fn data_dir(&self) -> &std::path::Path {
        self.inner
            .bundles_dir
            .parent()
            .unwrap_or(&self.inner.bundles_dir)
    }

    /// The image a version records: for a container app (no component) on a host that pins
    /// images, `runtime.image` pinned to the digest its tag names now
    /// (`registry/repository@sha256:...`), so that a moved tag never changes what the version
    /// runs; else `runtime.image` as written. A registry that refuses the host's credentials,
    /// has no such image or sends a manifest that is not what it says refuses the
    /// registration; one that cannot be reached does not: the tag is kept, with a warning,
    /// and pinned when a host first runs the version.
    async fn recorded_image(
        &self,
        upload: &Upload,
        image: &str,
    ) -> Result<(String, Option<Finding>)> {
        let (None, Some(images)) = (&upload.component, self.inner.images.get()) else {
            return Ok((image.to_owned(), None));
        };
        match images.pin(image).await {
            Ok(pinned) => Ok((pinned, None)),
            Err(e @ atrium_containers::ImageError::Registry { .. }) => {
                let warning = Finding::plain(
                    &upload.manifest_file,
                    Severity::Warning,
                    Code::InvalidValue,
                    "runtime.image",
                    format!(
                        "the registry of `{image}` could not be reached, so the tag is not pinned to its digest yet: a host pins it when it first runs the version ({e})"
                    ),
                );
                Ok((image.to_owned(), Some(warning)))
            }
            Err(e) => Err(RegistryError::InvalidImage(format!(
                "runtime.image `{image}` cannot be pinned to its digest: {e}"
            ))),
        }
    }

    /// Registers a version of `slug` from an upload; see the module docs.
    pub async fn register(
        &self,
        developer: &Developer,
        slug: &str,
        upload: Upload,
    ) -> Result<Registration> {
        check_slug(slug)?;
        if let Some(app) = self.inner.store.app(slug).await?
            && app.owner_id != developer.id
        {
            return Err(RegistryError::Forbidden(format!(
                "the app `{slug}` belongs to another developer; choose another app_id"
            )));
        }
        check_build_inputs(upload.build_inputs.as_deref())?;
        let checked = self.check_upload(slug, &upload)?;
        let manifest = checked.manifest;
        if let Some(component) = &upload.component {
            self.load_component(component, manifest.clone()).await?;
        }
        let (image, unpinned) = self
            .recorded_image(&upload, &manifest.runtime.image)
            .await?;

        let mut written = Vec::new();
        let stored = self.store_upload(&upload, &mut written).await;
        let (component, docs) = match stored {
            Ok(stored) => stored,
            Err(e) => {
                self.forget(&written).await;
                return Err(e);
            }
        };
        let manifest_digest = artifacts::digest(&upload.manifest);
        let build_inputs = upload
            .component
            .as_deref()
            .and_then(atrium_runtime::build_inputs::read);
        // What the version records for preflight: the component's own record, which also
        // counts in the content (below), else the digest sent, which does not (a Rust
        // component is identified by its bytes).
        let recorded_inputs = match &upload.component {
            Some(_) => build_inputs.clone().or_else(|| upload.build_inputs.clone()),
            None => None,
        };
        let content_digest = content_digest(
            &manifest_digest,
            component.as_ref(),
            build_inputs.as_deref(),
            &image,
            &docs,
        );
        let templates = checked.templates;
        let new = NewVersion {
            app_slug: slug,
            version: &manifest.version,
            name: &manifest.name,
            developer_id: &developer.id,
            manifest_source: checked.text,
            manifest_digest: &manifest_digest,
            content_digest: &content_digest,
            component: component.as_ref().map(|f| (f.digest.as_str(), f.size)),
            image: &image,
            templates: templates.as_ref().map(|(t, d)| (t.as_str(), d.as_str())),
            docs: &docs,
            build_inputs: recorded_inputs.as_deref(),
        };
        let registered = match self.inner.store.register_version(&new).await {
            Ok(registered) => registered,
            Err(e) => {
                self.forget(&written).await;
                return Err(e.into());
            }
        };
        if registered == Registered::Unchanged {
            // A rebuild of the same inputs sent other bytes: the version keeps the first.
            self.forget(&written).await;
        }
        let version = self
            .inner
            .store
            .version(slug, &manifest.version)
            .await?
            .ok_or_else(|| {
                RegistryError::NotFound(format!(
                    "version {} of `{slug}` vanished",
                    manifest.version
                ))
            })?;
        let app = self
            .inner
            .store
            .app(slug)
            .await?
            .ok_or_else(|| RegistryError::NotFound(format!("app `{slug}` vanished")))?;
        Ok(Registration {
            app,
            version,
            created: matches!(registered, Registered::Created { .. }),
            warnings: checked.warnings.into_iter().chain(unpinned).collect(),
        })
    }

    /// Sets the template defaults of a version (the JSON array of section 2.14) once: `true`
    /// when they were set now, `false` when the same were already set.
    pub async fn set_templates(
        &self,
        developer: &Developer,
        slug: &str,
        version: &str,
        body: &[u8],
    ) -> Result<(AppVersion, bool)> {
        self.owned_app(developer, slug).await?;
        let (templates, findings) = project::check_template_array("templates", body);
        if findings.iter().any(Finding::is_error) {
            return Err(RegistryError::invalid(
                "the template defaults are invalid",
                findings,
            ));
        }
        let (text, digest) = canonical_templates(&templates)?;
        let set = self
            .inner
            .store
            .set_templates(slug, version, &text, &digest)
            .await?;
        let version = self.owned_version(slug, version).await?;
        Ok((version, set))
    }

    /// Promotes a registered version to the app's current version. Needs `publish_allowed`.
    pub async fn promote(
        &self,
        developer: &Developer,
        slug: &str,
        version: &str,
    ) -> Result<Promoted> {
        self.owned_app(developer, slug).await?;
        if !developer.publish_allowed {
            return Err(RegistryError::Forbidden(format!(
                "{} may register versions but not promote them (publish_allowed is false); ask the host's administrator",
                developer.login
            )));
        }
        let app = self.inner.store.promote_version(slug, version).await?;
        // Promotion is done; the developer's dev tenant gets the version first, then the
        // auto-upgrading installs follow (a failure is logged: the installs stay where they
        // are and the next promotion tries again).
        let dev_install = self.install_in_dev_tenant(developer, slug, version).await;
        let installs = match self.auto_upgrade(slug, version).await {
            Ok(outcomes) => outcomes,
            Err(e) => {
                tracing::warn!(app = slug, version, error = %e, "auto-upgrading installs failed");
                Vec::new()
            }
        };
        Ok(Promoted {
            app,
            installs,
            dev_install,
        })
    }

    /// Archives an app.
    pub async fn archive(&self, developer: &Developer, slug: &str) -> Result<App> {
        self.owned_app(developer, slug).await?;
        Ok(self.inner.store.archive_app(slug).await?)
    }

    async fn owned_version(&self, slug: &str, version: &str) -> Result<AppVersion> {
        self.inner
            .store
            .version(slug, version)
            .await?
            .ok_or_else(|| {
                RegistryError::NotFound(format!("version {version} of `{slug}` is not registered"))
            })
    }

    /// Loads the component in the runtime, which checks that it is a component of the
    /// `atrium:app` world that this host can run, and compiles it into the shared cache.
    async fn load_component(&self, component: &Bytes, manifest: Manifest) -> Result<()> {
        let runtime = self.inner.runtime.clone();
        let bytes = component.clone();
        let loaded = tokio::task::spawn_blocking(move || runtime.load(&bytes, manifest))
            .await
            .map_err(|e| RegistryError::internal("loading the component failed", &e))?;
        let app = loaded.map_err(|e| RegistryError::InvalidComponent(e.to_string()))?;
        // What the component registers is checked against the manifest now, so that a
        // registration the SDK would refuse is refused at publish whoever built the component.
        match app.verify().await {
            Ok(()) => Ok(()),
            Err(atrium_runtime::CallError::Capacity(m)) => Err(RegistryError::AtCapacity(format!(
                "no instance slot was free to check the component, try again: {m}"
            ))),
            Err(e) => Err(RegistryError::InvalidComponent(format!(
                "the component failed its health check: {e}"
            ))),
        }
    }

    /// Writes the component and the docs to the artifact store; `written` collects the blobs
    /// this call created, to delete if the registration fails.
    async fn store_upload(
        &self,
        upload: &Upload,
        written: &mut Vec<String>,
    ) -> Result<(Option<VersionFile>, Vec<VersionFile>)> {
        let component = match &upload.component {
            Some(bytes) => Some(self.put_blob("app.wasm", bytes.clone(), written).await?),
            None => None,
        };
        let mut docs = Vec::with_capacity(upload.docs.len());
        for (path, bytes) in &upload.docs {
            docs.push(self.put_blob(path, bytes.clone(), written).await?);
        }
        docs.sort_by(|a, b| a.path.cmp(&b.path));
        Ok((component, docs))
    }

    async fn put_blob(
        &self,
        path: &str,
        bytes: Bytes,
        written: &mut Vec<String>,
    ) -> Result<VersionFile> {
        let stored = self.inner.artifacts.put(bytes).await?;
        if stored.created {
            written.push(stored.digest.clone());
        }
        Ok(VersionFile {
            path: path.to_owned(),
            digest: stored.digest,
            size: i64::try_from(stored.size).unwrap_or(i64::MAX),
        })
    }

    /// Deletes blobs this call wrote that no version refers to (a failed registration).
    async fn forget(&self, written: &[String]) {
        for digest in written {
            match self.inner.store.blob_referenced(digest).await {
                Ok(false) => {
                    if let Err(e) = self.inner.artifacts.delete(digest).await {
                        tracing::warn!(%digest, error = %e, "an unreferenced blob could not be deleted");
                    }
                }
                Ok(true) => {}
                Err(e) => {
                    tracing::warn!(%digest, error = %e, "cannot tell whether a blob is referenced; it is kept")
                }
            }
        }
    }

    /// Runs every check of a registration that needs no storage; the valid manifest, or the
    /// problems.
    fn check_upload<'u>(&self, slug: &str, upload: &'u Upload) -> Result<CheckedUpload<'u>> {
        let file = if upload.manifest_file.is_empty() {
            "manifest"
        } else {
            upload.manifest_file.as_str()
        };
        let (validation, mut findings) = project::check_manifest(file, &upload.manifest);
        let template_files: Vec<(String, &[u8])> = upload
            .templates
            .iter()
            .map(|(f, b)| (f.clone(), b.as_ref()))
            .collect();
        let (templates, template_findings) = project::check_templates(&template_files);
        let templates: Vec<_> = templates.into_iter().map(|(_, t)| t).collect();
        findings.extend(template_findings);
        let docs: Vec<(String, u64)> = upload
            .docs
            .iter()
            .map(|(p, b)| (p.clone(), b.len() as u64))
            .collect();
        let doc_findings = project::check_docs(project::DOCS_DIR, &docs);
        if doc_findings
            .iter()
            .any(|f| f.is_error() && f.problem.code == Code::InputLimit)
        {
            let message = doc_findings
                .iter()
                .filter(|f| f.is_error())
                .map(|f| f.problem.message.clone())
                .collect::<Vec<_>>()
                .join("; ");
            return Err(RegistryError::TooLarge {
                param: "app_docs",
                message,
            });
        }
        findings.extend(doc_findings);
        let manifest = validation.and_then(|v| v.manifest);
        if let Some(manifest) = &manifest {
            findings.extend(preflight::platform_findings(
                file,
                &upload.manifest,
                manifest,
            ));
            if manifest.app_id != slug {
                findings.push(Finding::plain(
                    file,
                    Severity::Error,
                    Code::InvalidValue,
                    "app_id",
                    format!("the manifest's app_id is `{}` but the request registers a version of `{slug}`", manifest.app_id),
                ));
            }
        }
        if findings.iter().any(Finding::is_error) {
            return Err(RegistryError::invalid("the project has errors", findings));
        }
        let Some(manifest) = manifest else {
            return Err(RegistryError::invalid("the manifest is invalid", findings));
        };
        if upload
            .component
            .as_ref()
            .is_some_and(|c| c.len() > MAX_COMPONENT_BYTES)
        {
            return Err(RegistryError::TooLarge {
                param: "component",
                message: format!("the component is larger than {MAX_COMPONENT_BYTES} bytes"),
            });
        }
        let templates = if template_files.is_empty() {
            None
        } else {
            Some(canonical_templates(&templates)?)
        };
        let text = project::utf8(&upload.manifest)
            .map_err(|p| RegistryError::invalid(&p.message, Vec::new()))?;
        Ok(CheckedUpload {
            manifest,
            text,
            templates,
            warnings: findings,
        })
    }
}

struct CheckedUpload<'u> {
    manifest: Manifest,
    text: &'u str,
    templates: Option<(String, String)>,
    warnings: Vec<Finding>,
}

/// The stored form of template defaults (compact JSON, sorted by slug) and its digest, so the
/// same templates sent twice compare equal whatever their layout.
fn canonical_templates(
    templates: &[atrium_manifest::templates::DocTemplate],
) -> Result<(String, String)> {
    let mut sorted = templates.to_vec();
    sorted.sort_by(|a, b| a.slug.cmp(&b.slug));
    let text = serde_json::to_string(&sorted)
        .map_err(|e| RegistryError::internal("encoding the templates failed", &e))?;
    let digest = artifacts::digest(text.as_bytes());
    Ok((text, digest))
}

/// The digest of what a registration sent: the manifest, the component (or the image for a
/// container app) and each docs file, in a fixed order. A component that carries its build
/// inputs ([`atrium_runtime::build_inputs`]) counts by them rather than by its bytes, so that
/// a rebuild of the same sources by a toolchain whose output varies is the same content.
fn content_digest(
    manifest: &str,
    component: Option<&VersionFile>,
    build_inputs: Option<&str>,
    image: &str,
    docs: &[VersionFile],
) -> String {
    let mut hash = Sha256::new();
    hash.update(b"manifest\0");
    hash.update(manifest.as_bytes());
    match (component, build_inputs) {
        (Some(_), Some(inputs)) => {
            hash.update(b"\0component-inputs\0");
            hash.update(inputs.as_bytes());
        }
        (Some(c), None) => {
            hash.update(b"\0component\0");
            hash.update(c.digest.as_bytes());
        }
        (None, _) => {
            hash.update(b"\0image\0");
            hash.update(image.as_bytes());
        }
    }
    for doc in docs {
        hash.update(b"\0doc\0");
        hash.update(doc.path.as_bytes());
        hash.update(b"\0");
        hash.update(doc.digest.as_bytes());
    }
    format!("{}{}", artifacts::DIGEST_PREFIX, hex(&hash.finalize()))
}

pub(crate) use crate::keyfile::hex_encode as hex;

/// A slug in a path must be a valid app_id; anything else names no app.
fn check_slug(slug: &str) -> Result<()> {
    if atrium_manifest::rules::is_app_slug(slug) {
        Ok(())
    } else {
        Err(RegistryError::BadRequest {
            param: "slug",
            message: format!(
                "`{slug}` is not an app slug: 3 to 64 lowercase letters, digits and hyphens, starting with a letter"
            ),
        })
    }
}

/// A `build_inputs` sent with a registration or a preflight is a digest (`sha256:` and 64
/// lowercase hex digits), or a 400 naming it.
pub(crate) fn check_build_inputs(inputs: Option<&str>) -> Result<(), RegistryError> {
    match inputs {
        Some(inputs) if !atrium_runtime::build_inputs::is_digest(inputs) => {
            Err(RegistryError::BadRequest {
                param: "build_inputs",
                message: format!(
                    "build_inputs `{}` is not a digest: `sha256:` and 64 lowercase hex digits",
                    inputs.chars().take(80).collect::<String>()
                ),
            })
        }
        _ => Ok(()),
    }
}

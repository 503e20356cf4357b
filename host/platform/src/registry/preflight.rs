//! Preflight: the checks of `atrium lint` run by the platform on a project sent in one request,
//! plus what only the platform can tell: scopes it does not know, an app_id owned by another
//! developer, a version already registered with other content (another manifest, other build
//! inputs, other docs or template defaults), which registering would refuse with 409.

use atrium_manifest::project::{self, Finding};
use atrium_manifest::{Code, Manifest, Severity};
use atrium_store::{Developer, FileRole};
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::{Registry, RegistryError, Result};
use crate::{artifacts, scopes};

/// The most files one preflight request may carry.
pub const MAX_FILES: usize = 1_000;

/// A project sent for preflight.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreflightRequest {
    /// The manifest text.
    pub manifest: String,
    /// Its file name (default `atrium.app.yaml`): names it in findings and picks the format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest_file: Option<String>,
    /// The project's other files: `defaults/templates/*.json` and `app_docs/**`; others are
    /// ignored.
    #[serde(default)]
    pub files: Vec<PreflightFile>,
    /// The digest of the build inputs of the component a deploy will register (`sha256:...`,
    /// what `atrium build` records), when the tool knows it before building: compared with
    /// the registered version's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_inputs: Option<String>,
}

/// What a preflight request says of the content a registration would send, beside the
/// manifest.
struct Sent<'a> {
    /// The build inputs, when sent.
    build_inputs: Option<&'a str>,
    /// The docs files: (path under `app_docs/`, digest), sorted.
    docs: Vec<(String, String)>,
    /// The digest of the template defaults, when there are templates and they are valid.
    templates: Option<String>,
}

/// One file of a project.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreflightFile {
    /// The path relative to the project's root, `/`-separated.
    pub path: String,
    /// The content as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The content as base64, for binary files (images in the docs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_base64: Option<String>,
}

impl Registry {
    /// Checks a project; every finding, errors and warnings.
    pub async fn preflight(
        &self,
        developer: &Developer,
        request: &PreflightRequest,
    ) -> Result<Vec<Finding>> {
        if request.files.len() > MAX_FILES {
            return Err(RegistryError::TooLarge {
                param: "files",
                message: format!(
                    "a preflight carries at most {MAX_FILES} files, got {}",
                    request.files.len()
                ),
            });
        }
        super::check_build_inputs(request.build_inputs.as_deref())?;
        let file = request
            .manifest_file
            .as_deref()
            .unwrap_or("atrium.app.yaml");
        let (validation, mut findings) = project::check_manifest(file, request.manifest.as_bytes());

        let mut templates: Vec<(String, Vec<u8>)> = Vec::new();
        let mut docs: Vec<(String, u64)> = Vec::new();
        let mut doc_digests: Vec<(String, String)> = Vec::new();
        for (i, f) in request.files.iter().enumerate() {
            let bytes = match (&f.content, &f.content_base64) {
                (Some(text), None) => text.clone().into_bytes(),
                (None, Some(b64)) => base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .map_err(|e| RegistryError::BadRequest {
                        param: "files",
                        message: format!("files[{i}].content_base64 is not base64: {e}"),
                    })?,
                _ => {
                    return Err(RegistryError::BadRequest {
                        param: "files",
                        message: format!(
                            "files[{i}] ({}) needs exactly one of `content` and `content_base64`",
                            f.path
                        ),
                    });
                }
            };
            let path = f.path.trim_start_matches("./");
            if let Some(name) = path
                .strip_prefix(project::TEMPLATES_DIR)
                .and_then(|p| p.strip_prefix('/'))
            {
                if name.ends_with(".json") && !name.contains('/') {
                    templates.push((path.to_owned(), bytes));
                }
            } else if let Some(rel) = path
                .strip_prefix(project::DOCS_DIR)
                .and_then(|p| p.strip_prefix('/'))
            {
                docs.push((rel.to_owned(), bytes.len() as u64));
                doc_digests.push((rel.to_owned(), artifacts::digest(&bytes)));
            }
        }
        templates.sort();
        let borrowed: Vec<(String, &[u8])> = templates
            .iter()
            .map(|(f, b)| (f.clone(), b.as_slice()))
            .collect();
        let (parsed, template_findings) = project::check_templates(&borrowed);
        // As registration stores them (sorted by slug), to compare with the version's.
        let templates_digest =
            if templates.is_empty() || template_findings.iter().any(Finding::is_error) {
                None
            } else {
                let parsed: Vec<_> = parsed.into_iter().map(|(_, t)| t).collect();
                Some(super::canonical_templates(&parsed)?.1)
            };
        findings.extend(template_findings);
        findings.extend(project::check_docs(project::DOCS_DIR, &docs));
        doc_digests.sort();
        let sent = Sent {
            build_inputs: request.build_inputs.as_deref(),
            docs: doc_digests,
            templates: templates_digest,
        };

        if let Some(manifest) = validation.and_then(|v| v.manifest) {
            findings.extend(platform_findings(
                file,
                request.manifest.as_bytes(),
                &manifest,
            ));
            findings.extend(
                self.registry_findings(
                    developer,
                    file,
                    request.manifest.as_bytes(),
                    &manifest,
                    &sent,
                )
                .await?,
            );
        }
        Ok(findings)
    }

    /// Ownership and immutability, as the registry stands now: a version registered with
    /// other content is an error (registering would be refused with 409), naming what differs
    /// and a version that is free.
    async fn registry_findings(
        &self,
        developer: &Developer,
        file: &str,
        text: &[u8],
        manifest: &Manifest,
        sent: &Sent<'_>,
    ) -> Result<Vec<Finding>> {
        let mut findings = Vec::new();
        let Some(app) = self.inner.store.app(&manifest.app_id).await? else {
            return Ok(findings);
        };
        if app.owner_id != developer.id {
            findings.push(Finding::plain(
                file,
                Severity::Error,
                Code::NotAllowed,
                "app_id",
                format!(
                    "the app_id `{}` belongs to another developer; choose another",
                    manifest.app_id
                ),
            ));
            return Ok(findings);
        }
        let (slug, number) = (&manifest.app_id, &manifest.version);
        let Some(version) = self.inner.store.version(slug, number).await? else {
            return Ok(findings);
        };
        let mut differs = Vec::new();
        if version.manifest_digest != artifacts::digest(text) {
            differs.push("another manifest");
        }
        // Known only when both sides know them: the tool before its build, the version from
        // its component's record or its registration.
        let same_inputs = match (sent.build_inputs, version.build_inputs.as_deref()) {
            (Some(new), Some(old)) => Some(new == old),
            _ => None,
        };
        if same_inputs == Some(false) {
            differs.push("other build inputs (the project's files or its SDK changed since)");
        }
        let mut stored_docs: Vec<(String, String)> = self
            .inner
            .store
            .version_files(slug, number, FileRole::Docs)
            .await?
            .into_iter()
            .map(|f| (f.path, f.digest))
            .collect();
        stored_docs.sort();
        if stored_docs != sent.docs {
            differs.push("other docs (app_docs/)");
        }
        if let (Some(new), Some(old)) = (
            sent.templates.as_deref(),
            version.templates_digest.as_deref(),
        ) && new != old
        {
            differs.push("other template defaults");
        }
        let image_app = version.component_digest.is_none() && sent.build_inputs.is_none();
        if differs.is_empty() && (same_inputs == Some(true) || image_app) {
            findings.push(Finding::plain(
                file,
                Severity::Warning,
                Code::Duplicate,
                "version",
                format!(
                    "version {number} is already registered with the same content; deploying it again changes nothing"
                ),
            ));
            return Ok(findings);
        }
        let free = match self.next_free_patch(slug, number).await? {
            Some(next) => format!(" ({next} is free: `atrium deploy --version {next}`)"),
            None => String::new(),
        };
        findings.push(if differs.is_empty() {
            Finding::plain(
                file,
                Severity::Warning,
                Code::Duplicate,
                "version",
                format!(
                    "version {number} is already registered with this manifest; deploying the same component again changes nothing, another one is refused (409 `immutable`): a changed app needs a new `version`{free}"
                ),
            )
        } else {
            Finding::plain(
                file,
                Severity::Error,
                Code::Duplicate,
                "version",
                format!(
                    "version {number} is already registered with {}; versions are immutable, bump `version`{free}",
                    differs.join(", ")
                ),
            )
        });
        Ok(findings)
    }

    /// The first patch version after `version` that `slug` has not registered (at most 100
    /// tried).
    async fn next_free_patch(&self, slug: &str, version: &str) -> Result<Option<String>> {
        let mut next = atrium_manifest::rules::next_patch(version);
        for _ in 0..100 {
            let Some(candidate) = next else {
                return Ok(None);
            };
            if self.inner.store.version(slug, &candidate).await?.is_none() {
                return Ok(Some(candidate));
            }
            next = atrium_manifest::rules::next_patch(&candidate);
        }
        Ok(None)
    }
}

/// The checks only the platform can make on a valid manifest without the registry: scope
/// names outside the catalogue.
pub(crate) fn platform_findings(file: &str, _text: &[u8], manifest: &Manifest) -> Vec<Finding> {
    manifest
        .required_scopes
        .iter()
        .enumerate()
        .filter(|(_, scope)| scopes::find(scope).is_none())
        .map(|(i, scope)| {
            Finding::plain(
                file,
                Severity::Error,
                Code::InvalidValue,
                &format!("required_scopes[{i}]"),
                format!(
                    "the platform has no scope `{scope}`; its scopes are listed at GET /api/scopes"
                ),
            )
        })
        .collect()
}

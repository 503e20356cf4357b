//! Preflight: the checks of `atrium lint` run by the platform on a project sent in one request,
//! plus what only the platform can tell: scopes it does not know, an app_id owned by another
//! developer, a version already registered with another manifest.

use atrium_manifest::project::{self, Finding};
use atrium_manifest::{Code, Manifest, Severity};
use atrium_store::Developer;
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
        let file = request
            .manifest_file
            .as_deref()
            .unwrap_or("atrium.app.yaml");
        let (validation, mut findings) = project::check_manifest(file, request.manifest.as_bytes());

        let mut templates: Vec<(String, Vec<u8>)> = Vec::new();
        let mut docs: Vec<(String, u64)> = Vec::new();
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
            }
        }
        templates.sort();
        let borrowed: Vec<(String, &[u8])> = templates
            .iter()
            .map(|(f, b)| (f.clone(), b.as_slice()))
            .collect();
        findings.extend(project::check_templates(&borrowed).1);
        findings.extend(project::check_docs(project::DOCS_DIR, &docs));

        if let Some(manifest) = validation.and_then(|v| v.manifest) {
            findings.extend(platform_findings(
                file,
                request.manifest.as_bytes(),
                &manifest,
            ));
            findings.extend(
                self.registry_findings(developer, file, request.manifest.as_bytes(), &manifest)
                    .await?,
            );
        }
        Ok(findings)
    }

    /// Ownership and immutability, as the registry stands now.
    async fn registry_findings(
        &self,
        developer: &Developer,
        file: &str,
        text: &[u8],
        manifest: &Manifest,
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
        if let Some(version) = self
            .inner
            .store
            .version(&manifest.app_id, &manifest.version)
            .await?
        {
            if version.manifest_digest == artifacts::digest(text) {
                findings.push(Finding::plain(
                    file,
                    Severity::Warning,
                    Code::Duplicate,
                    "version",
                    format!("version {} is already registered with this manifest; deploying it again changes nothing", manifest.version),
                ));
            } else {
                findings.push(Finding::plain(
                    file,
                    Severity::Error,
                    Code::Duplicate,
                    "version",
                    format!("version {} is already registered with another manifest; versions are immutable, bump `version`", manifest.version),
                ));
            }
        }
        Ok(findings)
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

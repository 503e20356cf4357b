//! Apps, their immutable versions and the files each version refers to.
//!
//! A version is written once, in one transaction with its files and (for the first version) the
//! app itself, so a registration that fails leaves nothing behind. Writing the same version again
//! is accepted only with the same content ([`Registered::Unchanged`]); anything else is a
//! [`StoreError::Conflict`]. The frontend bundle and the template defaults are set once each,
//! under the same rule.

use jiff::Timestamp;
use sqlx::Row;

use crate::{Result, Store, StoreError, millis, now_millis, on_pool, opt_millis};

/// An app's status in the developer's view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppStatus {
    /// Registered, no current version yet.
    Draft,
    /// A version is current.
    Active,
    /// Retired by its owner.
    Archived,
}

impl AppStatus {
    /// The name used in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            AppStatus::Draft => "draft",
            AppStatus::Active => "active",
            AppStatus::Archived => "archived",
        }
    }

    fn parse(s: &str) -> Result<Self> {
        match s {
            "draft" => Ok(AppStatus::Draft),
            "active" => Ok(AppStatus::Active),
            "archived" => Ok(AppStatus::Archived),
            other => Err(StoreError::Corrupt(format!(
                "unknown app status `{other}` in the database"
            ))),
        }
    }
}

/// A version's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionStatus {
    /// Stored and checked; never promoted.
    Registered,
    /// Promoted at least once: tenants may run it.
    Published,
}

impl VersionStatus {
    /// The name used in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            VersionStatus::Registered => "registered",
            VersionStatus::Published => "published",
        }
    }

    fn parse(s: &str) -> Result<Self> {
        match s {
            "registered" => Ok(VersionStatus::Registered),
            "published" => Ok(VersionStatus::Published),
            other => Err(StoreError::Corrupt(format!(
                "unknown version status `{other}` in the database"
            ))),
        }
    }
}

/// An app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    /// The manifest's `app_id`.
    pub slug: String,
    /// The developer who registered the first version.
    pub owner_id: String,
    /// The display name of the latest registered version.
    pub name: String,
    /// Draft, active or archived.
    pub status: AppStatus,
    /// The version new installs get.
    pub current_version: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
    /// When archived.
    pub archived_at: Option<Timestamp>,
}

/// What kind of file a version refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRole {
    /// The WASI component (path `app.wasm`).
    Component,
    /// A file of the end-user docs (`app_docs/`).
    Docs,
    /// A file of the frontend bundle.
    Bundle,
}

impl FileRole {
    /// The name used in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            FileRole::Component => "component",
            FileRole::Docs => "docs",
            FileRole::Bundle => "bundle",
        }
    }
}

/// A file a version refers to; the artifact store holds its bytes under `digest`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionFile {
    /// Relative path (`/`-separated).
    pub path: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// Size in bytes.
    pub size: i64,
}

/// A registered version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppVersion {
    /// The app.
    pub app_slug: String,
    /// The semantic version.
    pub version: String,
    /// Registered or published.
    pub status: VersionStatus,
    /// The outcome of the checks at registration (`success`: failures are not stored).
    pub build_result: String,
    /// The manifest as uploaded.
    pub manifest_source: String,
    /// `sha256:` of the manifest text.
    pub manifest_digest: String,
    /// `sha256:` over everything registration sent.
    pub content_digest: String,
    /// The component's digest, for a component app.
    pub component_digest: Option<String>,
    /// The component's size in bytes.
    pub component_size: Option<i64>,
    /// The manifest's `runtime.image`.
    pub image: String,
    /// The template defaults (a JSON array), once set.
    pub templates: Option<String>,
    /// `sha256:` of the template defaults.
    pub templates_digest: Option<String>,
    /// `sha256:` of the frontend bundle's file list, once uploaded.
    pub bundle_digest: Option<String>,
    /// The developer who registered it.
    pub registered_by: String,
    /// Registration time.
    pub created_at: Timestamp,
    /// First promotion.
    pub promoted_at: Option<Timestamp>,
    /// The digest of the build inputs its component was made from (`sha256:...`), when
    /// known: the component's own record, else what the registration sent.
    pub build_inputs: Option<String>,
}

/// A version to register.
#[derive(Debug, Clone)]
pub struct NewVersion<'a> {
    /// The app (the manifest's `app_id`).
    pub app_slug: &'a str,
    /// The version.
    pub version: &'a str,
    /// The manifest's display name.
    pub name: &'a str,
    /// Who registers it.
    pub developer_id: &'a str,
    /// The manifest text.
    pub manifest_source: &'a str,
    /// Its digest.
    pub manifest_digest: &'a str,
    /// The digest over everything sent.
    pub content_digest: &'a str,
    /// The component (digest and size), for a component app.
    pub component: Option<(&'a str, i64)>,
    /// `runtime.image`.
    pub image: &'a str,
    /// The template defaults sent with the registration (JSON array text and digest).
    pub templates: Option<(&'a str, &'a str)>,
    /// The docs files.
    pub docs: &'a [VersionFile],
    /// The digest of the component's build inputs, when known.
    pub build_inputs: Option<&'a str>,
}

/// What [`Store::register_version`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    /// The version is new (and so was the app, when `app_created`).
    Created {
        /// This registration created the app.
        app_created: bool,
    },
    /// The same version with the same content was already there.
    Unchanged,
}

pub(crate) const APP_COLUMNS: &str =
    "slug, owner_id, name, status, current_version, created_at, updated_at, archived_at";
pub(crate) const VERSION_COLUMNS: &str = "app_slug, version, status, build_result, manifest_source, \
     manifest_digest, content_digest, component_digest, component_size, image, templates, \
     templates_digest, bundle_digest, registered_by, created_at, promoted_at, build_inputs";

pub(crate) fn app_from<R: Row>(row: &R) -> Result<App>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let status: String = row.try_get("status")?;
    Ok(App {
        slug: row.try_get("slug")?,
        owner_id: row.try_get("owner_id")?,
        name: row.try_get("name")?,
        status: AppStatus::parse(&status)?,
        current_version: row.try_get("current_version")?,
        created_at: millis(row.try_get("created_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
        archived_at: opt_millis(row.try_get("archived_at")?)?,
    })
}

pub(crate) fn version_from<R: Row>(row: &R) -> Result<AppVersion>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let status: String = row.try_get("status")?;
    Ok(AppVersion {
        app_slug: row.try_get("app_slug")?,
        version: row.try_get("version")?,
        status: VersionStatus::parse(&status)?,
        build_result: row.try_get("build_result")?,
        manifest_source: row.try_get("manifest_source")?,
        manifest_digest: row.try_get("manifest_digest")?,
        content_digest: row.try_get("content_digest")?,
        component_digest: row.try_get("component_digest")?,
        component_size: row.try_get("component_size")?,
        image: row.try_get("image")?,
        templates: row.try_get("templates")?,
        templates_digest: row.try_get("templates_digest")?,
        bundle_digest: row.try_get("bundle_digest")?,
        registered_by: row.try_get("registered_by")?,
        created_at: millis(row.try_get("created_at")?)?,
        promoted_at: opt_millis(row.try_get("promoted_at")?)?,
        build_inputs: row.try_get("build_inputs")?,
    })
}

fn file_from<R: Row>(row: &R) -> Result<VersionFile>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(VersionFile {
        path: row.try_get("path")?,
        digest: row.try_get("digest")?,
        size: row.try_get("size")?,
    })
}

fn owned_elsewhere(slug: &str) -> StoreError {
    StoreError::Forbidden(format!(
        "the app `{slug}` belongs to another developer; choose another app_id"
    ))
}

impl Store {
    /// Registers a version: creates the app on its first version (owned by `developer_id`),
    /// checks ownership, and writes the version and its files in one transaction.
    pub async fn register_version(&self, new: &NewVersion<'_>) -> Result<Registered> {
        let now = now_millis();
        let (component_digest, component_size) = new.component.unzip();
        let (templates, templates_digest) = new.templates.unzip();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let app_created = sqlx::query(
                "INSERT INTO apps (slug, owner_id, name, status, created_at, updated_at) \
                 VALUES ($1, $2, $3, 'draft', $4, $4) ON CONFLICT (slug) DO NOTHING",
            )
            .bind(new.app_slug).bind(new.developer_id).bind(new.name).bind(now)
            .execute(&mut *tx).await?.rows_affected() == 1;
            let owner: String = sqlx::query("SELECT owner_id FROM apps WHERE slug = $1")
                .bind(new.app_slug).fetch_one(&mut *tx).await?.try_get("owner_id")?;
            if owner != new.developer_id {
                return Err(owned_elsewhere(new.app_slug));
            }
            let inserted = sqlx::query(&format!(
                "INSERT INTO app_versions ({VERSION_COLUMNS}) VALUES \
                 ($1, $2, 'registered', 'success', $3, $4, $5, $6, $7, $8, $9, $10, NULL, $11, $12, NULL, $13) \
                 ON CONFLICT (app_slug, version) DO NOTHING"
            ))
            .bind(new.app_slug).bind(new.version).bind(new.manifest_source).bind(new.manifest_digest)
            .bind(new.content_digest).bind(component_digest).bind(component_size).bind(new.image)
            .bind(templates).bind(templates_digest).bind(new.developer_id).bind(now)
            .bind(new.build_inputs)
            .execute(&mut *tx).await?.rows_affected() == 1;
            if !inserted {
                let row = sqlx::query(
                    "SELECT content_digest, templates_digest FROM app_versions WHERE app_slug = $1 AND version = $2",
                )
                .bind(new.app_slug).bind(new.version).fetch_one(&mut *tx).await?;
                let content: String = row.try_get("content_digest")?;
                let stored_templates: Option<String> = row.try_get("templates_digest")?;
                if content != new.content_digest {
                    return Err(StoreError::Conflict(format!(
                        "version {} of `{}` is already registered with other content; versions are immutable, register a new version",
                        new.version, new.app_slug
                    )));
                }
                if let (Some(sent), Some(stored)) = (templates_digest, stored_templates.as_deref())
                    && sent != stored
                {
                    return Err(StoreError::Conflict(format!(
                        "version {} of `{}` already has other template defaults; they are immutable per version",
                        new.version, new.app_slug
                    )));
                }
                if let (Some(_), None) = (templates_digest, stored_templates.as_deref()) {
                    sqlx::query("UPDATE app_versions SET templates = $1, templates_digest = $2 WHERE app_slug = $3 AND version = $4")
                        .bind(templates).bind(templates_digest).bind(new.app_slug).bind(new.version)
                        .execute(&mut *tx).await?;
                }
                tx.commit().await?;
                return Ok(Registered::Unchanged);
            }
            if let Some((digest, size)) = new.component {
                insert_file(&mut tx, new.app_slug, new.version, FileRole::Component, "app.wasm", digest, size).await?;
            }
            for file in new.docs {
                insert_file(&mut tx, new.app_slug, new.version, FileRole::Docs, &file.path, &file.digest, file.size).await?;
            }
            sqlx::query("UPDATE apps SET name = $1, updated_at = $2 WHERE slug = $3")
                .bind(new.name).bind(now).bind(new.app_slug).execute(&mut *tx).await?;
            tx.commit().await?;
            Ok(Registered::Created { app_created })
        })
    }

    /// Sets a version's frontend bundle (the digest of its file list, and the files) once.
    /// `Ok(false)` when the same bundle was already set; another bundle is a conflict.
    pub async fn set_bundle(
        &self,
        slug: &str,
        version: &str,
        bundle_digest: &str,
        files: &[VersionFile],
    ) -> Result<bool> {
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let set = sqlx::query(
                "UPDATE app_versions SET bundle_digest = $1 WHERE app_slug = $2 AND version = $3 AND bundle_digest IS NULL",
            )
            .bind(bundle_digest).bind(slug).bind(version)
            .execute(&mut *tx).await?.rows_affected() == 1;
            if !set {
                let row = sqlx::query("SELECT bundle_digest FROM app_versions WHERE app_slug = $1 AND version = $2")
                    .bind(slug).bind(version).fetch_optional(&mut *tx).await?;
                let Some(row) = row else {
                    return Err(StoreError::NotFound(format!("version {version} of `{slug}` is not registered")));
                };
                let stored: Option<String> = row.try_get("bundle_digest")?;
                return if stored.as_deref() == Some(bundle_digest) {
                    Ok(false)
                } else {
                    Err(StoreError::Conflict(format!(
                        "version {version} of `{slug}` already has another frontend bundle; bundles are immutable per version, register a new version"
                    )))
                };
            }
            for file in files {
                insert_file(&mut tx, slug, version, FileRole::Bundle, &file.path, &file.digest, file.size).await?;
            }
            tx.commit().await?;
            Ok(true)
        })
    }

    /// Sets a version's template defaults once. `Ok(false)` when the same were already set;
    /// others are a conflict.
    pub async fn set_templates(
        &self,
        slug: &str,
        version: &str,
        templates: &str,
        digest: &str,
    ) -> Result<bool> {
        on_pool!(self, pool => {
            let set = sqlx::query(
                "UPDATE app_versions SET templates = $1, templates_digest = $2 \
                 WHERE app_slug = $3 AND version = $4 AND templates_digest IS NULL",
            )
            .bind(templates).bind(digest).bind(slug).bind(version)
            .execute(pool).await?.rows_affected() == 1;
            if set {
                return Ok(true);
            }
            let row = sqlx::query("SELECT templates_digest FROM app_versions WHERE app_slug = $1 AND version = $2")
                .bind(slug).bind(version).fetch_optional(pool).await?;
            let Some(row) = row else {
                return Err(StoreError::NotFound(format!("version {version} of `{slug}` is not registered")));
            };
            let stored: Option<String> = row.try_get("templates_digest")?;
            if stored.as_deref() == Some(digest) {
                Ok(false)
            } else {
                Err(StoreError::Conflict(format!(
                    "version {version} of `{slug}` already has other template defaults; they are immutable per version, register a new version"
                )))
            }
        })
    }

    /// Makes a version the app's current one: the app becomes active (also from archived) and
    /// the version published.
    pub async fn promote_version(&self, slug: &str, version: &str) -> Result<App> {
        let now = now_millis();
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let found = sqlx::query(
                "UPDATE app_versions SET status = 'published', promoted_at = COALESCE(promoted_at, $1) \
                 WHERE app_slug = $2 AND version = $3",
            )
            .bind(now).bind(slug).bind(version)
            .execute(&mut *tx).await?.rows_affected() == 1;
            if !found {
                return Err(StoreError::NotFound(format!(
                    "version {version} of `{slug}` is not registered; register it before promoting it"
                )));
            }
            sqlx::query(
                "UPDATE apps SET current_version = $1, status = 'active', archived_at = NULL, updated_at = $2 WHERE slug = $3",
            )
            .bind(version).bind(now).bind(slug).execute(&mut *tx).await?;
            tx.commit().await?;
        });
        self.app(slug)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("app `{slug}` vanished")))
    }

    /// Archives an app: it keeps its versions (installs keep running them) and takes no new
    /// installs until a version is promoted again. Archiving an archived app changes nothing.
    pub async fn archive_app(&self, slug: &str) -> Result<App> {
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "UPDATE apps SET status = 'archived', archived_at = COALESCE(archived_at, $1), updated_at = $1 WHERE slug = $2",
            )
            .bind(now).bind(slug).execute(pool).await?;
        });
        self.app(slug)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("there is no app `{slug}`")))
    }

    /// An app by slug.
    pub async fn app(&self, slug: &str) -> Result<Option<App>> {
        on_pool!(self, pool => {
            let row = sqlx::query(&format!("SELECT {APP_COLUMNS} FROM apps WHERE slug = $1"))
                .bind(slug).fetch_optional(pool).await?;
            row.as_ref().map(app_from).transpose()
        })
    }

    /// The apps a developer owns, by slug.
    pub async fn apps_of(&self, developer_id: &str) -> Result<Vec<App>> {
        self.apps_of_page(developer_id, None, i64::MAX).await
    }

    /// A page of the apps a developer owns, by slug: at most `limit`, after slug `after`.
    pub async fn apps_of_page(
        &self,
        developer_id: &str,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<App>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(&format!(
                "SELECT {APP_COLUMNS} FROM apps WHERE owner_id = $1 AND slug > $2 ORDER BY slug LIMIT $3"
            ))
            .bind(developer_id).bind(after.unwrap_or("")).bind(limit)
            .fetch_all(pool).await?;
            rows.iter().map(app_from).collect()
        })
    }

    /// Every version of an app, newest first.
    pub async fn versions(&self, slug: &str) -> Result<Vec<AppVersion>> {
        self.versions_page(slug, None, i64::MAX).await
    }

    /// A page of an app's versions, newest first: at most `limit`, after (older than) the
    /// version registered at `after.0` named `after.1`.
    pub async fn versions_page(
        &self,
        slug: &str,
        after: Option<(Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<AppVersion>> {
        let (at, version) = after.map_or((i64::MAX, ""), |(at, key)| (at.as_millisecond(), key));
        on_pool!(self, pool => {
            let rows = sqlx::query(&format!(
                "SELECT {VERSION_COLUMNS} FROM app_versions WHERE app_slug = $1 \
                 AND (created_at < $2 OR (created_at = $2 AND version < $3)) \
                 ORDER BY created_at DESC, version DESC LIMIT $4"
            ))
            .bind(slug).bind(at).bind(version).bind(limit)
            .fetch_all(pool).await?;
            rows.iter().map(version_from).collect()
        })
    }

    /// One version of an app.
    pub async fn version(&self, slug: &str, version: &str) -> Result<Option<AppVersion>> {
        on_pool!(self, pool => {
            let row = sqlx::query(&format!(
                "SELECT {VERSION_COLUMNS} FROM app_versions WHERE app_slug = $1 AND version = $2"
            ))
            .bind(slug).bind(version).fetch_optional(pool).await?;
            row.as_ref().map(version_from).transpose()
        })
    }

    /// The files of one role of a version, by path.
    pub async fn version_files(
        &self,
        slug: &str,
        version: &str,
        role: FileRole,
    ) -> Result<Vec<VersionFile>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT path, digest, size FROM version_files WHERE app_slug = $1 AND version = $2 AND role = $3 ORDER BY path",
            )
            .bind(slug).bind(version).bind(role.as_str()).fetch_all(pool).await?;
            rows.iter().map(file_from).collect()
        })
    }

    /// Whether any version refers to the blob `digest`: a blob nobody refers to may be deleted.
    pub async fn blob_referenced(&self, digest: &str) -> Result<bool> {
        on_pool!(self, pool => {
            Ok(sqlx::query("SELECT 1 FROM version_files WHERE digest = $1 LIMIT 1")
                .bind(digest).fetch_optional(pool).await?.is_some())
        })
    }
}

async fn insert_file<DB>(
    tx: &mut crate::WriteTx<DB>,
    slug: &str,
    version: &str,
    role: FileRole,
    path: &str,
    digest: &str,
    size: i64,
) -> Result<()>
where
    DB: sqlx::Database,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    for<'e> &'e mut <DB as sqlx::Database>::Connection: sqlx::Executor<'e, Database = DB>,
    for<'q> &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    sqlx::query(
        "INSERT INTO version_files (app_slug, version, role, path, digest, size) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(slug)
    .bind(version)
    .bind(role.as_str())
    .bind(path)
    .bind(digest)
    .bind(size)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

//! The catalogue: the apps new installs can get, with their current versions, in two reads
//! whatever their number.

use crate::apps::{APP_COLUMNS, VERSION_COLUMNS, app_from, version_from};
use crate::{Result, Store, on_pool};

impl Store {
    /// The apps new installs can get: active apps with their current version, by slug.
    pub async fn catalogue(&self) -> Result<Vec<(crate::App, crate::AppVersion)>> {
        let (apps, mut versions) = on_pool!(self, pool => {
            let apps = sqlx::query(&format!(
                "SELECT {APP_COLUMNS} FROM apps WHERE status = 'active' AND current_version IS NOT NULL ORDER BY slug"
            ))
            .fetch_all(pool)
            .await?
            .iter()
            .map(app_from)
            .collect::<Result<Vec<_>>>()?;
            let versions = sqlx::query(&format!(
                "SELECT {VERSION_COLUMNS} FROM app_versions WHERE EXISTS (SELECT 1 FROM apps \
                 WHERE apps.slug = app_versions.app_slug AND apps.status = 'active' \
                 AND apps.current_version = app_versions.version)"
            ))
            .fetch_all(pool)
            .await?
            .iter()
            .map(version_from)
            .collect::<Result<Vec<_>>>()?;
            (apps, versions)
        });
        let mut out = Vec::with_capacity(apps.len());
        for app in apps {
            let found = versions.iter().position(|v| {
                v.app_slug == app.slug && Some(&v.version) == app.current_version.as_ref()
            });
            if let Some(i) = found {
                out.push((app, versions.swap_remove(i)));
            }
        }
        Ok(out)
    }
}

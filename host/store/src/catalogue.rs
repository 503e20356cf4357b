//! The catalogue: the apps new installs can get.

use sqlx::Row;

use crate::{Result, Store, on_pool};

impl Store {
    /// The apps new installs can get: active apps with their current version, by slug.
    pub async fn catalogue(&self) -> Result<Vec<(crate::App, crate::AppVersion)>> {
        let slugs: Vec<String> = on_pool!(self, pool => {
            sqlx::query(
                "SELECT slug FROM apps WHERE status = 'active' AND current_version IS NOT NULL ORDER BY slug",
            )
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| row.try_get("slug"))
            .collect::<Result<_, sqlx::Error>>()?
        });
        let mut out = Vec::with_capacity(slugs.len());
        for slug in slugs {
            let Some(app) = self.app(&slug).await? else {
                continue;
            };
            let Some(current) = app.current_version.clone() else {
                continue;
            };
            if let Some(version) = self.version(&slug, &current).await? {
                out.push((app, version));
            }
        }
        Ok(out)
    }
}

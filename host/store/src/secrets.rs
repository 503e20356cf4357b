//! An app's default secrets, as sealed text: the store never sees a value in clear (the
//! platform seals and opens them with the host's secrets key).

use jiff::Timestamp;
use sqlx::Row;

use crate::{Result, Store, millis, now_millis, on_pool};

/// A secret's metadata: everything but the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMeta {
    /// `^[A-Z][A-Z0-9_]{0,63}$`.
    pub key: String,
    /// What it is for.
    pub description: Option<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last change of the value or description.
    pub updated_at: Timestamp,
}

fn meta_from<R: Row>(row: &R) -> Result<SecretMeta>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(SecretMeta {
        key: row.try_get("key")?,
        description: row.try_get("description")?,
        created_at: millis(row.try_get("created_at")?)?,
        updated_at: millis(row.try_get("updated_at")?)?,
    })
}

impl Store {
    /// Creates or replaces a secret's sealed value; a `None` description keeps the stored one.
    /// Returns the metadata and whether the secret is new.
    pub async fn put_secret(
        &self,
        slug: &str,
        key: &str,
        description: Option<&str>,
        sealed: &str,
    ) -> Result<(SecretMeta, bool)> {
        let now = now_millis();
        let created = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let existed = sqlx::query("SELECT 1 FROM app_secrets WHERE app_slug = $1 AND key = $2")
                .bind(slug).bind(key).fetch_optional(&mut *tx).await?.is_some();
            sqlx::query(
                "INSERT INTO app_secrets (app_slug, key, description, sealed, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $5) ON CONFLICT (app_slug, key) DO UPDATE SET \
                   sealed = excluded.sealed, \
                   description = COALESCE(excluded.description, app_secrets.description), \
                   updated_at = excluded.updated_at",
            )
            .bind(slug).bind(key).bind(description).bind(sealed).bind(now)
            .execute(&mut *tx).await?;
            tx.commit().await?;
            !existed
        });
        let meta = self.secret(slug, key).await?.ok_or_else(|| {
            crate::StoreError::NotFound(format!("secret {key} of `{slug}` vanished"))
        })?;
        Ok((meta, created))
    }

    /// The metadata of an app's secrets, by key.
    pub async fn secrets(&self, slug: &str) -> Result<Vec<SecretMeta>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT key, description, created_at, updated_at FROM app_secrets WHERE app_slug = $1 ORDER BY key",
            )
            .bind(slug).fetch_all(pool).await?;
            rows.iter().map(meta_from).collect()
        })
    }

    /// One secret's metadata.
    pub async fn secret(&self, slug: &str, key: &str) -> Result<Option<SecretMeta>> {
        on_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT key, description, created_at, updated_at FROM app_secrets WHERE app_slug = $1 AND key = $2",
            )
            .bind(slug).bind(key).fetch_optional(pool).await?;
            row.as_ref().map(meta_from).transpose()
        })
    }

    /// One secret's sealed value, for the platform to open when an app reads it.
    pub async fn sealed_secret(&self, slug: &str, key: &str) -> Result<Option<String>> {
        on_pool!(self, pool => {
            let row = sqlx::query("SELECT sealed FROM app_secrets WHERE app_slug = $1 AND key = $2")
                .bind(slug).bind(key).fetch_optional(pool).await?;
            row.map(|r| r.try_get("sealed").map_err(Into::into)).transpose()
        })
    }

    /// Deletes a secret; `false` when there was none.
    pub async fn delete_secret(&self, slug: &str, key: &str) -> Result<bool> {
        on_pool!(self, pool => {
            Ok(sqlx::query("DELETE FROM app_secrets WHERE app_slug = $1 AND key = $2")
                .bind(slug).bind(key).execute(pool).await?.rows_affected() == 1)
        })
    }
}

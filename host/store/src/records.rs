//! An app's own records, per install (the `records.*` platform tools). Every query names the
//! organization, the tenant and the app: an app reads and writes its own records only.

use serde_json::{Map, Value};
use sqlx::Row;

use crate::{InstallKey, Result, Store, StoreError, now_millis, on_pool};

/// A stored record.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its id, unique within the install.
    pub id: String,
    /// Its type.
    pub record_type: String,
    /// The record, its `id` included.
    pub data: Map<String, Value>,
}

fn record_from<R: Row>(row: &R) -> Result<Record>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let data: String = row.try_get("data")?;
    Ok(Record {
        id: row.try_get("id")?,
        record_type: row.try_get("record_type")?,
        data: serde_json::from_str(&data)
            .map_err(|e| StoreError::Corrupt(format!("a stored record is not JSON: {e}")))?,
    })
}

impl Store {
    /// Creates or replaces a record.
    pub async fn put_record(
        &self,
        install: &InstallKey,
        id: &str,
        record_type: &str,
        data: &Map<String, Value>,
    ) -> Result<()> {
        let now = now_millis();
        let text = serde_json::to_string(data)
            .map_err(|e| StoreError::Internal(format!("cannot encode the record: {e}")))?;
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO app_records (org_id, tenant_id, app_slug, id, record_type, data, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (org_id, tenant_id, app_slug, id) DO UPDATE SET \
                   record_type = excluded.record_type, data = excluded.data, updated_at = excluded.updated_at",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug).bind(id).bind(record_type).bind(&text).bind(now)
            .execute(pool).await?;
        });
        Ok(())
    }

    /// One record by id.
    pub async fn record(&self, install: &InstallKey, id: &str) -> Result<Option<Record>> {
        on_pool!(self, pool => {
            let row = sqlx::query(
                "SELECT id, record_type, data FROM app_records WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND id = $4",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug).bind(id)
            .fetch_optional(pool).await?;
            row.as_ref().map(record_from).transpose()
        })
    }

    /// The records of a type, oldest first, at most `limit`.
    pub async fn records(
        &self,
        install: &InstallKey,
        record_type: &str,
        limit: i64,
    ) -> Result<Vec<Record>> {
        on_pool!(self, pool => {
            let rows = sqlx::query(
                "SELECT id, record_type, data FROM app_records \
                 WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND record_type = $4 \
                 ORDER BY created_at, id LIMIT $5",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug).bind(record_type).bind(limit)
            .fetch_all(pool).await?;
            rows.iter().map(record_from).collect()
        })
    }

    /// Deletes a record; `false` when there was none.
    pub async fn delete_record(&self, install: &InstallKey, id: &str) -> Result<bool> {
        on_pool!(self, pool => {
            Ok(sqlx::query(
                "DELETE FROM app_records WHERE org_id = $1 AND tenant_id = $2 AND app_slug = $3 AND id = $4",
            )
            .bind(&install.org_id).bind(&install.tenant_id).bind(&install.app_slug).bind(id)
            .execute(pool).await?.rows_affected() == 1)
        })
    }
}

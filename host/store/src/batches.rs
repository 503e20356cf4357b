//! Batches: items are stored with the batch, claimed one at a time by a runner, and written
//! back with their result and their metering in one transaction guarded by the claim, so an
//! item's result and cost are recorded exactly once whatever happens to the host.

use jiff::Timestamp;
use sqlx::Row;

use crate::{
    Result, Store, StoreError, TenantKey, UsageRecord, millis, now_millis, on_pool, random_hex,
};

/// A batch item's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemStatus {
    /// Waiting to run.
    Queued,
    /// Claimed by a runner.
    Running,
    /// Finished with a completion.
    Completed,
    /// Finished with an error.
    Failed,
}

impl ItemStatus {
    fn as_str(self) -> &'static str {
        match self {
            ItemStatus::Queued => "queued",
            ItemStatus::Running => "running",
            ItemStatus::Completed => "completed",
            ItemStatus::Failed => "failed",
        }
    }

    fn parse(s: &str) -> ItemStatus {
        match s {
            "running" => ItemStatus::Running,
            "completed" => ItemStatus::Completed,
            "failed" => ItemStatus::Failed,
            _ => ItemStatus::Queued,
        }
    }
}

/// One item of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchItem {
    /// The batch.
    pub batch_id: String,
    /// Its position in the batch.
    pub index: i64,
    /// The caller's id for the item.
    pub custom_id: String,
    /// The item's request, as JSON text.
    pub request: String,
    /// Its state.
    pub status: ItemStatus,
    /// Its result (a completion or an error), as JSON text, once finished.
    pub result: Option<String>,
}

/// A batch with its items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// `batch_...`.
    pub id: String,
    /// The tenant the batch is attributed to.
    pub tenant_id: String,
    /// Creation time.
    pub created_at: Timestamp,
    /// The items, in order.
    pub items: Vec<BatchItem>,
}

/// A batch without its items: what a list of batches shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchSummary {
    /// `batch_...`.
    pub id: String,
    /// The tenant the batch is attributed to.
    pub tenant_id: String,
    /// Creation time.
    pub created_at: Timestamp,
    /// How many items it holds.
    pub total: i64,
    /// How many finished with a completion.
    pub completed: i64,
    /// How many finished with an error.
    pub failed: i64,
}

/// An item claimed by a runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedItem {
    /// The item.
    pub item: BatchItem,
    /// The organization of its batch.
    pub org_id: String,
    /// The tenant of its batch.
    pub tenant_id: String,
    /// The claim token that must match when the result is written.
    pub claim: String,
}

impl Store {
    /// Stores a batch and its items (custom id and request JSON each), all queued.
    pub async fn create_batch(
        &self,
        tenant: &TenantKey,
        items: &[(String, String)],
    ) -> Result<String> {
        let TenantKey { org_id, tenant_id } = tenant;
        crate::tenants::check_tenant_id(tenant_id)?;
        let id = format!("batch_{}", random_hex(12)?);
        let now = now_millis();
        let count = i64::try_from(items.len()).unwrap_or(i64::MAX);
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            sqlx::query("INSERT INTO tenants (org_id, id, created_at, updated_at) VALUES ($1, $2, $3, $3) ON CONFLICT (org_id, id) DO NOTHING")
                .bind(org_id).bind(tenant_id).bind(now).execute(&mut *tx).await?;
            sqlx::query("INSERT INTO batches (id, org_id, tenant_id, item_count, created_at) VALUES ($1, $2, $3, $4, $5)")
                .bind(&id).bind(org_id).bind(tenant_id).bind(count).bind(now).execute(&mut *tx).await?;
            for (index, (custom_id, request)) in items.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO batch_items (batch_id, idx, custom_id, request, status, updated_at) VALUES ($1, $2, $3, $4, 'queued', $5)",
                )
                .bind(&id)
                .bind(i64::try_from(index).unwrap_or(i64::MAX))
                .bind(custom_id)
                .bind(request)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
        });
        Ok(id)
    }

    /// A batch of an organization, with its items.
    pub async fn batch(&self, org_id: &str, id: &str) -> Result<Option<Batch>> {
        let batch = on_pool!(self, pool => {
            let Some(row) = sqlx::query("SELECT id, tenant_id, created_at FROM batches WHERE id = $1 AND org_id = $2")
                .bind(id).bind(org_id).fetch_optional(pool).await? else { return Ok(None) };
            let items = sqlx::query("SELECT batch_id, idx, custom_id, request, status, result FROM batch_items WHERE batch_id = $1 ORDER BY idx")
                .bind(id)
                .fetch_all(pool)
                .await?
                .iter()
                .map(item_from_row)
                .collect::<Result<Vec<_>, sqlx::Error>>()?;
            Batch { id: row.try_get("id")?, tenant_id: row.try_get("tenant_id")?, created_at: millis(row.try_get("created_at")?)?, items }
        });
        Ok(Some(batch))
    }

    /// A page of an organization's batches, newest first, with their counts: at most `limit`,
    /// after (older than) the batch created at `after.0` with id `after.1`.
    pub async fn batches_page(
        &self,
        org_id: &str,
        after: Option<(Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<BatchSummary>> {
        let (at, id) = after.map_or((i64::MAX, ""), |(at, key)| (at.as_millisecond(), key));
        const SQL: &str = "SELECT b.id, b.tenant_id, b.created_at, \
             CAST(COUNT(i.idx) AS BIGINT) AS total, \
             CAST(COALESCE(SUM(CASE WHEN i.status = 'completed' THEN 1 ELSE 0 END), 0) AS BIGINT) AS completed, \
             CAST(COALESCE(SUM(CASE WHEN i.status = 'failed' THEN 1 ELSE 0 END), 0) AS BIGINT) AS failed \
             FROM batches b LEFT JOIN batch_items i ON i.batch_id = b.id \
             WHERE b.org_id = $1 AND (b.created_at < $2 OR (b.created_at = $2 AND b.id < $3)) \
             GROUP BY b.id, b.tenant_id, b.created_at \
             ORDER BY b.created_at DESC, b.id DESC LIMIT $4";
        let list = on_pool!(self, pool => {
            sqlx::query(SQL).bind(org_id).bind(at).bind(id).bind(limit).fetch_all(pool).await?
                .iter()
                .map(|r| Ok(BatchSummary {
                    id: r.try_get("id")?,
                    tenant_id: r.try_get("tenant_id")?,
                    created_at: millis(r.try_get("created_at")?)?,
                    total: r.try_get("total")?,
                    completed: r.try_get("completed")?,
                    failed: r.try_get("failed")?,
                }))
                .collect::<Result<Vec<_>>>()?
        });
        Ok(list)
    }

    /// Re-queues items claimed before `stale_before` that never finished:
    /// their runner is gone (a restart). Returns how many.
    pub async fn requeue_stale_items(&self, stale_before: Timestamp) -> Result<u64> {
        let n = on_pool!(self, pool => {
            sqlx::query("UPDATE batch_items SET status = 'queued', claim = NULL, claimed_at = NULL WHERE status = 'running' AND claimed_at < $1")
                .bind(stale_before.as_millisecond()).execute(pool).await?.rows_affected()
        });
        Ok(n)
    }

    /// Claims the oldest queued item, if any. Only one claimer can win an item.
    pub async fn claim_batch_item(&self) -> Result<Option<ClaimedItem>> {
        let claim = random_hex(12)?;
        loop {
            let now = now_millis();
            let candidate = on_pool!(self, pool => {
                sqlx::query(
                    "SELECT i.batch_id, i.idx, i.custom_id, i.request, i.status, i.result, b.org_id, b.tenant_id \
                     FROM batch_items i JOIN batches b ON b.id = i.batch_id WHERE i.status = 'queued' \
                     ORDER BY b.created_at, i.batch_id, i.idx LIMIT 1",
                )
                .fetch_optional(pool)
                .await?
                .map(|r| -> Result<(BatchItem, String, String), sqlx::Error> { Ok((item_from_row(&r)?, r.try_get("org_id")?, r.try_get("tenant_id")?)) })
                .transpose()?
            });
            let Some((item, org_id, tenant_id)) = candidate else {
                return Ok(None);
            };
            let won = on_pool!(self, pool => {
                sqlx::query("UPDATE batch_items SET status = 'running', claim = $1, claimed_at = $2, updated_at = $2 WHERE batch_id = $3 AND idx = $4 AND status = 'queued'")
                    .bind(&claim).bind(now).bind(&item.batch_id).bind(item.index).execute(pool).await?.rows_affected()
            });
            if won == 1 {
                return Ok(Some(ClaimedItem {
                    item: BatchItem {
                        status: ItemStatus::Running,
                        ..item
                    },
                    org_id,
                    tenant_id,
                    claim,
                }));
            }
            // Another runner took it first: look again.
        }
    }

    /// Writes an item's result and, for a completion, its metering, in one transaction. Fails
    /// with `NotFound` when the claim no longer holds (the item was re-queued and claimed
    /// again): nothing is written twice.
    pub async fn finish_batch_item(
        &self,
        claimed: &ClaimedItem,
        status: ItemStatus,
        result: &str,
        usage: Option<&UsageRecord>,
    ) -> Result<()> {
        let now = now_millis();
        let usage_id = format!("use_{}", random_hex(12)?);
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let updated = sqlx::query("UPDATE batch_items SET status = $1, result = $2, updated_at = $3 WHERE batch_id = $4 AND idx = $5 AND claim = $6 AND status = 'running'")
                .bind(status.as_str()).bind(result).bind(now).bind(&claimed.item.batch_id).bind(claimed.item.index).bind(&claimed.claim)
                .execute(&mut *tx).await?.rows_affected();
            if updated != 1 {
                tx.rollback().await?;
                return Err(StoreError::NotFound(format!("batch item {}#{} is no longer claimed by this runner", claimed.item.batch_id, claimed.item.index)));
            }
            if let Some(r) = usage {
                sqlx::query(
                    "INSERT INTO usage_records (id, org_id, tenant_id, kind, provider, model, prompt_tokens, \
                     completion_tokens, cost_micros, batch, created_at, app_slug) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                )
                .bind(&usage_id).bind(&r.org_id).bind(&r.tenant_id).bind(&r.kind).bind(&r.provider).bind(&r.model)
                .bind(r.prompt_tokens).bind(r.completion_tokens).bind(r.cost_micros).bind(i64::from(r.batch)).bind(now).bind(&r.app_slug)
                .execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(())
    }
}

fn item_from_row<R: Row>(r: &R) -> Result<BatchItem, sqlx::Error>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    Option<String>: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    let status: String = r.try_get("status")?;
    Ok(BatchItem {
        batch_id: r.try_get("batch_id")?,
        index: r.try_get("idx")?,
        custom_id: r.try_get("custom_id")?,
        request: r.try_get("request")?,
        status: ItemStatus::parse(&status),
        result: r.try_get("result")?,
    })
}

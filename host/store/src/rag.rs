//! Retrieval bookkeeping: collections per tenant and their documents. The chunks and vectors
//! themselves are in LanceDB (atrium-retrieval); this is the listing, the ownership and the
//! state of each document.

use jiff::Timestamp;
use sqlx::Row;

use crate::{Result, Store, StoreError, TenantKey, millis, now_millis, on_pool, random_hex};

/// Longest collection name.
pub const MAX_COLLECTION_NAME: usize = 128;

/// A collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collection {
    /// The host's id (`col_` and 24 hex digits), also the name of its LanceDB table.
    pub id: String,
    /// The owning organization.
    pub org_id: String,
    /// The owning tenant.
    pub tenant_id: String,
    /// The name in the path.
    pub name: String,
    /// The embedder's provider (`local`, `mistral`, `ovh`, `ollama`), fixed at creation.
    pub embedder: String,
    /// The embedder's model, fixed at creation.
    pub model: String,
    /// Creation time.
    pub created_at: Timestamp,
}

/// A collection with its counts, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CollectionSummary {
    /// The collection.
    pub collection: Collection,
    /// Indexed documents.
    pub documents: i64,
    /// Chunks of the indexed documents.
    pub chunks: i64,
}

/// A document of a collection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// `doc_` and 24 hex digits.
    pub id: String,
    /// The collection's id.
    pub collection_id: String,
    /// The title.
    pub title: String,
    /// Where the text came from: `text`, `pdf` or `file`.
    pub source: String,
    /// Number of chunks.
    pub chunks: i64,
    /// Characters of text.
    pub chars: i64,
    /// `indexing` or `indexed`.
    pub status: String,
    /// Creation time.
    pub created_at: Timestamp,
}

/// Checks a collection name: 1 to 128 characters among letters, digits, `-`, `_` and `.`.
pub fn check_collection_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_COLLECTION_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid(format!(
            "a collection name is 1 to {MAX_COLLECTION_NAME} characters among letters, digits, `-`, `_` and `.`, got {name:?}"
        )))
    }
}

fn collection_from_row<R: Row>(row: &R) -> Result<Collection>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(Collection {
        id: row.try_get("id")?,
        org_id: row.try_get("org_id")?,
        tenant_id: row.try_get("tenant_id")?,
        name: row.try_get("name")?,
        embedder: row.try_get("embedder")?,
        model: row.try_get("model")?,
        created_at: millis(row.try_get("created_at")?)?,
    })
}

fn document_from_row<R: Row>(row: &R) -> Result<Document>
where
    for<'a> &'a str: sqlx::ColumnIndex<R>,
    String: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
    i64: for<'a> sqlx::Decode<'a, R::Database> + sqlx::Type<R::Database>,
{
    Ok(Document {
        id: row.try_get("id")?,
        collection_id: row.try_get("collection_id")?,
        title: row.try_get("title")?,
        source: row.try_get("source")?,
        chunks: row.try_get("chunks")?,
        chars: row.try_get("chars")?,
        status: row.try_get("status")?,
        created_at: millis(row.try_get("created_at")?)?,
    })
}

const COLLECTION_COLUMNS: &str = "id, org_id, tenant_id, name, embedder, model, created_at";
const DOCUMENT_COLUMNS: &str =
    "id, collection_id, title, source, chunks, chars, status, created_at";

impl Store {
    /// Creates a collection of a tenant (and the tenant, on first use) unless it exists.
    /// Returns the collection and whether this call created it. An existing collection keeps
    /// its embedder.
    pub async fn create_collection(
        &self,
        tenant: &TenantKey,
        name: &str,
        embedder: &str,
        model: &str,
    ) -> Result<(Collection, bool)> {
        let TenantKey { org_id, tenant_id } = tenant;
        crate::tenants::check_tenant_id(tenant_id)?;
        check_collection_name(name)?;
        let id = format!("col_{}", random_hex(12)?);
        let now = now_millis();
        let inserted = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            sqlx::query("INSERT INTO tenants (org_id, id, created_at, updated_at) VALUES ($1, $2, $3, $3) ON CONFLICT (org_id, id) DO NOTHING")
                .bind(org_id).bind(tenant_id).bind(now).execute(&mut *tx).await?;
            let n = sqlx::query(
                "INSERT INTO rag_collections (id, org_id, tenant_id, name, embedder, model, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (org_id, tenant_id, name) DO NOTHING",
            )
            .bind(&id).bind(org_id).bind(tenant_id).bind(name).bind(embedder).bind(model).bind(now)
            .execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            n == 1
        });
        let collection = self.collection(tenant, name).await?.ok_or_else(|| {
            StoreError::NotFound(format!("collection {name} vanished while it was created"))
        })?;
        Ok((collection, inserted))
    }

    /// A collection of a tenant, by name.
    pub async fn collection(&self, tenant: &TenantKey, name: &str) -> Result<Option<Collection>> {
        let TenantKey { org_id, tenant_id } = tenant;
        let sql = format!(
            "SELECT {COLLECTION_COLUMNS} FROM rag_collections WHERE org_id = $1 AND tenant_id = $2 AND name = $3"
        );
        let found = on_pool!(self, pool => {
            match sqlx::query(&sql).bind(org_id).bind(tenant_id).bind(name).fetch_optional(pool).await? {
                Some(row) => Some(collection_from_row(&row)?),
                None => None,
            }
        });
        Ok(found)
    }

    /// A collection by its id.
    pub async fn collection_by_id(&self, id: &str) -> Result<Option<Collection>> {
        let sql = format!("SELECT {COLLECTION_COLUMNS} FROM rag_collections WHERE id = $1");
        let found = on_pool!(self, pool => {
            match sqlx::query(&sql).bind(id).fetch_optional(pool).await? {
                Some(row) => Some(collection_from_row(&row)?),
                None => None,
            }
        });
        Ok(found)
    }

    /// The collections of a tenant, by name, with their indexed documents and chunks.
    pub async fn list_collections(&self, tenant: &TenantKey) -> Result<Vec<CollectionSummary>> {
        let TenantKey { org_id, tenant_id } = tenant;
        let sql = "SELECT c.id, c.org_id, c.tenant_id, c.name, c.embedder, c.model, c.created_at, \
                   COUNT(d.id) AS documents, CAST(COALESCE(SUM(d.chunks), 0) AS BIGINT) AS chunks \
                   FROM rag_collections c LEFT JOIN rag_documents d \
                   ON d.collection_id = c.id AND d.status = 'indexed' \
                   WHERE c.org_id = $1 AND c.tenant_id = $2 \
                   GROUP BY c.id, c.org_id, c.tenant_id, c.name, c.embedder, c.model, c.created_at \
                   ORDER BY c.name";
        let list = on_pool!(self, pool => {
            let rows = sqlx::query(sql).bind(org_id).bind(tenant_id).fetch_all(pool).await?;
            let mut list = Vec::with_capacity(rows.len());
            for row in &rows {
                list.push(CollectionSummary {
                    collection: collection_from_row(row)?,
                    documents: row.try_get("documents")?,
                    chunks: row.try_get::<i64, _>("chunks")?,
                });
            }
            list
        });
        Ok(list)
    }

    /// Records a document as `indexing` before its chunks are written. Returns its id.
    pub async fn begin_document(
        &self,
        collection_id: &str,
        title: &str,
        source: &str,
        chunks: i64,
        chars: i64,
    ) -> Result<String> {
        let id = format!("doc_{}", random_hex(12)?);
        let now = now_millis();
        on_pool!(self, pool => {
            sqlx::query(
                "INSERT INTO rag_documents (id, collection_id, title, source, chunks, chars, status, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, 'indexing', $7)",
            )
            .bind(&id).bind(collection_id).bind(title).bind(source).bind(chunks).bind(chars).bind(now)
            .execute(pool).await?;
        });
        Ok(id)
    }

    /// Marks a document `indexed` once all its chunks are written, and counts a write for the
    /// collection's upkeep.
    pub async fn finish_document(&self, collection_id: &str, id: &str) -> Result<()> {
        on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let n = sqlx::query("UPDATE rag_documents SET status = 'indexed' WHERE id = $1 AND collection_id = $2 AND status = 'indexing'")
                .bind(id).bind(collection_id).execute(&mut *tx).await?.rows_affected();
            if n != 1 {
                return Err(StoreError::NotFound(format!("document {id} is not being indexed")));
            }
            sqlx::query("UPDATE rag_collections SET pending_writes = pending_writes + 1 WHERE id = $1")
                .bind(collection_id).execute(&mut *tx).await?;
            tx.commit().await?;
        });
        Ok(())
    }

    /// Removes a document's row. Returns whether it existed.
    pub async fn remove_document(&self, collection_id: &str, id: &str) -> Result<bool> {
        let n = on_pool!(self, pool => {
            let mut tx = crate::WriteTransaction::begin_write(pool).await?;
            let n = sqlx::query("DELETE FROM rag_documents WHERE id = $1 AND collection_id = $2")
                .bind(id).bind(collection_id).execute(&mut *tx).await?.rows_affected();
            sqlx::query("UPDATE rag_collections SET pending_writes = pending_writes + 1 WHERE id = $1")
                .bind(collection_id).execute(&mut *tx).await?;
            tx.commit().await?;
            n
        });
        Ok(n == 1)
    }

    /// A document of a collection.
    pub async fn document(&self, collection_id: &str, id: &str) -> Result<Option<Document>> {
        let sql = format!(
            "SELECT {DOCUMENT_COLUMNS} FROM rag_documents WHERE id = $1 AND collection_id = $2"
        );
        let found = on_pool!(self, pool => {
            match sqlx::query(&sql).bind(id).bind(collection_id).fetch_optional(pool).await? {
                Some(row) => Some(document_from_row(&row)?),
                None => None,
            }
        });
        Ok(found)
    }

    /// The indexed documents of a collection, oldest first.
    pub async fn documents(&self, collection_id: &str) -> Result<Vec<Document>> {
        self.documents_page(collection_id, None, i64::MAX).await
    }

    /// A page of a collection's indexed documents, oldest first: at most `limit`, after the
    /// document created at `after.0` with id `after.1`.
    pub async fn documents_page(
        &self,
        collection_id: &str,
        after: Option<(Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<Document>> {
        let (at, id) = after.map_or((i64::MIN, ""), |(at, key)| (at.as_millisecond(), key));
        let sql = format!(
            "SELECT {DOCUMENT_COLUMNS} FROM rag_documents WHERE collection_id = $1 AND status = 'indexed' \
             AND (created_at > $2 OR (created_at = $2 AND id > $3)) ORDER BY created_at, id LIMIT $4"
        );
        let list = on_pool!(self, pool => {
            sqlx::query(&sql).bind(collection_id).bind(at).bind(id).bind(limit).fetch_all(pool).await?
                .iter().map(document_from_row).collect::<Result<Vec<_>, _>>()?
        });
        Ok(list)
    }

    /// Which of `ids` are indexed documents of the collection.
    pub async fn indexed_documents(
        &self,
        collection_id: &str,
        ids: &[String],
    ) -> Result<Vec<String>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders: Vec<String> = (0..ids.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "SELECT id FROM rag_documents WHERE collection_id = $1 AND status = 'indexed' AND id IN ({})",
            placeholders.join(", ")
        );
        let list = on_pool!(self, pool => {
            let mut query = sqlx::query(&sql).bind(collection_id);
            for id in ids {
                query = query.bind(id);
            }
            let rows = query.fetch_all(pool).await?;
            let mut list = Vec::with_capacity(rows.len());
            for row in &rows {
                list.push(row.try_get("id")?);
            }
            list
        });
        Ok(list)
    }

    /// Documents left `indexing` (by a host that stopped mid-write) that started before
    /// `before`: (collection id, document id).
    pub async fn unfinished_documents(&self, before: Timestamp) -> Result<Vec<(String, String)>> {
        let list = on_pool!(self, pool => {
            let rows = sqlx::query("SELECT collection_id, id FROM rag_documents WHERE status = 'indexing' AND created_at < $1")
                .bind(before.as_millisecond()).fetch_all(pool).await?;
            let mut list = Vec::with_capacity(rows.len());
            for row in &rows {
                list.push((row.try_get("collection_id")?, row.try_get("id")?));
            }
            list
        });
        Ok(list)
    }

    /// Collections with writes since their last upkeep, most writes first: (id, writes).
    pub async fn collections_needing_upkeep(&self, limit: i64) -> Result<Vec<(String, i64)>> {
        let list = on_pool!(self, pool => {
            let rows = sqlx::query("SELECT id, pending_writes FROM rag_collections WHERE pending_writes > 0 ORDER BY pending_writes DESC LIMIT $1")
                .bind(limit).fetch_all(pool).await?;
            let mut list = Vec::with_capacity(rows.len());
            for row in &rows {
                list.push((row.try_get("id")?, row.try_get("pending_writes")?));
            }
            list
        });
        Ok(list)
    }

    /// Records that upkeep covered `writes` writes of a collection (later writes stay
    /// pending).
    pub async fn upkeep_done(&self, collection_id: &str, writes: i64) -> Result<()> {
        on_pool!(self, pool => {
            sqlx::query("UPDATE rag_collections SET pending_writes = CASE WHEN pending_writes > $2 THEN pending_writes - $2 ELSE 0 END WHERE id = $1")
                .bind(collection_id).bind(writes).execute(pool).await?;
        });
        Ok(())
    }
}

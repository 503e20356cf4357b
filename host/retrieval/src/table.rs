//! The LanceDB side: one table per collection, named after the collection's id.
//!
//! Columns: `id` (`<document id>:<position>`), `document_id`, `title`, `position`, `text` and
//! `vector` (1024 × f32). A full-text (BM25) index on `text` is made with the first document; a
//! vector index (IVF-PQ, cosine) once the table has [`crate::RetrievalConfig::vector_index_rows`]
//! rows. Rows not yet in an index are still searched (LanceDB scans them alongside the index),
//! so a new document is found at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::types::Float32Type;
use arrow_array::{Array, FixedSizeListArray, RecordBatch, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lancedb::database::CreateTableMode;
use lancedb::index::{Index, IndexType};
use lancedb::{Connection, Table};
use tokio::sync::{Mutex, OnceCell, oneshot};

use crate::chunk::Chunk;
use crate::health::{Connector, Health};
use atrium_inference::embed::DIMENSIONS;

/// The schema of every collection table.
pub(crate) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("document_id", DataType::Utf8, false),
        Field::new("title", DataType::Utf8, false),
        Field::new("position", DataType::UInt32, false),
        Field::new("text", DataType::Utf8, false),
        Field::new(
            "vector",
            DataType::FixedSizeList(
                Arc::new(Field::new("item", DataType::Float32, true)),
                DIMENSIONS as i32,
            ),
            false,
        ),
    ]))
}

/// The rows of one document.
pub(crate) fn rows(
    document_id: &str,
    title: &str,
    chunks: &[Chunk],
    vectors: Vec<Vec<f32>>,
) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let n = chunks.len();
    let ids = StringArray::from_iter_values(
        chunks
            .iter()
            .map(|c| format!("{document_id}:{}", c.position)),
    );
    let documents = StringArray::from_iter_values(std::iter::repeat_n(document_id, n));
    let titles = StringArray::from_iter_values(std::iter::repeat_n(title, n));
    let positions = UInt32Array::from_iter_values(chunks.iter().map(|c| c.position));
    let texts = StringArray::from_iter_values(chunks.iter().map(|c| c.text.as_str()));
    let vectors = FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
        vectors
            .into_iter()
            .map(|v| Some(v.into_iter().map(Some).collect::<Vec<_>>())),
        DIMENSIONS as i32,
    );
    // The vector field is declared non-nullable; the list built above has no nulls.
    let vectors = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, true)),
        DIMENSIONS as i32,
        vectors.values().clone(),
        None,
    )?;
    RecordBatch::try_new(
        schema(),
        vec![
            Arc::new(ids),
            Arc::new(documents),
            Arc::new(titles),
            Arc::new(positions),
            Arc::new(texts),
            Arc::new(vectors) as Arc<dyn Array>,
        ],
    )
}

/// An open collection table, what indexes it has, and its appends waiting to be committed.
#[derive(Clone)]
pub(crate) struct Handle {
    pub table: Table,
    pub fts: Arc<AtomicBool>,
    pub vector_index: Arc<AtomicBool>,
    appends: Arc<Appends>,
}

/// Rows waiting for a commit, and where their writer waits for its result.
type Queued = (RecordBatch, oneshot::Sender<Result<(), String>>);

/// Group commit of appends: documents written at the same time share one LanceDB commit.
/// Each writer queues its rows, then whoever holds the commit lock writes everything queued
/// in one append; a writer whose rows went out with another's commit gets its result from
/// that commit. One commit instead of one per document keeps the table's manifest and its
/// file count small, which is what slows a growing table's writes down.
#[derive(Default)]
struct Appends {
    queued: std::sync::Mutex<Vec<Queued>>,
    commit: Mutex<()>,
}

impl Handle {
    /// Appends `rows`, in one commit with any rows other writers append meanwhile. The error
    /// is the commit's, shared by every writer in it.
    pub async fn append(&self, rows: RecordBatch) -> Result<(), String> {
        let (sender, receiver) = oneshot::channel();
        self.appends
            .queued
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((rows, sender));
        {
            let _commit = self.appends.commit.lock().await;
            let queued = std::mem::take(
                &mut *self
                    .appends
                    .queued
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()),
            );
            if !queued.is_empty() {
                let (batches, writers): (Vec<_>, Vec<_>) = queued.into_iter().unzip();
                let result = self
                    .table
                    .add(batches)
                    .execute()
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string());
                for writer in writers {
                    let _ = writer.send(result.clone());
                }
            }
        }
        receiver
            .await
            .unwrap_or_else(|_| Err("the commit was abandoned".to_owned()))
    }

    pub fn has_fts(&self) -> bool {
        self.fts.load(Ordering::Acquire)
    }

    pub fn has_vector_index(&self) -> bool {
        self.vector_index.load(Ordering::Acquire)
    }

    /// Reads which indexes the table has.
    async fn refresh_indexes(&self) -> lancedb::Result<()> {
        let indices = self.table.list_indices().await?;
        let has = |column: &str, fts: bool| {
            indices.iter().any(|i| {
                i.columns.iter().any(|c| c == column)
                    && (matches!(i.index_type, IndexType::FTS) == fts)
            })
        };
        self.fts.store(has("text", true), Ordering::Release);
        self.vector_index
            .store(has("vector", false), Ordering::Release);
        Ok(())
    }

    /// Creates the full-text index on `text` (English stemming and stop words, lower case,
    /// ASCII folding) unless it exists.
    pub async fn ensure_fts(&self) -> lancedb::Result<()> {
        if self.has_fts() {
            return Ok(());
        }
        self.table
            .create_index(&["text"], Index::FTS(Default::default()))
            .replace(true)
            .execute()
            .await?;
        self.fts.store(true, Ordering::Release);
        Ok(())
    }

    /// Creates the IVF-PQ vector index (cosine; √rows partitions; 64 sub-vectors of 16
    /// dimensions each).
    pub async fn create_vector_index(&self, rows: usize) -> lancedb::Result<()> {
        let partitions = ((rows as f64).sqrt().round() as u32).clamp(1, 4096);
        let builder = lancedb::index::vector::IvfPqIndexBuilder::default()
            .distance_type(lancedb::DistanceType::Cosine)
            .num_partitions(partitions)
            .num_sub_vectors((DIMENSIONS / 16) as u32);
        self.table
            .create_index(&["vector"], Index::IvfPq(builder))
            .replace(true)
            .execute()
            .await?;
        self.vector_index.store(true, Ordering::Release);
        Ok(())
    }
}

/// The connection, made on first use, and the open tables, by collection id, at most
/// `capacity` at once.
pub(crate) struct Tables {
    connector: Connector,
    db: OnceCell<Connection>,
    open: Mutex<HashMap<String, Handle>>,
    capacity: usize,
    pub health: Health,
}

impl Tables {
    pub fn new(connector: Connector, capacity: usize) -> Self {
        Tables {
            connector,
            db: OnceCell::new(),
            open: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
            health: Health::default(),
        }
    }

    /// The connection; the first call (or the first after a failed one) connects.
    pub async fn db(&self) -> lancedb::Result<&Connection> {
        self.db.get_or_try_init(|| self.connector.connect()).await
    }

    /// The table of a collection, opened (or created, empty) on first use.
    pub async fn get(&self, collection_id: &str) -> lancedb::Result<Handle> {
        if let Some(handle) = self.open.lock().await.get(collection_id) {
            return Ok(handle.clone());
        }
        let db = self.db().await?;
        let table = match db.open_table(collection_id).execute().await {
            Ok(table) => table,
            Err(lancedb::Error::TableNotFound { .. }) => {
                db.create_empty_table(collection_id, schema())
                    .mode(CreateTableMode::exist_ok(|r| r))
                    .execute()
                    .await?
            }
            Err(e) => return Err(e),
        };
        let handle = Handle {
            table,
            fts: Arc::new(AtomicBool::new(false)),
            vector_index: Arc::new(AtomicBool::new(false)),
            appends: Arc::default(),
        };
        handle.refresh_indexes().await?;
        let mut open = self.open.lock().await;
        if let Some(existing) = open.get(collection_id) {
            return Ok(existing.clone());
        }
        if open.len() >= self.capacity {
            // Any one will do: tables reopen in a few milliseconds.
            if let Some(key) = open.keys().next().cloned() {
                open.remove(&key);
            }
        }
        open.insert(collection_id.to_owned(), handle.clone());
        Ok(handle)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn document(id: &str) -> RecordBatch {
        let chunks = [Chunk {
            position: 0,
            text: format!("text of {id}"),
        }];
        rows(id, "title", &chunks, vec![vec![0.5; DIMENSIONS]]).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn appends_queued_during_a_commit_share_the_next_one() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::RetrievalConfig::local(dir.path());
        let tables = Tables::new(Connector::new(&config), 4);
        let handle = tables.get("col_test").await.unwrap();
        let before = handle.table.version().await.unwrap();

        // While a commit is under way, five writers queue their documents.
        let commit = handle.appends.commit.lock().await;
        let writers: Vec<_> = (0..5)
            .map(|i| {
                let handle = handle.clone();
                tokio::spawn(async move { handle.append(document(&format!("doc_{i}"))).await })
            })
            .collect();
        while handle.appends.queued.lock().unwrap().len() < 5 {
            tokio::task::yield_now().await;
        }
        drop(commit);
        for writer in writers {
            writer.await.unwrap().unwrap();
        }
        // One commit wrote all five.
        assert_eq!(handle.table.version().await.unwrap(), before + 1);
        assert_eq!(handle.table.count_rows(None).await.unwrap(), 5);
    }
}

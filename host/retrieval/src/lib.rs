//! Managed retrieval: per-tenant collections on LanceDB, text and PDF ingestion, hybrid query.
//!
//! - A collection belongs to one tenant of one organization. Its bookkeeping (name, owner,
//!   embedder, documents and their state) is in the host's database (atrium-store); its chunks
//!   and vectors are in a LanceDB table of its own, named after the collection's id, under the
//!   data directory (or on S3-compatible storage). Every call names the organization and
//!   tenant, and a collection is found only through them, so one tenant cannot reach another's.
//! - A document is split into overlapping chunks ([`chunk`]), embedded with the collection's
//!   embedder, and written in one LanceDB append. It is listed and returned by queries only once
//!   every chunk is written: until then its row says `indexing`, and a failure removes whatever
//!   was written. The error names the step that failed.
//! - A query runs a vector search and a full-text (BM25) search side by side and fuses the two
//!   rankings by reciprocal rank fusion ([`fuse`]).
//! - Upkeep ([`Retrieval::upkeep_once`], run in the background by [`Retrieval::spawn_upkeep`])
//!   creates the vector index when a table grows past [`RetrievalConfig::vector_index_rows`],
//!   folds new rows into the indexes, compacts small files and removes old versions.

pub mod chunk;
pub mod pdf;
mod table;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use atrium_inference::embed::{EmbedError, Embedder, Embedders};
use atrium_store::{Collection, CollectionSummary, Document, Store, StoreError};
use futures::TryStreamExt;
use lancedb::index::scalar::FullTextSearchQuery;
use lancedb::query::{ExecutableQuery, QueryBase, Select};
use lancedb::table::{CompactionOptions, OptimizeAction, OptimizeOptions};

use crate::chunk::Splitter;
pub use crate::pdf::{PdfError, PdfLimits};

/// Default number of matches a query returns.
pub const DEFAULT_TOP_K: usize = 5;
/// Most matches a query may ask for.
pub const MAX_TOP_K: usize = 50;
/// Longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 10_000;
/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 1_000;
/// The `k` of reciprocal rank fusion.
pub const RRF_K: f64 = 60.0;
/// Default budget of the index cache shared by all tables, in MiB.
pub const DEFAULT_INDEX_CACHE_MB: usize = 512;
/// Default budget of the metadata cache shared by all tables, in MiB.
pub const DEFAULT_METADATA_CACHE_MB: usize = 128;

/// How retrieval is set up.
#[derive(Debug, Clone)]
pub struct RetrievalConfig {
    /// Where the LanceDB tables live: a directory, or an object-store URI such as
    /// `s3://bucket/prefix`.
    pub uri: String,
    /// Options for the object store (for S3: `aws_endpoint`, `aws_region`,
    /// `aws_access_key_id`, `aws_secret_access_key`, `allow_http`, ...).
    pub storage_options: Vec<(String, String)>,
    /// How stale a table's view may get before it rereads the latest version: `None` (reads
    /// see this host's writes at once, and no one else writes) for a local directory; a second
    /// for object storage that several hosts share.
    pub read_consistency: Option<Duration>,
    /// Rows from which a table gets a vector index; below it, vector search scans.
    pub vector_index_rows: usize,
    /// How often background upkeep runs.
    pub upkeep_interval: Duration,
    /// How long old table versions are kept before upkeep removes them.
    pub keep_versions_for: Duration,
    /// Most characters in one document (text or extracted from a file).
    pub max_document_chars: usize,
    /// Tables kept open at once.
    pub open_tables: usize,
    /// Bytes of index data (vector partitions, full-text postings) cached across all tables.
    pub index_cache_bytes: usize,
    /// Bytes of table metadata (manifests, file footers) cached across all tables.
    pub metadata_cache_bytes: usize,
    /// Limits of PDF text extraction.
    pub pdf: PdfLimits,
}

impl RetrievalConfig {
    /// Tables under `dir` on local disk, with the default limits.
    pub fn local(dir: &Path) -> Self {
        RetrievalConfig {
            uri: dir.display().to_string(),
            storage_options: Vec::new(),
            read_consistency: None,
            vector_index_rows: 10_000,
            upkeep_interval: Duration::from_secs(30),
            keep_versions_for: Duration::from_secs(600),
            max_document_chars: 2_000_000,
            open_tables: 512,
            index_cache_bytes: DEFAULT_INDEX_CACHE_MB << 20,
            metadata_cache_bytes: DEFAULT_METADATA_CACHE_MB << 20,
            pdf: PdfLimits::default(),
        }
    }

    /// The configuration from the environment: `ATRIUM_RAG_URI` (default `<data dir>/rag`);
    /// for object storage, every `ATRIUM_RAG_STORAGE_<OPTION>` as a storage option
    /// (`ATRIUM_RAG_STORAGE_AWS_ENDPOINT=http://minio:9000` is `aws_endpoint`); the cache
    /// budgets `ATRIUM_RAG_INDEX_CACHE_MB` and `ATRIUM_RAG_METADATA_CACHE_MB`.
    pub fn from_env(data_dir: &Path, vars: &[(String, String)]) -> Result<Self, String> {
        let get = |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.trim().is_empty())
        };
        let mut config = RetrievalConfig::local(&data_dir.join("rag"));
        if let Some(uri) = get("ATRIUM_RAG_URI") {
            if uri.contains("://") {
                config.read_consistency = Some(Duration::from_secs(1));
            }
            config.uri = uri;
        }
        config.storage_options = vars
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("ATRIUM_RAG_STORAGE_")
                    .map(|option| (option.to_ascii_lowercase(), v.clone()))
            })
            .collect();
        let megabytes = |name: &str, default: usize| -> Result<usize, String> {
            match get(name) {
                None => Ok(default << 20),
                Some(v) => v
                    .trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|mb| (1..=1 << 20).contains(mb))
                    .map(|mb| mb << 20)
                    .ok_or_else(|| {
                        format!("{name} must be a whole number of MiB from 1 to 1048576, got `{v}`")
                    }),
            }
        };
        config.index_cache_bytes = megabytes("ATRIUM_RAG_INDEX_CACHE_MB", DEFAULT_INDEX_CACHE_MB)?;
        config.metadata_cache_bytes =
            megabytes("ATRIUM_RAG_METADATA_CACHE_MB", DEFAULT_METADATA_CACHE_MB)?;
        Ok(config)
    }
}

/// What went wrong, with the status it answers.
#[derive(Debug, thiserror::Error)]
pub enum RetrievalError {
    /// The collection or document does not exist for this tenant (404).
    #[error("{0}")]
    NotFound(String),
    /// A field is missing or wrong (400).
    #[error("{message}")]
    Invalid {
        /// The field.
        param: Option<&'static str>,
        /// What is wrong.
        message: String,
    },
    /// The document or file is over a limit (413).
    #[error("{0}")]
    TooLarge(String),
    /// The file has no usable text (422).
    #[error("{0}")]
    Unprocessable(String),
    /// The embedder failed (502, or 503 when unreachable).
    #[error("embedding failed: {0}")]
    Embedding(#[from] EmbedError),
    /// The collection's embedder is not configured on this host (503).
    #[error(
        "the collection was created with the {provider} embedder ({model}), which this host does not have configured"
    )]
    EmbedderMissing {
        /// The provider.
        provider: String,
        /// The model.
        model: String,
    },
    /// Reading or writing the LanceDB table failed (500); the message names the step.
    #[error("{0}")]
    Storage(String),
    /// The host's database failed (500), or rejected an input (400).
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn invalid(param: &'static str, message: impl Into<String>) -> RetrievalError {
    RetrievalError::Invalid {
        param: Some(param),
        message: message.into(),
    }
}

fn storage(step: &str, error: impl std::fmt::Display) -> RetrievalError {
    RetrievalError::Storage(format!("{step} failed: {error}"))
}

/// Embedding work done for a call, for metering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbedUsage {
    /// The embedder's provider.
    pub provider: String,
    /// The embedder's model.
    pub model: String,
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Cost in micro-dollars.
    pub cost_micros: i64,
}

/// A document that was added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// The new document.
    pub document: Document,
    /// The embedding done.
    pub usage: EmbedUsage,
}

/// One match of a query.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// The chunk's text.
    pub text: String,
    /// The document's title.
    pub title: String,
    /// The fused score in (0, 1]; larger is better (see [`fuse`]).
    pub score: f64,
    /// The document.
    pub document_id: String,
    /// The chunk's position in the document.
    pub position: u32,
}

/// The answer to a query.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryOutcome {
    /// The best matches, best first.
    pub matches: Vec<Match>,
    /// The embedding of the query.
    pub usage: EmbedUsage,
}

/// What one upkeep pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpkeepReport {
    /// Tables optimised.
    pub tables: usize,
    /// Vector indexes created.
    pub vector_indexes: usize,
    /// Unfinished documents removed.
    pub recovered: usize,
    /// Tables whose upkeep failed (they stay pending).
    pub failed: usize,
}

/// The retrieval service.
pub struct Retrieval {
    store: Store,
    embedders: Embedders,
    tables: table::Tables,
    config: RetrievalConfig,
    splitter: Arc<Splitter>,
}

impl std::fmt::Debug for Retrieval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retrieval")
            .field("uri", &self.config.uri)
            .field("embedders", &self.embedders)
            .finish_non_exhaustive()
    }
}

/// A chunk row read back from a search.
struct Hit {
    id: String,
    document_id: String,
    title: String,
    text: String,
    position: u32,
}

impl Retrieval {
    /// Opens (or creates) the LanceDB database at `config.uri`.
    pub async fn open(
        store: Store,
        embedders: Embedders,
        config: RetrievalConfig,
    ) -> Result<Retrieval, RetrievalError> {
        if !config.uri.contains("://") {
            std::fs::create_dir_all(&config.uri)
                .map_err(|e| storage(&format!("creating {}", config.uri), e))?;
        }
        // One session for every table: the caches are shared and bounded, however many
        // collections the host serves.
        let session = lancedb::Session::new(
            config.index_cache_bytes,
            config.metadata_cache_bytes,
            Arc::new(lancedb::ObjectStoreRegistry::default()),
        );
        let mut connect = lancedb::connect(&config.uri).session(Arc::new(session));
        if !config.storage_options.is_empty() {
            connect = connect.storage_options(config.storage_options.clone());
        }
        if let Some(interval) = config.read_consistency {
            connect = connect.read_consistency_interval(interval);
        }
        let db = connect
            .execute()
            .await
            .map_err(|e| storage(&format!("opening the vector store at {}", config.uri), e))?;
        Ok(Retrieval {
            store,
            embedders,
            tables: table::Tables::new(db, config.open_tables),
            config,
            splitter: Arc::new(Splitter::new()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &RetrievalConfig {
        &self.config
    }

    async fn collection(
        &self,
        org_id: &str,
        tenant_id: &str,
        name: &str,
    ) -> Result<Collection, RetrievalError> {
        self.store
            .collection(org_id, tenant_id, name)
            .await?
            .ok_or_else(|| {
                RetrievalError::NotFound(format!(
                    "collection `{name}` does not exist for tenant `{tenant_id}`; create it with POST /v1/rag/{name}"
                ))
            })
    }

    fn embedder(&self, collection: &Collection) -> Result<Arc<dyn Embedder>, RetrievalError> {
        self.embedders
            .find(&collection.model, Some(&collection.embedder))
            .ok_or_else(|| RetrievalError::EmbedderMissing {
                provider: collection.embedder.clone(),
                model: collection.model.clone(),
            })
    }

    async fn handle(&self, collection: &Collection) -> Result<table::Handle, RetrievalError> {
        self.tables
            .get(&collection.id)
            .await
            .map_err(|e| storage("opening the collection's table", e))
    }

    /// Creates a collection of a tenant unless it exists; returns it and whether this call
    /// created it. A new collection uses the host's default embedder for good.
    pub async fn create_collection(
        &self,
        org_id: &str,
        tenant_id: &str,
        name: &str,
    ) -> Result<(Collection, bool), RetrievalError> {
        let embedder = self.embedders.default_embedder();
        let (collection, created) = self
            .store
            .create_collection(
                org_id,
                tenant_id,
                name,
                embedder.provider(),
                embedder.model(),
            )
            .await?;
        self.handle(&collection).await?;
        Ok((collection, created))
    }

    /// The collections of a tenant with their counts.
    pub async fn list_collections(
        &self,
        org_id: &str,
        tenant_id: &str,
    ) -> Result<Vec<CollectionSummary>, RetrievalError> {
        Ok(self.store.list_collections(org_id, tenant_id).await?)
    }

    /// The indexed documents of a collection.
    pub async fn documents(
        &self,
        org_id: &str,
        tenant_id: &str,
        name: &str,
    ) -> Result<Vec<Document>, RetrievalError> {
        let collection = self.collection(org_id, tenant_id, name).await?;
        Ok(self.store.documents(&collection.id).await?)
    }

    /// Adds a document: splits, embeds and writes it; it is either fully indexed or absent.
    /// `source` says where the text came from (`text`, `pdf`, `file`).
    pub async fn add_document(
        &self,
        org_id: &str,
        tenant_id: &str,
        name: &str,
        title: &str,
        text: String,
        source: &str,
    ) -> Result<Added, RetrievalError> {
        let collection = self.collection(org_id, tenant_id, name).await?;
        let title = title.trim();
        if title.is_empty() {
            return Err(invalid("title", "title must not be empty"));
        }
        if title.chars().count() > MAX_TITLE_CHARS {
            return Err(invalid(
                "title",
                format!("title is longer than {MAX_TITLE_CHARS} characters"),
            ));
        }
        let chars = text.chars().count();
        if chars > self.config.max_document_chars {
            return Err(RetrievalError::TooLarge(format!(
                "the document has {chars} characters; the limit is {}",
                self.config.max_document_chars
            )));
        }
        if text.trim().is_empty() {
            return Err(RetrievalError::Unprocessable(
                "the document has no text".into(),
            ));
        }
        let embedder = self.embedder(&collection)?;
        let splitter = Arc::clone(&self.splitter);
        let chunks = tokio::task::spawn_blocking(move || splitter.split(&text))
            .await
            .map_err(|e| storage("chunking", e))?;
        let texts: Vec<String> = chunks.iter().map(|c| c.text.clone()).collect();
        let embedded = embedder.embed(&texts).await?;
        let usage = usage_of(embedder.as_ref(), embedded.prompt_tokens);
        let chunk_count = i64::try_from(chunks.len()).unwrap_or(i64::MAX);
        let char_count = i64::try_from(chars).unwrap_or(i64::MAX);
        let handle = self.handle(&collection).await?;
        let source = source.to_owned();
        let document_id = self
            .store
            .begin_document(&collection.id, title, &source, chunk_count, char_count)
            .await?;
        // From here on, a failure removes what was written.
        let written = async {
            let rows = table::rows(&document_id, title, &chunks, embedded.vectors)
                .map_err(|e| storage("preparing the chunks", e))?;
            handle
                .table
                .add(rows)
                .execute()
                .await
                .map_err(|e| storage("writing the chunks", e))?;
            if let Err(e) = handle.ensure_fts().await {
                // Queries fall back to vector search alone until upkeep builds it.
                tracing::warn!(collection = %collection.id, error = %e, "creating the full-text index failed");
            }
            self.store
                .finish_document(&collection.id, &document_id)
                .await
                .map_err(|e| storage("marking the document indexed", e))
        }
        .await;
        if let Err(error) = written {
            self.discard(&collection.id, &document_id).await;
            return Err(error);
        }
        let document = self
            .store
            .document(&collection.id, &document_id)
            .await?
            .ok_or_else(|| storage("reading the new document back", "it is gone"))?;
        Ok(Added { document, usage })
    }

    /// Removes a document's chunks and row after a failed write (best effort; upkeep retries
    /// documents left `indexing`).
    async fn discard(&self, collection_id: &str, document_id: &str) {
        let deleted = match self.tables.get(collection_id).await {
            Ok(handle) => handle
                .table
                .delete(format!("document_id = '{document_id}'").as_str())
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = deleted {
            // The row stays `indexing`, so the next upkeep tries again.
            tracing::warn!(document = %document_id, error = %e, "removing the chunks of a failed document failed");
            return;
        }
        if let Err(e) = self.store.remove_document(collection_id, document_id).await {
            tracing::warn!(document = %document_id, error = %e, "removing a failed document failed");
        }
    }

    /// Deletes a document and its chunks.
    pub async fn delete_document(
        &self,
        org_id: &str,
        tenant_id: &str,
        name: &str,
        document_id: &str,
    ) -> Result<(), RetrievalError> {
        let collection = self.collection(org_id, tenant_id, name).await?;
        let not_found = || {
            RetrievalError::NotFound(format!(
                "document `{document_id}` does not exist in collection `{name}`"
            ))
        };
        if !is_document_id(document_id) {
            return Err(not_found());
        }
        self.store
            .document(&collection.id, document_id)
            .await?
            .ok_or_else(not_found)?;
        let handle = self.handle(&collection).await?;
        handle
            .table
            .delete(format!("document_id = '{document_id}'").as_str())
            .await
            .map_err(|e| storage("deleting the chunks", e))?;
        self.store
            .remove_document(&collection.id, document_id)
            .await?;
        Ok(())
    }

    /// The `top_k` best chunks for `query`, by hybrid vector and full-text search.
    pub async fn query(
        &self,
        org_id: &str,
        tenant_id: &str,
        name: &str,
        query: &str,
        top_k: usize,
    ) -> Result<QueryOutcome, RetrievalError> {
        if query.trim().is_empty() {
            return Err(invalid("query", "query must not be empty"));
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(invalid(
                "query",
                format!("query is longer than {MAX_QUERY_CHARS} characters"),
            ));
        }
        if !(1..=MAX_TOP_K).contains(&top_k) {
            return Err(invalid(
                "top_k",
                format!("top_k must be between 1 and {MAX_TOP_K}, got {top_k}"),
            ));
        }
        let collection = self.collection(org_id, tenant_id, name).await?;
        let embedder = self.embedder(&collection)?;
        let embedded = embedder.embed(&[query.to_owned()]).await?;
        let usage = usage_of(embedder.as_ref(), embedded.prompt_tokens);
        let vector = embedded
            .vectors
            .into_iter()
            .next()
            .ok_or_else(|| storage("embedding the query", "no vector came back"))?;
        let handle = self.handle(&collection).await?;
        // Each side contributes more candidates than asked for, so the fusion has room.
        let candidates = (top_k * 4).max(20);
        let columns = Select::columns(&["id", "document_id", "title", "text", "position"]);
        let vector_search = async {
            let search = handle
                .table
                .query()
                .nearest_to(vector.as_slice())
                .map_err(|e| storage("vector search", e))?
                .distance_type(lancedb::DistanceType::Cosine)
                .nprobes(20)
                .map_err(|e| storage("vector search", e))?
                .refine_factor(4)
                .limit(candidates)
                .select(columns.clone());
            collect(search.execute().await, "vector search").await
        };
        let text_search = async {
            if !handle.has_fts() {
                return Ok(Vec::new());
            }
            let search = handle
                .table
                .query()
                .full_text_search(FullTextSearchQuery::new(query.to_owned()))
                .limit(candidates)
                .select(columns.clone());
            collect(search.execute().await, "full-text search").await
        };
        let (by_vector, by_text) = futures::try_join!(vector_search, text_search)?;
        // Only documents that are fully indexed are answered.
        let mut ids: Vec<String> = by_vector
            .iter()
            .chain(&by_text)
            .map(|h| h.document_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        let indexed: HashSet<String> = self
            .store
            .indexed_documents(&collection.id, &ids)
            .await?
            .into_iter()
            .collect();
        let keep = |hits: Vec<Hit>| -> Vec<Hit> {
            hits.into_iter()
                .filter(|h| indexed.contains(&h.document_id))
                .collect()
        };
        let matches = fuse(keep(by_vector), keep(by_text), top_k);
        Ok(QueryOutcome { matches, usage })
    }

    /// One upkeep pass: removes documents left `indexing` for over ten minutes, then for each
    /// table with writes since its last upkeep (most first, at most 64 a pass): creates the
    /// vector index once the table is big enough, creates a missing full-text index, folds
    /// new rows into the indexes, compacts small files and removes versions older than
    /// [`RetrievalConfig::keep_versions_for`].
    pub async fn upkeep_once(&self) -> Result<UpkeepReport, RetrievalError> {
        let mut report = UpkeepReport {
            recovered: self.recover(Duration::from_secs(600)).await?,
            ..UpkeepReport::default()
        };
        for (collection_id, writes) in self.store.collections_needing_upkeep(64).await? {
            match self.upkeep_table(&collection_id).await {
                Ok(indexed) => {
                    report.tables += 1;
                    report.vector_indexes += usize::from(indexed);
                    self.store.upkeep_done(&collection_id, writes).await?;
                }
                Err(e) => {
                    report.failed += 1;
                    tracing::warn!(collection = %collection_id, error = %e, "upkeep of a collection failed");
                }
            }
        }
        Ok(report)
    }

    /// Upkeep of one table; returns whether it created the vector index.
    async fn upkeep_table(&self, collection_id: &str) -> Result<bool, RetrievalError> {
        let handle = self
            .tables
            .get(collection_id)
            .await
            .map_err(|e| storage("opening the table", e))?;
        let rows = handle
            .table
            .count_rows(None)
            .await
            .map_err(|e| storage("counting rows", e))?;
        let mut created = false;
        if rows > 0 && !handle.has_fts() {
            handle
                .ensure_fts()
                .await
                .map_err(|e| storage("creating the full-text index", e))?;
        }
        if rows >= self.config.vector_index_rows && !handle.has_vector_index() {
            handle
                .create_vector_index(rows)
                .await
                .map_err(|e| storage("creating the vector index", e))?;
            created = true;
        }
        let table = &handle.table;
        table
            .optimize(OptimizeAction::Compact {
                options: CompactionOptions::default(),
                remap_options: None,
            })
            .await
            .map_err(|e| storage("compacting", e))?;
        table
            .optimize(OptimizeAction::Index(OptimizeOptions::default()))
            .await
            .map_err(|e| storage("optimising the indexes", e))?;
        let keep = lancedb::table::Duration::from_std(self.config.keep_versions_for)
            .unwrap_or_else(|_| lancedb::table::Duration::minutes(10));
        table
            .optimize(OptimizeAction::Prune {
                older_than: Some(keep),
                delete_unverified: Some(false),
                error_if_tagged_old_versions: Some(false),
            })
            .await
            .map_err(|e| storage("removing old versions", e))?;
        Ok(created)
    }

    /// Removes documents that have been `indexing` for longer than `older_than` (their
    /// writer stopped): their chunks, then their rows. Returns how many.
    pub async fn recover(&self, older_than: Duration) -> Result<usize, RetrievalError> {
        let cutoff = now_millis() - i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        let stale = self.store.unfinished_documents(cutoff).await?;
        let mut by_collection: HashMap<String, Vec<String>> = HashMap::new();
        for (collection_id, document_id) in stale {
            by_collection
                .entry(collection_id)
                .or_default()
                .push(document_id);
        }
        let mut removed = 0;
        for (collection_id, documents) in by_collection {
            for document_id in documents {
                self.discard(&collection_id, &document_id).await;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Runs [`Retrieval::upkeep_once`] every [`RetrievalConfig::upkeep_interval`] until
    /// `stop` turns true.
    pub fn spawn_upkeep(
        self: Arc<Self>,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(self.config.upkeep_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.changed() => {}
                }
                if *stop.borrow() {
                    return;
                }
                match self.upkeep_once().await {
                    Ok(report) if report != UpkeepReport::default() => {
                        tracing::info!(?report, "retrieval upkeep");
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "retrieval upkeep failed"),
                }
            }
        })
    }

    /// Extracts the text of a PDF in the sandbox, on a blocking thread.
    pub async fn pdf_text(&self, pdf: Vec<u8>) -> Result<String, RetrievalError> {
        let limits = self.config.pdf;
        let text = tokio::task::spawn_blocking(move || pdf::extract_text(&pdf, limits))
            .await
            .map_err(|e| storage("extracting the PDF's text", e))?;
        match text {
            Ok(text) if text.trim().is_empty() => Err(RetrievalError::Unprocessable(
                "the PDF has no extractable text (it may hold only scanned images)".into(),
            )),
            Ok(text) => Ok(text),
            Err(e @ PdfError::TooLong(_)) => Err(RetrievalError::TooLarge(e.to_string())),
            Err(e) if e.is_client_error() => Err(RetrievalError::Unprocessable(e.to_string())),
            Err(e) => Err(RetrievalError::Storage(e.to_string())),
        }
    }
}

fn usage_of(embedder: &dyn Embedder, prompt_tokens: u64) -> EmbedUsage {
    let tokens = i64::try_from(prompt_tokens).unwrap_or(i64::MAX);
    EmbedUsage {
        provider: embedder.provider().to_owned(),
        model: embedder.model().to_owned(),
        prompt_tokens,
        cost_micros: tokens.saturating_mul(embedder.micros_per_million()) / 1_000_000,
    }
}

/// Whether `id` has the form of a document id (`doc_` and 24 hex digits).
pub fn is_document_id(id: &str) -> bool {
    id.strip_prefix("doc_")
        .is_some_and(|hex| hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Reads the hits of a search, best first.
async fn collect(
    stream: lancedb::Result<impl futures::Stream<Item = lancedb::Result<RecordBatch>> + Unpin>,
    what: &str,
) -> Result<Vec<Hit>, RetrievalError> {
    let batches: Vec<RecordBatch> = stream
        .map_err(|e| storage(what, e))?
        .try_collect()
        .await
        .map_err(|e| storage(what, e))?;
    let mut hits = Vec::new();
    for batch in &batches {
        let text = |name: &str| {
            batch
                .column_by_name(name)
                .and_then(|c| c.as_string_opt::<i32>())
                .ok_or_else(|| storage(what, format!("column `{name}` is missing")))
        };
        let (ids, documents, titles, texts) = (
            text("id")?,
            text("document_id")?,
            text("title")?,
            text("text")?,
        );
        let positions = batch
            .column_by_name("position")
            .and_then(|c| c.as_primitive_opt::<arrow_array::types::UInt32Type>())
            .ok_or_else(|| storage(what, "column `position` is missing"))?;
        for row in 0..batch.num_rows() {
            hits.push(Hit {
                id: ids.value(row).to_owned(),
                document_id: documents.value(row).to_owned(),
                title: titles.value(row).to_owned(),
                text: texts.value(row).to_owned(),
                position: if positions.is_null(row) {
                    0
                } else {
                    positions.value(row)
                },
            });
        }
    }
    Ok(hits)
}

/// Reciprocal rank fusion of two rankings, best first: a chunk at rank r (from 1) of a
/// ranking gets 1 / (60 + r) from it, and its score is the sum over both rankings divided by
/// the best possible sum, 2 / 61. So a score is in (0, 1]: 1 for a chunk first in both, about
/// 0.5 for a chunk first in one and absent from the other; larger is better.
fn fuse(by_vector: Vec<Hit>, by_text: Vec<Hit>, top_k: usize) -> Vec<Match> {
    let best = 2.0 / (RRF_K + 1.0);
    let mut scored: HashMap<String, (f64, Hit)> = HashMap::new();
    for ranking in [by_vector, by_text] {
        for (rank, hit) in ranking.into_iter().enumerate() {
            let gain = 1.0 / (RRF_K + rank as f64 + 1.0);
            scored
                .entry(hit.id.clone())
                .and_modify(|(score, _)| *score += gain)
                .or_insert((gain, hit));
        }
    }
    let mut list: Vec<(f64, Hit)> = scored.into_values().collect();
    list.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    list.into_iter()
        .take(top_k)
        .map(|(score, hit)| Match {
            text: hit.text,
            title: hit.title,
            score: score / best,
            document_id: hit.document_id,
            position: hit.position,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(id: &str) -> Hit {
        Hit {
            id: id.into(),
            document_id: format!("doc-{id}"),
            title: String::new(),
            text: String::new(),
            position: 0,
        }
    }

    #[test]
    fn fusion_rewards_agreement_and_scores_in_zero_one() {
        let fused = fuse(
            vec![hit("a"), hit("b"), hit("c")],
            vec![hit("b"), hit("d")],
            10,
        );
        let order: Vec<&str> = fused.iter().map(|m| &m.document_id[4..]).collect();
        assert_eq!(order, ["b", "a", "d", "c"]);
        assert!(fused.iter().all(|m| m.score > 0.0 && m.score <= 1.0));
        let both_first = fuse(vec![hit("x")], vec![hit("x")], 1);
        assert!((both_first[0].score - 1.0).abs() < 1e-12);
        assert_eq!(fuse(vec![hit("a"), hit("b")], vec![], 1).len(), 1);
    }

    #[test]
    fn document_ids_are_checked() {
        assert!(is_document_id("doc_0123456789abcdef01234567"));
        assert!(!is_document_id("doc_0123456789abcdef0123456'"));
        assert!(!is_document_id("doc_' OR 1=1 --"));
        assert!(!is_document_id("col_0123456789abcdef01234567"));
    }

    #[test]
    fn the_environment_sets_the_store_and_its_cache_budgets() {
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let data = Path::new("/var/lib/atrium");
        let config = RetrievalConfig::from_env(data, &[]).unwrap();
        assert_eq!(config.uri, "/var/lib/atrium/rag");
        assert_eq!(config.read_consistency, None);
        assert_eq!(config.index_cache_bytes, 512 << 20);
        assert_eq!(config.metadata_cache_bytes, 128 << 20);

        let config = RetrievalConfig::from_env(
            data,
            &vars(&[
                ("ATRIUM_RAG_URI", "s3://bucket/prefix"),
                ("ATRIUM_RAG_STORAGE_AWS_REGION", "eu-west-3"),
                ("ATRIUM_RAG_INDEX_CACHE_MB", "64"),
                ("ATRIUM_RAG_METADATA_CACHE_MB", " 16 "),
            ]),
        )
        .unwrap();
        assert_eq!(config.uri, "s3://bucket/prefix");
        assert_eq!(config.read_consistency, Some(Duration::from_secs(1)));
        assert_eq!(
            config.storage_options,
            vec![("aws_region".to_owned(), "eu-west-3".to_owned())]
        );
        assert_eq!(config.index_cache_bytes, 64 << 20);
        assert_eq!(config.metadata_cache_bytes, 16 << 20);

        for bad in ["0", "-1", "lots", "1.5", "2000000"] {
            let err = RetrievalConfig::from_env(data, &vars(&[("ATRIUM_RAG_INDEX_CACHE_MB", bad)]))
                .unwrap_err();
            assert!(
                err.contains("ATRIUM_RAG_INDEX_CACHE_MB") && err.contains(bad),
                "{bad}: {err}"
            );
        }
    }
}

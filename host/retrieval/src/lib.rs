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
//!   rankings by reciprocal rank fusion ([`fuse`](query::fuse)).
//! - Upkeep ([`Retrieval::upkeep_once`], run in the background by the [`Upkeep`] job)
//!   creates the vector index when a table grows past [`RetrievalConfig::vector_index_rows`],
//!   folds new rows into the indexes, compacts small files and removes old versions.

pub mod chunk;
mod collections;
mod config;
mod documents;
mod error;
mod health;
pub mod pdf;
mod query;
mod table;
mod upkeep;

use std::sync::Arc;

use atrium_inference::embed::{Embedder, Embedders};
use atrium_store::Store;

use crate::chunk::Splitter;
pub use crate::config::{DEFAULT_INDEX_CACHE_MB, DEFAULT_METADATA_CACHE_MB, RetrievalConfig};
pub use crate::documents::{Added, MAX_TITLE_CHARS, is_document_id};
pub use crate::error::RetrievalError;
use crate::error::storage;
pub use crate::pdf::{PdfError, PdfLimits};
pub use crate::query::{DEFAULT_TOP_K, MAX_QUERY_CHARS, MAX_TOP_K, Match, QueryOutcome, RRF_K};
pub use crate::upkeep::{Upkeep, UpkeepReport};

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

impl Retrieval {
    /// Opens (or creates) the LanceDB database at `config.uri`. A store that cannot be
    /// reached (or that rejects the configuration) is not an error here: the service starts,
    /// answers [`RetrievalError::Unavailable`] naming the cause, and retries ([`health`]).
    pub async fn open(
        store: Store,
        embedders: Embedders,
        config: RetrievalConfig,
    ) -> Result<Retrieval, RetrievalError> {
        if !config.uri.contains("://") {
            std::fs::create_dir_all(&config.uri)
                .map_err(|e| storage(&format!("creating {}", config.uri), e))?;
        }
        let tables = table::Tables::new(health::Connector::new(&config), config.open_tables);
        let retrieval = Retrieval {
            store,
            embedders,
            tables,
            config,
            splitter: Arc::new(Splitter::new()),
        };
        // Notes an outage now, so the host says at start that retrieval waits for the store.
        let _ = retrieval.probe().await;
        Ok(retrieval)
    }

    /// The configuration.
    pub fn config(&self) -> &RetrievalConfig {
        &self.config
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

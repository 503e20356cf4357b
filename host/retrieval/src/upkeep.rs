//! Upkeep of the LanceDB tables, in the background rather than on the write path: removing
//! documents whose writer stopped, creating the vector index once a table reaches
//! [`RetrievalConfig::vector_index_rows`](crate::RetrievalConfig::vector_index_rows) (below that, vector search scans), folding new rows
//! into the indexes, compacting the small files every append leaves and removing old
//! versions. Rows not yet in an index are still searched, so a new document is found at once
//! and adding one never waits for upkeep.

use std::sync::Arc;
use std::time::Duration;

use atrium_jobs::{Job, JobError, Stop};
use lancedb::table::{CompactionOptions, OptimizeAction, OptimizeOptions};

use crate::error::storage;
use crate::{Retrieval, RetrievalError};

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

impl Retrieval {
    /// One upkeep pass: removes documents left `indexing` for over ten minutes, then for each
    /// table with writes since its last upkeep (most first, at most 64 a pass): creates the
    /// vector index once the table is big enough, creates a missing full-text index, folds
    /// new rows into the indexes, compacts small files and removes versions older than
    /// [`RetrievalConfig::keep_versions_for`](crate::RetrievalConfig::keep_versions_for).
    pub async fn upkeep_once(&self) -> Result<UpkeepReport, RetrievalError> {
        self.available()?;
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
                    // An outage fails every table alike: the pass stops, and resumes with
                    // the store.
                    if let RetrievalError::Storage(_) = e {
                        self.probe().await?;
                    }
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
}

/// Retrieval upkeep as a [`Job`] named `upkeep`: runs [`Retrieval::upkeep_once`] every
/// [`RetrievalConfig::upkeep_interval`](crate::RetrievalConfig::upkeep_interval), and during a
/// store outage probes the store every
/// [`RetrievalConfig::retry_every`](crate::RetrievalConfig::retry_every), until the stop.
pub struct Upkeep(pub Arc<Retrieval>);

#[async_trait::async_trait]
impl Job for Upkeep {
    fn name(&self) -> &'static str {
        "upkeep"
    }

    async fn run(self: Box<Self>, mut stop: Stop) -> Result<(), JobError> {
        let retrieval = self.0;
        let mut tick = tokio::time::interval(retrieval.config.upkeep_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut retry = tokio::time::interval(retrieval.config.retry_every);
        retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let upkeep = tokio::select! {
                _ = tick.tick() => true,
                _ = retry.tick() => false,
                () = stop.requested() => return Ok(()),
            };
            if !upkeep {
                // During an outage, the store is probed every `retry_every`.
                retrieval.check_store().await;
                continue;
            }
            match retrieval.upkeep_once().await {
                Ok(report) if report != UpkeepReport::default() => {
                    tracing::info!(?report, "retrieval upkeep");
                }
                Ok(_) => {}
                // The outage is logged where it starts and ends.
                Err(RetrievalError::Unavailable(_)) => {}
                Err(e) => stop.report("retrieval upkeep failed", &e),
            }
        }
    }
}

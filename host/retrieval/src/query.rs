//! Queries: a vector search and a full-text (BM25) search of a collection's table side by
//! side, restricted to fully indexed documents, fused by reciprocal rank fusion ([`fuse`]).
//!
//! Two rankings rather than one: vectors find paraphrases, BM25 finds exact terms (names,
//! codes) that embeddings blur. Fusing by rank rather than by score needs no calibration
//! between a cosine distance and a BM25 score.

use std::collections::{HashMap, HashSet};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use futures::TryStreamExt;
use lancedb::index::scalar::FullTextSearchQuery;
use lancedb::query::{ExecutableQuery, HasQuery, QueryBase, Select};

use atrium_store::TenantKey;

use crate::error::{invalid, storage};
use crate::{EmbedUsage, Retrieval, RetrievalError, usage_of};

/// Default number of matches a query returns.
pub const DEFAULT_TOP_K: usize = 5;
/// Most matches a query may ask for.
pub const MAX_TOP_K: usize = 50;
/// Longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 10_000;
/// The `k` of reciprocal rank fusion.
pub const RRF_K: f64 = 60.0;

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

/// A chunk row read back from a search.
struct Hit {
    id: String,
    document_id: String,
    title: String,
    text: String,
    position: u32,
}

impl Retrieval {
    /// The `top_k` best chunks for `query`, by hybrid vector and full-text search.
    pub async fn query(
        &self,
        tenant: &TenantKey,
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
        self.guarded(async {
            let collection = self.collection(tenant, name).await?;
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
                    .nprobes(self.config.nprobes)
                    .map_err(|e| storage("vector search", e))?;
                let search = match self.config.refine_factor {
                    0 => search,
                    factor => search.refine_factor(factor),
                };
                let search = search.limit(candidates).select(columns.clone());
                let search = only_selected(search);
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
                let search = only_selected(search);
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
        })
        .await
    }
}

/// A search that answers the selected columns only. The fusion ranks hits by their order, so
/// the scoring columns (`_distance`, `_score`) that lance adds to a projection by default (and
/// warns about on every query, as that default is going away) are not needed.
fn only_selected<Q: HasQuery>(mut search: Q) -> Q {
    search.mut_query().disable_scoring_autoprojection = true;
    search
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
}

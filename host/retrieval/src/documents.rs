//! Documents: adding (split, embed, write), listing and deleting them, and the text of a PDF
//! to add.
//!
//! A document is written atomically as far as readers can tell: its row is `indexing` until
//! every chunk is in one LanceDB append, and only then `indexed`, the only state listings and
//! queries see. A failed write removes what it wrote ([`Retrieval::discard`]); a writer that
//! stopped half-way (a crash, a restart) leaves its row `indexing`, and upkeep removes it later
//! ([`Retrieval::recover`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use atrium_store::{Document, TenantKey};

use crate::error::{invalid, storage};
use crate::pdf::{self, PdfError};
use crate::{EmbedUsage, Retrieval, RetrievalError, table, usage_of};

/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 1_000;

/// A document that was added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Added {
    /// The new document.
    pub document: Document,
    /// The embedding done.
    pub usage: EmbedUsage,
}

impl Retrieval {
    /// The indexed documents of a collection, oldest first.
    pub async fn documents(
        &self,
        tenant: &TenantKey,
        name: &str,
    ) -> Result<Vec<Document>, RetrievalError> {
        self.documents_page(tenant, name, None, i64::MAX).await
    }

    /// A page of the indexed documents of a collection, oldest first: at most `limit`, after
    /// the document created at `after.0` with id `after.1`.
    pub async fn documents_page(
        &self,
        tenant: &TenantKey,
        name: &str,
        after: Option<(jiff::Timestamp, &str)>,
        limit: i64,
    ) -> Result<Vec<Document>, RetrievalError> {
        let collection = self.collection(tenant, name).await?;
        Ok(self
            .store
            .documents_page(&collection.id, after, limit)
            .await?)
    }

    /// Adds a document: splits, embeds and writes it; it is either fully indexed or absent.
    /// `source` says where the text came from (`text`, `pdf`, `file`).
    pub async fn add_document(
        &self,
        tenant: &TenantKey,
        name: &str,
        title: &str,
        text: String,
        source: &str,
    ) -> Result<Added, RetrievalError> {
        let collection = self.collection(tenant, name).await?;
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
        self.guarded(async {
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
                    .append(rows)
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
        })
        .await
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
        tenant: &TenantKey,
        name: &str,
        document_id: &str,
    ) -> Result<(), RetrievalError> {
        self.guarded(async {
            let collection = self.collection(tenant, name).await?;
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
        })
        .await
    }

    /// Removes documents that have been `indexing` for longer than `older_than` (their
    /// writer stopped): their chunks, then their rows. Returns how many.
    pub async fn recover(&self, older_than: Duration) -> Result<usize, RetrievalError> {
        self.available()?;
        let older_than = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        let cutoff = jiff::Timestamp::now()
            .checked_sub(jiff::SignedDuration::from_millis(older_than))
            .unwrap_or(jiff::Timestamp::MIN);
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

/// Whether `id` has the form of a document id (`doc_` and 24 hex digits).
pub fn is_document_id(id: &str) -> bool {
    id.strip_prefix("doc_")
        .is_some_and(|hex| hex.len() == 24 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_ids_are_checked() {
        assert!(is_document_id("doc_0123456789abcdef01234567"));
        assert!(!is_document_id("doc_0123456789abcdef0123456'"));
        assert!(!is_document_id("doc_' OR 1=1 --"));
        assert!(!is_document_id("col_0123456789abcdef01234567"));
    }
}

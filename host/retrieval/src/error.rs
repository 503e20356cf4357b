//! The one error type of retrieval. Each variant stands for one answer of the server (its
//! status is in the variant's doc), so the server maps errors without reading messages; a
//! storage failure names the step that failed ([`storage`]), since one call makes several
//! reads and writes of the same table.

use atrium_inference::embed::EmbedError;
use atrium_store::StoreError;

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
    /// The vector store cannot be reached (503); the message names the cause and says the
    /// host retries.
    #[error("{0}")]
    Unavailable(String),
    /// The host's database failed (500), or rejected an input (400).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A wrong or missing field `param`.
pub(crate) fn invalid(param: &'static str, message: impl Into<String>) -> RetrievalError {
    RetrievalError::Invalid {
        param: Some(param),
        message: message.into(),
    }
}

/// A failure of LanceDB (or of the blocking task doing the work) at `step`.
pub(crate) fn storage(step: &str, error: impl std::fmt::Display) -> RetrievalError {
    RetrievalError::Storage(format!("{step} failed: {error}"))
}

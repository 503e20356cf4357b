//! The registry's errors: each variant is one answer of the developer API (the server maps
//! them to statuses in one place).

use atrium_manifest::project::Finding;

use crate::archive::ArchiveError;
use crate::artifacts::ArtifactError;
use crate::sealing::SealError;

/// Why a registry operation was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A request value is malformed (400): `param` names it.
    #[error("{message}")]
    BadRequest {
        /// The field, part or path segment.
        param: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The developer may not do this (403).
    #[error("{0}")]
    Forbidden(String),
    /// No such app or version (404).
    #[error("{0}")]
    NotFound(String),
    /// Contradicts what is stored: an immutable version, bundle or template set (409).
    #[error("{0}")]
    Conflict(String),
    /// Over a size or count limit (413): `param` names the part.
    #[error("{message}")]
    TooLarge {
        /// The part.
        param: &'static str,
        /// Which limit.
        message: String,
    },
    /// The project has errors (422): every finding, in `atrium lint --json`'s shape.
    #[error("{message}")]
    Invalid {
        /// A summary.
        message: String,
        /// The findings.
        findings: Vec<Finding>,
    },
    /// The component does not load in the runtime (422).
    #[error("{0}")]
    InvalidComponent(String),
    /// A container app's image cannot be pinned to its digest at registration: the registry
    /// refuses the host's pull credentials, has no such image, or cannot be reached (422,
    /// naming `runtime.image`).
    #[error("{0}")]
    InvalidImage(String),
    /// The runtime had no free instance slot for the work (503, retry later).
    #[error("{0}")]
    AtCapacity(String),
    /// An uploaded archive is refused (422): `param` names the part.
    #[error("{message}")]
    InvalidArchive {
        /// The part.
        param: &'static str,
        /// Why.
        message: String,
    },
    /// An activation is refused (422): `outcome` is the documented code
    /// (`missing_app_dependencies`, `missing_rag_bindings`, ...), `names` what is missing or
    /// wrong.
    #[error("{message}")]
    Activation {
        /// The outcome's code.
        outcome: &'static str,
        /// A sentence naming everything.
        message: String,
        /// The scopes, settings, integrations, slots or apps at fault.
        names: Vec<String>,
    },
    /// The artifact store cannot be reached (503).
    #[error("the artifact store is unavailable: {0}")]
    Unavailable(String),
    /// A failure on the host's side (500): `context` for the client, `detail` for the log.
    #[error("{context}: {detail}")]
    Internal {
        /// What failed, for the client.
        context: String,
        /// The details, for the log only.
        detail: String,
    },
}

impl RegistryError {
    pub(crate) fn invalid(message: &str, findings: Vec<Finding>) -> Self {
        let errors = findings.iter().filter(|f| f.is_error()).count();
        let message = match errors {
            0 => message.to_owned(),
            1 => format!(
                "{message}: {}",
                findings
                    .iter()
                    .find(|f| f.is_error())
                    .map_or("", |f| f.problem.message.as_str())
            ),
            n => format!("{message}: {n} errors, see `problems`"),
        };
        RegistryError::Invalid { message, findings }
    }

    pub(crate) fn internal(context: &str, detail: &dyn std::fmt::Display) -> Self {
        RegistryError::Internal {
            context: context.to_owned(),
            detail: detail.to_string(),
        }
    }
}

impl From<atrium_store::StoreError> for RegistryError {
    fn from(error: atrium_store::StoreError) -> Self {
        use atrium_store::StoreError;
        match error {
            StoreError::NotFound(m) => RegistryError::NotFound(m),
            StoreError::Conflict(m) => RegistryError::Conflict(m),
            StoreError::Forbidden(m) => RegistryError::Forbidden(m),
            StoreError::Invalid(m) => RegistryError::BadRequest {
                param: "",
                message: m,
            },
            other => RegistryError::internal("the database failed", &other),
        }
    }
}

impl From<ArtifactError> for RegistryError {
    fn from(error: ArtifactError) -> Self {
        match error {
            ArtifactError::Storage(detail) => RegistryError::Unavailable(detail),
            other => RegistryError::internal("the artifact store failed", &other),
        }
    }
}

impl From<SealError> for RegistryError {
    fn from(error: SealError) -> Self {
        RegistryError::internal("sealing the secret failed", &error)
    }
}

impl From<ArchiveError> for RegistryError {
    fn from(error: ArchiveError) -> Self {
        match error {
            ArchiveError::TooManyFiles { .. }
            | ArchiveError::FileTooLarge { .. }
            | ArchiveError::TooLarge { .. } => RegistryError::TooLarge {
                param: "bundle",
                message: error.to_string(),
            },
            other => RegistryError::InvalidArchive {
                param: "bundle",
                message: other.to_string(),
            },
        }
    }
}

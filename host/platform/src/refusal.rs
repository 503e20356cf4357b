//! The one type of what the platform's capabilities refuse: what a client can be told (a field
//! that breaks a rule, something not found, a conflict with what is stored, a caller who may
//! not, a limit reached, a part the host does not offer) and the host's own faults. Each
//! capability answers it (`grants`, `wires`, `rooms`, `heartbeats`, `visions`, `llm_roles`,
//! `tenant_settings`), and the server maps it to a status and body once
//! (`host/server/src/error.rs`), so that the same fault gets the same answer whichever
//! capability or entry point meets it.

use std::borrow::Cow;

use atrium_store::StoreError;

use crate::serving::ServeError;

/// Why a capability refused a request, or the host fault that stopped it.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A field of the request breaks a rule: `field` is its path (`roles.fast.tier`,
    /// `members[0].key`).
    #[error("{message}")]
    Invalid {
        /// The field's path.
        field: Cow<'static, str>,
        /// What is wrong.
        message: String,
    },
    /// A field names something the tenant does not have (`unknown_member`): the request is
    /// well-formed, what it names is not there.
    #[error("{message}")]
    Unknown {
        /// What was not found, for clients: `unknown_member`.
        code: &'static str,
        /// The field that named it.
        field: Cow<'static, str>,
        /// Why.
        message: String,
    },
    /// The thing the request is about does not exist in the tenant (or is another tenant's).
    #[error("{message}")]
    NotFound {
        /// `not_found`, or a code of its own: `unknown_room`.
        code: &'static str,
        /// What was not found.
        message: String,
    },
    /// The request contradicts what is stored: a state that does not allow it.
    #[error("{message}")]
    Conflict {
        /// `grant_revoked`, `heartbeat_disabled`, `vision_not_awaiting_approval`, ...
        code: &'static str,
        /// Why.
        message: String,
    },
    /// The caller is known but may not do this: `not_member`.
    #[error("{message}")]
    Forbidden {
        /// Why, for clients.
        code: &'static str,
        /// Why.
        message: String,
    },
    /// A limit of the tenant or the platform is reached: `room_full`.
    #[error("{message}")]
    Limit {
        /// Which limit, for clients.
        code: &'static str,
        /// The limit.
        limit: i64,
        /// Why.
        message: String,
    },
    /// A part of the host this request needs is not there: `registry_unavailable`.
    #[error("{message}")]
    NotAvailable {
        /// What is missing, for clients.
        code: &'static str,
        /// Why.
        message: String,
    },
    /// Serving an install failed (an install not active, an app that failed its call, a host
    /// fault underneath): the serving error's own answer.
    #[error(transparent)]
    Serve(Box<ServeError>),
    /// The store failed: a fault of the host, never of the request.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Refusal {
    /// A field that breaks a rule.
    pub fn invalid(field: impl Into<Cow<'static, str>>, message: impl Into<String>) -> Self {
        Refusal::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// Nothing of the kind in the tenant: `not_found`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Refusal::NotFound {
            code: "not_found",
            message: message.into(),
        }
    }

    /// A state that does not allow the request.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Refusal::Conflict {
            code,
            message: message.into(),
        }
    }
}

impl From<ServeError> for Refusal {
    fn from(e: ServeError) -> Self {
        Refusal::Serve(Box::new(e))
    }
}

//! The errors an app sees and returns.

use atrium_manifest::sandbox::{self, Capability, Decision};

use crate::{AgentCallError, HandlerError, ToolCallError};

/// What a handler returns when it cannot produce a result.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The input did not match what the handler accepts.
    InvalidInput(String),
    /// A tool call failed; `?` on a [`ToolCallError`] gives this.
    Tool(ToolCallError),
    /// An agent call failed; `?` on an [`AgentCallError`] gives this.
    Agent(AgentCallError),
    /// Anything else.
    Failed(String),
}

impl Error {
    /// A failure with a message for the caller.
    pub fn failed(message: impl Into<String>) -> Self {
        Error::Failed(message.into())
    }

    /// Rejected input, with a message naming what is wrong.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Error::InvalidInput(message.into())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::InvalidInput(m) => write!(f, "invalid input: {m}"),
            Error::Tool(e) => {
                write!(
                    f,
                    "tool call `{}` failed ({}): {}",
                    e.tool_name, e.decision, e.message
                )?;
                if !e.needed_scopes.is_empty() {
                    write!(f, " [needed scopes: {}]", e.needed_scopes.join(", "))?;
                }
                Ok(())
            }
            Error::Agent(e) => write!(f, "agent call failed: {}", e.reason),
            Error::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<ToolCallError> for Error {
    fn from(e: ToolCallError) -> Self {
        Error::Tool(e)
    }
}

impl From<AgentCallError> for Error {
    fn from(e: AgentCallError) -> Self {
        Error::Agent(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Failed(format!("JSON: {e}"))
    }
}

impl From<Error> for HandlerError {
    fn from(e: Error) -> Self {
        match e {
            Error::InvalidInput(m) => HandlerError::InvalidInput(m),
            Error::Tool(e) => HandlerError::Tool(e),
            Error::Agent(e) => HandlerError::Agent(e),
            Error::Failed(m) => HandlerError::Failed(m),
        }
    }
}

/// A registration broke a rule of docs/sdk.md. The app cannot serve calls
/// until it is fixed; the host's health check reports the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrationError {
    /// Which rule.
    pub kind: RegistrationErrorKind,
    /// The explanation, naming the handler and the manifest field.
    pub message: String,
}

/// The registration rules: the host's own (`atrium_manifest::sandbox::registration`), which it
/// applies again to what a component reports at load.
pub use atrium_manifest::sandbox::registration::RegistrationRule as RegistrationErrorKind;

impl std::fmt::Display for RegistrationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RegistrationError {}

impl ToolCallError {
    /// The capability this host does not offer, when the refusal is decision `not_available`
    /// (`rooms.post`, `commitments.add`, `tools.call`): an app can fall back instead of failing.
    #[must_use]
    pub fn not_available(&self) -> Option<Capability> {
        (self.decision == Decision::NotAvailable.as_str())
            .then(|| Capability::parse(&self.tool_name))
            .flatten()
    }
}

impl AgentCallError {
    /// The capability this host does not offer, when the reason is `not_available: ...`
    /// (`agent.ask`, `team.delegate`, `apps.invoke`, `apps.fetch`, `events.emit`).
    #[must_use]
    pub fn not_available(&self) -> Option<Capability> {
        sandbox::unavailable_capability(&self.reason)
            .filter(|_| sandbox::reason_decision(&self.reason) == Some(Decision::NotAvailable))
    }
}

impl From<atrium_manifest::sandbox::ToolRefusal> for ToolCallError {
    fn from(r: atrium_manifest::sandbox::ToolRefusal) -> Self {
        ToolCallError {
            tool_name: r.tool_name,
            decision: r.decision.as_str().to_owned(),
            message: r.message,
            needed_scopes: r.needed_scopes,
        }
    }
}

impl From<atrium_manifest::sandbox::AgentRefusal> for AgentCallError {
    fn from(r: atrium_manifest::sandbox::AgentRefusal) -> Self {
        AgentCallError { reason: r.reason }
    }
}

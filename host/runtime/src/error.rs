//! Typed errors of loading an app and of calling into it.

use std::path::PathBuf;
use std::time::Duration;

use crate::{AgentCallError, ToolCallError};

/// Why a component could not be loaded as an Atrium app.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The component file could not be read.
    #[error("cannot read component {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The bytes are not a WebAssembly component (a core module, or not wasm at all).
    #[error("not a WebAssembly component: {0}")]
    NotAComponent(String),
    /// Compilation failed.
    #[error("the component does not compile: {0}")]
    Compile(String),
    /// The component does not target the `atrium:app` world: it imports something the host
    /// does not provide, or exports neither `atrium:app/handlers` nor `wasi:http/incoming-handler`.
    #[error("the component does not target the atrium:app world: {0}")]
    WrongWorld(String),
    /// The manifest's limits cannot be honoured by this host.
    #[error("the manifest cannot run on this host: {0}")]
    Manifest(String),
    /// The engine could not be set up.
    #[error("the runtime could not start: {0}")]
    Engine(String),
}

/// Why a call into an app did not produce a result. The host and the other calls carry on
/// whatever the variant.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CallError {
    /// The app does not export what the call needs (for example no HTTP routes).
    #[error("not supported by this app: {0}")]
    NotSupported(String),
    /// The manifest declares the handler but the app registered none; docs/wit.md's
    /// `{ok: false, no_handler: true}`.
    #[error("no handler registered for {0}")]
    NoHandler(String),
    /// The call names something the manifest does not declare (a tool, a schedule, a route).
    #[error("{0}")]
    NotDeclared(String),
    /// The install lacks scopes the tool requires.
    #[error("tool `{tool}` needs scopes the install has not granted: {}", needed.join(", "))]
    ScopeDenied {
        /// The tool.
        tool: String,
        /// The missing scopes.
        needed: Vec<String>,
    },
    /// An agent called a tool declared with `agent_visible: false`.
    #[error("tool `{0}` is not agent-visible: only the app's own handlers may call it")]
    NotAgentVisible(String),
    /// The app's registrations break a rule of the SDK; it cannot serve calls.
    #[error("the app's handler registration is invalid: {0}")]
    Registration(String),
    /// The arguments did not match what the handler accepts.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A tool call made by the app failed and the app passed the failure on.
    #[error("tool call `{}` failed ({}): {}", .0.tool_name, .0.decision, .0.message)]
    Tool(ToolCallError),
    /// An agent call made by the app failed and the app passed the failure on.
    #[error("agent call failed: {}", .0.reason)]
    Agent(AgentCallError),
    /// The app reported a failure.
    #[error("the app failed: {0}")]
    Failed(String),
    /// The app tried to grow its memory beyond `runtime.resources.memory_mb`.
    #[error(
        "memory limit exceeded: the app may use at most {limit_mb} MiB (runtime.resources.memory_mb)"
    )]
    MemoryLimit {
        /// The cap in MiB.
        limit_mb: u64,
    },
    /// The call ran past its deadline and was stopped.
    #[error("deadline exceeded: the call was stopped after {0:?}")]
    Deadline(Duration),
    /// A result, response body or request was larger than the host accepts.
    #[error("{what} too large: more than {limit} bytes")]
    TooLarge {
        /// What was too large.
        what: &'static str,
        /// The limit in bytes.
        limit: usize,
    },
    /// The app exhausted its call stack (for example endless recursion).
    #[error("stack overflow: the app exhausted its call stack")]
    StackOverflow,
    /// The app panicked.
    #[error("the app panicked: {0}")]
    Panic(String),
    /// The app trapped.
    #[error("the app trapped: {0}")]
    Trap(String),
    /// The host has no free instance slot; retry later.
    #[error("the host is at capacity: {0}")]
    Capacity(String),
    /// An app outside the runtime cannot be reached now (its container does not start or
    /// does not answer its health check, or this host cannot run containers); retry later.
    #[error("the app is not available on this host: {0}")]
    Unavailable(String),
    /// The app's answer broke the contract (for example a result that is not JSON).
    #[error("the app broke the contract: {0}")]
    Contract(String),
    /// A failure on the host side.
    #[error("internal error: {0}")]
    Internal(String),
}

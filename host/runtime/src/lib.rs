//! Runs Atrium apps as sandboxed WASI components.
//!
//! One [`Runtime`] per process holds the wasmtime engine, the linker with every host import,
//! and the on-disk cache of compiled components. [`Runtime::load`] turns a component and its
//! manifest into an [`App`]; every call on an [`App`] gets a fresh instance from the pooling
//! allocator, with the app's memory cap, a deadline, a CPU share, output caps, no filesystem,
//! no sockets, outbound HTTP only to `network.egress_hosts`, and the environment from
//! `runtime.env`. A trap, panic or limit hit ends only its own call, as a typed [`CallError`].
//!
//! The host side of the `atrium:app` imports is one module per capability, each checking what
//! the app sends with the sandbox rules of [`atrium_manifest::sandbox`] (the same rules the
//! SDK's test double applies) and handing the rest to the [`Platform`] trait;
//! [`memory::MemoryPlatform`] implements it in memory.
//!
//! An app outside the runtime (a container image behind the compatibility shim) is an [`App`]
//! too ([`App::external`]): the manifest's checks of every call stay here, the call itself
//! goes to its [`External`] backend, and its calls back to the platform are [`Imports`], which
//! run the same host imports a component reaches.
//!
//! ```no_run
//! # async fn run(bytes: &[u8], manifest: atrium_manifest::Manifest) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use atrium_runtime::{Invocation, Runtime, RuntimeConfig, memory::MemoryPlatform};
//!
//! let runtime = Runtime::new(RuntimeConfig::default())?;
//! let app = runtime.load(bytes, manifest)?;
//! let platform = Arc::new(MemoryPlatform::default());
//! let inv = Invocation::new("tenant-1", platform).with_scopes(["invoices.read"]);
//! let result = app.call_tool(&inv, "list_invoices", "{}").await?;
//! println!("{result}");
//! # Ok(()) }
//! ```

mod app;
mod bindings;
pub mod build_inputs;
mod cache;
mod egress;
mod engine;
mod error;
mod fairness;
mod host;
mod imports;
mod invocation;
mod limits;
mod logs;
pub mod memory;
mod platform;
mod preinit;
mod state;

pub use app::{App, External, HandlerCall, HandlerReply, RouteResponse};
pub use atrium_manifest::sandbox::{
    Capability, ChainContext, ENV_CHAIN_DEPTH, ENV_VISITED_AGENTS, EgressPolicy,
    HEADER_CHAIN_DEPTH, HEADER_VISITED_AGENTS, MAX_CHAIN_DEPTH, MAX_ROOM_MESSAGE_CHARS,
};
pub use bindings::atrium::app::types::{
    AgentCallError, AppEvent, CallInfo, EmitResult, FetchResponse, HandlerError, InboundEnvelope,
    LogLevel, Registration, RoomMessage, RoomPost, SenderType, ToolCallError, UserAdded,
};
pub use engine::{MAX_MEMORY_MB, Runtime, RuntimeConfig};
pub use error::{CallError, LoadError};
pub use imports::Imports;
pub use invocation::{Caller, Invocation};
pub use limits::{DeadlineExceeded, MemoryCapExceeded};
pub use platform::{
    Commitment, Platform, Refused, RoomPostRequest, agent_not_available, tool_not_available,
};

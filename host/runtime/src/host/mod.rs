//! The host side of each imported `atrium:app` interface, one module per capability.
//!
//! Each module owns a small context type that borrows only what its capability needs from the
//! call's store (in the shape of wasmtime's `wasi-config` view), implements the generated
//! `Host` trait on it, and has its own `add_to_linker`. The checks themselves are the sandbox
//! rules of [`atrium_manifest::sandbox`], shared with the SDK's test double and the container
//! shim; what they let through goes to the [`crate::Platform`]. A capability's context can be
//! built in a unit test from a manifest and a [`crate::memory::MemoryPlatform`], no guest
//! needed. Adding a capability: docs/runtime.md, "Adding a capability".

use wasmtime::component::{HasData, Linker};

use crate::bindings::atrium::app::types;
use crate::state::CallState;
use crate::{AgentCallError, ToolCallError};

pub(crate) mod agent;
pub(crate) mod apps;
pub(crate) mod commitments;
pub(crate) mod config;
pub(crate) mod context;
pub(crate) mod events;
pub(crate) mod logging;
pub(crate) mod rooms;
pub(crate) mod secrets;
pub(crate) mod team;
pub(crate) mod tools;

#[cfg(test)]
mod parity;

/// Adds every `atrium:app` import to the linker, each capability with its view of the call.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    types::add_to_linker::<CallState, Types>(linker, |_| Types)?;
    context::add_to_linker(linker, |s| context::Context { call: &s.call })?;
    config::add_to_linker(linker, |s| config::Config {
        settings: &s.settings,
    })?;
    logging::add_to_linker(linker, |s| logging::Logging { log: &s.log })?;
    secrets::add_to_linker(linker, |s| secrets::Secrets {
        call: &s.call,
        log: &s.log,
    })?;
    tools::add_to_linker(linker, |s| tools::Tools {
        call: &s.call,
        granted_scopes: &s.granted_scopes,
    })?;
    commitments::add_to_linker(linker, |s| commitments::Commitments { call: &s.call })?;
    rooms::add_to_linker(linker, |s| rooms::Rooms {
        call: &s.call,
        granted_scopes: &s.granted_scopes,
    })?;
    team::add_to_linker(linker, |s| team::Team { call: &s.call })?;
    apps::add_to_linker(linker, |s| apps::Apps { call: &s.call })?;
    events::add_to_linker(linker, |s| events::Events { call: &s.call })?;
    agent::add_to_linker(linker, |s| agent::Agent { call: &s.call })
}

/// The `types` interface declares records only.
struct Types;

impl HasData for Types {
    type Data<'a> = Types;
}

impl types::Host for Types {}

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

/// Declares the marker type through which a capability's context reaches the generated
/// `add_to_linker`, and a typed `add_to_linker` for any store.
macro_rules! capability {
    ($($interface:ident)::+, $view:ident) => {
        struct Has;

        impl wasmtime::component::HasData for Has {
            type Data<'a> = $view<'a>;
        }

        /// Adds this capability's import to a linker; `view` borrows its context from the store.
        pub(crate) fn add_to_linker<T: Send + 'static>(
            linker: &mut wasmtime::component::Linker<T>,
            view: fn(&mut T) -> $view<'_>,
        ) -> wasmtime::Result<()> {
            $($interface)::+::add_to_linker::<T, Has>(linker, view)
        }
    };
}
pub(crate) use capability;

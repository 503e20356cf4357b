//! The host side of each imported `atrium:app` interface, one module per capability.
//!
//! Each module implements the generated `Host` trait for [`CallState`]: it enforces what the
//! sandbox must (declared names, scopes, sizes, the chain) and hands the rest to the
//! [`crate::Platform`].

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::Platform as PlatformWorld;
use crate::state::CallState;

mod agents;
mod context;
pub(crate) mod rooms;
mod secrets;
mod tools;

/// Adds every `atrium:app` import to the linker.
pub(crate) fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    PlatformWorld::add_to_linker::<CallState, HasSelf<CallState>>(linker, |state| state)
}

impl crate::bindings::atrium::app::types::Host for CallState {}

/// Checks that `text` is JSON and parses it.
pub(crate) fn parse_json(what: &str, text: &str) -> Result<serde_json::Value, String> {
    serde_json::from_str(text).map_err(|e| format!("{what} is not valid JSON: {e}"))
}

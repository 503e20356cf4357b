//! A loaded app: its compiled component, ready to instantiate, and the calls into it.
//!
//! [`App`] itself and its accessors are here; the rest is one module per concern: `load` turns
//! a component and its manifest into an [`App`], `verify` runs the registration check every
//! call waits for, `handlers` serves the handler calls (tools, lifecycle hooks, schedules,
//! events, room messages), `routes` serves HTTP routes, and `call` is what every call shares:
//! a fresh instance, its CPU share, and turning its end into the caller's result.

mod call;
mod handlers;
mod load;
mod routes;
mod verify;

use std::sync::Arc;

use atrium_manifest::Manifest;
use wasmtime::component::InstancePre;
use wasmtime_wasi_http::p2::bindings::exports::wasi::http::incoming_handler::GuestIndices as HttpIndices;

pub use routes::RouteResponse;

use crate::bindings::exports::atrium::app::handlers::GuestIndices as HandlerIndices;
use crate::cache::CacheOutcome;
use crate::engine::RuntimeInner;
use crate::state::CallState;
use crate::{CallError, EgressPolicy};

/// An app version loaded into the runtime. Cheap to clone; every call gets a fresh instance.
#[derive(Clone)]
pub struct App {
    inner: Arc<AppInner>,
}

struct AppInner {
    runtime: Arc<RuntimeInner>,
    pre: InstancePre<CallState>,
    handlers: Option<HandlerIndices>,
    http: Option<HttpIndices>,
    manifest: Arc<Manifest>,
    egress: Arc<EgressPolicy>,
    env: Vec<(String, String)>,
    cache: CacheOutcome,
    preinitialized: bool,
    /// The outcome of the registration check, once it has run (see [`App::verify`]).
    verified: tokio::sync::OnceCell<Result<(), CallError>>,
}

impl App {
    /// The manifest the app was loaded with.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// Whether the compiled component came from the on-disk cache.
    pub fn loaded_from_cache(&self) -> bool {
        self.inner.cache == CacheOutcome::Loaded
    }

    /// Whether calls start from a pre-initialised snapshot of the component (it exports
    /// `wizer-initialize` and its initialisation succeeded; docs/runtime.md).
    pub fn preinitialized(&self) -> bool {
        self.inner.preinitialized
    }

    /// Whether the app serves handler calls (exports `atrium:app/handlers`).
    pub fn has_handlers(&self) -> bool {
        self.inner.handlers.is_some()
    }

    /// Whether the app serves HTTP routes (exports `wasi:http/incoming-handler`).
    pub fn has_http(&self) -> bool {
        self.inner.http.is_some()
    }
}

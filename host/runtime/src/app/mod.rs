//! A loaded app: its compiled component, ready to instantiate, or the backend of an app
//! outside the runtime, and the calls into it.
//!
//! [`App`] itself and its accessors are here; the rest is one module per concern: `load` turns
//! a component and its manifest into an [`App`], `verify` runs the registration check every
//! call waits for, `handlers` serves the handler calls (tools, lifecycle hooks, schedules,
//! events, room messages), `routes` serves HTTP routes, `call` is what every call of a
//! component shares (a fresh instance, its CPU share, and turning its end into the caller's
//! result), and `external` is the [`External`] backend of an app the runtime does not run.
//!
//! Whatever runs the app, the manifest's checks of a call (a declared tool, its scopes and
//! visibility, a declared route, a public route, the size of the result, the deadline) are
//! made here, once.

mod call;
mod external;
mod handlers;
mod load;
mod routes;
mod verify;

use std::sync::Arc;

use atrium_manifest::Manifest;
use wasmtime::component::InstancePre;
use wasmtime_wasi_http::p2::bindings::exports::wasi::http::incoming_handler::GuestIndices as HttpIndices;

pub use external::External;
pub use handlers::{HandlerCall, HandlerReply};
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
    manifest: Arc<Manifest>,
    code: Code,
    /// The outcome of the registration check, once it has run (see [`App::verify`]).
    verified: tokio::sync::OnceCell<Result<(), CallError>>,
}

/// What runs the app's calls.
enum Code {
    /// A component, in this runtime.
    Component(Box<Component>),
    /// Something outside it (a container behind the compatibility shim).
    External(Arc<dyn External>),
}

/// A compiled component, ready to instantiate.
struct Component {
    pre: InstancePre<CallState>,
    handlers: Option<HandlerIndices>,
    http: Option<HttpIndices>,
    egress: Arc<EgressPolicy>,
    env: Vec<(String, String)>,
    cache: CacheOutcome,
    preinitialized: bool,
}

impl App {
    /// The manifest the app was loaded with.
    pub fn manifest(&self) -> &Manifest {
        &self.inner.manifest
    }

    /// The manifest the app was loaded with, shared.
    pub fn shared_manifest(&self) -> Arc<Manifest> {
        self.inner.manifest.clone()
    }

    fn component(&self) -> Option<&Component> {
        match &self.inner.code {
            Code::Component(component) => Some(component.as_ref()),
            Code::External(_) => None,
        }
    }

    /// Whether the app runs outside the runtime ([`App::external`]).
    pub fn is_external(&self) -> bool {
        matches!(self.inner.code, Code::External(_))
    }

    /// Whether the compiled component came from the on-disk cache.
    pub fn loaded_from_cache(&self) -> bool {
        self.component()
            .is_some_and(|c| c.cache == CacheOutcome::Loaded)
    }

    /// Whether calls start from a pre-initialised snapshot of the component (it exports
    /// `wizer-initialize` and its initialisation succeeded; docs/runtime.md).
    pub fn preinitialized(&self) -> bool {
        self.component().is_some_and(|c| c.preinitialized)
    }

    /// Whether the app serves handler calls (a component that exports `atrium:app/handlers`;
    /// an app outside the runtime always does, at its `/tool` and `/event` paths).
    pub fn has_handlers(&self) -> bool {
        self.component().is_none_or(|c| c.handlers.is_some())
    }

    /// Whether the app serves HTTP routes (a component that exports
    /// `wasi:http/incoming-handler`; an app outside the runtime always does, at `/route`).
    pub fn has_http(&self) -> bool {
        self.component().is_none_or(|c| c.http.is_some())
    }
}

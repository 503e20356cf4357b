//! Apps the runtime does not run: a backend behind the [`External`] trait (the container
//! shim's, in the platform) serves the calls, and the [`App`] in front of it makes the same
//! manifest checks, applies the same deadline and result cap, and answers the same
//! [`CallError`]s as for a component.

use std::sync::Arc;

use async_trait::async_trait;
use atrium_manifest::Manifest;
use bytes::Bytes;

use super::{App, AppInner, Code, HandlerCall, HandlerReply, RouteResponse};
use crate::{CallError, Invocation, Runtime};

/// What serves the calls of an app outside the runtime. The [`App`] in front of it has checked
/// each call against the manifest (a declared tool with its scopes and visibility, a declared
/// lifecycle hook, schedule, subscription or agent, a declared and, on a public route, public
/// route) and stops it at the runtime's deadline; the backend carries it to the app, with the
/// invocation's tenant, call id and chain, and back.
#[async_trait]
pub trait External: Send + Sync + 'static {
    /// Whether the app can take calls now: started when it is not running, and answering
    /// its health check. Every call waits for it.
    ///
    /// # Errors
    ///
    /// [`CallError::Unavailable`] (it does not start or answer), [`CallError::Registration`]
    /// (it describes itself as another app than the registered one).
    async fn ready(&self) -> Result<(), CallError>;

    /// Serves a handler call (never [`HandlerCall::Describe`]), reading at most `max_bytes`
    /// of its answer: [`HandlerReply::Json`] for a tool or an event
    /// ([`HandlerCall::answers_json`]), [`HandlerReply::Unit`] for the rest.
    ///
    /// # Errors
    ///
    /// The app's own error ([`CallError::Tool`], [`CallError::Failed`], ...), or why it could
    /// not be reached.
    async fn handle(
        &self,
        inv: &Invocation,
        call: HandlerCall,
        max_bytes: usize,
    ) -> Result<HandlerReply, CallError>;

    /// Serves a request on one of the manifest's `http_routes`, reading at most `max_bytes`
    /// of the response body.
    ///
    /// # Errors
    ///
    /// [`CallError::TooLarge`] for a larger body, or why the app could not be reached.
    async fn route(
        &self,
        inv: &Invocation,
        request: http::Request<Bytes>,
        max_bytes: usize,
    ) -> Result<RouteResponse, CallError>;
}

impl App {
    /// An app whose calls `backend` serves, under `runtime`'s deadline and result cap.
    pub fn external(runtime: &Runtime, manifest: Arc<Manifest>, backend: Arc<dyn External>) -> App {
        App {
            inner: Arc::new(AppInner {
                runtime: runtime.inner.clone(),
                manifest,
                code: Code::External(backend),
                verified: tokio::sync::OnceCell::new(),
            }),
        }
    }
}

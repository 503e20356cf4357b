//! Atrium's HTTP server.
//!
//! [`router`] builds the whole router from an [`HostState`], so tests call it without a socket;
//! [`serve`] runs it on a listener until a shutdown signal, letting requests in flight finish.
//! Every /v1 error is [`ApiError`]: OpenAI's body `{"error": {"message", "type", "param",
//! "code"}}` with a fitting status.

mod api;
mod auth;
pub mod batches;
mod chat;
mod embeddings;
mod error;
mod extract;
pub mod health;
pub mod jobs;
pub mod overload;
pub mod page;
pub mod principals;
mod rag;
pub mod routing;
mod stream;
mod v1;

use std::future::Future;

use axum::Router;
use axum::extract::DefaultBodyLimit;

pub use api::views;
pub use atrium_store::Metering;
pub use atrium_store::POLL_INTERVAL;
pub use chat::DEFAULT_TENANT;
pub use error::{ApiError, ERROR_ID_HEADER};
pub use extract::{JsonBody, OptionalJsonBody, QueryParams, TENANT_HEADER, TenantHeader};
pub use principals::{Dev, Org};

/// The largest request body accepted (a 413 beyond it).
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// What every handler shares.
#[derive(Clone)]
pub struct HostState {
    /// The database.
    pub store: atrium_store::Store,
    /// The inference providers and the catalog.
    pub gateway: std::sync::Arc<atrium_inference::Gateway>,
    /// The batch runner's settings and wake-up signal.
    pub batches: std::sync::Arc<batches::BatchRunner>,
    /// The metering writer.
    pub metering: atrium_store::Metering,
    /// Authenticated keys, until they change.
    pub keys: std::sync::Arc<auth::KeyCache>,
    /// Authenticated tenant tokens, until they change.
    pub tenant_tokens: std::sync::Arc<auth::TenantTokenCache>,
    /// The embedders, the default first.
    pub embedders: std::sync::Arc<atrium_inference::embed::Embedders>,
    /// Managed retrieval, when the host has it (the /v1/rag routes answer 503 otherwise).
    pub retrieval: Option<std::sync::Arc<atrium_retrieval::Retrieval>>,
    /// The app platform, when the host has one (the /api routes answer 503 otherwise): every
    /// capability's service, composed once ([`atrium_platform::Platform`]).
    pub platform: Option<atrium_platform::Platform>,
    /// What the platform was composed from, kept so that it is composed again when the
    /// state gains what it shares (retrieval); shared, as the state is cloned for every
    /// request.
    parts: Option<std::sync::Arc<atrium_platform::PlatformParts>>,
    /// The rate limits and the global shedding (docs/api.md, "Limits and overload").
    pub limiter: std::sync::Arc<overload::Limiter>,
    /// The background jobs: the metering writer from the start, the rest while [`serve`]
    /// runs ([`jobs`]).
    pub jobs: atrium_jobs::Jobs,
}

impl HostState {
    /// A state with the default batch runner settings; starts the metering writer, the first
    /// of its [`jobs`](HostState::jobs), so call it on a Tokio runtime.
    pub fn new(store: atrium_store::Store, gateway: atrium_inference::Gateway) -> Self {
        let (metering, writer) = atrium_store::Metering::new(store.clone());
        let jobs = atrium_jobs::Jobs::new();
        jobs.start(Box::new(writer));
        let keys = std::sync::Arc::new(auth::KeyCache::keys(&store));
        let tenant_tokens = std::sync::Arc::new(auth::TenantTokenCache::tenant_tokens(&store));
        HostState {
            store,
            gateway: std::sync::Arc::new(gateway),
            batches: std::sync::Arc::default(),
            metering,
            keys,
            tenant_tokens,
            embedders: std::sync::Arc::default(),
            retrieval: None,
            platform: None,
            parts: None,
            limiter: std::sync::Arc::default(),
            jobs,
        }
    }

    /// The same state with these limits.
    pub fn with_limits(mut self, limits: overload::Limits) -> Self {
        self.limiter = std::sync::Arc::new(overload::Limiter::new(limits));
        self
    }

    /// The same state with the app platform composed from `parts` and what the state
    /// shares with it. The order of the `with_*` calls does not matter: the platform is
    /// composed again from whatever the state has, each time.
    pub fn with_platform(mut self, parts: atrium_platform::PlatformParts) -> Self {
        self.parts = Some(std::sync::Arc::new(parts));
        self.wired()
    }

    /// The same state with these embedders.
    pub fn with_embedders(mut self, embedders: atrium_inference::embed::Embedders) -> Self {
        self.embedders = std::sync::Arc::new(embedders);
        self
    }

    /// The same state with managed retrieval (also for the knowledge tools of installed apps).
    pub fn with_retrieval(mut self, retrieval: atrium_retrieval::Retrieval) -> Self {
        self.retrieval = Some(std::sync::Arc::new(retrieval));
        self.wired()
    }

    /// The platform, composed from its parts and the retrieval, gateway and metering writer
    /// the state has now.
    fn wired(mut self) -> Self {
        let shared = atrium_platform::Shared {
            retrieval: self.retrieval.clone(),
            gateway: Some(self.gateway.clone()),
            metering: Some(self.metering.clone()),
        };
        self.platform = self
            .parts
            .as_deref()
            .cloned()
            .map(|parts| atrium_platform::Platform::new(parts, shared));
        self
    }
}

/// `GET /`: what this host serves and where its documentation is, until the workspace UI
/// answers there.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Welcome {
    /// `atrium`.
    pub name: &'static str,
    /// The host's version.
    pub version: &'static str,
    /// The APIs, by path prefix, with what each is for.
    pub apis: Vec<WelcomeApi>,
    /// Where the documentation is.
    pub docs: &'static str,
}

/// One API in [`Welcome`].
#[derive(Debug, Clone, serde::Serialize)]
pub struct WelcomeApi {
    /// Its path prefix.
    pub path: &'static str,
    /// What it serves and the credential it takes.
    pub serves: &'static str,
}

impl Default for Welcome {
    fn default() -> Self {
        Welcome {
            name: "atrium",
            version: env!("CARGO_PKG_VERSION"),
            apis: vec![
                WelcomeApi {
                    path: "/v1",
                    serves: "the OpenAI-compatible API: chat, embeddings, retrieval, batches, usage (an organization key: `atrium keys create`)",
                },
                WelcomeApi {
                    path: "/api",
                    serves: "the app platform: installs, tool calls, routes (a tenant token: `atrium tenants tokens create`); the registry under /api/dev (a developer token: `atrium developers create`)",
                },
                WelcomeApi {
                    path: "/health",
                    serves: "`ok` while the host serves",
                },
                WelcomeApi {
                    path: "/ready",
                    serves: "200 while the host can do its work (its store takes writes, usage is stored), 503 naming what fails",
                },
            ],
            docs: "docs/api.md (the /v1 API), docs/platform.md (/api), docs/cli.md (the developer tool) in the Atrium source tree",
        }
    }
}

/// Every route the host serves: each module's own, merged (a capability adds its module and
/// one line here).
fn routes() -> routing::Routes {
    let v1 = routing::Routes::new()
        .merge(chat::router())
        .merge(v1::router())
        .merge(embeddings::router())
        .merge(batches::router())
        .merge(rag::router())
        .fallback(|uri: axum::http::Uri| async move {
            ApiError::not_found(format!("there is no endpoint {}", uri.path()))
        });
    routing::Routes::new()
        .nest("/v1", v1)
        .nest("/api", api::router())
        .merge(health::router())
        .route(
            "/",
            routing::get(|| async { axum::Json(Welcome::default()) }),
        )
}

/// Each method and path the host serves, from the same calls that build its router: what a
/// test that must try every route reads.
#[must_use]
pub fn route_table() -> Vec<routing::Route> {
    routes().into_table()
}

/// The host's routes.
pub fn router(state: HostState) -> Router {
    let routes = routes()
        .into_router()
        .fallback(|uri: axum::http::Uri| async move {
            ApiError::not_found(format!(
                "there is no endpoint {}; GET / lists where the APIs are",
                uri.path()
            ))
        })
        .layer(axum::middleware::from_fn(error::to_the_end))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(error::log_requests))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            overload::shed,
        ))
        .with_state(state);
    // Around the whole router, as a route's layers run before its method router sets `Allow`.
    Router::new()
        .fallback_service(routes)
        .layer(axum::middleware::from_fn(error::json_method_not_allowed))
}

/// Serves the router on `listener` until `shutdown` completes, with the host's background
/// jobs ([`jobs`]: the change feed's poller, without which nothing is answered from memory,
/// the queue-delay probe, the batch runner, the schedule scanner and, with retrieval, its
/// upkeep), started from one list. On shutdown the requests in flight finish first; then the
/// jobs stop in the reverse order of their start, each within [`jobs::JOB_GRACE`], the
/// metering writer last, having stored every usage record.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: HostState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let (Some(platform), Ok(address)) = (&state.platform, listener.local_addr()) {
        platform.listening_at(address);
    }
    state.jobs.start_all(jobs::background_jobs(&state));
    state.limiter.watch_metering(state.metering.clone());
    state.limiter.serving();
    // Every request carries its connection, for the shedding of requests that waited unread.
    let routes =
        router(state.clone()).into_make_service_with_connect_info::<overload::Connection>();
    let listener = overload::Gate::new(listener, state.limiter.clone());
    // A room stream never ends on its own: the stop ends them, or the graceful shutdown
    // would wait for them forever.
    let platform = state.platform.clone();
    let shutdown = async move {
        shutdown.await;
        if let Some(platform) = platform {
            platform.close();
        }
    };
    let served = axum::serve(listener, routes)
        .with_graceful_shutdown(shutdown)
        .await;
    tracing::info!("the requests in flight are answered: stopping the background jobs");
    state.jobs.stop(jobs::JOB_GRACE).await;
    served
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    // The handlers are registered now, not at the future's first poll: a signal that comes
    // before the server polls the future (right after the start, with the cores busy) is then
    // a graceful stop rather than the default action's kill.
    #[cfg(unix)]
    let (terminate, interrupt) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).ok(),
            signal(SignalKind::interrupt()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |stream: Option<tokio::signal::unix::Signal>| async move {
                match stream {
                    Some(mut stream) => {
                        stream.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                () = wait(terminate) => {}
                () = wait(interrupt) => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
        tracing::info!("shutting down: finishing the requests in flight");
    }
}

//! `atrium serve`: runs the host.
//!
//! The store is `ATRIUM_DATABASE_URL` when set (PostgreSQL), else SQLite in the data directory.
//! SIGINT and SIGTERM stop accepting connections and let requests in flight finish. Exit codes:
//! 0 after a clean shutdown, 1 bad input (an address that does not parse, an invalid
//! configuration file), 2 the host could not start (the port is taken, the store cannot be
//! opened).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// `atrium serve` arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The address to listen on.
    #[arg(
        long,
        value_name = "HOST:PORT",
        default_value = "127.0.0.1:8787",
        env = "ATRIUM_ADDR"
    )]
    addr: String,
    /// Where the host keeps its data (the SQLite database unless ATRIUM_DATABASE_URL is set).
    #[arg(
        long,
        value_name = "DIR",
        default_value = ".atrium",
        env = "ATRIUM_DATA_DIR"
    )]
    data_dir: PathBuf,
    /// A TOML file with provider settings and catalog additions (see docs/api.md).
    #[arg(long, value_name = "FILE", env = "ATRIUM_CONFIG")]
    config: Option<PathBuf>,
    #[command(flatten)]
    demo: crate::demo::DemoArgs,
}

/// The log filter without `ATRIUM_LOG`. Lance warns on every failed object-store request
/// during a storage outage (it takes them for throttling); the host logs the outage itself,
/// once (docs/api.md), so lance's throttle records show only as errors.
const DEFAULT_LOG_FILTER: &str = "warn,atrium=info,lance::object_store::throttle=error";

/// Runs `atrium serve`.
pub fn run(args: &Args) -> ExitCode {
    // The host's own records (start, stop, requests, errors, upkeep) at info; its dependencies
    // only when they warn.
    crate::init_logging(DEFAULT_LOG_FILTER);
    let addr: SocketAddr = match args.addr.parse() {
        Ok(addr) => addr,
        Err(e) => {
            eprintln!("error: --addr `{}` is not HOST:PORT: {e}", args.addr);
            return ExitCode::from(1);
        }
    };
    let config = match load_config(args.config.as_deref()) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(1);
        }
    };
    if let Err(message) = config.check_env(&|name| std::env::var(name).ok()) {
        eprintln!("error: {message}");
        return ExitCode::from(1);
    }
    let env: Vec<(String, String)> = std::env::vars().collect();
    let limits = match atrium_server::overload::Limits::from_env(&env) {
        Ok(limits) => limits,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(1);
        }
    };
    // Every variable of the platform's, checked before anything is opened.
    let platform = match atrium_platform::PlatformConfig::from_env(&env) {
        Ok(platform) => platform,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(1);
        }
    };
    crate::block_on(true, async {
        // SIGTERM and SIGINT are caught from here on: one that comes while the host starts
        // stops it as soon as it serves, after nothing was cut half-way.
        let shutdown = atrium_server::shutdown_signal();
        let store = match crate::keys::open_store(&args.data_dir).await {
            Ok(store) => store,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let parts = match atrium_platform::PlatformParts::open(&store, &args.data_dir, platform) {
            Ok(parts) => parts,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        match parts.containers.unavailable() {
            Some(reason) => tracing::warn!(
                reason,
                "this host cannot run containers: container apps answer 503"
            ),
            None => tracing::info!("container apps run under runc"),
        }
        let registry = parts.registry.clone();
        // Integration configurations written before they were sealed are sealed now.
        match registry.seal_plain_integrations().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                integrations = n,
                "sealed integration configurations stored in clear"
            ),
            Err(e) => {
                tracing::warn!(error = %e, "sealing the integration configurations stored in clear failed")
            }
        }
        let listener = match atrium_server::overload::listen(addr) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {addr}: {e}");
                return ExitCode::from(2);
            }
        };
        let bound = listener
            .local_addr()
            .map_or_else(|_| addr.to_string(), |a| a.to_string());
        tracing::info!(addr = %bound, store = store.backend(), "atrium is listening on http://{bound}");
        // Administration commands run elsewhere find this host's store by this record; it is
        // removed when the host stops.
        let _record = listener.local_addr().ok().and_then(|a| {
            crate::hoststore::register_running(a, &args.data_dir, store.backend() != "sqlite")
        });
        let gateway =
            atrium_inference::Gateway::from_config(&config, &|name| std::env::var(name).ok());
        let configured: Vec<&str> = atrium_inference::ProviderId::ALL
            .into_iter()
            .filter(|p| gateway.available(*p))
            .map(|p| p.as_str())
            .collect();
        if configured.is_empty() {
            tracing::warn!(
                "no inference provider is configured: set ATRIUM_<PROVIDER>_API_KEY (or ATRIUM_OLLAMA_BASE_URL)"
            );
        } else {
            tracing::info!(providers = %configured.join(", "), "inference providers");
        }
        let embedders = atrium_inference::embed::Embedders::from_config(&config, &|name| {
            std::env::var(name).ok()
        });
        let default_embedder = embedders.default_embedder();
        tracing::info!(
            provider = default_embedder.provider(),
            model = default_embedder.model(),
            "default embedder"
        );
        let rag = match atrium_retrieval::RetrievalConfig::from_env(&args.data_dir, &env) {
            Ok(rag) => rag,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let retrieval =
            match atrium_retrieval::Retrieval::open(store.clone(), embedders.clone(), rag).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: cannot open retrieval: {e}");
                    return ExitCode::from(2);
                }
            };
        // Documents a stopped host left half-written are removed before serving (with
        // PostgreSQL other hosts may be writing: only those unfinished for ten minutes).
        let stale = if store.backend() == "sqlite" {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_secs(600)
        };
        match retrieval.recover(stale).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                documents = n,
                "removed documents a previous run left unfinished"
            ),
            Err(e) => tracing::warn!(error = %e, "checking for unfinished documents failed"),
        }
        tokio::task::spawn_blocking(|| {
            if let Err(e) = atrium_retrieval::pdf::warm_up() {
                tracing::warn!(error = %e, "the PDF sandbox cannot start; PDF uploads will fail");
            }
        });
        // The example apps for tenant `demo`, set up beside the server (docs/demo.md).
        let demo = crate::demo::start(
            &args.demo,
            &args.data_dir,
            &bound,
            &store,
            &registry,
            &retrieval,
        )
        .await;
        let state = atrium_server::HostState::new(store.clone(), gateway)
            .with_embedders(embedders)
            .with_retrieval(retrieval)
            .with_platform(parts)
            .with_limits(limits);
        let served = atrium_server::serve(listener, state, shutdown).await;
        if let Some(demo) = demo {
            demo.abort();
        }
        store.close().await;
        match served {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: the server failed: {e}");
                ExitCode::from(2)
            }
        }
    })
}

/// The inference configuration file, or the defaults when none is given.
fn load_config(
    path: Option<&std::path::Path>,
) -> Result<atrium_inference::InferenceConfig, String> {
    let Some(path) = path else {
        return Ok(atrium_inference::InferenceConfig::default());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the configuration {}: {e}", path.display()))?;
    atrium_inference::InferenceConfig::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

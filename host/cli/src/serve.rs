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
}

/// Runs `atrium serve`.
pub fn run(args: &Args) -> ExitCode {
    crate::init_logging("info");
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
    let tokio = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    tokio.block_on(async {
        let store = match crate::keys::open_store(&args.data_dir).await {
            Ok(store) => store,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let listener = match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: cannot listen on {addr}: {e}");
                return ExitCode::from(2);
            }
        };
        let bound = listener.local_addr().map_or_else(|_| addr.to_string(), |a| a.to_string());
        tracing::info!(addr = %bound, store = store.backend(), "atrium is listening on http://{bound}");
        let gateway = atrium_inference::Gateway::from_config(&config, &|name| std::env::var(name).ok());
        let configured: Vec<&str> =
            atrium_inference::ProviderId::ALL.into_iter().filter(|p| gateway.available(*p)).map(|p| p.as_str()).collect();
        if configured.is_empty() {
            tracing::warn!("no inference provider is configured: set ATRIUM_<PROVIDER>_API_KEY (or ATRIUM_OLLAMA_BASE_URL)");
        } else {
            tracing::info!(providers = %configured.join(", "), "inference providers");
        }
        let embedders = atrium_inference::embed::Embedders::from_config(&config, &|name| std::env::var(name).ok());
        let default_embedder = embedders.default_embedder();
        tracing::info!(provider = default_embedder.provider(), model = default_embedder.model(), "default embedder");
        let vars: Vec<(String, String)> = std::env::vars().collect();
        let rag = match atrium_retrieval::RetrievalConfig::from_env(&args.data_dir, &vars) {
            Ok(rag) => rag,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        };
        let retrieval = match atrium_retrieval::Retrieval::open(store.clone(), embedders.clone(), rag).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: cannot open retrieval: {e}");
                return ExitCode::from(2);
            }
        };
        // Documents a stopped host left half-written are removed before serving (with
        // PostgreSQL other hosts may be writing: only those unfinished for ten minutes).
        let stale = if store.backend() == "sqlite" { std::time::Duration::ZERO } else { std::time::Duration::from_secs(600) };
        match retrieval.recover(stale).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(documents = n, "removed documents a previous run left unfinished"),
            Err(e) => tracing::warn!(error = %e, "checking for unfinished documents failed"),
        }
        tokio::task::spawn_blocking(|| {
            if let Err(e) = atrium_retrieval::pdf::warm_up() {
                tracing::warn!(error = %e, "the PDF sandbox cannot start; PDF uploads will fail");
            }
        });
        let state = atrium_server::HostState::new(store.clone(), gateway)
            .with_embedders(embedders)
            .with_retrieval(retrieval);
        let served = atrium_server::serve(listener, state, atrium_server::shutdown_signal()).await;
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
